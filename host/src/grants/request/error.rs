//! Why a request was refused before any grant check, said so the author can
//! fix the path.

use super::names::MAX_SEGMENT;
use super::{ALLOWED_QUERY_KEYS, Method};

const VALID: &str = "a valid path is `/api/v1/namespaces/{namespace}/{resource}[/{name}[/{subresource}]]` \
     or `/apis/{group}/{version}/namespaces/{namespace}/{resource}[/{name}[/{subresource}]]`, \
     or the same without `namespaces/{namespace}` for cluster-scoped resources and all-namespaces \
     collections; plain lowercase ASCII, no escapes, no query in the path";

/// Why a request was refused before any grant check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path is neither an API path nor an allowed non-resource endpoint.
    #[error(
        "`{path}` is not a Kubernetes API path the host lends (only `/api/v1/…`, `/apis/…` and \
         GET of /version, /readyz, /livez, /healthz): {VALID}"
    )]
    NotAnApiPath {
        /// The path, escaped.
        path: String,
    },
    /// A character that has no place in a canonical path.
    #[error("`{path}` contains {what} at byte {offset}: {VALID}")]
    BadCharacter {
        /// The path, escaped.
        path: String,
        /// The character, described.
        what: String,
        /// Its byte offset.
        offset: usize,
    },
    /// `//`.
    #[error("`{path}` has an empty segment (`//`): {VALID}")]
    EmptySegment {
        /// The path.
        path: String,
    },
    /// A trailing `/`.
    #[error("`{path}` ends with `/`: {VALID}")]
    TrailingSlash {
        /// The path.
        path: String,
    },
    /// `.` or `..`.
    #[error("`{path}` has a relative segment `{segment}`: {VALID}")]
    DotSegment {
        /// The path.
        path: String,
        /// `.` or `..`.
        segment: String,
    },
    /// A segment over 253 characters.
    #[error("`{path}` has a segment longer than {MAX_SEGMENT} characters (`{segment}…`)")]
    SegmentTooLong {
        /// The path, shortened.
        path: String,
        /// The segment's start.
        segment: String,
    },
    /// A group, version, resource, subresource, namespace or name that is
    /// malformed.
    #[error("`{segment}` in `{path}` is not a valid {part}: {why}; {VALID}")]
    BadSegment {
        /// The path.
        path: String,
        /// Which part of the grammar (`group`, `namespace`, …).
        part: &'static str,
        /// The segment.
        segment: String,
        /// What is wrong with it.
        why: String,
    },
    /// More segments than the grammar allows.
    #[error("`{path}` has more segments than an API path allows (extra: `{extra}`): {VALID}")]
    TooManySegments {
        /// The path.
        path: String,
        /// The first extra segment.
        extra: String,
    },
    /// The path stops before naming a resource.
    #[error("`{path}` names no resource: {VALID}")]
    Incomplete {
        /// The path.
        path: String,
    },
    /// The method makes no sense on this path.
    #[error("{method} `{path}` is refused: {why}")]
    BadMethod {
        /// The method.
        method: Method,
        /// The path.
        path: String,
        /// Why.
        why: String,
    },
    /// A query key outside [`ALLOWED_QUERY_KEYS`].
    #[error(
        "query key `{key}` is not allowed: it could change what is reached or how; allowed keys are \
         {}",
        ALLOWED_QUERY_KEYS.join(", ")
    )]
    QueryKey {
        /// The key, escaped.
        key: String,
    },
    /// A query key given twice (the API server reads only the first; we
    /// would check one and send both).
    #[error("query key `{key}` is given more than once: give each key once")]
    DuplicateQueryKey {
        /// The key.
        key: String,
    },
    /// A query value that would make the verb ambiguous.
    #[error("query `{key}={value}` is refused: {why}")]
    QueryValue {
        /// The key.
        key: String,
        /// The value, escaped.
        value: String,
        /// Why.
        why: String,
    },
}

/// Escapes and shortens text from the request for an error message, so a
/// hostile path cannot forge log lines or flood them.
pub(super) fn shown(s: &str) -> String {
    let mut out: String = s.chars().take(300).flat_map(char::escape_debug).collect();
    if s.chars().count() > 300 {
        out.push('…');
    }
    out
}
