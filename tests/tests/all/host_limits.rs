//! A misbehaving adapter costs one call a typed error; the instance is
//! replaced and the next call works. Instances are reused when healthy.

use std::time::{Duration, Instant};

use pando_host::types::Error as AdapterError;
use pando_host::{Adapter, CallContext, CallError, CancellationToken, Limits};
use pando_tests::plans::{bundle, plan};
use pando_tests::test_adapter::{self, calls};

async fn adapter() -> (Adapter, tempfile::TempDir) {
    test_adapter::load(Limits::default()).await
}

fn ctx() -> CallContext {
    CallContext::default().with_timeout(Duration::from_secs(20))
}

async fn count(a: &Adapter) -> u64 {
    calls(&a.observe(&ctx(), &bundle("x")).await.expect("observe"))
}

#[tokio::test]
async fn a_healthy_instance_is_reused() {
    let (a, _c) = adapter().await;
    assert_eq!(count(&a).await, 1);
    assert_eq!(count(&a).await, 2);
    assert_eq!(count(&a).await, 3);
    assert_eq!(a.idle_instances(), 1);
}

#[tokio::test]
async fn max_idle_zero_keeps_no_instance_the_first_included() {
    let (a, _c) = test_adapter::load(Limits {
        max_idle: 0,
        ..Limits::default()
    })
    .await;
    assert_eq!(
        a.idle_instances(),
        0,
        "the load's first instance is not kept"
    );
    // Every call is on a fresh instance: the test adapter counts calls per
    // instance.
    assert_eq!(count(&a).await, 1);
    assert_eq!(count(&a).await, 1);
    assert_eq!(a.idle_instances(), 0);
}

#[tokio::test]
async fn an_adapter_error_keeps_the_instance() {
    let (a, _c) = adapter().await;
    assert_eq!(count(&a).await, 1);
    a.apply(&ctx(), &plan("x", &["BAD"]))
        .await
        .expect_err("invalid");
    assert_eq!(
        count(&a).await,
        3,
        "the same instance served all three calls"
    );
}

#[tokio::test]
async fn a_loop_hits_the_deadline_and_the_next_call_works() {
    let (a, _c) = adapter().await;
    assert_eq!(count(&a).await, 1);
    let started = Instant::now();
    let err = a
        .apply(
            &CallContext::default().with_timeout(Duration::from_millis(300)),
            &plan("loop", &[]),
        )
        .await
        .expect_err("an endless loop cannot finish");
    assert!(matches!(err, CallError::DeadlineExceeded { .. }), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stopped near its deadline"
    );
    assert_eq!(count(&a).await, 1, "a fresh instance serves the next call");
}

#[tokio::test]
async fn a_memory_bomb_is_stopped_at_the_limit() {
    let (a, _c) = test_adapter::load(Limits {
        memory_bytes: 64 << 20,
        ..Limits::default()
    })
    .await;
    let err = a
        .apply(&ctx(), &plan("bomb", &[]))
        .await
        .expect_err("unbounded allocation cannot succeed");
    match &err {
        CallError::MemoryExhausted { limit, .. } => assert_eq!(*limit, 64 << 20),
        other => panic!("expected MemoryExhausted, got {other:?}"),
    }
    assert_eq!(count(&a).await, 1);
}

#[tokio::test]
async fn a_panic_is_a_trap_with_its_message() {
    let (a, _c) = adapter().await;
    let err = a
        .apply(&ctx(), &plan("panic", &[]))
        .await
        .expect_err("a panic fails the call");
    match &err {
        CallError::Trap {
            message, method, ..
        } => {
            assert_eq!(*method, "apply");
            assert!(message.contains("asked to panic"), "{message}");
            // The guest's frames are named as their source names them, not
            // as the linker mangled them (wasmtime's `demangle`). The v0
            // symbols of this toolchain demangle with the crate's
            // disambiguator: `pando_test_adapter[6148140f4fa7f934]::TestAdapter`.
            assert!(
                message.contains("pando_test_adapter::") || message.contains("pando_test_adapter["),
                "names the guest's frames: {message}"
            );
            // A frame is `module.wasm!SYMBOL`: a mangled one would start
            // `_ZN` (legacy) or `_R` (v0) right after the `!`.
            assert!(
                !message.contains("!_ZN") && !message.contains("!_R"),
                "no mangled names: {message}"
            );
        }
        other => panic!("expected a trap, got {other:?}"),
    }
    assert_eq!(count(&a).await, 1);
}

#[tokio::test]
async fn a_stack_overflow_is_reported_as_such() {
    let (a, _c) = adapter().await;
    let err = a
        .apply(&ctx(), &plan("stack", &[]))
        .await
        .expect_err("unbounded recursion fails");
    assert!(matches!(err, CallError::StackOverflow { .. }), "{err:?}");
    assert_eq!(count(&a).await, 1);
}

#[tokio::test]
async fn cancellation_reaches_a_sleeping_guest() {
    let (a, _c) = adapter().await;
    let cancel = CancellationToken::new();
    let call_ctx = CallContext::new(cancel.clone()).with_timeout(Duration::from_secs(30));
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            cancel.cancel();
        })
    };
    let started = Instant::now();
    let err = a
        .apply(&call_ctx, &plan("sleep-20000", &[]))
        .await
        .expect_err("cancelled");
    canceller.await.expect("join");
    // The guest's own sleep saw the cancellation and returned its error.
    assert!(
        matches!(err, CallError::Adapter(AdapterError::Cancelled(_))),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // It returned on its own, so its instance is still good.
    assert_eq!(count(&a).await, 2);
}

