//! Parsing and canonicalizing one Kubernetes API request, before any grant
//! check.
//!
//! The grant checker compares strings, so the path it sees must have exactly
//! one spelling for each object: anything the API server might read
//! differently from us (escapes, relative segments, alternate case, smuggled
//! queries, legacy prefixes) is refused here rather than normalized, so a
//! grant can never be checked against one object while the request reaches
//! another.

use std::fmt;

use serde::Serialize;

/// The request's HTTP method, mirroring the WIT `method` enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Method {
    /// `GET`.
    Get,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
    /// `DELETE`.
    Delete,
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        })
    }
}

/// A request's verb, as Kubernetes RBAC names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    /// Read one named object.
    Get,
    /// Read a collection.
    List,
    /// Watch a collection.
    Watch,
    /// Create an object (`POST`).
    Create,
    /// Replace an object (`PUT`).
    Update,
    /// Patch an object.
    Patch,
    /// Delete one named object.
    Delete,
    /// Delete a collection.
    #[serde(rename = "deletecollection")]
    DeleteCollection,
}

impl Verb {
    /// Every verb, in RBAC's usual order.
    pub const ALL: [Verb; 8] = [
        Verb::Get,
        Verb::List,
        Verb::Watch,
        Verb::Create,
        Verb::Update,
        Verb::Patch,
        Verb::Delete,
        Verb::DeleteCollection,
    ];

    /// The RBAC name (`get`, `deletecollection`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }

    /// The verb with this RBAC name; exact and lowercase only.
    pub fn from_rbac(name: &str) -> Option<Verb> {
        Verb::ALL.into_iter().find(|v| v.as_str() == name)
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The object or collection a resource request reaches, canonical.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ApiTarget {
    /// The API group; `""` for the core group (`/api/v1`).
    pub group: String,
    /// The API version (`v1`, `v1beta1`).
    pub version: String,
    /// The resource, plural and lowercase (`pods`).
    pub resource: String,
    /// The subresource (`log`, `status`, `scale`), if any.
    pub subresource: Option<String>,
    /// The namespace in the path; none for cluster-scoped objects and
    /// all-namespaces collections.
    pub namespace: Option<String>,
    /// The object's name; none for a collection.
    pub name: Option<String>,
}

impl ApiTarget {
    /// The resource as a grant spells it: `resource` or `group/resource`,
    /// with `/subresource` appended (`pods/log`, `apps/deployments/scale`).
    pub fn grant_spelling(&self) -> String {
        let mut s = String::with_capacity(self.group.len() + self.resource.len() + 16);
        // Writing to a `String` cannot fail.
        let _ = fmt::Write::write_fmt(&mut s, format_args!("{}", self.spelled()));
        s
    }

    /// [`ApiTarget::grant_spelling`] written where it goes (an event's
    /// field, a message), with no `String` of its own.
    pub fn spelled(&self) -> GrantSpelling<'_> {
        GrantSpelling(self)
    }

    /// Whether the resource is cluster-scoped, by the host's built-in table
    /// (see [`is_cluster_scoped`]).
    pub fn is_cluster_scoped(&self) -> bool {
        is_cluster_scoped(&self.group, &self.resource)
    }
}

/// A target's resource as a grant spells it ([`ApiTarget::spelled`]).
pub struct GrantSpelling<'a>(&'a ApiTarget);

impl fmt::Display for GrantSpelling<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.0;
        if !t.group.is_empty() {
            f.write_str(&t.group)?;
            f.write_str("/")?;
        }
        f.write_str(&t.resource)?;
        if let Some(sub) = &t.subresource {
            f.write_str("/")?;
            f.write_str(sub)?;
        }
        Ok(())
    }
}

impl fmt::Display for ApiTarget {
    /// `pods/log "web" in namespace "pando-x"`, `nodes "n1"`,
    /// `pods in all namespaces`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.spelled())?;
        if let Some(name) = &self.name {
            write!(f, " \"{name}\"")?;
        }
        match &self.namespace {
            Some(ns) => write!(f, " in namespace \"{ns}\""),
            None if self.is_cluster_scoped() => Ok(()),
            None => f.write_str(" in all namespaces"),
        }
    }
}

/// One parsed request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ApiRequest {
    /// A request on a resource, to check against the grants.
    Resource {
        /// The RBAC verb.
        verb: Verb,
        /// What it reaches.
        target: ApiTarget,
    },
    /// `GET` of a harmless, read-only endpoint (`/version`, `/readyz`,
    /// `/livez`, `/healthz`), allowed without a grant.
    NonResource {
        /// The path, one of [`NON_RESOURCE_PATHS`].
        path: String,
    },
}

/// The non-resource endpoints an adapter may `GET` without a grant.
pub const NON_RESOURCE_PATHS: &[&str] = &["/version", "/readyz", "/livez", "/healthz"];

/// The query keys an adapter may send. Every other key could change what is
/// reached or how (`fieldManager` is harmless and kept; keys like
/// `namespace` or `name` are not accepted anywhere). `showManagedFields` is
/// the host's own: it asks for what the host leaves out of an answer, and
/// is taken off before the request is sent.
pub const ALLOWED_QUERY_KEYS: &[&str] = &[
    "labelSelector",
    "fieldSelector",
    "limit",
    "continue",
    "resourceVersion",
    "resourceVersionMatch",
    "timeoutSeconds",
    "allowWatchBookmarks",
    "watch",
    "propagationPolicy",
    "gracePeriodSeconds",
    "dryRun",
    "fieldManager",
    "force",
    "container",
    "follow",
    "previous",
    "tailLines",
    "sinceSeconds",
    "timestamps",
    "limitBytes",
    "pretty",
    "sendInitialEvents",
    "showManagedFields",
];

mod error;
mod names;
mod parse;
mod scope;
#[cfg(test)]
mod tests;

pub use error::PathError;
pub(crate) use names::{check_dns_label, check_dns_subdomain};
pub use parse::parse;
pub use scope::is_cluster_scoped;
