//! The one admission every Kubernetes request takes before it may reach
//! the API server, in order: the body cap (`send` only), parse and
//! canonicalize (`grants::request`), count it (`requests`), check it against
//! the grants (`grants::check`), for a PersistentVolume the claim it is
//! bound to (one read, on the rate budget), record the decision in the
//! usage report, then what `send` is not for (a watch, a streaming
//! subresource; `send` only), and audit a refusal. A refusal takes a token of the rate
//! budget as a request would, so a storm of denials is throttled too.

use super::{KubeContext, audit};
use crate::bindings::v0_1::pando::runtime::kubernetes::{ApiError, Denial, Method, Request};
use crate::grants::check::Decision;
use crate::grants::request::{self, ApiRequest, ApiTarget, Verb};

/// A refusal's message, for the audit trail.
pub(crate) fn denial_message(e: &ApiError) -> String {
    match e {
        ApiError::Denied(d) => d.message.clone(),
        other => format!("{other:?}"),
    }
}

/// Refuses a body over `cap` bytes, saying how to raise the cap.
fn check_body(body: Option<&[u8]>, cap: u64) -> Result<(), ApiError> {
    match body {
        Some(body) if body.len() as u64 > cap => Err(ApiError::TooLarge(format!(
            "the request body is {} bytes, over this adapter's cap of {cap} bytes; nothing was \
             sent (raise `kubernetes.max_body_bytes` in the adapter's grants if it really \
             writes objects this large)",
            body.len()
        ))),
        _ => Ok(()),
    }
}

/// The grammar's method of a request.
fn request_method(m: Method) -> request::Method {
    match m {
        Method::Get => request::Method::Get,
        Method::Post => request::Method::Post,
        Method::Put => request::Method::Put,
        Method::Patch => request::Method::Patch,
        Method::Delete => request::Method::Delete,
    }
}

/// The name an object body gives itself, for grants on creates. Only
/// `metadata.name` is kept: serde skips every other field without building
/// it, so a body costs no tree of values, whatever its shape.
pub(crate) fn body_name(body: Option<&[u8]>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Object {
        metadata: Option<Metadata>,
    }
    #[derive(serde::Deserialize)]
    struct Metadata {
        name: Option<String>,
    }
    let object: Object = serde_json::from_slice(body?).ok()?;
    object.metadata?.name
}

impl KubeContext {
    /// Admits a `send`: the body cap before anything reads the body, then
    /// [`KubeContext::admit`], then what `send` is not for (a watch, a
    /// streaming subresource).
    pub(crate) async fn admit_send(
        &self,
        audit: &audit::Audit<'_>,
        req: &Request,
    ) -> Result<ApiRequest, ApiError> {
        // The cap first: an oversized body costs the host nothing more than
        // the copy wasmtime made of the guest's argument.
        if let Err(e) = check_body(req.body.as_deref(), self.max_body) {
            audit.denied(None, &denial_message(&e));
            self.usage.record_limit("kubernetes.max_body_bytes");
            // Refusals cost what requests cost (see `admit`).
            self.limiter.acquire().await;
            return Err(e);
        }
        // Only a create is matched by its body's name.
        let name = match req.method {
            Method::Post => body_name(req.body.as_deref()),
            _ => None,
        };
        let method = request_method(req.method);
        let parsed = self
            .admit(audit, method, &req.path, &req.query, name.as_deref())
            .await?;
        let refuse = |msg: String| {
            audit.denied(Some(&parsed), &msg);
            Err(ApiError::InvalidRequest(msg))
        };
        if let ApiRequest::Resource { verb, target } = &parsed {
            if *verb == Verb::Watch {
                return refuse("a watch goes through the `watch` function, not `send`".into());
            }
            if matches!(
                target.subresource.as_deref(),
                Some("exec" | "attach" | "portforward" | "proxy")
            ) {
                return refuse(format!(
                    "`{}` is a streaming subresource: use the `exec` function",
                    target.grant_spelling()
                ));
            }
        }
        Ok(parsed)
    }

