//! `pando:runtime/log`: the guest's log records, into the host's `tracing`
//! with the adapter's identity, within the adapter's [`LogBudget`].

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use std::sync::Arc;

use super::{Capability, Lend, Setup, StoreData, View, view};
use crate::bindings::v0_1::pando::runtime::log::{self as wit, Host, Level};
use crate::bindings::v0_2::pando::runtime::log as wit_v0_2;
use crate::capability::ratelimit::RateLimiter;
use crate::limits::Limits;

/// `pando:runtime/log`: every instance draws on the adapter's one
/// [`LogBudget`] (the guest's stderr draws on it too: see `stderr.rs`).
pub(crate) struct Log;

impl Capability for Log {
    const INTERFACES: &'static [&'static str] = &["log"];
    type Shared = Arc<LogBudget>;
    type Instance = Arc<LogBudget>;

    fn shared(setup: &Setup<'_>) -> Arc<LogBudget> {
        Arc::new(LogBudget::of(setup.limits))
    }

    fn instance(shared: &Arc<LogBudget>) -> Arc<LogBudget> {
        Arc::clone(shared)
    }

    fn add_to_linker<T: StoreData>(
        linker: &mut wasmtime::component::Linker<T>,
    ) -> wasmtime::Result<()> {
        wit::add_to_linker::<T, Lend<Self>>(linker, view::<T, Self>)
    }

    fn add_to_linker_v0_2<T: StoreData>(
        linker: &mut wasmtime::component::Linker<T>,
    ) -> wasmtime::Result<()> {
        wit_v0_2::add_to_linker::<T, Lend<Self>>(linker, view::<T, Self>)
    }
}

/// 0.2.0's level is 0.1.0's.
fn level_v0_2(level: wit_v0_2::Level) -> Level {
    match level {
        wit_v0_2::Level::Trace => Level::Trace,
        wit_v0_2::Level::Debug => Level::Debug,
        wit_v0_2::Level::Info => Level::Info,
        wit_v0_2::Level::Warn => Level::Warn,
        wit_v0_2::Level::Error => Level::Error,
    }
}

impl wit_v0_2::Host for View<'_, Log> {
    fn enabled(&mut self, level: wit_v0_2::Level) -> wasmtime::Result<bool> {
        Ok(guest_enabled(level_v0_2(level)))
    }

    fn log(
        &mut self,
        level: wit_v0_2::Level,
        message: String,
        fields: Vec<(String, String)>,
    ) -> wasmtime::Result<()> {
        self.record(level_v0_2(level), &message, &fields);
        Ok(())
    }
}

/// Records the host keeps of one message, so a chatty adapter costs bounded
/// memory per record.
pub(crate) const MAX_MESSAGE: usize = 16 << 10;
pub(crate) const MAX_FIELDS: usize = 32;
pub(crate) const MAX_KEY: usize = 256;
pub(crate) const MAX_VALUE: usize = 4 << 10;

/// The least time between two notices of dropped records: under a steady
/// flood the count is told once a second, not with every record that
/// passes, so the notices cannot double what the budget lets through.
pub(crate) const NOTICE_INTERVAL: Duration = Duration::from_secs(1);

/// One adapter's budget of log records (`Limits::log_records_per_second`,
/// `Limits::log_burst`), shared by all its instances: its
/// `pando:runtime/log` records and its stderr lines draw on it alike. A
/// record over it is dropped and counted, never waited for, so logging
/// never slows a guest; a notice of the count comes before the next record
/// that passes (at most one notice per [`NOTICE_INTERVAL`]).
#[derive(Debug)]
pub(crate) struct LogBudget {
    /// `None`: no budget, every record passes.
    bucket: Option<RateLimiter>,
    per_second: u32,
    burst: u32,
    /// Records dropped since the last notice.
    dropped: AtomicU64,
    /// When the last notice was given.
    last_notice: Mutex<Option<Instant>>,
}

