//! Constructors for the contract's [`Error`].
//!
//! `Error` is generated from the WIT, so it cannot carry inherent
//! constructors here; these free functions (and [`ErrorExt`]) stand in.

use crate::types::{CommandFailure, Error};

/// The input is malformed or inconsistent; the message names the field.
pub fn invalid(message: impl Into<String>) -> Error {
    Error::Invalid(message.into())
}

/// The bundle, workload, volume or edge named does not exist.
pub fn not_found(message: impl Into<String>) -> Error {
    Error::NotFound(message.into())
}

/// The runtime holds something that contradicts the request.
pub fn conflict(message: impl Into<String>) -> Error {
    Error::Conflict(message.into())
}

/// This adapter does not offer `what` (a method or a feature):
/// "`what` is not supported by this adapter".
pub fn unsupported(what: &str) -> Error {
    Error::Unsupported(format!("{what} is not supported by this adapter"))
}

/// The runtime cannot be reached or is not ready.
pub fn unavailable(message: impl Into<String>) -> Error {
    Error::Unavailable(message.into())
}

/// A grant, or the runtime's own authorization, refused.
pub fn denied(message: impl Into<String>) -> Error {
    Error::Denied(message.into())
}

/// The call's deadline passed.
pub fn timeout(message: impl Into<String>) -> Error {
    Error::Timeout(message.into())
}

/// Core cancelled the call.
pub fn cancelled(message: impl Into<String>) -> Error {
    Error::Cancelled(message.into())
}

/// A command ran and exited non-zero; `stderr` explains it.
pub fn command_failed(exit_code: i32, stderr: impl Into<String>) -> Error {
    Error::CommandFailed(CommandFailure {
        exit_code,
        stderr: stderr.into(),
    })
}

/// A fault inside the adapter: a bug for its author, nothing the caller fixes.
pub fn internal(message: impl Into<String>) -> Error {
    Error::Internal(message.into())
}

/// What every [`Error`] can say about itself.
pub trait ErrorExt {
    /// The case's name as in the WIT (`invalid`, `not-found` …).
    fn kind(&self) -> &'static str;
    /// The operator's message (for `command-failed`, the stderr tail).
    fn message(&self) -> &str;
    /// The same error with `context: ` put before its message, to say
    /// which step failed.
    fn context(self, context: &str) -> Error;
}

impl ErrorExt for Error {
    fn kind(&self) -> &'static str {
        match self {
            Error::Invalid(_) => "invalid",
            Error::NotFound(_) => "not-found",
            Error::Conflict(_) => "conflict",
            Error::Unsupported(_) => "unsupported",
            Error::Unavailable(_) => "unavailable",
            Error::Denied(_) => "denied",
            Error::Timeout(_) => "timeout",
            Error::Cancelled(_) => "cancelled",
            Error::CommandFailed(_) => "command-failed",
            Error::Internal(_) => "internal",
        }
    }

    fn message(&self) -> &str {
        match self {
            Error::Invalid(m)
            | Error::NotFound(m)
            | Error::Conflict(m)
            | Error::Unsupported(m)
            | Error::Unavailable(m)
            | Error::Denied(m)
            | Error::Timeout(m)
            | Error::Cancelled(m)
            | Error::Internal(m) => m,
            Error::CommandFailed(failure) => &failure.stderr,
        }
    }

    fn context(self, context: &str) -> Error {
        let prefix = |m: String| format!("{context}: {m}");
        match self {
            Error::Invalid(m) => Error::Invalid(prefix(m)),
            Error::NotFound(m) => Error::NotFound(prefix(m)),
            Error::Conflict(m) => Error::Conflict(prefix(m)),
            Error::Unsupported(m) => Error::Unsupported(prefix(m)),
            Error::Unavailable(m) => Error::Unavailable(prefix(m)),
            Error::Denied(m) => Error::Denied(prefix(m)),
            Error::Timeout(m) => Error::Timeout(prefix(m)),
            Error::Cancelled(m) => Error::Cancelled(prefix(m)),
            // The stderr is the process's own words: keep them as they are.
            Error::CommandFailed(failure) => Error::CommandFailed(failure),
            Error::Internal(m) => Error::Internal(prefix(m)),
        }
    }
}
