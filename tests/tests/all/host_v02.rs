//! Contract 0.2.0 served beside 0.1.0: one host loads an adapter of each,
//! each on its own line's engine, and core calls both through the one typed
//! API. The 0.2.0 test adapter's answers say what its call saw (its crate
//! docs), so each test asserts where a call went, not only that it returned.

use std::time::{Duration, Instant};

use pando_host::types::{
    EgressPolicy, Error as AdapterError, ExecRequest, LogOptions, NetworkRules, RunRequest,
    Security, TerminalSize, TrialRequest, VolumeHandle,
};
use pando_host::{
    CallContext, CallError, CancellationToken, Host, Limits, LoadError, LoadOptions, World,
};
use pando_tests::components;
use pando_tests::plans::{bundle, plan, workload, wref};

fn host(cache: &tempfile::TempDir) -> Host {
    Host::builder()
        .cache_dir(cache.path())
        .build()
        .expect("host builds")
}

async fn load_v02(host: &Host) -> pando_host::Adapter {
    host.load_file(&components::v02_adapter(), LoadOptions::default())
        .await
        .expect("the 0.2.0 test adapter loads")
}

#[tokio::test]
async fn a_0_1_and_a_0_2_adapter_load_in_one_host_and_both_answer() {
    let cache = tempfile::tempdir().expect("tempdir");
    let host = host(&cache);
    let old = host
        .load_file(&components::test_adapter(), LoadOptions::default())
        .await
        .expect("the 0.1.0 test adapter loads");
    let new = load_v02(&host).await;

    assert_eq!(old.shape().version, "0.1.0");
    assert_eq!(new.shape().version, "0.2.0");
    assert_eq!(new.shape().world, World::RuntimeAdapter);
    assert_eq!(new.kind_info().kind, "v02-test");
    assert!(
        new.shape()
            .imports
            .iter()
            .any(|i| i.starts_with("wasi:clocks/monotonic-clock@0.3")),
        "the 0.2.0 adapter is lent WASI 0.3's clocks: {:?}",
        new.shape().imports
    );

    let ctx = CallContext::default();
    let w = wref("shop", "web");
    let (a, b) = tokio::join!(old.upstream(&ctx, &w, 8080), new.upstream(&ctx, &w, 8080));
    assert_eq!(a.expect("0.1 upstream").host, "web.shop.test");
    assert_eq!(b.expect("0.2 upstream").host, "web.shop.v02");
    // A plain 0.2.0 call and an `async func` one, on the same instance.
    let caps = new.capabilities(&ctx).await.expect("capabilities");
    assert!(
        caps.trial && caps.logs && caps.run && caps.volume_snapshot && caps.exec,
        "{caps:?}"
    );
    new.health_check(&ctx).await.expect("health-check");
    let seen = new.observe(&ctx, &bundle("shop")).await.expect("observe");
    assert!(seen.exists);
    assert_eq!(seen.workloads[0].name, "shop");
    let gone = new
        .observe(&ctx, &bundle("missing-shop"))
        .await
        .expect("observe");
    assert!(!gone.exists);
}

#[tokio::test]
async fn a_0_2_async_call_sees_its_own_deadline_and_a_plan_without_security_runs_as_the_image_says()
{
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = load_v02(&host(&cache)).await;
    let ctx = CallContext::default().with_timeout(Duration::from_secs(5));
    let mut p = plan("shop", &["web", "db"]);
    p.revision = "30".into();
    let handle = adapter.apply(&ctx, &p).await.expect("apply");
    assert_eq!(handle.id, "shop");
    let (deadline, security) = handle
        .location
        .split_once(";security=")
        .expect("the test adapter's location");
    let left: i64 = deadline
        .strip_prefix("deadline_in_ms=")
        .and_then(|n| n.parse().ok())
        .expect("a deadline in ms");
    assert!(
        (4_000..5_000).contains(&left),
        "the guest read its call's 5 s deadline on wasi:clocks@0.3.0 after a 30 ms wait: {left} ms left"
    );
    let image_user = "user=None,group=None,fs=None,restricted=false";
    assert_eq!(security, format!("{image_user}|{image_user}"));

    let tried = adapter
        .trial(
            &ctx,
            &TrialRequest {
                bundle: "shop".into(),
                workload: workload("web"),
                network: NetworkRules {
                    egress: EgressPolicy::Open,
                },
                pull_credentials: Vec::new(),
                duration_ms: 100,
            },
        )
        .await
        .expect("trial");
    assert_eq!(tried.output_tail, image_user);
}

