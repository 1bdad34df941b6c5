//! The guest SDK for Pando runtime adapters of contract
//! `pando:runtime@0.2.0` (WASI 0.3).
//!
//! The 0.1.0 contract's adapters are built with `pando-adapter-sdk`, which
//! stays as it is; this crate is its 0.2 line. It is a crate of its own
//! because one crate's bindings of both contracts would be merged into one
//! component world, and because an adapter exports exactly one contract.
//! docs/wit.md says what changed from 0.1 to 0.2 and how to move an
//! adapter over.
//!
//! What 0.2 changes for an author: the calls that wait are `async fn`s
//! (one instance can serve a call while another waits), byte streams are
//! the component model's `stream<u8>` (no `wasi:io` pollables to pump),
//! and an exec session is streams and a future: stdin and terminal sizes
//! in, stdout, stderr and the exit out, written by a task of the adapter
//! after the call returned.
//!
//! This crate gives:
//! - [`Adapter`]: one method per export, each defaulting to `unsupported`
//!   (named as the contract names it), `async` where the contract's call is;
//! - [`export_adapter!`]: turns a type implementing [`Adapter`] into the
//!   component's exports;
//! - [`streams`]: a [`ByteStream`](types::ByteStream) from bytes or from a
//!   task that writes them, and reading a `stream<u8>` to its end under a
//!   limit;
//! - [`exec`]: an [`ExecSession`](types::ExecSession) played by a task;
//! - [`watch`]: a [`BundleWatch`](types::BundleWatch) fed by a task;
//! - [`time`]: the call's deadline and cancellation, a cancellable
//!   [`sleep`](time::sleep), and [`cancellable`](time::cancellable) for any
//!   future;
//! - [`kube`]: a typed Kubernetes client (`Api::<Pod>::namespaced("x").get("web").await`)
//!   on `k8s-openapi` types, the 0.1 line's with `async` calls;
//! - [`log`]: `info!`/`warn!`/… macros that write to the host's `tracing`;
//! - [`error`](mod@error): constructors for the contract's
//!   [`Error`](types::Error); [`config`]: reading the configuration;
//! - [`types`]: the contract's types under short paths; [`bindings`]: the
//!   generated bindings; [`kubernetes`]: the raw Kubernetes import.
//!
//! # A minimal adapter
//!
//! Build it as a `cdylib` with `cargo build --release --target wasm32-wasip2`:
//! the result is a component exporting `pando:runtime/adapter@0.2.0`.
//!
//! ```no_run
//! use pando_adapter_sdk_v02::types::{
//!     BundleHandle, BundlePlan, ByteStream, Category, Error, KindInfo, LogOptions,
//!     UpstreamAddress, WorkloadRef,
//! };
//! use pando_adapter_sdk_v02::{Adapter, error, export_adapter, info, streams, time};
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
//!         let config: Config = pando_adapter_sdk_v02::config::parse(config)?;
//!         Ok(Hello { domain: config.domain.unwrap_or_else(|| "local".into()) })
//!     }
//!
//!     async fn apply(&self, plan: BundlePlan) -> Result<BundleHandle, Error> {
//!         if plan.workloads.is_empty() {
//!             return Err(error::invalid("plan.workloads: a plan needs a workload"));
//!         }
//!         // Waits, and fails `cancelled`/`timeout` when the call is.
//!         time::sleep(std::time::Duration::from_millis(10)).await?;
//!         info!(bundle = plan.id, "hello, {} workloads", plan.workloads.len());
//!         Ok(BundleHandle { location: format!("hello/{}", plan.id), id: plan.id })
//!     }
//!
//!     async fn logs(&self, workload: WorkloadRef, _: LogOptions) -> Result<ByteStream, Error> {
//!         // Written by a task after `logs` returned; `done` says how it ended.
//!         Ok(streams::written(move |mut out| async move {
//!             out.write(format!("hello from {}\n", workload.workload).into_bytes()).await
//!         }))
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
//! use pando_adapter_sdk_v02::{debug, info, warn};
//! # let (plan_id, n) = ("web", 3);
//! info!("applied {n} workloads");
//! warn!(bundle = plan_id, attempt = 2, "conflict, retrying");
//! debug!(bundle = plan_id; "fields may also end with a semicolon");
//! ```
//!
//! Each macro asks the host whether the level is enabled before it formats
//! anything, so a disabled `trace!` costs one host call.
//!
//! # Shared with the 0.1 line
//!
//! [`error`](mod@error), [`config`] and [`log`] are the same source as
//! `pando-adapter-sdk`'s: their code names only the contract's `Error` and
//! `log` interface, which 0.2.0 keeps as 0.1.0 had them.
//!
//! # What a component imports
//!
//! The bindings are generated for the widest world,
//! `pando:runtime/kubernetes-adapter@0.2.0`, but the component linker keeps
//! only the imports an adapter's code calls: an adapter that never touches
//! [`kubernetes`] does not import `pando:runtime/kubernetes@0.2.0`, and the
//! host loads it as a plain `runtime-adapter`.
#![warn(missing_docs)]

/// The `wit-bindgen` bindings of world `pando:runtime/runtime-adapter@0.2.0`,
/// and of the Kubernetes import in [`bindings::kube`].
///
/// Generated code: prefer [`types`], [`Adapter`] and the helper modules;
/// reach here for what they do not cover (`wit_stream::new`,
/// `wit_future::new` for streams and futures of one's own).
///
/// Two generations, not one of world `kubernetes-adapter`: wit-bindgen ties
/// each stream or future payload type (`stream<u8>`) to the first function
/// of the world that carries it, and that function's interface becomes an
/// import of every component that makes such a stream. Generated for the
/// widest world, every adapter returning a byte stream would import the
/// Kubernetes API; generated apart, an adapter imports it only when it
/// calls it.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "pando:runtime/runtime-adapter@0.2.0",
        generate_all,
        pub_export_macro: true,
    });

    /// The Kubernetes import, its shared types those of the bindings
    /// above.
    pub mod kube {
        wit_bindgen::generate!({
            path: "wit",
            inline: "
                package pando:adapter-sdk-v02;
                world kubernetes {
                    import pando:runtime/kubernetes@0.2.0;
                }
            ",
            with: {
                "pando:runtime/types@0.2.0": crate::bindings::pando::runtime::types,
                "pando:runtime/kubernetes@0.2.0": generate,
            },
        });
    }
}

mod adapter;
pub mod config;
pub mod error;
pub mod exec;
#[doc(hidden)]
pub mod export;
pub mod kube;
pub mod log;
pub mod streams;
pub mod time;
pub mod types;
pub mod watch;

pub use adapter::Adapter;
/// The raw Kubernetes import of 0.2.0: `send`, a log as `stream<u8>`, a
/// watch as a stream of events, exec with stdin and resize streams. Calls
/// pass the grants the host was given for the adapter.
pub use bindings::kube::pando::runtime::kubernetes;
/// Spawn a task on the instance's event loop: it runs after the call that
/// spawned it returned, as long as a stream or future it writes is held.
pub use wit_bindgen::spawn_local as spawn;
