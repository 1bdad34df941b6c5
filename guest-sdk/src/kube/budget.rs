//! The adapter's own request budget: a token bucket every request of the
//! typed client waits on (requests, watches, logs, execs), on the call's
//! timers, so a wait honours its deadline and cancellation. A request is
//! charged once it has reached the API server: a read the host answered
//! from its cache is not, as the host's rate does not count it either.
//!
//! The host holds each adapter to the rate of its grants whatever the guest
//! does; this budget can only narrow that, never widen it. An adapter whose
//! configuration asks for fewer requests a second than its grants allow
//! (the Kubernetes adapter's `api_qps` and `api_burst`) sets it once in
//! `configure` with [`set_budget`]; unset, requests wait for nothing here.
//!
//! The bucket belongs to the instance: the host may run several instances
//! of one adapter at once, each paced on its own, and the host's rate is
//! what bounds them together.

use std::cell::RefCell;
use std::time::Duration;

use crate::bindings::wasi::clocks::monotonic_clock;

/// A token bucket: `burst` requests at once, refilled at `qps` a second.
/// Pure arithmetic over a clock in nanoseconds given by the caller, so it
/// is tested natively.
#[derive(Debug, Clone, PartialEq)]
pub struct Bucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    at_ns: Option<u64>,
}

impl Bucket {
    /// A full bucket of `burst` (at least 1) refilled at `qps` (at least 1)
    /// a second.
    pub fn new(qps: u32, burst: u32) -> Bucket {
        let burst = f64::from(burst.max(1));
        Bucket {
            qps: f64::from(qps.max(1)),
            burst,
            tokens: burst,
            at_ns: None,
        }
    }

    /// Brings the bucket to `now_ns`: the tokens that came back since.
    fn refill(&mut self, now_ns: u64) {
        if let Some(at) = self.at_ns {
            let elapsed = now_ns.saturating_sub(at) as f64 / 1e9;
            self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        }
        self.at_ns = Some(now_ns.max(self.at_ns.unwrap_or(0)));
    }

    /// How long from `now_ns` until a whole token is there (zero when one
    /// is); takes nothing.
    pub fn wait(&mut self, now_ns: u64) -> Duration {
        self.refill(now_ns);
        if self.tokens >= 1.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((1.0 - self.tokens) / self.qps)
        }
    }

    /// Spends a token at `now_ns`, for a request that reached the API server.
    pub fn spend(&mut self, now_ns: u64) {
        self.refill(now_ns);
        self.tokens -= 1.0;
    }
}

thread_local! {
    static BUDGET: RefCell<Option<Bucket>> = const { RefCell::new(None) };
}

/// Sets this instance's request budget: at most `burst` requests at once and
/// `qps` a second after that. It narrows the host's grant rate, never widens
/// it (the host's applies as well).
pub fn set_budget(qps: u32, burst: u32) {
    BUDGET.with(|b| *b.borrow_mut() = Some(Bucket::new(qps, burst)));
}

/// How long a request waits for the budget's next token: zero without a
/// budget or with a token to spare. The waiting is each line's `send.rs`.
pub(crate) fn turn_wait() -> Duration {
    BUDGET.with(|b| {
        b.borrow_mut()
            .as_mut()
            .map_or(Duration::ZERO, |bucket| bucket.wait(monotonic_clock::now()))
    })
}

/// Spends a token for a request that reached the API server. A read the
/// host answered from its watch-fed cache (`pando-cache: hit`) costs the
/// API server nothing, so it costs the budget nothing, as it costs the
/// host's rate nothing.
pub(crate) fn spend() {
    BUDGET.with(|b| {
        if let Some(bucket) = b.borrow_mut().as_mut() {
            bucket.spend(monotonic_clock::now());
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    /// Waits as a caller would (the clock moves on by the wait), then spends; the wait.
    fn take(b: &mut Bucket, now: &mut u64) -> Duration {
        let wait = b.wait(*now);
        *now += u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
        b.spend(*now);
        wait
    }

    #[test]
    fn a_full_bucket_lets_the_burst_through_then_paces_at_qps() {
        let mut b = Bucket::new(2, 3);
        let mut now = 0;
        for _ in 0..3 {
            assert_eq!(take(&mut b, &mut now), Duration::ZERO);
        }
        assert_eq!(take(&mut b, &mut now), Duration::from_millis(500));
        assert_eq!(take(&mut b, &mut now), Duration::from_millis(500));
        assert_eq!(
            now, S,
            "five requests at 2 a second with a burst of 3: one second"
        );
    }

    #[test]
    fn tokens_come_back_at_qps_and_never_above_the_burst() {
        let mut b = Bucket::new(4, 2);
        let mut now = 0;
        take(&mut b, &mut now);
        take(&mut b, &mut now);
        now = S / 4;
        assert_eq!(
            take(&mut b, &mut now),
            Duration::ZERO,
            "one back after 250 ms"
        );
        now = 100 * S;
        assert_eq!(take(&mut b, &mut now), Duration::ZERO);
        assert_eq!(take(&mut b, &mut now), Duration::ZERO);
        assert_eq!(
            take(&mut b, &mut now),
            Duration::from_millis(250),
            "a long pause refills to the burst, not beyond"
        );
    }

    #[test]
    fn a_request_that_is_not_spent_costs_nothing() {
        let mut b = Bucket::new(1, 1);
        let mut now = 0;
        take(&mut b, &mut now);
        // Cache hits: waited for, never spent; the next real request waits only its turn.
        now = S;
        assert_eq!(b.wait(now), Duration::ZERO);
        assert_eq!(b.wait(now), Duration::ZERO);
        assert_eq!(
            take(&mut b, &mut now),
            Duration::ZERO,
            "the hits took nothing"
        );
        assert_eq!(take(&mut b, &mut now), Duration::from_secs(1));
    }

    #[test]
    fn zero_is_read_as_one() {
        let mut b = Bucket::new(0, 0);
        let mut now = 0;
        assert_eq!(take(&mut b, &mut now), Duration::ZERO);
        assert_eq!(take(&mut b, &mut now), Duration::from_secs(1));
    }
}
