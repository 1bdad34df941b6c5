//! The adapter's own pods meet Pod Security `restricted`, shown by the API server's Pod
//! Security admission (it runs on KWOK too): the adapter loaded with the shipped grants but
//! `profile: restricted`, so that the host labels every namespace it makes
//! `pod-security.kubernetes.io/enforce: restricted`, and then made to create its volume
//! helper (a snapshot), its egress gateway (an apply with a host name) and its NetworkPolicy
//! canary (a health check) through its real calls. Each pod exists only if admission let it
//! in. The trial's observer shares its pod with the app's container, which `restricted`
//! refuses (app pods meet `baseline`): it is not shown here.

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
async fn the_volume_helper_and_the_egress_gateway_are_admitted_under_restricted() {
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

    // The helper runs (admitted), is exec'd into for the tar stream, and goes.
    ka::wait_volume_ready(&a, &app, "data").await;
    let h = VolumeHandle {
        bundle: app.clone(),
        name: "data".into(),
        location: String::new(),
    };
    // KWOK runs the exec'd script on this machine, the volume standing in as a directory
    // (docs/testing.md): one file in it.
    let volume = pando_tests::cluster::state_dir()
        .join("helper-root/pando-volumes")
        .join(&ns)
        .join("data");
    std::fs::create_dir_all(&volume).expect("the volume's directory");
    std::fs::write(volume.join("f"), b"restricted").expect("a file");
    let dir = tempfile::tempdir().expect("a temp dir");
    let out = tokio::fs::File::create(dir.path().join("snap.tar"))
        .await
        .expect("a file");
    let written = a
        .snapshot_volume(&ctx(), &h, out)
        .await
        .expect("Pod Security admitted the volume helper, and it ran");
    assert!(written > 0, "a tar stream");
    cleanup(&a, &app).await;
    let _ = std::fs::remove_dir_all(&volume);
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
