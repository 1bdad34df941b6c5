//! The Python Kubernetes adapter (`adapters/python-kubernetes`, built with
//! componentize-py by `scripts/build-python-adapter`), loaded in the host
//! against the test cluster as the `pando` identity with its own grants
//! (`adapters/python-kubernetes/grants.yaml`), and a count of the API
//! requests its calls make (from the host's audit events).
//!
//! The component is large (CPython inside, about 19 MB) and its first
//! compile takes seconds, so every test shares the tests' compile cache
//! (`target/test-compile-cache`, [`crate::probe::shared_cache`]).

use std::path::PathBuf;

use pando_host::{Adapter, Grants, Host, LoadError};

use crate::components;

/// The configuration the tests load the adapter with (the Kubernetes
/// adapter's tests use the same).
pub const CONFIG: &str = crate::kubernetes_adapter::CONFIG;

/// The command that builds the component.
pub const BUILD: &str = "scripts/build-python-adapter";

/// The adapter's component: `PANDO_TEST_PYTHON_ADAPTER` when set (a build of another
/// revision, to see a test fail without the change it tests), else this checkout's build.
/// Panics with the command that builds it when it is missing: a test that needs it must not
/// pass without it.
pub fn component() -> PathBuf {
    let path = match std::env::var_os("PANDO_TEST_PYTHON_ADAPTER") {
        Some(path) => PathBuf::from(path),
        None => components::repo_root()
            .join("target/wasm32-wasip2/release/pando_python_kubernetes.wasm"),
    };
    assert!(
        path.is_file(),
        "{} is missing: build the Python adapter with `{BUILD}`",
        path.display()
    );
    path
}

/// The grants the adapter ships with: what its calls reach, and no more.
pub fn grants() -> Grants {
    let rel = "adapters/python-kubernetes/grants.yaml";
    let text = std::fs::read_to_string(components::repo_root().join(rel))
        .unwrap_or_else(|e| panic!("reading {rel}: {e}"));
    Grants::from_text(rel, &text).expect("the Python adapter's grants parse")
}

/// The adapter, as `pando`, with [`CONFIG`]. Also starts counting audit
/// events ([`requests`]).
pub async fn load() -> (Adapter, Host) {
    load_with(CONFIG).await
}

/// The adapter, as `pando`, with `config`.
pub async fn load_with(config: &str) -> (Adapter, Host) {
    crate::kubernetes_adapter::install_audit_counter();
    crate::probe::load_as_pando(&component(), grants(), config).await
}

/// Loading the adapter with `config`: the load error, for configurations
/// that `configure` must refuse.
pub async fn load_error(config: &str) -> LoadError {
    let host = Host::builder()
        .cache_dir(crate::probe::shared_cache())
        .build()
        .expect("host builds");
    let client = crate::cluster::client(crate::cluster::Identity::Pando)
        .await
        .expect("a client for the pando identity");
    match host
        .load_file(
            &component(),
            pando_host::LoadOptions {
                grants: grants(),
                config: config.into(),
                kubernetes: Some(client),
                ..pando_host::LoadOptions::default()
            },
        )
        .await
    {
        Ok(_) => panic!("the configuration {config} was accepted"),
        Err(e) => e,
    }
}

/// The host's audit events, counted by the one counter the tests share
/// (the Kubernetes adapter's tests count theirs with it too).
pub use crate::kubernetes_adapter::{audit_mark, requests};
