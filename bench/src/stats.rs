//! Order statistics of a benchmark's samples.
//!
//! Percentiles are interpolated linearly between the two nearest ranks
//! (type 7 of Hyndman and Fan, as numpy and R default to), so a handful of
//! samples in `--quick` still gives a p10 and a p90 between real values.

use serde::Serialize;

/// The summary of one series of samples, in the series' unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// The 50th percentile.
    pub median: f64,
    /// The 10th percentile.
    pub p10: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 99th percentile (only meaningful with a hundred samples or more).
    pub p99: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
    /// How many samples.
    pub n: usize,
}

impl Summary {
    /// The summary of `samples`; `None` when there are none (or one is not
    /// a number, which a timing never is).
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|s| s.is_nan()) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Summary {
            median: percentile(&sorted, 0.5),
            p10: percentile(&sorted, 0.1),
            p90: percentile(&sorted, 0.9),
            p99: percentile(&sorted, 0.99),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
            n: sorted.len(),
        })
    }
}

/// The `q` quantile (0 ≤ q ≤ 1) of sorted, non-empty samples.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let last = sorted.len() - 1;
    let rank = q.clamp(0.0, 1.0) * last as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let frac = rank - lo as f64;
    sorted[lo] + (sorted[hi.min(last)] - sorted[lo]) * frac
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_between_ranks() {
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0, 5.0]).unwrap();
        assert_eq!(s.median, 3.0);
        assert_eq!((s.min, s.max, s.n), (1.0, 5.0, 5));
        assert!((s.p10 - 1.4).abs() < 1e-9, "{}", s.p10);
        assert!((s.p90 - 4.6).abs() < 1e-9, "{}", s.p90);
    }

    #[test]
    fn one_sample_is_every_percentile() {
        let s = Summary::of(&[7.0]).unwrap();
        assert_eq!((s.median, s.p10, s.p99), (7.0, 7.0, 7.0));
    }

    #[test]
    fn no_samples_no_summary() {
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
    }
}
