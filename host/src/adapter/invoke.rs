//! The call pipeline. Every guest call the host makes runs through here,
//! top-down: core's calls on a pooled instance, a dedicated one (watch,
//! exec) or an exec session's, and the load's own (instantiate, `info`,
//! `configure`). A call gets a span ([`Adapter::pipeline`]), the
//! quarantine's admission and a lease (an idle instance, or one made by
//! [`create`]), the guarded run ([`run`]), the classification of a failure
//! (`classify.rs`), and the record: the span's outcome, the metrics and the
//! quarantine's fault count.
//!
//! Two mechanisms stop a guest call: the tokio side (a deadline or a
//! cancellation while the guest waits in a host import) and the epoch hook
//! (the same, while the guest computes and never enters the host). Either
//! way the store may be mid-call, so its instance is poisoned and never
//! reused. A third is not ours: the caller dropping the call's future.
//! Nothing runs then, so the instance is marked in-call before the call and
//! unmarked after it, and a lease that ends with the mark set discards it.

use std::future::Future;
use std::pin::{Pin, pin};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use pin_project_lite::pin_project;
use tokio_util::sync::CancellationToken;
use wasmtime::Store;

use super::Adapter;
use super::classify::{classify, deadline_error};
use crate::call::CallContext;
use crate::clock::{Deadline, Stamp};
use crate::error::CallError;
use crate::runtime::instance::{Bindings, Factory, Guest, Instance, either};
use crate::runtime::pool::Lease;
use crate::runtime::state::{CANCEL_GRACE, HostState};
use crate::types::Error;

