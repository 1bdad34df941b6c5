//! `pando-test-adapter`: a test adapter component (kind `test`, not
//! Kubernetes) that exercises every export shape of
//! `pando:runtime/adapter@0.1.0` and misbehaves on request. The host's
//! tests depend on exactly this behaviour; it imports no Kubernetes API.
//!
//! Every export but `info` and `configure` first adds one to a per-instance
//! call counter (a static, so it lives as long as the instance; exec-session
//! methods do not count). `observe` reports it, which is how the host's tests
//! see an instance reused.
//!
//! | export | behaviour |
//! |---|---|
//! | `info` | kind `test`, category single-host; config schema: an object with an optional string `greeting`, `additionalProperties: false` |
//! | `configure(json)` | empty or `{}` is fine; a non-object or an unknown field is `invalid`, naming the field ("configuration field `bogus` is not known; allowed: greeting, misbehave"). `misbehave` breaks the contract on purpose, for the conformance suite's tests: `claim-image-import` declares `image_import` and still answers `unsupported`; `import-image-internal` answers `import-image` with `internal`; `import-image-panic` panics there; `panic-everywhere` panics in every export but `info` and `configure`, the message naming the instance's call count ("panic in every export (call N of this instance)"); `huge-returns` makes `edges` return ten million names |
//! | `capabilities` | shared-kernel; everything true but `image_import` (unless `misbehave: claim-image-import`) and `write_observation` |
//! | `health-check` | `Ok` |
//! | `capacity` | total 4000 mCPU / 8 GiB, 1 node, largest fit `local` with the same |
//! | `largest-fit-for` | `Some` of that fit |
//! | `in-use`, `usage` | empty |
//! | `observe(ref)` | exists; one workload `counter`, running, reason `calls=N` (N = the counter, this call included), or N bytes of `r` for a bundle id `huge-<N>` (no cap: a huge return value); no volumes |
//! | `apply(plan)` | logs at info, then by `plan.id`: `loop` spins forever in pure wasm; `bomb` allocates and touches 1 MiB chunks forever; `panic` panics; `stack` recurses without bound; `sleep-<ms>` sleeps cancellably (the cancellation error if cancelled); `from-bytes-<n>-<bytes>` makes `n` streams of `bytes` bytes with `from-bytes`, holds them all, reads one byte of each and reports `ok=<n> failed=<n> error=<first failure>` in `location` (dropping them on return; `keep-from-bytes-…` leaks them into the instance's table instead); `pipes-<n>` holds `n` 1 MiB pipes and reports alike from `check-write` on each output end; `ignore-cancel` loops forever calling a cheap import and ignoring cancellation; `huge-return` returns a 200 MiB `location`; `log-flood` logs a line at warn and writes one to stderr, forever, ignoring cancellation; `log-flood-<N>` does that N times and returns the handle; anything else: `invalid` naming a workload whose name is not a DNS label, else `BundleHandle { id, location: "test/<id>" }` |
//! | `stop`, `destroy`, `destroy-volume`, `apply-edge`, `remove-edge` | `Ok` |
//! | `create-volume(req)` | `VolumeHandle { bundle, name, location: "test/<bundle>/<name>" }` |
//! | `snapshot-volume(h, into)` | `h.name` `hang`: never writes, never returns (sleeps in a loop, ignoring cancellation and the deadline); else writes N bytes of the pattern (byte i = i % 251) when `h.name` is `bytes-<N>` (N ≤ 16 MiB), else `snapshot of <bundle>/<name>\n`; then closes `into` |
//! | `restore-volume(h, from)` | reads `from` to its end; `invalid` "restored bytes differ at offset X" unless it equals what `snapshot-volume` writes for `h` |
//! | `has-image` | `Ok(true)` |
//! | `import-image` | `unsupported` (but see `misbehave`) |
//! | `logs(ref, _)` | workload `forever`: the reading end of a pipe whose writing end is kept, unwritten, in the instance (it never yields or ends while the instance lives); workload `bytes-<N>`: N bytes of the pattern (N ≤ 16 MiB, else `invalid`); else `log of <bundle>/<workload>\n`; made with the streams import's `from-bytes` |
//! | `exec(ref, req)` | an echo session: stdin and stdout are pipes; `wait` reads stdin to its end, writes it to stdout (uppercased for command `["upper"]`), closes stdout, returns 0 (7 for `["exit7"]`; for `["hang"]` it never returns and stdout is never written; for `["panic"]` it panics); `resize` is `Ok`; `stderr` none with a tty, else an empty stream. Without `req.stdin`, stdin is none and reads as empty. Stdout is a 1 MiB pipe: read it while `wait` runs when echoing more |
//! | `run(ref, req, stdout)` | command `hang …` never writes and never returns (as snapshot `hang`); command `fail …` is `command-failed { exit-code: 3, stderr: "failing as asked\n" }`; else writes `command.join(" ") + "\n"` to `stdout` |
//! | `trial(req)` | listening on each of the workload's ports; no exit code; writes none; output tail `trial of <name>` |
//! | `upstream(ref, port)` | `<workload>.<bundle>.test:<port>`, pure computation |
//! | `watch-bundles(sink)` | sends `watching`, then every 10 ms `changed` (bundle `b`, workload `w<i>`, running); returns `Ok(cancelled)` when cancelled or when the sink is closed, `Err(timeout)` at a deadline |
//! | `observe-edge(name)` | serving, 2/2 replicas |
//! | `edges`, `edge-volumes` | empty lists |

