//! `pando-bench` as a user runs it, without the cluster: what it lists and
//! what it refuses. Being an integration test also makes `cargo test` build
//! the binary with the tests' own dependencies, which is the build CI's
//! quick run uses (`scripts/bench --dev`).

use std::collections::BTreeSet;
use std::process::Command;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pando-bench"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running pando-bench {args:?}: {e}"))
}

/// The `### \`name\`` headings of docs/benchmarks.md's "What each benchmark
/// measures" section.
fn documented() -> BTreeSet<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/benchmarks.md");
    let md = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let start = md
        .find("## What each benchmark measures")
        .expect("docs/benchmarks.md has its \"What each benchmark measures\" section");
    let section = &md[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    section[..end]
        .lines()
        .filter_map(|l| l.strip_prefix("### `")?.split('`').next())
        .map(str::to_string)
        .collect()
}

#[test]
fn every_benchmark_listed_is_documented_and_every_documented_one_is_listed() {
    let out = bench(&["list"]);
    assert!(out.status.success(), "pando-bench list failed: {out:?}");
    let listed: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    assert!(listed.contains("upstream"), "listed: {listed:?}");
    assert_eq!(
        listed,
        documented(),
        "pando-bench list against docs/benchmarks.md"
    );
}

#[test]
fn an_unknown_benchmark_is_refused_by_name_before_anything_runs() {
    let out = bench(&["--quick", "--only", "upstream,no-such-bench"]);
    assert!(!out.status.success(), "it ran: {out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no-such-bench") && err.contains("pando-bench list"),
        "stderr: {err}"
    );
}
