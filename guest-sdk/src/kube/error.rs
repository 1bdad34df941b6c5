//! [`KubeError`]: why a typed call failed, and its mapping onto the
//! contract's [`Error`].

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;

use crate::kubernetes as raw;
use crate::types::Error;

/// How many bytes of a non-`Status` error body a message keeps.
const BODY_EXCERPT: usize = 512;

/// Why a call of the typed client failed.
///
/// An answer of the API server with an error status (or its refusal to
/// open a watch, log or exec stream) is [`KubeError::Api`];
/// the other cases are the host's refusals (the WIT `api-error`) and bodies
/// that are not what the call expected. `?` turns it into the contract's
/// [`Error`] inside an adapter method (see the `From` impl).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KubeError {
    /// The API server answered with a non-2xx status, decoded from its
    /// `Status` body when it sent one.
    #[error("the API server answered {status} {reason}: {message}")]
    Api {
        /// The HTTP status (404, 409 …).
        status: u16,
        /// The `Status.reason` (`NotFound`, `AlreadyExists` …); the status's
        /// usual reason when the body is not a `Status`.
        reason: String,
        /// The `Status.message`, or an excerpt of the body.
        message: String,
        /// The `retry-after` header in seconds, when the server sent one
        /// (with 429 and some 5xx).
        retry_after: Option<u64>,
    },
    /// The host's grants refused the request; nothing was sent. Shown as
    /// the host's message, which already names the rule to add; the rule
    /// is appended only when the message does not carry it.
    #[error("{}", denied_display(message, missing_grant))]
    Denied {
        /// What was refused and why.
        message: String,
        /// The grant rule that would allow it, as a line for the grants file.
        missing_grant: String,
    },
    /// The API server could not be reached, or the connection broke.
    #[error("the Kubernetes API is unreachable: {0}")]
    Transport(String),
    /// The call's deadline passed while waiting for the API server.
    #[error("the Kubernetes API did not answer before the call's deadline")]
    Timeout,
    /// The call was cancelled while waiting for the API server.
    #[error("the call was cancelled while waiting for the Kubernetes API")]
    Cancelled,
    /// The body is larger than the adapter's cap; nothing was sent.
    #[error("the request body is too large: {0}")]
    TooLarge(String),
    /// The request is malformed: a name with a `/`, a patch without a field
    /// manager, or a path or query the host refused. Nothing was sent.
    #[error("invalid Kubernetes request: {0}")]
    InvalidRequest(String),
    /// A body that is not the JSON the call expected.
    #[error("cannot decode the API server's answer: {0}")]
    Decode(String),
}

/// A denial's text, naming the missing grant once.
fn denied_display(message: &str, missing_grant: &str) -> String {
    if missing_grant.is_empty() || message.contains(missing_grant) {
        message.to_owned()
    } else {
        format!("{message} (missing grant: {missing_grant})")
    }
}

impl KubeError {
    /// The error for an answer with a non-2xx `status`: its `Status` body
    /// decoded when it is one, otherwise an excerpt of the body; the
    /// `retry-after` header (whole seconds) when present.
    pub fn from_response(status: u16, headers: &[(String, String)], body: &[u8]) -> KubeError {
        let retry_after = headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("retry-after"))
            .and_then(|(_, value)| value.trim().parse::<u64>().ok());
        let decoded = serde_json::from_slice::<Status>(body)
            .ok()
            .filter(|s| s.message.is_some() || s.reason.is_some());
        let (reason, message) = match decoded {
            Some(s) => (
                s.reason
                    .filter(|r| !r.is_empty())
                    .unwrap_or_else(|| default_reason(status).into()),
                s.message.unwrap_or_default(),
            ),
            None => (default_reason(status).into(), excerpt(body)),
        };
        KubeError::Api {
            status,
            reason,
            message,
            retry_after,
        }
    }

    /// The HTTP status of an [`Api`](KubeError::Api) error.
    pub fn status(&self) -> Option<u16> {
        match self {
            KubeError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// 404: the object (or its namespace) does not exist.
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// 409: it already exists, or its `resourceVersion` is stale.
    pub fn is_conflict(&self) -> bool {
        self.status() == Some(409)
    }

    /// 410: the resource version is too old; list again.
    pub fn is_gone(&self) -> bool {
        self.status() == Some(410)
    }

    /// 422: the API server rejected the object as invalid.
    pub fn is_invalid(&self) -> bool {
        self.status() == Some(422)
    }

    /// 429: too many requests; see [`retry_after`](KubeError::retry_after).
    pub fn is_throttled(&self) -> bool {
        self.status() == Some(429)
    }

    /// 403: the cluster's own authorization refused (not the host's grants:
    /// that is [`Denied`](KubeError::Denied)).
    pub fn is_forbidden(&self) -> bool {
        self.status() == Some(403)
    }

    /// How long the server asked to wait before retrying, when it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            KubeError::Api {
                retry_after: Some(secs),
                ..
            } => Some(Duration::from_secs(*secs)),
            _ => None,
        }
    }
}

