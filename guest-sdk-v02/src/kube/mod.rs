//! A typed Kubernetes client over the host's Kubernetes import, on
//! [`kube_core`], kube-rs's IO-free crate: the 0.1 line's client, its calls
//! `async`.
//!
//! Objects are [`k8s_openapi`] types (re-exported here, Kubernetes 1.36:
//! use this re-export rather than a dependency of your own, so the version
//! features agree), or, for custom resources and kinds known only at run
//! time, [`DynamicObject`]s over an [`ApiResource`]. [`Api<K>`] builds its
//! requests with [`kube_core::Request`] (the paths, the query of
//! [`ListParams`], [`PostParams`], [`PatchParams`], [`DeleteParams`],
//! [`WatchParams`]) and hands them to the host; it checks names before
//! sending and decodes answers. A failed call is a [`KubeError`], which `?`
//! turns into the contract's [`Error`](crate::types::Error). The requests,
//! their parameters, the errors and the decoding are the same code as the
//! 0.1 line's; only what sends and waits differs.
//!
//! ```no_run
//! use pando_adapter_sdk_v02::kube::k8s_openapi::api::core::v1::{ConfigMap, Pod};
//! use pando_adapter_sdk_v02::kube::{Api, DeleteParams, ListParams, Patch, PatchParams, ResourceExt};
//! use pando_adapter_sdk_v02::types::Error;
//!
//! async fn example() -> Result<(), Error> {
//!     let pods = Api::<Pod>::namespaced("pando-x");
//!     let web = pods.get("web").await?;
//!     let running = pods.list(&ListParams::default().fields("status.phase=Running")).await?;
//!     println!("{}: {} running", web.name_any(), running.items.len());
//!
//!     let configs = Api::<ConfigMap>::namespaced("pando-x");
//!     let patch = serde_json::json!({
//!         "apiVersion": "v1",
//!         "kind": "ConfigMap",
//!         "data": { "greeting": "hello" },
//!     });
//!     configs
//!         .patch("settings", &PatchParams::apply("pando").force(), &Patch::Apply(&patch))
//!         .await?;
//!     configs.delete_opt("old-settings", &DeleteParams::background()).await?;
//!     Ok(())
//! }
//! ```
//!
//! # Watching
//!
//! [`watcher`] lists, watches, lists again on 410 Gone and backs off on
//! transient failures; by hand, with [`Api::watch`]:
//!
//! ```no_run
//! use pando_adapter_sdk_v02::kube::k8s_openapi::api::core::v1::Pod;
//! use pando_adapter_sdk_v02::kube::{Api, ListParams, WatchEnd, WatchEvent, WatchParams};
//! use pando_adapter_sdk_v02::types::Error;
//!
//! async fn follow(pods: &Api<Pod>) -> Result<(), Error> {
//!     // List, then watch from the list's version; list again on `Expired`.
//!     let list = pods.list(&ListParams::default()).await?;
//!     let mut version = list.metadata.resource_version.unwrap_or_default();
//!     loop {
//!         let mut stream = pods.watch(&WatchParams::default(), &version).await?;
//!         let end = loop {
//!             match stream.next().await {
//!                 Ok(WatchEvent::Added(pod) | WatchEvent::Modified(pod)) => {
//!                     let _ = pod.status;
//!                 }
//!                 Ok(_) => {}
//!                 Err(end) => break end,
//!             }
//!         };
//!         match end {
//!             WatchEnd::Closed => {
//!                 version = stream.resource_version().unwrap_or(&version).to_owned();
//!             }
//!             WatchEnd::Expired(_) => {
//!                 let list = pods.list(&ListParams::default()).await?;
//!                 version = list.metadata.resource_version.unwrap_or_default();
//!             }
//!             WatchEnd::Failed(e) => return Err(e.into()),
//!         }
//!     }
//! }
//! ```
//!
//! # Logs and exec, handed on
//!
//! A pod's log ([`Api::logs`]) and an exec session ([`Api::exec`]) are the
//! import's streams: return them from the adapter's `logs` and `exec` as
//! they are (`ByteStream::from`, `ExecSession::from`), and their bytes go
//! from the host to core without entering the guest.
//!
//! ```no_run
//! use pando_adapter_sdk_v02::kube::k8s_openapi::api::core::v1::Pod;
//! use pando_adapter_sdk_v02::kube::{Api, LogParams};
//! use pando_adapter_sdk_v02::types::{ByteStream, Error, LogOptions, WorkloadRef};
//!
//! async fn logs(workload: WorkloadRef, options: LogOptions) -> Result<ByteStream, Error> {
//!     let pods = Api::<Pod>::namespaced(&workload.bundle);
//!     let log = pods.logs(&workload.workload, &LogParams::from(&options)).await?;
//!     Ok(ByteStream::from(log))
//! }
//! ```
//!
//! # Custom resources
//!
//! A kind known only at run time is a [`DynamicObject`] over an
//! [`ApiResource`]:
//!
//! ```no_run
//! use pando_adapter_sdk_v02::kube::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
//!
//! # async fn f() -> Result<(), pando_adapter_sdk_v02::kube::KubeError> {
//! let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
//! let widgets = Api::<DynamicObject>::namespaced_with(
//!     "pando-x",
//!     &ApiResource::from_gvk_with_plural(&gvk, "widgets"),
//! );
//! for widget in widgets.list(&ListParams::default()).await? {
//!     let size = widget.data["spec"]["size"].as_u64();
//!     println!("{:?}: {size:?}", widget.metadata.name);
//! }
//! # Ok(()) }
//! ```
//!
//! # Deleting
//!
//! [`Api::delete`] answers `Ok(())` once the API server accepted the
//! deletion, and a 404 as an error ([`KubeError::is_not_found`]);
//! [`Api::delete_opt`] answers `Ok(false)` instead. Neither returns the
//! object or the `Status` the server sent back; [`wait_for_deletion`]
//! waits for the object to be gone.
//!
//! The raw import stays at [`crate::kubernetes`], for requests this client
//! does not make.

