//! The contract's types as core uses them.
//!
//! These are the contract's types, with serde derives so plans,
//! configuration and results read and write as JSON or YAML (field names in
//! snake_case, enum cases in UpperCamelCase as Rust names them): the
//! `pando:runtime@0.1.0` types generated from the WIT, but for the plan's
//! workloads, which are 0.2.0's (`Security`, `WorkloadSpec`, `BundlePlan`,
//! `TrialRequest`: `crate::bindings::v0_2_types`). The two versions share
//! every other type, so this is the host's one public vocabulary for both,
//! and core never sees a wasm value.

pub use crate::bindings::v0_1::pando::runtime::types::*;
pub use crate::bindings::v0_2_types::{BundlePlan, Security, TrialRequest, WorkloadSpec};

impl Default for DestroyOptions {
    /// Keep volumes: losing data takes an explicit choice.
    fn default() -> Self {
        DestroyOptions { keep_volumes: true }
    }
}

impl Default for LogOptions {
    /// The whole log of the newest instance, as it is now: no follow, no
    /// tail, no time stamps, no byte limit.
    fn default() -> Self {
        LogOptions {
            follow: false,
            tail_lines: None,
            since_seconds: None,
            timestamps: false,
            limit_bytes: None,
        }
    }
}
