//! Streams held open forever: a log stream the guest keeps, a session that
//! never ends, output streams never written, each ended at its deadline or
//! with its instance.

use super::*;

// ---------------------------------------------------------------------------
// 3. Streams held open forever.

/// `logs` returns the reading end of a pipe whose writing end the guest
/// keeps and never writes. The instance is discarded after the call, and
/// with it the writing end: core's stream ends instead of hanging.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_stream_the_guest_holds_open_ends_with_its_instance() {
    let _serial = pando_tests::memory::MEASURING.lock().await;
    let (host, _cache) = host();
    let a = load(&host, "holder", "", Limits::default()).await;
    let mut stream = a
        .logs(
            &ctx(Duration::from_secs(10)),
            &wref("b", "forever"),
            &log_options(),
        )
        .await
        .expect("the stream is returned");
    let first = tokio::time::timeout(Duration::from_secs(5), stream.next_chunk())
        .await
        .expect("the stream ends once its instance is gone; it does not hang");
    eprintln!("held log stream: the first read gave {first:?}");
    assert!(
        first.as_ref().is_none_or(|c| c.is_err()),
        "no bytes were ever written: {first:?}"
    );
    assert_eq!(count(&a).await, 1, "the next call gets a fresh instance");
}

/// An exec session whose stdout is never written and whose `wait` never
/// returns: reading stdout blocks only while core keeps the session, `wait`
/// ends at its deadline with a typed error, and ending the session ends its
/// stdout and frees its instance and budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_never_ends_is_bounded_by_its_deadline() {
    let _serial = pando_tests::memory::MEASURING.lock().await;
    let (host, _cache) = host();
    let a = load(
        &host,
        "session",
        "",
        Limits {
            max_long_running: 1,
            ..Limits::default()
        },
    )
    .await;
    let request = ExecRequest {
        command: vec!["hang".into()],
        stdin: false,
        tty: false,
        size: None,
    };
    let mut session = a
        .exec(&ctx(Duration::from_secs(10)), &wref("b", "w"), &request)
        .await
        .expect("the session opens");
    let mut stdout = session
        .stdout()
        .await
        .expect("stdout")
        .expect("a stdout stream");
    // Nothing comes while the session lives: the stream has no deadline of
    // its own, core bounds the read.
    assert!(
        tokio::time::timeout(Duration::from_millis(500), stdout.next_chunk())
            .await
            .is_err(),
        "the guest never writes stdout"
    );
    // The budget of one is taken by this session.
    let err = a
        .exec(&ctx(Duration::from_millis(300)), &wref("b", "w"), &request)
        .await
        .expect_err("no second session within a budget of one");
    assert!(matches!(err, CallError::DeadlineExceeded { .. }), "{err:?}");

    let started = Instant::now();
    let err = session
        .wait(&ctx(Duration::from_secs(1)))
        .await
        .expect_err("wait never returns on its own");
    assert!(
        matches!(
            err,
            CallError::DeadlineExceeded {
                method: "exec-session.wait",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    // The session, and its instance, are gone: stdout ends.
    let end = tokio::time::timeout(Duration::from_secs(5), stdout.next_chunk())
        .await
        .expect("stdout ends with its session");
    eprintln!("hung session: stdout after the session ended gave {end:?}");
    assert!(end.as_ref().is_none_or(|c| c.is_err()), "{end:?}");
    // And the budget is free again.
    let mut again = a
        .exec(&ctx(Duration::from_secs(5)), &wref("b", "w"), &request)
        .await
        .expect("the budget was returned");
    drop(again.stdout().await.expect("stdout"));
    drop(again);
    assert_eq!(count(&a).await, 1);
}

/// `snapshot-volume` and `run` where the guest never writes its output and
/// never returns: the deadline, or a cancellation it ignores, ends each with
/// a typed error, the output is closed, and the next call works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_streams_never_written_end_at_the_deadline() {
    let _serial = pando_tests::memory::MEASURING.lock().await;
    let (host, _cache) = host();
    let a = load(&host, "silent", "", Limits::default()).await;
    let volume = VolumeHandle {
        bundle: "b".into(),
        name: "hang".into(),
        location: String::new(),
    };
    let deadline = Duration::from_secs(1);

    let started = Instant::now();
    let (into, mut seen) = tokio::io::duplex(1024);
    let err = a
        .snapshot_volume(&ctx(deadline), &volume, into)
        .await
        .expect_err("a snapshot that never ends");
    assert!(
        matches!(
            err,
            CallError::DeadlineExceeded {
                method: "snapshot-volume",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(started.elapsed() < deadline + Duration::from_secs(2));
    // Core's writer was shut down: it reads an end, with nothing in it.
    let mut got = Vec::new();
    tokio::time::timeout(
        Duration::from_secs(5),
        tokio::io::AsyncReadExt::read_to_end(&mut seen, &mut got),
    )
    .await
    .expect("the writer was closed")
    .expect("read");
    assert!(got.is_empty());

    let hang = RunRequest {
        command: vec!["hang".into()],
        env: vec![],
    };
    let started = Instant::now();
    let err = a
        .run(&ctx(deadline), &wref("b", "w"), &hang, tokio::io::sink())
        .await
        .expect_err("a command that never ends");
    assert!(
        matches!(err, CallError::DeadlineExceeded { method: "run", .. }),
        "{err:?}"
    );
    assert!(started.elapsed() < deadline + Duration::from_secs(2));

    // Cancelled instead, without a deadline: the guest ignores it, the
    // host stops it after the grace.
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            cancel.cancel();
        })
    };
    let started = Instant::now();
    let err = a
        .run(
            &CallContext::new(cancel).without_deadline(),
            &wref("b", "w"),
            &hang,
            tokio::io::sink(),
        )
        .await
        .expect_err("cancelled");
    canceller.await.expect("join");
    assert!(matches!(err, CallError::Cancelled { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(4));

    assert_eq!(count(&a).await, 1, "a fresh instance serves the next call");
}
