//! A test adapter of `pando:runtime@0.2.0` (WASI 0.3, exporting
//! `runtime-adapter`): what the host's 0.2 tests call, each answer showing
//! that the call went where it should.
//!
//! - `info`, `configure`, `capabilities`, `upstream`: plain calls.
//!   `configure` refuses a configuration with `"reject"` in it.
//! - `health-check`: an `async func` that answers at once.
//! - `apply`: waits the plan's `revision` in milliseconds on
//!   `wasi:clocks@0.3.0`, racing `call.cancelled` (cancellation is
//!   cooperative in 0.2.0); its handle's `location` says what the call saw:
//!   its deadline and each workload's `security`.
//! - `observe`: the app exists with one running workload named after it;
//!   `missing-…` does not exist; `panic-…` panics (a trap in a call that
//!   shares its instance with others).
//! - `trial`: echoes the workload's `security` in its `output-tail`.
//! - `logs`, `run`, `snapshot-volume`: a `byte-stream` whose bytes a task of
//!   the adapter writes after the call returned, then resolves `done`; what
//!   it writes is named by the workload (the volume for a snapshot):
//!   - `lines-<n>`: `line <i>` for i in 1..=n, each on its own line; whole;
//!   - `broken`: `partial`, then `done` fails `unavailable`;
//!   - `exit-<n>`: `out`, then `done` fails `command-failed` with exit code
//!     n and stderr `err`;
//!   - `endless`: `tick` lines every 10 ms until core drops the stream,
//!     then `done` reports `cancelled`;
//!   - `silent`: never writes, never resolves `done`, ignores
//!     cancellation;
//!   - `panic`: `partial`, then panics;
//!   - `bytes-<n>`: n bytes of the 0.1.0 test adapter's pattern (byte i is
//!     i % 251), made whole and written at once, as that adapter does.
//! - `restore-volume`: reads `from` to its end; for a volume `bytes-<n>`,
//!   `ok` if it is the pattern `bytes-<n>` writes (`invalid` naming the
//!   first offset that differs), as the 0.1.0 test adapter checks; for a
//!   volume named by a number, `ok` if it read that many bytes, else
//!   `invalid` naming both counts.
//! - `import-image`: reads `from` to its end; answers `<bytes>:<sum>`, the
//!   byte count and the bytes' sum modulo 2^32.
//! - `exec`: a program played by the adapter, named by the command's first
//!   word, run by a task of the adapter after the call returns:
//!   - `echo`: stdin to stdout until stdin ends; exits 0;
//!   - `sizes` (with a terminal): `size <cols>x<rows>` on stdout for each
//!     size the terminal is given, until the sizes end; exits with how
//!     many it saw;
//!   - `fail <n>`: `bye` on stderr; exits n.
//! - `watch-bundles`: `watching`, then a change of workload `w<i>` of app
//!   `shop` every 10 ms, until core drops the events or cancels the call;
//!   then its end, `cancelled`.
//! - everything else: the SDK's default, `unsupported` naming the call.
//!
//! Built on the SDK's 0.2 line (`pando-adapter-sdk-v02`): its trait, export
//! and stream helpers are what these calls go through.

use std::time::Duration;

use pando_adapter_sdk_v02::bindings::pando::runtime::call;
use pando_adapter_sdk_v02::bindings::wasi::clocks::monotonic_clock;
use pando_adapter_sdk_v02::streams::{self, Writer};
use pando_adapter_sdk_v02::types::*;
use pando_adapter_sdk_v02::{Adapter, error, exec, export_adapter, info, time, watch};

struct V02;

fn security(s: &Security) -> String {
    format!(
        "user={:?},group={:?},fs={:?},restricted={}",
        s.run_as_user, s.run_as_group, s.fs_group, s.restricted
    )
}

/// A byte stream a task writes after the call returns, as the crate docs
/// list by `what`.
fn written(what: String) -> ByteStream {
    if what == "silent" {
        // Holds the stream and `done` and never touches either, deaf to
        // cancellation: only the host can end it.
        let (writer, done, stream) = streams::new();
        pando_adapter_sdk_v02::spawn(async move {
            let _held = (writer, done);
            futures::future::pending::<()>().await;
        });
        return stream;
    }
    streams::written(move |out| write(what, out))
}

