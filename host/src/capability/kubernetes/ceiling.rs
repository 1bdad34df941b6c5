//! The ceilings (`kubernetes.ceilings`, `grants::ceilings`) on the request
//! path: the host writes the ResourceQuota and the LimitRange named
//! [`CEILING_NAME`] into each namespace the adapter makes, right after the
//! API server made it and before the adapter's create returns, and refuses
//! the adapter's own writes to objects of that name.
//!
//! - A namespace create no ceiling matches is refused before it is sent.
//! - The ceiling is written with the host's client (the adapter's identity
//!   in the cluster: RBAC lets it create quotas and limit ranges in any
//!   namespace for this, and the admission policy refuses it deleting or
//!   raising `pando-ceiling`). If either write fails the host deletes the
//!   namespace again and the create fails, naming the ceiling: no namespace
//!   of the adapter's is left without one.
//! - A namespace that already existed (the create answered 409) is not
//!   touched: made through the host, it has its ceiling.
//! - The adapter's own quotas and limit ranges (the Kubernetes adapter's
//!   `pando-app`) are written beside it: every quota of a namespace
//!   applies, so the stricter bound wins.

use std::time::Instant;

use serde_json::{Value, json};

use super::KubeContext;
use crate::bindings::v0_1::pando::runtime::kubernetes::{ApiError, Denial, Method, Request};
use crate::grants::ceilings::{CEILING_NAME, Ceiling, ceiling_for};
use crate::grants::request::{ApiRequest, ApiTarget, Verb};

/// The resources a ceiling is made of, as the core group names them.
const CEILING_RESOURCES: [&str; 2] = ["resourcequotas", "limitranges"];

/// The label the host's objects carry.
const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "pando-host");

/// The ResourceQuota of `ceiling` for namespace `ns`.
pub(crate) fn resource_quota(ceiling: &Ceiling, ns: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": CEILING_NAME, "namespace": ns,
                     "labels": {MANAGED_BY.0: MANAGED_BY.1}},
        "spec": {"hard": ceiling.quota},
    })
}

/// The LimitRange of `ceiling` for namespace `ns`.
pub(crate) fn limit_range(ceiling: &Ceiling, ns: &str) -> Value {
    let c = &ceiling.container;
    json!({
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": CEILING_NAME, "namespace": ns,
                     "labels": {MANAGED_BY.0: MANAGED_BY.1}},
        "spec": {"limits": [{
            "type": "Container",
            "default": c.default,
            "defaultRequest": c.default_request,
            "max": c.max,
        }]},
    })
}

/// Whether `target` is a namespace create the host must give a ceiling.
pub(crate) fn is_namespace_create(verb: Verb, target: &ApiTarget) -> bool {
    verb == Verb::Create
        && target.group.is_empty()
        && target.resource == "namespaces"
        && target.subresource.is_none()
}

/// Why the adapter may not make this write to a ceiling, if it may not:
/// an update, patch or delete of an object named [`CEILING_NAME`], a create
/// of one (`body_name`), or a delete of a whole collection of quotas or
/// limit ranges (which would take the ceiling with it).
pub(crate) fn refusal(verb: Verb, target: &ApiTarget, body_name: Option<&str>) -> Option<String> {
    if !target.group.is_empty() || !CEILING_RESOURCES.contains(&target.resource.as_str()) {
        return None;
    }
    let named = target.name.as_deref().or(body_name) == Some(CEILING_NAME);
    let what = match verb {
        Verb::DeleteCollection => "a delete of every",
        Verb::Create | Verb::Update | Verb::Patch | Verb::Delete if named => "a write to",
        _ => return None,
    };
    Some(format!(
        "{verb} {target} denied by host rule `ceilings`: {what} {} named `{CEILING_NAME}` is the \
         host's: it writes that ResourceQuota and LimitRange into each namespace the adapter \
         makes, from `kubernetes.ceilings` in the adapter's grants, and the adapter may not \
         change or remove them (raise the ceiling in the grants instead; write a quota of the \
         adapter's own under another name)",
        target.resource
    ))
}