// The same files as the 0.1 line's (links into its `src/kube/`): the
// requests, their parameters, the answers and errors, the budget's
// bucket, the watch's events and the watcher's backoff.
mod api;
pub mod budget;
mod error;
mod params;
mod request;
mod requests;
mod watch_event;
mod watcher_parts;
// The 0.2 line's own: what sends and waits (`async`, on the import's
// streams and futures).
mod calls;
mod send;
mod watch;
pub mod watcher;

pub use api::{Api, Listed, Scope};
pub use budget::set_budget;
pub use error::KubeError;
pub use k8s_openapi::{ClusterResourceScope, List, NamespaceResourceScope, Resource};
pub use kube_core::{
    ApiResource, DynamicObject, GroupVersionKind, ObjectList, PartialObjectMeta, ResourceExt,
    TypeMeta,
};
pub use params::{
    DeleteParams, ExecParams, ListParams, LogParams, Patch, PatchParams, PostParams, Preconditions,
    PropagationPolicy, WatchParams,
};
pub use watch::WatchStream;
pub use watch_event::{WatchEnd, WatchEvent};
pub use watcher::{Backoff, Event as WatcherEvent, Watcher, wait_for_deletion, watcher};
pub use {k8s_openapi, kube_core};

use crate::bindings::wit_future;
use crate::kubernetes as raw;
use crate::streams;
use crate::types::{ByteStream, Error, ExecSession};

/// A pod's log as the contract's byte stream: the same bytes, handed on;
/// its `done` the import's, in the contract's words.
impl From<raw::LogStream> for ByteStream {
    fn from(log: raw::LogStream) -> ByteStream {
        let done = log.done;
        streams::handed_on(log.bytes, async move {
            done.await.map_err(|e| Error::from(KubeError::from(e)))
        })
    }
}

/// An exec session as the contract's: the same stdout and stderr, handed
/// on; its exit the import's, in the contract's words.
impl From<raw::ExecSession> for ExecSession {
    fn from(session: raw::ExecSession) -> ExecSession {
        let (exit, exit_reader) = wit_future::new::<Result<i32, Error>>(|| {
            Err(Error::Internal(
                "the Kubernetes import dropped the session's exit".into(),
            ))
        });
        let import_exit = session.exit;
        streams::settle(exit, async move {
            import_exit
                .await
                .map_err(|e| Error::from(KubeError::from(e)))
        });
        ExecSession {
            stdout: session.stdout,
            stderr: session.stderr,
            exit: exit_reader,
        }
    }
}
