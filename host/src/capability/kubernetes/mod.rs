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

mod admission;
mod audit;
mod exec;
pub mod requests;
pub(crate) mod send;
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

/// The largest response body handed to an adapter: a list bigger than this
/// must be paged (`limit`/`continue`).
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
    /// Request bodies' bytes a second (`kubernetes.rate.write_*`).
    pub(crate) write_budget: Arc<ByteBudget>,
    pub(crate) max_body: u64,
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
    type Shared = Option<KubeContext>;
    type Instance = Option<KubeContext>;

    fn refusal(grants: &crate::grants::Grants) -> Option<String> {
        grants.kubernetes.is_none().then(|| {
            "the Kubernetes API, but its grants have no `kubernetes` section; grant what it may \
             reach (docs/grants.md), or load a component that does not import it"
                .to_string()
        })
    }

    fn shared(setup: &super::Setup<'_>) -> Option<KubeContext> {
        let grants = setup.grants.kubernetes.as_ref()?;
        let client = setup.kubernetes?.clone();
        Some(KubeContext::new(client, grants).with_cache(setup.kubernetes_cache.cloned()))
    }

    fn instance(shared: &Option<KubeContext>) -> Option<KubeContext> {
        shared.clone()
    }

    fn add_to_linker<T: super::StoreData>(
        linker: &mut wasmtime::component::Linker<T>,
    ) -> wasmtime::Result<()> {
        use crate::bindings::v0_1::pando::runtime::kubernetes as wit;

        wit::add_to_linker::<T, super::Lend<Self>>(linker, super::view::<T, Self>)
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
            write_budget: Arc::new(ByteBudget::new(
                grants.rate.write_bytes_per_second,
                grants.rate.write_burst_bytes,
            )),
            max_body: grants.max_body_bytes,
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

    /// The requests the adapter asked for so far, by verb and resource.
    pub fn requests(&self) -> &Arc<RequestCounter> {
        &self.requests
    }
}

mod host_impl {
    //! The generated traits, forwarding to [`KubeContext`].

