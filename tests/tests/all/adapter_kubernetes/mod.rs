//! The Kubernetes adapter's apply, observe, stop, destroy, volumes and capacity,
//! against the real test cluster (KWOK runs the pods), as the `pando`
//! identity with the grants the adapter ships with.

use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Namespace, PersistentVolume, PersistentVolumeClaim, Pod, Secret, Service,
};
use k8s_openapi::api::networking::v1::{Ingress, NetworkPolicy};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Api;
use kube::api::{DeleteParams, ListParams};
use pando_host::types::{DestroyOptions, WorkloadPhase};
use pando_tests::kubernetes_adapter::{
    self as ka, admin, audit_mark, cleanup, credentials, ctx, exit_pod, id, requests, uid,
    versions, wait_phase, with_volume,
};
use pando_tests::plans::{bundle, plan};

mod capacity;
mod volumes;

#[tokio::test]
async fn r023_r025_apply_makes_a_default_deny_policy_admitting_pando_and_the_app() {
    let (a, _h) = ka::load().await;
    let app = id("k8s-np");
    let ns = format!("pando-{app}");
    let handle = a.apply(&ctx(), &plan(&app, &["web"])).await.expect("apply");
    assert_eq!(handle.id, app);
    assert_eq!(handle.location, format!("namespace/{ns}"));

    let c = admin().await;
    let n = Api::<Namespace>::all(c.clone()).get(&ns).await.expect("ns");
    let labels = n.metadata.labels.unwrap_or_default();
    assert_eq!(labels["app.kubernetes.io/managed-by"], "pando");
    assert_eq!(labels["pando.dev/app"], app);

    let np = Api::<NetworkPolicy>::namespaced(c.clone(), &ns)
        .get("pando-default-deny")
        .await
        .expect("the default-deny policy");
    let spec = np.spec.expect("spec");
    assert_eq!(spec.pod_selector.unwrap_or_default(), Default::default());
    assert_eq!(
        spec.policy_types.unwrap_or_default(),
        vec!["Ingress".to_string(), "Egress".to_string()]
    );
    let text = serde_json::to_string(&spec.ingress).expect("json");
    assert!(
        text.contains("pando-system"),
        "admits Pando's namespace: {text}"
    );
    assert!(
        text.contains("app.kubernetes.io/name"),
        "only its server pods: {text}"
    );
    let egress = serde_json::to_string(&spec.egress).expect("json");
    for needle in [
        "kube-system",
        "53",
        "0.0.0.0/0",
        "198.19.128.0/17",
        "198.19.0.0/17",
        "169.254.169.254/32",
    ] {
        assert!(egress.contains(needle), "egress has {needle}: {egress}");
    }
    // The test cluster is IPv4 only: no IPv6 egress, never `::/0` with nothing kept out.
    assert!(!egress.contains("::/0"), "egress has no IPv6: {egress}");

    // `none`: DNS and the app only.
    let mut closed = plan(&app, &["web"]);
    closed.network.egress = pando_host::types::EgressPolicy::None;
    a.apply(&ctx(), &closed).await.expect("apply none");
    let np = Api::<NetworkPolicy>::namespaced(c.clone(), &ns)
        .get("pando-default-deny")
        .await
        .expect("policy");
    let egress = serde_json::to_string(&np.spec.expect("spec").egress).expect("json");
    assert!(!egress.contains("0.0.0.0/0"), "{egress}");
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn r026_nothing_is_exposed_outside() {
    let (a, _h) = ka::load().await;
    let app = id("k8s-exp");
    let ns = format!("pando-{app}");
    a.apply(&ctx(), &plan(&app, &["web", "db"]))
        .await
        .expect("apply");
    let c = admin().await;
    let services = Api::<Service>::namespaced(c.clone(), &ns)
        .list(&ListParams::default())
        .await
        .expect("services");
    assert_eq!(services.items.len(), 2);
    for s in &services.items {
        let spec = s.spec.clone().expect("spec");
        assert_eq!(spec.cluster_ip.as_deref(), Some("None"), "headless");
        assert_eq!(spec.type_.as_deref().unwrap_or("ClusterIP"), "ClusterIP");
        assert!(
            spec.selector
                .unwrap_or_default()
                .contains_key("pando.dev/workload")
        );
    }
    for p in Api::<Pod>::namespaced(c.clone(), &ns)
        .list(&ListParams::default())
        .await
        .expect("pods")
        .items
    {
        let spec = p.spec.expect("spec");
        assert_ne!(spec.host_network, Some(true));
        for container in &spec.containers {
            for port in container.ports.iter().flatten() {
                assert!(port.host_port.is_none());
            }
        }
    }
    let ingresses = Api::<Ingress>::namespaced(c, &ns)
        .list(&ListParams::default())
        .await
        .expect("ingresses");
    assert!(ingresses.items.is_empty());
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn r151_pods_are_bare_with_restart_policy_never() {
    let (a, _h) = ka::load().await;
    let app = id("k8s-bare");
    let ns = format!("pando-{app}");
    let mut p = plan(&app, &["web"]);
    p.workloads[0].digest = Some("sha256:1111".into());
    p.pull_credentials = credentials();
    a.apply(&ctx(), &p).await.expect("apply");
    let pod = Api::<Pod>::namespaced(admin().await, &ns)
        .get("web")
        .await
        .expect("the pod is named after the workload");
    assert!(pod.metadata.owner_references.unwrap_or_default().is_empty());
    let labels = pod.metadata.labels.unwrap_or_default();
    assert_eq!(labels["pando.dev/app"], app);
    assert_eq!(labels["pando.dev/workload"], "web");
    assert_eq!(
        pod.metadata.annotations.unwrap_or_default()["pando.dev/digest"],
        "sha256:1111"
    );
    let spec = pod.spec.expect("spec");
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    assert_eq!(spec.automount_service_account_token, Some(false));
    assert_eq!(
        spec.image_pull_secrets.unwrap_or_default()[0].name,
        "pando-pull"
    );
    let requests = spec.containers[0]
        .resources
        .clone()
        .and_then(|r| r.requests)
        .unwrap_or_default();
    assert_eq!(requests["cpu"], Quantity("100m".into()));
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn o41_a_satisfied_plan_writes_only_the_pull_secret() {
    let (a, _h) = ka::load().await;
    let c = admin().await;
    for with_credentials in [true, false] {
        let app = id(if with_credentials {
            "k8s-o41c"
        } else {
            "k8s-o41"
        });
        let ns = format!("pando-{app}");
        let mut p = plan(&app, &["web", "db"]);
        if with_credentials {
            p.pull_credentials = credentials();
        }
        a.apply(&ctx(), &p).await.expect("first apply");
        wait_phase(&ns, "web", "Running").await;
        wait_phase(&ns, "db", "Running").await;
        // Let status updates settle before the snapshot.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let before = versions(&c, &ns).await;
        let mark = audit_mark();
        a.apply(&ctx(), &p).await.expect("second apply");
        let sent = requests(mark, &ns);
        let after = versions(&c, &ns).await;
        let changed: Vec<&String> = before
            .keys()
            .filter(|k| before.get(*k) != after.get(*k))
            .collect();
        let writes: Vec<_> = sent.iter().filter(|r| r.is_write()).collect();
        eprintln!(
            "o41 (credentials: {with_credentials}): a satisfied apply of 2 workloads sent {} \
             requests to the namespace, {} writes: {sent:?}",
            sent.len(),
            writes.len()
        );
        assert_eq!(before.len(), after.len(), "{before:?} {after:?}");
        if with_credentials {
            assert_eq!(changed, vec!["secret/pando-pull"], "O-41");
            assert_eq!(writes.len(), 1, "{writes:?}");
        } else {
            assert!(changed.is_empty(), "nothing written: {changed:?}");
            assert!(writes.is_empty(), "{writes:?}");
        }
        cleanup(&a, &app).await;
    }
}

#[tokio::test]
async fn apply_recreates_a_pod_only_when_its_digest_changes_or_it_exited() {
    let (a, _h) = ka::load().await;
    let app = id("k8s-recr");
    let ns = format!("pando-{app}");
    let mut p = plan(&app, &["web"]);
    p.workloads[0].digest = Some("sha256:aaaa".into());
    a.apply(&ctx(), &p).await.expect("apply");
    let first = uid(&wait_phase(&ns, "web", "Running").await);

    a.apply(&ctx(), &p).await.expect("apply again");
    let same = uid(&wait_phase(&ns, "web", "Running").await);
    assert_eq!(first, same, "a running pod of the same digest is kept");

    p.workloads[0].digest = Some("sha256:bbbb".into());
    a.apply(&ctx(), &p).await.expect("apply a new digest");
    let second = wait_phase(&ns, "web", "Running").await;
    assert_ne!(uid(&second), first, "a new digest is a new pod");
    assert_eq!(
        second.metadata.annotations.clone().unwrap_or_default()["pando.dev/digest"],
        "sha256:bbbb"
    );

    exit_pod(&ns, "web", 1).await;
    a.apply(&ctx(), &p).await.expect("apply after the exit");
    let third = wait_phase(&ns, "web", "Running").await;
    assert_ne!(uid(&third), uid(&second), "an exited pod is replaced");
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn observe_reports_an_exited_workload_and_never_remediates() {
    let (a, _h) = ka::load().await;
    let app = id("k8s-obs");
    let ns = format!("pando-{app}");
    let missing = a.observe(&ctx(), &bundle(&app)).await.expect("observe");
    assert!(!missing.exists);

    let mut p = plan(&app, &["web", "db", "cache"]);
    p.workloads[0].digest = Some("sha256:cafe".into());
    a.apply(&ctx(), &p).await.expect("apply");
    for w in ["web", "db", "cache"] {
        wait_phase(&ns, w, "Running").await;
    }
    let failed = exit_pod(&ns, "web", 1).await;

    let mark = audit_mark();
    let seen = a.observe(&ctx(), &bundle(&app)).await.expect("observe");
    let sent = requests(mark, &ns);
    eprintln!(
        "observe of 3 workloads sent {} requests: {sent:?}",
        sent.len()
    );
    assert!(sent.iter().all(|r| !r.is_write()), "observe only reads");
    assert!(seen.exists);
    let web = seen
        .workloads
        .iter()
        .find(|w| w.name == "web")
        .expect("web");
    assert_eq!(web.phase, WorkloadPhase::Failed);
    assert_eq!(web.exit_code, Some(1));
    assert_eq!(web.digest.as_deref(), Some("sha256:cafe"));
    assert!(web.finished_at_ms.is_some());
    let db = seen.workloads.iter().find(|w| w.name == "db").expect("db");
    assert_eq!(db.phase, WorkloadPhase::Running);
    assert!(db.started_at_ms.is_some());

    // Never remediates: the failed pod is still the same one.
    a.observe(&ctx(), &bundle(&app))
        .await
        .expect("observe again");
    let pod = Api::<Pod>::namespaced(admin().await, &ns)
        .get("web")
        .await
        .expect("the pod stays");
    assert_eq!(uid(&pod), uid(&failed));

    // A workload whose pod is gone is missing.
    Api::<Pod>::namespaced(admin().await, &ns)
        .delete("cache", &DeleteParams::default().grace_period(0))
        .await
        .expect("deleting");
    let deadline = tokio::time::Instant::now() + ka::WAIT;
    loop {
        let seen = a.observe(&ctx(), &bundle(&app)).await.expect("observe");
        let cache = seen
            .workloads
            .iter()
            .find(|w| w.name == "cache")
            .expect("cache");
        if cache.phase == WorkloadPhase::Missing {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{cache:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn r150_stop_keeps_finished_pods_and_services() {
    let (a, _h) = ka::load().await;
    let app = id("k8s-stop");
    let ns = format!("pando-{app}");
    a.apply(&ctx(), &plan(&app, &["web", "job"]))
        .await
        .expect("apply");
    wait_phase(&ns, "web", "Running").await;
    wait_phase(&ns, "job", "Running").await;
    exit_pod(&ns, "job", 0).await;

    a.stop(&ctx(), &bundle(&app)).await.expect("stop");
    let c = admin().await;
    let pods = Api::<Pod>::namespaced(c.clone(), &ns);
    let deadline = tokio::time::Instant::now() + ka::WAIT;
    while pods.get_opt("web").await.expect("reading").is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the running pod goes"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        pods.get_opt("job").await.expect("reading").is_some(),
        "R-150"
    );
    let services = Api::<Service>::namespaced(c, &ns)
        .list(&ListParams::default())
        .await
        .expect("services");
    assert_eq!(services.items.len(), 2);
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn apply_deletes_the_workloads_the_plan_no_longer_has() {
    let (a, _h) = ka::load().await;
    let app = id("k8s-shrink");
    let ns = format!("pando-{app}");
    a.apply(&ctx(), &plan(&app, &["web", "old"]))
        .await
        .expect("apply");
    a.apply(&ctx(), &plan(&app, &["web"]))
        .await
        .expect("apply without `old`");
    let c = admin().await;
    let services = Api::<Service>::namespaced(c.clone(), &ns)
        .list(&ListParams::default())
        .await
        .expect("services");
    let names: Vec<_> = services
        .items
        .iter()
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    assert_eq!(names, vec!["web".to_string()]);
    let pods = Api::<Pod>::namespaced(c, &ns);
    let deadline = tokio::time::Instant::now() + ka::WAIT;
    while pods.get_opt("old").await.expect("reading").is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the pod of `old` goes"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let usage = a.usage(&ctx(), &bundle(&app)).await.expect("usage");
    assert_eq!(usage.workloads.len(), 1);
    assert_eq!(usage.workloads[0].requested.cpu_millis, 100);
    assert_eq!(usage.workloads[0].requested.memory_bytes, 64 << 20);
    assert!(usage.workloads[0].used.is_none());
    cleanup(&a, &app).await;
}
