//! The ordinary-call budget as callers see it: calls beyond
//! `max_instances` wait for an instance and are served by the ones freed,
//! in turn; the pool makes no more instances than the budget; the idle stay
//! within `max_idle`; a waiter that gives up takes nothing with it. (The
//! pool's common path is a lock-free slot, `host/src/runtime/pool.rs`:
//! these are the rules it must keep.)

use std::time::Duration;

use futures::future::join_all;
use pando_host::{Adapter, CallContext, CallError, CancellationToken, Limits};
use pando_tests::metrics::metric;
use pando_tests::plans::{bundle, plan};
use pando_tests::test_adapter::{self, calls};

fn ctx() -> CallContext {
    CallContext::default().with_timeout(Duration::from_secs(20))
}

/// `n` calls at once, each holding its instance for `ms` in the guest.
async fn sleepers(a: &Adapter, n: usize, ms: u64) -> Vec<Result<(), CallError>> {
    let calls = (0..n).map(|_| {
        let a = a.clone();
        tokio::spawn(async move {
            a.apply(&ctx(), &plan(&format!("sleep-{ms}"), &[]))
                .await
                .map(|_| ())
        })
    });
    join_all(calls)
        .await
        .into_iter()
        .map(|r| r.expect("join"))
        .collect()
}

/// A call holding the adapter's one instance for `ms` in the guest, once
/// it has it (given 100 ms to start).
async fn holding(
    a: &Adapter,
    ms: u64,
) -> tokio::task::JoinHandle<Result<pando_host::types::BundleHandle, CallError>> {
    let a = a.clone();
    let holder =
        tokio::spawn(async move { a.apply(&ctx(), &plan(&format!("sleep-{ms}"), &[])).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    holder
}

/// The adapter's counter `name` (`pando_adapter_instances_<name>_total`).
fn instances(a: &Adapter, name: &str) -> u64 {
    metric(a, &format!("pando_adapter_instances_{name}_total")) as u64
}

/// The call count of the instance that serves this observe, as the test
/// adapter reports it.
async fn calls_on_next_instance(a: &Adapter) -> u64 {
    calls(&a.observe(&ctx(), &bundle("x")).await.expect("observe"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_beyond_max_instances_wait_and_the_budget_is_never_exceeded() {
    let (a, _c) = test_adapter::load(Limits {
        max_instances: 2,
        max_idle: 2,
        ..Limits::default()
    })
    .await;
    for r in sleepers(&a, 6, 200).await {
        r.expect("every call is served once an instance is free");
    }
    // The load's instance and one more: two at once, never three.
    assert_eq!(instances(&a, "made"), 1);
    assert_eq!(instances(&a, "discarded"), 0);
    assert_eq!(a.idle_instances(), 2);
    // Two served at once, the other four waited: two for one 200 ms call,
    // two for two of them.
    assert_eq!(metric(&a, "pando_adapter_pool_waits_total"), 4.0);
    let waited = metric(&a, "pando_adapter_pool_wait_seconds_total");
    assert!(
        (1.0..3.0).contains(&waited),
        "four waits of 200 to 400 ms each, {waited} s in all"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_instance_serves_every_waiter_in_turn() {
    let (a, _c) = test_adapter::load(Limits {
        max_instances: 1,
        ..Limits::default()
    })
    .await;
    for r in sleepers(&a, 4, 100).await {
        r.expect("served in turn");
    }
    assert_eq!(instances(&a, "made"), 0, "no instance beyond the load's");
    // Handed from each call to the next waiter: four calls, and this one.
    assert_eq!(calls_on_next_instance(&a).await, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_instances_stay_within_max_idle() {
    let (a, _c) = test_adapter::load(Limits {
        max_instances: 4,
        max_idle: 2,
        ..Limits::default()
    })
    .await;
    for r in sleepers(&a, 4, 300).await {
        r.expect("four at once fit the budget");
    }
    assert_eq!(
        instances(&a, "made"),
        3,
        "four calls at once, four instances"
    );
    assert_eq!(a.idle_instances(), 2);
    assert_eq!(instances(&a, "discarded"), 2, "the two beyond max_idle");
}

/// An instance given back while callers wait serves one of them, whatever
/// `max_idle` says: three waves of four calls on four instances make the
/// three beyond the load's once, not again for each wave; once nobody
/// waits, the idle are trimmed to `max_idle`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_given_back_while_callers_wait_serve_them_and_are_not_made_again() {
    let (a, _c) = test_adapter::load(Limits {
        max_instances: 4,
        max_idle: 1,
        ..Limits::default()
    })
    .await;
    for r in sleepers(&a, 12, 200).await {
        r.expect("twelve calls on four instances, in turn");
    }
    assert_eq!(
        instances(&a, "made"),
        3,
        "the four of the first wave serve the other two"
    );
    assert_eq!(
        a.idle_instances(),
        1,
        "trimmed to max_idle once nobody waits"
    );
    assert_eq!(instances(&a, "discarded"), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_past_its_deadline_fails_typed_and_costs_the_pool_nothing() {
    let (a, _c) = test_adapter::load(Limits {
        max_instances: 1,
        ..Limits::default()
    })
    .await;
    let holder = holding(&a, 1000).await;
    let short = CallContext::default().with_timeout(Duration::from_millis(200));
    let err = a
        .apply(&short, &plan("x", &[]))
        .await
        .expect_err("every instance is busy past the deadline");
    assert!(matches!(err, CallError::DeadlineExceeded { .. }), "{err:?}");
    holder.await.expect("join").expect("the holder ends well");
    assert_eq!(calls_on_next_instance(&a).await, 2, "the same instance");
    assert_eq!(instances(&a, "made"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_cancelled_or_dropped_take_nothing_with_them() {
    let (a, _c) = test_adapter::load(Limits {
        max_instances: 1,
        ..Limits::default()
    })
    .await;
    let holder = holding(&a, 600).await;

    let cancel = CancellationToken::new();
    let cancelled = {
        let (a, cancel) = (a.clone(), cancel.clone());
        tokio::spawn(async move {
            let ctx = CallContext::new(cancel).with_timeout(Duration::from_secs(20));
            a.apply(&ctx, &plan("x", &[])).await
        })
    };
    // Core's own timeout around a call: the waiting future is dropped.
    let dropped =
        tokio::time::timeout(Duration::from_millis(150), a.apply(&ctx(), &plan("x", &[]))).await;
    assert!(dropped.is_err(), "the dropped call was still waiting");
    cancel.cancel();
    let err = cancelled
        .await
        .expect("join")
        .expect_err("cancelled while waiting");
    assert!(matches!(err, CallError::Cancelled { .. }), "{err:?}");
    holder.await.expect("join").expect("the holder ends well");

    // The one permit is whole: two more calls at once are served in turn,
    // by the same instance.
    for r in sleepers(&a, 2, 50).await {
        r.expect("served");
    }
    assert_eq!(calls_on_next_instance(&a).await, 4);
    assert_eq!(instances(&a, "made"), 0);
}
