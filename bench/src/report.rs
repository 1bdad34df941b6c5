//! What a run produces: one [`Bench`] per benchmark, each a few [`Row`]s
//! of host against native; printed as tables and written as JSON.

use std::fmt::Write as _;

use serde::Serialize;

use crate::machine::Machine;
use crate::stats::Summary;

/// The unit a row's samples are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Unit {
    /// Nanoseconds.
    #[serde(rename = "ns")]
    Ns,
    /// Microseconds.
    #[serde(rename = "us")]
    Us,
    /// Milliseconds.
    #[serde(rename = "ms")]
    Ms,
    /// Mebibytes a second.
    #[serde(rename = "MiB/s")]
    MibPerS,
    /// Mebibytes.
    #[serde(rename = "MiB")]
    Mib,
    /// Operations a second.
    #[serde(rename = "/s")]
    PerS,
    /// A count (apps, requests).
    #[serde(rename = "count")]
    Count,
    /// Bytes.
    #[serde(rename = "B")]
    Bytes,
}

impl Unit {
    fn label(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Us => "µs",
            Unit::Ms => "ms",
            Unit::MibPerS => "MiB/s",
            Unit::Mib => "MiB",
            Unit::PerS => "/s",
            Unit::Count => "count",
            Unit::Bytes => "B",
        }
    }
}

/// A target of DESIGN.md §4 and whether this row meets it.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    /// The target in words, e.g. `host p50 ≤ 1.0 µs`.
    pub text: String,
    /// Whether the measured value meets it.
    pub met: bool,
}

/// One measured quantity, through the host and natively.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Short name, unique within its benchmark.
    pub name: String,
    /// The samples' unit.
    pub unit: Unit,
    /// Through the host.
    pub host: Option<Summary>,
    /// The native twin.
    pub native: Option<Summary>,
    /// `host.median / native.median`.
    pub ratio: Option<f64>,
    /// Operations behind each sample (calls batched per sample); 1 when
    /// each sample is one operation.
    pub per_sample: u64,
    /// The target this row is judged by, if any.
    pub target: Option<Target>,
    /// Further figures (requests per app, overhead in percent, …).
    pub extra: Vec<(String, String)>,
}

impl Row {
    /// A row of host against native samples; the ratio is of their medians.
    pub fn new(name: &str, unit: Unit, host: &[f64], native: &[f64]) -> Row {
        let host = Summary::of(host);
        let native = Summary::of(native);
        let ratio = match (host, native) {
            (Some(h), Some(n)) if n.median != 0.0 => Some(h.median / n.median),
            _ => None,
        };
        Row {
            name: name.into(),
            unit,
            host,
            native,
            ratio,
            per_sample: 1,
            target: None,
            extra: Vec::new(),
        }
    }

    /// Each sample is the mean of `n` operations.
    pub fn per_sample(mut self, n: u64) -> Row {
        self.per_sample = n;
        self
    }

    /// Judges the row: `met` is computed by the caller from the summaries.
    pub fn target(mut self, text: &str, met: bool) -> Row {
        self.target = Some(Target {
            text: text.into(),
            met,
        });
        self
    }

    /// Adds a figure shown under the row.
    pub fn extra(mut self, key: &str, value: impl std::fmt::Display) -> Row {
        self.extra.push((key.into(), value.to_string()));
        self
    }
}

/// One benchmark: what it measures, its rows, or why it did not run.
#[derive(Debug, Clone, Serialize)]
pub struct Bench {
    /// The name `--only` selects it by.
    pub name: String,
    /// What is measured, host side and native side.
    pub what: String,
    /// Its rows.
    pub rows: Vec<Row>,
    /// Set when it did not run (or only in part), and why.
    pub skipped: Option<String>,
    /// Remarks worth reading with the numbers.
    pub notes: Vec<String>,
    /// Wall time the benchmark took, set-up included.
    pub seconds: f64,
}

impl Bench {
    /// A benchmark with no rows yet.
    pub fn new(name: &str, what: &str) -> Bench {
        Bench {
            name: name.into(),
            what: what.into(),
            rows: Vec::new(),
            skipped: None,
            notes: Vec::new(),
            seconds: 0.0,
        }
    }

    /// A benchmark that did not run, and why.
    pub fn skipped(name: &str, what: &str, why: impl Into<String>) -> Bench {
        let mut b = Bench::new(name, what);
        b.skipped = Some(why.into());
        b
    }

