//! [`Api`]: the typed handle on one kind's objects, and its paths. The
//! calls are in `calls.rs`.

use std::fmt;
use std::marker::PhantomData;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::{ClusterResourceScope, List, ListableResource, NamespaceResourceScope, Resource};
use kube_core::{ApiResource, ObjectList};

use super::KubeError;

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
/// namespace); for a kind known only at run time (a custom resource), an
/// `Api<DynamicObject>` with [`Api::namespaced_with`] or [`Api::all_with`].
/// Every call is one request through the host, checked against the
/// adapter's grants; names are checked first, so a name with a `/` is
/// [`KubeError::InvalidRequest`] rather than another path. The requests
/// are built by [`kube_core::Request`].
pub struct Api<K> {
    /// The kind's group, version and plural: its paths.
    resource: ApiResource,
    /// Whether the kind is known to be namespaced (a dynamic kind is taken
    /// at its word: [`Api::all_with`] addresses it cluster-wide).
    namespaced_kind: bool,
    namespace: Option<String>,
    kind: PhantomData<fn() -> K>,
}

impl<K> Clone for Api<K> {
    fn clone(&self) -> Self {
        Api {
            resource: self.resource.clone(),
            namespaced_kind: self.namespaced_kind,
            namespace: self.namespace.clone(),
            kind: PhantomData,
        }
    }
}

impl<K> fmt::Debug for Api<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Api")
            .field("kind", &self.resource.kind)
            .field("api_version", &self.resource.api_version)
            .field("namespace", &self.namespace)
            .finish()
    }
}

impl<K: Resource<Scope = NamespaceResourceScope>> Api<K> {
    /// The objects of a namespaced kind in `namespace`.
    pub fn namespaced(namespace: &str) -> Self {
        Api::typed(Some(namespace.into()))
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
        Api::typed(None)
    }

    fn typed(namespace: Option<String>) -> Self {
        Api {
            resource: ApiResource {
                group: K::GROUP.into(),
                version: K::VERSION.into(),
                api_version: K::API_VERSION.into(),
                kind: K::KIND.into(),
                plural: K::URL_PATH_SEGMENT.into(),
            },
            namespaced_kind: <K::Scope as Scope>::NAMESPACED,
            namespace,
            kind: PhantomData,
        }
    }
}

impl<K: kube_core::Resource<DynamicType = ApiResource>> Api<K> {
    /// The objects of the kind `resource` describes in `namespace`: a
    /// custom resource, or any kind known only at run time, as
    /// [`DynamicObject`](kube_core::DynamicObject)s.
    ///
    /// The crate's `kube` docs show one listed ("Custom resources").
    pub fn namespaced_with(namespace: &str, resource: &ApiResource) -> Self {
        Api {
            resource: resource.clone(),
            namespaced_kind: true,
            namespace: Some(namespace.into()),
            kind: PhantomData,
        }
    }

    /// The objects of the kind `resource` describes across the cluster: a
    /// cluster-scoped kind's, or (for `list` and `watch`) a namespaced
    /// kind's in every namespace.
    pub fn all_with(resource: &ApiResource) -> Self {
        Api {
            resource: resource.clone(),
            namespaced_kind: false,
            namespace: None,
            kind: PhantomData,
        }
    }
}

/// What a [`list`](Api::list) answers for a kind, by the kind's dynamic
/// type: a k8s-openapi kind's [`List`], a dynamic kind's [`ObjectList`].
/// Both have `items` and `metadata` (`resource_version`, `continue_`).
pub trait Listed<K> {
    /// The list's type.
    type List: serde::de::DeserializeOwned;
}

impl<K: ListableResource + serde::de::DeserializeOwned> Listed<K> for () {
    type List = List<K>;
}

impl<K: Clone + serde::de::DeserializeOwned> Listed<K> for ApiResource {
    type List = ObjectList<K>;
}

impl<K> Api<K> {
    /// The namespace, for an [`Api::namespaced`].
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The kind's group, version, kind and plural.
    pub fn resource(&self) -> &ApiResource {
        &self.resource
    }

