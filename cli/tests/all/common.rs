//! What the CLI tests run `pando-host` with: the repository's root, the
//! test adapter, a command with a cache of its own, a run's output as text,
//! its exit code asserted.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

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

/// A `pando-host` command with a cache dir of its own, the test adapter,
/// and none of the caller's environment that the CLI reads.
pub struct Cli {
    cache: tempfile::TempDir,
    adapter: PathBuf,
}

impl Cli {
    /// With a cache of its own.
    pub fn new() -> Cli {
        Cli {
            cache: tempfile::tempdir().expect("a temporary cache dir"),
            adapter: test_adapter(),
        }
    }

    /// The command, not yet run.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pando-host"));
        cmd.arg("--cache-dir")
            .arg(self.cache.path())
            .args(args)
            .env("PANDO_ADAPTER", &self.adapter)
            .env_remove("PANDO_GRANTS")
            .env_remove("PANDO_CONFIG")
            .env_remove("KUBECONFIG")
            .env_remove("RUST_LOG");
        cmd
    }

    /// Runs to the end with empty stdin.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args)
            .stdin(Stdio::null())
            .output()
            .expect("pando-host runs")
    }

    /// Runs to the end with `input` as stdin.
    pub fn run_with_stdin(&self, args: &[&str], input: &[u8]) -> Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("pando-host starts");
        let mut stdin = child.stdin.take().expect("piped stdin");
        stdin.write_all(input).expect("writing stdin");
        drop(stdin);
        child.wait_with_output().expect("pando-host runs")
    }
}

/// A limits file with `fields`, in a directory kept as long as the result.
pub fn limits_file(fields: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary dir");
    let file = dir.path().join("limits.yaml");
    std::fs::write(&file, fields).expect("writing the limits");
    (dir, file)
}
