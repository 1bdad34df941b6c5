//! A loaded adapter: the typed async API core calls.
//!
//! Each contract method (`calls.rs`) is one call into the pipeline
//! (`invoke.rs`): lease a configured instance, run the export under the
//! call's deadline and cancellation, map the outcome to a
//! [`CallError`](crate::CallError), record it. Streams cross as
//! [`ByteStream`](crate::streams::ByteStream)s and writers; an exec session
//! (`session.rs`) keeps an instance of its own for its life.

mod calls;
mod classify;
mod drive;
mod exec_v0_2;
pub(crate) mod invoke;
pub(crate) mod metrics;
#[doc(hidden)]
pub use raw::RawInstance;
mod floor;
mod raw;
mod session;
pub(crate) mod shared;
mod streams_v0_2;

pub use session::ExecSession;

use std::sync::Arc;

use crate::bindings::Line;
use crate::check::ComponentShape;
use crate::limits::Limits;
use crate::runtime::cache::CacheOutcome;
use crate::runtime::pool::Pool;
use crate::runtime::state::Identity;
use crate::types::KindInfo;

/// What `inspect` learns of a component.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Inspection {
    /// Who it is.
    pub info: KindInfo,
    /// Its world, version, imports and exports.
    pub shape: ComponentShape,
    /// The SHA-256 of its bytes.
    pub digest: String,
    /// Whether it came from the compile cache.
    pub cache: CacheOutcome,
}

pub(crate) struct AdapterInner {
    pub(crate) identity: Arc<Identity>,
    /// The contract line its component exports.
    pub(crate) line: Line,
    pub(crate) info: KindInfo,
    pub(crate) shape: ComponentShape,
    pub(crate) digest: String,
    pub(crate) cache: CacheOutcome,
    pub(crate) limits: Limits,
    pub(crate) grants: crate::grants::Grants,
    pub(crate) pool: Arc<Pool>,
    /// Instances serving several `async func` calls at once: a 0.2.0
    /// adapter's with `limits.calls_per_instance` above one.
    pub(crate) lanes: Option<crate::runtime::lanes::Lanes>,
    pub(crate) breaker: crate::runtime::breaker::Breaker,
    /// The host's metrics, which count this adapter's calls, and its name
    /// as their label.
    pub(crate) metrics: Arc<crate::adapter::metrics::Metrics>,
    pub(crate) metrics_label: Arc<str>,
    /// Its handles on the metrics of calls that succeed.
    pub(crate) call_handles: crate::adapter::metrics::CallHandles,
}

/// A loaded, configured adapter. Cheap to clone; clones share the instance
/// pool. Calls may run concurrently.
#[derive(Clone)]
pub struct Adapter {
    inner: Arc<AdapterInner>,
}

impl std::fmt::Debug for Adapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Adapter")
            .field("name", &self.inner.identity.name)
            .field("kind", &self.inner.info.kind)
            .finish_non_exhaustive()
    }
}

impl Adapter {
    pub(crate) fn new(inner: AdapterInner) -> Self {
        let inner = Arc::new(inner);
        inner.metrics.register(&inner);
        Adapter { inner }
    }

    /// The metrics of the host that loaded this adapter, every adapter it
    /// holds included, as OpenMetrics text ([`crate::Host::metrics`]).
    pub fn metrics(&self) -> String {
        self.inner.metrics.encode()
    }

    /// The name it is known by in logs.
    pub fn name(&self) -> &str {
        &self.inner.identity.name
    }

    /// Who it is, as it said at load.
    pub fn kind_info(&self) -> &KindInfo {
        &self.inner.info
    }

    /// Its world, contract version, imports and exports.
    pub fn shape(&self) -> &ComponentShape {
        &self.inner.shape
    }

    /// The SHA-256 of the component.
    pub fn digest(&self) -> &str {
        &self.inner.digest
    }

    /// Whether it was loaded from the compile cache.
    pub fn cache_outcome(&self) -> CacheOutcome {
        self.inner.cache
    }

    /// Its limits.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Which Kubernetes grants this adapter used, what was denied, and
    /// what the host's limits refused (streams included), since it was
    /// loaded; none without a Kubernetes import.
    pub fn grant_report(&self) -> Option<crate::grants::check::GrantReport> {
        let kube = self.inner.pool.factory.capabilities.kubernetes.as_ref()?;
        let grants = self.inner.grants.kubernetes.as_ref()?;
        let mut report = kube.usage().report(grants);
        let held = self.held_streams();
        report.add_limit_refusals("limits.max_streams", held.refused_streams);
        report.add_limit_refusals("limits.stream_buffer_bytes", held.refused_bytes);
        Some(report)
    }

    /// The Kubernetes requests this adapter asked the host for since it was
    /// loaded, by verb and resource (allowed or denied); none without a
    /// Kubernetes import. Take a snapshot before and after a call and
    /// compare them ([`RequestCounts::since`]) to see what the call sent:
    /// how the conformance suite checks that `observe` writes nothing.
    /// Calls running concurrently on the same adapter are counted together.
    ///
    /// [`RequestCounts::since`]: crate::capability::kubernetes::RequestCounts::since
    pub fn kubernetes_requests(&self) -> Option<crate::capability::kubernetes::RequestCounts> {
        let kube = self.inner.pool.factory.capabilities.kubernetes.as_ref()?;
        Some(kube.requests().snapshot())
    }

    /// The adapter's quarantine, if it is in one: after repeated faults its
    /// calls fail at once with [`CallError::Quarantined`](crate::CallError::Quarantined)
    /// until this ends.
    pub fn quarantine(&self) -> Option<crate::runtime::breaker::Quarantine> {
        self.inner.breaker.quarantine()
    }

    /// What the host holds for the adapter now in streams and their
    /// buffers, against `limits.stream_buffer_bytes` and
    /// `limits.max_streams`, and how many opens those limits refused.
    pub fn held_streams(&self) -> crate::HeldUsage {
        self.inner.pool.factory.held_budget.usage()
    }

    /// Its instances that serve several calls at once, and the calls in
    /// them; none unless it is a 0.2.0 adapter whose
    /// `limits.calls_per_instance` is above one.
    pub fn shared_instances(&self) -> Option<crate::runtime::lanes::SharedUsage> {
        self.inner.lanes.as_ref().map(|l| l.usage())
    }

    /// Configured instances idle in the pool now.
    pub fn idle_instances(&self) -> usize {
        self.inner.pool.idle_count()
    }
}
