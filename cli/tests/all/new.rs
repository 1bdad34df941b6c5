//! `pando-host new`, as an author runs it: the crate it writes builds with
//! a plain `cargo build --release` (offline, from the crates `scripts/setup`
//! fetched) and passes every conformance case on the test cluster's real
//! node; a denial there proposes the app pattern once, and
//! `--grants-report` has a short text form.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{assert_exit, repo_root, stderr, stdout};

/// `pando-host` with none of the caller's environment that the CLI reads.
fn pando_host(cache: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pando-host"));
    for var in [
        "PANDO_ADAPTER",
        "PANDO_GRANTS",
        "PANDO_CONFIG",
        "KUBECONFIG",
        "RUST_LOG",
        "PANDO_CHECKOUT",
    ] {
        cmd.env_remove(var);
    }
    cmd.arg("--cache-dir").arg(cache).stdin(Stdio::null());
    cmd
}

#[test]
fn new_refuses_a_bad_name_and_a_non_empty_directory_naming_the_fix() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let o = pando_host(dir.path())
        .current_dir(dir.path())
        .args(["new", "My.Adapter"])
        .output()
        .expect("pando-host runs");
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("`My.Adapter` is not a valid crate name")
            && stderr(&o).contains("use lowercase ASCII letters"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("My.Adapter").exists());

    let full = dir.path().join("full");
    std::fs::create_dir(&full).expect("mkdir");
    std::fs::write(full.join("keep.txt"), "mine").expect("a file");
    let o = pando_host(dir.path())
        .args(["new", "my-adapter", "--dir"])
        .arg(&full)
        .output()
        .expect("pando-host runs");
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("exists and is not empty: name another directory with `--dir`"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_dir(&full).expect("the directory").count(),
        1,
        "nothing was written into it"
    );

    // An empty directory is taken.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let o = pando_host(dir.path())
        .args(["new", "my-adapter", "--dir"])
        .arg(&empty)
        .output()
        .expect("pando-host runs");
    assert_exit(&o, 0);
    let sdk = repo_root()
        .join("guest-sdk")
        .canonicalize()
        .expect("the SDK");
    assert!(
        stdout(&o).contains(&format!("the SDK by path, {}", sdk.display())),
        "{}",
        stdout(&o)
    );
    let read =
        |f: &str| std::fs::read_to_string(empty.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    assert!(read(".cargo/config.toml").contains("target = \"wasm32-wasip2\""));
    let pin = std::fs::read_to_string(repo_root().join("rust-toolchain.toml")).expect("the pin");
    let channel = pin
        .lines()
        .find(|l| l.starts_with("channel"))
        .expect("a channel");
    assert!(read("rust-toolchain.toml").contains(channel));
    assert!(read("README.md").contains("**by path**"));
    assert!(read("README.md").contains("cargo build --release"));
    assert!(read("src/lib.rs").contains("export_adapter!(MyAdapter);"));
    assert!(read("config.yaml").contains("\nruntime_class: pando-real-node\n"));
    assert!(read("plan.yaml").contains("image: pando.test/busybox:1"));
}

/// `scripts/pando-host` may run a binary cached from another clone; it names its own
/// checkout, and `new` takes that checkout's SDK, not the one the binary was built in.
#[test]
fn new_takes_the_sdk_of_the_checkout_it_is_run_for() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let clone = dir.path().join("clone");
    std::fs::create_dir_all(clone.join("guest-sdk")).expect("mkdir");
    std::fs::write(
        clone.join("guest-sdk/Cargo.toml"),
        "[package]\nname = \"pando-adapter-sdk\"\nversion = \"0.1.0\"\n",
    )
    .expect("its SDK");
    let o = pando_host(dir.path())
        .env("PANDO_CHECKOUT", &clone)
        .args(["new", "my-adapter", "--dir"])
        .arg(dir.path().join("mine"))
        .output()
        .expect("pando-host runs");
    assert_exit(&o, 0);
    let sdk = clone.join("guest-sdk").canonicalize().expect("the SDK");
    let manifest = std::fs::read_to_string(dir.path().join("mine/Cargo.toml")).expect("written");
    assert!(
        manifest.contains(&format!(
            "pando-adapter-sdk = {{ path = \"{}\" }}",
            sdk.display()
        )),
        "{manifest}"
    );
}

/// The cluster's admin kubeconfig; fails saying how to start the cluster.
fn admin_kubeconfig() -> PathBuf {
    let path = repo_root().join("target/test-cluster/admin.kubeconfig");
    assert!(
        path.is_file(),
        "{} is missing: start the test cluster with `scripts/cluster up`, and run the tests in \
         its namespace (`scripts/cluster exec -- cargo test`)",
        path.display()
    );
    path
}

