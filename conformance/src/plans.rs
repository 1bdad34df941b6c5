//! The plans the suite applies: plain enough for any runtime that runs
//! images. One workload that serves on a port until stopped, one whose
//! command prints a line and exits, optionally a volume.

use pando_host::types::{
    BundlePlan, EgressPolicy, EnvVar, NetworkRules, Port, Protocol, RegistryCredential,
    ResourceRequirements, Resources, VolumeMount, VolumeSpec, WorkloadRef, WorkloadSpec,
};

/// The workload that runs until stopped.
pub(crate) const SERVER: &str = "server";
/// Its port.
pub(crate) const PORT: u16 = 8080;
/// The workload whose command exits.
pub(crate) const FINISHER: &str = "finisher";
/// The code it exits with: not 0, so "finished" is told from "succeeded by
/// accident".
pub(crate) const FINISH_CODE: i32 = 3;
/// What it prints before exiting.
pub(crate) const FINISH_LINE: &str = "conformance: finished";
/// The variable carrying the finisher's exit code. A real runtime ignores
/// it (the command exits by itself); a simulated one (a KWOK stage) can
/// read it to end the workload as the command would.
pub(crate) const EXIT_CODE_ENV: &str = "PANDO_CONFORMANCE_EXIT_CODE";
/// The volume of plans that have one.
pub(crate) const VOLUME: &str = "data";
/// Its size: small, the data written is smaller.
pub(crate) const VOLUME_BYTES: u64 = 64 << 20;

/// What the server reserves.
pub(crate) fn server_requests() -> Resources {
    Resources {
        cpu_millis: 50,
        memory_bytes: 32 << 20,
    }
}

fn workload(name: &str, image: &str, script: &str, requests: Resources) -> WorkloadSpec {
    WorkloadSpec {
        name: name.into(),
        image: image.into(),
        digest: None,
        command: vec!["sh".into(), "-c".into(), script.into()],
        args: vec![],
        env: vec![],
        ports: vec![],
        resources: ResourceRequirements {
            requests,
            limits: None,
        },
        mounts: vec![],
    }
}

/// A workload serving HTTP on [`PORT`] until stopped. Its shell, PID 1 in
/// a container, exits on SIGTERM: a PID 1 without a handler ignores it, so
/// every stop and replacement would wait out the runtime's whole grace
/// period (Kubernetes' 30 s), which is the runtime's, not the adapter's,
/// and was the longest wait of a run on real containers.
pub(crate) fn server(image: &str) -> WorkloadSpec {
    let mut w = workload(
        SERVER,
        image,
        &format!("echo conformance: serving; trap 'exit 0' TERM; httpd -f -p {PORT} & wait"),
        server_requests(),
    );
    w.ports.push(Port {
        name: Some("http".into()),
        port: PORT,
        protocol: Protocol::Tcp,
    });
    w
}

/// A workload that prints [`FINISH_LINE`] and exits with [`FINISH_CODE`].
pub(crate) fn finisher(image: &str) -> WorkloadSpec {
    let mut w = workload(
        FINISHER,
        image,
        &format!("echo {FINISH_LINE}; exit {FINISH_CODE}"),
        Resources {
            cpu_millis: 10,
            memory_bytes: 16 << 20,
        },
    );
    w.env.push(EnvVar {
        name: EXIT_CODE_ENV.into(),
        value: FINISH_CODE.to_string(),
    });
    w
}

/// A plan of these workloads, egress open, no volumes, no credentials.
pub(crate) fn plan(id: &str, workloads: Vec<WorkloadSpec>) -> BundlePlan {
    BundlePlan {
        id: id.into(),
        revision: "1".into(),
        workloads,
        volumes: vec![],
        network: NetworkRules {
            egress: EgressPolicy::Open,
        },
        pull_credentials: vec![],
    }
}

/// The plan with [`VOLUME`], mounted at `/data` by its first workload.
pub(crate) fn with_volume(mut plan: BundlePlan) -> BundlePlan {
    plan.volumes.push(VolumeSpec {
        name: VOLUME.into(),
        size_bytes: Some(VOLUME_BYTES),
    });
    if let Some(w) = plan.workloads.first_mut() {
        w.mounts.push(VolumeMount {
            volume: VOLUME.into(),
            path: "/data".into(),
            read_only: false,
        });
    }
    plan
}

/// Credentials for a registry the plans do not pull from: present, so the
/// adapter writes them, and harmless.
pub(crate) fn credentials() -> Vec<RegistryCredential> {
    vec![RegistryCredential {
        registry: "registry.conformance.invalid".into(),
        username: "pando".into(),
        password: "conformance".into(),
    }]
}

/// A reference to a workload.
pub(crate) fn wref(bundle: &str, workload: &str) -> WorkloadRef {
    WorkloadRef {
        bundle: bundle.into(),
        workload: workload.into(),
    }
}
