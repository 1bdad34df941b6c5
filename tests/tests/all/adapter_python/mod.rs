//! The Python Kubernetes adapter (`adapters/python-kubernetes`, a
//! componentize-py component) in the host, against the real test cluster,
//! as the `pando` identity with the adapter's own grants: what it declares,
//! its configuration errors, apply, observe, upstream, logs, stop, destroy,
//! volumes and capacity, and that it agrees with the Rust Kubernetes adapter
//! on the objects of an app and on what it reads (on the KWOK nodes: these
//! are about objects and calls); and that it passes the conformance suite
//! with what it declares proven by containers (`real_node`, on the real
//! node).

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Api;
use kube::api::{DeleteParams, ListParams};
use pando_host::types::{
    BundlePlan, DestroyOptions, EgressPolicy, IsolationClass, LogOptions, VolumeRequest,
    VolumeSpec, WorkloadPhase,
};
use pando_host::{Adapter, CallError, Host, LoadError};
use pando_tests::kubernetes_adapter::{
    self as ka, admin, cleanup, credentials, ctx, exit_pod, id, uid, versions, wait_phase,
};
use pando_tests::plans::{bundle, plan, wref};
use pando_tests::python_adapter::{self as py, audit_mark, requests};
use pando_tests::{cluster, probe};

mod against_rust;
mod lifecycle;
mod real_node;

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