impl From<raw::ApiError> for KubeError {
    fn from(e: raw::ApiError) -> KubeError {
        match e {
            raw::ApiError::Denied(d) => KubeError::Denied {
                message: d.message,
                missing_grant: d.missing_grant,
            },
            raw::ApiError::InvalidRequest(m) => KubeError::InvalidRequest(m),
            raw::ApiError::TooLarge(m) => KubeError::TooLarge(m),
            raw::ApiError::Transport(m) => KubeError::Transport(m),
            raw::ApiError::Rejected(s) => KubeError::Api {
                status: s.code,
                reason: s.reason,
                message: s.message,
                retry_after: None,
            },
            raw::ApiError::Timeout => KubeError::Timeout,
            raw::ApiError::Cancelled => KubeError::Cancelled,
        }
    }
}

/// The contract's error for a failed Kubernetes call, its message the
/// [`KubeError`]'s `Display`:
///
/// | `KubeError` | `Error` |
/// |---|---|
/// | 404 | `not-found` |
/// | 409, 410 | `conflict` |
/// | 401, 403, `Denied` | `denied` |
/// | 400, 422, other 4xx, `InvalidRequest`, `TooLarge` | `invalid` |
/// | 405 | `internal` (a bug of the adapter) |
/// | 429, 5xx, `Transport` | `unavailable` |
/// | `Timeout` | `timeout` |
/// | `Cancelled` | `cancelled` |
/// | `Decode`, other statuses | `internal` |
impl From<KubeError> for Error {
    fn from(e: KubeError) -> Error {
        let message = e.to_string();
        match e {
            KubeError::Api { status, .. } => match status {
                404 => Error::NotFound(message),
                409 | 410 => Error::Conflict(message),
                401 | 403 => Error::Denied(message),
                405 => Error::Internal(message),
                429 | 500..=599 => Error::Unavailable(message),
                400..=499 => Error::Invalid(message),
                _ => Error::Internal(message),
            },
            KubeError::Denied { .. } => Error::Denied(message),
            KubeError::Transport(_) => Error::Unavailable(message),
            KubeError::Timeout => Error::Timeout(message),
            KubeError::Cancelled => Error::Cancelled(message),
            KubeError::TooLarge(_) | KubeError::InvalidRequest(_) => Error::Invalid(message),
            KubeError::Decode(_) => Error::Internal(message),
        }
    }
}

/// The usual `Status.reason` of an HTTP status.
fn default_reason(status: u16) -> &'static str {
    match status {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Expired",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

/// The start of a body, as text, for a message.
fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(BODY_EXCERPT)]);
    let text = text.trim();
    if text.is_empty() {
        "(empty body)".into()
    } else if body.len() > BODY_EXCERPT {
        format!("{text}…")
    } else {
        text.into()
    }
}

