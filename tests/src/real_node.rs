//! The real node of the test cluster (`scripts/lib/node.bash`): containerd, a kubelet, a CNI bridge
//! on 198.18.0.0/24, kube-proxy, kube-router enforcing NetworkPolicy and CoreDNS. It is tainted, so
//! that only pods that ask land there; the RuntimeClass [`RUNTIME_CLASS`] carries the node selector
//! and toleration, so an adapter configured with it runs its pods there.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Namespace, Node, Pod, PodSpec, Toleration};
use kube::api::{AttachParams, ObjectMeta, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Api, Client};
use tokio::io::AsyncReadExt;

/// The real node's name.
pub const NODE: &str = "pando-node-0";

/// The label that selects it.
pub const NODE_LABEL: (&str, &str) = ("pando.test/node", "real");

/// Its taint's key (effect `NoSchedule`).
pub const TAINT_KEY: &str = "pando.test/real-node";

/// The RuntimeClass (handler `runc`) whose pods run on the real node.
pub const RUNTIME_CLASS: &str = "pando-real-node";

/// The image with busybox and its applets (a shell, `wget`, `httpd`), made from Debian's
/// busybox-static and imported into the node's containerd.
pub const BUSYBOX: &str = "pando.test/busybox:1";

/// The project's test server (`tests/server`) at `/usr/local/bin/pando-test-server`, with
/// busybox beside it: `--listen PORT` answers HTTP with its identity.
pub const TEST_SERVER: &str = "pando.test/server:1";

/// The pod subnet of the node's bridge.
pub const POD_SUBNET: &str = "198.18.0.0/24";

/// The Kubernetes adapter's configuration for the real node: its pods, canary included, under
/// [`RUNTIME_CLASS`]; helpers from [`BUSYBOX`].
pub const ADAPTER_CONFIG: &str = r#"{"pod_cidr": "198.18.0.0/24", "service_cidr": "198.19.0.0/17",
    "runtime_class": "pando-real-node", "helper_image": "pando.test/busybox:1"}"#;

/// Limit for a pod on the real node to start (the images are local: seconds in practice).
pub const WAIT: Duration = Duration::from_secs(90);

/// Checks that the real node is there and Ready, with a message naming how to get it.
pub async fn require(client: &Client) {
    let node = Api::<Node>::all(client.clone())
        .get_opt(NODE)
        .await
        .expect("reading the real node");
    let Some(node) = node else {
        panic!(
            "the test cluster has no real node {NODE}: it was started with --no-node or \
             PANDO_CLUSTER_NODE=0; restart it with `scripts/cluster down && scripts/cluster up`"
        );
    };
    let ready = node
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    assert!(
        ready,
        "the real node {NODE} is not Ready: see target/test-cluster/logs/kubelet.log"
    );
}

/// Makes namespace `name` unless it exists; never deletes it (tests share `pando-system`, where
/// Pando's server would run).
pub async fn ensure_namespace(client: &Client, name: &str) {
    let api = Api::<Namespace>::all(client.clone());
    if api.get_opt(name).await.expect("namespace").is_none() {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        // Another test may make it at the same moment: a conflict is as good.
        let _ = api.create(&PostParams::default(), &ns).await;
    }
}