/// When a call's outcome is known, for the quarantine's count.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Settles {
    /// When the call returns.
    Now,
    /// When the streams it returned are done (a 0.2.0 stream call: the
    /// driver records it).
    WithItsStreams,
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
    ///
    /// `body` comes pinned by the caller, which holds it: an async fn keeps
    /// a future passed by value twice (the argument, and the awaited copy),
    /// and every layer of the call that did so doubled what each call moves
    /// and zeroes (docs/history/benchmarks.md, issue 18's third pass). [`Adapter::call`]
    /// writes these three steps out itself, one async layer fewer on every
    /// pooled call.
    pub(super) async fn pipeline<T>(
        &self,
        method: &'static str,
        started: Stamp,
        settles: Settles,
        body: Pin<&mut impl Future<Output = Result<T, CallError>>>,
    ) -> Result<T, CallError> {
        let span = self.span(method);
        let result = Traced::new(body, &span).await;
        self.finish(&span, method, &result, started, settles);
        result
    }

    /// Runs one export on a pooled instance.
    pub(super) async fn call<R>(
        &self,
        ctx: &CallContext,
        method: &'static str,
        after: After,
        f: impl AsyncFnOnce(Guest<'_>, &mut Store<HostState>) -> wasmtime::Result<Result<R, Error>>,
    ) -> Result<R, CallError> {
        // One clock reading for the deadline and the call's duration, and
        // the deadline left unconverted (`crate::clock`).
        let started = Stamp::now();
        let timeout = ctx.timeout(self.inner.limits.default_timeout);
        let deadline = timeout.map(|t| Deadline::after(started, t));
        let cancel = ctx.cancel_token();
        let body = pin!(async {
            self.inner.breaker.admit(&self.inner.identity.name)?;
            // The hot slot's instance with no lease future made and polled
            // (docs/history/benchmarks.md, "The call's clock"); the full lease else.
            let mut lease = match self.inner.pool.lease_hot() {
                Some(lease) => lease,
                None => self.lease(method, deadline, timeout, cancel).await?,
            };
            if after == After::Discard {
                lease.discard_after();
            }
            // `run_timed`'s steps, written out: not an async layer of its
            // own on the path of every call (docs/history/benchmarks.md, "The
            // call path, counted in instructions").
            let inst = lease.instance();
            inst.in_call = true;
            let Instance {
                store, bindings, ..
            } = &mut *inst;
            let guest = bindings.guest();
            begin(store, deadline, cancel);
            let outcome = race(pin!(f(guest, &mut *store)), deadline, cancel).await;
            let concluded = conclude(
                store,
                &self.inner.identity.name,
                method,
                timeout,
                cancel,
                outcome,
            );
            let r = settle(inst, concluded);
            lease.count_call();
            // Streams the guest opened and kept (in its table, or handed
            // to core) outlive the call: their instance is not pooled, so
            // what it holds goes with it, not into the next call.
            if lease.instance().store.data().holds_anything() {
                lease.discard_after();
            }
            r
        });
        // `pipeline`'s steps, written out for the same reason.
        let span = self.span(method);
        let result = Traced::new(body, &span).await;
        self.finish(&span, method, &result, started, Settles::Now);
        result
    }

    /// Runs one export on an instance of its own, which the caller gets
    /// back with the result (an exec session keeps it; a watch drops it).
    pub(super) async fn call_dedicated<R>(
        &self,
        ctx: &CallContext,
        method: &'static str,
        f: impl AsyncFnOnce(Guest<'_>, &mut Store<HostState>) -> wasmtime::Result<Result<R, Error>>,
    ) -> Result<(R, Lease<'static>), CallError> {
        self.dedicated(ctx, method, Settles::Now, f).await
    }

    /// [`Adapter::call_dedicated`] for a 0.2.0 call whose streams the host
    /// then drives (`drive.rs`): its outcome is theirs, so the call
    /// returning counts toward the quarantine only if it failed.
    pub(super) async fn call_driven<R>(
        &self,
        ctx: &CallContext,
        method: &'static str,
        f: impl AsyncFnOnce(Guest<'_>, &mut Store<HostState>) -> wasmtime::Result<Result<R, Error>>,
    ) -> Result<(R, Lease<'static>), CallError> {
        self.dedicated(ctx, method, Settles::WithItsStreams, f)
            .await
    }

    async fn dedicated<R>(
        &self,
        ctx: &CallContext,
        method: &'static str,
        settles: Settles,
        f: impl AsyncFnOnce(Guest<'_>, &mut Store<HostState>) -> wasmtime::Result<Result<R, Error>>,
    ) -> Result<(R, Lease<'static>), CallError> {
        // A dedicated call makes an instance, tens of microseconds: its
        // deadline is made an `Instant` at once.
        let now = Instant::now();
        let default = self.inner.limits.default_timeout;
        let (deadline, timeout) = (ctx.deadline_from(now, default), ctx.timeout(default));
        let started = Stamp::Instant(now);
        let cancel = ctx.cancel_token();
        let body = pin!(async {
            let mut lease = self
                .lease_dedicated(method, deadline, timeout, cancel)
                .await?;
            let r = run(
                lease.instance(),
                &self.inner.identity.name,
                method,
                deadline,
                cancel,
                f,
            )
            .await?;
            Ok((r, lease))
        });
        self.pipeline(method, started, settles, body).await
    }

    /// The span every call runs in.
    pub(super) fn span(&self, method: &'static str) -> tracing::Span {
        tracing::info_span!(
            "adapter_call",
            adapter = %self.inner.identity.name,
            method,
            outcome = tracing::field::Empty,
            duration_us = tracing::field::Empty,
        )
    }

    /// A pooled instance for one call that the hot slot did not serve (the
    /// caller has admitted it past the quarantine).
    async fn lease(
        &self,
        method: &'static str,
        deadline: Option<Deadline>,
        timeout: Option<Duration>,
        cancel: &CancellationToken,
    ) -> Result<Lease<'_>, CallError> {
        let pool = &self.inner.pool;
        // Boxed: making an instance is the rare path, and its future
        // (instantiate, then configure) inline made every call's future
        // kilobytes larger, moved on every call.
        let make = async || {
            let deadline = deadline.and_then(|d| d.instant());
            Box::pin(create(&pool.factory, deadline, cancel)).await
        };
        pool.lease(method, deadline, timeout, cancel, make).await
    }

    /// A fresh instance of its own for one long-running call (watch,
    /// exec), unless the adapter is quarantined.
    async fn lease_dedicated(
        &self,
        method: &'static str,
        deadline: Option<Instant>,
        timeout: Option<Duration>,
        cancel: &CancellationToken,
    ) -> Result<Lease<'static>, CallError> {
        self.inner.breaker.admit(&self.inner.identity.name)?;
        let pool = &self.inner.pool;
        let make = async || Box::pin(create(&pool.factory, deadline, cancel)).await;
        pool.lease_dedicated(method, deadline, timeout, cancel, make)
            .await
    }

    /// Records a call's outcome in its span and in the fault record.
    pub(super) fn finish<R>(
        &self,
        span: &tracing::Span,
        method: &'static str,
        result: &Result<R, CallError>,
        started: Stamp,
        settles: Settles,
    ) {
        // A failed call's events (the failure, the quarantine it may trip)
        // in the call's span, as the call itself ran ([`Traced`]); a call
        // that succeeded emits none.
        let _entered = result.is_err().then(|| span.enter());
        // A call whose streams are still to run has not succeeded yet: its
        // success would clear the count of the faults its streams had.
        if settles == Settles::Now || result.is_err() {
            self.inner.breaker.record(&self.inner.identity.name, result);
        }
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

/// Instantiates a new, unconfigured instance within the deadline.
pub(crate) async fn instantiate(
    factory: &Factory,
    deadline: Option<Instant>,
    cancel: &CancellationToken,
) -> Result<Instance, CallError> {
    run_bare(
        &factory.identity.name,
        "instantiate",
        factory.store(),
        deadline,
        cancel,
        async |store: &mut Store<HostState>| factory.code.pre.instantiate(store).await,
    )
    .await
}

/// Instantiates and configures a new instance, within the call's deadline.
pub(crate) async fn create(
    factory: &Factory,
    deadline: Option<Instant>,
    cancel: &CancellationToken,
) -> Result<Instance, CallError> {
    let mut inst = instantiate(factory, deadline, cancel).await?;
    configure(factory, &mut inst, deadline, cancel).await?;
    Ok(inst)
}

/// Hands a new instance the configuration the adapter was loaded with.
pub(crate) async fn configure(
    factory: &Factory,
    inst: &mut Instance,
    deadline: Option<Instant>,
    cancel: &CancellationToken,
) -> Result<(), CallError> {
    let config = factory.config.clone();
    run(
        inst,
        &factory.identity.name,
        "configure",
        deadline,
        cancel,
        async move |g, s| either!(g, g => g.call_configure(s, &config).await),
    )
    .await
    .map_err(|e| match e {
        // The configuration was accepted at load; a fresh instance that
        // refuses it is the adapter's fault, not the caller's input.
        CallError::Adapter(a) => CallError::Host {
            adapter: factory.identity.name.clone(),
            method: "configure",
            message: format!(
                "a new instance refused the configuration the adapter was loaded with: {}: {}",
                a.kind(),
                a.message()
            ),
        },
        other => other,
    })
}

pin_project! {
    /// `call`'s result, or `None` when its deadline passes or
    /// [`CANCEL_GRACE`] after its cancellation, whichever is first; the call
    /// is polled first.
    ///
    /// The deadline's timer is made only when the call first waits: most
    /// calls never wait in the host, and making a tokio timer takes (and
    /// later drops) a reference to the runtime's handle, two locked
    /// instructions and a thread-local lookup on every call
    /// (docs/history/benchmarks.md, issue 18).
    ///
    /// A future of its own, not an `async fn`: it borrows the call, which
    /// its caller holds pinned (see [`Adapter::pipeline`]), so it can be
    /// written without `unsafe`, and it is one async layer fewer on every
    /// call.
    pub(super) struct Race<'a, F, C> {
        call: Pin<&'a mut F>,
        deadline: Option<Deadline>,
        #[pin]
        timer: Option<tokio::time::Sleep>,
        // Nothing runs until polled: no waiter is registered with the token.
        #[pin]
        cancelled: C,
    }
}

/// Races `call` against `deadline` and `cancel` ([`Race`]).
pub(super) fn race<'a, F: Future>(
    call: Pin<&'a mut F>,
    deadline: Option<Deadline>,
    cancel: &'a CancellationToken,
) -> Race<'a, F, impl Future<Output = ()> + 'a> {
    Race {
        call,
        deadline,
        timer: None,
        cancelled: cancelled_then_grace(cancel),
    }
}

impl<F: Future, C: Future<Output = ()>> Future for Race<'_, F, C> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Poll::Ready(r) = this.call.as_mut().poll(cx) {
            return Poll::Ready(Some(r));
        }
        // Converted once, on the first wait; past what an `Instant` holds
        // it is no deadline.
        if let Some(at) = this.deadline.take().and_then(|d| d.instant()) {
            this.timer.set(Some(tokio::time::sleep_until(at.into())));
        }
        if let Some(t) = this.timer.as_pin_mut()
            && t.poll(cx).is_ready()
        {
            return Poll::Ready(None);
        }
        this.cancelled.poll(cx).map(|()| None)
    }
}

