//! The host's typed errors: what went wrong loading an adapter, and what a
//! call cost. Every message names the thing and, where there is one, the fix.

use std::path::PathBuf;
use std::time::Duration;

use crate::types::Error as AdapterError;

/// Why an adapter could not be loaded. Nothing is left half-loaded: a failed
/// load has no effect but the error.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The component file could not be read.
    #[error("cannot read adapter component {path}: {source}")]
    Read {
        /// The file named.
        path: PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// The bytes are not WebAssembly at all.
    #[error(
        "{what} is not a WebAssembly component (it does not start with the wasm magic bytes \\0asm); \
         build the adapter with `cargo build --release --target wasm32-wasip2`"
    )]
    NotWasm {
        /// The component's name (its path, or `<bytes>`).
        what: String,
    },
    /// The bytes are a core module, not a component.
    #[error(
        "{what} is a core WebAssembly module, not a component; build it for the wasm32-wasip2 target \
         (which produces a component), or wrap it with `wasm-tools component new`"
    )]
    CoreModule {
        /// The component's name.
        what: String,
    },
    /// The component does not validate or compile.
    #[error("{what} is not a valid component: {reason}")]
    Malformed {
        /// The component's name.
        what: String,
        /// The validator's or compiler's message.
        reason: String,
    },
    /// The component exports no adapter interface.
    #[error(
        "{what} is a component but not a Pando adapter: it exports no `pando:runtime/adapter` interface \
         (it exports: {exports}); build it against the pando:runtime WIT package"
    )]
    NotAnAdapter {
        /// The component's name.
        what: String,
        /// What it exports instead.
        exports: String,
    },
    /// The component was built against a contract version this host does not
    /// serve.
    #[error(
        "{what} was built against pando:runtime@{found}, which this host does not serve; \
         it serves {served} and the versions semver-compatible with them (the same major \
         version; for 0.x, the same minor): rebuild the adapter against one of those"
    )]
    UnsupportedVersion {
        /// The component's name.
        what: String,
        /// The version it targets.
        found: String,
        /// The versions this host serves.
        served: String,
    },
    /// The component's SHA-256 is not the one the caller pinned
    /// ([`crate::LoadOptions::expected_digest`]); nothing was compiled.
    #[error(
        "{what} has SHA-256 {found}, not the {expected} it was pinned to: it is not the component \
         that was approved; load the approved file, or pin the new digest once it is reviewed"
    )]
    DigestMismatch {
        /// The component's name.
        what: String,
        /// The digest pinned.
        expected: String,
        /// The digest of the bytes given.
        found: String,
    },
    /// The component imports something the host does not lend, or that its
    /// grants do not allow.
    #[error("{what} imports `{import}`, {reason}")]
    Import {
        /// The component's name.
        what: String,
        /// The import's full name.
        import: String,
        /// Why it cannot be satisfied, and the fix.
        reason: String,
    },
    /// The adapter rejected its configuration.
    #[error("{what} rejected its configuration: {error}")]
    Config {
        /// The component's name.
        what: String,
        /// The adapter's error.
        error: Box<CallError>,
    },
    /// The component could not be instantiated (a limit, a start function
    /// that traps).
    #[error("{what} could not be instantiated: {reason}")]
    Instantiate {
        /// The component's name.
        what: String,
        /// Why.
        reason: String,
    },
    /// The grants document is invalid.
    #[error("grants {origin}: {reason}")]
    Grants {
        /// Where the grants came from.
        origin: String,
        /// What is wrong, naming the field.
        reason: String,
    },
    /// The host's engine could not be set up.
    #[error("the wasm engine could not be set up: {0}")]
    Engine(String),
}