/// A `cargo` for the generated crate: none of this test's own cargo
/// environment (its toolchain, target dir, target), so the crate's own
/// `rust-toolchain.toml` and `.cargo/config.toml` decide; offline, as
/// inside the cluster's namespace; the dependencies built once in
/// `target/pando-new-test` and kept for the next run, or, where the
/// checkout's build directory is kept outside it (CI's build cache,
/// docs/testing.md), in a directory of that cache, so that a fresh clone
/// does not build them again.
fn cargo_in(dir: &Path) -> Command {
    let mut cmd = Command::new("cargo");
    for (var, _) in std::env::vars_os() {
        let var = var.to_string_lossy().into_owned();
        if var.starts_with("CARGO_") || var.starts_with("RUSTUP_TOOLCHAIN") || var == "RUSTFLAGS" {
            cmd.env_remove(var);
        }
    }
    // After the removals above, which take the variable out too.
    if let Some(cache) = std::env::var_os("CARGO_BUILD_BUILD_DIR") {
        cmd.env(
            "CARGO_BUILD_BUILD_DIR",
            PathBuf::from(cache).join("pando-new-test"),
        );
    }
    cmd.current_dir(dir)
        .env("CARGO_NET_OFFLINE", "true")
        .env(
            "CARGO_TARGET_DIR",
            repo_root().join("target/pando-new-test"),
        )
        .stdin(Stdio::null());
    cmd
}

/// `new NAME --contract CONTRACT`, `cargo build --release`, its unit
/// tests, and `conformance` on the test cluster's real node, as the
/// template's config.yaml places its pods: every case passes (none skipped,
/// none unproven). The crate's directory, its component and the suite's
/// report.
fn new_builds_and_passes_conformance(
    dir: &Path,
    cache: &Path,
    name: &str,
    contract: &str,
) -> (PathBuf, PathBuf, String) {
    let kubeconfig = admin_kubeconfig();
    let krate = dir.join(name);
    let o = pando_host(cache)
        .args(["new", name, "--contract", contract, "--dir"])
        .arg(&krate)
        .output()
        .expect("pando-host runs");
    assert_exit(&o, 0);
    assert!(
        stdout(&o).contains(&format!("an adapter of pando:runtime@{contract}.0")),
        "{}",
        stdout(&o)
    );

    // A plain `cargo build --release`: no `--target`.
    let o = cargo_in(&krate)
        .args(["build", "--release", "--quiet"])
        .output()
        .expect("cargo runs");
    assert_exit(&o, 0);
    let wasm = repo_root().join(format!(
        "target/pando-new-test/wasm32-wasip2/release/{}.wasm",
        name.replace('-', "_")
    ));
    assert!(wasm.is_file(), "{} was not built", wasm.display());
    let bytes = std::fs::read(&wasm).expect("the component");
    let export = format!("pando:runtime/adapter@{contract}.0");
    assert!(
        bytes.windows(export.len()).any(|w| w == export.as_bytes()),
        "{} exports {export}",
        wasm.display()
    );

    // Its unit tests, natively, as its README says: the template's pure
    // functions, copied as they are beside the renamed `lib.rs`.
    let rustc = Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc runs");
    let host = String::from_utf8_lossy(&rustc.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .expect("rustc names its host");
    let o = cargo_in(&krate)
        .args(["test", "--quiet", "--target", &host])
        .output()
        .expect("cargo runs");
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("test result: ok."), "{}", stdout(&o));

    let o = pando_host(cache)
        .current_dir(&krate)
        .arg("conformance")
        .arg(&wasm)
        .args([
            "--grants",
            "grants.yaml",
            "--config",
            "config.yaml",
            "--kubeconfig",
        ])
        .arg(&kubeconfig)
        // The template's config.yaml puts its pods on the real node, which runs only its own
        // images.
        .args(["--image", "pando.test/busybox:1"])
        .output()
        .expect("pando-host runs");
    // Exit 0: nothing failed, and nothing declared was left unproven (3).
    assert_exit(&o, 0);
    let text = stdout(&o);
    let summary = text.lines().last().unwrap_or_default();
    let cases = summary
        .split_once(" cases: ")
        .map(|(n, _)| n)
        .unwrap_or_else(|| panic!("no summary:\n{text}"));
    // Every case passed: none skipped, none unproven.
    assert!(
        summary.starts_with(&format!(
            "{cases} cases: {cases} passed, 0 failed, 0 skipped, 0 unproven ("
        )),
        "{text}"
    );
    // C-STOP-01 passes only where the finisher's command ran and exited by
    // itself: the pods ran in containers on the real node, not on KWOK.
    for case in [
        "C-INFO-03",
        "C-APPLY-01",
        "C-APPLY-02",
        "C-OBS-01",
        "C-STOP-01",
        "C-DESTROY-02",
        "C-WATCH-01",
    ] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("PASS {case} "))),
            "{case} did not pass:\n{text}"
        );
    }
    (krate, wasm, text)
}