fn denied(message: String) -> ApiError {
    ApiError::Denied(Denial {
        message,
        missing_grant: "(none: the host's ceiling rule, not a grant; see `kubernetes.ceilings`)"
            .into(),
    })
}

impl KubeContext {
    /// Refuses the adapter's writes to a ceiling, and a namespace create
    /// no ceiling is configured for; see the module doc.
    pub(crate) fn check_ceiling_rules(
        &self,
        parsed: &ApiRequest,
        req: &Request,
    ) -> Result<(), ApiError> {
        let ApiRequest::Resource { verb, target } = parsed else {
            return Ok(());
        };
        let body_name = match req.method {
            Method::Post => super::admission::body_name(req.body.as_deref()),
            _ => None,
        };
        if let Some(why) = refusal(*verb, target, body_name.as_deref()) {
            self.usage.record_limit("ceilings");
            return Err(denied(why));
        }
        if is_namespace_create(*verb, target) && !self.ceilings.is_empty() && !dry_run(req) {
            let name = body_name.unwrap_or_default();
            if ceiling_for(&self.ceilings, &name).is_none() {
                self.usage.record_limit("ceilings");
                return Err(denied(format!(
                    "create namespaces/{name} denied by host rule `ceilings`: no entry of \
                     `kubernetes.ceilings` matches the namespace `{name}`, and the host makes no \
                     namespace of the adapter's without a ceiling (add an entry for it to the \
                     grants, or name the namespace as one does)"
                )));
            }
        }
        Ok(())
    }

    /// Writes the ceiling of namespace `ns`, just made for the adapter; if
    /// it cannot be written, deletes the namespace again and says why.
    pub(crate) async fn write_ceiling(
        &self,
        ns: &str,
        answer_by: Option<Instant>,
    ) -> Result<(), ApiError> {
        let Some(ceiling) = ceiling_for(&self.ceilings, ns) else {
            // Checked before the create was sent; a namespace named
            // otherwise than asked (generateName) is undone below.
            return self
                .undo_namespace(ns, "no ceiling matches its name", answer_by)
                .await;
        };
        for (resource, object) in [
            ("resourcequotas", resource_quota(ceiling, ns)),
            ("limitranges", limit_range(ceiling, ns)),
        ] {
            let req = Request {
                method: Method::Post,
                path: format!("/api/v1/namespaces/{ns}/{resource}"),
                query: Vec::new(),
                body: Some(object.to_string().into_bytes()),
                content_type: None,
            };
            self.limiter.acquire().await;
            let why = match self.exchange(&req, answer_by).await {
                Ok((status, _, _)) if (200..300).contains(&status) => continue,
                Ok((status, _, body)) => format!(
                    "the API server answered {status} to its {resource} `{CEILING_NAME}`: {}",
                    String::from_utf8_lossy(&body[..body.len().min(512)])
                ),
                Err(_) => format!("its {resource} `{CEILING_NAME}` could not be sent"),
            };
            return self.undo_namespace(ns, &why, answer_by).await;
        }
        tracing::info!(namespace = ns, "the host wrote the namespace's ceiling");
        Ok(())
    }

    /// Deletes namespace `ns` (best effort) and refuses the create that
    /// made it, saying `why`.
    async fn undo_namespace(
        &self,
        ns: &str,
        why: &str,
        answer_by: Option<Instant>,
    ) -> Result<(), ApiError> {
        tracing::warn!(
            namespace = ns,
            why,
            "the namespace's ceiling could not be written; deleting it"
        );
        let req = Request {
            method: Method::Delete,
            path: format!("/api/v1/namespaces/{ns}"),
            query: Vec::new(),
            body: None,
            content_type: None,
        };
        self.limiter.acquire().await;
        let deleted = matches!(self.exchange(&req, answer_by).await, Ok((200..=299, _, _)));
        Err(denied(format!(
            "create namespaces/{ns} undone by host rule `ceilings`: the namespace was made but \
             the host could not write its ceiling ({why}), so {}; the host's identity needs \
             `create` on resourcequotas and limitranges in every namespace it makes \
             (`pando-host grants rbac` writes it)",
            if deleted {
                "the host deleted it again"
            } else {
                "the host tried to delete it again and could not: delete it"
            }
        )))
    }
}

