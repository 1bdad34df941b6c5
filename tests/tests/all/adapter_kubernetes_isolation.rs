//! The Kubernetes adapter's isolation, against the test cluster as the
//! `pando` identity: trials (R-097, R-187), the egress gateway (R-186,
//! R-187), Pando's role binding in app namespaces, and the NetworkPolicy
//! canary of `health-check` (O-43).
//!
//! KWOK has no container runtime and no pod network. The trial's observer
//! execs `cat /proc/net/…`, which KWOK runs on this machine under
//! `PANDO_HELPER_ROOT` (`scripts/cluster`): the tests put kernel-format
//! socket tables there and check the adapter reads them back. Without a pod
//! network the canary's allowed client reaches nothing, and the adapter
//! must say it cannot tell, not that the cluster is fine.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::Api;
use kube::api::ListParams;
use pando_host::CallError;
use pando_host::types::{
    DestroyOptions, EgressPolicy, EgressRule, Error as AdapterError, NetworkRules, Protocol,
    TrialRequest,
};
use pando_tests::cluster;
use pando_tests::kubernetes_adapter::{
    self as ka, admin, audit_mark, cleanup, ctx, id, requests, versions,
};
use pando_tests::plans::{bundle, plan, workload};

/// The adapter's configuration with an egress gateway image.
const GATEWAY_CONFIG: &str = r#"{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17",
    "egress_gateway_image": "registry.example.com/pando:1"}"#;

/// Socket tables in the kernel's format: 0.0.0.0:8080 and [::]:443
/// listening, 127.0.0.1:3306 listening on loopback only, an established
/// connection, and a UDP socket bound to 0.0.0.0:53.
const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 101 1 0000000000000000 100 0 0 10 0
   1: 0100007F:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 102 1 0000000000000000 100 0 0 10 0
   2: 0A00000A:1F90 0B00000A:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 103 1 0000000000000000 20 4 30 10 -1
";
const TCP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:01BB 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 104 1 0000000000000000 100 0 0 10 0
";
const UDP: &str = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  5: 00000000:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 105 2 0000000000000000 0
";

/// Writes the socket tables the observer reads on the test cluster.
fn write_socket_tables() {
    let dir = cluster::state_dir().join("helper-root/proc/net");
    std::fs::create_dir_all(&dir).expect("mkdir");
    for (name, text) in [("tcp", TCP), ("tcp6", TCP6), ("udp", UDP)] {
        // Atomically: another test may be reading them.
        let tmp = dir.join(format!(".{name}.{}", std::process::id()));
        std::fs::write(&tmp, text).expect("write");
        std::fs::rename(&tmp, dir.join(name)).expect("rename");
    }
}

fn restricted(rules: &[(&str, &[u16])]) -> NetworkRules {
    NetworkRules {
        egress: EgressPolicy::Restricted(
            rules
                .iter()
                .map(|(d, p)| EgressRule {
                    destination: (*d).into(),
                    ports: p.to_vec(),
                })
                .collect(),
        ),
    }
}

fn request(app: &str, network: NetworkRules, duration: Duration) -> TrialRequest {
    TrialRequest {
        bundle: app.into(),
        workload: workload("web"),
        network,
        pull_credentials: vec![],
        duration_ms: duration.as_millis() as u64,
    }
}

/// The trial namespaces of app `app`, as the admin sees them.
async fn trial_namespaces(app: &str) -> Vec<Namespace> {
    Api::<Namespace>::all(admin().await)
        .list(&ListParams::default().labels(&format!("pando.dev/trial={app}")))
        .await
        .expect("listing namespaces")
        .items
}