/// The plan `new` wrote, under its own grants and configuration, as
/// docs/authoring.md applies it (under the id `name`): its workload runs,
/// and destroy removes it. The plan, written under `dir`.
fn the_plan_runs_and_is_destroyed(
    dir: &Path,
    cache: &Path,
    krate: &Path,
    wasm: &Path,
    name: &str,
) -> PathBuf {
    let kubeconfig = admin_kubeconfig();
    let plan = dir.join("plan.yaml");
    let text = std::fs::read_to_string(krate.join("plan.yaml")).expect("the plan");
    assert!(text.contains("\nid: hello\n"), "{text}");
    std::fs::write(
        &plan,
        text.replace("\nid: hello\n", &format!("\nid: {name}\n")),
    )
    .expect("a plan");
    let own = || {
        let mut cmd = pando_host(cache);
        cmd.current_dir(krate).arg("--adapter").arg(wasm);
        cmd.args([
            "--grants",
            "grants.yaml",
            "--config",
            "config.yaml",
            "--kubeconfig",
        ]);
        cmd.arg(&kubeconfig);
        cmd
    };
    let o = own()
        .arg("apply")
        .arg(&plan)
        .output()
        .expect("pando-host runs");
    assert_exit(&o, 0);
    assert!(
        stdout(&o).contains(&format!("applied {name}")),
        "{}",
        stdout(&o)
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let o = own()
            .args(["observe", name])
            .output()
            .expect("pando-host runs");
        assert_exit(&o, 0);
        let running = stdout(&o)
            .lines()
            .any(|l| l.split_whitespace().take(2).eq(["web", "Running"]));
        if running {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "`web` is not running after 90 s:\n{}",
            stdout(&o)
        );
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    let o = own()
        .args(["destroy", name, "--volumes"])
        .output()
        .expect("pando-host runs");
    assert_exit(&o, 0);
    plan
}

/// The whole path for a 0.1.0 adapter: `new`, `cargo build --release`,
/// `conformance` on the test cluster's real node, its `plan.yaml` applied
/// and destroyed, then a denial and the grants report's text form.
#[test]
fn a_new_adapter_builds_offline_and_passes_conformance_on_the_test_cluster() {
    let kubeconfig = admin_kubeconfig();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let cache = dir.path().join("cache");
    let (krate, wasm, text) =
        new_builds_and_passes_conformance(dir.path(), &cache, "first-adapter", "0.1");
    assert!(
        !text.contains("C-SEC-01") && !text.contains("C-EXEC-02"),
        "a 0.1.0 adapter is not asked for security or a resize:\n{text}"
    );
    let plan = the_plan_runs_and_is_destroyed(dir.path(), &cache, &krate, &wasm, "first-adapter");

    // Grants without the namespaces: the denial proposes Pando's app
    // pattern, once, and the text report lists it with the unused rule.
    let narrow = dir.path().join("narrow.yaml");
    std::fs::write(
        &narrow,
        "kubernetes:\n  rules:\n  - {verbs: [list], resources: [nodes], cluster: true}\n",
    )
    .expect("writing the grants");
    // The adapter under the narrow grants.
    let narrowed = || {
        let mut cmd = pando_host(&cache);
        cmd.arg("--adapter").arg(&wasm).arg("--grants").arg(&narrow);
        cmd.arg("--kubeconfig").arg(&kubeconfig);
        cmd
    };
    let o = narrowed()
        .args([
            "--grants-report",
            "-",
            "--grants-report-format",
            "text",
            "apply",
        ])
        .arg(&plan)
        .output()
        .expect("pando-host runs");
    assert_exit(&o, 1);
    let err = stderr(&o);
    let rule = r#"- {verbs: [get], resources: [namespaces], cluster: true, names: ["pando-*"], except: ["pando-system"]}"#;
    let error_line = err
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line: {err}"));
    assert_eq!(error_line.matches(rule).count(), 1, "{error_line}");
    assert!(
        !error_line.contains("names: [\"pando-first-adapter\"]"),
        "{error_line}"
    );
    assert!(
        err.contains("grants: 1 rules, 0 used, 1 never used\n"),
        "{err}"
    );
    assert!(
        err.contains("  rules[0] unused: list nodes (cluster-scoped)\n"),
        "{err}"
    );
    assert!(
        err.contains(
            "  get namespaces ×1; to allow it, add: - {verbs: [get], resources: [namespaces], \
             cluster: true}"
        ),
        "{err}"
    );

    // To a file, without a format: JSON, as before.
    let report = dir.path().join("report.json");
    let o = narrowed()
        .arg("--grants-report")
        .arg(&report)
        .arg("health")
        .output()
        .expect("pando-host runs");
    assert_exit(&o, 0);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("the report"))
            .expect("the report is JSON");
    assert_eq!(v["rules"][0]["uses"], 1, "{v}");
}

