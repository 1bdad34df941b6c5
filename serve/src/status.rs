//! A failed call as a gRPC status: the code says the kind, the message is
//! the host's or the adapter's words, and the details carry the contract's
//! `Error` (or `HostError`) as a `google.rpc.Status` whose `details` hold it,
//! which is where grpc-go's `status.Details()` looks.

use bytes::Bytes;
use pando_host::CallError;
use pando_host::types::Error as AdapterError;
use prost::Message as _;
use tonic::{Code, Status};

use crate::convert::Invalid;
use crate::pb;

/// `google.protobuf.Any`, as grpc-go unpacks it.
#[derive(Clone, PartialEq, prost::Message)]
struct Any {
    #[prost(string, tag = "1")]
    type_url: String,
    #[prost(bytes = "vec", tag = "2")]
    value: Vec<u8>,
}

/// `google.rpc.Status`, the `grpc-status-details-bin` trailer's content.
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
    #[prost(message, repeated, tag = "3")]
    details: Vec<Any>,
}

fn with_detail(code: Code, message: String, type_name: &str, detail: Vec<u8>) -> Status {
    let rpc = RpcStatus {
        code: code as i32,
        message: message.clone(),
        details: vec![Any {
            type_url: format!("type.googleapis.com/{type_name}"),
            value: detail,
        }],
    };
    Status::with_details(code, message, Bytes::from(rpc.encode_to_vec()))
}

/// The code of an adapter error's kind (docs/go.md, "Errors").
pub fn adapter_code(e: &AdapterError) -> Code {
    match e {
        AdapterError::Invalid(_) => Code::InvalidArgument,
        AdapterError::NotFound(_) => Code::NotFound,
        AdapterError::Conflict(_) => Code::Aborted,
        AdapterError::Unsupported(_) => Code::Unimplemented,
        AdapterError::Unavailable(_) => Code::Unavailable,
        AdapterError::Denied(_) => Code::PermissionDenied,
        AdapterError::Timeout(_) => Code::DeadlineExceeded,
        AdapterError::Cancelled(_) => Code::Cancelled,
        AdapterError::CommandFailed(_) => Code::FailedPrecondition,
        AdapterError::Internal(_) => Code::Internal,
    }
}

/// A host failure's status, with a `HostError` detail.
pub fn host(code: Code, kind: &str, message: String) -> Status {
    let detail = pb::HostError {
        kind: kind.to_string(),
        message: message.clone(),
    };
    with_detail(
        code,
        message,
        "pando.runtime.v0_1.HostError",
        detail.encode_to_vec(),
    )
}

/// A call's task that panicked or was aborted: a host failure, whichever
/// call shape (unary, stream, watch) lost it.
pub fn joined(what: &str, e: tokio::task::JoinError) -> Status {
    host(Code::Internal, "host", format!("{what}'s task failed: {e}"))
}

/// A call's failure.
pub fn from_call(e: CallError) -> Status {
    match e {
        CallError::Adapter(a) => {
            let code = adapter_code(&a);
            let message = format!("{}: {}", a.kind(), a.message());
            let detail = pb::Error::from(a).encode_to_vec();
            with_detail(code, message, "pando.runtime.v0_1.Error", detail)
        }
        other => {
            let code = match &other {
                CallError::DeadlineExceeded { .. } => Code::DeadlineExceeded,
                CallError::Cancelled { .. } => Code::Cancelled,
                CallError::Quarantined { .. } => Code::Unavailable,
                CallError::Busy { .. } => Code::ResourceExhausted,
                _ => Code::Internal,
            };
            host(code, other.kind(), other.to_string())
        }
    }
}

/// A request the host could not take.
pub fn invalid(e: Invalid) -> Status {
    host(Code::InvalidArgument, "invalid-request", e.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_adapter_error_keeps_its_kind_and_words_in_the_details() {
        let s = from_call(CallError::Adapter(AdapterError::Denied(
            "the grants do not allow `list secrets`: add it to kubernetes.rules".into(),
        )));
        assert_eq!(s.code(), Code::PermissionDenied);
        let rpc = RpcStatus::decode(s.details()).expect("a google.rpc.Status");
        assert_eq!(rpc.code, Code::PermissionDenied as i32);
        assert_eq!(
            rpc.details[0].type_url,
            "type.googleapis.com/pando.runtime.v0_1.Error"
        );
        let e = pb::Error::decode(rpc.details[0].value.as_slice()).expect("an Error");
        assert_eq!(
            e.case,
            Some(pb::error::Case::Denied(
                "the grants do not allow `list secrets`: add it to kubernetes.rules".into()
            ))
        );
    }
}
