//! How an operator configures `pando-host`: the adapter's configuration, the
//! kubeconfig (read only with a Kubernetes grant), a pinned digest, durations
//! and the limits file. The verbs themselves are `verbs.rs`'s.

use std::process::{Command, Stdio};

use crate::common::{Cli, assert_exit, limits_file, repo_root, stderr, stdout, test_adapter};

#[test]
fn a_rejected_configuration_names_the_field() {
    let cli = Cli::new();
    let dir = tempfile::tempdir().expect("a temporary dir");
    let file = dir.path().join("config.yaml");
    std::fs::write(&file, "bogus: 1\n").expect("writing the config");
    let o = cli.run(&["--config", file.to_str().expect("a UTF-8 path"), "health"]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains("configuration field `bogus` is not known"),
        "{err}"
    );

    std::fs::write(&file, "greeting: hello\n").expect("writing the config");
    let o = cli.run(&["--config", file.to_str().expect("a UTF-8 path"), "health"]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "healthy\n");
}

#[test]
fn kubernetes_flags_are_used_only_with_a_kubernetes_grant() {
    let cli = Cli::new();
    // No Kubernetes grant: the kubeconfig is never read.
    let o = cli.run(&["--kubeconfig", "/nonexistent/kubeconfig", "health"]);
    assert_exit(&o, 0);
    assert_eq!(stderr(&o), "");

    // A Kubernetes grant: the kubeconfig is read, and a missing one is an
    // input error naming it.
    let dir = tempfile::tempdir().expect("a temporary dir");
    let grants = dir.path().join("grants.yaml");
    std::fs::write(
        &grants,
        "kubernetes:\n  rules:\n  - {verbs: [get], resources: [nodes], cluster: true}\n",
    )
    .expect("writing grants");
    let o = cli.run(&[
        "--grants",
        grants.to_str().expect("a UTF-8 path"),
        "--kubeconfig",
        "/nonexistent/kubeconfig",
        "health",
    ]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("/nonexistent/kubeconfig"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_missing_adapter_is_a_usage_error() {
    let cli = Cli::new();
    let o = cli
        .command(&["health"])
        .env_remove("PANDO_ADAPTER")
        .stdin(Stdio::null())
        .output()
        .expect("pando-host runs");
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("--adapter"), "{}", stderr(&o));
}

/// `--digest` pins the component: another SHA-256 is refused before it is
/// compiled (exit 2, both digests named); the right one, in either spelling,
/// loads.
#[test]
fn a_pinned_digest_refuses_other_bytes_and_loads_its_own() {
    use sha2::Digest as _;
    let cli = Cli::new();
    let bytes = std::fs::read(test_adapter()).expect("the test adapter");
    let digest = hex::encode(sha2::Sha256::digest(&bytes));
    let wrong = "0".repeat(64);
    let o = cli.run(&["--digest", &wrong, "health"]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(err.contains(&digest) && err.contains(&wrong), "{err}");
    assert!(err.contains("pinned"), "{err}");
    let o = cli.run(&["--digest", &digest, "health"]);
    assert_exit(&o, 0);
    let o = cli.run(&[
        "--digest",
        &format!("sha256:{}", digest.to_uppercase()),
        "health",
    ]);
    assert_exit(&o, 0);
}

/// `KUBECONFIG` may list several files, as kubectl reads it (the first
/// file's current context is used): the call reaches the test cluster.
#[test]
fn kubeconfig_may_be_a_list_of_files() {
    let root = repo_root();
    let state = root.join("target/test-cluster");
    let pando = state.join("pando.kubeconfig");
    assert!(
        pando.is_file(),
        "{} is missing: start the test cluster with `scripts/cluster up`, and run the tests in \
         its namespace (`scripts/cluster exec -- cargo test`)",
        pando.display()
    );
    let probe = root.join("target/wasm32-wasip2/release/pando_kube_probe.wasm");
    assert!(
        probe.is_file(),
        "build the components: scripts/build-components"
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let grants = dir.path().join("grants.yaml");
    std::fs::write(
        &grants,
        "kubernetes:\n  rules:\n  - verbs: [get]\n    resources: [namespaces]\n    cluster: true\n    names: [\"pando-*\"]\n",
    )
    .expect("writing the grants");
    let list = format!(
        "{}:{}",
        pando.display(),
        state.join("admin.kubeconfig").display()
    );
    let o = Command::new(env!("CARGO_BIN_EXE_pando-host"))
        .arg("--cache-dir")
        .arg(dir.path().join("cache"))
        .args(["--adapter", &probe.to_string_lossy(), "--grants"])
        .arg(&grants)
        .args(["-o", "json", "observe", "pando-no-such-app"])
        .env("KUBECONFIG", &list)
        .env_remove("PANDO_ADAPTER")
        .env_remove("PANDO_GRANTS")
        .env_remove("PANDO_CONFIG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("pando-host runs");
    assert_exit(&o, 0);
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON on stdout");
    assert_eq!(json["exists"], false, "{json}");
}

#[test]
fn durations_take_units_as_kubectl_writes_them() {
    let cli = Cli::new();
    for ok in ["30", "30s", "1.5s", "500ms", "2m", "1h"] {
        let o = cli.run(&["--timeout", ok, "health"]);
        assert_exit(&o, 0);
    }
    let o = cli.run(&["--timeout", "5 parsecs", "health"]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("unknown unit"), "{}", stderr(&o));
}

#[test]
fn limits_come_from_a_file_and_an_unknown_one_is_refused_naming_it() {
    let cli = Cli::new();
    let (_dir, file) = limits_file("memory_bytes: 65536\n");
    let path = file.to_str().expect("a UTF-8 path");
    // Applied: no instance of the adapter fits in 64 KiB.
    let o = cli.run(&["--limits", path, "health"]);
    assert_exit(&o, 1);
    assert!(
        stderr(&o).contains("memory limit of 65536 bytes"),
        "{}",
        stderr(&o)
    );

    let (_dir, file) = limits_file("max_instancez: 4\n");
    let o = cli.run(&["--limits", file.to_str().expect("a UTF-8 path"), "health"]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(err.contains("limits.yaml"), "names the file: {err}");
    assert!(err.contains("max_instancez"), "names the field: {err}");

    let (_dir, file) = limits_file("max_instances: 4\ndefault_timeout: 30000\n");
    let o = cli.run(&["--limits", file.to_str().expect("a UTF-8 path"), "health"]);
    assert_exit(&o, 0);
}