async fn write(what: String, mut out: Writer) -> Result<(), Error> {
    if let Some(n) = what.strip_prefix("lines-") {
        let n: u32 = n.parse().unwrap_or(0);
        for i in 1..=n {
            out.write(format!("line {i}\n").into_bytes()).await?;
        }
        Ok(())
    } else if let Some(n) = what.strip_prefix("bytes-") {
        // Made whole, then written in one write, as the 0.1.0 test
        // adapter's snapshot does: the `versions` bench compares the two.
        out.write(pattern(n.parse().unwrap_or(0))).await
    } else if what == "panic" {
        out.write(b"partial".to_vec()).await?;
        panic!("the test adapter panics mid-stream, as asked");
    } else if what == "broken" {
        out.write(b"partial".to_vec()).await?;
        Err(Error::Unavailable("the log broke off".into()))
    } else if let Some(code) = what.strip_prefix("exit-") {
        out.write(b"out".to_vec()).await?;
        Err(error::command_failed(code.parse().unwrap_or(1), "err"))
    } else if what == "endless" {
        loop {
            out.write(b"tick\n".to_vec()).await?;
            monotonic_clock::wait_for(10_000_000).await;
        }
    } else {
        Err(Error::Invalid(format!("no such stream `{what}`")))
    }
}

/// `n` bytes of the 0.1.0 test adapter's snapshot pattern: byte i is i % 251.
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

/// Reads a stream to its end: how many bytes, and their sum modulo 2^32.
async fn drain(mut from: StreamReader<u8>) -> (u64, u32) {
    let (mut n, mut sum) = (0u64, 0u32);
    while let Some(chunk) = streams::next_chunk(&mut from, 64 << 10).await {
        n += chunk.len() as u64;
        sum = chunk.iter().fold(sum, |s, b| s.wrapping_add(u32::from(*b)));
    }
    (n, sum)
}

fn running(name: String) -> ObservedWorkload {
    ObservedWorkload {
        name,
        phase: WorkloadPhase::Running,
        digest: None,
        exit_code: None,
        reason: String::new(),
        started_at_ms: None,
        finished_at_ms: None,
    }
}

impl Adapter for V02 {
    fn info() -> KindInfo {
        KindInfo {
            kind: "v02-test".into(),
            category: Category::SingleHost,
            description: "A test adapter of contract 0.2.0.".into(),
            config_schema: "{}".into(),
        }
    }

    fn configure(config: &str) -> Result<Self, Error> {
        if config.contains("reject") {
            return Err(Error::Invalid(format!(
                "configuration `{config}`: told to reject it"
            )));
        }
        Ok(V02)
    }

    fn capabilities(&self) -> Result<RuntimeCapabilities, Error> {
        Ok(RuntimeCapabilities {
            isolation: IsolationClass::SharedKernel,
            exec: true,
            run: true,
            logs: true,
            trial: true,
            write_observation: false,
            egress_restriction: false,
            image_import: false,
            volume_snapshot: true,
            edge: false,
        })
    }

    async fn health_check(&self) -> Result<(), Error> {
        Ok(())
    }

    async fn apply(&self, plan: BundlePlan) -> Result<BundleHandle, Error> {
        let ms: u64 = plan.revision.parse().unwrap_or(0);
        let deadline = call::deadline();
        info!(bundle = plan.id, "apply");
        if time::sleep(Duration::from_millis(ms)).await.is_err() {
            return Err(Error::Cancelled(format!("apply {}: cancelled", plan.id)));
        }
        let now = monotonic_clock::now();
        let securities: Vec<String> = plan
            .workloads
            .iter()
            .map(|w| security(&w.security))
            .collect();
        Ok(BundleHandle {
            id: plan.id,
            location: format!(
                "deadline_in_ms={};security={}",
                deadline.map_or(-1, |d| (d.saturating_sub(now) / 1_000_000) as i64),
                securities.join("|")
            ),
        })
    }

    async fn observe(&self, bundle: BundleRef) -> Result<ObservedBundle, Error> {
        if bundle.id.starts_with("panic-") {
            panic!("observe {}: asked to panic", bundle.id);
        }
        let exists = !bundle.id.starts_with("missing-");
        Ok(ObservedBundle {
            workloads: if exists {
                vec![running(bundle.id.clone())]
            } else {
                Vec::new()
            },
            id: bundle.id,
            exists,
            volumes: Vec::new(),
        })
    }

