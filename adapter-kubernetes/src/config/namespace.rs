//! The configuration of what the adapter puts in each namespace it makes:
//! its own RoleBinding (`adapter_user`, `namespace_role`), and in each app
//! namespace a ResourceQuota (`app_quota`) and a LimitRange
//! (`container_limits`). The cluster's admission policy
//! (deploy/kubernetes/admission-policy.yaml) refuses a quota or a limit
//! range above its ceiling, so the defaults stay well under it.

use std::fmt;

use pando_adapter_sdk::types::Error;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::fields::{integer, invalid_field, string};
use crate::kit::names;

/// How Kubernetes names a ServiceAccount as a user.
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// Who the adapter is to the API server: the subject of the RoleBinding it
/// writes for itself in every namespace it makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdapterUser {
    /// A user of the cluster's authenticator (a token, a certificate).
    User(String),
    /// A ServiceAccount, for an adapter running in the cluster:
    /// `system:serviceaccount:<namespace>:<name>`.
    ServiceAccount {
        /// The ServiceAccount's namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

impl AdapterUser {
    /// Parses `adapter_user`: a user name, or
    /// `system:serviceaccount:<namespace>:<name>`. The error says why,
    /// without the field's name.
    pub fn parse(text: &str) -> Result<AdapterUser, String> {
        if let Some(rest) = text.strip_prefix(SERVICE_ACCOUNT_PREFIX) {
            let (namespace, name) = rest.split_once(':').ok_or_else(|| {
                format!("`{text}` is not `{SERVICE_ACCOUNT_PREFIX}<namespace>:<name>`")
            })?;
            names::check_dns_label(namespace)
                .map_err(|why| format!("ServiceAccount namespace `{namespace}` {why}"))?;
            names::check_dns_subdomain(name)
                .map_err(|why| format!("ServiceAccount name `{name}` {why}"))?;
            return Ok(AdapterUser::ServiceAccount {
                namespace: namespace.into(),
                name: name.into(),
            });
        }
        // Any other `system:` name is one of the cluster's own identities
        // (nodes, controllers, groups): never the adapter's to bind.
        if text.starts_with("system:") {
            return Err(format!(
                "`{text}` is one of the cluster's `system:` identities; use a user name or \
                 `{SERVICE_ACCOUNT_PREFIX}<namespace>:<name>`"
            ));
        }
        if text.len() > 253 || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "`{}` is not a user name: at most 253 characters, no whitespace",
                text.escape_debug()
            ));
        }
        Ok(AdapterUser::User(text.into()))
    }

    /// The RoleBinding subject for it.
    pub fn subject(&self) -> Value {
        match self {
            AdapterUser::User(name) => serde_json::json!({
                "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name,
            }),
            AdapterUser::ServiceAccount { namespace, name } => serde_json::json!({
                "kind": "ServiceAccount", "name": name, "namespace": namespace,
            }),
        }
    }
}

impl fmt::Display for AdapterUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdapterUser::User(name) => f.write_str(name),
            AdapterUser::ServiceAccount { namespace, name } => {
                write!(f, "{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
            }
        }
    }
}

impl Serialize for AdapterUser {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// `app_quota`: the ResourceQuota of each app namespace. Every field
/// optional; the defaults suit a small app and sit under the admission
/// policy's ceiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AppQuota {
    /// `pods`: pods at once (the app's, its helpers', its gateway).
    pub pods: u64,
    /// `requests.cpu`, in millicores.
    pub cpu_millis: u64,
    /// `requests.memory`, in bytes.
    pub memory_bytes: u64,
    /// `limits.memory`, in bytes.
    pub memory_limit_bytes: u64,
    /// `requests.storage`: the claims' total, in bytes.
    pub storage_bytes: u64,
    /// `persistentvolumeclaims`: claims at once.
    pub claims: u64,
}

