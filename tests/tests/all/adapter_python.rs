//! The Python Kubernetes adapter (`adapters/python-kubernetes`, a
//! componentize-py component) in the host, against the real test cluster
//! (KWOK runs the pods), as the `pando` identity with the adapter's own
//! grants: what it declares, its configuration errors, apply, observe,
//! upstream, logs, stop, destroy, volumes and capacity; that it agrees with
//! the Rust Kubernetes adapter on the objects of an app and on what it
//! reads; and that it passes the conformance suite.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use pando_conformance::{Environment, Options, Target};
use pando_host::types::WorkloadRef;
use pando_host::types::{
    BundlePlan, DestroyOptions, EgressPolicy, IsolationClass, LogOptions, VolumeRequest,
    VolumeSpec, WorkloadPhase,
};
use pando_host::{Adapter, CallError, Host, LoadError, LoadOptions};
use pando_tests::kubernetes_adapter::{
    self as ka, admin, cleanup, credentials, ctx, exit_pod, id, uid, versions, wait_phase,
};
use pando_tests::plans::{bundle, plan, wref};
use pando_tests::python_adapter::{self as py, audit_mark, requests};
use pando_tests::{cluster, probe};

fn all_of_the_log() -> LogOptions {
    LogOptions {
        follow: false,
        tail_lines: None,
        since_seconds: None,
        timestamps: false,
        limit_bytes: None,
    }
}

/// The Rust Kubernetes adapter, loaded without installing its tests' audit
/// counter (this binary counts with the Python adapter's).
async fn rust_adapter() -> (Adapter, Host) {
    probe::load_as_pando(&ka::component(), ka::grants(), ka::CONFIG).await
}

/// The plan with a 1 GiB volume `data` that no workload mounts: its claim
/// is made, and the pods still run (the test cluster provisions no volumes,
/// so a pod mounting an unbound claim would never be scheduled).
fn with_claim(mut p: BundlePlan) -> BundlePlan {
    p.volumes.push(VolumeSpec {
        name: "data".into(),
        size_bytes: Some(1 << 30),
    });
    p
}

fn assert_unsupported<T: std::fmt::Debug>(call: &str, result: Result<T, CallError>) {
    let err = result.expect_err(call);
    assert_eq!(err.kind(), "unsupported", "{call}: {err}");
    assert!(err.to_string().contains(call), "{call}: {err}");
}