/// Whether the adapter asked for a dry run.
fn dry_run(req: &Request) -> bool {
    is_dry_run(&req.query)
}

fn is_dry_run(query: &[(String, String)]) -> bool {
    query.iter().any(|(k, v)| k == "dryRun" && v == "All")
}

/// The name of the namespace a create answered with.
pub(crate) fn created_name(body: &[u8]) -> Option<String> {
    super::admission::body_name(Some(body))
}

/// Whether a create's answer means a namespace was just made, for a
/// request that was not a dry run.
pub(crate) fn made(status: u16, query: &[(String, String)]) -> bool {
    (200..=202).contains(&status) && !is_dry_run(query)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::ceilings::ContainerLimits;
    use crate::grants::request::{Method as M, parse};

    fn target(method: M, path: &str) -> (Verb, ApiTarget) {
        match parse(method, path, &[]).expect("a path") {
            ApiRequest::Resource { verb, target } => (verb, target),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_adapter_may_not_write_the_ceiling() {
        let quota = "/api/v1/namespaces/pando-a/resourcequotas";
        for (method, path) in [
            (M::Patch, format!("{quota}/pando-ceiling")),
            (M::Put, format!("{quota}/pando-ceiling")),
            (M::Delete, format!("{quota}/pando-ceiling")),
            (M::Delete, quota.to_string()),
            (
                M::Delete,
                "/api/v1/namespaces/pando-a/limitranges/pando-ceiling".into(),
            ),
        ] {
            let (verb, t) = target(method, &path);
            let why = refusal(verb, &t, None).unwrap_or_else(|| panic!("{path} allowed"));
            assert!(why.contains("host rule `ceilings`"), "{why}");
            assert!(why.contains("pando-ceiling"), "{why}");
        }
        let (verb, t) = target(M::Post, quota);
        assert!(refusal(verb, &t, Some("pando-ceiling")).is_some());
        // Positive controls: the adapter's own quota, and reading the ceiling.
        assert!(refusal(verb, &t, Some("pando-app")).is_none());
        let (verb, t) = target(M::Patch, &format!("{quota}/pando-app"));
        assert!(refusal(verb, &t, None).is_none());
        let (verb, t) = target(M::Get, &format!("{quota}/pando-ceiling"));
        assert!(refusal(verb, &t, None).is_none());
        let (verb, t) = target(
            M::Delete,
            "/api/v1/namespaces/pando-a/configmaps/pando-ceiling",
        );
        assert!(
            refusal(verb, &t, None).is_none(),
            "only quotas and limit ranges"
        );
    }

    #[test]
    fn the_ceiling_objects_carry_the_grants_values() {
        let map = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect()
        };
        let c = Ceiling {
            namespaces: vec!["pando-*".into()],
            except: vec![],
            quota: map(&[("limits.memory", "64Gi"), ("count/secrets", "100")]),
            container: ContainerLimits {
                default: map(&[("cpu", "1"), ("memory", "1Gi")]),
                default_request: map(&[("cpu", "100m"), ("memory", "128Mi")]),
                max: map(&[("cpu", "4"), ("memory", "8Gi")]),
            },
        };
        let q = resource_quota(&c, "pando-a");
        assert_eq!(q["metadata"]["name"], CEILING_NAME);
        assert_eq!(q["metadata"]["namespace"], "pando-a");
        assert_eq!(q["spec"]["hard"]["limits.memory"], "64Gi");
        assert_eq!(q["spec"]["hard"]["count/secrets"], "100");
        let l = limit_range(&c, "pando-a");
        assert_eq!(l["metadata"]["name"], CEILING_NAME);
        assert_eq!(l["spec"]["limits"][0]["type"], "Container");
        assert_eq!(l["spec"]["limits"][0]["max"]["memory"], "8Gi");
        assert_eq!(l["spec"]["limits"][0]["defaultRequest"]["cpu"], "100m");
        let (verb, t) = target(M::Post, "/api/v1/namespaces");
        assert!(is_namespace_create(verb, &t));
        let (verb, t) = target(M::Post, "/api/v1/namespaces/pando-a/configmaps");
        assert!(!is_namespace_create(verb, &t));
    }
}
