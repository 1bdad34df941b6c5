//! A request-rate budget: a token bucket that makes callers wait, never
//! fail. An adapter over its budget is slowed to it, as client-go's limiter
//! slows the reference adapter. The guest's log budget
//! ([`crate::capability::log::LogBudget`]) uses the same bucket the other way:
//! a record over it is dropped, never waited for. The write budget
//! ([`ByteBudget`]) meters bytes rather than requests, and refuses a write
//! whose wait would end after the call's deadline instead of waiting for it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A token bucket refilled at `qps`, holding at most `burst`.
#[derive(Debug)]
pub struct RateLimiter {
    qps: f64,
    burst: f64,
    state: Mutex<Bucket>,
    /// Acquisitions that had to wait, and how long they waited in all
    /// (microseconds): for the metrics.
    waited: AtomicU64,
    wait_us: AtomicU64,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

impl RateLimiter {
    /// A full bucket.
    pub fn new(qps: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        RateLimiter {
            qps: if qps.is_finite() && qps > 0.0 {
                qps
            } else {
                1.0
            },
            burst,
            state: Mutex::new(Bucket {
                tokens: burst,
                last: Instant::now(),
            }),
            waited: AtomicU64::new(0),
            wait_us: AtomicU64::new(0),
        }
    }

    /// Acquisitions that waited so far, and their total wait.
    pub fn throttled(&self) -> (u64, Duration) {
        (
            self.waited.load(Ordering::Relaxed),
            Duration::from_micros(self.wait_us.load(Ordering::Relaxed)),
        )
    }

    /// Takes one token now, or says how long until one is there.
    pub(crate) fn try_take(&self, now: Instant) -> Result<(), Duration> {
        let mut b = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let elapsed = now.saturating_duration_since(b.last).as_secs_f64();
        b.tokens = (b.tokens + elapsed * self.qps).min(self.burst);
        // Threads sharing the bucket read the clock before taking the lock,
        // so `now` may be older than `last`: moving `last` back would credit
        // the same time twice.
        b.last = b.last.max(now);
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            // The grants accept any positive `qps`; one so small that the
            // wait overflows a `Duration` waits "forever" (the call's
            // deadline ends it) instead of panicking in the host.
            let wait = (1.0 - b.tokens) / self.qps;
            Err(Duration::try_from_secs_f64(wait).unwrap_or(Duration::MAX))
        }
    }