/// Issue 42's "a 0.2 component passes conformance on the real node": a
/// crate `new --contract 0.2` writes (the 0.2 template, on the SDK's 0.2
/// line) builds offline into a component exporting
/// `pando:runtime/adapter@0.2.0`, passes every conformance case on the
/// real node, and runs and destroys its plan.
#[test]
fn a_new_0_2_adapter_builds_offline_and_passes_conformance_on_the_test_cluster() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let cache = dir.path().join("cache");
    let (krate, wasm, text) =
        new_builds_and_passes_conformance(dir.path(), &cache, "second-adapter", "0.2");
    // What 0.2's template adds: exec (the import's session handed on), its
    // terminal resized while the program runs, and a workload run as its
    // `security` says, seen from inside it.
    for case in ["C-EXEC-01", "C-EXEC-02", "C-SEC-01"] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("PASS {case} "))),
            "{case} did not pass:\n{text}"
        );
    }

    // The same case under Pod Security `restricted`: a first pod rule for
    // the case's namespace says `profile: restricted`, so the host checks
    // the pod against it and labels the namespace the adapter makes
    // `pod-security.kubernetes.io/enforce: restricted` (docs/grants.md),
    // which the API server's own admission then enforces.
    let grants = std::fs::read_to_string(krate.join("grants.yaml")).expect("the grants");
    let restricted = grants.replacen(
        "  objects:\n    pods:\n",
        "  objects:\n    pods:\n    - namespaces: [\"pando-conf-*-security\"]\n      \
         profile: restricted\n      runtime_classes: [pando-real-node]\n",
        1,
    );
    assert_ne!(
        restricted, grants,
        "the template's grants have a pod rule to put one before"
    );
    std::fs::write(krate.join("restricted.yaml"), &restricted).expect("the grants");
    let o = pando_host(&cache)
        .current_dir(&krate)
        .arg("conformance")
        .arg(&wasm)
        .args([
            "--grants",
            "restricted.yaml",
            "--config",
            "config.yaml",
            "--only",
            "C-SEC-01",
            "--kubeconfig",
        ])
        .arg(admin_kubeconfig())
        .args(["--image", "pando.test/busybox:1"])
        .output()
        .expect("pando-host runs");
    assert_exit(&o, 0);
    assert!(
        stdout(&o).lines().any(|l| l.starts_with("PASS C-SEC-01 ")),
        "{}",
        stdout(&o)
    );
    // The control: under the same grants, the template's plan, whose
    // workload has no `security`, is refused in such a namespace before
    // anything runs; so the rule above did reach the case's namespace.
    let plan = std::fs::read_to_string(krate.join("plan.yaml")).expect("the plan");
    let control = dir.path().join("control.yaml");
    std::fs::write(
        &control,
        plan.replace("\nid: hello\n", "\nid: conf-control-security\n"),
    )
    .expect("a plan");
    let o = pando_host(&cache)
        .current_dir(&krate)
        .arg("--adapter")
        .arg(&wasm)
        .args(["--grants", "restricted.yaml", "--config", "config.yaml"])
        .arg("--kubeconfig")
        .arg(admin_kubeconfig())
        .arg("apply")
        .arg(&control)
        .output()
        .expect("pando-host runs");
    assert_exit(&o, 1);
    assert!(
        stderr(&o).contains("restricted") && stderr(&o).contains("runAsNonRoot"),
        "{}",
        stderr(&o)
    );
    let o = pando_host(&cache)
        .current_dir(&krate)
        .arg("--adapter")
        .arg(&wasm)
        .args(["--grants", "restricted.yaml", "--config", "config.yaml"])
        .arg("--kubeconfig")
        .arg(admin_kubeconfig())
        .args(["destroy", "conf-control-security", "--volumes"])
        .output()
        .expect("pando-host runs");
    assert_exit(&o, 0);
    the_plan_runs_and_is_destroyed(dir.path(), &cache, &krate, &wasm, "second-adapter");
}
