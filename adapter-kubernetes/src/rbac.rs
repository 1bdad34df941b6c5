//! Pando's role binding in each app namespace: the ServiceAccount Pando's
//! server runs as (`service_account` in `pando_namespace`) bound to the
//! ClusterRole `app_role` there (deploy/kubernetes/rbac.yaml), so that what
//! Pando may do inside an app's namespace is granted per namespace rather
//! than cluster-wide. It stays when the app is destroyed with its volumes
//! kept (R-204), like the claims and the default-deny policy.
//!
//! And the adapter's own binding: cluster-wide it may only make namespaces
//! and read (deploy/kubernetes/rbac.yaml); what it does inside one it may do
//! once it has bound `namespace_role` to itself (`adapter_user`) there,
//! right after making it. RBAC's authorizer reads bindings from a cache, so
//! the first namespaced write after a new binding may still be refused for
//! a few milliseconds: [`after_binding`] retries that write, and only it,
//! for at most [`BINDING_LAG`].

use std::time::Duration;

use pando_adapter_sdk::error::ErrorExt;
use pando_adapter_sdk::kube::k8s_openapi::api::rbac::v1::RoleBinding;
use pando_adapter_sdk::kube::{Api, KubeError};
use pando_adapter_sdk::types::Error;
use serde_json::json;

use crate::apply::post;
use crate::config::Config;
use crate::objects;

/// The RoleBinding's name in every app namespace.
pub const ROLE_BINDING_NAME: &str = "pando-app";
/// The adapter's own RoleBinding's name in every namespace it makes.
pub const OWN_BINDING_NAME: &str = "pando-adapter";
/// How long a refusal of the first write after [`bind_self`] is taken for
/// RBAC's cache catching up, rather than for a missing permission.
pub const BINDING_LAG: Duration = Duration::from_secs(2);

/// The binding of `namespace_role` to the adapter's own identity, in a
/// namespace it made.
pub fn own_binding(config: &Config) -> Result<RoleBinding, Error> {
    objects::typed(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": OWN_BINDING_NAME,
            "labels": { objects::MANAGED_BY: objects::MANAGER },
        },
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": config.namespace_role,
        },
        "subjects": [config.adapter_user.subject()],
    }))
}

/// Binds `namespace_role` to the adapter in `ns`, which it has just made
/// (or made earlier and finds itself refused in): one create, an existing
/// binding left as it is. Cluster-wide the adapter may create bindings of
/// that role only (`bind`), and the cluster's admission policy only of it
/// to itself, in Pando's namespaces.
///
/// Then it reads the binding back through it (the role grants `get` on
/// rolebindings), waiting out RBAC's cache ([`after_binding`]): once that
/// read passes, every permission of the role does, so the callers' own
/// requests need no retries of their own. 2 requests, on the path that
/// makes a namespace only.
pub fn bind_self(config: &Config, ns: &str) -> Result<(), Error> {
    let api = Api::<RoleBinding>::namespaced(ns);
    match api.create(&post(), &own_binding(config)?) {
        Ok(_) => {}
        Err(e) if e.is_conflict() => {}
        Err(e) => {
            return Err(Error::from(e).context(&format!(
                "the adapter's RoleBinding `{ns}/{OWN_BINDING_NAME}` of ClusterRole `{}` to `{}` \
             (configuration fields `namespace_role`, `adapter_user`; the adapter's cluster role \
             needs `create` on rolebindings and `bind` on that role, \
             deploy/kubernetes/rbac.yaml)",
                config.namespace_role, config.adapter_user
            )));
        }
    }
    after_binding(config, ns, || api.get(OWN_BINDING_NAME)).map(|_| ())
}

/// Whether `e` is RBAC's refusal (not Pod Security's or a quota's, which are
/// 403s too but will not change by waiting).
fn is_rbac_refusal(e: &KubeError) -> bool {
    // RBAC's words: `User "pando" cannot create resource "pods" in API group …`.
    matches!(e, KubeError::Api { status: 403, message, .. }
        if message.contains(" cannot ") && message.contains(" resource \""))
}

/// Whether `e`, a refusal of a request in `ns`, is RBAC's because the
/// namespace is gone or going: the adapter may act inside a namespace only
/// through its own binding, which goes with it, so there a refusal stands
/// for "nothing here", where a 404 used to. One GET of the namespace, on
/// that path only.
pub fn namespace_gone(ns: &str, e: &KubeError) -> bool {
    use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::Namespace;
    is_rbac_refusal(e)
        && match Api::<Namespace>::all().get_opt(ns) {
            Ok(None) => true,
            Ok(Some(n)) => n.metadata.deletion_timestamp.is_some(),
            Err(_) => false,
        }
}

