//! The adapter's own pods meet Pod Security `restricted`, shown by the API server's Pod
//! Security admission (it runs on KWOK too): the adapter loaded with the shipped grants but
//! `profile: restricted`, so that the host labels every namespace it makes
//! `pod-security.kubernetes.io/enforce: restricted`, and then made to create its egress
//! gateway (an apply with a host name) and its NetworkPolicy canary (a health check) through
//! its real calls. Each pod exists only if admission let it in. The trial's observer shares
//! its pod with the app's container, which `restricted` refuses (app pods meet `baseline`):
//! it is not shown here. The volume helper meets `baseline` only (it must handle files of any
//! owner): under `restricted` grants the host refuses it by name, and on the real node
//! (`real_node_volumes.rs`) it runs in a `baseline` namespace.

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::Api;
use kube::api::DeleteParams;
use pando_host::Grants;
use pando_host::types::{EgressPolicy, EgressRule, VolumeHandle, VolumeSpec};
use pando_tests::kubernetes_adapter::{self as ka, admin, cleanup, ctx, id};
use pando_tests::plans::plan;

const ENFORCE: &str = "pod-security.kubernetes.io/enforce";

/// The shipped grants, every pod rule `restricted`.
fn restricted_grants() -> Grants {
    let path = pando_tests::components::repo_root().join("deploy/grants/kubernetes.yaml");
    let text = std::fs::read_to_string(&path).expect("the grants");
    assert!(
        text.contains("profile: baseline"),
        "the grants name a profile"
    );
    let text = text.replace("profile: baseline", "profile: restricted");
    Grants::from_text("restricted", &text).expect("the grants parse")
}

async fn load(config: &str) -> (pando_host::Adapter, pando_host::Host) {
    pando_tests::probe::load_as_pando(&ka::component(), restricted_grants(), config).await
}

async fn enforced(ns: &str) -> Option<String> {
    Api::<Namespace>::all(admin().await)
        .get(ns)
        .await
        .expect("the namespace")
        .metadata
        .labels
        .and_then(|l| l.get(ENFORCE).cloned())
}

#[tokio::test]
async fn the_egress_gateway_is_admitted_under_restricted_and_the_volume_helper_refused_by_name() {
    let config = r#"{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17",
        "egress_gateway_image": "registry.example.com/pando:1"}"#;
    let (a, _h) = load(config).await;
    let app = id("k8s-psa");
    let ns = format!("pando-{app}");
    // No workload: app pods meet baseline, which `restricted` would refuse.
    let mut p = plan(&app, &[]);
    p.volumes.push(VolumeSpec {
        name: "data".into(),
        size_bytes: Some(1 << 30),
    });
    p.network.egress = EgressPolicy::Restricted(vec![EgressRule {
        destination: "registry.example.com".into(),
        ports: vec![443],
    }]);
    let _pv = ka::bound_pv(&ns, "data").await;
    a.apply(&ctx(), &p).await.expect("apply under restricted");
    assert_eq!(enforced(&ns).await.as_deref(), Some("restricted"));
    let gateway = Api::<Pod>::namespaced(admin().await, &ns)
        .get("pando-egress-gateway")
        .await
        .expect("Pod Security admitted the egress gateway");
    assert!(gateway.metadata.deletion_timestamp.is_none());

    // The volume helper is the one pod of the adapter's that meets `baseline`, not
    // `restricted` (it runs as root, to read and replace files of any owner: see
    // `objects::volume_helper_context`). Under `restricted` grants the host refuses it before
    // the cluster sees it, naming the rule; nothing of it is left.
    ka::wait_volume_ready(&a, &app, "data").await;
    let h = VolumeHandle {
        bundle: app.clone(),
        name: "data".into(),
        location: String::new(),
    };
    match a.snapshot_volume(&ctx(), &h, tokio::io::sink()).await {
        Err(pando_host::CallError::Adapter(pando_host::types::Error::Denied(m))) => assert!(
            m.contains("restricted") && m.contains("pando-snapshot-data"),
            "the refusal names the profile and the helper: {m}"
        ),
        other => panic!("a root volume helper under `restricted` is refused: {other:?}"),
    }
    let helper = Api::<Pod>::namespaced(admin().await, &ns)
        .get_opt("pando-snapshot-data")
        .await
        .expect("get");
    assert!(helper.is_none(), "nothing of the refused helper was made");
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn the_network_policy_canary_is_admitted_under_restricted() {
    let c = admin().await;
    let namespaces = Api::<Namespace>::all(c.clone());
    // The canary's namespace is made once; a fresh one is labelled by these grants.
    let _ = namespaces
        .delete("pando-canary", &DeleteParams::default())
        .await;
    let deadline = tokio::time::Instant::now() + ka::WAIT;
    while namespaces
        .get_opt("pando-canary")
        .await
        .expect("get")
        .is_some()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "pando-canary is gone"
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    let (a, _h) = load(ka::CONFIG).await;
    // KWOK has no pod network: the verdict is "cannot tell", after the pods ran.
    let _ = a.health_check(&ctx()).await;
    assert_eq!(
        enforced("pando-canary").await.as_deref(),
        Some("restricted")
    );
    let pods = Api::<Pod>::namespaced(c.clone(), "pando-canary");
    for role in ["server", "allowed", "denied"] {
        pods.get(role)
            .await
            .unwrap_or_else(|e| panic!("Pod Security admitted the canary's {role}: {e}"));
    }
    // Leave no restricted canary namespace behind for the other suites' grants.
    let _ = namespaces
        .delete("pando-canary", &DeleteParams::default())
        .await;
}