/// Retries `probe` for up to 30 s until it holds: kube-proxy, CoreDNS and kube-router each take
/// a moment to follow a new object. Only for what must come to hold; a refusal is probed once,
/// after a success has shown the path is up.
pub async fn eventually<F, Fut>(what: &str, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !probe().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within 30 s"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// A bare pod on the real node running `sh -c SCRIPT` in [`BUSYBOX`].
pub fn shell_pod(name: &str, labels: &[(&str, &str)], script: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            termination_grace_period_seconds: Some(1),
            node_selector: Some([(NODE_LABEL.0.to_string(), NODE_LABEL.1.to_string())].into()),
            tolerations: Some(vec![Toleration {
                key: Some(TAINT_KEY.into()),
                operator: Some("Exists".into()),
                effect: Some("NoSchedule".into()),
                ..Toleration::default()
            }]),
            automount_service_account_token: Some(false),
            containers: vec![Container {
                name: "main".into(),
                image: Some(BUSYBOX.into()),
                image_pull_policy: Some("Never".into()),
                command: Some(vec!["sh".into(), "-c".into(), script.into()]),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

/// Creates `pod` in `ns` and waits until it runs; returns it with its IP.
pub async fn run(client: &Client, ns: &str, pod: Pod) -> Pod {
    let api = Api::<Pod>::namespaced(client.clone(), ns);
    let name = pod.metadata.name.clone().unwrap_or_default();
    api.create(&PostParams::default(), &pod)
        .await
        .expect("creating a pod on the real node");
    tokio::time::timeout(
        WAIT,
        await_condition(api.clone(), &name, conditions::is_pod_running()),
    )
    .await
    .unwrap_or_else(|_| panic!("pod {ns}/{name} did not run on the real node within {WAIT:?}"))
    .expect("watching the pod");
    api.get(&name).await.expect("the running pod")
}

/// The pod's IP.
pub fn ip(pod: &Pod) -> String {
    pod.status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .unwrap_or_default()
}

/// Runs `sh -c SCRIPT` in `ns/pod` through the API server and the kubelet; its stdout.
pub async fn sh(client: &Client, ns: &str, pod: &str, script: &str) -> String {
    let api = Api::<Pod>::namespaced(client.clone(), ns);
    let mut attached = api
        .exec(
            pod,
            ["sh", "-c", script],
            &AttachParams::default().stderr(false),
        )
        .await
        .expect("exec through the kubelet");
    let mut out = String::new();
    if let Some(mut stdout) = attached.stdout() {
        stdout
            .read_to_string(&mut out)
            .await
            .expect("reading the exec's stdout");
    }
    let _ = attached.join().await;
    out
}

/// Whether `from` (a pod in `ns`) gets an HTTP answer from `url` within 3 s: packets, not objects.
pub async fn reaches(client: &Client, ns: &str, from: &str, url: &str) -> bool {
    // busybox's `wget -T` crashes after a fetch; `timeout` bounds it instead.
    let out = sh(
        client,
        ns,
        from,
        &format!("timeout 3 wget -q -O - {url} >/dev/null 2>&1 && echo REACHED || echo REFUSED"),
    )
    .await;
    match out.trim() {
        "REACHED" => true,
        "REFUSED" => false,
        other => panic!("the probe in {ns}/{from} printed {other:?}"),
    }
}

/// "The outside" (`scripts/lib/node.bash`): a test host in a network namespace of its own, linked
/// to the node's network, serving HTTP on port 80 on two addresses; CoreDNS names the first
/// `allowed.outside.test` and the second `denied.outside.test`. It stands in for the internet.
pub const OUTSIDE_IP: &str = "198.18.1.2";

/// The outside host's second address, `denied.outside.test`.
pub const OUTSIDE_IP2: &str = "198.18.1.3";

/// Whether `from` (a pod in `ns`) opens a TCP connection to `host:port` within 3 s.
pub async fn connects(client: &Client, ns: &str, from: &str, host: &str, port: u16) -> bool {
    let out = sh(
        client,
        ns,
        from,
        &format!(
            "nc -w 3 {host} {port} </dev/null >/dev/null 2>&1 && echo REACHED || echo REFUSED"
        ),
    )
    .await;
    match out.trim() {
        "REACHED" => true,
        "REFUSED" => false,
        other => panic!("the probe in {ns}/{from} printed {other:?}"),
    }
}

/// Whether the outside host gets an HTTP answer from `url` within 3 s.
pub fn outside_reaches(url: &str) -> bool {
    let netns = crate::net::netns_path().expect("the cluster's namespace");
    let outside = format!("{}-out", netns.display());
    let out = std::process::Command::new("nsenter")
        .arg(format!("--net={outside}"))
        .args([
            "timeout",
            "3",
            "busybox",
            "wget",
            "-q",
            "-O",
            "/dev/null",
            url,
        ])
        .output()
        .expect("running wget in the outside host's namespace");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // An HTTP error status is an answer: something reached the server.
    if out.status.success() || stderr.contains("server returned error") {
        return true;
    }
    // Unreachable is wget's own failure to connect, or `timeout` ending it (124); anything else
    // (nsenter without the namespace, no busybox) is the check failing, which must not read as
    // "refused".
    assert!(
        out.status.code() == Some(124) || stderr.trim_start().starts_with("wget: "),
        "the outside host's check of {url} failed by itself (status {:?}), not by the network: {stderr}",
        out.status.code()
    );
    false
}

/// The `kubernetes` Service (the API server, through kube-proxy).
pub const KUBERNETES_SERVICE: (&str, u16) = ("198.19.0.1", 443);

/// The grants the Kubernetes adapter ships with, which name [`RUNTIME_CLASS`] among the runtime
/// classes its pods may use (the host's object policy allows only the ones the grants list); a
/// test that the shipped list ever loses it fails here, not in a pod that never starts.
pub fn grants() -> pando_host::Grants {
    let grants = crate::kubernetes_adapter::grants();
    let lists_it = grants.kubernetes.as_ref().is_some_and(|k| {
        k.objects
            .pods
            .iter()
            .all(|rule| rule.runtime_classes.iter().any(|c| c == RUNTIME_CLASS))
    });
    assert!(
        lists_it,
        "deploy/grants/kubernetes.yaml lets every pod rule use the runtime class {RUNTIME_CLASS}"
    );
    grants
}

/// The Kubernetes adapter as `pando`, with [`grants`] and [`ADAPTER_CONFIG`].
pub async fn load_adapter() -> (pando_host::Adapter, pando_host::Host) {
    load_adapter_with(ADAPTER_CONFIG).await
}

/// The Kubernetes adapter as `pando`, with [`grants`] and the configuration `config`.
pub async fn load_adapter_with(config: &str) -> (pando_host::Adapter, pando_host::Host) {
    crate::probe::load_as_pando(&crate::kubernetes_adapter::component(), grants(), config).await
}

/// Observes workload `workload` of app `app` until its reason satisfies `matches` (within
/// [`WAIT`]), asserting on every look that it never runs; returns the reason. `never` says, in
/// the failure, why it must not run.
pub async fn reason_of_a_workload_that_never_runs(
    adapter: &pando_host::Adapter,
    app: &str,
    workload: &str,
    matches: impl Fn(&str) -> bool,
    never: &str,
) -> String {
    let ctx = crate::kubernetes_adapter::ctx();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let observed = adapter
            .observe(&ctx, &crate::plans::bundle(app))
            .await
            .expect("observe");
        let w = observed
            .workloads
            .iter()
            .find(|w| w.name == workload)
            .expect("the workload is observed");
        assert_ne!(
            w.phase,
            pando_host::types::WorkloadPhase::Running,
            "{never}: {w:?}"
        );
        if matches(&w.reason) {
            assert_eq!(w.phase, pando_host::types::WorkloadPhase::Pending, "{w:?}");
            return w.reason.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "observe never gave the reason looked for; last: {w:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The namespace of app `app`'s trial and its pod `web`, once that pod runs (within [`WAIT`]).
pub async fn running_trial(client: &Client, app: &str) -> (String, Pod) {
    use k8s_openapi::api::core::v1::Namespace;
    let namespaces = Api::<Namespace>::all(client.clone());
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let list = namespaces
            .list(&kube::api::ListParams::default().labels(&format!("pando.dev/trial={app}")))
            .await
            .expect("namespaces");
        if let Some(name) = list.items.first().and_then(|n| n.metadata.name.clone())
            && let Some(pod) = Api::<Pod>::namespaced(client.clone(), &name)
                .get_opt("web")
                .await
                .expect("pod")
            && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        {
            return (name, pod);
        }
        assert!(tokio::time::Instant::now() < deadline, "no trial pod ran");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The test registry on the node's network (`scripts/lib/node-services.bash`): basic auth, the
/// node's images under `pando/`, a user and password made at every `scripts/cluster up`.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Registry {
    /// `198.18.0.1:5000`.
    pub server: String,
    /// The one user.
    pub username: String,
    /// Its password.
    pub password: String,
}

impl Registry {
    /// The running cluster's registry, from `target/test-cluster/registry.json`.
    pub fn get() -> Registry {
        let path = crate::cluster::state_dir().join("registry.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{} ({e}): the test cluster has no registry; restart it with the real node \
                 (`scripts/cluster down && scripts/cluster up`)",
                path.display()
            )
        });
        serde_json::from_str(&text).expect("registry.json")
    }

    /// The busybox image, as the registry holds it.
    pub fn busybox(&self) -> String {
        format!("{}/pando/busybox:1", self.server)
    }

    /// Pull credentials for it, with `password`.
    pub fn credential(&self, password: &str) -> pando_host::types::RegistryCredential {
        pando_host::types::RegistryCredential {
            registry: self.server.clone(),
            username: self.username.clone(),
            password: password.into(),
        }
    }
}
