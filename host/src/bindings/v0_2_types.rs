//! The Rust types of `pando:runtime/types@0.2.0`: 0.1.0's, but for what
//! 0.2.0 changed.
//!
//! 0.2.0 adds `security` to `workload-spec` (so the two records that hold
//! one, `bundle-plan` and `trial-request`, differ too) and three records of
//! streams and futures. Every other type is 0.1.0's, re-exported, so a value
//! of it needs no conversion between the versions. The records here derive
//! wasmtime's component traits by hand; wasmtime checks them against the
//! component's WIT when it links one (`crate::bindings`).
//!
//! `Security`, `WorkloadSpec`, `BundlePlan` and `TrialRequest` are also the
//! host's public ones (`crate::types`): core writes a plan once, with
//! `security` where it wants it, and the host hands a 0.1.0 adapter the
//! plan without it (`to_v0_1`), refusing a plan that sets it.

use wasmtime::component::{ComponentType, FutureReader, Lift, Lower, StreamReader};

/// A record of the plan, public as well as lent: wasmtime's component traits
/// and what the host's public types derive (serde, the schema, equality).
macro_rules! plan_record {
    ($(#[$attr:meta])* pub struct $name:ident { $($body:tt)* }) => {
        #[derive(
            ComponentType,
            Lift,
            Lower,
            Clone,
            Debug,
            PartialEq,
            serde::Serialize,
            serde::Deserialize,
            schemars::JsonSchema,
        )]
        #[component(record)]
        $(#[$attr])*
        pub struct $name { $($body)* }
    };
}

pub use crate::bindings::v0_1::pando::runtime::types::*;

plan_record! {
/// Who a workload's processes run as, and how tightly. Numbers, not names: a
/// runtime cannot check a user name against "not root" before the image
/// runs. All none and `restricted` false (the default, and what a plan
/// without `security` gets) is the image's own user, as in 0.1.0.
#[derive(Default, Eq)]
#[serde(default)]
pub struct Security {
    /// The user id its processes run as; none is the image's.
    #[component(name = "run-as-user")]
    pub run_as_user: Option<u32>,
    /// Their primary group id; none is the image's.
    #[component(name = "run-as-group")]
    pub run_as_group: Option<u32>,
    /// The group given to the workload's volumes, so a non-root user can
    /// write them; none leaves their owners as they are.
    #[component(name = "fs-group")]
    pub fs_group: Option<u32>,
    /// Run as tightly as the runtime allows: never as root (refused when the
    /// image's user is root and no `run_as_user` is given), no capabilities,
    /// no privilege escalation, the runtime's default system-call filter.
    /// What Kubernetes' `restricted` Pod Security level demands.
    pub restricted: bool,
}
}

impl Security {
    /// Whether it asks for nothing but what the image says.
    pub fn is_image_default(&self) -> bool {
        *self == Security::default()
    }
}

plan_record! {
/// One workload of an app: a single long-running process from an image.
pub struct WorkloadSpec {
    /// Unique within the app; a DNS label (lowercase letters, digits, `-`, at
    /// most 63 characters). Other workloads of the app reach it by this name.
    pub name: String,
    /// The image reference as the user wrote it.
    pub image: String,
    /// The resolved content digest (`sha256:…`). A workload is recreated
    /// when this changes.
    pub digest: Option<String>,
    /// Replaces the image's entrypoint when not empty.
    pub command: Vec<String>,
    /// Replaces the image's arguments when not empty.
    pub args: Vec<String>,
    pub env: Vec<EnvVar>,
    pub ports: Vec<Port>,
    pub resources: ResourceRequirements,
    pub mounts: Vec<VolumeMount>,
    /// Who its processes run as, and how tightly (contract 0.2.0; a 0.1.0
    /// adapter runs every workload as its image says and refuses any other).
    #[serde(default)]
    pub security: Security,
}
}

plan_record! {
/// What an app should be: the whole of it, each time (Apply is declarative
/// and idempotent).
pub struct BundlePlan {
    /// The app's id: a DNS label, unique in Pando.
    pub id: String,
    /// An opaque revision core assigns; recorded, never interpreted.
    pub revision: String,
    pub workloads: Vec<WorkloadSpec>,
    pub volumes: Vec<VolumeSpec>,
    pub network: NetworkRules,
    #[component(name = "pull-credentials")]
    pub pull_credentials: Vec<RegistryCredential>,
}
}

