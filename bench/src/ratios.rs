//! The run's ratios (host against its twin, per row), written to a file
//! and compared with the ones committed in docs/benchmarks.md. Absolute
//! times move from machine to machine and from one neighbour's load to the
//! next; a ratio measured in one run, host and twin alternating, holds
//! steadier, so it is what a run is compared by. Nothing gates on it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context as _, Result};

use crate::report::Report;

/// What this binary was compiled as: `release` (`scripts/bench`, the figures
/// docs/benchmarks.md judges by) or `dev` (the tests' build, which CI's quick
/// run uses so that it compiles nothing twice). Their ratios differ (the
/// host's code unoptimized, its twin's too, by different amounts), so each
/// is compared only with ratios of its own kind.
pub const BUILD: &str = if cfg!(debug_assertions) {
    "dev"
} else {
    "release"
};

/// The marked block of docs/benchmarks.md that holds ratios of `build`, one
/// `key = ratio` per line between its two markers.
fn markers(build: &str) -> (String, String) {
    let name = if build == "release" {
        "bench-ratios".to_string()
    } else {
        format!("bench-ratios-{build}")
    };
    (
        format!("<!-- {name}:start -->"),
        format!("<!-- {name}:end -->"),
    )
}

/// `bench/row` → ratio, for every row that has one.
pub fn of(report: &Report) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for b in &report.benches {
        for r in &b.rows {
            if let Some(x) = r.ratio {
                out.insert(format!("{}/{}", b.name, r.name), x);
            }
        }
    }
    out
}

/// The ratios as the lines docs/benchmarks.md keeps them in.
pub fn render(ratios: &BTreeMap<String, f64>) -> String {
    let mut out = String::new();
    for (k, v) in ratios {
        let _ = writeln!(out, "{k} = {v:.3}");
    }
    out
}

/// Writes them to `path`, creating its directory.
pub fn write(path: &Path, ratios: &BTreeMap<String, f64>) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, render(ratios)).with_context(|| format!("writing {}", path.display()))
}

/// The ratios committed in a markdown file's marked block for builds of
/// kind `build` (none when the file has no such block).
pub fn committed(markdown: &str, build: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let (start_marker, end_marker) = markers(build);
    let Some(start) = markdown.find(&start_marker) else {
        return out;
    };
    let rest = &markdown[start + start_marker.len()..];
    let block = rest.find(&end_marker).map_or(rest, |end| &rest[..end]);
    for line in block.lines() {
        if let Some((k, v)) = line.split_once(" = ")
            && let Ok(v) = v.trim().parse::<f64>()
        {
            out.insert(k.trim().to_string(), v);
        }
    }
    out
}

/// A table of each ratio now against the committed one of the same build
/// kind, with the change.
pub fn compare(now: &BTreeMap<String, f64>, before: &BTreeMap<String, f64>) -> String {
    let mut out = format!(
        "\n== ratios against docs/benchmarks.md's {BUILD} build (host ÷ twin; lower is better)\n"
    );
    let width = now
        .keys()
        .chain(before.keys())
        .map(|k| k.chars().count())
        .max()
        .unwrap_or(0);
    for (k, v) in now {
        let _ = match before.get(k) {
            Some(b) if *b != 0.0 => writeln!(
                out,
                "  {k:width$}  {b:>9.3} → {v:>9.3}  {:+6.1} %",
                (v / b - 1.0) * 100.0
            ),
            _ => writeln!(out, "  {k:width$}  {:>9} → {v:>9.3}  (new)", "-"),
        };
    }
    for k in before.keys().filter(|k| !now.contains_key(*k)) {
        let _ = writeln!(out, "  {k:width$}  not measured in this run");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_block_is_read_and_compared() {
        let (start, end) = markers("release");
        let (dev_start, dev_end) = markers("dev");
        let md = format!(
            "# Benchmarks\ntext = 9\n{start}\n```text\nupstream/per call, batched = 20.500\nload/x = 2\n```\n{end}\nafter = 1\n{dev_start}\nupstream/per call, batched = 90.000\n{dev_end}\n"
        );
        // Each build kind reads its own block and never the other's.
        assert_eq!(committed(&md, "dev").len(), 1);
        assert_eq!(committed(&md, "dev")["upstream/per call, batched"], 90.0);
        let before = committed(&md, "release");
        assert_eq!(before.len(), 2, "{before:?}");
        assert_eq!(before["upstream/per call, batched"], 20.5);
        let mut now = BTreeMap::new();
        now.insert("upstream/per call, batched".to_string(), 22.55);
        now.insert("new/row".to_string(), 1.0);
        let table = compare(&now, &before);
        assert!(table.contains("+10.0 %"), "{table}");
        assert!(table.contains("(new)"), "{table}");
        assert!(
            table.contains("load/x") && table.contains("not measured"),
            "{table}"
        );
        assert_eq!(committed("no block", "release"), BTreeMap::new());
    }
}
