//! Quarantine for an adapter that keeps crashing: after a run of instance
//! faults its calls fail at once, saying why, and are let through again
//! after a backoff that doubles while the faults go on.
//!
//! Only faults of the adapter itself count (a trap, a stack overflow, a
//! memory overrun): a slow or failing cluster shows as deadlines and the
//! adapter's own errors, and is no reason to stop calling the adapter.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::CallError;

/// The longest quarantine.
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// An adapter's fault record.
#[derive(Debug)]
pub(crate) struct Breaker {
    trip_after: u32,
    initial: Duration,
    /// No fault since the last success, so no quarantine: the common case,
    /// answered without the mutex on every call's admission and record.
    clean: AtomicBool,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    consecutive: u32,
    backoff: Duration,
    until: Option<Instant>,
    reason: String,
}

/// An adapter's quarantine, as core sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantine {
    /// How long until calls are let through again.
    pub remaining: Duration,
    /// The fault that put it there.
    pub reason: String,
    /// Faults in a row so far.
    pub consecutive_faults: u32,
}

impl Breaker {
    pub(crate) fn new(trip_after: u32, initial: Duration) -> Self {
        Breaker {
            trip_after: trip_after.max(1),
            initial: initial.max(Duration::from_millis(1)),
            clean: AtomicBool::new(true),
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The quarantine in force now, if any.
    pub(crate) fn quarantine(&self) -> Option<Quarantine> {
        let s = self.lock();
        let remaining = s.until?.checked_duration_since(Instant::now())?;
        Some(Quarantine {
            remaining,
            reason: s.reason.clone(),
            consecutive_faults: s.consecutive,
        })
    }

    /// Refuses a call while quarantined.
    ///
    /// Inline: every call asks, and almost every one finds the record clean,
    /// one load (docs/history/benchmarks.md, "The call path, counted in
    /// instructions"); the rest is [`Breaker::admit_faulted`].
    #[inline]
    pub(crate) fn admit(&self, adapter: &str) -> Result<(), CallError> {
        if self.clean.load(Ordering::Acquire) {
            return Ok(());
        }
        self.admit_faulted(adapter)
    }

    /// [`Breaker::admit`] after a fault: refused while the quarantine lasts.
    fn admit_faulted(&self, adapter: &str) -> Result<(), CallError> {
        match self.quarantine() {
            Some(q) => Err(CallError::Quarantined {
                adapter: adapter.into(),
                remaining: q.remaining,
                reason: q.reason,
            }),
            None => Ok(()),
        }
    }

    /// Counts a call's outcome.
    ///
    /// Inline for the common case, as [`Breaker::admit`] is: a success on a
    /// clean record changes nothing.
    #[inline]
    pub(crate) fn record<T>(&self, adapter: &str, result: &Result<T, CallError>) {
        if result.is_ok() && self.clean.load(Ordering::Acquire) {
            return;
        }
        self.record_outcome(adapter, result.as_ref().map(|_| ()));
    }

    /// [`Breaker::record`] past its common case: a fault counted (and the
    /// quarantine it may trip), or the first success after faults.
    fn record_outcome(&self, adapter: &str, result: Result<(), &CallError>) {
        let fault = match result {
            Err(
                e @ (CallError::Trap { .. }
                | CallError::StackOverflow { .. }
                | CallError::MemoryExhausted { .. }),
            ) => e.to_string(),
            Err(_) => return,
            Ok(_) => {
                if self.clean.load(Ordering::Acquire) {
                    return;
                }
                let mut s = self.lock();
                if s.consecutive > 0 {
                    *s = State::default();
                }
                self.clean.store(true, Ordering::Release);
                return;
            }
        };
        let mut s = self.lock();
        self.clean.store(false, Ordering::Release);
        s.consecutive += 1;
        s.reason = fault;
        if s.consecutive >= self.trip_after {
            s.backoff = if s.backoff.is_zero() {
                self.initial
            } else {
                (s.backoff * 2).min(MAX_BACKOFF)
            };
            s.until = Some(Instant::now() + s.backoff);
            tracing::warn!(
                adapter,
                faults = s.consecutive,
                backoff_ms = s.backoff.as_millis() as u64,
                reason = %s.reason,
                "adapter quarantined"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trap() -> Result<(), CallError> {
        Err(CallError::Trap {
            adapter: "a".into(),
            method: "apply",
            message: "boom".into(),
        })
    }

    #[test]
    fn trips_after_a_run_of_faults_and_resets_on_success() {
        let b = Breaker::new(3, Duration::from_secs(60));
        for _ in 0..2 {
            b.record("a", &trap());
            assert!(b.admit("a").is_ok());
        }
        b.record("a", &trap());
        let q = b.quarantine().expect("quarantined after three");
        assert!(q.reason.contains("boom"));
        assert!(matches!(b.admit("a"), Err(CallError::Quarantined { .. })));
        b.record::<()>("a", &Ok(()));
        assert!(b.quarantine().is_none());
    }

    #[test]
    fn adapter_errors_and_deadlines_do_not_count() {
        let b = Breaker::new(1, Duration::from_secs(60));
        b.record::<()>(
            "a",
            &Err(CallError::DeadlineExceeded {
                adapter: "a".into(),
                method: "apply",
                timeout: Duration::from_secs(1),
            }),
        );
        assert!(b.quarantine().is_none());
    }

    #[test]
    fn backoff_doubles_while_faults_go_on() {
        let b = Breaker::new(1, Duration::from_millis(10));
        b.record("a", &trap());
        let first = b.quarantine().expect("quarantined").remaining;
        std::thread::sleep(Duration::from_millis(15));
        assert!(b.quarantine().is_none(), "let through after the backoff");
        b.record("a", &trap());
        let second = b.quarantine().expect("quarantined again").remaining;
        assert!(second > first, "{second:?} > {first:?}");
    }
}
