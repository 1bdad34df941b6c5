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

/// Where docs/benchmarks.md keeps the committed ratios, one `key = ratio`
/// per line between the two markers.
const START: &str = "<!-- bench-ratios:start -->";
const END: &str = "<!-- bench-ratios:end -->";

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

/// The ratios committed in a markdown file's marked block (none when the
/// file has no block).
pub fn committed(markdown: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let Some(start) = markdown.find(START) else {
        return out;
    };
    let rest = &markdown[start + START.len()..];
    let block = rest.find(END).map_or(rest, |end| &rest[..end]);
    for line in block.lines() {
        if let Some((k, v)) = line.split_once(" = ")
            && let Ok(v) = v.trim().parse::<f64>()
        {
            out.insert(k.trim().to_string(), v);
        }
    }
    out
}

/// A table of each ratio now against the committed one, with the change.
pub fn compare(now: &BTreeMap<String, f64>, before: &BTreeMap<String, f64>) -> String {
    let mut out =
        String::from("\n== ratios against docs/benchmarks.md (host ÷ twin; lower is better)\n");
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
        let md = format!(
            "# Benchmarks\ntext = 9\n{START}\n```text\nupstream/per call, batched = 20.500\nload/x = 2\n```\n{END}\nafter = 1\n"
        );
        let before = committed(&md);
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
        assert_eq!(committed("no block"), BTreeMap::new());
    }
}