/// A call's body polled in its span (entered on every poll, as
/// `tracing::Instrument` does), or bare when no subscriber wants the span.
/// It borrows the body, which its caller holds pinned, so it is one async
/// layer fewer than an `async` block around the body.
pub(super) struct Traced<'a, F> {
    body: Pin<&'a mut F>,
    span: &'a tracing::Span,
}

impl<'a, F: Future> Traced<'a, F> {
    pub(super) fn new(body: Pin<&'a mut F>, span: &'a tracing::Span) -> Self {
        Traced { body, span }
    }
}

impl<F: Future> Future for Traced<'_, F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if self.span.is_disabled() {
            return self.body.as_mut().poll(cx);
        }
        let _entered = self.span.enter();
        self.body.as_mut().poll(cx)
    }
}

/// Resolves [`CANCEL_GRACE`] after the token is cancelled.
async fn cancelled_then_grace(cancel: &CancellationToken) {
    cancel.cancelled().await;
    tokio::time::sleep(CANCEL_GRACE).await;
}

/// Runs `f` on a bare store (instantiation), making it an instance.
async fn run_bare(
    adapter: &str,
    method: &'static str,
    mut store: Store<HostState>,
    deadline: Option<Instant>,
    cancel: &CancellationToken,
    f: impl AsyncFnOnce(&mut Store<HostState>) -> wasmtime::Result<Bindings>,
) -> Result<Instance, CallError> {
    let timeout = remaining(deadline);
    let deadline = deadline.map(Deadline::at);
    begin(&mut store, deadline, cancel);
    let outcome = race(pin!(f(&mut store)), deadline, cancel).await;
    match conclude(&mut store, adapter, method, timeout, cancel, outcome) {
        Ok(bindings) => Ok(Instance::new(store, bindings)),
        Err((e, _)) => Err(e),
    }
}

