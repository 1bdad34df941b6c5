//! The contract's types under short paths: `types::BundlePlan` rather than
//! `bindings::pando::runtime::types::BundlePlan`.

pub use crate::bindings::pando::runtime::types::{
    BundleEvent, BundleHandle, BundlePlan, BundleRef, BundleUsage, CapacityReport, Category,
    CommandFailure, DestroyOptions, EdgePlan, EdgeState, EgressPolicy, EgressRule, EnvVar, Error,
    ExecRequest, Fit, InUseReport, IsolationClass, KindInfo, ListeningPort, LogOptions,
    NetworkRules, ObservedBundle, ObservedVolume, ObservedWorkload, Port, Protocol,
    RegistryCredential, ResourceRequirements, Resources, RunRequest, RuntimeCapabilities,
    TerminalSize, TrialRequest, TrialResult, UpstreamAddress, VolumeHandle, VolumeMount,
    VolumeRequest, VolumeSpec, WatchEnd, WorkloadChange, WorkloadPhase, WorkloadRef, WorkloadSpec,
    WorkloadUsage,
};

pub use crate::bindings::pando::runtime::events::{BundleSink, SinkClosed};
pub use crate::bindings::pando::runtime::log::Level;
pub use crate::bindings::wasi::io::poll::Pollable;
pub use crate::bindings::wasi::io::streams::{InputStream, OutputStream, StreamError};