mod apply;
mod config;
mod exec;
mod hang;
mod pattern;
mod watch;

use std::sync::atomic::{AtomicU64, Ordering};

use pando_adapter_sdk::types::{
    BundleHandle, BundlePlan, BundleRef, BundleSink, BundleUsage, CapacityReport, Category,
    DestroyOptions, EdgePlan, EdgeState, Error, ExecRequest, Fit, InUseReport, InputStream,
    IsolationClass, KindInfo, ListeningPort, LogOptions, ObservedBundle, ObservedWorkload,
    OutputStream, Resources, RunRequest, RuntimeCapabilities, TrialRequest, TrialResult,
    UpstreamAddress, VolumeHandle, VolumeRequest, WatchEnd, WorkloadPhase, WorkloadRef,
};
use pando_adapter_sdk::{Adapter, ExecSession, error, export_adapter, io};

/// Calls this instance has served (all exports but `info` and `configure`).
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Count one call; the count, this call included.
fn tick() -> u64 {
    CALLS.fetch_add(1, Ordering::Relaxed) + 1
}

impl TestAdapter {
    /// Count one call, panicking in every export when asked to (the count
    /// in the message tells whether the instance served an earlier call).
    fn tick(&self) -> u64 {
        let calls = tick();
        if self.misbehave == Some(config::Misbehave::PanicEverywhere) {
            panic!("test adapter asked to panic in every export (call {calls} of this instance)");
        }
        calls
    }
}

/// The test adapter; its configuration is an optional greeting, and how
/// it misbehaves, if asked to.
struct TestAdapter {
    greeting: Option<String>,
    misbehave: Option<config::Misbehave>,
}

const GIB: u64 = 1024 * 1024 * 1024;

fn room() -> Resources {
    Resources {
        cpu_millis: 4000,
        memory_bytes: 8 * GIB,
    }
}

fn fit() -> Fit {
    Fit {
        node: "local".into(),
        free: room(),
    }
}

impl Adapter for TestAdapter {
    fn info() -> KindInfo {
        KindInfo {
            kind: "test".into(),
            category: Category::SingleHost,
            description: "A test adapter that exercises every export and misbehaves on request."
                .into(),
            config_schema: config::SCHEMA.into(),
        }
    }

