//! The wasm engine of one contract line, shared by its adapters: compiler
//! settings, the pooling allocator, and the epoch ticker that deadlines rest
//! on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::bindings::Line;
use crate::error::LoadError;
use crate::runtime::linking::MakeLinker;

/// How often the epoch advances. A running guest is checked for its deadline
/// and for cancellation at this granularity, and yields to the async runtime
/// as often.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Settings of the shared engine.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// Instances of every adapter alive at once (pooling allocator slots).
    ///
    /// Each slot has a guest stack, which the pool makes when the host is
    /// built: one `mprotect` of a guard page each, most of what
    /// `Host::builder().build()` costs (docs/benchmarks.md). Stacks cannot
    /// be fewer than instances: wasmtime keeps a store's last stack until
    /// the store is dropped, so an idle instance holds one too. The default,
    /// 256, is two adapters at their default limits (each at most
    /// `max_idle` + `max_instances` + `max_long_running`, 104, alive);
    /// past it a new instance fails with the host's typed shortage.
    pub total_instances: u32,
    /// The largest linear memory any instance may have, in bytes. Per-adapter
    /// limits may be lower, never higher.
    pub max_memory_bytes: u64,
    /// Guest stack size.
    pub max_wasm_stack: usize,
}

impl Default for EngineSettings {
    fn default() -> Self {
        EngineSettings {
            total_instances: 256,
            max_memory_bytes: 1 << 30,
            max_wasm_stack: 1 << 20,
        }
    }
}

/// What a slot's memory and tables keep resident between instances: more
/// than an adapter's instance touches to start and answer a call, and at
/// most `max_unused_warm_slots` × this resident in slots nobody uses.
const KEEP_RESIDENT: usize = 1 << 20;

/// The engine of one contract line and its epoch ticker. Dropping the last
/// handle stops the ticker.
pub(crate) struct SharedEngine {
    pub(crate) engine: Engine,
    stop: Arc<AtomicBool>,
}

impl SharedEngine {
    /// The engine for components of `line`, and its epoch thread started
    /// with `first` as its first job (the line's linker, `linking.rs`).
    pub(crate) fn new(
        settings: EngineSettings,
        line: Line,
        first: MakeLinker,
    ) -> Result<Self, LoadError> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.max_wasm_stack(settings.max_wasm_stack);
        config.cranelift_opt_level(wasmtime::OptLevel::Speed);
        // With concurrency support wasmtime runs every `call_async`, even of
        // a plain 0.1 export, as a concurrent task: +1.1 µs a call, measured
        // (docs/architecture.md, "Versions"). 0.1 components need none of it;
        // 0.2 components (async exports, streams, futures) cannot load
        // without it.
        config.concurrency_support(line == Line::V0_2);

        let mut pool = PoolingAllocationConfig::new();
        let slots = settings.total_instances;
        pool.total_component_instances(slots);
        // A component instantiates several core modules (the program, shims,
        // an allocator's fix-ups); Python components a dozen or more.
        pool.total_core_instances(slots.saturating_mul(4));
        pool.total_memories(slots.saturating_mul(2));
        pool.total_tables(slots.saturating_mul(4));
        pool.total_stacks(slots);
        pool.max_core_instances_per_component(64);
        pool.max_memories_per_component(8);
        pool.max_tables_per_component(32);
        pool.max_memories_per_module(2);
        pool.max_tables_per_module(8);
        pool.table_elements(200_000);
        pool.max_component_instance_size(1 << 20);
        pool.max_core_instance_size(4 << 20);
        pool.max_memory_size(usize::try_from(settings.max_memory_bytes).unwrap_or(usize::MAX));
        pool.max_unused_warm_slots(64);
        // A fresh instance touched about a dozen pages that `madvise` had
        // dropped from the slot, each a page fault (docs/history/benchmarks.md,
        // "A fresh instance's page faults"). The first KEEP_RESIDENT bytes of
        // each memory and table are reset with `memset` instead and stay
        // resident; `PAGEMAP_SCAN` (Linux 6.7+) resets only the pages that
        // were touched.
        pool.linear_memory_keep_resident(KEEP_RESIDENT);
        pool.table_keep_resident(KEEP_RESIDENT);
        pool.pagemap_scan(wasmtime::Enabled::Auto);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));

        let engine = Engine::new(&config).map_err(|e| LoadError::Engine(format!("{e:#}")))?;
        let stop = Arc::new(AtomicBool::new(false));
        spawn_ticker(engine.clone(), line, stop.clone(), first);
        Ok(SharedEngine { engine, stop })
    }
}

impl Drop for SharedEngine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A plain thread, not a task: it must tick even when every runtime worker is
/// busy running guests. It makes the linker first: until there is one no
/// guest runs, so there is nothing to tick for.
fn spawn_ticker(engine: Engine, line: Line, stop: Arc<AtomicBool>, first: MakeLinker) {
    let name = match line {
        Line::V0_1 => "pando-epoch",
        Line::V0_2 => "pando-epoch-0.2",
    };
    let spawned = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            first.run(&engine);
            std::thread::sleep(EPOCH_TICK);
            engine.increment_epoch();
            // The call path's counter clock, calibrated here because its
            // busy loop (half a millisecond, more under load) is too long
            // for `build()`; this delays one tick by as much, once a process.
            crate::clock::calibrate();
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(EPOCH_TICK);
                engine.increment_epoch();
            }
        });
    if let Err(e) = spawned {
        // Without the ticker deadlines cannot fire inside pure wasm; the
        // tokio-side deadline still ends calls blocked in host imports.
        tracing::error!(error = %e, "could not start the epoch ticker thread");
    }
}
