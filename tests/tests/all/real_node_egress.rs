//! Egress `restricted` on the test cluster's real node (R-025, R-186, R-187), shown by packets:
//! kube-router enforces the app's policy, and for rules that name hosts the adapter's egress
//! gateway (`pando.test/gateway:1`, Pando's own binary) runs in the app's namespace on the node
//! and decides by name. On KWOK the same rules can only be shown by the objects written
//! (`adapter_kubernetes_isolation.rs`).
//!
//! "The outside" has two addresses: `allowed.outside.test` (198.18.1.2) and
//! `denied.outside.test` (198.18.1.3), both serving `outside` on port 80.

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{LogParams, PostParams};
use kube::{Api, Client};
use pando_host::types::{BundlePlan, EgressPolicy, EgressRule, NetworkRules, TrialRequest};
use pando_tests::cluster;
use pando_tests::kubernetes_adapter::{admin, cleanup, ctx, id, wait_phase};
use pando_tests::plans::plan;
use pando_tests::real_node::{self as node, BUSYBOX};

/// [`node::ADAPTER_CONFIG`] with the node's gateway image: host-name rules are supported.
const GATEWAY_CONFIG: &str = r#"{"pod_cidr": "198.18.0.0/24", "service_cidr": "198.19.0.0/17",
    "runtime_class": "pando-real-node", "helper_image": "pando.test/busybox:1",
    "egress_gateway_image": "pando.test/gateway:1"}"#;

const GATEWAY: &str = "pando-egress-gateway";
const ALLOWED: &str = "allowed.outside.test";
const DENIED: &str = "denied.outside.test";

/// Serves `ok` on port 8080 until killed.
const SERVE: &str =
    "mkdir -p /tmp/www && echo ok > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www";
const SLEEP: &str = "exec sleep 2147483647";

/// Sends a plain proxy request for `http://HOST/` to the proxy the adapter named in
/// `$http_proxy`, with busybox's `nc`, and prints the whole answer: `wget` hides a 403's body,
/// and the body is the gateway's reason. Its input stays open a moment: busybox's `nc` may
/// quit at the end of its input before the answer has arrived.
fn raw_proxy_get(host: &str) -> String {
    format!(
        "p=${{http_proxy#http://}}; \
         {{ printf 'GET http://{host}/ HTTP/1.1\\r\\nHost: {host}\\r\\n\\r\\n'; sleep 3; }} | \
         timeout 5 nc \"${{p%:*}}\" \"${{p##*:}}\" 2>&1"
    )
}

/// A plan of busybox workloads running `sh -c SCRIPT`, egress restricted to `rules`.
fn restricted_plan(app: &str, workloads: &[(&str, &str)], rules: &[(&str, u16)]) -> BundlePlan {
    let names: Vec<&str> = workloads.iter().map(|(n, _)| *n).collect();
    let mut p = plan(app, &names);
    for (w, (_, script)) in p.workloads.iter_mut().zip(workloads) {
        w.image = BUSYBOX.into();
        w.command = vec!["sh".into(), "-c".into(), (*script).into()];
    }
    p.network = restricted(rules);
    p
}

fn restricted(rules: &[(&str, u16)]) -> NetworkRules {
    NetworkRules {
        egress: EgressPolicy::Restricted(
            rules
                .iter()
                .map(|(d, port)| EgressRule {
                    destination: (*d).into(),
                    ports: vec![*port],
                })
                .collect(),
        ),
    }
}

/// Waits until pod `ns/name` runs, and checks that it runs on the real node.
async fn on_the_node(ns: &str, name: &str) -> Pod {
    let pod = wait_phase(ns, name, "Running").await;
    let at = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    assert_eq!(
        at.as_deref(),
        Some(node::NODE),
        "{ns}/{name} runs on the real node"
    );
    pod
}

/// Whether `from` gets an HTTP answer from `url` without the proxy variables (`wget -Y off`):
/// a direct connection, which only the policy decides.
async fn reaches_directly(client: &Client, ns: &str, from: &str, url: &str) -> bool {
    let out = node::sh(
        client,
        ns,
        from,
        &format!(
            "timeout 3 wget -Y off -q -O - {url} >/dev/null 2>&1 && echo REACHED || echo REFUSED"
        ),
    )
    .await;
    match out.trim() {
        "REACHED" => true,
        "REFUSED" => false,
        other => panic!("the probe in {ns}/{from} printed {other:?}"),
    }
}

