//! `pando-host conformance`, run as an operator runs it, against the test
//! adapter component (no runtime: only the cases that need none are
//! selected, and `misbehave` makes one fail on purpose). The suite against
//! a real runtime is `tests/tests/all/conformance.rs`.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::{assert_exit, stdout, test_adapter};

/// Runs `pando-host` with a compile cache of its own and none of the
/// caller's environment that the CLI reads.
fn run(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pando-host"))
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .env_remove("PANDO_ADAPTER")
        .env_remove("PANDO_GRANTS")
        .env_remove("PANDO_CONFIG")
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("pando-host runs")
}

/// A configuration file making the test adapter declare image import it
/// does not have.
fn misbehaving(dir: &Path) -> String {
    let file = dir.join("misbehave.yaml");
    std::fs::write(&file, "misbehave: claim-image-import\n").expect("writing the config");
    file.to_string_lossy().into_owned()
}

#[test]
fn text_prints_a_line_per_case_and_exits_0_when_none_fails() {
    let cache = tempfile::tempdir().expect("a cache dir");
    let adapter = test_adapter().to_string_lossy().into_owned();
    let o = run(
        cache.path(),
        &[
            "conformance",
            &adapter,
            "--only",
            "C-INFO-*,C-CONF-01,C-UP-01",
        ],
    );
    assert_exit(&o, 0);
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("    ")).collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert!(
        lines[0].starts_with("PASS C-INFO-01 info names the adapter"),
        "{text}"
    );
    assert!(
        lines[4]
            .starts_with("PASS C-UP-01 R-023 upstream is deterministic and needs no API call ("),
        "{text}"
    );
    assert!(
        lines[5].starts_with("5 cases: 5 passed, 0 failed, 0 skipped"),
        "{text}"
    );
}

#[test]
fn a_failing_case_exits_1_and_junit_marks_it() {
    let cache = tempfile::tempdir().expect("a cache dir");
    let adapter = test_adapter().to_string_lossy().into_owned();
    let config = misbehaving(cache.path());
    let o = run(
        cache.path(),
        &[
            "conformance",
            &adapter,
            "--config",
            &config,
            "--only",
            "C-INFO-01",
            "--only",
            "C-CAP-01",
            "-o",
            "junit",
        ],
    );
    assert_exit(&o, 1);
    let xml = stdout(&o);
    assert!(
        xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "),
        "{xml}"
    );
    let suite = xml
        .lines()
        .find(|l| l.trim_start().starts_with("<testsuite "))
        .unwrap_or_else(|| panic!("a testsuite: {xml}"));
    for attribute in [
        "name=\"pando-conformance test\"",
        "tests=\"2\"",
        "failures=\"1\"",
        "skipped=\"0\"",
    ] {
        assert!(suite.contains(attribute), "{attribute} in {suite}");
    }
    let case = |id: &str| {
        xml.lines()
            .find(|l| l.contains(&format!("classname=\"{id}\"")))
            .unwrap_or_else(|| panic!("a testcase {id}: {xml}"))
            .to_string()
    };
    assert!(
        case("C-INFO-01").contains("name=\"info names the adapter"),
        "{xml}"
    );
    assert!(
        case("C-CAP-01").contains("name=\"R-254 import-image"),
        "{xml}"
    );
    assert!(
        xml.contains("<failure message=\"import-image of an empty stream answered `unsupported`")
            && xml.contains("but the adapter declares `image-import: true` in its capabilities"),
        "{xml}"
    );
    assert_eq!(xml.matches("<testcase ").count(), 2, "{xml}");
    assert!(xml.trim_end().ends_with("</testsuites>"), "{xml}");
}

#[test]
fn json_is_the_report() {
    let cache = tempfile::tempdir().expect("a cache dir");
    let adapter = test_adapter().to_string_lossy().into_owned();
    let o = run(
        cache.path(),
        &["conformance", &adapter, "--only", "C-UP-01", "-o", "json"],
    );
    assert_exit(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {}", stdout(&o)));
    assert_eq!(v["adapter"], "test");
    assert!(v["digest"].is_string() && v["duration_ms"].is_u64(), "{v}");
    assert!(v["longest_settle_ms"].is_u64(), "{v}");
    let case = &v["cases"][0];
    assert_eq!(case["id"], "C-UP-01");
    assert_eq!(case["rule"], "R-023");
    assert_eq!(case["outcome"]["status"], "pass");
    assert!(case["duration_ms"].is_u64(), "{case}");
    assert!(case["notes"].is_array(), "{case}");
}

#[test]
fn a_component_that_does_not_load_and_junit_elsewhere_are_usage_errors() {
    let cache = tempfile::tempdir().expect("a cache dir");
    let missing = cache.path().join("missing.wasm");
    let o = run(
        cache.path(),
        &["conformance", missing.to_str().expect("a UTF-8 path")],
    );
    assert_exit(&o, 2);
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.wasm"));

    let adapter = test_adapter().to_string_lossy().into_owned();
    let o = run(
        cache.path(),
        &["--adapter", &adapter, "health", "-o", "junit"],
    );
    assert_exit(&o, 2);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("only for `conformance`"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