#[tokio::test]
async fn a_guest_ignoring_cancellation_is_stopped_after_the_grace() {
    let (a, _c) = adapter().await;
    let cancel = CancellationToken::new();
    let call_ctx = CallContext::new(cancel.clone()).with_timeout(Duration::from_secs(30));
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        })
    };
    let started = Instant::now();
    let err = a
        .apply(&call_ctx, &plan("ignore-cancel", &[]))
        .await
        .expect_err("stopped");
    canceller.await.expect("join");
    assert!(matches!(err, CallError::Cancelled { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(count(&a).await, 1);
}

#[tokio::test]
async fn an_instance_is_replaced_after_its_call_quota() {
    let (a, _c) = test_adapter::load(Limits {
        max_calls_per_instance: 3,
        ..Limits::default()
    })
    .await;
    assert_eq!(count(&a).await, 1);
    assert_eq!(count(&a).await, 2);
    assert_eq!(count(&a).await, 3);
    assert_eq!(count(&a).await, 1, "the fourth call gets a fresh instance");
}

#[tokio::test]
async fn an_adapter_that_keeps_crashing_is_quarantined_and_let_back() {
    let (a, _c) = test_adapter::load(Limits {
        quarantine_after: 3,
        quarantine_backoff: Duration::from_millis(500),
        ..Limits::default()
    })
    .await;
    for _ in 0..3 {
        let err = a
            .apply(&ctx(), &plan("panic", &[]))
            .await
            .expect_err("panics");
        assert!(matches!(err, CallError::Trap { .. }), "{err:?}");
    }
    // Quarantined: calls fail at once, saying why, without running.
    let q = a.quarantine().expect("quarantined after three crashes");
    assert!(q.reason.contains("asked to panic"), "{}", q.reason);
    match a.observe(&ctx(), &bundle("x")).await {
        Err(CallError::Quarantined { reason, .. }) => assert!(reason.contains("panic")),
        other => panic!("expected the quarantine, got {other:?}"),
    }
    // Let back after the backoff; a success clears the record.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(count(&a).await, 1);
    assert!(a.quarantine().is_none());
}

/// An exec session's calls take the pipeline every call takes: a session
/// that crashes counts toward quarantine like any other call.
#[tokio::test]
async fn a_crash_in_an_exec_session_counts_toward_quarantine() {
    let (a, _c) = test_adapter::load(Limits {
        quarantine_after: 1,
        quarantine_backoff: Duration::from_secs(60),
        ..Limits::default()
    })
    .await;
    let session = a
        .exec(
            &ctx(),
            &pando_tests::plans::wref("shop", "web"),
            &pando_host::types::ExecRequest {
                command: vec!["panic".into()],
                stdin: false,
                tty: false,
                size: None,
            },
        )
        .await
        .expect("the session opens");
    let err = session.wait(&ctx()).await.expect_err("wait panics");
    assert!(matches!(err, CallError::Trap { .. }), "{err:?}");
    let q = a.quarantine().expect("quarantined by the session's crash");
    assert!(q.reason.contains("exec session"), "{}", q.reason);
    assert!(
        matches!(
            a.capabilities(&ctx()).await,
            Err(CallError::Quarantined { .. })
        ),
        "the next call is refused"
    );
}

#[tokio::test]
async fn a_healthy_adapter_beside_a_crashing_one_is_unharmed() {
    let (bad, _c1) = adapter().await;
    let (good, _c2) = adapter().await;
    let crashing = {
        let bad = bad.clone();
        tokio::spawn(async move {
            for id in ["panic", "bomb", "stack", "panic"] {
                let _ = bad.apply(&ctx(), &plan(id, &[])).await;
            }
        })
    };
    for n in 1..=20 {
        assert_eq!(
            count(&good).await,
            n,
            "the healthy adapter's instance serves on"
        );
    }
    crashing.await.expect("join");
}

/// Core's `tokio::time::timeout` around a call drops the call's future, and
/// wasmtime leaves the store mid-call: that instance must not serve again.
#[tokio::test]
async fn a_dropped_call_future_discards_its_instance() {
    let (a, _c) = adapter().await;
    assert_eq!(count(&a).await, 1);
    let dropped = tokio::time::timeout(
        Duration::from_millis(200),
        a.apply(&ctx(), &plan("sleep-5000", &[])),
    )
    .await;
    assert!(
        dropped.is_err(),
        "the call was cut, not finished: {dropped:?}"
    );
    assert_eq!(
        a.idle_instances(),
        0,
        "the cut instance went back to the pool"
    );
    assert_eq!(count(&a).await, 1, "a fresh instance serves the next call");
    // The same cut while the guest computes, never entering the host.
    let dropped = tokio::time::timeout(
        Duration::from_millis(200),
        a.apply(&ctx(), &plan("loop", &[])),
    )
    .await;
    assert!(dropped.is_err(), "{dropped:?}");
    assert_eq!(count(&a).await, 1, "a fresh instance after a cut loop too");
    assert_eq!(count(&a).await, 2, "and that one is reused");
}