/// A namespace of the test's own, no policy: `control` serves 8080 behind a ClusterIP Service
/// `control` (port 80), `prober` probes. What `prober` reaches and the app does not is refused
/// by the app's policy, not by the network. Returns the namespace, the pod IP, the Service IP.
async fn control(client: &Client, prefix: &str) -> (cluster::TestNamespace, String, String) {
    let ns = cluster::create_test_namespace(client, prefix)
        .await
        .expect("a namespace");
    let pod = node::run(
        client,
        &ns.name,
        node::shell_pod("control", &[("pando.test/role", "control")], SERVE),
    )
    .await;
    node::run(client, &ns.name, node::shell_pod("prober", &[], SLEEP)).await;
    let service: Service = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "control" },
        "spec": { "selector": { "pando.test/role": "control" },
                  "ports": [{ "port": 80, "targetPort": 8080, "protocol": "TCP" }] },
    }))
    .expect("a Service");
    let service = Api::<Service>::namespaced(client.clone(), &ns.name)
        .create(&PostParams::default(), &service)
        .await
        .expect("creating the control Service");
    let service_ip = service
        .spec
        .and_then(|s| s.cluster_ip)
        .expect("a cluster IP");
    (ns, node::ip(&pod), service_ip)
}

/// Retries `probe` for up to 30 s until it holds: the first connection may come before
/// kube-proxy has the Service's endpoints or CoreDNS the gateway's name. Only for what must
/// succeed; refusals are probed once, after a success shows the path is up.
async fn eventually<F, Fut>(what: &str, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while !probe().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within 30 s"
        );
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// What an app's pod `client` in `ns` reaches, each destination of which a pod without a policy
/// reaches (checked first, so a refusal is the app's policy, not the network).
#[derive(Debug, PartialEq)]
struct Reach {
    /// `allowed.outside.test`'s address, port 80.
    allowed: bool,
    /// `denied.outside.test`'s address, port 80.
    denied: bool,
    /// The app's own workload `web`, port 8080.
    own: bool,
    /// Another namespace's pod, port 8080.
    pod: bool,
    /// A ClusterIP Service, port 80.
    service: bool,
    /// The API server's Service.
    api: bool,
}

async fn reach(admin: &Client, ns: &str, web: &Pod, prefix: &str) -> Reach {
    let (control_ns, control_ip, service_ip) = control(admin, prefix).await;
    let allowed_url = format!("http://{}/", node::OUTSIDE_IP);
    let denied_url = format!("http://{}/", node::OUTSIDE_IP2);
    let pod_url = format!("http://{control_ip}:8080/");
    let service_url = format!("http://{service_ip}/");
    let api = node::KUBERNETES_SERVICE;

    // The controls: without a policy, every destination below answers.
    for url in [&allowed_url, &denied_url, &pod_url, &service_url] {
        let what = format!("a pod without a policy reaches {url}");
        eventually(&what, || {
            node::reaches(admin, &control_ns.name, "prober", url)
        })
        .await;
    }
    eventually(
        "a pod without a policy connects to the API server's Service",
        || node::connects(admin, &control_ns.name, "prober", api.0, api.1),
    )
    .await;
    // The allowed address first: once it answers the app's path is up, and every refusal
    // after it is the policy's.
    let seen = Reach {
        allowed: node::reaches(admin, ns, "client", &allowed_url).await,
        denied: node::reaches(admin, ns, "client", &denied_url).await,
        own: node::reaches(
            admin,
            ns,
            "client",
            &format!("http://{}:8080/", node::ip(web)),
        )
        .await,
        pod: node::reaches(admin, ns, "client", &pod_url).await,
        service: node::reaches(admin, ns, "client", &service_url).await,
        api: node::connects(admin, ns, "client", api.0, api.1).await,
    };
    control_ns.delete().await.expect("cleanup");
    seen
}

/// Applies a restricted plan of `web` (serving) and `client` (probing) with `rules`; `web`.
async fn restricted_app(a: &pando_host::Adapter, app: &str, rules: NetworkRules) -> Pod {
    let ns = format!("pando-{app}");
    let mut p = restricted_plan(app, &[("web", SERVE), ("client", SLEEP)], &[]);
    p.network = rules;
    a.apply(&ctx(), &p).await.expect("apply");
    let web = on_the_node(&ns, "web").await;
    on_the_node(&ns, "client").await;
    web
}

