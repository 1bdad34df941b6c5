//! [`Api`]: the typed handle on one kind's objects, its paths, and the one
//! place that calls the raw import.

use std::fmt;
use std::marker::PhantomData;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::{ClusterResourceScope, List, ListableResource, NamespaceResourceScope, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::params::{
    DeleteParams, ExecParams, ListParams, LogParams, Patch, PatchParams, PostParams, Query,
    WatchParams,
};
use super::{KubeError, WatchStream};
use crate::kubernetes as raw;
use crate::types::InputStream;

mod sealed {
    pub trait Sealed {}
    impl Sealed for k8s_openapi::NamespaceResourceScope {}
    impl Sealed for k8s_openapi::ClusterResourceScope {}
}

/// The scopes an [`Api`] serves: namespaced and cluster-scoped kinds
/// (subresource types such as `Status` are not objects of their own).
pub trait Scope: sealed::Sealed {
    /// Whether objects of the kind live in a namespace.
    const NAMESPACED: bool;
}

impl Scope for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl Scope for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// The objects of kind `K` in one namespace, or in the whole cluster.
///
/// Build it with [`Api::namespaced`] (namespaced kinds only: checked at
/// compile time) or [`Api::all`] (a cluster-scoped kind, or every namespace
/// of a namespaced kind: `list` and `watch` then, since a name needs a
/// namespace). Every call is one request through the host, checked against
/// the adapter's grants; names are checked first, so a name with a `/` is
/// [`KubeError::InvalidRequest`] rather than another path.
pub struct Api<K> {
    namespace: Option<String>,
    kind: PhantomData<fn() -> K>,
}

impl<K> Clone for Api<K> {
    fn clone(&self) -> Self {
        Api {
            namespace: self.namespace.clone(),
            kind: PhantomData,
        }
    }
}

impl<K: Resource> fmt::Debug for Api<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Api")
            .field("kind", &K::KIND)
            .field("api_version", &K::API_VERSION)
            .field("namespace", &self.namespace)
            .finish()
    }
}

impl<K: Resource<Scope = NamespaceResourceScope>> Api<K> {
    /// The objects of a namespaced kind in `namespace`.
    pub fn namespaced(namespace: &str) -> Self {
        Api {
            namespace: Some(namespace.into()),
            kind: PhantomData,
        }
    }
}

