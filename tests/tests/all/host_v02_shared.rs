//! Several calls on one 0.2.0 instance (`limits.calls_per_instance`): the
//! 0.2.0 test adapter's `apply` waits the plan's `revision` in milliseconds
//! and says which deadline it saw, so each test shows where each call ran
//! and what it was told. Concurrency is shown by the host's own count of
//! the calls seated in one instance, never by timing.

use std::time::Duration;

use pando_host::{CallContext, CallError, CancellationToken, Host, Limits, LoadOptions};
use pando_tests::components;
use pando_tests::metrics::metric;
use pando_tests::plans::{bundle, plan};

fn host(cache: &tempfile::TempDir) -> Host {
    Host::builder()
        .cache_dir(cache.path())
        .build()
        .expect("host builds")
}

/// The 0.2.0 test adapter, its `async func`s sharing instances: `seats`
/// calls to an instance, at most `instances` instances.
async fn load_shared(cache: &tempfile::TempDir, seats: u32, instances: u32) -> pando_host::Adapter {
    let host = host(cache);
    let limits = Limits {
        calls_per_instance: seats,
        max_instances: instances,
        ..Limits::default()
    };
    host.load_file(
        &components::v02_adapter(),
        LoadOptions {
            limits,
            ..LoadOptions::default()
        },
    )
    .await
    .expect("the 0.2.0 test adapter loads")
}