impl LogBudget {
    /// A full budget of `per_second` records a second, `burst` at once (0
    /// taken as 1); no budget when `per_second` is 0.
    pub(crate) fn new(per_second: u32, burst: u32) -> Self {
        let burst = burst.max(1);
        LogBudget {
            bucket: (per_second > 0).then(|| RateLimiter::new(f64::from(per_second), burst)),
            per_second,
            burst,
            dropped: AtomicU64::new(0),
            last_notice: Mutex::new(None),
        }
    }

    /// The budget `limits` set.
    pub(crate) fn of(limits: &Limits) -> Self {
        Self::new(limits.log_records_per_second, limits.log_burst)
    }

    /// No budget (what the fuzz targets' stderr runs with).
    pub(crate) fn unlimited() -> Self {
        Self::new(0, 0)
    }

    /// Whether a record may be logged at `now`: `None` when it is over the
    /// budget (it is counted as dropped); else the records dropped before it
    /// that a notice must tell first (0: no notice now).
    pub(crate) fn admit(&self, now: Instant) -> Option<u64> {
        let Some(bucket) = &self.bucket else {
            return Some(0);
        };
        if bucket.try_take(now).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        if self.dropped.load(Ordering::Relaxed) == 0 {
            return Some(0);
        }
        let mut last = self.last_notice.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|l| now.saturating_duration_since(l) < NOTICE_INTERVAL) {
            return Some(0);
        }
        *last = Some(now);
        Some(self.dropped.swap(0, Ordering::Relaxed))
    }

    /// Whether a record of `adapter` may be logged now; gives the notice of
    /// dropped records first when one is due.
    pub(crate) fn pass(&self, adapter: &str) -> bool {
        if self.bucket.is_none() {
            return true;
        }
        match self.admit(Instant::now()) {
            None => false,
            Some(0) => true,
            Some(dropped) => {
                tracing::warn!(
                    target: "pando_host::guest",
                    adapter,
                    dropped,
                    "{dropped} log records of adapter `{adapter}` dropped: over its log budget \
                     ({} a second, burst {}; limits.log_records_per_second, limits.log_burst)",
                    self.per_second,
                    self.burst,
                );
                true
            }
        }
    }
}

fn tracing_level(level: Level) -> tracing::Level {
    match level {
        Level::Trace => tracing::Level::TRACE,
        Level::Debug => tracing::Level::DEBUG,
        Level::Info => tracing::Level::INFO,
        Level::Warn => tracing::Level::WARN,
        Level::Error => tracing::Level::ERROR,
    }
}

pub(crate) fn clip(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Whether the subscriber wants guest records at `level`.
fn guest_enabled(level: Level) -> bool {
    match tracing_level(level) {
        tracing::Level::TRACE => {
            tracing::enabled!(target: "pando_host::guest", tracing::Level::TRACE)
        }
        tracing::Level::DEBUG => {
            tracing::enabled!(target: "pando_host::guest", tracing::Level::DEBUG)
        }
        tracing::Level::INFO => {
            tracing::enabled!(target: "pando_host::guest", tracing::Level::INFO)
        }
        tracing::Level::WARN => {
            tracing::enabled!(target: "pando_host::guest", tracing::Level::WARN)
        }
        _ => tracing::enabled!(target: "pando_host::guest", tracing::Level::ERROR),
    }
}

impl Host for View<'_, Log> {
    /// Whether the subscriber wants the level, whatever is left of the
    /// budget: a guest asks this to skip building a record, and a record it
    /// sends over the budget is dropped anyway.
    async fn enabled(&mut self, level: Level) -> wasmtime::Result<bool> {
        Ok(guest_enabled(level))
    }

    async fn log(
        &mut self,
        level: Level,
        message: String,
        fields: Vec<(String, String)>,
    ) -> wasmtime::Result<()> {
        self.record(level, &message, &fields);
        Ok(())
    }
}