    fn configure(config: &str) -> Result<Self, Error> {
        let config = config::parse(config)?;
        Ok(TestAdapter {
            greeting: config.greeting,
            misbehave: config.misbehave,
        })
    }

    fn capabilities(&self) -> Result<RuntimeCapabilities, Error> {
        self.tick();
        Ok(RuntimeCapabilities {
            isolation: IsolationClass::SharedKernel,
            exec: true,
            run: true,
            logs: true,
            trial: true,
            write_observation: false,
            egress_restriction: true,
            image_import: self.misbehave == Some(config::Misbehave::ClaimImageImport),
            volume_snapshot: true,
            edge: true,
        })
    }

    fn health_check(&self) -> Result<(), Error> {
        self.tick();
        Ok(())
    }

    fn capacity(&self) -> Result<CapacityReport, Error> {
        self.tick();
        Ok(CapacityReport {
            total: room(),
            largest_fit: Some(fit()),
            nodes: 1,
        })
    }

    fn largest_fit_for(&self, _bundle: String) -> Result<Option<Fit>, Error> {
        self.tick();
        Ok(Some(fit()))
    }

    fn in_use(&self) -> Result<InUseReport, Error> {
        self.tick();
        Ok(InUseReport {
            bundles: Vec::new(),
            volumes: Vec::new(),
            requested: Resources {
                cpu_millis: 0,
                memory_bytes: 0,
            },
        })
    }

    fn apply(&self, plan: BundlePlan) -> Result<BundleHandle, Error> {
        self.tick();
        apply::apply(plan, self.greeting.as_deref())
    }

    fn observe(&self, bundle: BundleRef) -> Result<ObservedBundle, Error> {
        let calls = self.tick();
        // `huge-<N>`: a reason of N bytes, a return value as large as asked.
        let reason = match bundle.id.strip_prefix("huge-") {
            Some(n) => {
                let n: usize = n
                    .parse()
                    .map_err(|_| error::invalid("bundle id `huge-<bytes>`"))?;
                "r".repeat(n)
            }
            None => format!("calls={calls}"),
        };
        Ok(ObservedBundle {
            id: bundle.id,
            exists: true,
            workloads: vec![ObservedWorkload {
                name: "counter".into(),
                phase: WorkloadPhase::Running,
                digest: None,
                exit_code: None,
                reason,
                started_at_ms: None,
                finished_at_ms: None,
            }],
            volumes: Vec::new(),
        })
    }

    fn stop(&self, _bundle: BundleRef) -> Result<(), Error> {
        self.tick();
        Ok(())
    }

    fn destroy(&self, _bundle: BundleRef, _options: DestroyOptions) -> Result<(), Error> {
        self.tick();
        Ok(())
    }

    fn usage(&self, _bundle: BundleRef) -> Result<BundleUsage, Error> {
        self.tick();
        Ok(BundleUsage {
            workloads: Vec::new(),
            volume_bytes: 0,
        })
    }

    fn create_volume(&self, request: VolumeRequest) -> Result<VolumeHandle, Error> {
        self.tick();
        Ok(VolumeHandle {
            location: format!("test/{}/{}", request.bundle, request.name),
            bundle: request.bundle,
            name: request.name,
        })
    }

    fn destroy_volume(&self, _volume: VolumeHandle) -> Result<(), Error> {
        self.tick();
        Ok(())
    }

    fn snapshot_volume(&self, volume: VolumeHandle, into: OutputStream) -> Result<(), Error> {
        self.tick();
        if volume.name == "hang" {
            hang::forever();
        }
        let bytes = pattern::snapshot_bytes(&volume)?;
        io::write_all(&into, &bytes)?;
        // Dropping the stream closes it: the reader sees the end.
        drop(into);
        Ok(())
    }