    /// The collection's path: `/api/v1/namespaces/{ns}/pods`,
    /// `/apis/apps/v1/deployments`, `/api/v1/namespaces`.
    pub fn collection_path(&self) -> Result<String, KubeError> {
        if let Some(ns) = &self.namespace {
            validate_segment("namespace", ns)?;
        }
        Ok(<kube_core::DynamicObject as kube_core::Resource>::url_path(
            &self.resource,
            self.namespace.as_deref(),
        ))
    }

    /// One object's path: the collection's, then `/{name}`.
    pub fn object_path(&self, name: &str) -> Result<String, KubeError> {
        Ok(format!("{}/{name}", self.object_collection(name)?))
    }

    /// A subresource's path: the object's, then `/{subresource}`
    /// (`status`, `scale`, `log` …).
    pub fn subresource_path(&self, name: &str, subresource: &str) -> Result<String, KubeError> {
        validate_segment("subresource", subresource)?;
        Ok(format!("{}/{subresource}", self.object_path(name)?))
    }

    /// kube-core's request builder on the collection.
    pub(crate) fn request(&self) -> Result<kube_core::Request, KubeError> {
        Ok(kube_core::Request::new(self.collection_path()?))
    }

    /// The collection holding the object `name`, once the name is checked
    /// and a namespaced kind has its namespace.
    fn object_collection(&self, name: &str) -> Result<String, KubeError> {
        self.need_namespace("an object")?;
        validate_segment("name", name)?;
        self.collection_path()
    }

    /// kube-core's request builder for the object `name` (checked).
    pub(crate) fn object_request(&self, name: &str) -> Result<kube_core::Request, KubeError> {
        Ok(kube_core::Request::new(self.object_collection(name)?))
    }

    /// An error when a namespaced kind is addressed without a namespace.
    pub(crate) fn need_namespace(&self, what: &str) -> Result<(), KubeError> {
        if self.namespaced_kind && self.namespace.is_none() {
            Err(KubeError::InvalidRequest(format!(
                "{what} of the namespaced kind {} needs a namespace: use Api::namespaced",
                self.resource.kind
            )))
        } else {
            Ok(())
        }
    }
}

impl Api<Pod> {
    /// The namespace of pod `name`'s log or exec, both checked.
    pub(crate) fn pod_target(&self, name: &str) -> Result<&str, KubeError> {
        self.need_namespace("a pod's log or exec")?;
        validate_segment("name", name)?;
        let namespace = self.namespace.as_deref().unwrap_or_default();
        validate_segment("namespace", namespace)?;
        Ok(namespace)
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

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Namespace, PersistentVolume};
    use k8s_openapi::api::rbac::v1::ClusterRole;
    use kube_core::{DynamicObject, GroupVersionKind};

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
    fn dynamic_paths_are_the_typed_ones() {
        let gvk = GroupVersionKind::gvk("apps", "v1", "Deployment");
        let ar = ApiResource::from_gvk_with_plural(&gvk, "deployments");
        let dynamic = Api::<DynamicObject>::namespaced_with("pando-x", &ar);
        assert_eq!(
            dynamic.object_path("web").unwrap(),
            Api::<Deployment>::namespaced("pando-x")
                .object_path("web")
                .unwrap()
        );
        let widgets = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("example.com", "v1", "Widget"),
            "widgets",
        );
        assert_eq!(
            Api::<DynamicObject>::all_with(&widgets)
                .collection_path()
                .unwrap(),
            "/apis/example.com/v1/widgets"
        );
        assert!(
            Api::<DynamicObject>::namespaced_with("a/b", &widgets)
                .collection_path()
                .is_err()
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
            assert!(pods.object_request(name).is_err(), "{name:?}");
        }
        let bad_ns = Api::<Pod>::namespaced("kube-system/secrets");
        assert!(bad_ns.collection_path().is_err());
        assert!(bad_ns.request().is_err());
        // A pod's log or exec is refused before anything is sent.
        let e = bad_ns.pod_target("web").unwrap_err();
        assert!(matches!(e, KubeError::InvalidRequest(_)));
    }

    #[test]
    fn a_namespaced_kind_across_namespaces_only_lists() {
        let all = Api::<Pod>::all();
        assert!(all.request().is_ok());
        assert!(matches!(
            all.object_path("web"),
            Err(KubeError::InvalidRequest(_))
        ));
        assert!(all.pod_target("web").is_err(), "a pod's log or exec");
    }
}