impl View<'_, Log> {
    /// One guest record into `tracing`, within the budget.
    fn record(&mut self, level: Level, message: &str, fields: &[(String, String)]) {
        let adapter = self.env.identity.name.as_str();
        // A record the subscriber would discard takes nothing of the budget;
        // one over the budget costs nothing more than this check.
        if !guest_enabled(level) || !self.this.pass(adapter) {
            return;
        }
        let message = clip(message, MAX_MESSAGE);
        let fields: Vec<String> = fields
            .iter()
            .take(MAX_FIELDS)
            .map(|(k, v)| format!("{}={}", clip(k, MAX_KEY), clip(v, MAX_VALUE)))
            .collect();
        let fields = fields.join(" ");
        macro_rules! emit {
            ($lvl:expr) => {
                tracing::event!(target: "pando_host::guest", $lvl, adapter, fields = %fields, "{message}")
            };
        }
        match tracing_level(level) {
            tracing::Level::TRACE => emit!(tracing::Level::TRACE),
            tracing::Level::DEBUG => emit!(tracing::Level::DEBUG),
            tracing::Level::INFO => emit!(tracing::Level::INFO),
            tracing::Level::WARN => emit!(tracing::Level::WARN),
            _ => emit!(tracing::Level::ERROR),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_within_the_burst_pass_then_are_dropped_and_counted() {
        let budget = LogBudget::new(10, 5);
        let t0 = Instant::now();
        for i in 0..5 {
            assert_eq!(budget.admit(t0), Some(0), "record {i} is within the burst");
        }
        for _ in 0..7 {
            assert_eq!(budget.admit(t0), None, "over the budget");
        }
        assert_eq!(budget.dropped.load(Ordering::Relaxed), 7);
    }

    #[test]
    fn the_notice_comes_with_the_first_record_that_passes_again() {
        let budget = LogBudget::new(10, 2);
        let t0 = Instant::now();
        assert_eq!(budget.admit(t0), Some(0));
        assert_eq!(budget.admit(t0), Some(0));
        assert_eq!(budget.admit(t0), None);
        assert_eq!(budget.admit(t0), None);
        // Still empty 50 ms later (one token every 100 ms).
        assert_eq!(budget.admit(t0 + Duration::from_millis(50)), None);
        let t1 = t0 + Duration::from_millis(100);
        assert_eq!(budget.admit(t1), Some(3), "the three dropped are told");
        assert_eq!(budget.dropped.load(Ordering::Relaxed), 0);
        let t2 = t1 + Duration::from_millis(100);
        assert_eq!(budget.admit(t2), Some(0), "nothing dropped since");
    }

    #[test]
    fn under_a_steady_flood_the_count_is_told_once_per_interval() {
        let budget = LogBudget::new(10, 1);
        let t0 = Instant::now();
        assert_eq!(budget.admit(t0), Some(0));
        assert_eq!(budget.admit(t0), None);
        let mut now = t0 + Duration::from_millis(100);
        assert_eq!(budget.admit(now), Some(1), "the first notice at once");
        let mut told = Vec::new();
        // 100 records every 100 ms for 2 s: one passes each time.
        for _ in 0..20 {
            for _ in 0..99 {
                assert_eq!(budget.admit(now), None);
            }
            now += Duration::from_millis(100);
            match budget.admit(now) {
                Some(0) => {}
                Some(n) => told.push((now - t0, n)),
                None => panic!("a token every 100 ms"),
            }
        }
        assert_eq!(
            told,
            [
                (Duration::from_millis(1100), 990),
                (Duration::from_millis(2100), 990)
            ],
            "one notice a second, with every record dropped since the last"
        );
    }

    #[test]
    fn zero_records_a_second_is_no_budget() {
        let budget = LogBudget::new(0, 0);
        let t0 = Instant::now();
        for _ in 0..100_000 {
            assert_eq!(budget.admit(t0), Some(0));
        }
        assert!(LogBudget::unlimited().pass("a"));
        assert_eq!(budget.dropped.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_burst_of_zero_is_one() {
        let budget = LogBudget::new(1, 0);
        let t0 = Instant::now();
        assert_eq!(budget.admit(t0), Some(0));
        assert_eq!(budget.admit(t0), None);
        assert_eq!(budget.admit(t0 + Duration::from_secs(1)), Some(1));
    }

    #[test]
    fn the_defaults_are_a_budget() {
        let budget = LogBudget::of(&Limits::default());
        let t0 = Instant::now();
        for _ in 0..10_000 {
            assert_eq!(budget.admit(t0), Some(0));
        }
        assert_eq!(budget.admit(t0), None);
    }
}