plan_record! {
/// A workload to run once, watched, before it is deployed.
pub struct TrialRequest {
    /// The app it is tried for.
    pub bundle: String,
    pub workload: WorkloadSpec,
    /// The rules the app would run with; the trial is held to them.
    pub network: NetworkRules,
    #[component(name = "pull-credentials")]
    pub pull_credentials: Vec<RegistryCredential>,
    /// How long to watch it.
    #[component(name = "duration-ms")]
    pub duration_ms: u64,
}
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

/// 0.1.0's types, which a 0.1.0 adapter is called with.
use crate::bindings::v0_1::pando::runtime::types as v0_1;

/// Why a 0.1.0 adapter cannot take a value: its `security` asks for more
/// than the image's own user.
fn security_refused(workload: &str) -> String {
    format!(
        "workload `{workload}` sets `security`, which contract 0.1.0 cannot carry: this adapter \
         serves pando:runtime@0.1.0 and runs every workload as its image says; load a 0.2.0 \
         build of the adapter, or leave `security` out"
    )
}

impl WorkloadSpec {
    /// A 0.1.0 workload as 0.2.0 has it: run as the image says.
    pub fn from_v0_1(w: v0_1::WorkloadSpec) -> Self {
        WorkloadSpec {
            name: w.name,
            image: w.image,
            digest: w.digest,
            command: w.command,
            args: w.args,
            env: w.env,
            ports: w.ports,
            resources: w.resources,
            mounts: w.mounts,
            security: Security::default(),
        }
    }

    /// This workload for a 0.1.0 adapter; refused (why) when its
    /// `security` asks for anything.
    pub fn to_v0_1(&self) -> Result<v0_1::WorkloadSpec, String> {
        if !self.security.is_image_default() {
            return Err(security_refused(&self.name));
        }
        Ok(v0_1::WorkloadSpec {
            name: self.name.clone(),
            image: self.image.clone(),
            digest: self.digest.clone(),
            command: self.command.clone(),
            args: self.args.clone(),
            env: self.env.clone(),
            ports: self.ports.clone(),
            resources: self.resources,
            mounts: self.mounts.clone(),
        })
    }
}

impl BundlePlan {
    /// A 0.1.0 plan as 0.2.0 has it.
    pub fn from_v0_1(p: v0_1::BundlePlan) -> Self {
        BundlePlan {
            id: p.id,
            revision: p.revision,
            workloads: p
                .workloads
                .into_iter()
                .map(WorkloadSpec::from_v0_1)
                .collect(),
            volumes: p.volumes,
            network: p.network,
            pull_credentials: p.pull_credentials,
        }
    }

    /// This plan for a 0.1.0 adapter; refused (why) when a workload's
    /// `security` asks for anything.
    pub fn to_v0_1(&self) -> Result<v0_1::BundlePlan, String> {
        Ok(v0_1::BundlePlan {
            id: self.id.clone(),
            revision: self.revision.clone(),
            workloads: self
                .workloads
                .iter()
                .map(WorkloadSpec::to_v0_1)
                .collect::<Result<_, _>>()?,
            volumes: self.volumes.clone(),
            network: self.network.clone(),
            pull_credentials: self.pull_credentials.clone(),
        })
    }
}

impl TrialRequest {
    /// A 0.1.0 trial as 0.2.0 has it.
    pub fn from_v0_1(t: v0_1::TrialRequest) -> Self {
        TrialRequest {
            bundle: t.bundle,
            workload: WorkloadSpec::from_v0_1(t.workload),
            network: t.network,
            pull_credentials: t.pull_credentials,
            duration_ms: t.duration_ms,
        }
    }

    /// This trial for a 0.1.0 adapter; refused (why) when its workload's
    /// `security` asks for anything.
    pub fn to_v0_1(&self) -> Result<v0_1::TrialRequest, String> {
        Ok(v0_1::TrialRequest {
            bundle: self.bundle.clone(),
            workload: self.workload.to_v0_1()?,
            network: self.network.clone(),
            pull_credentials: self.pull_credentials.clone(),
            duration_ms: self.duration_ms,
        })
    }
}
