//! Pando's role binding in each app namespace: the ServiceAccount Pando's
//! server runs as (`service_account` in `pando_namespace`) bound to the
//! ClusterRole `app_role` there (deploy/kubernetes/rbac.yaml), so that what
//! Pando may do inside an app's namespace is granted per namespace rather
//! than cluster-wide. It stays when the app is destroyed with its volumes
//! kept (R-204), like the claims and the default-deny policy.

use pando_adapter_sdk::error::ErrorExt;
use pando_adapter_sdk::kube::k8s_openapi::api::rbac::v1::RoleBinding;
use pando_adapter_sdk::kube::{Api, DeleteParams};
use pando_adapter_sdk::types::Error;
use serde_json::json;

use crate::app::binding::is_rbac_refusal;
use crate::config::Config;
use crate::kit;
use crate::kit::converge::{Recreate, converge_one};

/// The RoleBinding's name in every app namespace.
pub const ROLE_BINDING_NAME: &str = "pando-app";

/// The binding of Pando's ServiceAccount to `app_role` in an app namespace.
pub fn role_binding(config: &Config, id: &str) -> Result<RoleBinding, Error> {
    kit::typed(kit::with_hash(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": { "name": ROLE_BINDING_NAME, "labels": kit::app_labels(id) },
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": config.app_role,
        },
        "subjects": [{
            "kind": "ServiceAccount",
            "name": config.service_account,
            "namespace": config.pando_namespace,
        }],
    })))
}

/// Creates the binding, or replaces it when its hash differs (a changed
/// `app_role` or `service_account`): 1 GET when it is as wanted.
///
/// A RoleBinding's `roleRef` cannot change in place, so a changed role is a
/// delete and a create, as the API server requires.
///
/// It is apply's first request inside the namespace. Refused by RBAC, the
/// namespace (Pando's: apply checked its label) lacks the adapter's own
/// binding — made before the adapter bound itself, or left by a call
/// stopped between the two — so it is set up ([`crate::app::quota::set_up`])
/// and the read made again.
pub fn ensure_role_binding(config: &Config, ns: &str, id: &str) -> Result<(), Error> {
    let desired = role_binding(config, id)?;
    let api = Api::<RoleBinding>::namespaced(ns);
    let ctx = |e| {
        Error::from(e).context(&format!(
            "RoleBinding `{ns}/{ROLE_BINDING_NAME}` of ClusterRole `{}` (configuration field \
             `app_role`; the adapter's own role needs `bind` on it, deploy/kubernetes/rbac.yaml)",
            config.app_role
        ))
    };
    let existing = match api.get_opt(ROLE_BINDING_NAME) {
        Err(e) if is_rbac_refusal(&e) => {
            pando_adapter_sdk::info!(
                namespace = ns;
                "the adapter has no binding of its own here; making it"
            );
            crate::app::quota::set_up(config, ns)?;
            api.get_opt(ROLE_BINDING_NAME).map_err(ctx)?
        }
        other => other.map_err(ctx)?,
    };
    let way = Recreate {
        fail: ctx,
        delete: DeleteParams::default(),
    };
    converge_one(&api, existing, desired, &way)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binding_names_the_configured_role_and_service_account() {
        let config = Config::parse(
            r#"{"pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12",
                "app_role":"team-app","service_account":"srv","pando_namespace":"pando-core"}"#,
        )
        .unwrap();
        let rb = role_binding(&config, "shop").unwrap();
        assert_eq!(rb.role_ref.name, "team-app");
        assert_eq!(rb.role_ref.kind, "ClusterRole");
        let subject = &rb.subjects.unwrap()[0];
        assert_eq!(subject.kind, "ServiceAccount");
        assert_eq!(subject.name, "srv");
        assert_eq!(subject.namespace.as_deref(), Some("pando-core"));
        assert!(kit::stored_hash(&rb.metadata).is_some());
    }
}
