//! `pando:runtime/kubernetes`: the Kubernetes API, as far as the grants
//! reach.
//!
//! Every request, watch, log and exec goes the same way, through one
//! admission (`admission.rs`: parse and canonicalize the path with
//! `grants::request`, count it, check it against the adapter's grants with
//! `grants::check`, the PV claim check, the usage record, the audit of a
//! refusal), then the rate budget, send it on the host's
//! `kube::Client` (its credentials, TLS and protocols: no HTTP of our own),
//! and audit the outcome. A denial never reaches the API server. A write
//! is also checked for what it would produce, against the object rules
//! (`writes`, `grants::objects`).

pub(crate) mod admission;
mod audit;
mod ceiling;
mod cut;
mod exec;
mod lend;
mod managed_fields;
mod redact;
pub mod requests;
pub(crate) mod send;
mod v0_2;
mod watch;
mod writes;

use std::sync::Arc;

use crate::capability::ratelimit::{ByteBudget, RateLimiter};
use crate::grants::KubernetesGrants;
use crate::grants::check::{Checker, GrantUsage};
use crate::grants::objects::ObjectPolicy;

pub(crate) use admission::denial_message;
pub use exec::ExecSession;
pub use requests::{RequestCounter, RequestCounts, RequestKind};
pub use watch::WatchStream;

/// The largest response body handed to an adapter by default
/// (`limits.max_response_bytes`): a list bigger than this must be paged
/// (`limit`/`continue`).
pub const MAX_RESPONSE_BYTES: usize = 64 << 20;

/// What an adapter's instances share to reach the cluster.
#[derive(Clone)]
pub struct KubeContext {
    pub(crate) client: kube::Client,
    pub(crate) checker: Arc<Checker>,
    pub(crate) usage: Arc<GrantUsage>,
    /// Every request the adapter asked for, by verb and resource.
    pub(crate) requests: Arc<RequestCounter>,
    pub(crate) limiter: Arc<RateLimiter>,
    /// Reads the watch-fed cache answers (`kubernetes.rate.cache_reads_*`).
    pub(crate) cache_limiter: Arc<RateLimiter>,
    /// Request bodies' bytes a second (`kubernetes.rate.write_*`).
    pub(crate) write_budget: Arc<ByteBudget>,
    /// Request bodies' bytes an hour
    /// (`kubernetes.rate.write_bytes_per_hour`).
    pub(crate) write_hour: Arc<ByteBudget>,
    /// The ceilings written into each namespace the adapter makes.
    pub(crate) ceilings: Arc<[crate::grants::ceilings::Ceiling]>,
    /// What the adapter is shown of objects outside its own namespaces.
    pub(crate) redaction: Arc<redact::Redaction>,
    /// The cache's answers, audited in aggregate.
    pub(crate) cache_hits: Arc<audit::CacheHits>,
    pub(crate) max_body: u64,
    /// The largest response body handed on (`limits.max_response_bytes`).
    pub(crate) max_response: usize,
    /// What written objects may contain.
    pub(crate) objects: Arc<ObjectPolicy>,
    /// The watch-fed cache reads may be answered from, if any.
    pub(crate) cache: Option<Arc<crate::kubecache::WatchCache>>,
    /// The adapter's run of identical refusals, for the audit trail.
    pub(crate) denial_runs: Arc<audit::DenialRuns>,
}

impl std::fmt::Debug for KubeContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeContext").finish_non_exhaustive()
    }
}

/// `pando:runtime/kubernetes`: lent to an adapter whose grants have a
/// `kubernetes` section and whose host was given a client; every instance
/// shares the one [`KubeContext`].
pub(crate) struct Kubernetes;

impl super::Capability for Kubernetes {
    const INTERFACES: &'static [&'static str] = &["kubernetes"];
    // Behind an `Arc`: each request takes its own handle on the context
    // (the guest's call holds the store mutably across the request's
    // awaits), and one reference count is cheaper than cloning the client
    // and the dozen handles the context is made of.
    type Shared = Option<Arc<KubeContext>>;
    type Instance = Option<Arc<KubeContext>>;

    fn refusal(grants: &crate::grants::Grants) -> Option<String> {
        grants.kubernetes.is_none().then(|| {
            "the Kubernetes API, but its grants have no `kubernetes` section; grant what it may \
             reach (docs/grants.md), or load a component that does not import it"
                .to_string()
        })
    }

    fn shared(setup: &super::Setup<'_>) -> Option<Arc<KubeContext>> {
        let grants = setup.grants.kubernetes.as_ref()?;
        let client = setup.kubernetes?.clone();
        Some(Arc::new(
            KubeContext::new(client, grants)
                .with_cache(setup.kubernetes_cache.cloned())
                .with_max_response(setup.limits.max_response_bytes),
        ))
    }

    fn instance(shared: &Option<Arc<KubeContext>>) -> Option<Arc<KubeContext>> {
        shared.clone()
    }

    fn add_to_linker<T: super::StoreData>(
        linker: &mut wasmtime::component::Linker<T>,
    ) -> wasmtime::Result<()> {
        use crate::bindings::v0_1::pando::runtime::kubernetes as wit;

        wit::add_to_linker::<T, super::Lend<Self>>(linker, super::view::<T, Self>)
    }

    fn add_to_linker_v0_2<T: super::StoreData>(
        linker: &mut wasmtime::component::Linker<T>,
    ) -> wasmtime::Result<()> {
        v0_2::add_to_linker(linker)
    }
}

impl KubeContext {
    /// A context reaching the cluster with `client`, within `grants`.
    pub fn new(client: kube::Client, grants: &KubernetesGrants) -> Self {
        KubeContext {
            client,
            checker: Arc::new(Checker::new(grants)),
            usage: Arc::new(GrantUsage::default()),
            requests: Arc::new(RequestCounter::default()),
            limiter: Arc::new(RateLimiter::new(grants.rate.qps, grants.rate.burst)),
            cache_limiter: Arc::new(RateLimiter::new(
                grants.rate.cache_reads_per_second,
                grants.rate.cache_read_burst,
            )),
            write_budget: Arc::new(ByteBudget::new(
                grants.rate.write_bytes_per_second,
                grants.rate.write_burst_bytes,
            )),
            write_hour: Arc::new(ByteBudget::per_hour(grants.rate.write_bytes_per_hour)),
            ceilings: grants.ceilings.clone().into(),
            redaction: Arc::new(redact::Redaction::new(&grants.read_masks)),
            cache_hits: Arc::new(audit::CacheHits::default()),
            max_body: grants.max_body_bytes,
            max_response: MAX_RESPONSE_BYTES,
            objects: Arc::new(ObjectPolicy::new(&grants.objects)),
            cache: None,
            denial_runs: Arc::new(audit::DenialRuns::default()),
        }
    }

    /// Which grants were used, and which requests were denied, so far.
    pub fn usage(&self) -> &Arc<GrantUsage> {
        &self.usage
    }

    /// Answers the reads the cache can from it (see [`crate::kubecache`]).
    pub fn with_cache(mut self, cache: Option<Arc<crate::kubecache::WatchCache>>) -> Self {
        self.cache = cache;
        self
    }

    /// Hands on response bodies of at most `bytes`, live or cached.
    pub fn with_max_response(mut self, bytes: u64) -> Self {
        self.max_response = usize::try_from(bytes).unwrap_or(usize::MAX);
        self
    }

    /// The requests the adapter asked for so far, by verb and resource.
    pub fn requests(&self) -> &Arc<RequestCounter> {
        &self.requests
    }
}