/// Waits for app `app`'s trial pod to run, and returns its namespace.
async fn running_trial(app: &str) -> String {
    let deadline = tokio::time::Instant::now() + ka::WAIT;
    loop {
        if let Some(ns) = trial_namespaces(app).await.first()
            && let Some(name) = ns.metadata.name.clone()
        {
            let pods: Api<Pod> = Api::namespaced(admin().await, &name);
            if let Some(pod) = pods.get_opt("web").await.expect("get")
                && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
            {
                return name;
            }
        }
        assert!(tokio::time::Instant::now() < deadline, "no trial pod ran");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn r097_r187_a_trial_reports_listening_sockets_in_an_isolated_namespace_then_goes() {
    write_socket_tables();
    let (a, _h) = ka::load_with(GATEWAY_CONFIG).await;
    let app = id("k8s-trial");
    let network = restricted(&[("api.example.com", &[443]), ("203.0.113.0/24", &[25])]);
    let req = request(&app, network, Duration::from_secs(4));
    let trial = {
        let a = a.clone();
        tokio::spawn(async move { a.trial(&ctx(), &req).await })
    };

    // Look behind the adapter while it watches.
    let ns = running_trial(&app).await;
    let c = admin().await;
    let policy = Api::<NetworkPolicy>::namespaced(c.clone(), &ns)
        .get("pando-trial")
        .await
        .expect("the trial's policy");
    let spec = policy.spec.expect("spec");
    assert!(
        spec.policy_types
            .unwrap_or_default()
            .contains(&"Ingress".to_owned())
            && spec.ingress.unwrap_or_default().is_empty(),
        "R-097: every connection in is denied"
    );
    let egress = serde_json::to_string(&spec.egress).expect("json");
    assert!(
        egress.contains("203.0.113.0/24"),
        "R-187: the app's own rules: {egress}"
    );
    let pod = Api::<Pod>::namespaced(c.clone(), &ns)
        .get("web")
        .await
        .expect("pod");
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    assert!(
        !labels.contains_key("pando.dev/app"),
        "a trial is no app's workload: {labels:?}"
    );
    let spec = pod.spec.expect("spec");
    let names: Vec<&str> = spec.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["workload", "pando-observer"]);
    let env = spec.containers[0].env.clone().unwrap_or_default();
    assert!(
        env.iter().any(|e| e.name == "HTTPS_PROXY"
            && e.value.as_deref()
                == Some(&*format!(
                    "http://pando-egress-gateway.{ns}.svc.cluster.local:3128"
                ))),
        "R-187: out through the trial namespace's gateway: {env:?}"
    );
    let gateway = Api::<Pod>::namespaced(c.clone(), &ns)
        .get("pando-egress-gateway")
        .await
        .expect("R-187: the trial's egress gateway");
    let gateway_spec = gateway.spec.expect("spec");
    let command = gateway_spec.containers[0]
        .command
        .clone()
        .unwrap_or_default();
    assert!(
        command.contains(&"api.example.com:443".to_owned()),
        "{command:?}"
    );
    // Ends itself with the trial (the trial pod's own deadline), on every path: a cancelled or
    // timed-out call included, not at the next trial's sweep.
    let trial_deadline = spec
        .active_deadline_seconds
        .expect("the trial pod's deadline");
    assert_eq!(
        gateway_spec.active_deadline_seconds,
        Some(trial_deadline),
        "R-097: the trial's gateway has the trial's deadline"
    );
    assert!(
        trial_deadline <= 4 + 120 + 60,
        "bounded by the trial's duration: {trial_deadline}"
    );
    // The one way in: the trial's workload to its gateway, on the gateway's port.
    let way_in = Api::<NetworkPolicy>::namespaced(c.clone(), &ns)
        .get("pando-egress-gateway-in")
        .await
        .expect("R-187: the policy that lets the workload reach its gateway");
    assert_eq!(
        serde_json::to_value(way_in.spec.expect("spec")).expect("json"),
        serde_json::json!({
            "podSelector": { "matchLabels": { "pando.dev/component": "egress-gateway" } },
            "policyTypes": ["Ingress"],
            "ingress": [{
                "from": [{ "podSelector": { "matchLabels": { "pando.dev/trial": app } } }],
                "ports": [{ "protocol": "TCP", "port": 3128 }],
            }],
        }),
        "workload to gateway on its port, nothing else"
    );

    let result = trial.await.expect("join").expect("trial");
    let listening: BTreeSet<(u16, bool)> = result
        .listening
        .iter()
        .map(|l| (l.port, l.protocol == Protocol::Udp))
        .collect();
    let expected: BTreeSet<(u16, bool)> = [(443, false), (8080, false), (53, true)]
        .into_iter()
        .collect();
    assert_eq!(
        listening, expected,
        "loopback and established sockets are not listening"
    );
    assert_eq!(result.exit_code, None, "it ran through the trial");
    assert_eq!(result.writes, None, "writes are not observed");

    // Removed at the end.
    let left = Api::<Namespace>::all(c)
        .get_opt(&ns)
        .await
        .expect("get namespace");
    assert!(
        left.is_none_or(|n| n.metadata.deletion_timestamp.is_some()),
        "the trial namespace goes at the end"
    );
}

#[tokio::test]
async fn r097_a_trial_reports_the_exit_and_the_output_tail() {
    write_socket_tables();
    let (a, _h) = ka::load().await;
    let app = id("k8s-trial-exit");
    let req = request(
        &app,
        restricted(&[("203.0.113.0/24", &[])]),
        Duration::from_secs(60),
    );
    let trial = {
        let a = a.clone();
        tokio::spawn(async move { a.trial(&ctx(), &req).await })
    };
    let ns = running_trial(&app).await;
    ka::exit_pod(&ns, "web", 3).await;
    let result = trial.await.expect("join").expect("trial");
    assert_eq!(result.exit_code, Some(3), "the exit ends the trial early");
    let log = cluster::expected_pod_log().expect("the pod log");
    assert!(
        result
            .output_tail
            .contains(log.lines().next().unwrap_or("?")),
        "the output's tail: {:?}",
        result.output_tail
    );
}

#[tokio::test]
async fn r186_a_host_name_without_a_gateway_image_is_unsupported_and_leaves_nothing() {
    let (a, _h) = ka::load().await;
    let app = id("k8s-r186");
    let network = restricted(&[("api.example.com", &[443])]);
    let trial = a
        .trial(
            &ctx(),
            &request(&app, network.clone(), Duration::from_secs(1)),
        )
        .await;
    assert!(
        matches!(&trial, Err(CallError::Adapter(AdapterError::Unsupported(m))) if m.contains("egress_gateway_image")),
        "{trial:?}"
    );
    assert!(
        trial_namespaces(&app).await.is_empty(),
        "no trial namespace"
    );

    let mut p = plan(&app, &["web"]);
    p.network = network;
    let applied = a.apply(&ctx(), &p).await;
    assert!(
        matches!(
            &applied,
            Err(CallError::Adapter(AdapterError::Unsupported(_)))
        ),
        "{applied:?}"
    );
    let ns = Api::<Namespace>::all(admin().await)
        .get_opt(&format!("pando-{app}"))
        .await
        .expect("get");
    assert!(ns.is_none(), "a refused plan leaves the cluster as it was");
    let caps = a.capabilities(&ctx()).await.expect("capabilities");
    assert!(!caps.egress_restriction, "R-186: and capabilities say so");
}

#[tokio::test]
async fn r187_apply_runs_an_egress_gateway_for_host_names_and_removes_it_when_unneeded() {
    let (a, _h) = ka::load_with(GATEWAY_CONFIG).await;
    assert!(
        a.capabilities(&ctx())
            .await
            .expect("caps")
            .egress_restriction,
        "R-187: with a gateway image, egress can be restricted"
    );
    let app = id("k8s-egress");
    let ns = format!("pando-{app}");
    let mut p = plan(&app, &["web"]);
    p.network = restricted(&[("api.example.com", &[443]), ("203.0.113.0/24", &[25])]);
    a.apply(&ctx(), &p).await.expect("apply");
    let c = admin().await;

    let gateway = ka::wait_phase(&ns, "pando-egress-gateway", "Running").await;
    let command = gateway.spec.expect("spec").containers[0]
        .command
        .clone()
        .unwrap_or_default();
    assert_eq!(
        command,
        [
            "/usr/local/bin/pando",
            "egress-gateway",
            "--listen",
            ":3128",
            "--allow",
            "api.example.com:443"
        ]
    );
    Api::<Service>::namespaced(c.clone(), &ns)
        .get("pando-egress-gateway")
        .await
        .expect("the gateway's Service");
    let policies = Api::<NetworkPolicy>::namespaced(c.clone(), &ns);
    let out = serde_json::to_string(
        &policies
            .get("pando-egress-gateway")
            .await
            .expect("the gateway's policy")
            .spec,
    )
    .expect("json");
    assert!(
        out.contains("443") && out.contains("198.19.128.0/17"),
        "{out}"
    );
    let deny = serde_json::to_string(
        &policies
            .get("pando-default-deny")
            .await
            .expect("policy")
            .spec,
    )
    .expect("json");
    assert!(
        deny.contains("203.0.113.0/24") && !deny.contains("example.com"),
        "{deny}"
    );
    let web = ka::wait_phase(&ns, "web", "Running").await;
    let env = web.spec.expect("spec").containers[0]
        .env
        .clone()
        .unwrap_or_default();
    assert!(env.iter().any(|e| e.name == "HTTPS_PROXY"), "{env:?}");
    let seen = a.observe(&ctx(), &bundle(&app)).await.expect("observe");
    let names: Vec<&str> = seen.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(
        names,
        ["web"],
        "the gateway is not one of the app's workloads"
    );

    // Satisfied: nothing written (O-41), the gateway included.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = versions(&c, &ns).await;
    let mark = audit_mark();
    a.apply(&ctx(), &p).await.expect("apply again");
    let sent = requests(mark, &ns);
    assert!(sent.iter().all(|r| !r.is_write()), "{sent:?}");
    assert_eq!(before, versions(&c, &ns).await);

    // Open egress: the gateway and its policy go.
    p.network.egress = EgressPolicy::Open;
    a.apply(&ctx(), &p).await.expect("apply open egress");
    let pods: Api<Pod> = Api::namespaced(c.clone(), &ns);
    let gone = pods.get_opt("pando-egress-gateway").await.expect("get");
    assert!(gone.is_none_or(|p| p.metadata.deletion_timestamp.is_some()));
    assert!(
        policies
            .get_opt("pando-egress-gateway")
            .await
            .expect("get")
            .is_none()
    );
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn apply_binds_pandos_service_account_to_the_app_role_and_destroy_keeps_it() {
    let (a, _h) = ka::load().await;
    let app = id("k8s-rb");
    let ns = format!("pando-{app}");
    a.apply(&ctx(), &plan(&app, &["web"])).await.expect("apply");
    let bindings: Api<RoleBinding> = Api::namespaced(admin().await, &ns);
    let rb = bindings.get("pando-app").await.expect("the RoleBinding");
    assert_eq!(rb.role_ref.kind, "ClusterRole");
    assert_eq!(rb.role_ref.name, "pando-app");
    let subject = &rb.subjects.expect("subjects")[0];
    assert_eq!(
        (
            subject.kind.as_str(),
            subject.name.as_str(),
            subject.namespace.as_deref()
        ),
        ("ServiceAccount", "pando", Some("pando-system"))
    );
    a.destroy(&ctx(), &bundle(&app), DestroyOptions { keep_volumes: true })
        .await
        .expect("destroy");
    assert!(
        bindings.get_opt("pando-app").await.expect("get").is_some(),
        "R-204: the namespace keeps Pando's role binding"
    );
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn o43_health_says_it_cannot_tell_when_the_canary_reaches_nothing() {
    let _canary = ka::canary_lock().await;
    let (a, _h) = ka::load().await;
    let health = a.health_check(&ctx()).await;
    // The allowed client ran its fetch and reached nothing (on KWOK the exec runs on this
    // machine, in the cluster's namespace, where no route leads to a KWOK pod address): not a
    // fetch that could not run, which would say nothing about the network.
    assert!(
        matches!(&health, Err(CallError::Adapter(AdapterError::Unavailable(m)))
            if m.contains("O-43") && m.contains("could not be checked")
                && m.contains("could not reach its server")
                && (m.contains("wget exited") || m.contains("no answer within"))),
        "KWOK has no pod network: {health:?}"
    );
    let pods: Api<Pod> = Api::namespaced(admin().await, "pando-canary");
    for role in ["server", "allowed", "denied"] {
        let pod = pods.get(role).await.expect("a canary pod");
        assert_eq!(
            pod.status.and_then(|s| s.phase).as_deref(),
            Some("Running"),
            "{role}"
        );
    }
    let policy = Api::<NetworkPolicy>::namespaced(admin().await, "pando-canary")
        .get("pando-canary")
        .await
        .expect("the canary's policy");
    let text = serde_json::to_string(&policy.spec).expect("json");
    assert!(
        text.contains("allowed") && !text.contains("denied"),
        "{text}"
    );
}

#[tokio::test]
async fn o43_every_health_check_restores_the_canarys_policy() {
    let _canary = ka::canary_lock().await;
    let (a, _h) = ka::load().await;
    let policies = Api::<NetworkPolicy>::namespaced(admin().await, "pando-canary");
    // The first check makes the canary; then its policy is lost, and then made to admit anyone.
    let _ = a.health_check(&ctx()).await;
    let spec_of = |p: &NetworkPolicy| serde_json::to_value(&p.spec).expect("json");
    let want = spec_of(
        &policies
            .get("pando-canary")
            .await
            .expect("the canary's policy"),
    );
    policies
        .delete("pando-canary", &Default::default())
        .await
        .expect("deleting the canary's policy");
    let _ = a.health_check(&ctx()).await;
    let restored = policies
        .get_opt("pando-canary")
        .await
        .expect("reading the policy")
        .expect("the next health check makes the lost policy again");
    assert_eq!(spec_of(&restored), want);
    let mut open = restored.clone();
    if let Some(spec) = open.spec.as_mut() {
        spec.ingress = Some(vec![Default::default()]);
    }
    policies
        .replace("pando-canary", &Default::default(), &open)
        .await
        .expect("opening the canary's policy");
    let _ = a.health_check(&ctx()).await;
    let again = policies.get("pando-canary").await.expect("the policy");
    assert_eq!(spec_of(&again), want, "an edited policy is put back");
}
