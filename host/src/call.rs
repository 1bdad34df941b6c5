//! A call's deadline and cancellation, as core gives them.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// How long a call may take and how core cancels it: the host's counterpart
/// of Go's `context.Context` in the reference adapter.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    timeout: Timeout,
    cancel: CancellationToken,
}

#[derive(Debug, Clone, Copy, Default)]
enum Timeout {
    /// The adapter's default (`Limits::default_timeout`).
    #[default]
    Default,
    After(Duration),
    Never,
}

impl CallContext {
    /// The adapter's default deadline, cancelled through `token`.
    pub fn new(cancel: CancellationToken) -> Self {
        CallContext {
            timeout: Timeout::Default,
            cancel,
        }
    }

    /// A deadline `timeout` after the call starts.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Timeout::After(timeout);
        self
    }

    /// No deadline: the call runs until it returns or is cancelled (a
    /// watch).
    pub fn without_deadline(mut self) -> Self {
        self.timeout = Timeout::Never;
        self
    }

    /// The token that cancels this call.
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The timeout this call runs with, given the adapter's default.
    pub(crate) fn timeout(&self, default: Duration) -> Option<Duration> {
        match self.timeout {
            Timeout::Default => Some(default),
            Timeout::After(d) => Some(d),
            Timeout::Never => None,
        }
    }

    /// The absolute deadline of a call starting now.
    pub(crate) fn deadline(&self, default: Duration) -> Option<Instant> {
        self.deadline_from(Instant::now(), default)
    }

    /// The absolute deadline of a call that started at `started` (one
    /// clock reading serves the call's timing and its deadline).
    pub(crate) fn deadline_from(&self, started: Instant, default: Duration) -> Option<Instant> {
        self.timeout(default).and_then(|t| started.checked_add(t))
    }
}
