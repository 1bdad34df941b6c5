//! Each SDK line is a crate `cargo package` accepts, as an author outside
//! this repository would get it: the contract's WIT inside the crate
//! (`wit/`, the repository's `wit/` or `wit/v0.2` through a link), its
//! README and licence, the sources the two lines share (links from the
//! 0.2 line into the 0.1 line's `src/`) as files, and a package that builds
//! on its own, away from the workspace.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Where `cargo package` builds and unpacks what it verifies: a folder of
/// the caller's build directory where one is kept outside the checkout
/// (.ci/run's build cache, docs/testing.md), so that a fresh clone does not
/// build the SDK's dependencies again; else `target/sdk-package`.
fn build_dir() -> PathBuf {
    match std::env::var_os("CARGO_BUILD_BUILD_DIR") {
        Some(dir) => PathBuf::from(dir).join("sdk-package"),
        None => root().join("target/sdk-package"),
    }
}

/// `cargo package` of the SDK line `name` with `args`, in a target
/// directory of its own (the `cargo test` running this holds the
/// workspace's).
fn package(name: &str, args: &[&str]) -> Output {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["package", "-p", name, "--offline", "--allow-dirty"])
        .args(args)
        .env("CARGO_TARGET_DIR", root().join("target/sdk-package"))
        // Cargo unpacks the package it verifies into the build directory, where this test
        // reads the unpacked files.
        .env("CARGO_BUILD_BUILD_DIR", build_dir())
        .current_dir(root())
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo package {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Every `.wit` file under `dir`, as paths relative to it.
fn wit_files(dir: &Path, under: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read wit/") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            wit_files(&path, under, out);
        } else if path.extension().is_some_and(|e| e == "wit") {
            out.push(path.strip_prefix(under).expect("under wit/").to_path_buf());
        }
    }
}

/// Packages `name`, whose crate is `dir` and whose contract is the
/// repository's `wit`, checks what is listed and that the verified package's
/// files are the repository's (`shared`: sources of another crate's
/// reached through links).
fn check_package(name: &str, dir: &str, wit: &str, shared: &[&str]) {
    let listed = String::from_utf8(package(name, &["--list"]).stdout).expect("utf-8");
    let listed: Vec<&str> = listed.lines().collect();
    let wit = root().join(wit);
    let mut contract = Vec::new();
    wit_files(&wit, &wit, &mut contract);
    assert!(contract.len() >= 5, "the contract's files: {contract:?}");
    for file in &contract {
        let name = format!("wit/{}", file.display());
        assert!(
            listed.contains(&name.as_str()),
            "{name} is packaged: {listed:?}"
        );
    }
    for file in ["README.md", "LICENSE", "src/lib.rs"].iter().chain(shared) {
        assert!(listed.contains(file), "{file} is packaged: {listed:?}");
    }

    // Verified: cargo unpacks the package and builds it alone, so nothing
    // in it reaches outside the crate.
    package(name, &[]);
    let version = env!("CARGO_PKG_VERSION");
    let unpacked = build_dir().join(format!("package/{name}-{version}"));
    for file in &contract {
        let packaged = std::fs::read(unpacked.join("wit").join(file)).expect("packaged wit");
        let repo = std::fs::read(wit.join(file)).expect("repository wit");
        assert!(
            packaged == repo,
            "wit/{} is the repository's",
            file.display()
        );
    }
    for file in shared {
        let packaged = std::fs::read(unpacked.join(file)).expect("packaged source");
        let repo = std::fs::read(root().join(dir).join(file)).expect("repository source");
        assert!(packaged == repo, "{file} is the repository's");
    }
}

#[test]
fn the_sdk_packages_with_the_contract_inside_and_builds_alone() {
    check_package("pando-adapter-sdk", "guest-sdk", "wit", &[]);
}

/// The 0.2 line: contract 0.2.0 inside, and the sources it shares with
/// the 0.1 line packaged as files of its own.
#[test]
fn the_sdk_0_2_line_packages_with_its_contract_and_shared_sources_and_builds_alone() {
    check_package(
        "pando-adapter-sdk-v02",
        "guest-sdk-v02",
        "wit/v0.2",
        &["src/error.rs", "src/config.rs", "src/log.rs"],
    );
}
