//! A typed Kubernetes client over the host's Kubernetes import, on
//! [`kube_core`], kube-rs's IO-free crate.
//!
//! Objects are [`k8s_openapi`] types (re-exported here, Kubernetes 1.36:
//! use this re-export rather than a dependency of your own, so the version
//! features agree), or, for custom resources and kinds known only at run
//! time, [`DynamicObject`]s over an [`ApiResource`]. [`Api<K>`] builds its
//! requests with [`kube_core::Request`] (the paths, the query of
//! [`ListParams`], [`PostParams`], [`PatchParams`], [`DeleteParams`],
//! [`WatchParams`]) and hands them to the host; it checks names before
//! sending and decodes answers. A failed call is a [`KubeError`], which `?`
//! turns into the contract's [`Error`]. What a kube-rs author reaches for
//! is here under kube-rs's names: [`ResourceExt`] (`name_any`, `labels`,
//! …), [`PartialObjectMeta`] and [`ObjectList`] from
//! [`get_metadata`](Api::get_metadata) and
//! [`list_metadata`](Api::list_metadata), [`Api::create_json`], a
//! [`watcher`] that lists again and backs off, and [`wait_for_deletion`];
//! the rest of kube-core is at [`kube_core`].
//!
//! ```no_run
//! use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{ConfigMap, Pod};
//! use pando_adapter_sdk::kube::{Api, DeleteParams, ListParams, Patch, PatchParams, ResourceExt};
//! use pando_adapter_sdk::types::Error;
//!
//! fn example() -> Result<(), Error> {
//!     let pods = Api::<Pod>::namespaced("pando-x");
//!     let web = pods.get("web")?;
//!     let running = pods.list(&ListParams::default().fields("status.phase=Running"))?;
//!     println!("{}: {} running", web.name_any(), running.items.len());
//!
//!     let configs = Api::<ConfigMap>::namespaced("pando-x");
//!     let patch = serde_json::json!({
//!         "apiVersion": "v1",
//!         "kind": "ConfigMap",
//!         "data": { "greeting": "hello" },
//!     });
//!     configs.patch("settings", &PatchParams::apply("pando").force(), &Patch::Apply(&patch))?;
//!     configs.delete_opt("old-settings", &DeleteParams::background())?;
//!     Ok(())
//! }
//! ```
//!
//! # Watching
//!
//! [`watcher`] does all of the below (and backs off on transient
//! failures); by hand, with [`Api::watch`]:
//!
//! ```no_run
//! use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::Pod;
//! use pando_adapter_sdk::kube::{Api, ListParams, WatchEnd, WatchEvent, WatchParams};
//! use pando_adapter_sdk::types::Error;
//!
//! fn follow(pods: &Api<Pod>) -> Result<(), Error> {
//!     // List, then watch from the list's version; list again on `Expired`.
//!     let list = pods.list(&ListParams::default())?;
//!     let mut version = list.metadata.resource_version.unwrap_or_default();
//!     loop {
//!         let mut stream = pods.watch(&WatchParams::default(), &version)?;
//!         let end = loop {
//!             // Wake on the stream, or on the call's cancellation (an `Err`).
//!             pando_adapter_sdk::time::wait_any(&[&stream.subscribe()])?;
//!             match stream.try_next() {
//!                 Ok(Some(WatchEvent::Added(pod) | WatchEvent::Modified(pod))) => {
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
//!                 let list = pods.list(&ListParams::default())?;
//!                 version = list.metadata.resource_version.unwrap_or_default();
//!             }
//!             WatchEnd::Failed(e) => return Err(e.into()),
//!         }
//!     }
//! }
//! ```
//!
//! # Custom resources
//!
//! A kind known only at run time is a [`DynamicObject`] over an
//! [`ApiResource`]:
//!
//! ```no_run
//! use pando_adapter_sdk::kube::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
//!
//! # fn f() -> Result<(), pando_adapter_sdk::kube::KubeError> {
//! let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
//! let widgets = Api::<DynamicObject>::namespaced_with(
//!     "pando-x",
//!     &ApiResource::from_gvk_with_plural(&gvk, "widgets"),
//! );
//! for widget in widgets.list(&ListParams::default())? {
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

// The same files in both SDK lines (the 0.2 line links to them): the
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
// The 0.1 line's own: what sends and waits (blocking, on pollables).
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

use crate::kubernetes as raw;
use crate::types::{Error, InputStream, OutputStream, TerminalSize};

/// The raw session forwards to the host's resource, so
/// [`Adapter::exec`](crate::Adapter::exec) can return what
/// [`Api::exec`] opened as it is.
impl crate::ExecSession for raw::ExecSession {
    fn stdin(&mut self) -> Option<OutputStream> {
        raw::ExecSession::stdin(self)
    }

    fn stdout(&mut self) -> Option<InputStream> {
        raw::ExecSession::stdout(self)
    }

    fn stderr(&mut self) -> Option<InputStream> {
        raw::ExecSession::stderr(self)
    }

    fn resize(&mut self, size: TerminalSize) -> Result<(), Error> {
        raw::ExecSession::resize(self, size.cols, size.rows)
            .map_err(|e| Error::from(KubeError::from(e)))
    }

    fn wait(&mut self) -> Result<i32, Error> {
        raw::ExecSession::wait(self).map_err(|e| Error::from(KubeError::from(e)))
    }
}
