//! R-097 on the real node, the paths that end a trial early: the caller cancels it, or the call's
//! deadline comes before the trial's duration is up. Either way the trial's namespace is gone
//! (or going) when the call returns, removed by the call itself, not by a later trial's sweep.

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use pando_host::types::{EgressPolicy, Error as AdapterError, NetworkRules, TrialRequest};
use pando_host::{CallContext, CallError, CancellationToken};
use pando_tests::kubernetes_adapter::{admin, id};
use pando_tests::real_node::{self as node, BUSYBOX};

fn request(app: &str, duration: Duration) -> TrialRequest {
    let mut workload = pando_tests::plans::workload("web");
    workload.image = BUSYBOX.into();
    workload.command = vec!["sh".into(), "-c".into(), "exec nc -l -p 9090".into()];
    TrialRequest {
        bundle: app.into(),
        workload,
        network: NetworkRules {
            egress: EgressPolicy::None,
        },
        pull_credentials: vec![],
        duration_ms: duration.as_millis() as u64,
    }
}

/// Asserts namespace `name` is gone or being deleted.
async fn removed(admin: &kube::Client, name: &str, path: &str) {
    let left = Api::<Namespace>::all(admin.clone())
        .get_opt(name)
        .await
        .expect("namespace");
    assert!(
        left.is_none_or(|n| n.metadata.deletion_timestamp.is_some()),
        "the trial's namespace {name} is removed by the call itself when it is {path}"
    );
}

#[tokio::test]
async fn r097_a_cancelled_trial_removes_its_namespace() {
    let admin = admin().await;
    node::require(&admin).await;
    let (a, _h) = node::load_adapter().await;
    let app = id("node-trial-cancel");
    let cancel = CancellationToken::new();
    let ctx = CallContext::new(cancel.clone()).with_timeout(Duration::from_secs(120));
    let req = request(&app, Duration::from_secs(60));
    let trial = {
        let a = a.clone();
        tokio::spawn(async move { a.trial(&ctx, &req).await })
    };
    let (ns, _) = node::running_trial(&admin, &app).await;
    cancel.cancel();
    let ended = tokio::time::timeout(Duration::from_secs(10), trial)
        .await
        .expect("a cancelled trial returns within the host's grace")
        .expect("join");
    // The adapter's own answer, not the host's verdict on a guest it had to stop.
    assert!(
        matches!(ended, Err(CallError::Adapter(AdapterError::Cancelled(_)))),
        "the trial returns on its own when cancelled: {ended:?}"
    );
    removed(&admin, &ns, "cancelled").await;
}

#[tokio::test]
async fn r097_a_trial_longer_than_its_call_ends_before_the_deadline_and_removes_its_namespace() {
    let admin = admin().await;
    node::require(&admin).await;
    let (a, _h) = node::load_adapter().await;
    let app = id("node-trial-deadline");
    let ctx = CallContext::default().with_timeout(Duration::from_secs(20));
    let req = request(&app, Duration::from_secs(120));
    let trial = {
        let a = a.clone();
        tokio::spawn(async move { a.trial(&ctx, &req).await })
    };
    let (ns, _) = node::running_trial(&admin, &app).await;
    let ended = trial.await.expect("join");
    match ended {
        Err(CallError::Adapter(AdapterError::Timeout(m))) => assert!(
            m.contains("deadline") && m.contains(&ns),
            "the adapter's own words, naming the namespace it removed: {m}"
        ),
        other => {
            panic!("the adapter ends the trial itself before the host must stop it; got {other:?}")
        }
    }
    removed(&admin, &ns, "past its call's deadline").await;
}