#[tokio::test]
async fn security_reaches_a_0_2_adapter_and_a_0_1_adapter_refuses_it_before_anything_runs() {
    let cache = tempfile::tempdir().expect("tempdir");
    let host = host(&cache);
    let new = load_v02(&host).await;
    let old = host
        .load_file(&components::test_adapter(), LoadOptions::default())
        .await
        .expect("the 0.1.0 test adapter loads");
    let ctx = CallContext::default();
    let mut p = plan("locked", &["web", "db"]);
    p.workloads[0].security = Security {
        run_as_user: Some(1000),
        run_as_group: Some(3000),
        fs_group: Some(2000),
        restricted: true,
    };
    let handle = new
        .apply(&ctx, &p)
        .await
        .expect("a 0.2.0 adapter takes security");
    assert!(
        handle.location.ends_with(
            "security=user=Some(1000),group=Some(3000),fs=Some(2000),restricted=true\
             |user=None,group=None,fs=None,restricted=false"
        ),
        "each workload's own security, as core wrote it: {}",
        handle.location
    );

    // The 0.1.0 test adapter applies any plan: an error is the host's.
    let err = old
        .apply(&ctx, &p)
        .await
        .expect_err("0.1.0 cannot carry security");
    match &err {
        CallError::Adapter(e) => {
            assert_eq!(e.kind(), "unsupported");
            let m = e.message();
            assert!(
                m.contains("`web`") && m.contains("pando:runtime@0.1.0"),
                "{m}"
            );
        }
        other => panic!("expected `unsupported`, got {other:?}"),
    }
    let mut t = TrialRequest {
        bundle: "locked".into(),
        workload: p.workloads[0].clone(),
        network: NetworkRules {
            egress: EgressPolicy::Open,
        },
        pull_credentials: Vec::new(),
        duration_ms: 100,
    };
    assert!(matches!(
        old.trial(&ctx, &t).await,
        Err(CallError::Adapter(e)) if e.kind() == "unsupported"
    ));
    let tried = new.trial(&ctx, &t).await.expect("a 0.2.0 trial");
    assert_eq!(
        tried.output_tail,
        "user=Some(1000),group=Some(3000),fs=Some(2000),restricted=true"
    );
    // Without security a plan is the same to either line.
    t.workload.security = Security::default();
    old.trial(&ctx, &t)
        .await
        .expect("a 0.1.0 trial without security");
}

#[tokio::test]
async fn a_0_2_call_past_its_deadline_is_ended_by_the_host_and_the_next_call_gets_a_fresh_instance()
{
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = load_v02(&host(&cache)).await;
    let mut p = plan("slow", &["web"]);
    p.revision = "60000".into();
    let started = Instant::now();
    let err = adapter
        .apply(
            &CallContext::default().with_timeout(Duration::from_millis(200)),
            &p,
        )
        .await
        .expect_err("a minute's wait under a 200 ms deadline");
    assert!(matches!(err, CallError::DeadlineExceeded { .. }), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "ended at the deadline, not the wait"
    );
    let up = adapter
        .upstream(&CallContext::default(), &wref("a", "b"), 1)
        .await
        .expect("the adapter serves on after a call it had to end");
    assert_eq!(up.host, "b.a.v02");
}

#[tokio::test]
async fn a_cancelled_0_2_call_is_told_through_call_cancelled_and_returns_on_its_own() {
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = load_v02(&host(&cache)).await;
    let cancel = CancellationToken::new();
    let ctx = CallContext::new(cancel.clone()).with_timeout(Duration::from_secs(60));
    let mut p = plan("waits", &["web"]);
    p.revision = "60000".into();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let err = adapter
        .apply(&ctx, &p)
        .await
        .expect_err("cancelled mid-wait");
    canceller.await.expect("canceller");
    // The guest's own error, not the host's: it saw `call.cancelled`
    // resolve and returned within the grace (cancellation is cooperative in
    // 0.2.0).
    match &err {
        CallError::Adapter(e) => {
            assert_eq!(e.kind(), "cancelled");
            assert!(e.message().contains("apply waits"), "{e:?}");
        }
        other => panic!("expected the adapter's `cancelled`, got {other:?}"),
    }
}

