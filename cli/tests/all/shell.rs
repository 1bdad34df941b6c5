//! Habits of a shell tool: `--color` decides whether the log lines carry
//! colour escapes (by default only on a terminal, so never in these pipes),
//! and `completions SHELL` prints a completion script naming every verb.

use std::process::{Command, Output, Stdio};

use crate::common::test_adapter;

/// `pando-host ARGS` with stdout and stderr piped, `RUST_LOG=debug` (the
/// engine's pool logs a line as the host is built) and no `NO_COLOR`.
fn run(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pando-host"));
    for var in ["PANDO_ADAPTER", "PANDO_GRANTS", "KUBECONFIG", "NO_COLOR"] {
        cmd.env_remove(var);
    }
    cmd.env("RUST_LOG", "debug")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("pando-host runs")
}

/// stderr of `inspect` on the test adapter under `--color COLOR` (none:
/// the default).
fn log_with(color: Option<&str>) -> String {
    let adapter = test_adapter();
    let mut args = vec!["--no-cache"];
    if let Some(c) = color {
        args.extend(["--color", c]);
    }
    args.extend(["inspect", adapter.to_str().expect("a UTF-8 path")]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(err.contains("DEBUG"), "a log line to look at: {err}");
    err
}

#[test]
fn color_escapes_go_where_the_flag_says() {
    assert!(
        log_with(Some("always")).contains("\x1b["),
        "--color always: escapes into a pipe"
    );
    assert!(
        !log_with(Some("never")).contains('\x1b'),
        "--color never: none"
    );
    assert!(!log_with(None).contains('\x1b'), "auto, into a pipe: none");
    let o = run(&["--color", "sometimes", "completions", "bash"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "an unknown choice is a usage error"
    );
}

#[test]
fn completions_name_every_verb_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F _pando__host"),
        ("zsh", "#compdef pando-host"),
        ("fish", "complete -c pando-host"),
    ] {
        let o = run(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}: {o:?}");
        let script = String::from_utf8_lossy(&o.stdout);
        assert!(script.contains(marker), "{shell}: {script}");
        for verb in [
            "inspect",
            "conformance",
            "grants",
            "completions",
            "kubeconfig",
        ] {
            assert!(script.contains(verb), "{shell} completes `{verb}`");
        }
    }
    let o = run(&["completions", "tcsh"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
}
