//! A 0.2.0 adapter's streams through the host: the bytes, events and
//! verdicts its own tasks write after a call returned, which the host gets
//! by running the call's instance until they are done (`adapter/drive.rs`),
//! and core's bytes the adapter reads as a `stream<u8>`. The 0.2.0 test
//! adapter's streams are named by the workload or volume (its crate docs).

use std::time::Duration;

use pando_host::types::{
    Error as AdapterError, ExecRequest, LogOptions, RunRequest, TerminalSize, VolumeHandle,
};
use pando_host::{CallContext, CallError, CancellationToken, Host, Limits, LoadOptions};
use pando_tests::components;
use pando_tests::plans::wref;

fn host(cache: &tempfile::TempDir) -> Host {
    Host::builder()
        .cache_dir(cache.path())
        .build()
        .expect("host builds")
}

async fn load_v02(host: &Host) -> pando_host::Adapter {
    load_v02_with(host, Limits::default()).await
}

async fn load_v02_with(host: &Host, limits: Limits) -> pando_host::Adapter {
    let options = LoadOptions {
        limits,
        ..LoadOptions::default()
    };
    host.load_file(&components::v02_adapter(), options)
        .await
        .expect("the 0.2.0 test adapter loads")
}

/// The 0.2.0 test adapter with one long-running instance allowed: a stream
/// whose instance is not freed leaves the next one waiting for the slot.
async fn load_v02_one_long_running(host: &Host) -> pando_host::Adapter {
    let limits = Limits {
        max_long_running: 1,
        ..Limits::default()
    };
    load_v02_with(host, limits).await
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
    let adapter = load_v02_one_long_running(&host).await;
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

/// A stream the adapter neither writes nor ends, deaf to cancellation: core
/// dropping it still frees its instance, the host giving up on the adapter
/// after the cancellation grace.
#[tokio::test]
async fn a_0_2_stream_the_adapter_ignores_is_ended_by_the_host_when_core_drops_it() {
    let cache = tempfile::tempdir().expect("tempdir");
    let host = host(&cache);
    let adapter = load_v02_one_long_running(&host).await;
    for round in 0..2 {
        // Within 5 s: past the grace (1 s), the first stream's instance
        // must be gone for the second to get the one slot.
        let ctx = CallContext::default().with_timeout(Duration::from_secs(5));
        let log = adapter
            .logs(&ctx, &wref("shop", "silent"), &LogOptions::default())
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        drop(log);
    }
}

/// An adapter that traps mid-stream: core reads what came, then an error
/// naming the crash, never an end that looks whole.
#[tokio::test]
async fn a_0_2_adapter_trapping_mid_stream_ends_cores_read_in_the_trap() {
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = load_v02(&host(&cache)).await;
    let mut log = adapter
        .logs(
            &CallContext::default(),
            &wref("shop", "panic"),
            &LogOptions::default(),
        )
        .await
        .expect("logs");
    let mut got = Vec::new();
    let err = loop {
        match log.next_chunk().await {
            Some(Ok(chunk)) => got.extend_from_slice(&chunk),
            Some(Err(e)) => break e,
            None => panic!("an end after {got:?}: a trap read as a whole log"),
        }
    };
    assert_eq!(got, b"partial");
    assert!(err.to_string().contains("crashed"), "{err}");
    assert!(err.to_string().contains("panics mid-stream"), "{err}");
    // The adapter still serves: the trap cost that stream's instance only.
    let whole = adapter
        .logs(
            &CallContext::default(),
            &wref("shop", "lines-2"),
            &LogOptions::default(),
        )
        .await
        .expect("logs")
        .read_to_end(1 << 10)
        .await
        .expect("a whole log");
    assert_eq!(whole, b"line 1\nline 2\n");
}

/// A trap in a stream's phase is a fault of the adapter as a trap in a call
/// is: with `quarantine_after: 2`, two streams that crash quarantine it.
#[tokio::test]
async fn traps_after_a_0_2_call_returned_count_toward_the_quarantine() {
    let cache = tempfile::tempdir().expect("tempdir");
    let host = host(&cache);
    let adapter = load_v02_with(
        &host,
        Limits {
            quarantine_after: 2,
            quarantine_backoff: Duration::from_secs(60),
            ..Limits::default()
        },
    )
    .await;
    for _ in 0..2 {
        let mut log = adapter
            .logs(
                &CallContext::default(),
                &wref("shop", "panic"),
                &LogOptions::default(),
            )
            .await
            .expect("the call itself returns");
        let read = log.read_to_end(1 << 10).await;
        assert!(read.is_err(), "a crashed stream is not whole: {read:?}");
    }
    assert!(
        adapter.quarantine().is_some(),
        "quarantined after two crashes"
    );
    let err = adapter
        .health_check(&CallContext::default())
        .await
        .expect_err("a quarantined adapter's calls fail at once");
    assert_eq!(err.kind(), "quarantined", "{err}");
}
