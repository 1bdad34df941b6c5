//! The Rust types of `pando:runtime/types@0.2.0`: 0.1.0's, but for what
//! 0.2.0 changed.
//!
//! 0.2.0 adds `security` to `workload-spec` (so the two records that hold
//! one, `bundle-plan` and `trial-request`, differ too) and three records of
//! streams and futures. Every other type is 0.1.0's, re-exported, so a value
//! of it needs no conversion between the versions. The records here derive
//! wasmtime's component traits by hand; wasmtime checks them against the
//! component's WIT when it links one (`crate::bindings`).

use wasmtime::component::{ComponentType, FutureReader, Lift, Lower, StreamReader};

pub use crate::bindings::v0_1::pando::runtime::types::*;

/// Who a workload's processes run as, and how tightly. All none and
/// `restricted` false is the image's own user, as in 0.1.0.
#[derive(ComponentType, Lift, Lower, Clone, Debug, Default, PartialEq, Eq)]
#[component(record)]
pub struct Security {
    /// The user id its processes run as; none is the image's.
    #[component(name = "run-as-user")]
    pub run_as_user: Option<u32>,
    /// Their primary group id; none is the image's.
    #[component(name = "run-as-group")]
    pub run_as_group: Option<u32>,
    /// The group given to the workload's volumes.
    #[component(name = "fs-group")]
    pub fs_group: Option<u32>,
    /// Run as tightly as the runtime allows (Kubernetes' `restricted`).
    pub restricted: bool,
}

/// 0.2.0's `workload-spec`: 0.1.0's and its [`Security`].
#[derive(ComponentType, Lift, Lower, Clone, Debug)]
#[component(record)]
pub struct WorkloadSpec {
    pub name: String,
    pub image: String,
    pub digest: Option<String>,
    pub command: Vec<String>,
    pub args: Vec<String>,
    pub env: Vec<EnvVar>,
    pub ports: Vec<Port>,
    pub resources: ResourceRequirements,
    pub mounts: Vec<VolumeMount>,
    pub security: Security,
}

/// 0.2.0's `bundle-plan`: its workloads are 0.2.0's.
#[derive(ComponentType, Lift, Lower, Clone, Debug)]
#[component(record)]
pub struct BundlePlan {
    pub id: String,
    pub revision: String,
    pub workloads: Vec<WorkloadSpec>,
    pub volumes: Vec<VolumeSpec>,
    pub network: NetworkRules,
    #[component(name = "pull-credentials")]
    pub pull_credentials: Vec<RegistryCredential>,
}

/// 0.2.0's `trial-request`: its workload is 0.2.0's.
#[derive(ComponentType, Lift, Lower, Clone, Debug)]
#[component(record)]
pub struct TrialRequest {
    pub bundle: String,
    pub workload: WorkloadSpec,
    pub network: NetworkRules,
    #[component(name = "pull-credentials")]
    pub pull_credentials: Vec<RegistryCredential>,
    #[component(name = "duration-ms")]
    pub duration_ms: u64,
}

/// Bytes an adapter produces and how they ended.
#[derive(ComponentType, Lift, Lower)]
#[component(record)]
pub struct ByteStream {
    pub bytes: StreamReader<u8>,
    pub done: FutureReader<Result<(), Error>>,
}

/// A running exec session's outputs.
#[derive(ComponentType, Lift, Lower)]
#[component(record)]
pub struct ExecSession {
    pub stdout: StreamReader<u8>,
    pub stderr: Option<StreamReader<u8>>,
    pub exit: FutureReader<Result<i32, Error>>,
}

/// What a bundle watch sends, and how it ended.
#[derive(ComponentType, Lift, Lower)]
#[component(record)]
pub struct BundleWatch {
    pub events: StreamReader<BundleEvent>,
    pub end: FutureReader<Result<WatchEnd, Error>>,
}

impl WorkloadSpec {
    /// A 0.1.0 workload as 0.2.0 has it: run as the image says.
    pub fn from_v0_1(w: &crate::bindings::v0_1::pando::runtime::types::WorkloadSpec) -> Self {
        WorkloadSpec {
            name: w.name.clone(),
            image: w.image.clone(),
            digest: w.digest.clone(),
            command: w.command.clone(),
            args: w.args.clone(),
            env: w.env.clone(),
            ports: w.ports.clone(),
            resources: w.resources,
            mounts: w.mounts.clone(),
            security: Security::default(),
        }
    }
}

impl BundlePlan {
    /// A 0.1.0 plan as 0.2.0 has it.
    pub fn from_v0_1(p: &crate::bindings::v0_1::pando::runtime::types::BundlePlan) -> Self {
        BundlePlan {
            id: p.id.clone(),
            revision: p.revision.clone(),
            workloads: p.workloads.iter().map(WorkloadSpec::from_v0_1).collect(),
            volumes: p.volumes.clone(),
            network: p.network.clone(),
            pull_credentials: p.pull_credentials.clone(),
        }
    }
}

impl TrialRequest {
    /// A 0.1.0 trial as 0.2.0 has it.
    pub fn from_v0_1(t: &crate::bindings::v0_1::pando::runtime::types::TrialRequest) -> Self {
        TrialRequest {
            bundle: t.bundle.clone(),
            workload: WorkloadSpec::from_v0_1(&t.workload),
            network: t.network.clone(),
            pull_credentials: t.pull_credentials.clone(),
            duration_ms: t.duration_ms,
        }
    }
}