    /// Waits for a token; how long it waited.
    pub async fn acquire(&self) -> Duration {
        let started = Instant::now();
        let mut waited = false;
        loop {
            match self.try_take(Instant::now()) {
                Ok(()) => {
                    let took = started.elapsed();
                    if waited {
                        self.waited.fetch_add(1, Ordering::Relaxed);
                        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
                        self.wait_us.fetch_add(us, Ordering::Relaxed);
                    }
                    return took;
                }
                Err(wait) => {
                    waited = true;
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
}

/// A token bucket of bytes: `per_second` refilled, `burst` held at most.
/// A write takes its size; one the bucket cannot cover yet reserves it
/// (the bucket goes into debt) and waits its turn, so writers queue in the
/// order they asked rather than racing for each refill.
#[derive(Debug)]
pub struct ByteBudget {
    per_second: f64,
    burst: f64,
    state: Mutex<Bucket>,
}

impl ByteBudget {
    /// A full bucket. `per_second` and `burst` of 0 are taken as 1.
    pub fn new(per_second: u64, burst: u64) -> Self {
        let burst = burst.max(1) as f64;
        ByteBudget {
            per_second: per_second.max(1) as f64,
            burst,
            state: Mutex::new(Bucket {
                tokens: burst,
                last: Instant::now(),
            }),
        }
    }

    /// A full bucket of `bytes` an hour, refilled evenly over the hour: a
    /// budget over time rather than a rate. 0 is taken as 1.
    pub fn per_hour(bytes: u64) -> Self {
        let burst = bytes.max(1) as f64;
        ByteBudget {
            per_second: burst / 3600.0,
            burst,
            state: Mutex::new(Bucket {
                tokens: burst,
                last: Instant::now(),
            }),
        }
    }

    /// Gives back `bytes` taken for a write that was not sent after all.
    pub fn refund(&self, bytes: u64) {
        let mut b = self.state.lock().unwrap_or_else(|p| p.into_inner());
        b.tokens = (b.tokens + bytes as f64).min(self.burst);
    }

    /// The bucket's size in bytes.
    pub fn capacity(&self) -> u64 {
        self.burst as u64
    }

    /// Reserves `bytes` at `now`: how long to wait before sending them, or,
    /// if that wait would be longer than `max_wait`, how long it would be
    /// (and nothing is reserved). More than the burst is never reserved.
    pub fn reserve(
        &self,
        now: Instant,
        bytes: u64,
        max_wait: Duration,
    ) -> Result<Duration, Duration> {
        let mut b = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let elapsed = now.saturating_duration_since(b.last).as_secs_f64();
        b.tokens = (b.tokens + elapsed * self.per_second).min(self.burst);
        b.last = b.last.max(now);
        let want = bytes as f64;
        if want <= b.tokens {
            b.tokens -= want;
            return Ok(Duration::ZERO);
        }
        let wait = Duration::try_from_secs_f64((want - b.tokens) / self.per_second)
            .unwrap_or(Duration::MAX);
        if want > self.burst || wait > max_wait {
            return Err(wait);
        }
        b.tokens -= want;
        Ok(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_pass_at_once_within_the_burst_then_wait_their_turn() {
        let bb = ByteBudget::new(1000, 2000);
        let t0 = Instant::now();
        let long = Duration::from_secs(60);
        assert_eq!(bb.reserve(t0, 1500, long), Ok(Duration::ZERO));
        // 500 left: 1000 more take 0.5 s of refill, reserved now.
        assert_eq!(bb.reserve(t0, 1000, long), Ok(Duration::from_millis(500)));
        // The next writer queues behind it: 1.5 s.
        assert_eq!(bb.reserve(t0, 1000, long), Ok(Duration::from_millis(1500)));
    }

    #[test]
    fn a_write_whose_wait_passes_the_deadline_reserves_nothing() {
        let bb = ByteBudget::new(1000, 1000);
        let t0 = Instant::now();
        assert_eq!(bb.reserve(t0, 1000, Duration::ZERO), Ok(Duration::ZERO));
        assert_eq!(
            bb.reserve(t0, 500, Duration::from_millis(100)),
            Err(Duration::from_millis(500))
        );
        // Nothing was reserved by the refusal: 0.5 s later 500 pass at once.
        assert_eq!(
            bb.reserve(t0 + Duration::from_millis(500), 500, Duration::ZERO),
            Ok(Duration::ZERO)
        );
    }

    #[test]
    fn more_than_the_burst_is_never_reserved() {
        let bb = ByteBudget::new(1000, 1000);
        let t0 = Instant::now() + Duration::from_secs(10);
        assert!(bb.reserve(t0, 1001, Duration::MAX).is_err());
    }

    #[test]
    fn an_hourly_budget_is_spent_then_refills_over_the_hour() {
        let bb = ByteBudget::per_hour(3600);
        let t0 = Instant::now();
        assert_eq!(bb.reserve(t0, 3000, Duration::ZERO), Ok(Duration::ZERO));
        // 600 left: 1000 more would take 400 s of refill, refused at once.
        assert_eq!(
            bb.reserve(t0, 1000, Duration::ZERO),
            Err(Duration::from_secs(400))
        );
        // A write not sent gives its bytes back.
        bb.refund(400);
        assert_eq!(bb.reserve(t0, 1000, Duration::ZERO), Ok(Duration::ZERO));
        assert!(bb.reserve(t0, 1, Duration::ZERO).is_err(), "spent");
        assert_eq!(
            bb.reserve(t0 + Duration::from_secs(100), 100, Duration::ZERO),
            Ok(Duration::ZERO),
            "a byte a second comes back"
        );
        assert_eq!(bb.capacity(), 3600);
    }

    #[test]
    fn burst_then_rate() {
        let rl = RateLimiter::new(5.0, 10);
        let t0 = Instant::now();
        for _ in 0..10 {
            assert!(rl.try_take(t0).is_ok(), "the burst is available at once");
        }
        let wait = rl.try_take(t0).expect_err("the bucket is empty");
        assert!(
            wait > Duration::from_millis(150) && wait <= Duration::from_millis(200),
            "{wait:?}"
        );
        assert!(
            rl.try_take(t0 + Duration::from_millis(200)).is_ok(),
            "one token after 1/qps"
        );
        assert!(rl.try_take(t0 + Duration::from_millis(200)).is_err());
    }

    #[test]
    fn a_tiny_rate_waits_forever_without_panicking() {
        // Found by the `grant_check` fuzz target: `qps: 1e-300` is valid.
        let rl = RateLimiter::new(1e-300, 1);
        let t0 = Instant::now();
        assert!(rl.try_take(t0).is_ok());
        assert_eq!(rl.try_take(t0), Err(Duration::MAX));
    }

    #[test]
    fn an_older_now_credits_no_time_twice() {
        let rl = RateLimiter::new(10.0, 1);
        let t0 = Instant::now();
        let later = t0 + Duration::from_millis(100);
        assert!(rl.try_take(t0).is_ok());
        assert!(rl.try_take(later).is_ok(), "refilled after 1/qps");
        // A thread that read the clock at t0 takes the lock last.
        assert!(rl.try_take(t0).is_err());
        assert!(rl.try_take(later).is_err(), "the 100 ms were spent once");
    }

    #[test]
    fn refill_is_capped_at_burst() {
        let rl = RateLimiter::new(100.0, 3);
        let t0 = Instant::now();
        let later = t0 + Duration::from_secs(60);
        for _ in 0..3 {
            assert!(rl.try_take(later).is_ok());
        }
        assert!(rl.try_take(later).is_err());
    }
}
