//! The kit every concern of the adapter builds on, and which builds on none
//! of them: the labels that mark what is Pando's, the hash annotation that
//! tells whether an object is as asked (O-41), typed objects from JSON, the
//! field manager it writes as, and the converge loops ([`converge`]).
//!
//! Every object carries `app.kubernetes.io/managed-by: pando` (and, for an
//! app's, `pando.dev/app: <id>`), so the adapter finds (and deletes) only
//! its own, and a `pando.dev/spec-hash` annotation of what was asked for:
//! a converge compares that hash rather than the object the API server
//! returns, whose defaulted fields would never equal the plan's (O-41: a
//! satisfied plan writes nothing).

use pando_adapter_sdk::kube::PostParams;
use pando_adapter_sdk::kube::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use pando_adapter_sdk::types::Error;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

pub mod converge;
pub mod names;
pub mod pods;
pub mod security;

/// Label on everything the adapter makes.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// Its value.
pub const MANAGER: &str = "pando";
/// Label naming the app an object belongs to.
pub const APP_LABEL: &str = "pando.dev/app";
/// Annotation with the hash of the desired object (see the module doc).
pub const HASH_ANNOTATION: &str = "pando.dev/spec-hash";
/// The label Pando's server pods carry, admitted by every app's policy
///
pub const PANDO_SERVER_LABEL: (&str, &str) = ("app.kubernetes.io/name", "pando");
/// The field manager the adapter writes as.
pub const FIELD_MANAGER: &str = "pando";

/// The labels every object of app `id` carries.
pub fn app_labels(id: &str) -> Value {
    json!({ MANAGED_BY: MANAGER, APP_LABEL: id })
}

/// The label selector that lists app objects (any app when the namespace
/// already says which).
pub fn managed_selector() -> String {
    format!("{MANAGED_BY}={MANAGER}")
}

/// FNV-1a, 64 bits, in hex: a stable hash with no dependency, enough to
/// tell whether a desired object changed (not a security boundary).
pub fn hash(value: &Value) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in value.to_string().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Puts the hash of `object` (as it is now) into its annotations.
pub(crate) fn with_hash(mut object: Value) -> Value {
    let h = hash(&object);
    object["metadata"]["annotations"][HASH_ANNOTATION] = Value::String(h);
    object
}

/// Decodes a built object into its typed form.
pub(crate) fn typed<K: DeserializeOwned>(object: Value) -> Result<K, Error> {
    serde_json::from_value(object)
        .map_err(|e| Error::Internal(format!("building a Kubernetes object: {e}")))
}

/// The hash an existing object was written with.
pub fn stored_hash(meta: &ObjectMeta) -> Option<&str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(HASH_ANNOTATION))
        .map(String::as_str)
}

/// Create and replace as the adapter's field manager.
pub fn post() -> PostParams {
    PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PostParams::default()
    }
}