    /// Adds a remark.
    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }
}

/// A whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Where it ran.
    pub machine: Machine,
    /// Whether this was the short CI run.
    pub quick: bool,
    /// `release` or `dev` (`crate::ratios::BUILD`): figures compare only
    /// with figures of the same build.
    pub build: &'static str,
    /// Seconds since the Unix epoch when the run started.
    pub started_unix: u64,
    /// Wall time of the whole run.
    pub seconds: f64,
    /// The benchmarks, in the order they ran.
    pub benches: Vec<Bench>,
}

/// A number with three significant digits, no exponent.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn median(s: &Option<Summary>) -> String {
    s.map(|s| num(s.median)).unwrap_or_else(|| "-".into())
}

fn spread(s: &Option<Summary>) -> String {
    s.map(|s| format!("{}–{}", num(s.p10), num(s.p90)))
        .unwrap_or_else(|| "-".into())
}

fn p99(s: &Option<Summary>) -> String {
    s.map(|s| num(s.p99)).unwrap_or_else(|| "-".into())
}

fn samples(r: &Row) -> String {
    let n = r.host.or(r.native).map(|s| s.n).unwrap_or(0);
    if r.per_sample > 1 {
        format!("{n}×{}", r.per_sample)
    } else {
        n.to_string()
    }
}

/// The benchmark as a text table.
pub fn table(b: &Bench) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n== {} ({:.1} s): {}", b.name, b.seconds, b.what);
    if !b.rows.is_empty() {
        let header = [
            "row",
            "unit",
            "host p50",
            "host p10–p90",
            "host p99",
            "native p50",
            "native p10–p90",
            "ratio",
            "samples",
        ];
        let mut lines: Vec<[String; 9]> = vec![header.map(String::from)];
        for r in &b.rows {
            lines.push([
                r.name.clone(),
                r.unit.label().into(),
                median(&r.host),
                spread(&r.host),
                p99(&r.host),
                median(&r.native),
                spread(&r.native),
                r.ratio
                    .map(|x| format!("{x:.2}×"))
                    .unwrap_or_else(|| "-".into()),
                samples(r),
            ]);
        }
        let mut widths = [0usize; 9];
        for l in &lines {
            for (w, cell) in widths.iter_mut().zip(l) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for l in &lines {
            let mut line = String::from("  ");
            for (i, (cell, w)) in l.iter().zip(widths).enumerate() {
                let pad = w - cell.chars().count();
                // Names left-aligned, numbers right-aligned.
                if i == 0 {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad + 2));
                } else {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                    line.push_str("  ");
                }
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
        for r in &b.rows {
            if let Some(t) = &r.target {
                let verdict = if t.met { "met" } else { "NOT met" };
                let _ = writeln!(out, "  {}: target {}: {verdict}", r.name, t.text);
            }
            for (k, v) in &r.extra {
                let _ = writeln!(out, "  {}: {k}: {v}", r.name);
            }
        }
    }
    if let Some(why) = &b.skipped {
        let _ = writeln!(out, "  skipped: {why}");
    }
    for n in &b.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_is_host_over_native_medians() {
        let r = Row::new("x", Unit::Us, &[2.0, 2.0, 2.0], &[1.0, 1.0, 1.0]);
        assert_eq!(r.ratio, Some(2.0));
        let r = Row::new("x", Unit::Us, &[2.0], &[]);
        assert_eq!(r.ratio, None);
    }

    #[test]
    fn a_table_lists_rows_targets_and_extras() {
        let mut b = Bench::new("upstream", "calls");
        b.rows.push(
            Row::new("per call", Unit::Us, &[1.5], &[0.1])
                .per_sample(1000)
                .target("host p50 ≤ 1.0 µs", false)
                .extra("p99", "2"),
        );
        let t = table(&b);
        assert!(t.contains("per call") && t.contains("15.00×"), "{t}");
        assert!(t.contains("1×1000"), "{t}");
        assert!(t.contains("NOT met") && t.contains("p99: 2"), "{t}");
    }

    #[test]
    fn numbers_keep_three_digits() {
        assert_eq!(num(1234.4), "1234");
        assert_eq!(num(12.345), "12.3");
        assert_eq!(num(1.2345), "1.23");
        assert_eq!(num(0.12345), "0.123");
    }
}
