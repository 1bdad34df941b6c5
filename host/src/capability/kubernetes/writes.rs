//! The object rules on the request path: what a write would produce is
//! checked before it is sent (`grants::objects`).
//!
//! - **create**: the body is the object. It is parsed once, checked, and
//!   sent as the host re-serialized it, so the API server reads exactly
//!   what was checked (no duplicate keys, no second reading). A namespace
//!   gets the host's Pod Security `enforce` label.
//! - **update** of a kind whose rules look at the new object only: the
//!   body likewise.
//! - **patch** (JSON, merge, strategic merge, server-side apply), and an
//!   update of a kind whose rules compare old and new (namespaces, claims,
//!   volumes): the API server computes the result in a dry run
//!   (`dryRun=All`); that result is checked (with the object read before
//!   it, for the comparing kinds: for a pod the watch-fed cache holds, its
//!   copy, once its version is the one the dry run changed — two round
//!   trips instead of three), and the real request is sent
//!   conditioned on the resourceVersion the dry run was computed from —
//!   a JSON patch with a trailing `add` of `/metadata/resourceVersion`,
//!   any other body with `metadata.resourceVersion` set — so the API
//!   server applies it to that same object or answers 409. Nothing can
//!   change between the check and the write. On that 409 the host checks
//!   and sends the write again (`send`, at most
//!   `MAX_CONFLICT_RETRIES` times), as the API server itself applies a
//!   patch again to an object that moved on.
//!
//! A write the adapter itself asks to be a dry run (`dryRun=All`) writes
//! nothing and is sent as it is. A server-side apply that would create the
//! object is refused: there is no resourceVersion to condition it on.

use std::time::Instant;

use serde_json::{Value, json};

use super::KubeContext;
use super::audit::Audit;
use super::send::Failure;
use crate::bindings::v0_1::pando::runtime::kubernetes::{
    ApiError, ContentType, Denial, Method, Request, Response,
};
use crate::grants::objects::{Kind, Violation};
use crate::grants::request::{ApiRequest, ApiTarget, Verb};

/// What to do with a write once the object rules have looked at it.
pub(crate) enum Policed {
    /// Send the adapter's request as it is.
    AsIs,
    /// Send it with this body: the object as the host re-serialized (and,
    /// for a namespace, labelled) it, or the patch conditioned on the
    /// checked version (`conditioned`: a 409 answer may mean only that the
    /// object moved on since the dry run; check and send it again).
    Body {
        /// The body to send.
        body: Vec<u8>,
        /// Whether it carries the host's resourceVersion precondition.
        conditioned: bool,
    },
    /// Answer the adapter with this, sending nothing more: the dry run (or
    /// the read before it) was answered with an error the write would get.
    Answer(Response),
}

/// How the body of a write is read, by content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyForm {
    /// A JSON object: a create, an update, a merge or strategic merge
    /// patch.
    Object,
    /// A YAML (or JSON) object: a server-side apply.
    Apply,
    /// A JSON array of operations: a JSON patch.
    Operations,
}

fn invalid(msg: String) -> ApiError {
    ApiError::InvalidRequest(msg)
}

/// Reads a body in its form; `Err` says why it cannot be checked.
fn parse_body(body: &[u8], form: BodyForm) -> Result<Value, String> {
    let value: Value = match form {
        BodyForm::Apply => {
            crate::yaml::apply_body(body).map_err(|e| format!("the body is not YAML: {e}"))?
        }
        BodyForm::Object | BodyForm::Operations => {
            serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?
        }
    };
    match (form, &value) {
        (BodyForm::Operations, Value::Array(_)) => Ok(value),
        (BodyForm::Operations, _) => Err("a JSON patch is a list of operations".into()),
        (_, Value::Object(m)) => match m.get("metadata") {
            None | Some(Value::Null | Value::Object(_)) => Ok(value),
            Some(_) => Err("`metadata` is not an object".into()),
        },
        _ => Err("the body is not an object".into()),
    }
}