#[tokio::test]
async fn a_0_2_adapter_refusing_its_configuration_fails_the_load_with_its_words() {
    let cache = tempfile::tempdir().expect("tempdir");
    let err = host(&cache)
        .load_file(
            &components::v02_adapter(),
            LoadOptions {
                config: r#"{"reject": true}"#.into(),
                ..LoadOptions::default()
            },
        )
        .await
        .expect_err("a configuration the adapter rejects");
    match &err {
        LoadError::Config { error, .. } => {
            assert!(error.to_string().contains("told to reject it"), "{error}");
        }
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_0_1_adapter_relabelled_0_2_is_refused_naming_an_import_0_2_dropped() {
    // The 0.1.0 test adapter with every `pando:runtime/…@0.1.0` name made
    // `@0.2.0` (same length, so the binary stays valid): it imports `events`
    // and `streams`, which 0.2.0 does not have.
    let mut bytes = std::fs::read(components::test_adapter()).expect("read");
    let (needle, with) = (b"@0.1.0".as_slice(), b"@0.2.0".as_slice());
    let mut i = 0;
    while let Some(at) = bytes[i..].windows(needle.len()).position(|w| w == needle) {
        let at = i + at;
        if bytes[at.saturating_sub(40)..at]
            .windows(14)
            .any(|w| w == b"pando:runtime/")
        {
            bytes[at..at + needle.len()].copy_from_slice(with);
        }
        i = at + needle.len();
    }
    let cache = tempfile::tempdir().expect("tempdir");
    let err = host(&cache)
        .load_bytes("relabelled.wasm", &bytes, LoadOptions::default())
        .await
        .expect_err("a 0.1.0 build named 0.2.0");
    match &err {
        LoadError::Import { import, reason, .. } => {
            assert!(
                import.starts_with("pando:runtime/events@0.2.0")
                    || import.starts_with("pando:runtime/streams@0.2.0"),
                "{import}"
            );
            assert!(
                reason.contains("pando:runtime@0.2.0 does not have"),
                "{reason}"
            );
        }
        other => panic!("expected a dropped import refused, got {other:?}"),
    }
}

/// A log a 0.2.0 adapter's task writes after its call returned: the host
/// runs the adapter's event loop until the stream is done.
#[tokio::test]
async fn a_0_2_log_written_after_its_call_returned_reaches_core_whole() {
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = load_v02(&host(&cache)).await;
    let mut log = adapter
        .logs(
            &CallContext::default(),
            &wref("shop", "lines-2000"),
            &LogOptions::default(),
        )
        .await
        .expect("logs");
    let text = log.read_to_end(1 << 20).await.expect("a whole log");
    let expected: String = (1..=2000).map(|i| format!("line {i}\n")).collect();
    assert_eq!(String::from_utf8(text).expect("utf-8"), expected);
}

/// `done` tells a whole stream from a cut one: the bytes that came, then
/// an error naming why, never an end that looks whole.
#[tokio::test]
async fn a_0_2_stream_that_breaks_ends_in_its_error_not_an_end() {
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = load_v02(&host(&cache)).await;
    let mut log = adapter
        .logs(
            &CallContext::default(),
            &wref("shop", "broken"),
            &LogOptions::default(),
        )
        .await
        .expect("logs");
    let first = log
        .next_chunk()
        .await
        .expect("a chunk")
        .expect("bytes before the break");
    assert_eq!(&first[..], b"partial");
    let err = log
        .next_chunk()
        .await
        .expect("not an end")
        .expect_err("the break");
    assert!(err.to_string().contains("the log broke off"), "{err}");
}

/// `run`'s failure arrives through `done`: the adapter's own typed error,
/// after the output that came before it.
#[tokio::test]
async fn a_0_2_run_reports_the_commands_failure_after_its_output() {
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = load_v02(&host(&cache)).await;
    let (out, mut read) = tokio::io::duplex(1 << 16);
    let request = RunRequest {
        command: vec!["false".into()],
        env: Vec::new(),
    };
    let err = adapter
        .run(
            &CallContext::default(),
            &wref("shop", "exit-3"),
            &request,
            out,
        )
        .await
        .expect_err("a failed command");
    match err {
        CallError::Adapter(AdapterError::CommandFailed(f)) => {
            assert_eq!((f.exit_code, f.stderr.as_str()), (3, "err"));
        }
        other => panic!("expected command-failed, got {other:?}"),
    }
    let mut got = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut read, &mut got)
        .await
        .expect("the output");
    assert_eq!(got, b"out");
}

/// Megabytes through a snapshot: every byte in order into core's writer,
/// the count returned.
#[tokio::test]
async fn a_0_2_snapshot_copies_every_byte_into_cores_writer() {
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = load_v02(&host(&cache)).await;
    const SIZE: usize = 3_000_000;
    let volume = VolumeHandle {
        bundle: "shop".into(),
        name: format!("bytes-{SIZE}"),
        location: String::new(),
    };
    let (into, mut read) = tokio::io::duplex(1 << 16);
    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut read, &mut got)
            .await
            .map(|_| got)
    });
    let n = adapter
        .snapshot_volume(&CallContext::default(), &volume, into)
        .await
        .expect("snapshot");
    assert_eq!(n, SIZE as u64);
    let got = reader.await.expect("reader").expect("read");
    assert_eq!(got.len(), SIZE);
    let first_wrong = got
        .iter()
        .enumerate()
        .position(|(i, b)| *b != (i % 251) as u8);
    assert_eq!(first_wrong, None, "every byte as written, in order");
    // And back: the adapter checks a restore against the same pattern.
    adapter
        .restore_volume(&CallContext::default(), &volume, std::io::Cursor::new(got))
        .await
        .expect("the snapshot restores");
}