/// Runs `write`, the first namespaced request after a new binding in `ns`,
/// again while RBAC refuses it, for at most [`BINDING_LAG`]; then the
/// refusal, saying that the binding did not take effect.
pub fn after_binding<T>(
    config: &Config,
    ns: &str,
    mut write: impl FnMut() -> Result<T, KubeError>,
) -> Result<T, Error> {
    let step = Duration::from_millis(50);
    let mut waited = Duration::ZERO;
    loop {
        match write() {
            Err(e) if is_rbac_refusal(&e) && waited < BINDING_LAG => {
                pando_adapter_sdk::time::sleep(step)?;
                waited += step;
            }
            Err(e) if is_rbac_refusal(&e) => {
                return Err(Error::from(e).context(&format!(
                    "still refused {} s after binding ClusterRole `{}` to `{}` in namespace \
                     `{ns}` (RoleBinding `{OWN_BINDING_NAME}`): does the role grant it \
                     (deploy/kubernetes/rbac.yaml), and is `adapter_user` who the adapter \
                     really is?",
                    BINDING_LAG.as_secs(),
                    config.namespace_role,
                    config.adapter_user
                )));
            }
            other => return other.map_err(Error::from),
        }
    }
}

/// The binding of Pando's ServiceAccount to `app_role` in an app namespace.
pub fn role_binding(config: &Config, id: &str) -> Result<RoleBinding, Error> {
    objects::typed(objects::with_hash(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": { "name": ROLE_BINDING_NAME, "labels": objects::app_labels(id) },
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
/// stopped between the two — so it is set up ([`crate::quota::set_up`])
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
            crate::quota::set_up(config, ns)?;
            api.get_opt(ROLE_BINDING_NAME).map_err(ctx)?
        }
        other => other.map_err(ctx)?,
    };
    match existing {
        None => {
            api.create(&post(), &desired).map_err(ctx)?;
        }
        Some(existing)
            if objects::stored_hash(&existing.metadata)
                != objects::stored_hash(&desired.metadata) =>
        {
            api.delete_opt(ROLE_BINDING_NAME, &Default::default())
                .map_err(ctx)?;
            api.create(&post(), &desired).map_err(ctx)?;
        }
        Some(_) => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_adapters_own_binding_names_its_role_and_identity() {
        let config = Config::parse(
            r#"{"pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12",
                "adapter_user":"system:serviceaccount:pando-system:adapter",
                "namespace_role":"team-adapter"}"#,
        )
        .unwrap();
        let rb = own_binding(&config).unwrap();
        assert_eq!(rb.metadata.name.as_deref(), Some(OWN_BINDING_NAME));
        assert_eq!(
            (rb.role_ref.kind.as_str(), rb.role_ref.name.as_str()),
            ("ClusterRole", "team-adapter")
        );
        let subjects = rb.subjects.unwrap();
        assert_eq!(subjects.len(), 1);
        assert_eq!(
            (subjects[0].kind.as_str(), subjects[0].name.as_str()),
            ("ServiceAccount", "adapter")
        );
        assert_eq!(subjects[0].namespace.as_deref(), Some("pando-system"));
    }

    #[test]
    fn only_rbacs_refusal_is_waited_out() {
        let api = |status, message: &str| KubeError::Api {
            status,
            reason: "Forbidden".into(),
            message: message.into(),
            retry_after: None,
        };
        assert!(is_rbac_refusal(&api(
            403,
            "pods is forbidden: User \"pando\" cannot create resource \"pods\" in API group \"\" \
             in the namespace \"pando-x\""
        )));
        // Pod Security and quotas answer 403 as well; waiting changes nothing.
        assert!(!is_rbac_refusal(&api(
            403,
            "pods \"a\" is forbidden: violates PodSecurity \"restricted:latest\""
        )));
        assert!(!is_rbac_refusal(&api(
            403,
            "pods \"a\" is forbidden: exceeded quota: pando-app"
        )));
        assert!(!is_rbac_refusal(&api(404, "cannot find")));
    }

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
        assert!(objects::stored_hash(&rb.metadata).is_some());
    }
}