#[tokio::test]
async fn it_declares_what_it_offers_and_refuses_the_rest_as_unsupported() {
    let started = Instant::now();
    let (a, _h) = py::load().await;
    eprintln!(
        "loading the Python adapter took {:?} (compile cache: {:?})",
        started.elapsed(),
        a.cache_outcome()
    );
    let info = a.kind_info();
    assert_eq!(info.kind, "kubernetes-py");
    let schema: serde_json::Value =
        serde_json::from_str(&info.config_schema).expect("the schema is JSON");
    assert_eq!(
        schema["required"],
        serde_json::json!(["pod_cidr", "service_cidr"])
    );
    assert_eq!(a.shape().world.name(), "kubernetes-adapter");
    // CPython's runtime brings the WASI 0.2 set wasi-libc links (sockets
    // included, which the host lends without a network); nothing else.
    for import in &a.shape().imports {
        assert!(
            import.starts_with("pando:runtime/")
                || ["io", "clocks", "random", "cli", "filesystem", "sockets"]
                    .iter()
                    .any(|p| import.starts_with(&format!("wasi:{p}/"))),
            "imports only the contract and WASI 0.2: {import}"
        );
    }
    assert!(
        a.shape()
            .imports
            .iter()
            .any(|i| i.starts_with("pando:runtime/kubernetes")),
        "it reaches the cluster through the host's import"
    );

    let caps = a.capabilities(&ctx()).await.expect("capabilities");
    assert_eq!(caps.isolation, IsolationClass::SharedKernel);
    assert!(caps.logs);
    for (name, flag) in [
        ("exec", caps.exec),
        ("run", caps.run),
        ("trial", caps.trial),
        ("write_observation", caps.write_observation),
        ("egress_restriction", caps.egress_restriction),
        ("image_import", caps.image_import),
        ("volume_snapshot", caps.volume_snapshot),
        ("edge", caps.edge),
    ] {
        assert!(!flag, "{name} is not offered");
    }
    a.health_check(&ctx()).await.expect("the API answers");
    assert!(
        a.has_image(&ctx(), "busybox:1.36")
            .await
            .expect("has_image")
    );

    assert_unsupported("edges", a.edges(&ctx()).await);
    assert_unsupported("observe-edge", a.observe_edge(&ctx(), "edge").await);
    assert_unsupported(
        "snapshot-volume",
        a.snapshot_volume(
            &ctx(),
            &pando_host::types::VolumeHandle {
                bundle: "x".into(),
                name: "data".into(),
                location: String::new(),
            },
            tokio::io::sink(),
        )
        .await,
    );
    assert_unsupported(
        "exec",
        a.exec(
            &ctx(),
            &wref("x", "web"),
            &pando_host::types::ExecRequest {
                command: vec!["true".into()],
                stdin: false,
                tty: false,
                size: None,
            },
        )
        .await
        .map(|_| ()),
    );
    assert_unsupported(
        "import-image",
        a.import_image(&ctx(), tokio::io::empty()).await,
    );
    assert_unsupported(
        "run",
        a.run(
            &ctx(),
            &wref("x", "web"),
            &pando_host::types::RunRequest {
                command: vec!["true".into()],
                env: vec![],
            },
            tokio::io::sink(),
        )
        .await,
    );
    // An adapter error keeps the instance: nothing above was a trap.
    assert!(a.quarantine().is_none());
}

/// One schema file for both adapters (`adapter-kubernetes/src/config/schema.json`):
/// every field the Python adapter reads is described as the Rust adapter
/// describes it, with the same default, except where the field means
/// something else there (`HERE` in `kubeadapter/schema.py`).
#[tokio::test]
async fn its_configuration_schema_is_the_kubernetes_adapters_for_every_field_it_reads() {
    let (python, _h) = py::load().await;
    let (rust, _h2) = rust_adapter().await;
    let read = |a: &Adapter| -> serde_json::Value {
        serde_json::from_str(&a.kind_info().config_schema).expect("the schema is JSON")
    };
    let (py_schema, rust_schema) = (read(&python), read(&rust));
    assert_eq!(py_schema["required"], rust_schema["required"]);
    assert_eq!(py_schema["additionalProperties"], false);
    let py_fields = py_schema["properties"].as_object().expect("properties");
    assert!(py_fields.len() >= 12, "the fields it reads: {py_fields:?}");
    let mut differ = Vec::new();
    for (field, here) in py_fields {
        let there = &rust_schema["properties"][field];
        assert!(there.is_object(), "`{field}` is a Kubernetes adapter field");
        let required = rust_schema["required"]
            .as_array()
            .is_some_and(|r| r.iter().any(|f| f == field.as_str()));
        assert_eq!(
            here.get("default").is_some(),
            !required,
            "`{field}` states its default unless it is required"
        );
        let keys: std::collections::BTreeSet<&String> = here
            .as_object()
            .into_iter()
            .flatten()
            .chain(there.as_object().into_iter().flatten())
            .map(|(k, _)| k)
            .collect();
        for key in keys {
            if here.get(key) != there.get(key) {
                differ.push(format!("{field}.{key}"));
            }
        }
    }
    assert_eq!(
        differ,
        ["api_server_cidr.description"],
        "only what means something else in the Python adapter differs"
    );
}

