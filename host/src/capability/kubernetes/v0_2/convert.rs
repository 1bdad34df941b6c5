//! 0.2.0's Kubernetes records to and from 0.1.0's, which the context
//! speaks. The records that carry no stream are equal field for field in
//! the two versions (docs/wit.md, "0.2.0"), but wasmtime generates a Rust
//! type per version and maps a whole interface or a resource onto another
//! crate's, never a record: the `kubernetes` interface holds the host's
//! traits, so its records are converted, a move of each field.

use crate::bindings::v0_1::pando::runtime::kubernetes as v1;
use crate::bindings::v0_2::pando::runtime::kubernetes as v2;

impl From<v2::Method> for v1::Method {
    fn from(m: v2::Method) -> Self {
        match m {
            v2::Method::Get => v1::Method::Get,
            v2::Method::Post => v1::Method::Post,
            v2::Method::Put => v1::Method::Put,
            v2::Method::Patch => v1::Method::Patch,
            v2::Method::Delete => v1::Method::Delete,
        }
    }
}

impl From<v2::ContentType> for v1::ContentType {
    fn from(c: v2::ContentType) -> Self {
        match c {
            v2::ContentType::Json => v1::ContentType::Json,
            v2::ContentType::MergePatch => v1::ContentType::MergePatch,
            v2::ContentType::StrategicMergePatch => v1::ContentType::StrategicMergePatch,
            v2::ContentType::ApplyPatch => v1::ContentType::ApplyPatch,
            v2::ContentType::JsonPatch => v1::ContentType::JsonPatch,
        }
    }
}

impl From<v2::Request> for v1::Request {
    fn from(r: v2::Request) -> Self {
        v1::Request {
            method: r.method.into(),
            path: r.path,
            query: r.query,
            body: r.body,
            content_type: r.content_type.map(Into::into),
        }
    }
}

impl From<v1::Response> for v2::Response {
    fn from(r: v1::Response) -> Self {
        v2::Response {
            status: r.status,
            headers: r.headers,
            body: r.body,
        }
    }
}

impl From<v1::ApiError> for v2::ApiError {
    fn from(e: v1::ApiError) -> Self {
        match e {
            v1::ApiError::Denied(d) => v2::ApiError::Denied(v2::Denial {
                message: d.message,
                missing_grant: d.missing_grant,
            }),
            v1::ApiError::InvalidRequest(m) => v2::ApiError::InvalidRequest(m),
            v1::ApiError::TooLarge(m) => v2::ApiError::TooLarge(m),
            v1::ApiError::Transport(m) => v2::ApiError::Transport(m),
            v1::ApiError::Rejected(s) => v2::ApiError::Rejected(v2::ApiStatus {
                code: s.code,
                reason: s.reason,
                message: s.message,
            }),
            v1::ApiError::Timeout => v2::ApiError::Timeout,
            v1::ApiError::Cancelled => v2::ApiError::Cancelled,
        }
    }
}

impl From<v2::WatchRequest> for v1::WatchRequest {
    fn from(r: v2::WatchRequest) -> Self {
        v1::WatchRequest {
            path: r.path,
            label_selector: r.label_selector,
            field_selector: r.field_selector,
            resource_version: r.resource_version,
            allow_bookmarks: r.allow_bookmarks,
            timeout_seconds: r.timeout_seconds,
        }
    }
}

impl From<v1::WatchEvent> for v2::WatchEvent {
    fn from(e: v1::WatchEvent) -> Self {
        v2::WatchEvent {
            event_type: match e.event_type {
                v1::EventType::Added => v2::EventType::Added,
                v1::EventType::Modified => v2::EventType::Modified,
                v1::EventType::Deleted => v2::EventType::Deleted,
                v1::EventType::Bookmark => v2::EventType::Bookmark,
            },
            object: e.object,
        }
    }
}

impl From<v1::WatchEnd> for v2::WatchEnd {
    fn from(e: v1::WatchEnd) -> Self {
        match e {
            v1::WatchEnd::Closed => v2::WatchEnd::Closed,
            v1::WatchEnd::Expired(v) => v2::WatchEnd::Expired(v),
            v1::WatchEnd::Failed(e) => v2::WatchEnd::Failed(e.into()),
        }
    }
}

impl From<v2::LogRequest> for v1::LogRequest {
    fn from(r: v2::LogRequest) -> Self {
        v1::LogRequest {
            namespace: r.namespace,
            pod: r.pod,
            container: r.container,
            follow: r.follow,
            previous: r.previous,
            tail_lines: r.tail_lines,
            since_seconds: r.since_seconds,
            timestamps: r.timestamps,
            limit_bytes: r.limit_bytes,
        }
    }
}

impl From<v2::ExecRequest> for v1::ExecRequest {
    fn from(r: v2::ExecRequest) -> Self {
        v1::ExecRequest {
            namespace: r.namespace,
            pod: r.pod,
            container: r.container,
            command: r.command,
            stdin: r.stdin,
            tty: r.tty,
        }
    }
}