/// The deadline the test adapter's `apply` saw, in ms left after its wait.
fn deadline_seen(location: &str) -> i64 {
    location
        .split_once(";security=")
        .and_then(|(d, _)| d.strip_prefix("deadline_in_ms="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the test adapter's location: {location}"))
}

/// Waits until `calls` calls are seated in the adapter's shared instances
/// (at most ten seconds, then fails saying what it saw).
async fn until_seated(adapter: &pando_host::Adapter, calls: u32) -> pando_host::SharedUsage {
    let mut seen = None;
    for _ in 0..1000 {
        let usage = adapter.shared_instances().expect("shared instances");
        if usage.calls == calls {
            return usage;
        }
        seen = Some(usage);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never saw {calls} calls seated; last saw {seen:?}");
}

#[tokio::test]
async fn six_waiting_calls_run_at_once_in_one_instance_each_seeing_its_own_deadline() {
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = load_shared(&cache, 8, 1).await;
    let calls = (1..=6u64).map(|i| {
        let adapter = adapter.clone();
        // Each call waits long enough for all six to be seen seated at once.
        let mut p = plan(&format!("app-{i}"), &["web"]);
        p.revision = "1500".into();
        async move {
            let ctx = CallContext::default().with_timeout(Duration::from_secs(10 * i));
            (i, adapter.apply(&ctx, &p).await)
        }
    });
    let all = tokio::spawn(futures::future::join_all(calls));
    let usage = until_seated(&adapter, 6).await;
    assert_eq!(
        (usage.instances, usage.made),
        (1, 1),
        "six calls in one instance: {usage:?}"
    );
    for (i, handle) in all.await.expect("the calls") {
        let handle = handle.unwrap_or_else(|e| panic!("apply {i}: {e}"));
        assert_eq!(handle.id, format!("app-{i}"));
        // Its own deadline (10·i s), less its 1.5 s wait: the calls'
        // deadlines are 10 s apart, so none can be another's.
        let left = deadline_seen(&handle.location);
        let own = 10_000 * i as i64 - 1_500;
        assert!(
            (own - 3_000..=own).contains(&left),
            "apply {i} saw {left} ms left; its own deadline leaves about {own}"
        );
    }
    let after = adapter.shared_instances().expect("shared instances");
    assert_eq!(after.calls, 0, "{after:?}");
}

#[tokio::test]
async fn calls_beyond_one_instances_seats_go_to_a_second_and_no_further() {
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = load_shared(&cache, 2, 2).await;
    let calls = (0..5).map(|i| {
        let adapter = adapter.clone();
        let mut p = plan(&format!("app-{i}"), &["web"]);
        p.revision = "1500".into();
        async move { adapter.apply(&CallContext::default(), &p).await }
    });
    let all = tokio::spawn(futures::future::join_all(calls));
    // Two instances of two seats: four run, the fifth waits for a seat.
    let usage = until_seated(&adapter, 4).await;
    assert_eq!((usage.instances, usage.made), (2, 2), "{usage:?}");
    // What an operator's dashboard reads: the same, in the metrics.
    assert_eq!(metric(&adapter, "pando_adapter_shared_instances"), 2.0);
    assert_eq!(metric(&adapter, "pando_adapter_shared_calls"), 4.0);
    assert_eq!(metric(&adapter, "pando_adapter_instances_made_total"), 2.0);
    for r in all.await.expect("the calls") {
        r.expect("apply");
    }
    let after = adapter.shared_instances().expect("shared instances");
    assert_eq!(after.made, 2, "the fifth call waited for a seat: {after:?}");
    // Five callers for four seats: one waited at least (those that found
    // the first instance still being made waited too).
    assert!(after.waits >= 1, "{after:?}");
    assert_eq!(
        metric(&adapter, "pando_adapter_pool_waits_total"),
        after.waits as f64,
        "the waits for a seat are the pool's waits in the metrics"
    );
    assert!(metric(&adapter, "pando_adapter_pool_wait_seconds_total") > 0.0);
    assert_eq!(
        metric(&adapter, "pando_adapter_instances_discarded_total"),
        after.ended as f64
    );
    assert_eq!(metric(&adapter, "pando_adapter_shared_calls"), 0.0);
}

/// A store runs on one thread at a time: calls spread over one instance per
/// core before any two share one, and no further.
#[tokio::test]
async fn calls_spread_over_one_instance_per_core_before_sharing_one() {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = load_shared(&cache, 64, 64).await;
    let n = cores as u32 + 3;
    let calls = (0..n).map(|i| {
        let adapter = adapter.clone();
        let mut p = plan(&format!("app-{i}"), &["web"]);
        p.revision = "3000".into();
        async move { adapter.apply(&CallContext::default(), &p).await }
    });
    let all = tokio::spawn(futures::future::join_all(calls));
    let usage = until_seated(&adapter, n).await;
    assert_eq!(
        (usage.instances, usage.made as usize),
        (cores, cores),
        "{n} calls on {cores} cores: {usage:?}"
    );
    for r in all.await.expect("the calls") {
        r.expect("apply");
    }
}

#[tokio::test]
async fn a_call_past_its_deadline_ends_alone_and_its_instance_takes_no_new_call() {
    let cache = tempfile::tempdir().expect("tempdir");
    // One instance at most, so that the second call sits beside the first.
    let adapter = load_shared(&cache, 8, 1).await;
    let mut slow = plan("slow", &["web"]);
    slow.revision = "60000".into();
    let mut quick = plan("quick", &["web"]);
    quick.revision = "1000".into();
    let long = CallContext::default().with_timeout(Duration::from_secs(30));
    let short = CallContext::default().with_timeout(Duration::from_millis(300));
    let (late, on_time) = tokio::join!(adapter.apply(&short, &slow), async {
        // Seated beside the slow call before its deadline passes.
        tokio::time::sleep(Duration::from_millis(50)).await;
        adapter.apply(&long, &quick).await
    });
    let late = late.expect_err("a minute's wait under a 300 ms deadline");
    assert!(
        matches!(late, CallError::DeadlineExceeded { .. }),
        "{late:?}"
    );
    let on_time = on_time.expect("the call beside it finishes");
    assert_eq!(on_time.id, "quick");
    // Its instance was given up with the call it could not finish: the
    // next call is served by a new one.
    adapter
        .health_check(&CallContext::default())
        .await
        .expect("the adapter serves on");
    let usage = adapter.shared_instances().expect("shared instances");
    assert_eq!(usage.made, 2, "{usage:?}");
}

#[tokio::test]
async fn a_cancelled_call_in_a_shared_instance_is_told_and_returns_while_the_others_run_on() {
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = load_shared(&cache, 8, 1).await;
    let cancel = CancellationToken::new();
    let cancelled = CallContext::new(cancel.clone()).with_timeout(Duration::from_secs(60));
    let mut waits = plan("waits", &["web"]);
    waits.revision = "60000".into();
    let mut other = plan("other", &["web"]);
    other.revision = "1000".into();
    let (gone, kept) = tokio::join!(adapter.apply(&cancelled, &waits), async {
        let plain = CallContext::default();
        let r = adapter.apply(&plain, &other);
        tokio::pin!(r);
        // Both seated, then the first one cancelled.
        tokio::select! {
            r = &mut r => return r,
            _ = until_seated(&adapter, 2) => cancel.cancel(),
        }
        r.await
    });
    // The guest's own answer: only the cancelled call's `call.cancelled`
    // fired, and it returned within the grace.
    match gone {
        Err(CallError::Adapter(e)) => {
            assert_eq!(e.kind(), "cancelled");
            assert!(e.message().contains("apply waits"), "{e:?}");
        }
        other => panic!("expected the adapter's `cancelled`, got {other:?}"),
    }
    assert_eq!(kept.expect("the other call was not cancelled").id, "other");
}

#[tokio::test]
async fn a_trap_in_one_call_fails_the_calls_sharing_its_instance_naming_the_sharing() {
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = load_shared(&cache, 8, 1).await;
    let mut waits = plan("waits", &["web"]);
    waits.revision = "60000".into();
    let ctx = CallContext::default().with_timeout(Duration::from_secs(60));
    let (beside, trapped) = tokio::join!(adapter.apply(&ctx, &waits), async {
        until_seated(&adapter, 1).await;
        adapter.observe(&ctx, &bundle("panic-now")).await
    });
    match trapped {
        Err(CallError::Trap {
            method, message, ..
        }) => {
            assert_eq!(method, "observe");
            assert!(message.contains("asked to panic"), "{message}");
        }
        other => panic!("expected the panicking call's trap, got {other:?}"),
    }
    match beside {
        Err(CallError::Trap {
            method, message, ..
        }) => {
            assert_eq!(method, "apply");
            assert!(message.contains("ran other calls at once"), "{message}");
        }
        other => panic!("expected the call beside it to fail with the trap, got {other:?}"),
    }
    // A new instance serves the next call.
    let seen = adapter
        .observe(&CallContext::default(), &bundle("shop"))
        .await
        .expect("observe after the trap");
    assert!(seen.exists);
    let usage = adapter.shared_instances().expect("usage");
    // The faulted instance ended once its two calls left it; the new one
    // is kept (max_idle 8).
    assert_eq!(
        (usage.made, usage.ended, usage.instances),
        (2, 1, 1),
        "{usage:?}"
    );
    assert_eq!(
        metric(&adapter, "pando_adapter_instances_discarded_total"),
        1.0
    );
}

#[tokio::test]
async fn calls_per_instance_zero_is_refused_at_load_naming_the_limit() {
    let cache = tempfile::tempdir().expect("tempdir");
    let host = host(&cache);
    let limits = Limits {
        calls_per_instance: 0,
        ..Limits::default()
    };
    let err = host
        .load_file(
            &components::v02_adapter(),
            LoadOptions {
                limits,
                ..LoadOptions::default()
            },
        )
        .await
        .expect_err("no call could run");
    assert!(
        err.to_string().contains("limits.calls_per_instance"),
        "{err}"
    );
}
