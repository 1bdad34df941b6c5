//! The call metrics, recorded without a locked instruction: each thread adds
//! to its own shard, and a scrape sums the shards.
//!
//! `prometheus-client`'s counter is an atomic add and its histogram a write
//! lock taken and released: three locked instructions and a scan on every
//! call, about 25 ns of an `upstream` call of under a microsecond
//! (docs/benchmarks.md, issue 18). A shard is written by its own thread
//! only, with a plain load and store; a scrape reads every shard, and sees
//! each thread's increments in order, at most the ones in flight behind.
//! The encoded text is the same as the library's types give.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::histogram::exponential_buckets;
use prometheus_client::metrics::{MetricType, TypedMetric};
use thread_local::ThreadLocal;

/// Adds to a cell only its own thread writes: a load and a store, no
/// read-modify-write instruction.
#[inline]
fn bump(cell: &AtomicU64, by: u64) {
    cell.store(
        cell.load(Ordering::Relaxed).wrapping_add(by),
        Ordering::Relaxed,
    );
}

/// A thread's counter, on a cache line of its own: shards of different
/// threads sit side by side in `ThreadLocal`'s buckets.
#[derive(Default)]
#[repr(align(128))]
struct CountShard(AtomicU64);

/// A counter of calls.
#[derive(Clone, Default)]
pub(crate) struct Count(Arc<ThreadLocal<CountShard>>);

impl Count {
    /// Counts one.
    #[inline]
    pub(crate) fn inc(&self) {
        bump(&self.0.get_or_default().0, 1);
    }

    /// The total over every thread.
    pub(crate) fn get(&self) -> u64 {
        self.0
            .iter()
            .map(|s| s.0.load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }
}

impl std::fmt::Debug for Count {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Count").field(&self.get()).finish()
    }
}

impl TypedMetric for Count {
    const TYPE: MetricType = MetricType::Counter;
}

impl EncodeMetric for Count {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_counter::<NoLabelSet, _, u64>(&self.get(), None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// The histogram's finite buckets: 50 µs to about 80 seconds, an
/// `upstream` call to a long apply.
const FINITE: usize = 14;

/// The first bucket's upper bound, and the factor from each to the next.
const FIRST_NANOS: u64 = 50_000;
const FACTOR: u64 = 3;

/// The buckets' upper bounds in nanoseconds, as each call compares them:
/// made at compile time, so a call reads no lazily made table.
const BOUNDS_NANOS: [u64; FINITE] = {
    let mut nanos = [0u64; FINITE];
    let mut bound = FIRST_NANOS;
    let mut i = 0;
    while i < FINITE {
        nanos[i] = bound;
        bound *= FACTOR;
        i += 1;
    }
    nanos
};

/// The buckets' upper bounds in seconds, as encoded: the library's own
/// floating-point series, so the text is the same as its histogram's.
fn bounds_seconds() -> impl Iterator<Item = f64> {
    exponential_buckets(FIRST_NANOS as f64 / 1e9, FACTOR as f64, FINITE as u16)
}

/// A thread's share of a histogram: a count per bucket (the last one past
/// every bound) and the sum in nanoseconds; the count is their total.
#[derive(Default)]
#[repr(align(128))]
struct DurationShard {
    buckets: [AtomicU64; FINITE + 1],
    sum_nanos: AtomicU64,
}

/// A histogram of call durations.
#[derive(Clone, Default)]
pub(crate) struct Durations(Arc<ThreadLocal<DurationShard>>);

impl Durations {
    /// Records one call's duration.
    #[inline]
    pub(crate) fn observe(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let bucket = BOUNDS_NANOS
            .iter()
            .position(|&b| nanos <= b)
            .unwrap_or(FINITE);
        let shard = self.0.get_or_default();
        bump(&shard.buckets[bucket], 1);
        bump(&shard.sum_nanos, nanos);
    }

    /// The sum in seconds, the count, and each bucket's own count (not
    /// cumulative, as the encoder takes them).
    fn totals(&self) -> (f64, u64, Vec<(f64, u64)>) {
        let mut counts = [0u64; FINITE + 1];
        let mut sum_nanos = 0u64;
        for shard in self.0.iter() {
            for (total, cell) in counts.iter_mut().zip(&shard.buckets) {
                *total = total.wrapping_add(cell.load(Ordering::Relaxed));
            }
            sum_nanos = sum_nanos.wrapping_add(shard.sum_nanos.load(Ordering::Relaxed));
        }
        let upper = bounds_seconds().chain([f64::MAX]);
        let buckets: Vec<(f64, u64)> = upper.zip(counts).collect();
        let count = counts.iter().fold(0u64, |a, &c| a.wrapping_add(c));
        (sum_nanos as f64 / 1e9, count, buckets)
    }
}

impl std::fmt::Debug for Durations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (sum, count, _) = self.totals();
        f.debug_struct("Durations")
            .field("count", &count)
            .field("sum", &sum)
            .finish()
    }
}

impl TypedMetric for Durations {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Durations {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (sum, count, buckets) = self.totals();
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::histogram::Histogram;
    use prometheus_client::registry::Registry;

    /// The encoded lines, and the `_sum` line's value apart: a sum of
    /// nanoseconds and a sum of seconds may differ in the last bit.
    fn encoded(metric: impl prometheus_client::registry::Metric) -> (Vec<String>, f64) {
        let mut registry = Registry::default();
        registry.register("d", "help", metric);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).expect("encodes");
        let sum = out
            .lines()
            .find(|l| l.starts_with("d_sum "))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .expect("a sum");
        let rest = out
            .lines()
            .filter(|l| !l.starts_with("d_sum "))
            .map(String::from);
        (rest.collect(), sum)
    }

    #[test]
    fn a_histogram_encodes_as_the_librarys_does() {
        let ours = Durations::default();
        let theirs = Histogram::new(exponential_buckets(50e-6, 3.0, FINITE as u16));
        for micros in [1, 50, 51, 700, 20_000, 3_000_000, 400_000_000] {
            let d = Duration::from_micros(micros);
            ours.observe(d);
            theirs.observe(d.as_secs_f64());
        }
        let ((ours, our_sum), (theirs, their_sum)) = (encoded(ours), encoded(theirs));
        assert_eq!(ours, theirs);
        assert!(
            (our_sum - their_sum).abs() <= 1e-12 * their_sum,
            "{our_sum} vs {their_sum}"
        );
    }

    #[test]
    fn the_compared_bounds_are_the_encoded_ones() {
        let seconds: Vec<f64> = bounds_seconds().collect();
        assert_eq!(seconds.len(), FINITE);
        for (s, n) in seconds.iter().zip(BOUNDS_NANOS) {
            assert_eq!((s * 1e9).round() as u64, n, "{s} s");
        }
    }

    #[test]
    fn counts_from_many_threads_add_up() {
        let (count, durations) = (Count::default(), Durations::default());
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        count.inc();
                        durations.observe(Duration::from_micros(1));
                    }
                });
            }
        });
        assert_eq!(count.get(), 40_000);
        let (sum, n, buckets) = durations.totals();
        assert_eq!(n, 40_000);
        assert_eq!(buckets[0].1, 40_000, "1 µs is in the first bucket");
        assert!((sum - 0.04).abs() < 1e-9, "{sum}");
    }
}
