//! The calls of an [`Api`], the 0.1 line's (blocking): each sends the
//! request `requests.rs` builds and decodes the answer.

use kube_core::params::GetParams;
use kube_core::{ObjectList, PartialObjectMeta};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::api::Listed;
use super::params::{DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams};
use super::params::{ExecParams, LogParams};
use super::request::check_status;
use super::requests::{not_found_is_none, to_json};
use super::send::{call, send, wait_turn};
use super::{Api, KubeError, WatchStream};
use crate::kubernetes as raw;
use crate::types::InputStream;
use k8s_openapi::api::core::v1::Pod;

impl<K> Api<K> {
    /// The object `name`; a 404 is an error ([`KubeError::is_not_found`]).
    pub fn get(&self, name: &str) -> Result<K, KubeError>
    where
        K: DeserializeOwned,
    {
        decode_sent(self.get_request(name, &GetParams::default())?)
    }

    /// The object `name`, or `None` when it does not exist (404).
    pub fn get_opt(&self, name: &str) -> Result<Option<K>, KubeError>
    where
        K: DeserializeOwned,
    {
        not_found_is_none(self.get(name))
    }

    /// The object `name` at any resource version (`resourceVersion=0`), or
    /// `None` when it does not exist: the host's watch-fed cache, or the API
    /// server's, may answer with a slightly older copy. For reads that
    /// report; a read that decides a write wants [`get_opt`](Self::get_opt).
    pub fn get_opt_any_version(&self, name: &str) -> Result<Option<K>, KubeError>
    where
        K: DeserializeOwned,
    {
        not_found_is_none(decode_sent(self.get_request(name, &GetParams::any())?))
    }

    /// The metadata of the object `name`, as kube-rs's `get_metadata`: a
    /// [`PartialObjectMeta`] (its `types` are the object's own). The host's
    /// import carries no `accept` header, so the API server sends the
    /// whole object and the SDK keeps only its metadata.
    ///
    /// ```no_run
    /// use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::ConfigMap;
    /// use pando_adapter_sdk::kube::{Api, ResourceExt};
    ///
    /// # fn f() -> Result<(), pando_adapter_sdk::kube::KubeError> {
    /// let meta = Api::<ConfigMap>::namespaced("pando-x").get_metadata("settings")?;
    /// println!("{} at {:?}", meta.name_any(), meta.resource_version());
    /// # Ok(()) }
    /// ```
    pub fn get_metadata(&self, name: &str) -> Result<PartialObjectMeta<K>, KubeError> {
        decode_sent(self.get_request(name, &GetParams::default())?)
    }

    /// The metadata of the objects `lp` selects, as kube-rs's
    /// `list_metadata`; like [`get_metadata`](Self::get_metadata), the
    /// server sends the objects whole.
    ///
    /// ```no_run
    /// use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::Secret;
    /// use pando_adapter_sdk::kube::{Api, ListParams, ResourceExt};
    ///
    /// # fn f() -> Result<(), pando_adapter_sdk::kube::KubeError> {
    /// let secrets = Api::<Secret>::namespaced("pando-x");
    /// let names: Vec<String> = secrets
    ///     .list_metadata(&ListParams::default().labels("app=web"))?
    ///     .iter()
    ///     .map(ResourceExt::name_any)
    ///     .collect();
    /// # let _ = names; Ok(()) }
    /// ```
    pub fn list_metadata(
        &self,
        lp: &ListParams,
    ) -> Result<ObjectList<PartialObjectMeta<K>>, KubeError>
    where
        K: Clone,
    {
        decode_sent(self.list_request(lp)?)
    }

    /// Create `object` (its namespace is this `Api`'s); the object as
    /// stored. A 409 means it exists.
    pub fn create(&self, pp: &PostParams, object: &K) -> Result<K, KubeError>
    where
        K: Serialize + DeserializeOwned,
    {
        decode_sent(self.create_request(pp, to_json(object)?)?)
    }

    /// Create the object `object` describes as JSON, sent as it is (give
    /// `apiVersion`, `kind` and `metadata.name`); the object as stored.
    ///
    /// ```no_run
    /// use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::ConfigMap;
    /// use pando_adapter_sdk::kube::{Api, PostParams};
    ///
    /// # fn f() -> Result<(), pando_adapter_sdk::kube::KubeError> {
    /// let created = Api::<ConfigMap>::namespaced("pando-x").create_json(
    ///     &PostParams::default(),
    ///     &serde_json::json!({
    ///         "apiVersion": "v1",
    ///         "kind": "ConfigMap",
    ///         "metadata": { "name": "settings" },
    ///         "data": { "greeting": "hello" },
    ///     }),
    /// )?;
    /// # let _ = created; Ok(()) }
    /// ```
    ///
    /// A patch from JSON needs no method of its own: every [`Patch`] takes
    /// a `serde_json::Value`.
    pub fn create_json(&self, pp: &PostParams, object: &serde_json::Value) -> Result<K, KubeError>
    where
        K: DeserializeOwned,
    {
        decode_sent(self.create_request(pp, to_json(object)?)?)
    }

    /// Replace the object `name` with `object` (whose
    /// `metadata.resourceVersion` guards against lost updates: a 409 then
    /// means someone changed it first).
    pub fn replace(&self, name: &str, pp: &PostParams, object: &K) -> Result<K, KubeError>
    where
        K: Serialize + DeserializeOwned,
    {
        call(
            self.object_request(name)?
                .replace(name, pp, to_json(object)?)?,
        )
    }