/// `container_limits`: the LimitRange of each app namespace, which fills
/// in what a plan leaves out (a container without a memory limit gets
/// `default_memory_bytes`) and caps what it asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ContainerLimits {
    /// The memory limit of a container that sets none, in bytes.
    pub default_memory_bytes: u64,
    /// The CPU request of a container that sets none, in millicores.
    pub default_cpu_request_millis: u64,
    /// The memory request of a container that sets none, in bytes.
    pub default_memory_request_bytes: u64,
    /// The largest memory limit a container may have, in bytes.
    pub max_memory_bytes: u64,
}

/// The fields of an object-valued field, each `u64` in `1..=max`, unknown
/// keys refused: `(key, slot)` pairs are filled in where present.
fn object_fields(
    field: &str,
    value: Option<Value>,
    slots: &mut [(&str, &mut u64)],
) -> Result<(), Error> {
    let map: Map<String, Value> = match value {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(invalid_field(field, format!("`{other}` is not an object")));
        }
    };
    for (key, v) in map {
        let Some((_, slot)) = slots.iter_mut().find(|(k, _)| *k == key) else {
            let known: Vec<&str> = slots.iter().map(|(k, _)| *k).collect();
            return Err(invalid_field(
                field,
                format!("unknown key `{key}`: use {}", known.join(", ")),
            ));
        };
        // The message names the field, then the key.
        let n = integer(field, Some(v), 1, i64::MAX as u64).map_err(|e| match e {
            Error::Invalid(m) => Error::Invalid(m.replacen(
                &format!("`{field}`:"),
                &format!("`{field}`, key `{key}`:"),
                1,
            )),
            other => other,
        })?;
        if let Some(n) = n {
            **slot = n;
        }
    }
    Ok(())
}

/// Parses `adapter_user`: `None` when unset.
pub(super) fn adapter_user(value: Option<Value>) -> Result<Option<AdapterUser>, Error> {
    string("adapter_user", value)?
        .map(|text| AdapterUser::parse(&text).map_err(|why| invalid_field("adapter_user", why)))
        .transpose()
}

/// Parses `app_quota`: `start` (the default) with the keys given.
pub(super) fn app_quota(value: Option<Value>, start: AppQuota) -> Result<AppQuota, Error> {
    let mut q = start;
    object_fields(
        "app_quota",
        value,
        &mut [
            ("pods", &mut q.pods),
            ("cpu_millis", &mut q.cpu_millis),
            ("memory_bytes", &mut q.memory_bytes),
            ("memory_limit_bytes", &mut q.memory_limit_bytes),
            ("storage_bytes", &mut q.storage_bytes),
            ("claims", &mut q.claims),
        ],
    )?;
    Ok(q)
}

/// Parses `container_limits` (`start`, the default, with the keys given);
/// a default above the maximum is refused (the
/// API server would refuse the LimitRange).
pub(super) fn container_limits(
    value: Option<Value>,
    start: ContainerLimits,
) -> Result<ContainerLimits, Error> {
    let mut l = start;
    object_fields(
        "container_limits",
        value,
        &mut [
            ("default_memory_bytes", &mut l.default_memory_bytes),
            (
                "default_cpu_request_millis",
                &mut l.default_cpu_request_millis,
            ),
            (
                "default_memory_request_bytes",
                &mut l.default_memory_request_bytes,
            ),
            ("max_memory_bytes", &mut l.max_memory_bytes),
        ],
    )?;
    if l.default_memory_bytes > l.max_memory_bytes {
        return Err(invalid_field(
            "container_limits",
            format!(
                "`default_memory_bytes` {} is above `max_memory_bytes` {}",
                l.default_memory_bytes, l.max_memory_bytes
            ),
        ));
    }
    if l.default_memory_request_bytes > l.default_memory_bytes {
        return Err(invalid_field(
            "container_limits",
            format!(
                "`default_memory_request_bytes` {} is above `default_memory_bytes` {}: a \
                 container given both defaults would ask for more than its limit",
                l.default_memory_request_bytes, l.default_memory_bytes
            ),
        ));
    }
    Ok(l)
}
