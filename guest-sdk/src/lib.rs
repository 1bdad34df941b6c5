//! The guest SDK for Pando runtime adapters.
//!
//! An adapter is a WebAssembly component that drives one runtime (Kubernetes,
//! a VM manager, a PaaS) for Pando. It exports `pando:runtime/adapter@0.1.0`
//! and reaches the world only through the imports the host lends it: logging,
//! the call's deadline and cancellation, streams, clocks and, for a Kubernetes
//! adapter, the Kubernetes API.
//!
//! This crate gives an author:
//! - [`Adapter`]: one method per export, each defaulting to `unsupported`, so
//!   that a method added in a later minor version of the contract does not
//!   break an adapter that does not offer it;
//! - [`export_adapter!`]: turns a type implementing [`Adapter`] into the
//!   component's exports;
//! - [`log`]: `info!`/`warn!`/… macros that write to the host's `tracing`;
//! - [`time`]: the call's deadline, cancellation, a cancellable `sleep` and
//!   `wait_any` for loops of one's own;
//! - [`io`]: writing, reading and splicing `wasi:io` streams, and streams of
//!   one's own ([`io::from_bytes`], [`io::pipe`]);
//! - [`error`](mod@error): constructors for the contract's [`Error`](types::Error);
//! - [`kube`]: a typed Kubernetes client (`Api::<Pod>::namespaced("x").get("web")`)
//!   on `k8s-openapi` types;
//! - [`types`]: the contract's types under short paths; [`bindings`]: the raw
//!   generated bindings; [`kubernetes`]: the raw Kubernetes import.
//!
//! # A minimal adapter
//!
//! Build it as a `cdylib` with `cargo build --release --target wasm32-wasip2`:
//! the result is a component.
//!
//! ```no_run
//! use pando_adapter_sdk::types::{
//!     BundleHandle, BundlePlan, Category, Error, KindInfo, UpstreamAddress, WorkloadRef,
//! };
//! use pando_adapter_sdk::{Adapter, error, export_adapter, info};
//!
//! struct Hello {
//!     domain: String,
//! }
//!
//! impl Adapter for Hello {
//!     fn info() -> KindInfo {
//!         KindInfo {
//!             kind: "hello".into(),
//!             category: Category::SingleHost,
//!             description: "Greets every plan and runs nothing.".into(),
//!             config_schema: r#"{"type":"object","properties":{"domain":{"type":"string"}}}"#.into(),
//!         }
//!     }
//!
//!     fn configure(config: &str) -> Result<Self, Error> {
//!         #[derive(serde::Deserialize)]
//!         #[serde(deny_unknown_fields)]
//!         struct Config {
//!             domain: Option<String>,
//!         }
//!         let config: Config = pando_adapter_sdk::config::parse(config)?;
//!         Ok(Hello { domain: config.domain.unwrap_or_else(|| "local".into()) })
//!     }
//!
//!     fn apply(&self, plan: BundlePlan) -> Result<BundleHandle, Error> {
//!         if plan.workloads.is_empty() {
//!             return Err(error::invalid("plan.workloads: a plan needs a workload"));
//!         }
//!         info!(bundle = plan.id, "hello, {} workloads", plan.workloads.len());
//!         Ok(BundleHandle { location: format!("hello/{}", plan.id), id: plan.id })
//!     }
//!
//!     fn upstream(&self, workload: WorkloadRef, port: u16) -> Result<UpstreamAddress, Error> {
//!         let host = format!("{}.{}.{}", workload.workload, workload.bundle, self.domain);
//!         Ok(UpstreamAddress { host, port })
//!     }
//! }
//!
//! export_adapter!(Hello);
//! ```
//!
//! Every other export answers `unsupported`; `capabilities` says so in
//! advance (everything false, shared-kernel isolation) until overridden.
//!
//! # Logging
//!
//! ```no_run
//! use pando_adapter_sdk::{debug, info, warn};
//! # let (plan_id, n) = ("web", 3);
//! info!("applied {n} workloads");
//! warn!(bundle = plan_id, attempt = 2, "conflict, retrying");
//! debug!(bundle = plan_id; "fields may also end with a semicolon");
//! ```
//!
//! Each macro asks the host whether the level is enabled before it formats
//! anything, so a disabled `trace!` costs one host call.
//!
//! # What a component imports
//!
//! The bindings are generated for the widest world,
//! `pando:runtime/kubernetes-adapter`, but the component linker keeps only the
//! imports an adapter's code actually calls: an adapter that never touches
//! [`kube`] or [`kubernetes`] does not import `pando:runtime/kubernetes@0.1.0`, and the host
//! loads it as a plain `runtime-adapter`.
#![warn(missing_docs)]

/// The `wit-bindgen` bindings of world `pando:runtime/kubernetes-adapter`.
///
/// Generated code: prefer [`types`], [`Adapter`] and the helper modules; reach
/// here for what they do not cover.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "pando:runtime/kubernetes-adapter",
        generate_all,
        pub_export_macro: true,
    });
}

mod adapter;
pub mod config;
pub mod error;
#[doc(hidden)]
pub mod export;
pub mod io;
pub mod kube;
pub mod kubernetes;
pub mod log;
pub mod time;
pub mod types;

pub use adapter::{Adapter, ExecSession};
