//! The call path's clock: when a call started, how long it took, and when
//! its deadline falls, read from the CPU's time-stamp counter where the
//! platform has an invariant one (`quanta` checks, and falls back to the
//! monotonic clock where it has none).
//!
//! Every call reads a clock twice, at its start (its deadline is made from
//! that reading) and at its end (for the duration histogram). Through the
//! vDSO's `clock_gettime`, the two readings and the deadline's arithmetic
//! took about 60 ns of a sub-microsecond call; the counter, read and scaled,
//! about 22 (docs/history/benchmarks.md, "The call's clock").
//!
//! The counter's rate is calibrated against the monotonic clock first, a
//! busy loop of half a millisecond, up to 200 ms on a loaded machine: too
//! long for `Host::builder().build()` to carry. The epoch thread calibrates
//! once it has ticked; calls made before that read `Instant` as before.
//!
//! A counter reading is not an [`Instant`], and a short call never needs one:
//! its deadline becomes an `Instant` (one reading of each clock) only when
//! something waits on it: the call pends on a timer, an import asks for it,
//! a lease waits for an instance.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The calibrated counter, once the epoch thread has made it.
static COUNTER: OnceLock<quanta::Clock> = OnceLock::new();

/// Calibrates the counter, unless that was done already in this process.
/// Blocks for the calibration: called on the epoch thread only.
pub(crate) fn calibrate() {
    COUNTER.get_or_init(quanta::Clock::new);
}

/// A moment on the call path's clock.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Stamp {
    /// A raw counter reading, scaled by the clock that made it.
    Counter(&'static quanta::Clock, u64),
    /// Read before the counter was calibrated, or given as an `Instant`.
    Instant(Instant),
}

impl Stamp {
    /// Now.
    #[inline]
    pub(crate) fn now() -> Stamp {
        match COUNTER.get() {
            Some(clock) => Stamp::Counter(clock, clock.raw()),
            None => Stamp::Instant(Instant::now()),
        }
    }

    /// The time since this moment (zero if the counter went backwards, as
    /// it may between two cores by a few cycles).
    #[inline]
    pub(crate) fn elapsed(&self) -> Duration {
        match *self {
            Stamp::Counter(clock, at) => clock.delta(at, clock.raw()),
            Stamp::Instant(at) => at.elapsed(),
        }
    }

    /// This moment as an [`Instant`]: now less the time since, for the
    /// counter's readings (one reading of each clock).
    pub(crate) fn to_instant(self) -> Instant {
        match self {
            Stamp::Counter(..) => {
                let now = Instant::now();
                now.checked_sub(self.elapsed()).unwrap_or(now)
            }
            Stamp::Instant(at) => at,
        }
    }
}

/// When a call must be over: `timeout` after its start.
///
/// Kept as the start and the timeout, not as an `Instant`, so that a call
/// which never waits never converts it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadline {
    start: Stamp,
    timeout: Duration,
}

impl Deadline {
    /// `timeout` after `start`.
    pub(crate) fn after(start: Stamp, timeout: Duration) -> Deadline {
        Deadline { start, timeout }
    }

    /// At `instant`.
    pub(crate) fn at(instant: Instant) -> Deadline {
        Deadline {
            start: Stamp::Instant(instant),
            timeout: Duration::ZERO,
        }
    }

    /// Whether it has passed.
    pub(crate) fn passed(&self) -> bool {
        match self.start {
            Stamp::Counter(..) => self.start.elapsed() >= self.timeout,
            // An `Instant` may lie ahead (a deadline given as one), where
            // the time since it is no measure.
            Stamp::Instant(at) => at
                .checked_add(self.timeout)
                .is_some_and(|d| Instant::now() >= d),
        }
    }

    /// As an [`Instant`]; `None` if that is past what an `Instant` holds,
    /// which is as good as no deadline.
    pub(crate) fn instant(&self) -> Option<Instant> {
        self.start.to_instant().checked_add(self.timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Makers of both kinds of stamp, taken now, whatever this process's
    /// calibration state.
    fn stamps() -> [fn() -> Stamp; 2] {
        calibrate();
        [Stamp::now, || Stamp::Instant(Instant::now())]
    }

    #[test]
    fn a_stamp_measures_the_time_that_passed() {
        for make in stamps() {
            let stamp = make();
            let before = Instant::now();
            std::thread::sleep(Duration::from_millis(20));
            let slept = before.elapsed();
            let measured = stamp.elapsed();
            // The stamp was taken before `before`: it measured at least the
            // sleep, and not more than the sleep and this test's own steps
            // (a loaded machine may add tens of milliseconds).
            assert!(measured >= slept, "{stamp:?}: {measured:?} < {slept:?}");
            assert!(
                measured < slept + Duration::from_millis(200),
                "{stamp:?}: {measured:?} against {slept:?}"
            );
        }
    }

    #[test]
    fn a_stamp_converts_to_the_instant_it_was_taken_at() {
        for make in stamps() {
            let stamp = make();
            let after = Instant::now();
            std::thread::sleep(Duration::from_millis(10));
            let at = stamp.to_instant();
            // Taken before `after`; a counter's conversion errs by the
            // calibration's error over 10 ms, microseconds at most.
            assert!(
                at <= after + Duration::from_micros(50),
                "{stamp:?}: {at:?} after {after:?}"
            );
            assert!(
                after.duration_since(at) < Duration::from_millis(5),
                "{stamp:?}: {at:?} long before {after:?}"
            );
        }
    }

    #[test]
    fn a_deadline_passes_after_its_timeout_and_not_before() {
        for make in stamps() {
            let stamp = make();
            let deadline = Deadline::after(stamp, Duration::from_millis(30));
            assert!(!deadline.passed(), "{stamp:?}: passed at once");
            let at = deadline.instant().expect("30 ms from now fits an Instant");
            let from_now = at.saturating_duration_since(Instant::now());
            assert!(
                from_now > Duration::from_millis(20) && from_now <= Duration::from_millis(31),
                "{stamp:?}: the deadline is {from_now:?} away"
            );
            std::thread::sleep(Duration::from_millis(35));
            assert!(deadline.passed(), "{stamp:?}: not passed after 35 ms");
        }
    }

    #[test]
    fn a_deadline_at_an_instant_is_that_instant() {
        let at = Instant::now() + Duration::from_secs(3);
        let deadline = Deadline::at(at);
        assert_eq!(deadline.instant(), Some(at));
        assert!(!deadline.passed());
        assert!(Deadline::at(Instant::now()).passed());
    }

    #[test]
    fn a_deadline_past_what_an_instant_holds_is_none() {
        let deadline = Deadline::after(Stamp::now(), Duration::MAX);
        assert_eq!(deadline.instant(), None);
        assert!(!deadline.passed());
    }
}