    fn restore_volume(&self, volume: VolumeHandle, from: InputStream) -> Result<(), Error> {
        self.tick();
        let expected = pattern::snapshot_bytes(&volume)?;
        let got = io::read_to_end(&from, pattern::MAX_BYTES + 1)?;
        match pattern::first_difference(&expected, &got) {
            None => Ok(()),
            Some(offset) => Err(error::invalid(format!(
                "restored bytes differ at offset {offset}"
            ))),
        }
    }

    fn has_image(&self, _image: String) -> Result<bool, Error> {
        self.tick();
        Ok(true)
    }

    fn import_image(&self, _from: InputStream) -> Result<String, Error> {
        self.tick();
        match self.misbehave {
            Some(config::Misbehave::ImportImageInternal) => {
                Err(error::internal("import_image is not implemented"))
            }
            Some(config::Misbehave::ImportImagePanic) => {
                panic!("test adapter asked to panic in import_image")
            }
            _ => Err(error::unsupported("import_image")),
        }
    }

    fn logs(&self, workload: WorkloadRef, _options: LogOptions) -> Result<InputStream, Error> {
        self.tick();
        if workload.workload == "forever" {
            return Ok(hang::open_stream());
        }
        let bytes = match pattern::bytes_len(&workload.workload)? {
            Some(n) => pattern::pattern(n),
            None => format!("log of {}/{}\n", workload.bundle, workload.workload).into_bytes(),
        };
        Ok(io::from_bytes(&bytes))
    }

    fn exec(
        &self,
        _workload: WorkloadRef,
        request: ExecRequest,
    ) -> Result<Box<dyn ExecSession>, Error> {
        self.tick();
        Ok(Box::new(exec::Echo::open(&request)))
    }

    fn run(
        &self,
        _workload: WorkloadRef,
        request: RunRequest,
        stdout: OutputStream,
    ) -> Result<(), Error> {
        self.tick();
        if request.command.first().map(String::as_str) == Some("hang") {
            hang::forever();
        }
        if request.command.first().map(String::as_str) == Some("fail") {
            return Err(error::command_failed(3, "failing as asked\n"));
        }
        let line = format!("{}\n", request.command.join(" "));
        io::write_all(&stdout, line.as_bytes())
    }

    fn trial(&self, request: TrialRequest) -> Result<TrialResult, Error> {
        self.tick();
        Ok(TrialResult {
            listening: request
                .workload
                .ports
                .iter()
                .map(|p| ListeningPort {
                    port: p.port,
                    protocol: p.protocol,
                })
                .collect(),
            exit_code: None,
            writes: None,
            output_tail: format!("trial of {}", request.workload.name),
        })
    }

    fn upstream(&self, workload: WorkloadRef, port: u16) -> Result<UpstreamAddress, Error> {
        self.tick();
        Ok(UpstreamAddress {
            host: format!("{}.{}.test", workload.workload, workload.bundle),
            port,
        })
    }

    fn watch_bundles(&self, sink: BundleSink) -> Result<WatchEnd, Error> {
        self.tick();
        watch::watch(&sink)
    }

    fn apply_edge(&self, _plan: EdgePlan) -> Result<(), Error> {
        self.tick();
        Ok(())
    }

    fn observe_edge(&self, name: String) -> Result<EdgeState, Error> {
        self.tick();
        Ok(EdgeState {
            name,
            serving: true,
            ready_replicas: 2,
            desired_replicas: 2,
            address: None,
            message: String::new(),
            warnings: Vec::new(),
        })
    }

    fn remove_edge(&self, _name: String) -> Result<(), Error> {
        self.tick();
        Ok(())
    }

    fn edges(&self) -> Result<Vec<String>, Error> {
        self.tick();
        if self.misbehave == Some(config::Misbehave::HugeReturns) {
            return Ok((0..10_000_000u32).map(|i| format!("edge-{i}")).collect());
        }
        Ok(Vec::new())
    }

    fn edge_volumes(&self) -> Result<Vec<VolumeHandle>, Error> {
        self.tick();
        Ok(Vec::new())
    }
}

export_adapter!(TestAdapter);
