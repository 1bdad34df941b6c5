//! Contract 0.2.0 served beside 0.1.0: one host loads an adapter of each,
//! each on its own line's engine, and core calls both through the one typed
//! API. The 0.2.0 test adapter's answers say what its call saw (its crate
//! docs), so each test asserts where a call went, not only that it returned.

use std::time::{Duration, Instant};

use pando_host::types::{EgressPolicy, NetworkRules, Security, TrialRequest};
use pando_host::{CallContext, CallError, CancellationToken, Host, LoadError, LoadOptions, World};
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

/// The SDK's 0.2 line answers what an adapter does not implement with
/// `unsupported`, naming the call as the contract names it, and the
/// instance serves the next call after it.
#[tokio::test]
async fn a_call_a_0_2_adapter_leaves_to_the_sdk_is_unsupported_naming_it() {
    let cache = tempfile::tempdir().expect("tempdir");
    let host = host(&cache);
    let new = load_v02(&host).await;
    let ctx = CallContext::default();
    for (call, outcome) in [
        ("stop", new.stop(&ctx, &bundle("shop")).await.map(drop)),
        ("edges", new.edges(&ctx).await.map(drop)),
        ("capacity", new.capacity(&ctx).await.map(drop)),
    ] {
        match outcome {
            Err(CallError::Adapter(e)) => {
                assert_eq!(e.kind(), "unsupported", "{call}: {e:?}");
                assert_eq!(
                    e.message(),
                    format!("{call} is not supported by this adapter"),
                    "{call}"
                );
            }
            other => panic!("{call}: expected `unsupported`, got {other:?}"),
        }
    }
    new.health_check(&ctx)
        .await
        .expect("the instance serves on");
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
