//! A test adapter of `pando:runtime@0.2.0` (WASI 0.3, world
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
//!   `missing-…` does not exist.
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
//! - everything else: `unsupported`, naming the call.

wit_bindgen::generate!({
    path: "../../../wit/v0.2",
    world: "runtime-adapter",
    generate_all,
});

use exports::pando::runtime::adapter::Guest;
use pando::runtime::types::*;
use pando::runtime::{call, log};
use wasi::clocks::monotonic_clock;

struct V02;

fn unsupported<T>(what: &str) -> Result<T, Error> {
    Err(Error::Unsupported(format!(
        "{what}: the 0.2 test adapter does not do it"
    )))
}

fn security(s: &Security) -> String {
    format!(
        "user={:?},group={:?},fs={:?},restricted={}",
        s.run_as_user, s.run_as_group, s.fs_group, s.restricted
    )
}

/// A byte stream a spawned task writes after the call returns, as the
/// crate docs list by `what`.
fn written(what: String) -> ByteStream {
    let (mut bytes, reader) = wit_stream::new::<u8>();
    let (done, done_reader) = wit_future::new::<Result<(), Error>>(|| {
        Err(Error::Internal("the test adapter dropped `done`".into()))
    });
    wit_bindgen::spawn_local(async move {
        let outcome = if let Some(n) = what.strip_prefix("lines-") {
            let n: u32 = n.parse().unwrap_or(0);
            let mut ok = Ok(());
            for i in 1..=n {
                if !bytes
                    .write_all(format!("line {i}\n").into_bytes())
                    .await
                    .is_empty()
                {
                    ok = Err(Error::Cancelled("core dropped the stream".into()));
                    break;
                }
            }
            ok
        } else if let Some(n) = what.strip_prefix("bytes-") {
            // Made whole, then written in one write, as the 0.1.0 test
            // adapter's snapshot does: the `versions` bench compares the two.
            let n: usize = n.parse().unwrap_or(0);
            if bytes.write_all(pattern(n)).await.is_empty() {
                Ok(())
            } else {
                Err(Error::Cancelled("core dropped the stream".into()))
            }
        } else if what == "silent" {
            // Holds the stream and `done` and never touches either, deaf to
            // cancellation: only the host can end it.
            let _held = (bytes, done);
            futures::future::pending::<()>().await;
            return;
        } else if what == "panic" {
            bytes.write_all(b"partial".to_vec()).await;
            panic!("the test adapter panics mid-stream, as asked");
        } else if what == "broken" {
            bytes.write_all(b"partial".to_vec()).await;
            Err(Error::Unavailable("the log broke off".into()))
        } else if let Some(code) = what.strip_prefix("exit-") {
            bytes.write_all(b"out".to_vec()).await;
            Err(Error::CommandFailed(CommandFailure {
                exit_code: code.parse().unwrap_or(1),
                stderr: "err".into(),
            }))
        } else if what == "endless" {
            loop {
                if !bytes.write_all(b"tick\n".to_vec()).await.is_empty() {
                    break Err(Error::Cancelled("core dropped the stream".into()));
                }
                monotonic_clock::wait_for(10_000_000).await;
            }
        } else {
            Err(Error::Invalid(format!("no such stream `{what}`")))
        };
        drop(bytes);
        done.write(outcome).await.ok();
    });
    ByteStream {
        bytes: reader,
        done: done_reader,
    }
}

/// `n` bytes of the 0.1.0 test adapter's snapshot pattern: byte i is i % 251.
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

/// Reads a stream to its end: how many bytes, and their sum modulo 2^32.
async fn drain(mut from: wit_bindgen::StreamReader<u8>) -> (u64, u32) {
    let (mut n, mut sum) = (0u64, 0u32);
    loop {
        let (result, chunk) = from.read(Vec::with_capacity(64 << 10)).await;
        n += chunk.len() as u64;
        sum = chunk.iter().fold(sum, |s, b| s.wrapping_add(u32::from(*b)));
        if !matches!(result, wit_bindgen::StreamResult::Complete(_)) {
            return (n, sum);
        }
    }
}