/// Core dropping an endless stream ends it: the adapter's writes fail, its
/// task ends, and its instance is gone: with one long-running instance
/// allowed, the next stream gets one.
#[tokio::test]
async fn dropping_an_endless_0_2_stream_ends_the_adapters_task_and_frees_its_instance() {
    let cache = tempfile::tempdir().expect("tempdir");
    let host = host(&cache);
    let adapter = host
        .load_file(
            &components::v02_adapter(),
            LoadOptions {
                limits: Limits {
                    max_long_running: 1,
                    ..Limits::default()
                },
                ..LoadOptions::default()
            },
        )
        .await
        .expect("loads");
    for round in 0..3 {
        // Within 5 s: an instance still held by the stream before would
        // leave this one waiting for its slot until the deadline.
        let ctx = CallContext::default().with_timeout(Duration::from_secs(5));
        let mut log = adapter
            .logs(&ctx, &wref("shop", "endless"), &LogOptions::default())
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        let tick = log.next_chunk().await.expect("a chunk").expect("bytes");
        assert!(tick.starts_with(b"tick"), "{tick:?}");
        drop(log);
    }
}

/// Core's reader as the `stream<u8>` a 0.2.0 adapter reads: every byte, in
/// order, to its end.
#[tokio::test]
async fn a_0_2_adapter_reads_cores_bytes_whole_for_an_import_and_a_restore() {
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = load_v02(&host(&cache)).await;
    let data: Vec<u8> = (0..2_500_000u32).map(|i| (i % 251) as u8).collect();
    let sum = data.iter().fold(0u32, |s, b| s.wrapping_add(u32::from(*b)));
    let answer = adapter
        .import_image(&CallContext::default(), std::io::Cursor::new(data.clone()))
        .await
        .expect("import");
    assert_eq!(answer, format!("{}:{sum}", data.len()));

    let volume = |n: usize| VolumeHandle {
        bundle: "shop".into(),
        name: n.to_string(),
        location: String::new(),
    };
    adapter
        .restore_volume(
            &CallContext::default(),
            &volume(data.len()),
            std::io::Cursor::new(data.clone()),
        )
        .await
        .expect("restore");
    // The adapter tells a short stream from the whole one.
    let err = adapter
        .restore_volume(
            &CallContext::default(),
            &volume(data.len() + 1),
            std::io::Cursor::new(data),
        )
        .await
        .expect_err("one byte short");
    assert!(err.to_string().contains("read 2500000 bytes"), "{err}");
}

fn exec_request(command: &[&str], stdin: bool, tty: bool) -> ExecRequest {
    ExecRequest {
        command: command.iter().map(|s| (*s).to_string()).collect(),
        stdin,
        tty,
        size: None,
    }
}

