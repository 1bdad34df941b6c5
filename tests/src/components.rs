//! The wasm components the tests load, built by `scripts/build-components`.

use std::path::PathBuf;

/// The repository's root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// A YAML file of the repository (`examples/kubernetes-config.yaml`), read as Pando reads its
/// own documents, as JSON. Panics naming the file when it is missing or does not parse.
pub fn repo_yaml(rel: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(repo_root().join(rel))
        .unwrap_or_else(|e| panic!("reading {rel}: {e}"));
    pando_host::yaml::from_str(&text).unwrap_or_else(|e| panic!("{rel} parses: {e}"))
}

/// The path of a built component, by crate name with underscores
/// (`pando_test_adapter`). Panics with the command to run when it is missing:
/// a test that needs a component must not pass without it.
pub fn component(name: &str) -> PathBuf {
    let path = repo_root()
        .join("target/wasm32-wasip2/release")
        .join(format!("{name}.wasm"));
    assert!(
        path.is_file(),
        "{} is missing: build the test components with `scripts/build-components`",
        path.display()
    );
    path
}

/// The test adapter: every export shape, misbehaving on request (see its
/// crate docs).
pub fn test_adapter() -> PathBuf {
    component("pando_test_adapter")
}

/// A minimal adapter that imports the Kubernetes API.
pub fn kube_probe() -> PathBuf {
    component("pando_kube_probe")
}

/// An adapter built against `pando:runtime@0.9.0`, which no host serves.
pub fn wrong_version() -> PathBuf {
    component("pando_wrong_version")
}

/// A test adapter of contract 0.2.0 (WASI 0.3): the calls the host serves
/// 0.2.0 adapters, each answer showing what the call saw (see its crate docs).
pub fn v02_adapter() -> PathBuf {
    component("pando_v02_adapter")
}

/// A test adapter of contract 0.2.0 that drives the 0.2.0 Kubernetes import
/// (requests, a log, a watch, exec with stdin and a resized terminal; see
/// its crate docs).
pub fn v02_kube() -> PathBuf {
    component("pando_v02_kube")
}
