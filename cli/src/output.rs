//! Printing results as JSON, YAML or readable text.

use std::io::Write;

use pando_host::types::{
    BundleEvent, CapacityReport, EdgeState, ObservedBundle, Resources, WorkloadPhase,
};
use serde::Serialize;

use super::args::Format;
use super::failure::{Failure, Outcome};

/// Prints `value` in `format`; `text` renders the text form.
pub fn print<T: Serialize>(format: Format, value: &T, text: impl FnOnce(&T) -> String) -> Outcome {
    let rendered = match format {
        Format::Json => json(value)?,
        Format::Yaml => yaml(value)?,
        // `-o junit` is refused for every verb but `conformance`.
        Format::Text | Format::Junit => text(value),
    };
    write_stdout(&rendered)
}

/// Prints `value` with YAML as its text form.
pub fn print_plain<T: Serialize>(format: Format, value: &T) -> Outcome {
    let rendered = match format {
        Format::Json => json(value)?,
        Format::Yaml | Format::Text | Format::Junit => yaml(value)?,
    };
    write_stdout(&rendered)
}

/// Pretty JSON, with a final newline.
pub fn json<T: Serialize>(value: &T) -> Outcome<String> {
    serde_json::to_string_pretty(value)
        .map(|s| s + "\n")
        .map_err(|e| Failure::other("rendering JSON", e))
}

/// YAML, ending in a newline.
pub fn yaml<T: Serialize>(value: &T) -> Outcome<String> {
    pando_host::yaml::to_string(value).map_err(|e| Failure::other("rendering YAML", e))
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
pub fn write_stdout(text: &str) -> Outcome {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::other("writing to stdout", e)),
    }
}

/// `key: value` lines with the values aligned; a list value is printed one
/// item per line under its key.
pub fn aligned(rows: &[(&str, Field)]) -> String {
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 2;
    let mut out = String::new();
    for (key, field) in rows {
        match field {
            Field::One(v) => out.push_str(&format!("{:<width$}{v}\n", format!("{key}:"))),
            Field::Many(items) if items.is_empty() => {
                out.push_str(&format!("{:<width$}(none)\n", format!("{key}:")))
            }
            Field::Many(items) => {
                out.push_str(&format!("{key}:\n"));
                for item in items {
                    out.push_str(&format!("  {item}\n"));
                }
            }
        }
    }
    out
}

/// A value in [`aligned`] output.
pub enum Field {
    /// One value on the key's line.
    One(String),
    /// A list, one item per line.
    Many(Vec<String>),
}

/// Columns padded to their widest cell, the first row a header.
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A workload phase's name.
pub fn phase(p: WorkloadPhase) -> &'static str {
    match p {
        WorkloadPhase::Missing => "Missing",
        WorkloadPhase::Pending => "Pending",
        WorkloadPhase::Running => "Running",
        WorkloadPhase::Succeeded => "Succeeded",
        WorkloadPhase::Failed => "Failed",
        WorkloadPhase::Unknown => "Unknown",
    }
}

/// Bytes in binary units.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Compute as `4000m CPU, 8.0 GiB memory`.
pub fn resources(r: &Resources) -> String {
    format!("{}m CPU, {} memory", r.cpu_millis, bytes(r.memory_bytes))
}

/// `observe` as text: a line about the app, then its workloads and volumes.
pub fn observed(b: &ObservedBundle) -> String {
    let mut out = format!(
        "app {}: {}\n",
        b.id,
        if b.exists { "exists" } else { "does not exist" }
    );
    if !b.workloads.is_empty() {
        let mut rows = vec![vec![
            "NAME".into(),
            "PHASE".into(),
            "EXIT".into(),
            "REASON".into(),
        ]];
        for w in &b.workloads {
            rows.push(vec![
                w.name.clone(),
                phase(w.phase).into(),
                w.exit_code.map_or_else(|| "-".into(), |c| c.to_string()),
                w.reason.clone(),
            ]);
        }
        out.push('\n');
        out.push_str(&table(&rows));
    }
    if !b.volumes.is_empty() {
        let mut rows = vec![vec!["VOLUME".into(), "READY".into(), "SIZE".into()]];
        for v in &b.volumes {
            rows.push(vec![
                v.name.clone(),
                v.ready.to_string(),
                v.size_bytes.map_or_else(|| "-".into(), bytes),
            ]);
        }
        out.push('\n');
        out.push_str(&table(&rows));
    }
    out
}

/// `capacity` as text: totals and the largest fit.
pub fn capacity(c: &CapacityReport) -> String {
    aligned(&[
        ("nodes", Field::One(c.nodes.to_string())),
        ("total", Field::One(resources(&c.total))),
        (
            "largest fit",
            Field::One(match &c.largest_fit {
                Some(f) => format!("{} ({})", f.node, resources(&f.free)),
                None => "none (no eligible node)".into(),
            }),
        ),
    ])
}

/// `edge observe` as text.
pub fn edge(e: &EdgeState) -> String {
    let mut rows = vec![
        ("name", Field::One(e.name.clone())),
        ("serving", Field::One(e.serving.to_string())),
        (
            "replicas",
            Field::One(format!("{}/{} ready", e.ready_replicas, e.desired_replicas)),
        ),
        (
            "address",
            Field::One(e.address.clone().unwrap_or_else(|| "-".into())),
        ),
    ];
    if !e.message.is_empty() {
        rows.push(("message", Field::One(e.message.clone())));
    }
    rows.push(("warnings", Field::Many(e.warnings.clone())));
    aligned(&rows)
}

/// One `watch` event as one line of text.
pub fn event(e: &BundleEvent) -> String {
    match e {
        BundleEvent::Watching => "watching".into(),
        BundleEvent::Changed(c) => {
            let w = &c.workload;
            let mut line = format!("changed {}/{} {}", c.bundle, w.name, phase(w.phase));
            if let Some(code) = w.exit_code {
                line.push_str(&format!(" exit={code}"));
            }
            if !w.reason.is_empty() {
                line.push_str(&format!(" reason={}", w.reason));
            }
            if c.deleted {
                line.push_str(" deleted");
            }
            line
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_their_columns() {
        let t = table(&[
            vec!["NAME".into(), "PHASE".into()],
            vec!["counter".into(), "Running".into()],
        ]);
        assert_eq!(t, "NAME     PHASE\ncounter  Running\n");
    }

    #[test]
    fn aligned_lists_go_one_per_line() {
        let t = aligned(&[
            ("kind", Field::One("test".into())),
            ("exports", Field::Many(vec!["a".into(), "b".into()])),
        ]);
        assert_eq!(t, "kind:    test\nexports:\n  a\n  b\n");
    }

    #[test]
    fn bytes_read_in_binary_units() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(8 << 30), "8.0 GiB");
    }
}