/// Issue 42's resize while the session runs, on the contract's side: each
/// size core sends reaches the adapter's program as it runs (it prints
/// each before the next is sent), and the sizes end when core waits.
#[tokio::test]
async fn a_0_2_exec_session_is_resized_while_it_runs() {
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = load_v02(&host(&cache)).await;
    let ctx = CallContext::default().with_timeout(Duration::from_secs(10));
    let mut session = adapter
        .exec(
            &ctx,
            &wref("shop", "web"),
            &exec_request(&["sizes"], false, true),
        )
        .await
        .expect("exec");
    assert!(
        session.stderr().await.expect("stderr").is_none(),
        "a terminal has one output"
    );
    let mut stdout = session.stdout().await.expect("stdout").expect("an output");
    for (cols, rows) in [(100, 30), (120, 40), (80, 24)] {
        session
            .resize(TerminalSize { cols, rows })
            .await
            .expect("resize");
        let line = stdout.next_chunk().await.expect("a line").expect("bytes");
        assert_eq!(
            String::from_utf8_lossy(&line),
            format!("size {cols}x{rows}\n"),
            "seen by the program before the next size is sent"
        );
    }
    assert_eq!(
        session.wait(&ctx).await.expect("exit"),
        3,
        "three sizes seen"
    );
}

/// Stdin as a stream the adapter's program reads, its output as one core
/// reads, its exit as a future; and stderr apart without a terminal.
#[tokio::test]
async fn a_0_2_exec_session_carries_stdin_stdout_stderr_and_the_exit() {
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = load_v02(&host(&cache)).await;
    let ctx = CallContext::default().with_timeout(Duration::from_secs(10));
    let mut echo = adapter
        .exec(
            &ctx,
            &wref("shop", "web"),
            &exec_request(&["echo"], true, false),
        )
        .await
        .expect("exec");
    let mut stdin = echo.stdin().await.expect("stdin").expect("asked for");
    let mut stdout = echo.stdout().await.expect("stdout").expect("an output");
    stdin.write_all(b"through the host\n").await.expect("write");
    stdin.close().await.expect("close");
    let out = stdout.read_to_end(1 << 20).await.expect("read");
    assert_eq!(out, b"through the host\n");
    assert_eq!(echo.wait(&ctx).await.expect("exit"), 0);

    let mut fail = adapter
        .exec(
            &ctx,
            &wref("shop", "web"),
            &exec_request(&["fail", "7"], false, false),
        )
        .await
        .expect("exec");
    let mut stderr = fail.stderr().await.expect("stderr").expect("no terminal");
    assert_eq!(stderr.read_to_end(1 << 10).await.expect("stderr"), b"bye");
    assert_eq!(fail.wait(&ctx).await.expect("exit"), 7);
    // A session without a terminal has no size to change.
    let mut plain = adapter
        .exec(
            &ctx,
            &wref("shop", "web"),
            &exec_request(&["fail", "0"], false, false),
        )
        .await
        .expect("exec");
    let err = plain
        .resize(TerminalSize { cols: 1, rows: 1 })
        .await
        .expect_err("no terminal");
    assert_eq!(err.kind(), "invalid", "{err}");
}

/// A 0.2.0 watch's events reach core's channel as the adapter writes them;
/// core cancelling is told to the adapter, whose own `cancelled` end is
/// the answer; core dropping its receiver ends the watch too.
#[tokio::test]
async fn a_0_2_watch_streams_events_to_core_and_ends_when_core_lets_go() {
    use pando_host::types::{BundleEvent, WatchEnd};
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = load_v02(&host(&cache)).await;

    let cancel = CancellationToken::new();
    let ctx = CallContext::new(cancel.clone()).with_timeout(Duration::from_secs(30));
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    let watching = adapter.watch_bundles(&ctx, tx);
    let reading = async {
        let first = rx.recv().await.expect("an event");
        assert!(matches!(first, BundleEvent::Watching), "{first:?}");
        for i in 1..=3 {
            match rx.recv().await.expect("an event") {
                BundleEvent::Changed(c) => assert_eq!(c.workload.name, format!("w{i}")),
                other => panic!("{other:?}"),
            }
        }
        cancel.cancel();
    };
    let (end, ()) = tokio::join!(watching, reading);
    assert_eq!(end.expect("the adapter's own end"), WatchEnd::Cancelled);

    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    let ctx = CallContext::default().with_timeout(Duration::from_secs(30));
    let watching = adapter.watch_bundles(&ctx, tx);
    let reading = async move {
        rx.recv().await.expect("watching");
        drop(rx);
    };
    let (end, ()) = tokio::join!(watching, reading);
    assert_eq!(end.expect("the adapter's own end"), WatchEnd::Cancelled);
}