/// A wait the call's end cut short: `Timeout` when its deadline passed,
/// else `Cancelled`.
pub(crate) fn call_ended(e: Error) -> KubeError {
    match e {
        Error::Timeout(_) => KubeError::Timeout,
        _ => KubeError::Cancelled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorExt;

    fn status_body(code: u16, reason: &str, message: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }))
        .unwrap()
    }

    fn api(code: u16, reason: &str) -> KubeError {
        KubeError::from_response(code, &[], &status_body(code, reason, "m"))
    }

    #[test]
    fn decodes_a_status_body() {
        let e = KubeError::from_response(
            404,
            &[],
            &status_body(404, "NotFound", r#"pods "web" not found"#),
        );
        assert_eq!(
            e,
            KubeError::Api {
                status: 404,
                reason: "NotFound".into(),
                message: r#"pods "web" not found"#.into(),
                retry_after: None,
            }
        );
        assert!(e.is_not_found());
        assert!(!e.is_conflict());
        assert_eq!(
            e.to_string(),
            r#"the API server answered 404 NotFound: pods "web" not found"#
        );
    }

    #[test]
    fn a_body_that_is_not_a_status_is_kept_as_text() {
        let e = KubeError::from_response(502, &[], b"<html>bad gateway</html>");
        assert_eq!(
            e,
            KubeError::Api {
                status: 502,
                reason: "Unknown".into(),
                message: "<html>bad gateway</html>".into(),
                retry_after: None,
            }
        );
        let e = KubeError::from_response(503, &[], b"");
        assert!(matches!(e, KubeError::Api { ref message, .. } if message == "(empty body)"));
        let long = vec![b'x'; 2000];
        let KubeError::Api { message, .. } = KubeError::from_response(500, &[], &long) else {
            panic!()
        };
        assert!(message.len() < 600 && message.ends_with('…'));
    }

    #[test]
    fn every_is_helper() {
        assert!(api(404, "NotFound").is_not_found());
        assert!(api(409, "AlreadyExists").is_conflict());
        assert!(api(410, "Expired").is_gone());
        assert!(api(422, "Invalid").is_invalid());
        assert!(api(429, "TooManyRequests").is_throttled());
        assert!(api(403, "Forbidden").is_forbidden());
        let denied = KubeError::Denied {
            message: "m".into(),
            missing_grant: "g".into(),
        };
        assert!(!denied.is_forbidden() && !denied.is_not_found());
        assert_eq!(denied.status(), None);
    }

    #[test]
    fn retry_after_comes_from_the_headers() {
        let headers = vec![
            ("content-type".to_string(), "application/json".to_string()),
            ("Retry-After".to_string(), " 7".to_string()),
        ];
        let e =
            KubeError::from_response(429, &headers, &status_body(429, "TooManyRequests", "slow"));
        assert!(e.is_throttled());
        assert_eq!(e.retry_after(), Some(Duration::from_secs(7)));
        assert_eq!(api(429, "TooManyRequests").retry_after(), None);
        let dated = vec![(
            "retry-after".to_string(),
            "Wed, 21 Oct 2015 07:28:00 GMT".to_string(),
        )];
        assert_eq!(
            KubeError::from_response(503, &dated, b"").retry_after(),
            None
        );
    }

    #[test]
    fn maps_onto_the_contract() {
        let kind = |e: KubeError| Error::from(e).kind();
        assert_eq!(kind(api(404, "NotFound")), "not-found");
        assert_eq!(kind(api(409, "Conflict")), "conflict");
        assert_eq!(kind(api(410, "Expired")), "conflict");
        assert_eq!(kind(api(403, "Forbidden")), "denied");
        assert_eq!(kind(api(401, "Unauthorized")), "denied");
        assert_eq!(kind(api(422, "Invalid")), "invalid");
        assert_eq!(kind(api(400, "BadRequest")), "invalid");
        assert_eq!(kind(api(405, "MethodNotAllowed")), "internal");
        assert_eq!(kind(api(429, "TooManyRequests")), "unavailable");
        assert_eq!(kind(api(500, "InternalError")), "unavailable");
        assert_eq!(kind(api(503, "ServiceUnavailable")), "unavailable");
        assert_eq!(kind(KubeError::Transport("reset".into())), "unavailable");
        assert_eq!(kind(KubeError::Timeout), "timeout");
        assert_eq!(kind(KubeError::Cancelled), "cancelled");
        assert_eq!(kind(KubeError::InvalidRequest("x".into())), "invalid");
        assert_eq!(kind(KubeError::TooLarge("x".into())), "invalid");
        assert_eq!(kind(KubeError::Decode("x".into())), "internal");
    }

    #[test]
    fn a_refused_stream_is_an_api_error() {
        let e = KubeError::from(raw::ApiError::Rejected(raw::ApiStatus {
            code: 404,
            reason: "NotFound".into(),
            message: r#"pods "web" not found"#.into(),
        }));
        assert!(e.is_not_found());
        assert_eq!(Error::from(e).kind(), "not-found");
    }

    #[test]
    fn a_denial_keeps_its_message_and_names_the_grant_once() {
        // The host's message already ends with the rule to add.
        let rule = r#"- {verbs: [list], resources: [secrets], namespaces: ["pando-*"], except: ["pando-system"]}"#;
        let e = KubeError::from(raw::ApiError::Denied(raw::Denial {
            message: format!(
                "list secrets in pando-x denied: no grant rule allows it; to allow it, add to \
                 `kubernetes.rules`: {rule}"
            ),
            missing_grant: rule.into(),
        }));
        let err = Error::from(e);
        assert_eq!(err.kind(), "denied");
        assert_eq!(err.message().matches(rule).count(), 1, "{}", err.message());
        // A message without it gets it appended.
        let e = KubeError::from(raw::ApiError::Denied(raw::Denial {
            message: "list secrets in pando-x is not granted".into(),
            missing_grant: rule.into(),
        }));
        assert_eq!(
            Error::from(e).message(),
            format!("list secrets in pando-x is not granted (missing grant: {rule})")
        );
    }
}