/// How long until `deadline`, for error messages.
fn remaining(deadline: Option<Instant>) -> Option<Duration> {
    deadline.map(|d| d.saturating_duration_since(Instant::now()))
}

/// Runs one export call on an instance. The adapter's own error is passed
/// through; anything else poisons the instance.
pub(crate) async fn run<R>(
    inst: &mut Instance,
    adapter: &str,
    method: &'static str,
    deadline: Option<Instant>,
    cancel: &CancellationToken,
    f: impl AsyncFnOnce(Guest<'_>, &mut Store<HostState>) -> wasmtime::Result<Result<R, Error>>,
) -> Result<R, CallError> {
    let timeout = remaining(deadline);
    let deadline = deadline.map(Deadline::at);
    run_timed(inst, adapter, method, deadline, timeout, cancel, f).await
}

/// [`run`] for a caller that knows the call's timeout already: one clock
/// reading fewer on the path of every ordinary call.
///
/// The guest's future is raced as `f` made it: set-up and conclusion are
/// plain functions around the race, not an async layer with a closure
/// wrapping `f` (each such layer is a future made, polled and dropped on
/// every call; docs/history/benchmarks.md, "The call's clock").
async fn run_timed<R>(
    inst: &mut Instance,
    adapter: &str,
    method: &'static str,
    deadline: Option<Deadline>,
    timeout: Option<Duration>,
    cancel: &CancellationToken,
    f: impl AsyncFnOnce(Guest<'_>, &mut Store<HostState>) -> wasmtime::Result<Result<R, Error>>,
) -> Result<R, CallError> {
    // Cleared below only if this future runs to completion: dropped before
    // that, the instance is left marked and its lease discards it.
    inst.in_call = true;
    let Instance {
        store, bindings, ..
    } = inst;
    let guest = bindings.guest();
    begin(store, deadline, cancel);
    let outcome = race(pin!(f(guest, &mut *store)), deadline, cancel).await;
    let concluded = conclude(store, adapter, method, timeout, cancel, outcome);
    settle(inst, concluded)
}

/// A concluded call's result, its instance unmarked as in a call and
/// poisoned if the call left it unusable.
fn settle<R>(
    inst: &mut Instance,
    concluded: Result<Result<R, Error>, (CallError, bool)>,
) -> Result<R, CallError> {
    inst.in_call = false;
    match concluded {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(CallError::Adapter(e)),
        Err((e, poisoned)) => {
            inst.poisoned |= poisoned;
            Err(e)
        }
    }
}

/// Sets a call up on the store: its deadline and token for the imports and
/// the epoch hook, a clean stderr tail, the epoch deadline.
fn begin(store: &mut Store<HostState>, deadline: Option<Deadline>, cancel: &CancellationToken) {
    store.data_mut().env.call.begin(deadline, cancel);
    // A crash is explained by what this call wrote, not an earlier one's.
    store.data().stderr.clear_tail();
    store.set_epoch_deadline(1);
}

/// Ends a call on the store and classifies a failure; `outcome` is the
/// race's (`None`: the host gave up while the guest waited in an import).
/// The flag says whether the instance must be dropped.
fn conclude<T>(
    store: &mut Store<HostState>,
    adapter: &str,
    method: &'static str,
    timeout: Option<Duration>,
    cancel: &CancellationToken,
    outcome: Option<wasmtime::Result<T>>,
) -> Result<T, (CallError, bool)> {
    let stopped = store.data().env.call.stopped;
    store.data_mut().env.call.finish();

    let err = match outcome {
        Some(Ok(v)) => return Ok(v),
        Some(Err(e)) => e,
        None => {
            let e = if cancel.is_cancelled() {
                CallError::Cancelled {
                    adapter: adapter.into(),
                    method,
                }
            } else {
                deadline_error(adapter, method, timeout)
            };
            return Err((e, true));
        }
    };
    Err((
        classify(store, adapter, method, stopped, timeout, err),
        true,
    ))
}
