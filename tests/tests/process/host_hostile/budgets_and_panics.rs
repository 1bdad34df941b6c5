//! Thousands of watches and sessions beyond the long-running budget, a panic
//! in every export, and the engine running out of instance slots.

use super::*;

// ---------------------------------------------------------------------------
// 4. Thousands of open watches and sessions.

/// Opens a watch without a deadline and waits for its first event.
async fn open_watch(
    a: &Adapter,
    cancel: &CancellationToken,
) -> (
    tokio::task::JoinHandle<Result<WatchEnd, CallError>>,
    mpsc::Receiver<BundleEvent>,
) {
    let (tx, mut rx) = mpsc::channel(1);
    let task = {
        let a = a.clone();
        let c = CallContext::new(cancel.clone()).without_deadline();
        tokio::spawn(async move { a.watch_bundles(&c, tx).await })
    };
    let first = tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("a watch within the budget starts")
        .expect("an event");
    assert_eq!(first, BundleEvent::Watching);
    (task, rx)
}

/// Thousands of watches and sessions at once: those within the long-running
/// budget run, the rest fail at their deadline or cancellation without ever
/// getting an instance (one without a deadline, `Busy` after the adapter's
/// default timeout), memory stays bounded, and once the watches are
/// cancelled the budget is whole again and ordinary calls never noticed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_watches_beyond_the_budget_fail_typed_and_the_budget_recovers() {
    let _serial = pando_tests::memory::MEASURING.lock().await;
    const BUDGET: usize = 16;
    const BEYOND: usize = 2000;
    let (host, _cache) = host();
    let a = load(
        &host,
        "watcher",
        "",
        Limits {
            max_long_running: BUDGET as u32,
            ..Limits::default()
        },
    )
    .await;
    assert_eq!(count(&a).await, 1);
    let before = rss();

    let running = CancellationToken::new();
    let mut watches = Vec::new();
    for _ in 0..BUDGET {
        watches.push(open_watch(&a, &running).await);
    }

    // Two thousand more watches with a deadline, and a thousand sessions:
    // all wait for the budget, none gets an instance, each ends typed.
    let started = Instant::now();
    let deadline = Duration::from_secs(1);
    let mut beyond = Vec::new();
    for i in 0..BEYOND {
        let a = a.clone();
        beyond.push(tokio::spawn(async move {
            if i % 2 == 0 {
                let (tx, _rx) = mpsc::channel(1);
                a.watch_bundles(&ctx(deadline), tx).await.map(|_| ())
            } else {
                let request = ExecRequest {
                    command: vec!["cat".into()],
                    stdin: true,
                    tty: false,
                    size: None,
                };
                a.exec(&ctx(deadline), &wref("b", "w"), &request)
                    .await
                    .map(|_| ())
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mid = rss();
    for task in beyond {
        let err = task
            .await
            .expect("join")
            .expect_err("no budget left for it");
        assert!(matches!(err, CallError::DeadlineExceeded { .. }), "{err:?}");
    }
    let took = started.elapsed();
    assert!(
        took < deadline + Duration::from_secs(5),
        "the ones beyond the budget ended near their deadline: {took:?}"
    );

    // Without a deadline a call waits for the budget no longer than the
    // adapter's `default_timeout`, then fails `Busy`, naming the limit: a
    // hang behind watches that never end would say nothing.
    let b = load(
        &host,
        "busy",
        "",
        Limits {
            max_long_running: 1,
            default_timeout: Duration::from_millis(500),
            ..Limits::default()
        },
    )
    .await;
    let holding = CancellationToken::new();
    let (held, _held_rx) = open_watch(&b, &holding).await;
    let started = Instant::now();
    let (tx, _rx) = mpsc::channel(1);
    let c = CallContext::new(CancellationToken::new()).without_deadline();
    let err = b
        .watch_bundles(&c, tx)
        .await
        .expect_err("no long-running instance is free");
    let waited = started.elapsed();
    assert!(
        matches!(
            &err,
            CallError::Busy { limit: 1, setting: "max_long_running", waited, .. }
                if *waited == Duration::from_millis(500)
        ),
        "{err:?}"
    );
    assert_eq!(err.kind(), "busy");
    assert!(err.to_string().contains("limits.max_long_running"), "{err}");
    assert!(
        waited >= Duration::from_millis(500) && waited < Duration::from_secs(5),
        "it waited its default timeout: {waited:?}"
    );
    holding.cancel();
    assert!(matches!(held.await.expect("join"), Ok(WatchEnd::Cancelled)));

    // A thousand more without a deadline, cancelled while they wait (the
    // adapter's default timeout is 60 s): they end at once.
    let cancel = CancellationToken::new();
    let mut cancelled = Vec::new();
    for _ in 0..1000 {
        let a = a.clone();
        let c = CallContext::new(cancel.clone()).without_deadline();
        cancelled.push(tokio::spawn(async move {
            let (tx, _rx) = mpsc::channel(1);
            a.watch_bundles(&c, tx).await
        }));
    }
    // Within the default timeout, nothing ends these but their
    // cancellation.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        cancelled.iter().all(|t| !t.is_finished()),
        "a watch without a deadline waits for the budget"
    );
    let started = Instant::now();
    cancel.cancel();
    for task in cancelled {
        let err = task.await.expect("join").expect_err("cancelled waiting");
        assert!(matches!(err, CallError::Cancelled { .. }), "{err:?}");
    }
    assert!(started.elapsed() < Duration::from_secs(5));

    // Ordinary calls are untouched by a full long-running budget.
    assert_eq!(count(&a).await, 2, "the pooled instance served on");

    // Cancel the running watches: each returns on its own, `cancelled`.
    let started = Instant::now();
    running.cancel();
    for (task, rx) in watches {
        let end = task.await.expect("join");
        drop(rx);
        assert!(matches!(end, Ok(WatchEnd::Cancelled)), "{end:?}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "within the cancellation grace and a margin"
    );
    let after = rss();
    eprintln!(
        "watches: RSS {:.1} MiB before, {:.1} MiB with {BUDGET} running and {BEYOND} waiting, \
         {:.1} MiB after",
        mib(before),
        mib(mid),
        mib(after)
    );
    assert!(
        mid.saturating_sub(before) < SLACK + BUDGET as u64 * 4 * MIB,
        "RSS grew by {:.1} MiB with the budget full and thousands waiting",
        mib(mid.saturating_sub(before))
    );

    // The whole budget is back: it runs BUDGET watches again, and no more.
    let again = CancellationToken::new();
    let mut watches = Vec::new();
    for _ in 0..BUDGET {
        watches.push(open_watch(&a, &again).await);
    }
    let (tx, _rx) = mpsc::channel(1);
    let err = a
        .watch_bundles(&ctx(Duration::from_millis(300)), tx)
        .await
        .expect_err("the budget is exactly full");
    assert!(matches!(err, CallError::DeadlineExceeded { .. }), "{err:?}");
    again.cancel();
    for (task, _rx) in watches {
        let end = task.await.expect("join");
        assert!(matches!(end, Ok(WatchEnd::Cancelled)), "{end:?}");
    }
    assert_eq!(a.idle_instances(), 1, "the pool kept its one instance");
    assert_eq!(count(&a).await, 3);
}

// ---------------------------------------------------------------------------
// 5. A panic in every export.

fn panicked_on_a_fresh_instance(err: &CallError, expected_method: &str) {
    match err {
        CallError::Trap {
            method, message, ..
        } => {
            assert_eq!(*method, expected_method);
            assert!(
                message.contains("panic in every export (call 1 of this instance)"),
                "each call runs on a fresh instance: {message}"
            );
        }
        other => panic!("expected a trap in {expected_method}, got {other:?}"),
    }
}

/// An adapter that panics in every export: each shape of call (plain,
/// stream-returning, output-stream, session-returning, watch) is a typed
/// `Trap`, each on a fresh instance (the panic names the instance's call
/// count), and a healthy adapter of the same host works throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_every_export_is_a_trap_each_time_on_a_fresh_instance() {
    let _serial = pando_tests::memory::MEASURING.lock().await;
    let (host, _cache) = host();
    let bad = load(
        &host,
        "panicky",
        r#"{"misbehave": "panic-everywhere"}"#,
        Limits {
            quarantine_after: 1000,
            ..Limits::default()
        },
    )
    .await;
    let good = load(&host, "healthy", "", Limits::default()).await;
    let c = || ctx(Duration::from_secs(10));

    for round in 1..=2u64 {
        let err = bad.health_check(&c()).await.expect_err("panics");
        panicked_on_a_fresh_instance(&err, "health-check");
        let err = bad.observe(&c(), &bundle("x")).await.expect_err("panics");
        panicked_on_a_fresh_instance(&err, "observe");
        let err = bad.apply(&c(), &plan("x", &[])).await.expect_err("panics");
        panicked_on_a_fresh_instance(&err, "apply");
        let err = bad.edges(&c()).await.expect_err("panics");
        panicked_on_a_fresh_instance(&err, "edges");
        let err = bad
            .logs(&c(), &wref("b", "w"), &log_options())
            .await
            .expect_err("panics");
        panicked_on_a_fresh_instance(&err, "logs");
        let volume = VolumeHandle {
            bundle: "b".into(),
            name: "v".into(),
            location: String::new(),
        };
        let err = bad
            .snapshot_volume(&c(), &volume, tokio::io::sink())
            .await
            .expect_err("panics");
        panicked_on_a_fresh_instance(&err, "snapshot-volume");
        let run = RunRequest {
            command: vec!["echo".into()],
            env: vec![],
        };
        let err = bad
            .run(&c(), &wref("b", "w"), &run, tokio::io::sink())
            .await
            .expect_err("panics");
        panicked_on_a_fresh_instance(&err, "run");
        let exec = ExecRequest {
            command: vec!["cat".into()],
            stdin: true,
            tty: false,
            size: None,
        };
        let err = bad
            .exec(&c(), &wref("b", "w"), &exec)
            .await
            .expect_err("panics");
        panicked_on_a_fresh_instance(&err, "exec");
        let (tx, _rx) = mpsc::channel(1);
        let err = bad.watch_bundles(&c(), tx).await.expect_err("panics");
        panicked_on_a_fresh_instance(&err, "watch-bundles");

        assert_eq!(bad.idle_instances(), 0, "no crashed instance is kept");
        assert_eq!(count(&good).await, round, "the healthy adapter serves on");
    }
    // Ten calls and no quarantine (set high here): each was still served.
    assert!(bad.quarantine().is_none());
}

// ---------------------------------------------------------------------------
// The engine's instance slots, shared by every adapter, run out.

/// When the engine's pooling allocator has no slot left, a new instance
/// cannot be made: the call fails with a typed error, but that is the host's
/// shortage, not the adapter's fault, so it must not count towards the
/// adapter's quarantine, and its pooled instance serves on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_out_of_engine_slots_is_not_the_adapters_fault() {
    let _serial = pando_tests::memory::MEASURING.lock().await;
    let cache = tempfile::tempdir().expect("tempdir");
    let host = Host::builder()
        .cache_dir(cache.path())
        .engine(pando_host::EngineSettings {
            total_instances: 4,
            ..pando_host::EngineSettings::default()
        })
        .build()
        .expect("host");
    let a = load(
        &host,
        "crowded",
        "",
        Limits {
            max_long_running: 16,
            quarantine_after: 3,
            ..Limits::default()
        },
    )
    .await;
    assert_eq!(count(&a).await, 1);
    // The pooled instance holds one slot; three watches take the rest.
    let running = CancellationToken::new();
    let mut watches = Vec::new();
    for _ in 0..3 {
        watches.push(open_watch(&a, &running).await);
    }
    for _ in 0..5 {
        let (tx, _rx) = mpsc::channel(1);
        let err = a
            .watch_bundles(&ctx(Duration::from_secs(5)), tx)
            .await
            .expect_err("no slot is left for a fifth instance");
        match &err {
            CallError::Host {
                method: "instantiate",
                message,
                ..
            } => assert!(message.contains("total_instances"), "{message}"),
            other => panic!("expected the host's shortage, got {other:?}"),
        }
    }
    assert!(a.quarantine().is_none(), "{:?}", a.quarantine());
    assert_eq!(count(&a).await, 2, "the pooled instance serves on");
    running.cancel();
    for (task, _rx) in watches {
        let end = task.await.expect("join");
        assert!(matches!(end, Ok(WatchEnd::Cancelled)), "{end:?}");
    }
}
