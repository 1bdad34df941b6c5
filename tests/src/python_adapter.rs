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
use std::sync::{Mutex, OnceLock};

use pando_host::{Adapter, Grants, Host, LoadError};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

use crate::components;
use crate::kubernetes_adapter::Request;

/// The configuration the tests load the adapter with (the Kubernetes
/// adapter's tests use the same).
pub const CONFIG: &str = crate::kubernetes_adapter::CONFIG;

/// The command that builds the component.
pub const BUILD: &str = "scripts/build-python-adapter";

/// The adapter's component. Panics with the command that builds it when it
/// is missing: a test that needs it must not pass without it.
pub fn component() -> PathBuf {
    let path =
        components::repo_root().join("target/wasm32-wasip2/release/pando_python_kubernetes.wasm");
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
    install_audit_counter();
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

static AUDIT: Mutex<Vec<Request>> = Mutex::new(Vec::new());

struct AuditCounter;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for AuditCounter {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() == "pando_host::audit" {
            let mut request = Request::default();
            event.record(&mut request);
            if let Ok(mut all) = AUDIT.lock() {
                all.push(request);
            }
        }
    }
}

/// Installs this module's audit counter as the process's subscriber. A test
/// binary uses either this or `kubernetes_adapter`'s loaders, not both:
/// only one subscriber is installed per process (load the Kubernetes
/// adapter there with [`crate::probe::load_as_pando`]).
fn install_audit_counter() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let _ = tracing_subscriber::registry().with(AuditCounter).try_init();
    });
}

/// How many audit events were recorded so far: pass it to [`requests`].
pub fn audit_mark() -> usize {
    AUDIT.lock().map(|a| a.len()).unwrap_or(0)
}

/// The requests about namespace `ns` (in it, or the namespace itself)
/// since `mark`: a unique namespace tells one test's requests from another's.
pub fn requests(mark: usize, ns: &str) -> Vec<Request> {
    let all = AUDIT.lock().map(|a| a.clone()).unwrap_or_default();
    all.into_iter()
        .skip(mark)
        .filter(|r| r.namespace == ns || r.name == ns)
        .collect()
}
