//! The call pipeline: every export core calls, on a pooled instance, a
//! dedicated one or an exec session's, runs through [`Adapter::pipeline`]:
//! a span, then the body (admission and a lease, the guarded run, its
//! classification), then the record — the span's outcome and the
//! quarantine's fault count.

use std::future::Future;
use std::time::Instant;

use tracing::Instrument;
use wasmtime::Store;

use super::Adapter;
use crate::bindings::v0_1::exports::pando::runtime::adapter::Guest;
use crate::call::CallContext;
use crate::error::CallError;
use crate::runtime::pool::Lease;
use crate::runtime::runner;
use crate::runtime::state::HostState;
use crate::types::Error;

/// Where a call's instance comes from.
#[derive(Clone, Copy)]
pub(super) enum Instances {
    /// The pool of configured instances.
    Pooled,
    /// A fresh instance from the long-running budget (watch, exec).
    Dedicated,
}

/// Whether a call's instance may serve again afterwards.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum After {
    /// Back to the pool.
    Reuse,
    /// Dropped: it held streams of this call.
    Discard,
}

impl Adapter {
    /// Runs `body` as call `method`: in its span, its outcome recorded in
    /// the span and in the quarantine's fault count.
    pub(super) async fn pipeline<T>(
        &self,
        method: &'static str,
        started: Instant,
        body: impl Future<Output = Result<T, CallError>>,
    ) -> Result<T, CallError> {
        let span = self.span(method);
        // Recorded into through this handle, not `Span::current()`: a
        // disabled span's clone is free, a lookup of the current one is not.
        let record = span.clone();
        async move {
            let result = body.await;
            self.finish(&record, method, &result, started);
            result
        }
        .instrument(span)
        .await
    }

    /// Runs one export on a pooled instance.
    pub(super) async fn call<R>(
        &self,
        ctx: &CallContext,
        method: &'static str,
        after: After,
        f: impl AsyncFnOnce(&Guest, &mut Store<HostState>) -> wasmtime::Result<Result<R, Error>>,
    ) -> Result<R, CallError> {
        let started = Instant::now();
        let default = self.inner.limits.default_timeout;
        let (deadline, timeout) = (ctx.deadline_from(started, default), ctx.timeout(default));
        let cancel = ctx.cancel_token();
        // One clock reading for the deadline and the call's duration.
        self.pipeline(method, started, async {
            let mut lease = self
                .lease(method, Instances::Pooled, deadline, timeout, cancel)
                .await?;
            if after == After::Discard {
                lease.discard_after();
            }
            let r = runner::run_timed(
                lease.instance(),
                &self.inner.identity.name,
                method,
                deadline,
                timeout,
                cancel,
                f,
            )
            .await;
            lease.count_call();
            // Streams the guest opened and kept (in its table, or handed
            // to core) outlive the call: their instance is not pooled, so
            // what it holds goes with it, not into the next call.
            if lease.instance().store.data().holds_anything() {
                lease.discard_after();
            }
            r
        })
        .await
    }

    /// Runs one export on an instance of its own, which the caller gets
    /// back with the result (an exec session keeps it; a watch drops it).
    pub(super) async fn call_dedicated<R>(
        &self,
        ctx: &CallContext,
        method: &'static str,
        f: impl AsyncFnOnce(&Guest, &mut Store<HostState>) -> wasmtime::Result<Result<R, Error>>,
    ) -> Result<(R, Lease), CallError> {
        let started = Instant::now();
        let default = self.inner.limits.default_timeout;
        let (deadline, timeout) = (ctx.deadline_from(started, default), ctx.timeout(default));
        let cancel = ctx.cancel_token();
        self.pipeline(method, started, async {
            let mut lease = self
                .lease(method, Instances::Dedicated, deadline, timeout, cancel)
                .await?;
            let r = runner::run(
                lease.instance(),
                &self.inner.identity.name,
                method,
                deadline,
                cancel,
                f,
            )
            .await?;
            Ok((r, lease))
        })
        .await
    }

    /// The span every call runs in.
    fn span(&self, method: &'static str) -> tracing::Span {
        tracing::info_span!(
            "adapter_call",
            adapter = %self.inner.identity.name,
            method,
            outcome = tracing::field::Empty,
            duration_us = tracing::field::Empty,
        )
    }

    /// An instance for one call, unless the adapter is quarantined.
    async fn lease(
        &self,
        method: &'static str,
        from: Instances,
        deadline: Option<Instant>,
        timeout: Option<std::time::Duration>,
        cancel: &crate::CancellationToken,
    ) -> Result<Lease, CallError> {
        self.inner.breaker.admit(&self.inner.identity.name)?;
        let pool = &self.inner.pool;
        match from {
            Instances::Pooled => pool.lease(method, deadline, timeout, cancel).await,
            Instances::Dedicated => {
                pool.lease_dedicated(method, deadline, timeout, cancel)
                    .await
            }
        }
    }

    /// Records a call's outcome in its span and in the fault record.
    fn finish<R>(
        &self,
        span: &tracing::Span,
        method: &'static str,
        result: &Result<R, CallError>,
        started: Instant,
    ) {
        self.inner.breaker.record(&self.inner.identity.name, result);
        let took = started.elapsed();
        self.inner.metrics.record_call(
            &self.inner.call_handles,
            &self.inner.metrics_label,
            method,
            result.as_ref().map(|_| ()),
            took,
        );
        if !span.is_disabled() {
            span.record("duration_us", took.as_micros() as u64);
            match result {
                Ok(_) => span.record("outcome", "ok"),
                Err(e) => span.record("outcome", e.kind()),
            };
        }
        if let Err(e) = result {
            tracing::debug!(error = %e, "adapter call failed");
        }
    }

    /// Waits for the task writing a call's output into core's writer.
    pub(super) async fn finish_writer(
        &self,
        method: &'static str,
        writer: tokio::task::JoinHandle<std::io::Result<u64>>,
    ) -> Result<u64, CallError> {
        let host_err = |message: String| CallError::Host {
            adapter: self.inner.identity.name.clone(),
            method,
            message,
        };
        match writer.await {
            Ok(Ok(n)) => Ok(n),
            Ok(Err(e)) => Err(host_err(format!(
                "writing the adapter's output failed: {e}"
            ))),
            Err(e) => Err(host_err(format!("the output writer task failed: {e}"))),
        }
    }
}
