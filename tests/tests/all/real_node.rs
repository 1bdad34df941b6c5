//! The Kubernetes adapter on the test cluster's real node: containers, a CNI pod network with
//! NetworkPolicy enforced by kube-router, CoreDNS (docs/testing.md, "The real node"). Each rule
//! here is shown by packets and bytes, where on KWOK it can only be shown by objects: exec'd
//! commands there run on this machine, and every pod serves one log file.

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::{Api, Client};
use pando_host::types::{ExecRequest, LogOptions, RunRequest};
use pando_tests::cluster;
use pando_tests::kubernetes_adapter::{self as ka, admin, cleanup, ctx, id, wait_phase};
use pando_tests::net::Ipv4Net;
use pando_tests::plans::{plan, wref};
use pando_tests::real_node::{self as node, BUSYBOX};

/// A plan whose workloads run `sh -c SCRIPT` in the node's busybox image.
fn shell_plan(app: &str, workloads: &[(&str, &str)]) -> pando_host::types::BundlePlan {
    let names: Vec<&str> = workloads.iter().map(|(n, _)| *n).collect();
    let mut p = plan(app, &names);
    for (w, (_, script)) in p.workloads.iter_mut().zip(workloads) {
        w.image = BUSYBOX.into();
        w.command = vec!["sh".into(), "-c".into(), (*script).into()];
    }
    p
}

/// Serves `ok` on port 8080 until killed.
const SERVE: &str =
    "mkdir -p /tmp/www && echo ok > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www";
const SLEEP: &str = "exec sleep 2147483647";

async fn app_pod(client: &Client, ns: &str, name: &str) -> Pod {
    let pod = wait_phase(ns, name, "Running").await;
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default();
    assert_eq!(node, node::NODE, "{ns}/{name} runs on the real node");
    let _ = client;
    pod
}