/// The resourceVersion an object says it has; empty when none.
fn resource_version(obj: &Value) -> &str {
    obj.get("metadata")
        .and_then(|m| m.get("resourceVersion"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `body` conditioned on resourceVersion `rv`: the API server applies it
/// only to that version of the object.
fn conditioned(mut body: Value, form: BodyForm, rv: &str) -> Value {
    match (form, &mut body) {
        // A trailing `add`, not a leading `test`: a failed `test` is the
        // API server's 422, which reads as the adapter's own mistake, while
        // a result that names a version the object no longer has is its 409,
        // which `send` checks and sends again.
        (BodyForm::Operations, Value::Array(ops)) => {
            ops.push(json!({"op": "add", "path": "/metadata/resourceVersion", "value": rv}));
        }
        (_, Value::Object(m)) => {
            let meta = m.entry("metadata").or_insert_with(|| json!({}));
            if meta.is_null() {
                *meta = json!({});
            }
            if let Value::Object(meta) = meta {
                meta.insert("resourceVersion".into(), Value::String(rv.into()));
            }
        }
        _ => {}
    }
    body
}

/// A Kubernetes `Status` answer.
fn status_response(code: u16, reason: &str, message: &str) -> Response {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "reason": reason, "code": code, "message": message,
    });
    Response {
        status: code,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.to_string().into_bytes(),
    }
}

impl KubeContext {
    /// Checks a write against the object rules (see the module doc); the
    /// request to send, an answer for the adapter, or a refusal (audited
    /// and counted here).
    pub(crate) async fn police(
        &self,
        audit: &Audit<'_>,
        parsed: &ApiRequest,
        req: &Request,
        answer_by: Option<Instant>,
    ) -> Result<Policed, ApiError> {
        let ApiRequest::Resource { verb, target } = parsed else {
            return Ok(Policed::AsIs);
        };
        // The verb first: a read leaves at once, without the kind's lookup
        // by name.
        if !matches!(verb, Verb::Create | Verb::Update | Verb::Patch)
            || req.body.is_none()
            || req.query.iter().any(|(k, v)| k == "dryRun" && v == "All")
        {
            return Ok(Policed::AsIs);
        }
        let Some(kind) = Kind::of(target) else {
            return Ok(Policed::AsIs);
        };
        let outcome = self.police_write(*verb, target, kind, req, answer_by).await;
        match outcome {
            Ok(p) => Ok(p),
            Err(Refusal::Rule(v)) => {
                self.usage.record_object_denied(*verb, target, v.rule);
                let message = format!("{verb} {target} denied by object rule `{}`: {v}", v.rule);
                tracing::info!(rule = v.rule, field = %v.field, %target, %verb, "object rule refused a write");
                audit.denied(Some(parsed), &message);
                Err(ApiError::Denied(Denial {
                    message,
                    missing_grant: v.grant.unwrap_or_else(|| {
                        "(none: no grant allows this; change the object)".into()
                    }),
                }))
            }
            Err(Refusal::Error(e)) => {
                audit.denied(Some(parsed), &super::denial_message(&e));
                Err(e)
            }
        }
    }

    async fn police_write(
        &self,
        verb: Verb,
        target: &ApiTarget,
        kind: Kind,
        req: &Request,
        answer_by: Option<Instant>,
    ) -> Result<Policed, Refusal> {
        let form = body_form(verb, target, req)?;
        let body = parse_body(req.body.as_deref().unwrap_or_default(), form)
            .map_err(|why| Refusal::Error(invalid(format!("{verb} {target}: {why}"))))?;
        let ns = target.namespace.as_deref();
        let policy = &self.objects;

        if verb == Verb::Create || (verb == Verb::Update && !kind.compares()) {
            policy.check(kind, ns, &body).map_err(Refusal::Rule)?;
            let mut body = body;
            if verb == Verb::Create {
                policy.prepare_create(kind, &mut body);
            }
            return Ok(Policed::Body {
                body: body.to_string().into_bytes(),
                conditioned: false,
            });
        }

        let serialized = body.to_string().into_bytes();
        let (old, result, rv) = match self
            .dry_run(verb, target, kind, req, serialized, answer_by)
            .await?
        {
            Ok(settled) => settled,
            Err(answer) => return Ok(Policed::Answer(answer)),
        };
        // The claim check (`authorize`) read the PV before; the version
        // written is the one read here, so its claim is checked again.
        if kind == Kind::Volume
            && let Some(old) = &old
        {
            self.recheck_claim(verb, target, old)?;
        }
        match &old {
            Some(old) => policy.check_change(kind, ns, old, &result),
            None => policy.check(kind, ns, &result),
        }
        .map_err(Refusal::Rule)?;
        tracing::debug!(%target, %verb, resource_version = %rv, "write checked by a dry run; sending it conditioned");
        Ok(Policed::Body {
            body: conditioned(body, form, &rv).to_string().into_bytes(),
            conditioned: true,
        })
    }

    /// A patch, or an update the rules compare, done as a dry run: the
    /// object as stored (for the comparing kinds), what the write would
    /// make of it, and the version that was. The comparing kinds read the
    /// object first; if it moved on before the dry run, both are done
    /// again. `Err` is the API server's answer, handed back as it is.
    async fn dry_run(
        &self,
        verb: Verb,
        target: &ApiTarget,
        kind: Kind,
        req: &Request,
        serialized: Vec<u8>,
        answer_by: Option<Instant>,
    ) -> Result<Result<(Option<Value>, Value, String), Response>, Refusal> {
        let mut attempts = 0;
        // The first attempt may take the object from the watch-fed cache
        // instead of reading it: two round trips instead of three.
        let mut cached = self.cached_current(target, kind);
        loop {
            let from_cache = cached.is_some();
            // A stale copy costs one more dry run, not an attempt of the
            // adapter's conflict budget.
            if !from_cache {
                attempts += 1;
            }
            let old = if let Some(old) = cached.take() {
                Some(old)
            } else if kind.compares() {
                match self.read_current(target, req, answer_by).await? {
                    Ok(old) => Some(old),
                    Err(answer) => return Ok(Err(answer)),
                }
            } else {
                None
            };
            let mut dry = Request {
                method: req.method,
                path: req.path.clone(),
                query: req.query.clone(),
                body: Some(serialized.clone()),
                content_type: req.content_type,
            };
            dry.query.push(("dryRun".into(), "All".into()));
            let (status, headers, bytes) = self.side_request(&dry, answer_by).await?;
            if !(200..300).contains(&status) {
                return Ok(Err(Response {
                    status,
                    headers,
                    body: bytes,
                }));
            }
            let result: Value = serde_json::from_slice(&bytes).map_err(|e| {
                Refusal::Error(ApiError::Transport(format!(
                    "the dry run's result is not JSON: {e}"
                )))
            })?;
            let rv = resource_version(&result).to_string();
            if status == 201 || rv.is_empty() {
                return Err(Refusal::Error(invalid(format!(
                    "{verb} {target} would create the object, which the host cannot condition on a \
                     version: create it (POST), then patch it"
                ))));
            }
            match &old {
                Some(o) if resource_version(o) != rv => {
                    if from_cache {
                        tracing::debug!(%target, "the cached object was not the one the dry run changed; reading it");
                    } else if attempts > super::send::MAX_CONFLICT_RETRIES {
                        return Ok(Err(status_response(
                            409,
                            "Conflict",
                            "the object kept changing while the host checked the write; read it again and retry",
                        )));
                    }
                }
                _ => return Ok(Ok((old, result, rv))),
            }
        }
    }

    /// The object a write to `target` would change, as the watch-fed cache
    /// holds it, for the kinds whose rules may compare against a copy
    /// ([`uses_cached_old`]); `None` sends the host to read it.
    ///
    /// The copy may lag the API server. It stands in for the object only
    /// when its resourceVersion is the one the dry run was computed from
    /// (`dry_run` checks): then it *is* the object as stored, and the write
    /// is conditioned on that version, so nothing the check did not see can
    /// be written.
    fn cached_current(&self, target: &ApiTarget, kind: Kind) -> Option<Value> {
        if !uses_cached_old(kind) || target.subresource.is_some() {
            return None;
        }
        let cache = self.cache.as_ref()?;
        let any_version = [("resourceVersion".to_string(), "0".to_string())];
        let shape = crate::kubecache::Shape {
            max_bytes: self.max_response,
            item: None,
        };
        let hit = cache
            .answer(Verb::Get, target, &any_version, &shape)?
            .ok()?;
        serde_json::from_slice(&hit.body).ok()
    }

    /// Refuses a write to a PersistentVolume no longer bound to a claim in
    /// a granted namespace.
    fn recheck_claim(&self, verb: Verb, target: &ApiTarget, old: &Value) -> Result<(), Refusal> {
        let claim_ns = crate::grants::objects::fields::dig(old, &["spec", "claimRef", "namespace"])
            .and_then(Value::as_str)
            .unwrap_or("");
        if self.checker.claim_namespace_granted(claim_ns) {
            return Ok(());
        }
        Err(Refusal::Error(ApiError::Denied(Denial {
            message: format!(
                "{verb} {target} denied: the PersistentVolume is no longer bound to a claim in a \
                 granted namespace"
            ),
            missing_grant: String::new(),
        })))
    }

    /// The object a write to `target` would change, as stored now; `Err`
    /// is the API server's answer when it cannot be read (404 …).
    async fn read_current(
        &self,
        target: &ApiTarget,
        req: &Request,
        answer_by: Option<Instant>,
    ) -> Result<Result<Value, Response>, Refusal> {
        let path = match &target.subresource {
            Some(_) => req
                .path
                .rsplit_once('/')
                .map_or(req.path.as_str(), |(p, _)| p),
            None => req.path.as_str(),
        };
        let read = Request {
            method: Method::Get,
            path: path.to_string(),
            query: Vec::new(),
            body: None,
            content_type: None,
        };
        let (status, headers, bytes) = self.side_request(&read, answer_by).await?;
        if !(200..300).contains(&status) {
            return Ok(Err(Response {
                status,
                headers,
                body: bytes,
            }));
        }
        serde_json::from_slice::<Value>(&bytes)
            .map(Ok)
            .map_err(|e| {
                Refusal::Error(ApiError::Transport(format!(
                    "the object read before the write is not JSON: {e}"
                )))
            })
    }

    /// A request the host makes for a check: throttled like the adapter's,
    /// answered before `answer_by`.
    async fn side_request(
        &self,
        req: &Request,
        answer_by: Option<Instant>,
    ) -> Result<(u16, Vec<(String, String)>, Vec<u8>), Refusal> {
        self.limiter.acquire().await;
        let exchange = self.exchange(req, answer_by);
        let outcome = match answer_by {
            Some(by) => tokio::time::timeout_at(by.into(), exchange)
                .await
                .unwrap_or(Err(Failure::Unanswered)),
            None => exchange.await,
        };
        outcome.map_err(|f| {
            Refusal::Error(match f {
                Failure::Unanswered => ApiError::Timeout,
                Failure::Transport(m) => ApiError::Transport(m),
                Failure::Invalid(m) => ApiError::InvalidRequest(m),
            })
        })
    }
}

/// Whether the kind's rules may compare a write against the cache's copy of
/// the object. The cache keeps objects without `managedFields` and kubectl's
/// last-applied annotation: a pod's rule reads only the old `spec.nodeName`,
/// so the copy serves; a claim's compares whole objects, where the missing
/// annotation would read as a change; a namespace's and a volume's are not
/// on a hot path, and a volume is not cached.
fn uses_cached_old(kind: Kind) -> bool {
    kind == Kind::Pod
}

/// Why a write is not sent.
enum Refusal {
    /// An object rule refused it.
    Rule(Violation),
    /// It could not be checked.
    Error(ApiError),
}

/// How a write's body is read, by its verb and content type.
fn body_form(verb: Verb, target: &ApiTarget, req: &Request) -> Result<BodyForm, Refusal> {
    Ok(match (verb, req.content_type) {
        (Verb::Create | Verb::Update, None | Some(ContentType::Json)) => BodyForm::Object,
        (Verb::Patch, Some(ContentType::MergePatch | ContentType::StrategicMergePatch)) => {
            BodyForm::Object
        }
        (Verb::Patch, Some(ContentType::ApplyPatch)) => BodyForm::Apply,
        (Verb::Patch, Some(ContentType::JsonPatch)) => BodyForm::Operations,
        (verb, ct) => {
            return Err(Refusal::Error(invalid(format!(
                "a {verb} of {} is sent as {}, which the host cannot check: a create or update \
                 is JSON, a patch one of the patch types",
                target.grant_spelling(),
                match ct {
                    Some(ContentType::Json) | None => "JSON",
                    Some(_) => "a patch",
                }
            ))));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_read_in_their_form() {
        assert!(parse_body(br#"{"metadata": {"name": "x"}}"#, BodyForm::Object).is_ok());
        assert!(parse_body(b"[1]", BodyForm::Object).is_err());
        assert!(parse_body(br#"{"metadata": "x"}"#, BodyForm::Object).is_err());
        assert!(parse_body(b"{", BodyForm::Object).is_err());
        assert!(parse_body(b"[]", BodyForm::Operations).is_ok());
        assert!(parse_body(b"{}", BodyForm::Operations).is_err());
        let v = parse_body(
            b"apiVersion: v1\nkind: Pod\nspec:\n  hostPID: true\n",
            BodyForm::Apply,
        )
        .expect("yaml");
        assert_eq!(v["spec"]["hostPID"], true);
    }

    #[test]
    fn an_apply_body_means_what_the_api_server_would_read_in_it() {
        // It is sent on as JSON: YAML 1.1's scalars must not arrive as
        // strings the API server's own YAML reading would not have made.
        let v = parse_body(
            b"spec:\n  hostNetwork: yes\n  volumes:\n  - secret: {defaultMode: 0644}\n",
            BodyForm::Apply,
        )
        .expect("yaml");
        assert_eq!(v["spec"]["hostNetwork"], true);
        assert_eq!(v["spec"]["volumes"][0]["secret"]["defaultMode"], 420);
    }

    #[test]
    fn the_real_write_is_conditioned_on_the_checked_version() {
        let ops = conditioned(
            json!([{"op": "add", "path": "/spec/x", "value": 1}]),
            BodyForm::Operations,
            "42",
        );
        assert_eq!(
            ops[0]["path"], "/spec/x",
            "the adapter's operations run first"
        );
        assert_eq!(
            ops[1],
            json!({"op": "add", "path": "/metadata/resourceVersion", "value": "42"})
        );
        assert_eq!(ops.as_array().map(Vec::len), Some(2));
        let merge = conditioned(json!({"spec": {}}), BodyForm::Object, "42");
        assert_eq!(merge["metadata"]["resourceVersion"], "42");
        let apply = conditioned(
            json!({"metadata": {"resourceVersion": "1", "name": "x"}}),
            BodyForm::Apply,
            "42",
        );
        assert_eq!(
            apply["metadata"],
            json!({"resourceVersion": "42", "name": "x"})
        );
        assert_eq!(resource_version(&apply), "42");
        assert_eq!(resource_version(&json!({})), "");
    }
}