    async fn snapshot_volume(&self, volume: VolumeHandle) -> Result<ByteStream, Error> {
        Ok(written(volume.name))
    }

    async fn restore_volume(
        &self,
        volume: VolumeHandle,
        from: StreamReader<u8>,
    ) -> Result<(), Error> {
        if let Some(n) = volume.name.strip_prefix("bytes-") {
            let expected = pattern(n.parse().unwrap_or(0));
            let got = streams::read_to_end(from, expected.len() + 1).await?;
            return match expected.iter().zip(&got).position(|(a, b)| a != b) {
                None if got.len() == expected.len() => Ok(()),
                at => Err(Error::Invalid(format!(
                    "restored bytes differ at offset {}",
                    at.unwrap_or(expected.len().min(got.len()))
                ))),
            };
        }
        let (n, _) = drain(from).await;
        if volume.name.parse() == Ok(n) {
            Ok(())
        } else {
            Err(Error::Invalid(format!(
                "read {n} bytes, expected {}",
                volume.name
            )))
        }
    }

    async fn import_image(&self, from: StreamReader<u8>) -> Result<String, Error> {
        let (n, sum) = drain(from).await;
        Ok(format!("{n}:{sum}"))
    }

    async fn logs(&self, workload: WorkloadRef, _options: LogOptions) -> Result<ByteStream, Error> {
        Ok(written(workload.workload))
    }

    async fn exec(
        &self,
        _workload: WorkloadRef,
        request: ExecRequest,
        stdin: Option<StreamReader<u8>>,
        resize: Option<StreamReader<TerminalSize>>,
    ) -> Result<ExecSession, Error> {
        let program = request.command.first().cloned().unwrap_or_default();
        let arg = request.command.get(1).cloned().unwrap_or_default();
        Ok(exec::session(request.tty, move |mut out, err| async move {
            match (program.as_str(), stdin, resize) {
                ("echo", Some(mut stdin), _) => {
                    while let Some(chunk) = streams::next_chunk(&mut stdin, 4096).await {
                        if out.write(chunk).await.is_err() {
                            return Ok(1);
                        }
                    }
                    Ok(0)
                }
                ("sizes", _, Some(mut sizes)) => {
                    let mut seen = 0;
                    while let Some(size) = sizes.next().await {
                        seen += 1;
                        let line = format!("size {}x{}\n", size.cols, size.rows);
                        out.write(line.into_bytes()).await.ok();
                    }
                    Ok(seen)
                }
                ("fail", _, _) => {
                    if let Some(mut err) = err {
                        err.write(b"bye".to_vec()).await.ok();
                    }
                    Ok(arg.parse().unwrap_or(1))
                }
                (other, _, _) => Err(Error::Invalid(format!(
                    "no program `{other}` (or not with these streams)"
                ))),
            }
        }))
    }

    async fn run(&self, workload: WorkloadRef, _request: RunRequest) -> Result<ByteStream, Error> {
        Ok(written(workload.workload))
    }

    async fn trial(&self, request: TrialRequest) -> Result<TrialResult, Error> {
        Ok(TrialResult {
            listening: Vec::new(),
            exit_code: Some(0),
            writes: None,
            output_tail: security(&request.workload.security),
        })
    }

    fn upstream(&self, workload: WorkloadRef, port: u16) -> Result<UpstreamAddress, Error> {
        Ok(UpstreamAddress {
            host: format!("{}.{}.v02", workload.workload, workload.bundle),
            port,
        })
    }

    async fn watch_bundles(&self) -> Result<BundleWatch, Error> {
        Ok(watch::bundle_watch(|mut events| async move {
            let mut next = BundleEvent::Watching;
            let mut i = 0;
            // Ends when core drops the events or cancels the call.
            while events.send(next).await.is_ok()
                && time::sleep(Duration::from_millis(10)).await.is_ok()
            {
                i += 1;
                next = BundleEvent::Changed(WorkloadChange {
                    bundle: "shop".into(),
                    workload: running(format!("w{i}")),
                    deleted: false,
                });
            }
            Ok(WatchEnd::Cancelled)
        }))
    }
}

export_adapter!(V02);
