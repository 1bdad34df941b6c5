//! What every CLI test binary reads its runs with: the repository's root,
//! the test adapter, a run's output as text, its exit code asserted.
//! Each binary compiles this module and uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

/// The repository's root, where `scripts/` and `target/` are.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The test adapter; fails the test, saying what to run, when it is missing.
pub fn test_adapter() -> PathBuf {
    let path = repo_root().join("target/wasm32-wasip2/release/pando_test_adapter.wasm");
    assert!(
        path.is_file(),
        "{} is missing: build the test components with `scripts/build-components`",
        path.display()
    );
    path
}

/// A run's stdout, as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A run's stderr, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts the run exited with `code`, showing both streams when not.
#[track_caller]
pub fn assert_exit(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "exit status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        stdout(o),
        stderr(o)
    );
}

/// Sends SIGINT to `child`, as Ctrl-C in its terminal would.
pub fn interrupt(child: &std::process::Child) {
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success(), "kill -INT {}", child.id());
}

/// Runs `pando-host` in the repository's root with none of the caller's
/// environment that the CLI reads.
pub fn run_in_repo(args: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_pando-host"));
    for var in [
        "PANDO_ADAPTER",
        "PANDO_GRANTS",
        "PANDO_LIMITS",
        "KUBECONFIG",
        "RUST_LOG",
    ] {
        cmd.env_remove(var);
    }
    cmd.current_dir(repo_root())
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("pando-host runs")
}