#[tokio::test]
async fn r187_r025_a_cidr_rule_lets_out_to_that_address_and_nowhere_else() {
    let admin = admin().await;
    node::require(&admin).await;
    let (a, _h) = node::load_adapter().await;
    let app = id("node-cidr");
    let allowed = format!("{}/32", node::OUTSIDE_IP);
    let web = restricted_app(&a, &app, restricted(&[(&allowed, 80)])).await;
    let seen = reach(&admin, &format!("pando-{app}"), &web, "node-cidr-control").await;
    assert_eq!(
        seen,
        Reach {
            allowed: true,
            denied: false,
            own: true,
            pod: false,
            service: false,
            api: false,
        },
        "R-187: the rule's address on its port, and the app's own workloads (R-025); not \
         another outside address, another namespace's pod, a Service nor the API server"
    );
    cleanup(&a, &app).await;
}

/// A restricted rule of everything, any port, reaches everything outside the cluster and
/// nothing in it (R-025): it is kept out of the pod and Service ranges as `open` is. It was a
/// bare `0.0.0.0/0` that reached every pod, Service and the API server.
#[tokio::test]
async fn r025_a_restricted_rule_of_everything_never_reaches_into_the_cluster() {
    let admin = admin().await;
    node::require(&admin).await;
    let (a, _h) = node::load_adapter().await;
    let app = id("node-cidr-all");
    let everything = NetworkRules {
        egress: EgressPolicy::Restricted(vec![EgressRule {
            destination: "0.0.0.0/0".into(),
            ports: vec![],
        }]),
    };
    let web = restricted_app(&a, &app, everything).await;
    let seen = reach(
        &admin,
        &format!("pando-{app}"),
        &web,
        "node-cidr-all-control",
    )
    .await;
    assert_eq!(
        seen,
        Reach {
            allowed: true,
            denied: true,
            own: true,
            pod: false,
            service: false,
            api: false,
        },
        "R-025: every outside address and the app's own workloads; never another namespace's \
         pod, a Service nor the API server"
    );
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn r187_a_host_rule_goes_out_through_the_gateway_and_only_there() {
    let admin = admin().await;
    node::require(&admin).await;
    let (a, _h) = node::load_adapter_with(GATEWAY_CONFIG).await;
    let app = id("node-gw");
    let ns = format!("pando-{app}");
    a.apply(
        &ctx(),
        &restricted_plan(&app, &[("client", SLEEP)], &[(ALLOWED, 80)]),
    )
    .await
    .expect("apply");
    // The gateway itself runs on the real node, as the image's user with a read-only root.
    let gateway = on_the_node(&ns, GATEWAY).await;
    let security = gateway.spec.as_ref().expect("spec").containers[0]
        .security_context
        .clone()
        .expect("the gateway's security context");
    assert_eq!(security.run_as_user, Some(65532));
    assert_eq!(security.read_only_root_filesystem, Some(true));
    on_the_node(&ns, "client").await;

    // Through the proxy variables the adapter set (busybox wget honours http_proxy).
    let fetch = format!("wget -q -O - http://{ALLOWED}/ 2>&1");
    eventually(
        "the client gets the allowed host through the gateway",
        || async { node::sh(&admin, &ns, "client", &fetch).await.trim() == "outside" },
    )
    .await;
    let proxy = node::sh(&admin, &ns, "client", "echo $http_proxy").await;
    assert_eq!(
        proxy.trim(),
        format!("http://{GATEWAY}.{ns}.svc.cluster.local:3128"),
        "the proxy the client used is its namespace's gateway"
    );
    let answer = node::sh(&admin, &ns, "client", &raw_proxy_get(DENIED)).await;
    assert!(
        answer.starts_with("HTTP/1.1 403 Forbidden"),
        "R-187: the gateway refuses a host no rule names: {answer:?}"
    );
    assert!(
        answer.contains(&format!("{DENIED} is not an allowed host"))
            && answer.contains(&format!("`--allow {DENIED}:80` would admit it")),
        "and says why: {answer:?}"
    );

    // Around the gateway: the policy refuses both addresses, by name and by address.
    for url in [
        format!("http://{ALLOWED}/"),
        format!("http://{}/", node::OUTSIDE_IP),
        format!("http://{}/", node::OUTSIDE_IP2),
    ] {
        assert!(
            !reaches_directly(&admin, &ns, "client", &url).await,
            "R-187: a direct connection to {url}, past the gateway, is refused"
        );
    }
    for ip in [node::OUTSIDE_IP, node::OUTSIDE_IP2] {
        assert!(
            !node::connects(&admin, &ns, "client", ip, 80).await,
            "R-187: nc to {ip}:80 is refused"
        );
    }

    // The gateway's own account of both decisions, read through the kubelet.
    let logs = Api::<Pod>::namespaced(admin.clone(), &ns)
        .logs(GATEWAY, &LogParams::default())
        .await
        .expect("the gateway's logs");
    let decided = |decision: &str, host: &str| {
        logs.lines().any(|l| {
            l.contains(&format!("\"decision\":\"{decision}\""))
                && l.contains(&format!("\"host\":\"{host}\""))
        })
    };
    assert!(
        decided("allowed", ALLOWED),
        "the allowed decision is logged: {logs}"
    );
    assert!(decided("refused", DENIED), "the refusal is logged: {logs}");
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn r186_egress_restriction_is_reported_with_a_gateway_image_only() {
    let admin = admin().await;
    node::require(&admin).await;
    let (without, _h1) = node::load_adapter().await;
    let (with, _h2) = node::load_adapter_with(GATEWAY_CONFIG).await;
    let caps = |a: pando_host::Adapter| async move {
        a.capabilities(&ctx())
            .await
            .expect("capabilities")
            .egress_restriction
    };
    assert!(caps(with).await, "R-186: with the gateway image, true");
    assert!(!caps(without).await, "R-186: without it, false");
}

/// Waits (up to 60 s) until kube-router enforces policy `policy` on pod `ns/name`: the pod's
/// firewall chain runs through that policy, and rejects what no policy admits. Until then the
/// node passes every connection of a new pod, so a probe made earlier shows nothing: the trial
/// test once passed so, before kube-router had seen its gateway. The test runs in the cluster's
/// network namespace as root, where the node's rules are.
async fn enforced(ns: &str, name: &str, policy: &str) {
    let reject = format!("rule to REJECT traffic destined for POD name:{name} namespace: {ns}\"");
    let through = format!("run through nw policy {policy}\"");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let out = std::process::Command::new("iptables-save")
            .output()
            .expect("iptables-save, in the cluster's network namespace");
        let rules = String::from_utf8_lossy(&out.stdout);
        // `-A KUBE-POD-FW-<hash> …`: the chain whose REJECT names the pod.
        let chain = rules
            .lines()
            .find(|l| l.contains(&reject))
            .and_then(|l| l.split_whitespace().nth(1));
        if let Some(chain) = chain
            && rules
                .lines()
                .any(|l| l.starts_with(&format!("-A {chain} ")) && l.contains(&through))
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "kube-router did not enforce {policy} on {ns}/{name} within 60 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// Runs `sh -c SCRIPT` in container `container` of `ns/pod` (a trial's pod has two).
async fn sh_in(client: &Client, ns: &str, pod: &str, container: &str, script: &str) {
    let attached = Api::<Pod>::namespaced(client.clone(), ns)
        .exec(
            pod,
            ["sh", "-c", script],
            &kube::api::AttachParams::default()
                .container(container)
                .stderr(false),
        )
        .await
        .expect("exec through the kubelet");
    let _ = attached.join().await;
}

/// The trial is held to the app's rules (R-097, R-187): its own namespace's gateway lets it out
/// to the allowed host and refuses the denied one; past the gateway nothing leaves. The trial's
/// policy denies every connection in, so the workload reaches its gateway through the one way in
/// the adapter opens (workload → gateway, on its port), and nothing else reaches the gateway.
/// The workload waits, before it probes, until the test has seen kube-router enforce every
/// policy of the namespace on both pods; it prints what it saw, and the trial returns that.
///
/// kube-router (v2.1.0) cannot tell the way in apart: a policy is one chain of its ingress and
/// egress rules, and a connection into the gateway runs through the trial policy's egress rule
/// "its pods to its own namespace's pods", which admits workload → gateway in the gateway's
/// chain too. So this shows the trial works with every policy enforced and that nothing else
/// reaches the gateway; that the way in is there at all, as an enforcer true to NetworkPolicy
/// needs, is shown by the objects (`adapter_kubernetes_isolation.rs`).
#[tokio::test]
async fn r097_r187_a_restricted_trial_goes_out_through_its_own_gateway() {
    let admin = admin().await;
    node::require(&admin).await;
    let (a, _h) = node::load_adapter_with(GATEWAY_CONFIG).await;
    let app = id("node-gw-trial");
    let (other, _, _) = control(&admin, "node-gw-trial-other").await;
    let mut workload = pando_tests::plans::workload("web");
    workload.image = BUSYBOX.into();
    // Waits for the test's go (`/tmp/go`), then retries the allowed host for 20 s (the gateway
    // may still be starting; with the gateway's way in closed every try is refused), then
    // probes each refusal once, and lingers 10 s for the test's own probe of the gateway.
    let script = format!(
        "echo proxy=$http_proxy; \
         until [ -e /tmp/go ]; do sleep 0.2; done; \
         i=0; until wget -q -O /tmp/a http://{ALLOWED}/ 2>/dev/null || [ $i -ge 20 ]; do \
           i=$((i+1)); sleep 1; done; \
         echo allowed=$(cat /tmp/a 2>/dev/null); \
         {denied} | head -n 1 | sed 's/^/denied=/'; \
         timeout 3 wget -Y off -q -O /dev/null http://{ip}/ 2>/dev/null \
           && echo direct=reached || echo direct=refused; \
         sleep 10; exit 0",
        denied = raw_proxy_get(DENIED),
        ip = node::OUTSIDE_IP,
    );
    workload.command = vec!["sh".into(), "-c".into(), script];
    let req = TrialRequest {
        bundle: app.clone(),
        workload,
        network: restricted(&[(ALLOWED, 80)]),
        pull_credentials: vec![],
        duration_ms: 90_000,
    };
    let trial = {
        let a = a.clone();
        tokio::spawn(async move { a.trial(&ctx(), &req).await })
    };
    let (ns, _) = node::running_trial(&admin, &app).await;
    let gateway = on_the_node(&ns, GATEWAY).await;
    // Every policy of the namespace, on each pod it selects (by `matchLabels`, all the adapter
    // writes): whichever the adapter made, the probe runs once all of them hold.
    let policies = Api::<NetworkPolicy>::namespaced(admin.clone(), &ns)
        .list(&Default::default())
        .await
        .expect("the trial's policies");
    for pod in [&gateway, &node::running_trial(&admin, &app).await.1] {
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        for policy in &policies.items {
            let selects = policy
                .spec
                .as_ref()
                .and_then(|s| s.pod_selector.as_ref())
                .and_then(|s| s.match_labels.clone())
                .unwrap_or_default()
                .iter()
                .all(|(k, v)| labels.get(k) == Some(v));
            if selects {
                let policy = policy.metadata.name.clone().unwrap_or_default();
                enforced(&ns, &name, &policy).await;
            }
        }
    }
    sh_in(&admin, &ns, "web", "workload", "touch /tmp/go").await;
    // Once the workload has probed (the gateway answering it, or not), and while it lingers:
    // nothing but the workload reaches the gateway, so a pod of another namespace, with no
    // policy of its own, is refused on the gateway's port.
    let pods = Api::<Pod>::namespaced(admin.clone(), &ns);
    let logs = LogParams {
        container: Some("workload".into()),
        ..LogParams::default()
    };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    while !pods
        .logs("web", &logs)
        .await
        .unwrap_or_default()
        .contains("direct=")
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the workload never probed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    assert!(
        !node::connects(&admin, &other.name, "prober", &node::ip(&gateway), 3128).await,
        "R-097: the trial's gateway admits its workload only"
    );

    let result = trial.await.expect("join").expect("trial");
    let out = result.output_tail.replace('\r', "");
    let line = |key: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("no {key}= line in the trial's output: {out:?}"))
            .to_owned()
    };
    assert_eq!(
        result.exit_code,
        Some(0),
        "the probe ran to its end: {out:?}"
    );
    let proxy = line("proxy");
    assert!(
        proxy.starts_with(&format!("http://{GATEWAY}.pando-trial-")),
        "R-187: the trial's proxy is its own namespace's gateway: {proxy}"
    );
    assert_eq!(
        line("allowed"),
        "outside",
        "the allowed host, through the gateway"
    );
    assert_eq!(
        line("denied"),
        "HTTP/1.1 403 Forbidden",
        "the denied host is refused by the gateway"
    );
    assert_eq!(
        line("direct"),
        "refused",
        "past the gateway, the policy refuses"
    );
    other.delete().await.expect("cleanup");
}
