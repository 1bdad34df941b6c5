//! Plans and references the tests build.

use pando_host::types::{
    BundlePlan, BundleRef, EgressPolicy, NetworkRules, Port, Protocol, ResourceRequirements,
    Resources, WorkloadRef, WorkloadSpec,
};

/// A plan with one workload per name, id `id`.
pub fn plan(id: &str, workloads: &[&str]) -> BundlePlan {
    BundlePlan {
        id: id.into(),
        revision: "1".into(),
        workloads: workloads.iter().map(|w| workload(w)).collect(),
        volumes: vec![],
        network: NetworkRules {
            egress: EgressPolicy::Open,
        },
        pull_credentials: vec![],
    }
}

/// A small workload listening on port 8080.
pub fn workload(name: &str) -> WorkloadSpec {
    WorkloadSpec {
        name: name.into(),
        image: "busybox:1.36".into(),
        digest: None,
        command: vec![],
        args: vec![],
        env: vec![],
        ports: vec![Port {
            name: Some("http".into()),
            port: 8080,
            protocol: Protocol::Tcp,
        }],
        resources: ResourceRequirements {
            requests: Resources {
                cpu_millis: 100,
                memory_bytes: 64 << 20,
            },
            limits: None,
        },
        mounts: vec![],
        security: Default::default(),
    }
}

/// A reference to an app.
pub fn bundle(id: &str) -> BundleRef {
    BundleRef { id: id.into() }
}

/// A reference to one workload.
pub fn wref(bundle: &str, workload: &str) -> WorkloadRef {
    WorkloadRef {
        bundle: bundle.into(),
        workload: workload.into(),
    }
}