impl Guest for V02 {
    fn info() -> KindInfo {
        KindInfo {
            kind: "v02-test".into(),
            category: Category::SingleHost,
            description: "A test adapter of contract 0.2.0.".into(),
            config_schema: "{}".into(),
        }
    }

    fn configure(config: String) -> Result<(), Error> {
        if config.contains("reject") {
            return Err(Error::Invalid(format!(
                "configuration `{config}`: told to reject it"
            )));
        }
        Ok(())
    }

    fn capabilities() -> Result<RuntimeCapabilities, Error> {
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

    async fn health_check() -> Result<(), Error> {
        Ok(())
    }

    async fn capacity() -> Result<CapacityReport, Error> {
        unsupported("capacity")
    }

    async fn largest_fit_for(_bundle: String) -> Result<Option<Fit>, Error> {
        unsupported("largest-fit-for")
    }

    async fn in_use() -> Result<InUseReport, Error> {
        unsupported("in-use")
    }

    async fn apply(plan: BundlePlan) -> Result<BundleHandle, Error> {
        let ms: u64 = plan.revision.parse().unwrap_or(0);
        let deadline = call::deadline();
        log::log(
            log::Level::Info,
            "apply",
            &[("bundle".into(), plan.id.clone())],
        );
        let wait = core::pin::pin!(monotonic_clock::wait_for(ms * 1_000_000));
        let cancelled = core::pin::pin!(call::cancelled());
        if let futures::future::Either::Right(_) = futures::future::select(wait, cancelled).await {
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

    async fn observe(bundle: BundleRef) -> Result<ObservedBundle, Error> {
        if bundle.id.starts_with("missing-") {
            return Ok(ObservedBundle {
                id: bundle.id,
                exists: false,
                workloads: Vec::new(),
                volumes: Vec::new(),
            });
        }
        Ok(ObservedBundle {
            workloads: vec![ObservedWorkload {
                name: bundle.id.clone(),
                phase: WorkloadPhase::Running,
                digest: None,
                exit_code: None,
                reason: String::new(),
                started_at_ms: None,
                finished_at_ms: None,
            }],
            id: bundle.id,
            exists: true,
            volumes: Vec::new(),
        })
    }

    async fn stop(_bundle: BundleRef) -> Result<(), Error> {
        unsupported("stop")
    }

    async fn destroy(_bundle: BundleRef, _options: DestroyOptions) -> Result<(), Error> {
        unsupported("destroy")
    }

    async fn usage(_bundle: BundleRef) -> Result<BundleUsage, Error> {
        unsupported("usage")
    }

    async fn create_volume(_request: VolumeRequest) -> Result<VolumeHandle, Error> {
        unsupported("create-volume")
    }

    async fn destroy_volume(_volume: VolumeHandle) -> Result<(), Error> {
        unsupported("destroy-volume")
    }

    async fn snapshot_volume(volume: VolumeHandle) -> Result<ByteStream, Error> {
        Ok(written(volume.name))
    }

    async fn restore_volume(
        volume: VolumeHandle,
        from: wit_bindgen::StreamReader<u8>,
    ) -> Result<(), Error> {
        if let Some(n) = volume.name.strip_prefix("bytes-") {
            let expected = pattern(n.parse().unwrap_or(0));
            let got = from.collect().await;
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

    async fn has_image(_image: String) -> Result<bool, Error> {
        unsupported("has-image")
    }

    async fn import_image(from: wit_bindgen::StreamReader<u8>) -> Result<String, Error> {
        let (n, sum) = drain(from).await;
        Ok(format!("{n}:{sum}"))
    }

    async fn logs(workload: WorkloadRef, _options: LogOptions) -> Result<ByteStream, Error> {
        Ok(written(workload.workload))
    }

    async fn exec(
        _workload: WorkloadRef,
        request: ExecRequest,
        stdin: Option<wit_bindgen::StreamReader<u8>>,
        resize: Option<wit_bindgen::StreamReader<TerminalSize>>,
    ) -> Result<ExecSession, Error> {
        let (mut out, stdout) = wit_stream::new::<u8>();
        let (err, stderr) = if request.tty {
            (None, None)
        } else {
            let (w, r) = wit_stream::new::<u8>();
            (Some(w), Some(r))
        };
        let (exit, exit_reader) = wit_future::new::<Result<i32, Error>>(|| {
            Err(Error::Internal("the test adapter dropped `exit`".into()))
        });
        let program = request.command.first().cloned().unwrap_or_default();
        let arg = request.command.get(1).cloned().unwrap_or_default();
        wit_bindgen::spawn_local(async move {
            let code = match (program.as_str(), stdin, resize) {
                ("echo", Some(mut stdin), _) => loop {
                    let (result, chunk) = stdin.read(Vec::with_capacity(4096)).await;
                    if !chunk.is_empty() && !out.write_all(chunk).await.is_empty() {
                        break Ok(1);
                    }
                    if !matches!(result, wit_bindgen::StreamResult::Complete(_)) {
                        break Ok(0);
                    }
                },
                ("sizes", _, Some(mut sizes)) => {
                    let mut seen = 0;
                    while let Some(size) = sizes.next().await {
                        seen += 1;
                        let line = format!("size {}x{}\n", size.cols, size.rows);
                        out.write_all(line.into_bytes()).await;
                    }
                    Ok(seen)
                }
                ("fail", _, _) => {
                    if let Some(mut err) = err {
                        err.write_all(b"bye".to_vec()).await;
                    }
                    Ok(arg.parse().unwrap_or(1))
                }
                (other, _, _) => Err(Error::Invalid(format!(
                    "no program `{other}` (or not with these streams)"
                ))),
            };
            drop(out);
            exit.write(code).await.ok();
        });
        Ok(ExecSession {
            stdout,
            stderr,
            exit: exit_reader,
        })
    }

    async fn run(workload: WorkloadRef, _request: RunRequest) -> Result<ByteStream, Error> {
        Ok(written(workload.workload))
    }

    async fn trial(request: TrialRequest) -> Result<TrialResult, Error> {
        Ok(TrialResult {
            listening: Vec::new(),
            exit_code: Some(0),
            writes: None,
            output_tail: security(&request.workload.security),
        })
    }

    fn upstream(workload: WorkloadRef, port: u16) -> Result<UpstreamAddress, Error> {
        Ok(UpstreamAddress {
            host: format!("{}.{}.v02", workload.workload, workload.bundle),
            port,
        })
    }

    async fn watch_bundles() -> Result<BundleWatch, Error> {
        let (mut events, reader) = wit_stream::new::<BundleEvent>();
        let (end, end_reader) = wit_future::new::<Result<WatchEnd, Error>>(|| {
            Err(Error::Internal("the test adapter dropped `end`".into()))
        });
        wit_bindgen::spawn_local(async move {
            let mut next = Some(BundleEvent::Watching);
            let mut i = 0;
            while let Some(event) = next.take() {
                if events.write_one(event).await.is_some() || call::is_cancelled() {
                    break;
                }
                i += 1;
                let wait = core::pin::pin!(monotonic_clock::wait_for(10_000_000));
                let cancelled = core::pin::pin!(call::cancelled());
                if let futures::future::Either::Right(_) =
                    futures::future::select(wait, cancelled).await
                {
                    break;
                }
                next = Some(BundleEvent::Changed(WorkloadChange {
                    bundle: "shop".into(),
                    workload: ObservedWorkload {
                        name: format!("w{i}"),
                        phase: WorkloadPhase::Running,
                        digest: None,
                        exit_code: None,
                        reason: String::new(),
                        started_at_ms: None,
                        finished_at_ms: None,
                    },
                    deleted: false,
                }));
            }
            drop(events);
            end.write(Ok(WatchEnd::Cancelled)).await.ok();
        });
        Ok(BundleWatch {
            events: reader,
            end: end_reader,
        })
    }

    async fn apply_edge(_plan: EdgePlan) -> Result<(), Error> {
        unsupported("apply-edge")
    }

    async fn observe_edge(_name: String) -> Result<EdgeState, Error> {
        unsupported("observe-edge")
    }

    async fn remove_edge(_name: String) -> Result<(), Error> {
        unsupported("remove-edge")
    }

    async fn edges() -> Result<Vec<String>, Error> {
        unsupported("edges")
    }

    async fn edge_volumes() -> Result<Vec<VolumeHandle>, Error> {
        unsupported("edge-volumes")
    }
}

export!(V02);
