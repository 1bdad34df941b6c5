//! The contract's types as core uses them.
//!
//! These are the `pando:runtime@0.1.0` types, generated from the WIT, with
//! serde derives so plans, configuration and results read and write as
//! JSON or YAML (field names in snake_case, enum cases in UpperCamelCase as
//! Rust names them). A later contract version converts into these: they are
//! the host's public vocabulary, and core never sees a wasm value.

pub use crate::bindings::v0_1::pando::runtime::types::*;

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