#[tokio::test]
async fn the_real_node_runs_containers_on_its_own_pod_network() {
    let admin = admin().await;
    node::require(&admin).await;
    let ns = cluster::create_test_namespace(&admin, "node-net")
        .await
        .expect("a namespace");
    let pod = node::run(&admin, &ns.name, node::shell_pod("probe", &[], SLEEP)).await;
    let ip: std::net::Ipv4Addr = node::ip(&pod).parse().expect("a pod IP");
    let subnet = Ipv4Net::parse(node::POD_SUBNET).expect("cidr");
    assert!(
        subnet.contains(ip),
        "the pod's IP {ip} is on the node's bridge ({})",
        node::POD_SUBNET
    );
    // Cluster DNS: CoreDNS, a pod in kube-system behind the kube-dns Service, through kube-proxy.
    let answer = node::sh(
        &admin,
        &ns.name,
        "probe",
        "nslookup kubernetes.default.svc.cluster.local 198.19.0.10 2>&1",
    )
    .await;
    assert!(
        answer.contains("198.19.0.1"),
        "CoreDNS answers the kubernetes Service's name with its address: {answer}"
    );
    // No route off the machine from a pod either: only 198.18.0.0/15 through the bridge.
    let routes = node::sh(&admin, &ns.name, "probe", "ip route").await;
    // The pod's own subnet is there (the check read the table, not an empty answer) …
    assert!(
        routes.contains(node::POD_SUBNET),
        "the pod's routes name its subnet {}: {routes:?}",
        node::POD_SUBNET
    );
    // … and nothing leads off the machine.
    assert!(
        !routes.contains("default"),
        "no default route in a pod: {routes}"
    );
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn r084_exec_runs_in_the_container_not_on_this_machine() {
    let admin = admin().await;
    node::require(&admin).await;
    let (a, _h) = node::load_adapter().await;
    let app = id("node-exec");
    let ns = format!("pando-{app}");
    a.apply(
        &ctx(),
        &shell_plan(
            &app,
            &[(
                "web",
                "echo in-the-image > /tmp/marker && exec sleep 2147483647",
            )],
        ),
    )
    .await
    .expect("apply");
    let pod = app_pod(&admin, &ns, "web").await;
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    let repo = cluster::repo_root();
    let mut session = a
        .exec(
            &ctx(),
            &wref(&app, "web"),
            &ExecRequest {
                command: vec![
                    "sh".into(),
                    "-c".into(),
                    format!(
                        "hostname; cat /tmp/marker; test -e '{}' && echo this-machine || echo not-here",
                        repo.display()
                    ),
                ],
                stdin: false,
                tty: false,
                size: None,
            },
        )
        .await
        .expect("exec");
    let mut stdout = session
        .stdout()
        .await
        .expect("stdout call")
        .expect("stdout");
    let out =
        String::from_utf8_lossy(&stdout.read_to_end(1 << 20).await.expect("read")).to_string();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        vec![pod_name.as_str(), "in-the-image", "not-here"],
        "the command ran in the container: its hostname, its files, not this machine's"
    );

    // `run` too, to completion, its stdout streamed and a failure explained.
    let (writer, mut reader) = tokio::io::duplex(1 << 16);
    let script = format!(
        "hostname; cat /tmp/marker; test -e '{}' && echo this-machine || echo not-here; \
         echo from-the-container >&2; exit 4",
        repo.display()
    );
    let failed = a
        .run(
            &ctx(),
            &wref(&app, "web"),
            &RunRequest {
                command: vec!["sh".into(), "-c".into(), script],
                env: vec![],
            },
            writer,
        )
        .await;
    let mut out = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut reader, &mut out)
        .await
        .expect("run's stdout");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        vec![pod_name.as_str(), "in-the-image", "not-here"],
        "run ran in the container (R-423)"
    );
    match failed {
        Err(pando_host::CallError::Adapter(pando_host::types::Error::CommandFailed(f))) => {
            assert_eq!(
                (f.exit_code, f.stderr.as_str()),
                (4, "from-the-container\n")
            );
        }
        other => panic!("exit 4 is command-failed with its stderr: {other:?}"),
    }
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn r150_after_stop_logs_are_the_exited_pods_own_output() {
    let admin = admin().await;
    node::require(&admin).await;
    let (a, _h) = node::load_adapter().await;
    let app = id("node-logs");
    let ns = format!("pando-{app}");
    let line = format!("the last words of {app}");
    a.apply(
        &ctx(),
        &shell_plan(&app, &[("job", &format!("echo '{line}'; exit 3"))]),
    )
    .await
    .expect("apply");
    let pod = wait_phase(&ns, "job", "Failed").await;
    let code = pod
        .status
        .and_then(|s| s.container_statuses)
        .and_then(|c| c.into_iter().next())
        .and_then(|c| c.state)
        .and_then(|s| s.terminated)
        .map(|t| t.exit_code);
    assert_eq!(code, Some(3), "the container itself exited 3");
    a.stop(&ctx(), &pando_tests::plans::bundle(&app))
        .await
        .expect("stop");
    let mut log = a
        .logs(&ctx(), &wref(&app, "job"), &LogOptions::default())
        .await
        .expect("logs after stop");
    let text = String::from_utf8_lossy(&log.read_to_end(1 << 20).await.expect("read")).to_string();
    assert_eq!(text.trim_end(), line, "that pod's own output, and only it");
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn r023_r025_only_the_app_itself_and_pandos_server_reach_it_by_packets() {
    let admin = admin().await;
    node::require(&admin).await;
    let (a, _h) = node::load_adapter().await;
    let app = id("node-deny");
    let ns = format!("pando-{app}");
    a.apply(
        &ctx(),
        &shell_plan(&app, &[("web", SERVE), ("client", SLEEP)]),
    )
    .await
    .expect("apply");
    let web = app_pod(&admin, &ns, "web").await;
    app_pod(&admin, &ns, "client").await;
    let by_ip = format!("http://{}:8080/", node::ip(&web));
    let upstream = a
        .upstream(&ctx(), &wref(&app, "web"), 8080)
        .await
        .expect("upstream");
    let by_name = format!("http://{}:{}/", upstream.host, upstream.port);

    // The app's own workloads reach each other.
    node::eventually("client → web in the app", || {
        node::reaches(&admin, &ns, "client", &by_ip)
    })
    .await;

    // Pando's server, in Pando's namespace with Pando's label, reaches the upstream's name.
    node::ensure_namespace(&admin, "pando-system").await;
    let server = cluster::unique_name("pando-server");
    let other = cluster::unique_name("not-pando");
    node::run(
        &admin,
        "pando-system",
        node::shell_pod(&server, &[("app.kubernetes.io/name", "pando")], SLEEP),
    )
    .await;
    node::run(&admin, "pando-system", node::shell_pod(&other, &[], SLEEP)).await;
    node::eventually(&format!("Pando's server reaches {by_name}"), || {
        node::reaches(&admin, "pando-system", &server, &by_name)
    })
    .await;
    // The same namespace without Pando's label, another namespace: refused, by name and by IP.
    for url in [&by_name, &by_ip] {
        assert!(
            !node::reaches(&admin, "pando-system", &other, url).await,
            "a pod of Pando's namespace that is not Pando's server is refused at {url}"
        );
    }
    let stranger = cluster::create_test_namespace(&admin, "node-stranger")
        .await
        .expect("a namespace");
    node::run(
        &admin,
        &stranger.name,
        node::shell_pod("stranger", &[], SLEEP),
    )
    .await;
    for url in [&by_name, &by_ip] {
        assert!(
            !node::reaches(&admin, &stranger.name, "stranger", url).await,
            "a pod of another namespace is refused at {url}"
        );
    }
    let pods = Api::<Pod>::namespaced(admin.clone(), "pando-system");
    for name in [&server, &other] {
        let _ = pods.delete(name, &Default::default()).await;
    }
    stranger.delete().await.expect("cleanup");
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn o43_health_passes_where_networkpolicy_is_enforced() {
    let _canary = ka::canary_lock().await;
    let admin = admin().await;
    node::require(&admin).await;
    let (a, _h) = node::load_adapter().await;
    a.health_check(&ctx())
        .await
        .expect("on the real node the canary sees the policy enforced (O-43)");
}

/// The whole conformance suite on the real node, as docs/conformance.md's "Running it" runs it:
/// the grants the adapter ships with, `examples/kubernetes-config.yaml`, the node's busybox, the
/// outside host's two listeners for egress and the edge's node port on the node's address. Every
/// case runs for real and passes, none skipped, every declaration proven: C-INFO-03's canary,
/// C-LOGS-01 and C-STOP-01's workload that exits, C-VOL-01's provisioned volume, C-CAP-04's
/// restricted workload reaching its allowed listener and not the other (through the node's egress
/// gateway), C-CAP-02's edge answering a request through the node port.
#[tokio::test]
async fn every_conformance_case_runs_for_real_and_passes_on_the_real_node() {
    use pando_conformance::{EgressProbe, Options, Target};
    let admin = admin().await;
    node::require(&admin).await;
    let _canary = ka::canary_lock().await;
    // C-CAP-02 applies an edge, in the one edge namespace.
    let _edge = ka::edge_namespace_lock().await;
    let client = cluster::client(cluster::Identity::Pando)
        .await
        .expect("a client for the pando identity");
    let config = pando_tests::components::repo_yaml("examples/kubernetes-config.yaml");
    let target = Target {
        host: pando_host::Host::builder()
            .cache_dir(pando_tests::probe::shared_cache())
            .build()
            .expect("host"),
        component: ka::component(),
        load: pando_host::LoadOptions {
            grants: node::grants(),
            config: config.to_string(),
            kubernetes: Some(client),
            ..pando_host::LoadOptions::default()
        },
    };
    let options = Options {
        image: BUSYBOX.into(),
        egress_probe: Some(
            EgressProbe::new("allowed.outside.test:80", "denied.outside.test:80")
                .expect("the outside host's listeners"),
        ),
        edge_probe: Some(format!("198.18.0.1:{}", config["edge_http_node_port"])),
        ..Options::default()
    };
    let report = crate::conformance::run(&target, &options).await;
    crate::conformance::assert_every_case_passes(
        &report,
        "the Kubernetes adapter on the real node",
    );
    assert_eq!(
        report.verdict(),
        pando_conformance::Verdict::Proven,
        "every declaration proven: {}",
        report.summary()
    );
    // Each passed as declared, proven by what the workloads did (the run's nonces, the trial's
    // one socket, the restored bytes, the listeners reached and not, the edge's answer): none
    // checked only an `unsupported` answer.
    for id in [
        "C-CAP-02",
        "C-CAP-03",
        "C-CAP-04",
        "C-EXEC-01",
        "C-RUN-01",
        "C-LOGS-01",
        "C-VOL-01",
    ] {
        let case = report.case(id).unwrap_or_else(|| panic!("{id} ran"));
        assert!(
            case.claim.is_none(),
            "{id} is declared on the real node: {}",
            case.line()
        );
    }
}

/// A namespace of the test's own with a pod serving HTTP on 8080 and no policy: the control that
/// shows a refusal elsewhere is the policy's, not the network's.
async fn control(client: &Client, prefix: &str) -> (cluster::TestNamespace, String) {
    let ns = cluster::create_test_namespace(client, prefix)
        .await
        .expect("a namespace");
    let pod = node::run(client, &ns.name, node::shell_pod("control", &[], SERVE)).await;
    let ip = node::ip(&pod);
    (ns, ip)
}

#[tokio::test]
async fn r026_nothing_of_an_app_answers_the_outside() {
    let admin = admin().await;
    node::require(&admin).await;
    let (a, _h) = node::load_adapter().await;
    let app = id("node-r026");
    let ns = format!("pando-{app}");
    a.apply(&ctx(), &shell_plan(&app, &[("web", SERVE)]))
        .await
        .expect("apply");
    let web = app_pod(&admin, &ns, "web").await;
    let (control_ns, control_ip) = control(&admin, "node-r026-control").await;
    let control_url = format!("http://{control_ip}:8080/");
    node::eventually(
        "the outside host reaches a pod without a policy: the route is there",
        || async { node::outside_reaches(&control_url) },
    )
    .await;
    // And the app's server answers, from inside its own pod: unreachable below is the policy's.
    let web_name = web.metadata.name.clone().unwrap_or_default();
    node::eventually("the app's web server answers in its own pod", || {
        node::reaches(&admin, &ns, &web_name, "http://127.0.0.1:8080/")
    })
    .await;
    assert!(
        !node::outside_reaches(&format!("http://{}:8080/", node::ip(&web))),
        "nothing of the app answers the outside host (R-026)"
    );
    control_ns.delete().await.expect("cleanup");
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn egress_open_reaches_the_outside_and_never_the_cluster() {
    let admin = admin().await;
    node::require(&admin).await;
    let (a, _h) = node::load_adapter().await;
    let app = id("node-open");
    let ns = format!("pando-{app}");
    // The plan's egress is `open`.
    a.apply(&ctx(), &shell_plan(&app, &[("client", SLEEP)]))
        .await
        .expect("apply");
    app_pod(&admin, &ns, "client").await;
    let (control_ns, control_ip) = control(&admin, "node-open-control").await;

    node::eventually(
        "an open app reaches the outside host by name (cluster DNS, then out)",
        || node::reaches(&admin, &ns, "client", "http://allowed.outside.test/"),
    )
    .await;
    let outside_ip = format!("http://{}/", node::OUTSIDE_IP);
    node::eventually("and by address", || {
        node::reaches(&admin, &ns, "client", &outside_ip)
    })
    .await;
    // The cluster is not "the outside": another namespace's pod, the API server's Service.
    let control_url = format!("http://{control_ip}:8080/");
    node::eventually("the control pod serves", || {
        node::reaches(&admin, &control_ns.name, "control", &control_url)
    })
    .await;
    assert!(
        !node::reaches(&admin, &ns, "client", &control_url).await,
        "an open app never reaches another namespace's pod"
    );
    let api = node::KUBERNETES_SERVICE;
    node::eventually(
        "a pod without a policy connects to the API server's Service",
        || node::connects(&admin, &control_ns.name, "control", api.0, api.1),
    )
    .await;
    assert!(
        !node::connects(&admin, &ns, "client", api.0, api.1).await,
        "an open app never connects to the API server"
    );
    control_ns.delete().await.expect("cleanup");
    cleanup(&a, &app).await;
}

/// R-097 on the real node: a trial's sockets are read from its pod's own network namespace (on
/// KWOK the test writes the tables), nothing reaches it from outside its namespace, and its
/// namespace goes at the end.
#[tokio::test]
async fn r097_a_trial_reports_exactly_its_listening_sockets_and_is_unreachable() {
    use pando_host::types::{EgressPolicy, NetworkRules, Protocol, TrialRequest};
    use std::collections::BTreeSet;
    let admin = admin().await;
    node::require(&admin).await;
    let (a, _h) = node::load_adapter().await;
    let app = id("node-trial");
    // The project's test server (`tests/server`), listening on exactly two ports.
    let mut workload = pando_tests::plans::workload("web");
    workload.image = node::TEST_SERVER.into();
    workload.command = vec![
        "/usr/local/bin/pando-test-server".into(),
        "--listen".into(),
        "8080".into(),
        "--listen".into(),
        "9090".into(),
    ];
    let req = TrialRequest {
        bundle: app.clone(),
        workload,
        network: NetworkRules {
            egress: EgressPolicy::None,
        },
        pull_credentials: vec![],
        duration_ms: 15_000,
    };
    let trial = {
        let a = a.clone();
        tokio::spawn(async move { a.trial(&ctx(), &req).await })
    };
    // Its namespace, once its pod runs.
    let namespaces = Api::<Namespace>::all(admin.clone());
    let (trial_ns, pod) = node::running_trial(&admin, &app).await;
    let ip = node::ip(&pod);
    let (control_ns, control_ip) = control(&admin, "node-trial-control").await;
    // The positive controls: the control pod, in a namespace without a policy, is reached by
    // the outside host and by itself, so both checks below can answer "reached".
    let control_url = format!("http://{control_ip}:8080/");
    node::eventually("the outside host reaches the control pod", || async {
        node::outside_reaches(&control_url)
    })
    .await;
    node::eventually("the control pod reaches itself", || {
        node::reaches(&admin, &control_ns.name, "control", &control_url)
    })
    .await;
    let url = format!("http://{ip}:8080/");
    assert!(
        !node::reaches(&admin, &control_ns.name, "control", &url).await,
        "a pod of another namespace does not reach the trial (R-097)"
    );
    assert!(!node::outside_reaches(&url), "nor does the outside host");

    let result = trial.await.expect("join").expect("trial");
    let listening: BTreeSet<(u16, bool)> = result
        .listening
        .iter()
        .map(|l| (l.port, l.protocol == Protocol::Udp))
        .collect();
    assert_eq!(
        listening,
        [(8080, false), (9090, false)].into_iter().collect(),
        "exactly the sockets the workload listens on, read from its own namespace"
    );
    let left = namespaces.get_opt(&trial_ns).await.expect("namespace");
    assert!(
        left.is_none_or(|n| n.metadata.deletion_timestamp.is_some()),
        "the trial's namespace goes at the end"
    );
    control_ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn a_replaced_pod_that_ignores_sigterm_is_waited_for_its_whole_grace() {
    let admin = admin().await;
    node::require(&admin).await;
    let (a, _h) = node::load_adapter().await;
    let app = id("node-grace");
    let ns = format!("pando-{app}");
    // PID 1 ignores SIGTERM: the kubelet kills it only at the end of the pod's grace
    // period (Kubernetes' default, 30 s: the plan has no field for it).
    let stubborn = "trap '' TERM; while true; do sleep 1; done";
    a.apply(&ctx(), &shell_plan(&app, &[("web", stubborn)]))
        .await
        .expect("apply");
    let first = app_pod(&admin, &ns, "web").await;
    // Another plan for the workload: its pod is replaced, and the successor waits for the
    // old one to be gone, however long its grace.
    let started = std::time::Instant::now();
    a.apply(
        &ctx(),
        &shell_plan(&app, &[("web", &format!("{stubborn} # v2"))]),
    )
    .await
    .expect("the redeploy waits out the old pod's grace, not a fixed 30 s");
    let took = started.elapsed();
    assert!(
        took >= std::time::Duration::from_secs(25),
        "the old pod ignored SIGTERM and took its grace: {took:?}"
    );
    let second = app_pod(&admin, &ns, "web").await;
    assert_ne!(ka::uid(&second), ka::uid(&first), "a new pod");
    cleanup(&a, &app).await;
}
