//! What a load is given: the adapter's grants, configuration, limits, name,
//! Kubernetes client and cache, the digest it must have, and who is told
//! while it compiles.

use std::sync::Arc;
use std::time::Duration;

use crate::grants::Grants;
use crate::limits::Limits;

/// What a load reports while it works. A first load compiles the
/// component for this machine, which takes seconds; a caller with a
/// person watching says so (`pando-host` does on a terminal). Loads the
/// compile cache answers report nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadProgress {
    /// Compiling `what`, `bytes` long: it is not in the compile cache.
    Compiling {
        /// The component, as errors name it.
        what: String,
        /// Its size.
        bytes: usize,
    },
    /// Compiled in `elapsed`; `cached` when later loads will be served
    /// from the compile cache.
    Compiled {
        /// The component, as errors name it.
        what: String,
        /// The time the compile took.
        elapsed: Duration,
        /// Whether the compiled code was stored for later loads.
        cached: bool,
    },
}

/// Called with each [`LoadProgress`] of a load, from a blocking thread.
pub type ProgressHook = Arc<dyn Fn(&LoadProgress) + Send + Sync>;

/// What to load an adapter with.
#[derive(Clone)]
pub struct LoadOptions {
    /// What it may reach.
    pub grants: Grants,
    /// Its configuration, a JSON document (the adapter's schema).
    pub config: String,
    /// Its limits.
    pub limits: Limits,
    /// The name it is known by in logs and audit (default: its kind).
    pub name: Option<String>,
    /// The client its Kubernetes import sends with (kubeconfig or in-cluster
    /// configuration, built by the caller). Used only when the grants have a
    /// `kubernetes` section; without a client, Kubernetes calls answer that
    /// no cluster is configured.
    pub kubernetes: Option<kube::Client>,
    /// The watch-fed cache its Kubernetes reads that allow any version
    /// (`resourceVersion=0`) may be answered from; one cache can serve every
    /// adapter loaded with the same client ([`crate::kubecache`]).
    pub kubernetes_cache: Option<std::sync::Arc<crate::kubecache::WatchCache>>,
    /// The SHA-256 the component must have (hex, optionally `sha256:`
    /// before it): a component whose bytes differ is refused before it is
    /// compiled ([`crate::LoadError::DigestMismatch`]). None loads whatever the
    /// file holds.
    pub expected_digest: Option<String>,
    /// Told when the load compiles the component, and when it is done.
    pub progress: Option<ProgressHook>,
}

impl std::fmt::Debug for LoadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadOptions")
            .field("grants", &self.grants)
            .field("config", &self.config)
            .field("limits", &self.limits)
            .field("name", &self.name)
            .field(
                "kubernetes",
                &self.kubernetes.as_ref().map(|_| "kube::Client"),
            )
            .field("kubernetes_cache", &self.kubernetes_cache.is_some())
            .field("expected_digest", &self.expected_digest)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            grants: Grants::none(),
            config: "{}".into(),
            limits: Limits::default(),
            name: None,
            kubernetes: None,
            kubernetes_cache: None,
            expected_digest: None,
            progress: None,
        }
    }
}
