//! The generated traits of `pando:runtime/kubernetes`, forwarding to
//! [`KubeContext`](super::KubeContext).

use std::sync::Arc;

use wasmtime::component::Resource;
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, DynPollable, subscribe};

use super::audit::Audit;
use super::{ExecSession, KubeContext, Kubernetes, WatchStream};
use crate::bindings::v0_1::pando::runtime::kubernetes::{
    ApiError, ExecRequest, Host, HostExecSession, HostWatchStream, LogRequest, Request, Response,
    WatchEnd, WatchEvent, WatchRequest,
};
use crate::capability::View;
use crate::capability::env::Identity;
use crate::capability::held::{Held, HeldStream, READ_AHEAD};

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
pub(super) async fn bounded<T>(
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
pub(super) fn over_limit(why: String) -> ApiError {
    ApiError::Denied(crate::bindings::v0_1::pando::runtime::kubernetes::Denial {
        message: why,
        missing_grant: "(none: a host limit, `limits.max_streams`, not a grant)".into(),
    })
}

pub(super) fn no_cluster() -> ApiError {
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
        let (adapter, deadline) = (&self.env.identity.name, self.env.call.deadline());
        let send = async {
            let path = request.path.clone();
            let audit = Audit::start(&kube.denial_runs, adapter, "send", &path);
            // The admission (`admission.rs`): the body cap, parse, count, the
            // grant decision; then what an admitted request takes
            // (`send.rs`): the cache, the budgets, the object rules, the
            // exchange.
            let parsed = kube.admit_send(&audit, &request).await?;
            kube.send(&audit, parsed, request, deadline).await
        };
        Ok(bounded(self.env.call.cancel.clone(), send).await)
    }

    async fn watch(
        &mut self,
        request: WatchRequest,
    ) -> wasmtime::Result<Result<Resource<WatchStream>, ApiError>> {
        self.open_held(
            "watch",
            super::watch::BUFFER_BYTES,
            async |kube, adapter| kube.watch(&adapter.name, request).await,
            |mut w, held| {
                w.held = Some(held);
                w
            },
        )
        .await
    }

    async fn logs(
        &mut self,
        request: LogRequest,
    ) -> wasmtime::Result<Result<Resource<DynInputStream>, ApiError>> {
        // A log holds nothing of its own but wasmtime-wasi's read-ahead.
        self.open_held(
            "logs",
            READ_AHEAD,
            async |kube, adapter| kube.logs(&adapter.name, request).await,
            |s, held| -> DynInputStream { Box::new(HeldStream::new(s, held)) },
        )
        .await
    }

    async fn exec(
        &mut self,
        request: ExecRequest,
    ) -> wasmtime::Result<Result<Resource<ExecSession>, ApiError>> {
        self.open_held(
            "exec",
            super::exec::held_bytes(&request),
            async |kube, adapter| kube.exec(&adapter.name, request).await,
            |mut s, held| {
                s.held = Some(held);
                s
            },
        )
        .await
    }
}

impl View<'_, Kubernetes> {
    /// Opens a stream or session the adapter holds until it drops it: within
    /// the adapter's stream budget (`what` takes `bytes` of it), raced
    /// against the call's cancellation, into the store's table.
    async fn open_held<R, S: Send + 'static>(
        &mut self,
        what: &'static str,
        bytes: u64,
        open: impl AsyncFnOnce(Arc<KubeContext>, Arc<Identity>) -> Result<R, ApiError>,
        keep: impl FnOnce(R, Held) -> S,
    ) -> wasmtime::Result<Result<Resource<S>, ApiError>> {
        let Some(kube) = self.this.clone() else {
            return Ok(Err(no_cluster()));
        };
        let held = match self.env.hold(what, bytes) {
            Ok(h) => h,
            Err(why) => return Ok(Err(over_limit(why))),
        };
        let adapter = Arc::clone(&self.env.identity);
        match bounded(self.env.call.cancel.clone(), open(kube, adapter)).await {
            Ok(r) => Ok(Ok(self.env.table.push(keep(r, held))?)),
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

    async fn wait(&mut self, s: Resource<ExecSession>) -> wasmtime::Result<Result<i32, ApiError>> {
        Ok(self.env.table.get_mut(&s)?.wait().await)
    }

    async fn drop(&mut self, s: Resource<ExecSession>) -> wasmtime::Result<()> {
        self.env.table.delete(s)?;
        Ok(())
    }
}
