//! The Python adapter's conformance run on the test cluster's real node, with no environment
//! standing in for the runtime: its pods run as containers there, so what it declares (`logs`)
//! is proven by what a workload printed, and the finishing workload exits by itself.
//!
//! On the KWOK nodes (the configuration the other tests of this module use) the same run could
//! only leave `logs` unproven: KWOK serves every pod one log of its own. That run showed
//! nothing this one does not, so it is gone.

use pando_conformance::{Options, Outcome, Target, Verdict};
use pando_host::{Grants, Host, LoadOptions};
use pando_tests::kubernetes_adapter::admin;
use pando_tests::python_adapter as py;
use pando_tests::real_node::{self as node, BUSYBOX, RUNTIME_CLASS};
use pando_tests::{cluster, components, probe};

/// The adapter's configuration for the real node, as its README's conformance command passes
/// it: `adapters/python-kubernetes/config.yaml`, as JSON.
fn real_node_config() -> String {
    let rel = "adapters/python-kubernetes/config.yaml";
    let value = components::repo_yaml(rel);
    assert_eq!(
        value["runtime_class"], RUNTIME_CLASS,
        "{rel} puts the pods on the real node"
    );
    value.to_string()
}

/// The adapter's own grants, which must let its pods name the real node's runtime class (the
/// host's object policy allows only the classes the grants list): a grants file that loses it
/// fails here, not in a pod the host refuses.
fn grants() -> Grants {
    let grants = py::grants();
    let lists_it = grants.kubernetes.as_ref().is_some_and(|k| {
        !k.objects.pods.is_empty()
            && k.objects
                .pods
                .iter()
                .all(|rule| rule.runtime_classes.iter().any(|c| c == RUNTIME_CLASS))
    });
    assert!(
        lists_it,
        "adapters/python-kubernetes/grants.yaml lets every pod rule use the runtime class \
         {RUNTIME_CLASS}"
    );
    grants
}

/// Every case passes, none skipped nor unproven: the declared `logs` is proven by the line the
/// suite's finishing workload printed (C-LOGS-01) and kept after `stop` (C-STOP-01), its volume
/// cases run on claims of `pando-local`; each capability it does not declare is checked to answer
/// `unsupported`, and the case says that is all it checked. (No lock: the adapter has no
/// NetworkPolicy canary, and touches no namespace but its apps'.)
#[tokio::test]
async fn every_conformance_case_passes_on_the_real_node_with_its_declared_logs_proven() {
    node::require(&admin().await).await;
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
            grants: grants(),
            config: real_node_config(),
            kubernetes: Some(client),
            ..LoadOptions::default()
        },
    };
    let options = Options {
        image: BUSYBOX.into(),
        ..Options::default()
    };
    let report = crate::conformance::run(&target, &options).await;
    crate::conformance::assert_every_case_passes(&report, "the Python adapter on the real node");
    assert_eq!(
        report.verdict(),
        Verdict::Proven,
        "every declaration proven: {}",
        report.summary()
    );
    // `logs` is declared, and both cases that read a log checked it, not only `unsupported`.
    for id in ["C-LOGS-01", "C-STOP-01"] {
        let case = report.case(id).unwrap_or_else(|| panic!("{id} ran"));
        assert_eq!(case.outcome, Outcome::Pass, "{}", case.line());
        assert!(
            case.claim.is_none(),
            "{id} checked the declared logs: {}",
            case.line()
        );
    }
    // What it does not declare: checked to answer `unsupported`, and said so.
    for (id, capability) in [
        ("C-CAP-01", "image-import"),
        ("C-CAP-02", "edge"),
        ("C-CAP-03", "trial"),
        ("C-CAP-04", "egress-restriction"),
        ("C-EXEC-01", "exec"),
        ("C-RUN-01", "run"),
        ("C-VOL-01", "volume-snapshot"),
    ] {
        let case = report.case(id).unwrap_or_else(|| panic!("{id} ran"));
        assert!(
            case.claim
                .as_deref()
                .is_some_and(|c| c.starts_with(&format!("{capability}: not declared"))),
            "{id} says it checked only the undeclared {capability}: {}",
            case.line()
        );
    }
}