    /// Parses and canonicalizes a request, then checks it against the
    /// grants; a refusal is audited and answered here.
    pub(crate) async fn admit(
        &self,
        audit: &audit::Audit<'_>,
        method: request::Method,
        path: &str,
        query: &[(String, String)],
        body_name: Option<&str>,
    ) -> Result<ApiRequest, ApiError> {
        let parsed = match request::parse(method, path, query) {
            Ok(parsed) => parsed,
            Err(e) => {
                let msg = e.to_string();
                audit.denied(None, &msg);
                self.limiter.acquire().await;
                return Err(ApiError::InvalidRequest(msg));
            }
        };
        // Counted whether or not it is allowed: a refused write was still
        // an attempt to write.
        self.requests.record(&parsed);
        if let ApiRequest::Resource { verb, target } = &parsed
            && let Err(e) = self.authorize(*verb, target, body_name).await
        {
            audit.denied(Some(&parsed), &denial_message(&e));
            // A denial costs what a request costs: a guest asking again and
            // again for what it may not have is throttled like any other,
            // and cannot flood the audit trail faster than its rate.
            self.limiter.acquire().await;
            return Err(e);
        }
        Ok(parsed)
    }

    /// Checks a request against the grants, recording the outcome. PVs are
    /// checked through their claim here too, with one read of the PV.
    pub(crate) async fn authorize(
        &self,
        verb: Verb,
        target: &ApiTarget,
        body_name: Option<&str>,
    ) -> Result<(), ApiError> {
        let decision = self.checker.check(verb, target, body_name);
        let decision = match decision {
            Decision::AllowIfClaimed { rule } => self.check_claim(verb, target, rule).await,
            other => other,
        };
        self.usage.record(verb, target, &decision);
        match decision {
            Decision::Allow { .. } => Ok(()),
            Decision::Deny(d) => Err(ApiError::Denied(Denial {
                message: d.message,
                missing_grant: d.missing_grant,
            })),
            Decision::AllowIfClaimed { .. } => Err(ApiError::Denied(Denial {
                message: format!(
                    "{verb} {target}: the PersistentVolume's claim could not be checked"
                ),
                missing_grant: String::new(),
            })),
        }
    }

    /// A PV is reachable only while bound to a claim in a granted namespace.
    async fn check_claim(&self, verb: Verb, target: &ApiTarget, rule: usize) -> Decision {
        let Some(name) = target.name.as_deref() else {
            return self.checker.check(verb, target, None);
        };
        // The read is a request to the API server the guest caused: it takes
        // from the rate budget as the request it checks does.
        self.limiter.acquire().await;
        let api: kube::Api<k8s_openapi::api::core::v1::PersistentVolume> =
            kube::Api::all(self.client.clone());
        let claim_ns = match api.get_opt(name).await {
            Ok(Some(pv)) => pv.spec.and_then(|s| s.claim_ref).and_then(|c| c.namespace),
            Ok(None) => {
                // Nothing to protect: let the API server answer 404.
                return Decision::Allow { rule };
            }
            Err(e) => {
                let why = match &e {
                    kube::Error::Api(s) => s.message.clone(),
                    other => other.to_string(),
                };
                return Decision::Deny(crate::grants::check::Denial {
                    message: format!(
                        "{verb} {target}: the PersistentVolume could not be read to check its claim: {why}"
                    ),
                    missing_grant: String::new(),
                });
            }
        };
        match claim_ns {
            Some(ns) if self.checker.claim_namespace_granted(&ns) => Decision::Allow { rule },
            other => Decision::Deny(crate::grants::check::Denial {
                message: format!(
                    "{verb} {target} denied: a PersistentVolume is reachable only while bound to a claim \
                     in a granted namespace, and this one is {}",
                    match other {
                        Some(ns) => format!("bound to a claim in namespace `{ns}`"),
                        None => "not bound to any claim".into(),
                    }
                ),
                missing_grant: "(none: grant the claim's namespace for persistentvolumeclaims, \
                                if the adapter should own it)"
                    .into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_cap_names_itself_and_how_to_raise_it() {
        assert!(check_body(None, 0).is_ok());
        assert!(check_body(Some(b"12345"), 5).is_ok());
        match check_body(Some(b"123456"), 5) {
            Err(ApiError::TooLarge(m)) => {
                assert!(m.contains("6 bytes") && m.contains("cap of 5 bytes"), "{m}");
                assert!(m.contains("kubernetes.max_body_bytes"), "{m}");
            }
            other => panic!("expected too-large, got {other:?}"),
        }
    }

    #[test]
    fn a_create_is_named_by_its_metadata_whatever_else_the_body_holds() {
        let body = br#"{"kind":"ConfigMap","data":[[1,2],{"a":null}],"metadata":{"labels":{"x":"y"},"name":"web"}}"#;
        assert_eq!(body_name(Some(body)).as_deref(), Some("web"));
        assert_eq!(body_name(Some(br#"{"metadata":{}}"#)), None);
        assert_eq!(body_name(Some(b"not json")), None);
        assert_eq!(body_name(None), None);
    }
}
