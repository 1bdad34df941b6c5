//! The requests of an [`Api`]'s calls, each built with
//! [`kube_core::Request`], which `request.rs` turns into the host import's,
//! but a GET of a plainly named object, written as the import's request at
//! once (the same request; see `get_request`). Building only: each SDK
//! line's `calls.rs` sends them. The same file in both lines.

use kube_core::params::GetParams;
use serde::Serialize;

use super::params::{DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams};
use super::request::{to_raw, to_raw_watch};
use super::{Api, KubeError};
use crate::kubernetes as raw;

impl<K> Api<K> {
    /// A GET of the object `name`. For a name of the characters object
    /// names are made of, the import's request is written at once: the
    /// same path and query kube-core's `get` gives, without its URL
    /// formatted and then parsed by `http` and taken apart again, about a
    /// twentieth of a typed GET's instructions in wasm (docs/history/benchmarks.md,
    /// "The 3-GET call's guest, counted"). Any other name goes kube-core's
    /// way, so what `http` refuses is still refused as it was.
    pub(crate) fn get_request(
        &self,
        name: &str,
        gp: &GetParams,
    ) -> Result<raw::Request, KubeError> {
        if !plain_name(name) {
            return self.get_request_by_kube_core(name, gp);
        }
        Ok(raw::Request {
            method: raw::Method::Get,
            path: self.object_path(name)?,
            query: gp
                .resource_version
                .iter()
                .map(|v| ("resourceVersion".to_owned(), v.clone()))
                .collect(),
            body: None,
            content_type: None,
        })
    }

    /// A GET as kube-core builds it, made the import's request.
    pub(crate) fn get_request_by_kube_core(
        &self,
        name: &str,
        gp: &GetParams,
    ) -> Result<raw::Request, KubeError> {
        to_raw(self.object_request(name)?.get(name, gp)?)
    }

    pub(crate) fn list_request(&self, lp: &ListParams) -> Result<raw::Request, KubeError> {
        to_raw(self.request()?.list(&lp.into())?)
    }

    pub(crate) fn create_request(
        &self,
        pp: &PostParams,
        body: Vec<u8>,
    ) -> Result<raw::Request, KubeError> {
        self.need_namespace("creating an object")?;
        to_raw(self.request()?.create(pp, body)?)
    }

    pub(crate) fn patch_request<P: Serialize>(
        &self,
        name: &str,
        subresource: Option<&str>,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<raw::Request, KubeError> {
        let core = patch.to_core(pp)?;
        let request = self.object_request(name)?;
        let built = match subresource {
            Some(sub) => request.patch_subresource(sub, name, pp, &core)?,
            None => request.patch(name, pp, &core)?,
        };
        let mut r = to_raw(built)?;
        r.content_type = Some(patch.content_type());
        Ok(r)
    }

    pub(crate) fn delete_request(
        &self,
        name: &str,
        dp: &DeleteParams,
    ) -> Result<raw::Request, KubeError> {
        to_raw(self.object_request(name)?.delete(name, dp)?)
    }

    pub(crate) fn delete_collection_request(
        &self,
        dp: &DeleteParams,
        lp: &ListParams,
    ) -> Result<raw::Request, KubeError> {
        self.need_namespace("deleting a collection")?;
        to_raw(self.request()?.delete_collection(dp, &lp.into())?)
    }

    /// The host's watch request of the collection after
    /// `resource_version`.
    pub(crate) fn watch_request(
        &self,
        wp: &WatchParams,
        resource_version: &str,
    ) -> Result<raw::WatchRequest, KubeError> {
        let mut request = to_raw_watch(self.request()?.watch(&wp.into(), resource_version)?)?;
        // kube-core asks for 290 s when given none; the SDK leaves it to
        // the server, as its `WatchParams` say.
        request.timeout_seconds = wp.timeout_seconds;
        Ok(request)
    }
}

pub(crate) fn not_found_is_none<T>(answer: Result<T, KubeError>) -> Result<Option<T>, KubeError> {
    match answer {
        Ok(object) => Ok(Some(object)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

pub(crate) fn to_json<T: Serialize>(object: &T) -> Result<Vec<u8>, KubeError> {
    serde_json::to_vec(object)
        .map_err(|e| KubeError::InvalidRequest(format!("the object does not serialize: {e}")))
}

/// A name that kube-core would put in a URL as it is and `http` accept
/// unchanged: not empty, at most a DNS subdomain's 253 characters, and of
/// letters, digits, `-`, `.`, `_` and `:` (names like
/// `system:controller:…`).
pub(crate) fn plain_name(name: &str) -> bool {
    (1..=253).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b':'))
        && name != "."
        && name != ".."
}

#[cfg(test)]
mod tests;