impl<K> Api<K>
where
    K: Resource,
    K::Scope: Scope,
{
    /// A cluster-scoped kind's objects, or a namespaced kind's objects in
    /// every namespace (for `list` and `watch`).
    pub fn all() -> Self {
        Api {
            namespace: None,
            kind: PhantomData,
        }
    }

    /// The namespace, for an [`Api::namespaced`].
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The collection's path: `/api/v1/namespaces/{ns}/pods`,
    /// `/apis/apps/v1/deployments`, `/api/v1/namespaces`.
    pub fn collection_path(&self) -> Result<String, KubeError> {
        let prefix = if K::GROUP.is_empty() {
            format!("/api/{}", K::VERSION)
        } else {
            format!("/apis/{}/{}", K::GROUP, K::VERSION)
        };
        match &self.namespace {
            Some(ns) => {
                validate_segment("namespace", ns)?;
                Ok(format!("{prefix}/namespaces/{ns}/{}", K::URL_PATH_SEGMENT))
            }
            None => Ok(format!("{prefix}/{}", K::URL_PATH_SEGMENT)),
        }
    }

    /// One object's path: the collection's, then `/{name}`.
    pub fn object_path(&self, name: &str) -> Result<String, KubeError> {
        self.need_namespace("an object")?;
        validate_segment("name", name)?;
        Ok(format!("{}/{name}", self.collection_path()?))
    }

    /// A subresource's path: the object's, then `/{subresource}`
    /// (`status`, `scale`, `log` …).
    pub fn subresource_path(&self, name: &str, subresource: &str) -> Result<String, KubeError> {
        validate_segment("subresource", subresource)?;
        Ok(format!("{}/{subresource}", self.object_path(name)?))
    }

    /// An error when a namespaced kind is addressed without a namespace.
    fn need_namespace(&self, what: &str) -> Result<(), KubeError> {
        if <K::Scope as Scope>::NAMESPACED && self.namespace.is_none() {
            Err(KubeError::InvalidRequest(format!(
                "{what} of the namespaced kind {} needs a namespace: use Api::namespaced",
                K::KIND
            )))
        } else {
            Ok(())
        }
    }

    fn get_request(&self, name: &str) -> Result<raw::Request, KubeError> {
        Ok(request(
            raw::Method::Get,
            self.object_path(name)?,
            Query::new(),
        ))
    }

    fn list_request(&self, lp: &ListParams) -> Result<raw::Request, KubeError> {
        Ok(request(
            raw::Method::Get,
            self.collection_path()?,
            lp.query(),
        ))
    }

    fn create_request(&self, pp: &PostParams, object: &K) -> Result<raw::Request, KubeError>
    where
        K: Serialize,
    {
        self.need_namespace("creating an object")?;
        let mut r = request(raw::Method::Post, self.collection_path()?, pp.query());
        r.body = Some(to_json(object)?);
        Ok(r)
    }

    fn replace_request(
        &self,
        path: String,
        pp: &PostParams,
        object: &K,
    ) -> Result<raw::Request, KubeError>
    where
        K: Serialize,
    {
        let mut r = request(raw::Method::Put, path, pp.query());
        r.body = Some(to_json(object)?);
        Ok(r)
    }

    fn patch_request<P: Serialize>(
        &self,
        path: String,
        pp: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<raw::Request, KubeError> {
        let mut r = request(raw::Method::Patch, path, pp.query(patch)?);
        r.body = Some(patch.body()?);
        r.content_type = Some(patch.content_type());
        Ok(r)
    }

    fn delete_request(&self, name: &str, dp: &DeleteParams) -> Result<raw::Request, KubeError> {
        Ok(request(
            raw::Method::Delete,
            self.object_path(name)?,
            dp.query(),
        ))
    }

    fn delete_collection_request(
        &self,
        dp: &DeleteParams,
        lp: &ListParams,
    ) -> Result<raw::Request, KubeError> {
        self.need_namespace("deleting a collection")?;
        let mut query = lp.query();
        query.extend(dp.query());
        Ok(request(raw::Method::Delete, self.collection_path()?, query))
    }

    /// The object `name`; a 404 is an error ([`KubeError::is_not_found`]).
    pub fn get(&self, name: &str) -> Result<K, KubeError>
    where
        K: DeserializeOwned,
    {
        call(self.get_request(name)?)
    }

    /// The object `name`, or `None` when it does not exist (404).
    pub fn get_opt(&self, name: &str) -> Result<Option<K>, KubeError>
    where
        K: DeserializeOwned,
    {
        match self.get(name) {
            Ok(object) => Ok(Some(object)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The object `name` at any resource version (`resourceVersion=0`), or
    /// `None` when it does not exist: the host's watch-fed cache, or the API
    /// server's, may answer with a slightly older copy. For reads that
    /// report; a read that decides a write wants [`get_opt`](Self::get_opt).
    pub fn get_opt_any_version(&self, name: &str) -> Result<Option<K>, KubeError>
    where
        K: DeserializeOwned,
    {
        let mut req = self.get_request(name)?;
        req.query.push(("resourceVersion".into(), "0".into()));
        match call(req) {
            Ok(object) => Ok(Some(object)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The objects `lp` selects: `items`, and in `metadata` the list's
    /// `resource_version` (to watch from) and `continue_` (the next page's
    /// token, with a `limit`).
    pub fn list(&self, lp: &ListParams) -> Result<List<K>, KubeError>
    where
        K: ListableResource + DeserializeOwned,
    {
        call(self.list_request(lp)?)
    }

    /// Create `object` (its namespace is this `Api`'s); the object as
    /// stored. A 409 means it exists.
    pub fn create(&self, pp: &PostParams, object: &K) -> Result<K, KubeError>
    where
        K: Serialize + DeserializeOwned,
    {
        call(self.create_request(pp, object)?)
    }

    /// Replace the object `name` with `object` (whose
    /// `metadata.resourceVersion` guards against lost updates: a 409 then
    /// means someone changed it first).
    pub fn replace(&self, name: &str, pp: &PostParams, object: &K) -> Result<K, KubeError>
    where
        K: Serialize + DeserializeOwned,
    {
        call(self.replace_request(self.object_path(name)?, pp, object)?)
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
        call(self.patch_request(self.object_path(name)?, pp, patch)?)
    }

    /// The object `name` through its `status` subresource.
    pub fn get_status(&self, name: &str) -> Result<K, KubeError>
    where
        K: DeserializeOwned,
    {
        let path = self.subresource_path(name, "status")?;
        call(request(raw::Method::Get, path, Query::new()))
    }

    /// Replace the object's status (`PUT …/{name}/status`).
    pub fn replace_status(&self, name: &str, pp: &PostParams, object: &K) -> Result<K, KubeError>
    where
        K: Serialize + DeserializeOwned,
    {
        call(self.replace_request(self.subresource_path(name, "status")?, pp, object)?)
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
        call(self.patch_request(self.subresource_path(name, "status")?, pp, patch)?)
    }

    /// Delete the object `name`. `Ok` once the API server accepted the
    /// deletion (the object may linger while finalizers or a foreground
    /// deletion run); a 404 is an error ([`KubeError::is_not_found`]): use
    /// [`delete_opt`](Api::delete_opt) to treat it as done.
    pub fn delete(&self, name: &str, dp: &DeleteParams) -> Result<(), KubeError> {
        check(send(self.delete_request(name, dp)?)?)
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

    /// Delete every object `lp` selects in this namespace (or, for a
    /// cluster-scoped kind, the cluster).
    pub fn delete_collection(&self, dp: &DeleteParams, lp: &ListParams) -> Result<(), KubeError> {
        check(send(self.delete_collection_request(dp, lp)?)?)
    }

    /// Watch the collection's changes after `resource_version` (typically
    /// a list's `metadata.resource_version`; empty: from now). See
    /// [`WatchStream`] for how it ends.
    pub fn watch(
        &self,
        wp: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<K>, KubeError>
    where
        K: DeserializeOwned,
    {
        let request = wp.request(self.collection_path()?, resource_version);
        super::budget::wait_turn()?;
        super::budget::spend();
        let stream = raw::watch(&request)?;
        Ok(WatchStream::new(stream))
    }
}

impl Api<Pod> {
    fn pod_target(&self, name: &str) -> Result<&str, KubeError> {
        self.need_namespace("a pod's log or exec")?;
        validate_segment("name", name)?;
        let namespace = self.namespace.as_deref().unwrap_or_default();
        validate_segment("namespace", namespace)?;
        Ok(namespace)
    }

    /// Stream a container's log (`pods/{name}/log`). Hand the stream on
    /// as it is (return it from [`Adapter::logs`](crate::Adapter::logs)) and
    /// its bytes never enter the guest.
    pub fn logs(&self, name: &str, lp: &LogParams) -> Result<InputStream, KubeError> {
        let namespace = self.pod_target(name)?;
        super::budget::wait_turn()?;
        super::budget::spend();
        Ok(raw::logs(&lp.request(namespace, name))?)
    }

    /// Start a process in a container (`pods/{name}/exec`). The raw session
    /// implements [`ExecSession`](crate::ExecSession), so
    /// [`Adapter::exec`](crate::Adapter::exec) can return it boxed.
    pub fn exec(&self, name: &str, ep: &ExecParams) -> Result<raw::ExecSession, KubeError> {
        let namespace = self.pod_target(name)?;
        let request = ep.request(namespace, name)?;
        super::budget::wait_turn()?;
        super::budget::spend();
        Ok(raw::exec(&request)?)
    }
}

/// Check one path segment (a name, a namespace): not empty, not `.` or
/// `..`, no `/`, `%`, `?`, `#`, whitespace or control characters — what
/// would make it another path rather than a name that does not exist.
pub(crate) fn validate_segment(what: &str, segment: &str) -> Result<(), KubeError> {
    let bad = segment.is_empty()
        || segment == "."
        || segment == ".."
        || segment.chars().any(|c| {
            matches!(c, '/' | '%' | '?' | '#' | '\\') || c.is_whitespace() || c.is_control()
        });
    if bad {
        Err(KubeError::InvalidRequest(format!(
            "{what} {segment:?} is not a valid path segment"
        )))
    } else {
        Ok(())
    }
}

fn request(method: raw::Method, path: String, query: Query) -> raw::Request {
    raw::Request {
        method,
        path,
        query,
        body: None,
        content_type: None,
    }
}

fn to_json<T: Serialize>(object: &T) -> Result<Vec<u8>, KubeError> {
    serde_json::to_vec(object)
        .map_err(|e| KubeError::InvalidRequest(format!("the object does not serialize: {e}")))
}

/// The one place a typed call reaches the import, after the adapter's own
/// budget ([`super::budget`]) lets it.
fn send(request: raw::Request) -> Result<raw::Response, KubeError> {
    super::budget::wait_turn()?;
    let response = raw::send(&request);
    let cached = response.as_ref().is_ok_and(|r| {
        r.headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("pando-cache") && v == "hit")
    });
    // A refusal of the host's (grants, body cap) never reached the API
    // server either; the host's own rate still counts those.
    let reached = !matches!(
        &response,
        Err(raw::ApiError::Denied(_)
            | raw::ApiError::InvalidRequest(_)
            | raw::ApiError::TooLarge(_)
            | raw::ApiError::Cancelled)
    );
    if reached && !cached {
        super::budget::spend();
    }
    Ok(response?)
}

fn call<T: DeserializeOwned>(request: raw::Request) -> Result<T, KubeError> {
    decode(&send(request)?)
}

/// A 2xx answer's body as `T`; otherwise the answer's error.
pub(crate) fn decode<T: DeserializeOwned>(response: &raw::Response) -> Result<T, KubeError> {
    check_status(response)?;
    serde_json::from_slice(&response.body).map_err(|e| KubeError::Decode(e.to_string()))
}

/// `Ok` for a 2xx answer; otherwise its error.
pub(crate) fn check(response: raw::Response) -> Result<(), KubeError> {
    check_status(&response)
}

fn check_status(response: &raw::Response) -> Result<(), KubeError> {
    if (200..300).contains(&response.status) {
        Ok(())
    } else {
        Err(KubeError::from_response(
            response.status,
            &response.headers,
            &response.body,
        ))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace, PersistentVolume};
    use k8s_openapi::api::rbac::v1::ClusterRole;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    #[test]
    fn core_and_grouped_paths() {
        let pods = Api::<Pod>::namespaced("pando-x");
        assert_eq!(
            pods.collection_path().unwrap(),
            "/api/v1/namespaces/pando-x/pods"
        );
        assert_eq!(
            pods.object_path("web").unwrap(),
            "/api/v1/namespaces/pando-x/pods/web"
        );
        assert_eq!(Api::<Pod>::all().collection_path().unwrap(), "/api/v1/pods");
        let deployments = Api::<Deployment>::namespaced("pando-x");
        assert_eq!(
            deployments.object_path("web").unwrap(),
            "/apis/apps/v1/namespaces/pando-x/deployments/web"
        );
        assert_eq!(
            Api::<Deployment>::all().collection_path().unwrap(),
            "/apis/apps/v1/deployments"
        );
    }

    #[test]
    fn cluster_scoped_paths() {
        assert_eq!(
            Api::<Namespace>::all().object_path("pando-x").unwrap(),
            "/api/v1/namespaces/pando-x"
        );
        assert_eq!(
            Api::<PersistentVolume>::all().object_path("pv-1").unwrap(),
            "/api/v1/persistentvolumes/pv-1"
        );
        assert_eq!(
            Api::<ClusterRole>::all()
                .object_path("system:admin")
                .unwrap(),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:admin"
        );
    }

    #[test]
    fn subresource_paths() {
        let pods = Api::<Pod>::namespaced("pando-x");
        assert_eq!(
            pods.subresource_path("web", "log").unwrap(),
            "/api/v1/namespaces/pando-x/pods/web/log"
        );
        assert_eq!(
            pods.subresource_path("web", "status").unwrap(),
            "/api/v1/namespaces/pando-x/pods/web/status"
        );
        assert_eq!(
            Api::<Deployment>::namespaced("a")
                .subresource_path("d", "scale")
                .unwrap(),
            "/apis/apps/v1/namespaces/a/deployments/d/scale"
        );
        assert!(pods.subresource_path("web", "log/../../x").is_err());
    }

    #[test]
    fn bad_names_are_errors_not_paths() {
        let pods = Api::<Pod>::namespaced("pando-x");
        for name in [
            "",
            ".",
            "..",
            "a/b",
            "../secrets",
            "a%2Fb",
            "a?b",
            "a#b",
            "a b",
            "a\nb",
        ] {
            assert!(
                matches!(pods.object_path(name), Err(KubeError::InvalidRequest(_))),
                "{name:?}"
            );
            assert!(pods.get_request(name).is_err(), "{name:?}");
        }
        let bad_ns = Api::<Pod>::namespaced("kube-system/secrets");
        assert!(bad_ns.collection_path().is_err());
        assert!(bad_ns.list_request(&ListParams::default()).is_err());
        let e = bad_ns.logs("web", &LogParams::default()).unwrap_err();
        assert!(matches!(e, KubeError::InvalidRequest(_)));
    }

    #[test]
    fn a_namespaced_kind_across_namespaces_only_lists() {
        let all = Api::<Pod>::all();
        assert!(all.list_request(&ListParams::default()).is_ok());
        assert!(matches!(
            all.object_path("web"),
            Err(KubeError::InvalidRequest(_))
        ));
        assert!(
            all.create_request(&PostParams::default(), &Pod::default())
                .is_err()
        );
        assert!(
            all.delete_collection_request(&DeleteParams::default(), &ListParams::default())
                .is_err()
        );
        assert!(all.exec("web", &ExecParams::default()).is_err());
    }

    #[test]
    fn requests() {
        let cms = Api::<ConfigMap>::namespaced("pando-probe");
        let r = cms.get_request("cfg").unwrap();
        assert_eq!(r.method, raw::Method::Get);
        assert_eq!(r.path, "/api/v1/namespaces/pando-probe/configmaps/cfg");
        assert!(r.query.is_empty() && r.body.is_none() && r.content_type.is_none());

        let r = cms
            .list_request(&ListParams::default().labels("a=b"))
            .unwrap();
        assert_eq!(r.path, "/api/v1/namespaces/pando-probe/configmaps");
        assert_eq!(r.query, [("labelSelector".to_string(), "a=b".to_string())]);

        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some("cfg".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        let pp = PostParams {
            dry_run: true,
            field_manager: None,
        };
        let r = cms.create_request(&pp, &cm).unwrap();
        assert_eq!(r.method, raw::Method::Post);
        assert_eq!(r.path, "/api/v1/namespaces/pando-probe/configmaps");
        assert_eq!(r.query, [("dryRun".to_string(), "All".to_string())]);
        let body: serde_json::Value = serde_json::from_slice(r.body.as_ref().unwrap()).unwrap();
        assert_eq!(body["kind"], "ConfigMap");
        assert_eq!(body["apiVersion"], "v1");
        assert_eq!(body["metadata"]["name"], "cfg");

        let r = cms
            .replace_request(cms.object_path("cfg").unwrap(), &PostParams::default(), &cm)
            .unwrap();
        assert_eq!(r.method, raw::Method::Put);
        assert_eq!(r.path, "/api/v1/namespaces/pando-probe/configmaps/cfg");

        let patch = Patch::Apply(&cm);
        let r = cms
            .patch_request(
                cms.object_path("cfg").unwrap(),
                &PatchParams::apply("pando").force(),
                &patch,
            )
            .unwrap();
        assert_eq!(r.method, raw::Method::Patch);
        assert_eq!(r.content_type, Some(raw::ContentType::ApplyPatch));
        assert_eq!(
            r.query,
            [
                ("force".to_string(), "true".to_string()),
                ("fieldManager".to_string(), "pando".to_string())
            ]
        );

        let r = cms
            .delete_request("cfg", &DeleteParams::foreground())
            .unwrap();
        assert_eq!(r.method, raw::Method::Delete);
        assert_eq!(r.path, "/api/v1/namespaces/pando-probe/configmaps/cfg");
        assert_eq!(
            r.query,
            [("propagationPolicy".to_string(), "Foreground".to_string())]
        );

        let r = cms
            .delete_collection_request(
                &DeleteParams::background(),
                &ListParams::default().labels("x=y"),
            )
            .unwrap();
        assert_eq!(r.path, "/api/v1/namespaces/pando-probe/configmaps");
        assert_eq!(
            r.query,
            [
                ("labelSelector".to_string(), "x=y".to_string()),
                ("propagationPolicy".to_string(), "Background".to_string())
            ]
        );
    }

    fn response(status: u16, body: &str) -> raw::Response {
        raw::Response {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn decodes_answers() {
        let pod: Pod = decode(&response(
            200,
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"pando-x"}}"#,
        ))
        .unwrap();
        assert_eq!(pod.metadata.name.as_deref(), Some("web"));

        let list: List<Pod> = decode(&response(
            200,
            r#"{"apiVersion":"v1","kind":"PodList","metadata":{"resourceVersion":"42","continue":"tok"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#,
        ))
        .unwrap();
        assert_eq!(list.items.len(), 2);
        assert_eq!(list.metadata.resource_version.as_deref(), Some("42"));
        assert_eq!(list.metadata.continue_.as_deref(), Some("tok"));

        let e = decode::<Pod>(&response(
            404,
            r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"web\" not found","reason":"NotFound","code":404}"#,
        ))
        .unwrap_err();
        assert!(e.is_not_found());

        let e = decode::<Pod>(&response(200, "not json")).unwrap_err();
        assert!(matches!(e, KubeError::Decode(_)));
        let e = decode::<Pod>(&response(200, r#"{"kind":"Service"}"#)).unwrap_err();
        assert!(matches!(e, KubeError::Decode(_)));
        assert!(check(response(202, "{}")).is_ok());
        assert!(check(response(409, "{}")).unwrap_err().is_conflict());
    }
}