    use wasmtime::component::Resource;
    use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, DynPollable, subscribe};

    use super::{ExecSession, Kubernetes, WatchStream};
    use crate::bindings::v0_1::pando::runtime::kubernetes::{
        ApiError, ExecRequest, Host, HostExecSession, HostWatchStream, LogRequest, Request,
        Response, WatchEnd, WatchEvent, WatchRequest,
    };
    use crate::capability::View;

    /// Races a Kubernetes call against the call's cancellation, so a guest
    /// waiting on the cluster (or on the rate budget) is told `cancelled`
    /// and can return on its own within the host's grace. (At the deadline
    /// the host ends the call itself: there is no grace to return in.)
    ///
    /// A request begun after the cancellation is the guest undoing what the
    /// call started (a trial deleting its namespace, R-097): it runs, bounded
    /// by the grace, as Go's deferred cleanups run on a cancelled context.
    /// The epoch hook still stops the guest once the grace is over, so a
    /// guest that keeps asking gains nothing.
    async fn bounded<T>(
        cancel: tokio_util::sync::CancellationToken,
        fut: impl std::future::Future<Output = Result<T, ApiError>>,
    ) -> Result<T, ApiError> {
        if cancel.is_cancelled() {
            return tokio::time::timeout(crate::capability::env::CANCEL_GRACE, fut)
                .await
                .unwrap_or(Err(ApiError::Cancelled));
        }
        tokio::select! {
            r = fut => r,
            () = cancel.cancelled() => Err(ApiError::Cancelled),
        }
    }

    /// A stream refused over one of the adapter's limits, before anything
    /// was sent.
    fn over_limit(why: String) -> ApiError {
        ApiError::Denied(crate::bindings::v0_1::pando::runtime::kubernetes::Denial {
            message: why,
            missing_grant: "(none: a host limit, `limits.max_streams`, not a grant)".into(),
        })
    }

    fn no_cluster() -> ApiError {
        ApiError::Transport(
            "no cluster is configured for this adapter: the host was given no Kubernetes client \
             (pando-host --kubeconfig, or LoadOptions::kubernetes)"
                .into(),
        )
    }

    impl Host for View<'_, Kubernetes> {
        async fn send(&mut self, request: Request) -> wasmtime::Result<Result<Response, ApiError>> {
            let Some(kube) = self.this.clone() else {
                return Ok(Err(no_cluster()));
            };
            Ok(bounded(
                self.env.call.cancel.clone(),
                kube.send(&self.env.identity.name, request, self.env.call.deadline),
            )
            .await)
        }

        async fn watch(
            &mut self,
            request: WatchRequest,
        ) -> wasmtime::Result<Result<Resource<WatchStream>, ApiError>> {
            let Some(kube) = self.this.clone() else {
                return Ok(Err(no_cluster()));
            };
            let held = match self.env.hold("watch", super::watch::BUFFER_BYTES) {
                Ok(h) => h,
                Err(why) => return Ok(Err(over_limit(why))),
            };
            match bounded(
                self.env.call.cancel.clone(),
                kube.watch(&self.env.identity.name, request),
            )
            .await
            {
                Ok(mut w) => {
                    w.held = Some(held);
                    Ok(Ok(self.env.table.push(w)?))
                }
                Err(e) => Ok(Err(e)),
            }
        }

        async fn logs(
            &mut self,
            request: LogRequest,
        ) -> wasmtime::Result<Result<Resource<DynInputStream>, ApiError>> {
            let Some(kube) = self.this.clone() else {
                return Ok(Err(no_cluster()));
            };
            let held = match self.env.hold("logs", 0) {
                Ok(h) => h,
                Err(why) => return Ok(Err(over_limit(why))),
            };
            match bounded(
                self.env.call.cancel.clone(),
                kube.logs(&self.env.identity.name, request),
            )
            .await
            {
                Ok(s) => {
                    let s: DynInputStream =
                        Box::new(crate::capability::held::HeldStream::new(s, held));
                    Ok(Ok(self.env.table.push(s)?))
                }
                Err(e) => Ok(Err(e)),
            }
        }

        async fn exec(
            &mut self,
            request: ExecRequest,
        ) -> wasmtime::Result<Result<Resource<ExecSession>, ApiError>> {
            let Some(kube) = self.this.clone() else {
                return Ok(Err(no_cluster()));
            };
            let held = match self.env.hold("exec", 0) {
                Ok(h) => h,
                Err(why) => return Ok(Err(over_limit(why))),
            };
            match bounded(
                self.env.call.cancel.clone(),
                kube.exec(&self.env.identity.name, request),
            )
            .await
            {
                Ok(mut s) => {
                    s.held = Some(held);
                    Ok(Ok(self.env.table.push(s)?))
                }
                Err(e) => Ok(Err(e)),
            }
        }
    }

    impl HostWatchStream for View<'_, Kubernetes> {
        async fn subscribe(
            &mut self,
            w: Resource<WatchStream>,
        ) -> wasmtime::Result<Resource<DynPollable>> {
            subscribe(&mut self.env.table, w)
        }

        async fn next(
            &mut self,
            w: Resource<WatchStream>,
        ) -> wasmtime::Result<Result<WatchEvent, WatchEnd>> {
            let cancel = self.env.call.cancel.clone();
            let w = self.env.table.get_mut(&w)?;
            Ok(w.next(&cancel).await)
        }

        async fn try_next(
            &mut self,
            w: Resource<WatchStream>,
        ) -> wasmtime::Result<Result<Option<WatchEvent>, WatchEnd>> {
            Ok(self.env.table.get_mut(&w)?.try_next())
        }

        async fn drop(&mut self, w: Resource<WatchStream>) -> wasmtime::Result<()> {
            self.env.table.delete(w)?;
            Ok(())
        }
    }

    impl HostExecSession for View<'_, Kubernetes> {
        async fn stdin(
            &mut self,
            s: Resource<ExecSession>,
        ) -> wasmtime::Result<Option<Resource<DynOutputStream>>> {
            let taken = self.env.table.get_mut(&s)?.stdin.take();
            Ok(match taken {
                Some(out) => Some(self.env.table.push(out)?),
                None => None,
            })
        }

        async fn stdout(
            &mut self,
            s: Resource<ExecSession>,
        ) -> wasmtime::Result<Option<Resource<DynInputStream>>> {
            let taken = self.env.table.get_mut(&s)?.stdout.take();
            Ok(match taken {
                Some(inp) => Some(self.env.table.push(inp)?),
                None => None,
            })
        }

        async fn stderr(
            &mut self,
            s: Resource<ExecSession>,
        ) -> wasmtime::Result<Option<Resource<DynInputStream>>> {
            let taken = self.env.table.get_mut(&s)?.stderr.take();
            Ok(match taken {
                Some(inp) => Some(self.env.table.push(inp)?),
                None => None,
            })
        }

        async fn resize(
            &mut self,
            s: Resource<ExecSession>,
            cols: u16,
            rows: u16,
        ) -> wasmtime::Result<Result<(), ApiError>> {
            Ok(self.env.table.get_mut(&s)?.resize(cols, rows).await)
        }

        async fn subscribe(
            &mut self,
            s: Resource<ExecSession>,
        ) -> wasmtime::Result<Resource<DynPollable>> {
            subscribe(&mut self.env.table, s)
        }

        async fn wait(
            &mut self,
            s: Resource<ExecSession>,
        ) -> wasmtime::Result<Result<i32, ApiError>> {
            Ok(self.env.table.get_mut(&s)?.wait().await)
        }

        async fn drop(&mut self, s: Resource<ExecSession>) -> wasmtime::Result<()> {
            self.env.table.delete(s)?;
            Ok(())
        }
    }
}
