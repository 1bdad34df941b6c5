//! A configured instance taken from the pool.
//!
//! The pool's internals (`Pool::lease`) are private to the host, so what
//! is timed is a whole trivial call, `Adapter::capabilities` of the
//! Kubernetes adapter (no RuntimeClass configured: pure computation in the
//! guest), which is lease + call + return:
//!
//! - **warm**: an idle configured instance is there (`idle_instances() ==
//!   1` before every call); the call pops it and pushes it back. Its p99
//!   bounds the time to take a configured instance from the pool.
//! - **fresh**: no instance is idle, so the lease makes one: instantiate
//!   (pooling allocator) and `configure`, then the call. The idle list is
//!   emptied before each sample by a `logs` call, which the host always
//!   discards its instance after (it fails at once here: the adapter has
//!   no cluster client).
//!
//! Native twins: `capabilities()` on a configured native adapter (warm),
//! and `configure(json)` followed by `capabilities()` (fresh).

use std::hint::black_box;
use std::time::Instant;

use anyhow::{Result, ensure};
use pando_adapter_kubernetes::KubernetesAdapter;
use pando_adapter_sdk::Adapter as _;
use pando_host::types::{LogOptions, WorkloadRef};

use super::{call_ctx, us, what};
use crate::env;
use crate::report::{Bench, Row, Unit};

/// Runs it.
pub async fn run(quick: bool) -> Result<Bench> {
    // The quick run's fresh series is long enough for its p99 to be a
    // percentile and not its slowest sample (40 samples were, before).
    let (warm_n, fresh_n) = if quick {
        (2_000, 400)
    } else {
        (100_000, 1_000)
    };
    let host = env::host()?;
    let adapter = env::load_kubernetes(&host, None).await?;
    let native = env::native_kubernetes()?;
    let cx = call_ctx();
    adapter.capabilities(&cx).await?;

    let (mut host_warm, mut native_warm) = (Vec::with_capacity(warm_n), Vec::new());
    for _ in 0..warm_n {
        let t = Instant::now();
        black_box(adapter.capabilities(&cx).await?);
        host_warm.push(us(t.elapsed()));
        let t = Instant::now();
        let _ = black_box(native.capabilities());
        native_warm.push(us(t.elapsed()));
    }
    ensure!(
        adapter.idle_instances() == 1,
        "the warm calls should have reused one instance, {} are idle",
        adapter.idle_instances()
    );
    let warm = Row::new("warm: idle instance", Unit::Us, &host_warm, &native_warm);
    let met = warm.host.is_some_and(|s| s.p99 <= 50.0);
    let warm = warm.target("host p99 ≤ 50 µs (lease + call + return)", met);

    let nowhere = WorkloadRef {
        bundle: "shop".into(),
        workload: "web".into(),
    };
    let options = LogOptions::default();
    let (mut host_fresh, mut native_fresh) = (Vec::with_capacity(fresh_n), Vec::new());
    let mut not_empty = 0usize;
    for _ in 0..fresh_n {
        // Fails (no cluster), and its instance is discarded either way.
        let _ = adapter.logs(&cx, &nowhere, &options).await;
        if adapter.idle_instances() != 0 {
            not_empty += 1;
            continue;
        }
        let t = Instant::now();
        black_box(adapter.capabilities(&cx).await?);
        host_fresh.push(us(t.elapsed()));
        let t = Instant::now();
        let a = KubernetesAdapter::configure(black_box(env::KUBERNETES_CONFIG));
        let _ = black_box(a.map(|a| a.capabilities()));
        native_fresh.push(us(t.elapsed()));
    }
    ensure!(
        not_empty == 0,
        "{not_empty} samples found an idle instance after `logs`; the fresh series would be wrong"
    );
    let fresh = Row::new(
        "fresh: instantiate+configure+call",
        Unit::Us,
        &host_fresh,
        &native_fresh,
    );
    let met = fresh.host.is_some_and(|s| s.p99 <= 50.0);
    let fresh = fresh.target("host p99 ≤ 50 µs (instantiate + configure + call)", met);
    let warm_p50 = warm.host.map(|s| s.median).unwrap_or(0.0);
    let fresh = match fresh.host {
        Some(s) => fresh.extra(
            "making an instance (fresh p50 − warm p50)",
            format!("{:.1} µs", s.median - warm_p50),
        ),
        None => fresh,
    };

    let mut bench = Bench::new("pool", what("pool"));
    bench.rows = vec![warm, fresh];
    bench.note(
        "the host's pool internals are private: each sample is a whole `capabilities` call; \
         warm p99 is an upper bound of taking a configured instance from the pool",
    );
    Ok(bench)
}

/// `count` fresh configured instances, made and dropped one by one; the
/// mean in microseconds (`pando-bench child fresh-loop`).
pub async fn profile_loop(count: u64) -> Result<f64> {
    let host = env::host()?;
    let adapter = env::load_kubernetes(&host, None).await?;
    let t = Instant::now();
    for _ in 0..count {
        black_box(adapter.raw_instance().await?);
    }
    Ok(us(t.elapsed()) / count.max(1) as f64)
}