    /// Patch the object `name`; the object as stored. The patch's variant
    /// picks the strategy; server-side apply ([`Patch::Apply`]) needs
    /// [`PatchParams::apply`].
    pub fn patch<P: Serialize>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K, KubeError>
    where
        K: DeserializeOwned,
    {
        decode_sent(self.patch_request(name, None, pp, patch)?)
    }

    /// The object `name` through its `status` subresource.
    pub fn get_status(&self, name: &str) -> Result<K, KubeError>
    where
        K: DeserializeOwned,
    {
        call(self.object_request(name)?.get_subresource("status", name)?)
    }

    /// Replace the object's status (`PUT …/{name}/status`).
    pub fn replace_status(&self, name: &str, pp: &PostParams, object: &K) -> Result<K, KubeError>
    where
        K: Serialize + DeserializeOwned,
    {
        let request = self.object_request(name)?;
        call(request.replace_subresource("status", name, pp, to_json(object)?)?)
    }

    /// Patch the object's status (`PATCH …/{name}/status`).
    pub fn patch_status<P: Serialize>(
        &self,
        name: &str,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K, KubeError>
    where
        K: DeserializeOwned,
    {
        decode_sent(self.patch_request(name, Some("status"), pp, patch)?)
    }

    /// Delete the object `name`. `Ok` once the API server accepted the
    /// deletion (the object may linger while finalizers or a foreground
    /// deletion run: [`wait_for_deletion`](super::wait_for_deletion) waits
    /// for it to go); a 404 is an error ([`KubeError::is_not_found`]): use
    /// [`delete_opt`](Api::delete_opt) to treat it as done.
    pub fn delete(&self, name: &str, dp: &DeleteParams) -> Result<(), KubeError> {
        check_status(&send(self.delete_request(name, dp)?)?)
    }

    /// As [`delete`](Api::delete), but an object that does not exist is
    /// `Ok(false)`; `Ok(true)` when this call deleted it.
    pub fn delete_opt(&self, name: &str, dp: &DeleteParams) -> Result<bool, KubeError> {
        match self.delete(name, dp) {
            Ok(()) => Ok(true),
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Delete every object `lp`'s selectors select in this namespace (or,
    /// for a cluster-scoped kind, the cluster).
    pub fn delete_collection(&self, dp: &DeleteParams, lp: &ListParams) -> Result<(), KubeError> {
        check_status(&send(self.delete_collection_request(dp, lp)?)?)
    }

    /// Watch the collection's changes after `resource_version` (typically
    /// a list's `metadata.resource_version`; empty: from now). See
    /// [`WatchStream`] for how it ends, and [`watcher`](super::watcher) for
    /// a watch that lists again and backs off by itself.
    pub fn watch(
        &self,
        wp: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<K>, KubeError>
    where
        K: DeserializeOwned,
    {
        Ok(WatchStream::new(self.open_watch(wp, resource_version)?))
    }

    /// The objects `lp` selects as an [`ObjectList`], whatever the kind:
    /// what the watcher lists with.
    pub(crate) fn list_objects(&self, lp: &ListParams) -> Result<ObjectList<K>, KubeError>
    where
        K: Clone + DeserializeOwned,
    {
        decode_sent(self.list_request(lp)?)
    }

    /// Opens the host's watch of the collection.
    pub(crate) fn open_watch(
        &self,
        wp: &WatchParams,
        resource_version: &str,
    ) -> Result<raw::WatchStream, KubeError> {
        let request = self.watch_request(wp, resource_version)?;
        wait_turn()?;
        super::budget::spend();
        Ok(raw::watch(&request)?)
    }
}

impl<K> Api<K>
where
    K: kube_core::Resource,
    K::DynamicType: Listed<K>,
{
    /// The objects `lp` selects: `items`, and in `metadata` the list's
    /// `resource_version` (to watch from) and `continue_` (the next page's
    /// token, with a `limit`). A k8s-openapi kind's answer is its
    /// [`List`](k8s_openapi::List), a dynamic kind's an [`ObjectList`].
    pub fn list(&self, lp: &ListParams) -> Result<<K::DynamicType as Listed<K>>::List, KubeError> {
        decode_sent(self.list_request(lp)?)
    }
}

fn decode_sent<T: DeserializeOwned>(request: raw::Request) -> Result<T, KubeError> {
    super::request::decode(&send(request)?)
}

impl Api<Pod> {
    /// Stream a container's log (`pods/{name}/log`). Hand the stream on
    /// as it is (return it from [`Adapter::logs`](crate::Adapter::logs)) and
    /// its bytes never enter the guest.
    pub fn logs(&self, name: &str, lp: &LogParams) -> Result<InputStream, KubeError> {
        let namespace = self.pod_target(name)?;
        wait_turn()?;
        super::budget::spend();
        Ok(raw::logs(&lp.request(namespace, name))?)
    }

    /// Start a process in a container (`pods/{name}/exec`). The raw session
    /// implements [`ExecSession`](crate::ExecSession), so
    /// [`Adapter::exec`](crate::Adapter::exec) can return it boxed.
    pub fn exec(&self, name: &str, ep: &ExecParams) -> Result<raw::ExecSession, KubeError> {
        let namespace = self.pod_target(name)?;
        let request = ep.request(namespace, name)?;
        wait_turn()?;
        super::budget::spend();
        Ok(raw::exec(&request)?)
    }
}