#[tokio::test]
async fn configure_refuses_what_it_cannot_use_naming_the_field() {
    for (config, field) in [
        (r#"{"service_cidr": "198.19.0.0/17"}"#, "pod_cidr"),
        (
            r#"{"pod_cidr": "198.19.128.0/33", "service_cidr": "198.19.0.0/17"}"#,
            "pod_cidr",
        ),
        (
            r#"{"pod_cidr": "198.19.128.0/17", "service_cidr": 12}"#,
            "service_cidr",
        ),
        (
            r#"{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17", "cluster_domain": "Cluster..local"}"#,
            "cluster_domain",
        ),
        (
            r#"{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17", "node_selector": "pool"}"#,
            "node_selector",
        ),
        (
            r#"{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17", "helper_image": "busybox"}"#,
            "helper_image",
        ),
        (
            r#"{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17", "bogus": 1}"#,
            "bogus",
        ),
    ] {
        let err = py::load_error(config).await;
        let LoadError::Config { error, .. } = &err else {
            panic!("{config}: not a configuration error: {err}");
        };
        assert_eq!(error.kind(), "invalid", "{config}: {err}");
        assert!(
            err.to_string()
                .contains(&format!("configuration field `{field}`")),
            "{config}: names `{field}`: {err}"
        );
    }
    let err = py::load_error("[1, 2]").await;
    assert!(err.to_string().contains("JSON object"), "{err}");
}

#[tokio::test]
async fn apply_converges_and_a_satisfied_plan_writes_nothing() {
    let (a, _h) = py::load().await;
    let app = id("py-apply");
    let ns = format!("pando-{app}");
    let mut p = plan(&app, &["web"]);
    p.workloads[0].digest = Some("sha256:1111".into());
    let handle = a.apply(&ctx(), &p).await.expect("apply");
    assert_eq!(handle.id, app);
    assert_eq!(handle.location, format!("namespace/{ns}"));
    let pod = wait_phase(&ns, "web", "Running").await;

    let c = admin().await;
    let n = Api::<Namespace>::all(c.clone()).get(&ns).await.expect("ns");
    let labels = n.metadata.labels.unwrap_or_default();
    assert_eq!(labels["app.kubernetes.io/managed-by"], "pando");
    assert_eq!(labels["pando.dev/app"], app);

    let np = Api::<NetworkPolicy>::namespaced(c.clone(), &ns)
        .get("pando-default-deny")
        .await
        .expect("the default-deny policy (R-023, R-025)");
    let spec = np.spec.expect("spec");
    assert_eq!(
        spec.policy_types.unwrap_or_default(),
        vec!["Ingress".to_string(), "Egress".to_string()]
    );
    let ingress = serde_json::to_string(&spec.ingress).expect("json");
    assert!(ingress.contains("pando-system"), "{ingress}");
    let egress = serde_json::to_string(&spec.egress).expect("json");
    for needle in [
        "kube-system",
        "0.0.0.0/0",
        "198.19.128.0/17",
        "198.19.0.0/17",
    ] {
        assert!(egress.contains(needle), "egress has {needle}: {egress}");
    }

    let svc = Api::<Service>::namespaced(c.clone(), &ns)
        .get("web")
        .await
        .expect("the workload's Service");
    let svc_spec = svc.spec.expect("spec");
    assert_eq!(svc_spec.cluster_ip.as_deref(), Some("None"), "headless");
    assert_eq!(
        svc_spec.selector.unwrap_or_default()["pando.dev/workload"],
        "web"
    );

    assert!(
        pod.metadata
            .owner_references
            .as_deref()
            .unwrap_or_default()
            .is_empty()
    );
    let pod_labels = pod.metadata.labels.clone().unwrap_or_default();
    assert_eq!(pod_labels["pando.dev/app"], app);
    assert_eq!(pod_labels["pando.dev/workload"], "web");
    assert_eq!(
        pod.metadata.annotations.clone().unwrap_or_default()["pando.dev/digest"],
        "sha256:1111"
    );
    let pod_spec = pod.spec.clone().expect("spec");
    assert_eq!(pod_spec.restart_policy.as_deref(), Some("Never"), "R-151");
    assert_eq!(pod_spec.automount_service_account_token, Some(false));
    assert_eq!(
        pod_spec.containers[0].image.as_deref(),
        Some("busybox:1.36@sha256:1111")
    );

    // O-41: apply again; nothing is written.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = versions(&c, &ns).await;
    let mark = audit_mark();
    a.apply(&ctx(), &p).await.expect("apply again");
    let sent = requests(mark, &ns);
    let after = versions(&c, &ns).await;
    eprintln!(
        "a satisfied apply sent {} requests to its namespace: {sent:?}",
        sent.len()
    );
    assert_eq!(before, after, "no object changed");
    assert!(!sent.is_empty(), "the audit saw the apply's reads");
    assert!(sent.iter().all(|r| !r.is_write()), "no write: {sent:?}");
    let same = wait_phase(&ns, "web", "Running").await;
    assert_eq!(uid(&same), uid(&pod), "the running pod is kept");

    // With credentials, the pull Secret is the one write.
    p.pull_credentials = credentials();
    a.apply(&ctx(), &p).await.expect("apply with credentials");
    let replaced = wait_phase(&ns, "web", "Running").await;
    assert_ne!(uid(&replaced), uid(&pod), "a changed pod spec is a new pod");
    let mark = audit_mark();
    a.apply(&ctx(), &p)
        .await
        .expect("apply with credentials again");
    let writes: Vec<_> = requests(mark, &ns)
        .into_iter()
        .filter(|r| r.is_write())
        .collect();
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(writes[0].resource, "secrets");
    assert_eq!(writes[0].name, "pando-pull");
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn refused_plans_are_typed_and_write_nothing() {
    let (a, _h) = py::load().await;
    let app = id("py-bad");
    let mark = audit_mark();
    let twice = plan(&app, &["web", "web"]);
    let mut ghost = plan(&app, &["web", "db"]);
    ghost.workloads[1]
        .mounts
        .push(pando_host::types::VolumeMount {
            volume: "ghost".into(),
            path: "/ghost".into(),
            read_only: false,
        });
    let bad_name = plan(&app, &["Web"]);
    let mut bad_id = plan(&app, &["web"]);
    bad_id.id = "Not_An_App!".into();
    let mut dns = plan(&app, &["web"]);
    dns.network.egress = EgressPolicy::Restricted(vec![pando_host::types::EgressRule {
        destination: "api.example.com".into(),
        ports: vec![443],
    }]);
    let mut garbage = plan(&app, &["web"]);
    garbage.network.egress = EgressPolicy::Restricted(vec![pando_host::types::EgressRule {
        destination: "not a host!".into(),
        ports: vec![],
    }]);
    for (p, kind, words) in [
        (&twice, "invalid", "names workload `web` twice"),
        (&ghost, "invalid", "volume `ghost`"),
        (&bad_name, "invalid", "workload name `Web`"),
        (&bad_id, "invalid", "app id `Not_An_App!`"),
        (&dns, "unsupported", "gateway"),
        (&garbage, "invalid", "neither a CIDR nor a host name"),
    ] {
        let err = a.apply(&ctx(), p).await.expect_err(words);
        assert_eq!(err.kind(), kind, "{err}");
        assert!(err.to_string().contains(words), "{words}: {err}");
    }
    let sent = requests(mark, &format!("pando-{app}"));
    assert!(sent.is_empty(), "refused before any request: {sent:?}");
    let n = Api::<Namespace>::all(admin().await)
        .get_opt(&format!("pando-{app}"))
        .await
        .expect("reading");
    assert!(n.is_none(), "nothing written");
}

#[tokio::test]
async fn observe_reports_the_workload_and_never_remediates() {
    let (a, _h) = py::load().await;
    let app = id("py-obs");
    let ns = format!("pando-{app}");
    let missing = a.observe(&ctx(), &bundle(&app)).await.expect("observe");
    assert!(!missing.exists);
    assert!(missing.workloads.is_empty());

    let mut p = plan(&app, &["web"]);
    p.workloads[0].digest = Some("sha256:cafe".into());
    a.apply(&ctx(), &p).await.expect("apply");
    wait_phase(&ns, "web", "Running").await;
    let seen = a.observe(&ctx(), &bundle(&app)).await.expect("observe");
    assert!(seen.exists);
    assert_eq!(seen.workloads.len(), 1);
    let web = &seen.workloads[0];
    assert_eq!(web.name, "web");
    assert_eq!(web.phase, WorkloadPhase::Running);
    assert_eq!(web.digest.as_deref(), Some("sha256:cafe"));
    let started = web.started_at_ms.expect("a start time");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64;
    assert!(
        started <= now_ms && now_ms - started < 600_000,
        "started {started}, now {now_ms}"
    );

    let failed = exit_pod(&ns, "web", 1).await;
    let mark = audit_mark();
    let seen = a.observe(&ctx(), &bundle(&app)).await.expect("observe");
    let sent = requests(mark, &ns);
    eprintln!("observe sent {} requests: {sent:?}", sent.len());
    assert!(sent.iter().all(|r| !r.is_write()), "observe only reads");
    let web = &seen.workloads[0];
    assert_eq!(web.phase, WorkloadPhase::Failed);
    assert_eq!(web.exit_code, Some(1));
    assert!(web.finished_at_ms.is_some());
    let pod = Api::<Pod>::namespaced(admin().await, &ns)
        .get("web")
        .await
        .expect("the failed pod stays");
    assert_eq!(uid(&pod), uid(&failed), "never remediates");

    // A workload whose pod is gone is missing.
    Api::<Pod>::namespaced(admin().await, &ns)
        .delete("web", &DeleteParams::default().grace_period(0))
        .await
        .expect("deleting");
    let deadline = tokio::time::Instant::now() + ka::WAIT;
    loop {
        let seen = a.observe(&ctx(), &bundle(&app)).await.expect("observe");
        if seen.workloads[0].phase == WorkloadPhase::Missing {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{seen:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn r023_upstream_is_computed_as_the_rust_adapter_computes_it() {
    let (a, _h) = py::load().await;
    let (rust, _h2) = rust_adapter().await;
    let sent_before = a.kubernetes_requests().map(|c| c.total());
    for (app, workload, port) in [
        ("shop", "web", 8080),
        ("a", "db", 5432),
        (&"a".repeat(57)[..], "x", 1),
    ] {
        let py_up = a
            .upstream(&ctx(), &wref(app, workload), port)
            .await
            .expect("upstream");
        let rust_up = rust
            .upstream(&ctx(), &wref(app, workload), port)
            .await
            .expect("rust upstream");
        assert_eq!(py_up, rust_up);
    }
    let up = a
        .upstream(&ctx(), &wref("shop", "web"), 8080)
        .await
        .expect("upstream");
    assert_eq!(up.host, "web.pando-shop.svc.cluster.local");
    assert_eq!(up.port, 8080);
    for (app, workload, port, words) in [
        ("Shop", "web", 80, "app id `Shop`"),
        ("shop", "web.x", 80, "workload name `web.x`"),
        (&"a".repeat(58)[..], "web", 80, "app id"),
        ("shop", "web", 0, "port 0"),
    ] {
        let err = a
            .upstream(&ctx(), &wref(app, workload), port)
            .await
            .expect_err("refused");
        let rust_err = rust
            .upstream(&ctx(), &wref(app, workload), port)
            .await
            .expect_err("refused by the Rust adapter");
        assert_eq!(err.kind(), "invalid", "{err}");
        assert_eq!(err.to_string(), rust_err.to_string());
        assert!(err.to_string().contains(words), "{err}");
    }
    let sent_after = a.kubernetes_requests().map(|c| c.total());
    assert_eq!(sent_before, sent_after, "upstream sends no request");
}

#[tokio::test]
async fn logs_are_the_newest_pods_log_a_finished_one_included() {
    let (a, _h) = py::load_with(
        r#"{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17",
            "node_selector": "pando.dev/pool=apps"}"#,
    )
    .await;
    let app = id("py-logs");
    let ns = format!("pando-{app}");
    a.apply(&ctx(), &plan(&app, &["web"])).await.expect("apply");
    let pod = wait_phase(&ns, "web", "Running").await;
    let node = pod.spec.and_then(|s| s.node_name).unwrap_or_default();
    assert!(
        node == "kwok-node-0" || node == "kwok-node-1",
        "node_selector places the pod: {node}"
    );
    let expected = cluster::expected_pod_log().expect("expected log");
    let mark = audit_mark();
    let mut log = a
        .logs(&ctx(), &wref(&app, "web"), &all_of_the_log())
        .await
        .expect("logs");
    let text = log.read_to_end(1 << 20).await.expect("read");
    assert_eq!(String::from_utf8_lossy(&text), expected);
    // KWOK serves one file as every pod's log: the host's audit says which pod was read.
    assert_eq!(ka::log_reads(mark, &ns), ["web"], "the workload's pod");

    exit_pod(&ns, "web", 1).await;
    let mark = audit_mark();
    let mut log = a
        .logs(&ctx(), &wref(&app, "web"), &all_of_the_log())
        .await
        .expect("the crash's log (R-150)");
    let text = log.read_to_end(1 << 20).await.expect("read");
    assert_eq!(String::from_utf8_lossy(&text), expected);
    assert_eq!(ka::log_reads(mark, &ns), ["web"], "the finished pod's own");

    let err = a
        .logs(&ctx(), &wref(&app, "ghost"), &all_of_the_log())
        .await
        .expect_err("no pod");
    assert_eq!(err.kind(), "not-found", "{err}");
    assert!(err.to_string().contains("ghost"), "{err}");
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn r150_stop_keeps_finished_pods_and_r204_destroy_removes_the_app() {
    let (a, _h) = py::load().await;
    let app = id("py-stop");
    let ns = format!("pando-{app}");
    let p = plan(&app, &["web"]);
    a.apply(&ctx(), &p).await.expect("apply");
    let first = wait_phase(&ns, "web", "Running").await;

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
    let services = Api::<Service>::namespaced(c.clone(), &ns);
    assert!(
        services.get_opt("web").await.expect("svc").is_some(),
        "stop keeps the Service"
    );

    // Apply starts it again; a finished pod survives stop (R-150).
    a.apply(&ctx(), &p).await.expect("apply after stop");
    let second = wait_phase(&ns, "web", "Running").await;
    assert_ne!(uid(&second), uid(&first));
    let finished = exit_pod(&ns, "web", 0).await;
    a.stop(&ctx(), &bundle(&app)).await.expect("stop again");
    let kept = pods.get("web").await.expect("the finished pod stays");
    assert_eq!(uid(&kept), uid(&finished));
    // Only apply starts an exited workload again (R-151).
    a.apply(&ctx(), &p).await.expect("apply after the exit");
    let third = wait_phase(&ns, "web", "Running").await;
    assert_ne!(uid(&third), uid(&finished), "the exited pod is replaced");

    // Destroy keeping volumes: pods and Services go, the namespace and its
    // default-deny policy stay.
    a.destroy(&ctx(), &bundle(&app), DestroyOptions { keep_volumes: true })
        .await
        .expect("destroy");
    let lp = ListParams::default();
    let deadline = tokio::time::Instant::now() + ka::WAIT;
    while !pods.list(&lp).await.expect("pods").items.is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "the pods go");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(services.list(&lp).await.expect("svcs").items.is_empty());
    assert!(
        Api::<NetworkPolicy>::namespaced(c.clone(), &ns)
            .get_opt("pando-default-deny")
            .await
            .expect("np")
            .is_some()
    );
    let namespaces = Api::<Namespace>::all(c.clone());
    assert!(namespaces.get_opt(&ns).await.expect("ns").is_some());

    // Without keep-volumes the namespace goes; destroying again is fine.
    a.destroy(
        &ctx(),
        &bundle(&app),
        DestroyOptions {
            keep_volumes: false,
        },
    )
    .await
    .expect("destroy all");
    let n = namespaces.get_opt(&ns).await.expect("ns");
    assert!(
        n.is_none_or(|n| n.metadata.deletion_timestamp.is_some()),
        "the namespace goes"
    );
    a.destroy(
        &ctx(),
        &bundle(&format!("{app}-never")),
        DestroyOptions {
            keep_volumes: false,
        },
    )
    .await
    .expect("an app already gone is not an error");
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn the_rust_and_python_adapters_make_the_same_objects_but_the_app_binding_and_read_them_alike()
 {
    let (a, _h) = py::load().await;
    let (rust, _h2) = rust_adapter().await;
    let c = admin().await;
    for python_first in [true, false] {
        let app = id(if python_first { "py-same" } else { "py-same-r" });
        let ns = format!("pando-{app}");
        let mut p = with_claim(plan(&app, &["web", "db"]));
        p.workloads[0].digest = Some("sha256:abcd".into());
        p.workloads[0].command = vec!["sh".into(), "-c".into()];
        p.workloads[0].args = vec!["echo héllo; sleep 3600".into()];
        p.workloads[0].env = vec![pando_host::types::EnvVar {
            name: "MODE".into(),
            value: "prod \"quoted\"\n".into(),
        }];
        p.network.egress = EgressPolicy::Restricted(vec![pando_host::types::EgressRule {
            destination: "192.0.2.7/24".into(),
            ports: vec![443],
        }]);
        let (first, second) = if python_first {
            (&a, &rust)
        } else {
            (&rust, &a)
        };
        first.apply(&ctx(), &p).await.expect("first apply");
        wait_phase(&ns, "web", "Running").await;
        wait_phase(&ns, "db", "Running").await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let before = versions(&c, &ns).await;
        second
            .apply(&ctx(), &p)
            .await
            .expect("the other adapter's apply");
        let after = versions(&c, &ns).await;
        // Every kind both write, RoleBindings included. The one object only the Rust adapter
        // makes is Pando's app binding (`pando-app`: the Python adapter refuses `app_role` and
        // `service_account` as not its features): the Rust adapter adds it when second, and
        // the Python adapter leaves the Rust adapter's alone.
        let app_binding = "rolebinding/pando-app";
        let mut expected = before.clone();
        if python_first {
            assert!(
                !before.contains_key(app_binding),
                "the Python adapter makes no app binding: {before:?}"
            );
            let made = after
                .get(app_binding)
                .unwrap_or_else(|| panic!("the Rust adapter makes its app binding: {after:?}"));
            expected.insert(app_binding.into(), made.clone());
        }
        assert_eq!(
            after, expected,
            "the other adapter finds every object satisfied (python first: {python_first})"
        );
        let seen_py = a.observe(&ctx(), &bundle(&app)).await.expect("observe");
        let seen_rust = rust
            .observe(&ctx(), &bundle(&app))
            .await
            .expect("rust observe");
        assert_eq!(seen_py, seen_rust, "both observe the same");
        let usage_py = a.usage(&ctx(), &bundle(&app)).await.expect("usage");
        let usage_rust = rust.usage(&ctx(), &bundle(&app)).await.expect("rust usage");
        assert_eq!(usage_py, usage_rust, "both count the same usage");
        assert_eq!(usage_py.workloads.len(), 2);
        assert_eq!(usage_py.volume_bytes, 1 << 30);
        cleanup(&a, &app).await;
    }
}

#[tokio::test]
async fn r243_r242_capacity_and_in_use_are_counted_as_the_rust_adapter_counts() {
    let (a, _h) = py::load().await;
    let (rust, _h2) = rust_adapter().await;
    let app = id("py-cap");
    let ns = format!("pando-{app}");
    a.apply(&ctx(), &with_claim(plan(&app, &["web"])))
        .await
        .expect("apply");
    wait_phase(&ns, "web", "Running").await;
    let mark = audit_mark();
    // Other tests start and stop pods meanwhile: read both until a pair
    // agrees, which a correct port does as soon as nothing moves between
    // the two reads.
    let mut last = None;
    for _ in 0..10 {
        let py_cap = a.capacity(&ctx()).await.expect("capacity");
        let rust_cap = rust.capacity(&ctx()).await.expect("rust capacity");
        let py_fit = a.largest_fit_for(&ctx(), &app).await.expect("fit");
        let rust_fit = rust.largest_fit_for(&ctx(), &app).await.expect("rust fit");
        if py_cap == rust_cap && py_fit == rust_fit {
            last = None;
            assert!(py_cap.nodes >= 1);
            assert!(py_cap.largest_fit.is_some());
            assert!(py_fit.is_some());
            break;
        }
        last = Some((py_cap, rust_cap, py_fit, rust_fit));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(last.is_none(), "capacity differs: {last:?}");
    let in_use = a.in_use(&ctx()).await.expect("in-use");
    assert!(in_use.bundles.contains(&app), "{in_use:?}");
    assert!(
        in_use
            .volumes
            .iter()
            .any(|v| v.bundle == app && v.name == "data" && v.location == format!("{ns}/data"))
    );
    assert!(in_use.requested.cpu_millis >= 100);
    let writes: Vec<_> = requests(mark, &ns)
        .into_iter()
        .filter(|r| r.is_write())
        .collect();
    assert!(
        writes.is_empty(),
        "reading capacity writes nothing: {writes:?}"
    );

    // A volume of its own: made, found, and destroyed with its claim.
    let handle = a
        .create_volume(
            &ctx(),
            &VolumeRequest {
                bundle: app.clone(),
                name: "cache".into(),
                size_bytes: Some(1 << 20),
            },
        )
        .await
        .expect("create_volume");
    assert_eq!(handle.location, format!("{ns}/cache"));
    let err = a
        .create_volume(
            &ctx(),
            &VolumeRequest {
                bundle: app.clone(),
                name: "Not_A_Volume!".into(),
                size_bytes: None,
            },
        )
        .await
        .expect_err("a bad name");
    assert_eq!(err.kind(), "invalid", "{err}");
    let usage = a.usage(&ctx(), &bundle(&app)).await.expect("usage");
    assert_eq!(usage.volume_bytes, (1 << 30) + (1 << 20));
    a.destroy_volume(&ctx(), &handle)
        .await
        .expect("destroy_volume");
    a.destroy_volume(&ctx(), &handle)
        .await
        .expect("destroying it again is not an error");
    cleanup(&a, &app).await;
}

/// KWOK runs no containers: the suite's finishing workload is ended the way
/// the test cluster ends pods (`pando.test/exit-code`, a KWOK stage of
/// `scripts/cluster`), named as this adapter names things (namespace
/// `pando-<app>`, the pod as the workload).
struct Kwok;

impl Environment for Kwok {
    fn health_unknowable(&self) -> Option<String> {
        Some(
            "KWOK's pods have no network, so no canary can show NetworkPolicy enforced (O-43)"
                .into(),
        )
    }

    fn finish_workload<'a>(
        &'a self,
        workload: &'a WorkloadRef,
        code: i32,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let pods: Api<Pod> =
                Api::namespaced(admin().await, &format!("pando-{}", workload.bundle));
            let patch = serde_json::json!({
                "metadata": { "annotations": { cluster::EXIT_CODE_ANNOTATION: code.to_string() } }
            });
            pods.patch(
                &workload.workload,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
        })
    }
}

#[tokio::test]
async fn it_passes_the_conformance_suite() {
    let client = cluster::client(cluster::Identity::Pando)
        .await
        .expect("a client for the pando identity");
    let target = Target {
        host: Host::builder()
            .cache_dir(probe::shared_cache())
            .build()
            .expect("host builds"),
        component: py::component(),
        load: LoadOptions {
            grants: py::grants(),
            config: py::CONFIG.into(),
            kubernetes: Some(client),
            ..LoadOptions::default()
        },
    };
    let options = Options {
        environment: Some(Arc::new(Kwok)),
        ..Options::default()
    };
    let report = crate::conformance::run(&target, &options).await;
    crate::conformance::assert_every_case_passes(&report, "the Python adapter");
}
