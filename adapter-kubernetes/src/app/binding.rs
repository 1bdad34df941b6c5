//! The adapter's own binding in each namespace it makes: cluster-wide it may only make namespaces
//! and read (deploy/kubernetes/rbac.yaml); what it does inside one it may do
//! once it has bound `namespace_role` to itself (`adapter_user`) there,
//! right after making it. RBAC's authorizer reads bindings from a cache, so
//! the first namespaced write after a new binding may still be refused for
//! a few milliseconds: [`after_binding`] retries that write, and only it,
//! for at most [`BINDING_LAG`].

use std::time::Duration;

use pando_adapter_sdk::error::ErrorExt;
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::Namespace;
use pando_adapter_sdk::kube::k8s_openapi::api::rbac::v1::RoleBinding;
use pando_adapter_sdk::kube::{Api, KubeError};
use pando_adapter_sdk::types::Error;
use serde_json::json;

use crate::config::Config;
use crate::kit::{self, post};

/// The adapter's own RoleBinding's name in every namespace it makes.
pub const OWN_BINDING_NAME: &str = "pando-adapter";
/// How long a refusal of the first write after [`bind_self`] is taken for
/// RBAC's cache catching up, rather than for a missing permission.
pub const BINDING_LAG: Duration = Duration::from_secs(2);

/// The binding of `namespace_role` to the adapter's own identity, in a
/// namespace it made.
pub fn own_binding(config: &Config) -> Result<RoleBinding, Error> {
    kit::typed(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": OWN_BINDING_NAME,
            "labels": { kit::MANAGED_BY: kit::MANAGER },
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
pub fn is_rbac_refusal(e: &KubeError) -> bool {
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
}