/// What a call to an adapter cost, when it did not succeed.
///
/// `Adapter` is the adapter's own answer; every other case is the host's
/// verdict on an instance that misbehaved or ran out of time, and that
/// instance has been discarded: the next call gets a fresh one.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    /// The adapter returned an error.
    #[error("{}: {}", .0.kind(), .0.message())]
    Adapter(AdapterError),
    /// The adapter trapped (a panic, an unreachable, a bad memory access).
    #[error("adapter `{adapter}` crashed in `{method}`: {message}; the instance was discarded")]
    Trap {
        /// The adapter's kind.
        adapter: String,
        /// The export called.
        method: &'static str,
        /// The trap, and what the adapter wrote to stderr before it.
        message: String,
    },
    /// The adapter overflowed its stack.
    #[error("adapter `{adapter}` overflowed its stack in `{method}`; the instance was discarded")]
    StackOverflow {
        /// The adapter's kind.
        adapter: String,
        /// The export called.
        method: &'static str,
    },
    /// The adapter tried to grow its memory past its limit.
    #[error(
        "adapter `{adapter}` exceeded its memory limit of {limit} bytes in `{method}`; the instance was discarded \
         (raise `limits.memory_bytes` if the adapter really needs more)"
    )]
    MemoryExhausted {
        /// The adapter's kind.
        adapter: String,
        /// The export called.
        method: &'static str,
        /// The limit, in bytes.
        limit: u64,
    },
    /// The call ran past its deadline.
    #[error("adapter `{adapter}` did not finish `{method}` within its deadline of {timeout:?}")]
    DeadlineExceeded {
        /// The adapter's kind.
        adapter: String,
        /// The export called.
        method: &'static str,
        /// The deadline the call had.
        timeout: Duration,
    },
    /// The caller cancelled the call.
    #[error("`{method}` on adapter `{adapter}` was cancelled")]
    Cancelled {
        /// The adapter's kind.
        adapter: String,
        /// The export called.
        method: &'static str,
    },
    /// The adapter is quarantined after failing repeatedly.
    #[error(
        "adapter `{adapter}` is quarantined for {remaining:?} after repeated failures: {reason}"
    )]
    Quarantined {
        /// The adapter's kind.
        adapter: String,
        /// How long until it is tried again.
        remaining: Duration,
        /// The last failure.
        reason: String,
    },
    /// A call without a deadline found every instance it may use busy for
    /// `limits.default_timeout`. Nothing ran; the adapter is not at fault.
    #[error(
        "adapter `{adapter}` had no free instance for `{method}` within {waited:?}: all {limit} \
         its `limits.{setting}` allows stayed busy (raise it, end some of the calls holding \
         them, or give the call a deadline to wait longer)"
    )]
    Busy {
        /// The adapter's kind.
        adapter: String,
        /// The export called.
        method: &'static str,
        /// How long the call waited.
        waited: Duration,
        /// The instances the limit allows.
        limit: u32,
        /// The limit: `max_instances` or `max_long_running`.
        setting: &'static str,
    },
    /// The host itself failed (a broken stream, an internal fault).
    #[error("host error in `{method}` on adapter `{adapter}`: {message}")]
    Host {
        /// The adapter's kind.
        adapter: String,
        /// The export called.
        method: &'static str,
        /// What failed.
        message: String,
    },
}

impl CallError {
    /// The same error, said of the call `method`: what ended an instance
    /// several calls shared is each one's error.
    pub(crate) fn of_method(mut self, method: &'static str) -> Self {
        match &mut self {
            CallError::Trap { method: m, .. }
            | CallError::StackOverflow { method: m, .. }
            | CallError::MemoryExhausted { method: m, .. }
            | CallError::DeadlineExceeded { method: m, .. }
            | CallError::Cancelled { method: m, .. }
            | CallError::Busy { method: m, .. }
            | CallError::Host { method: m, .. } => *m = method,
            CallError::Adapter(_) | CallError::Quarantined { .. } => {}
        }
        self
    }

    /// The adapter's own error, when the adapter answered with one.
    pub fn adapter_error(&self) -> Option<&AdapterError> {
        match self {
            CallError::Adapter(e) => Some(e),
            _ => None,
        }
    }

    /// A short machine-readable name for the error's kind, as used in logs
    /// and the CLI's JSON output (`invalid`, `not-found`, …, `trap`,
    /// `deadline`).
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::Adapter(e) => e.kind(),
            CallError::Trap { .. } => "trap",
            CallError::StackOverflow { .. } => "stack-overflow",
            CallError::MemoryExhausted { .. } => "memory-exhausted",
            CallError::DeadlineExceeded { .. } => "deadline",
            CallError::Cancelled { .. } => "cancelled",
            CallError::Quarantined { .. } => "quarantined",
            CallError::Busy { .. } => "busy",
            CallError::Host { .. } => "host",
        }
    }
}

impl AdapterError {
    /// The case's name as written in the WIT (`invalid`, `not-found`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            AdapterError::Invalid(_) => "invalid",
            AdapterError::NotFound(_) => "not-found",
            AdapterError::Conflict(_) => "conflict",
            AdapterError::Unsupported(_) => "unsupported",
            AdapterError::Unavailable(_) => "unavailable",
            AdapterError::Denied(_) => "denied",
            AdapterError::Timeout(_) => "timeout",
            AdapterError::Cancelled(_) => "cancelled",
            AdapterError::CommandFailed(_) => "command-failed",
            AdapterError::Internal(_) => "internal",
        }
    }

    /// The operator's message.
    pub fn message(&self) -> String {
        match self {
            AdapterError::Invalid(m)
            | AdapterError::NotFound(m)
            | AdapterError::Conflict(m)
            | AdapterError::Unsupported(m)
            | AdapterError::Unavailable(m)
            | AdapterError::Denied(m)
            | AdapterError::Timeout(m)
            | AdapterError::Cancelled(m)
            | AdapterError::Internal(m) => m.clone(),
            AdapterError::CommandFailed(f) => format!(
                "command exited with status {}: {}",
                f.exit_code,
                f.stderr.trim_end()
            ),
        }
    }
}
