//! The contract's types under short paths: `types::BundlePlan` rather than
//! `bindings::pando::runtime::types::BundlePlan`, and the component model's
//! stream and future ends.

pub use crate::bindings::pando::runtime::log::Level;
pub use crate::bindings::pando::runtime::types::{
    BundleEvent, BundleHandle, BundlePlan, BundleRef, BundleUsage, BundleWatch, ByteStream,
    CapacityReport, Category, CommandFailure, DestroyOptions, EdgePlan, EdgeState, EgressPolicy,
    EgressRule, EnvVar, Error, ExecRequest, ExecSession, Fit, InUseReport, IsolationClass,
    KindInfo, ListeningPort, LogOptions, NetworkRules, ObservedBundle, ObservedVolume,
    ObservedWorkload, Port, Protocol, RegistryCredential, ResourceRequirements, Resources,
    RunRequest, RuntimeCapabilities, Security, TerminalSize, TrialRequest, TrialResult,
    UpstreamAddress, VolumeHandle, VolumeMount, VolumeRequest, VolumeSpec, WatchEnd,
    WorkloadChange, WorkloadPhase, WorkloadRef, WorkloadSpec, WorkloadUsage,
};
pub use wit_bindgen::{FutureReader, FutureWriter, StreamReader, StreamResult, StreamWriter};
