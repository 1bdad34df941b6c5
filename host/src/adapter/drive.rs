//! A 0.2.0 call's streams and futures after the call has returned.
//!
//! A 0.2.0 adapter returns a `byte-stream` (a log, a snapshot, a command's
//! output), an `exec-session` or a `bundle-watch` whose bytes, events and
//! outcome its own tasks write after the call: they run only while the
//! store's event loop does. So the call's instance (one of its own, as
//! 0.1.0's long calls have) goes to a [`Driver`]: each stream is piped out
//! (bytes into a duplex core reads, items into core's channel), each future
//! into a slot, and a task runs the event loop until every part is done.
//! Then the instance is dropped: what the adapter's tasks hold goes with
//! it, and nothing of one stream reaches the next call.
//!
//! Core dropping its end cancels the stream: the adapter's writes fail, its
//! `call.cancelled` fires, and the host waits the cancellation grace for it
//! to end before it drops the instance anyway.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, DuplexStream, ReadBuf};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::PollSender;
use tokio_util::sync::{CancellationToken, DropGuard};
use wasmtime::StoreContextMut;
use wasmtime::component::{
    FutureConsumer, FutureReader, Lift, Source, StreamConsumer, StreamReader, StreamResult,
};

use super::Adapter;
use super::classify::classify;
use crate::bindings::v0_2_types::ByteStream as GuestBytes;
use crate::call::CallContext;
use crate::capability::env::CANCEL_GRACE;
use crate::error::CallError;
use crate::pipes::{CHUNK, WritePipe};
use crate::runtime::pool::Lease;
use crate::types::Error;

/// How a driven stream ended: whole, or the adapter's error (its `done`),
/// or the host's (a trap, the adapter dropping `done` unwritten).
pub(super) type Verdict = Result<(), CallError>;

/// A driven stream, as core reads it: its bytes and, once they end, its
/// verdict. Dropping it cancels the stream.
pub(super) struct Driven {
    pub(super) bytes: DuplexStream,
    pub(super) verdict: oneshot::Receiver<Verdict>,
    pub(super) _cancel: DropGuard,
}

/// Held by each part of the streams the guest can still act on; the driver
/// stops once none is left.
#[derive(Clone)]
struct Alive {
    _guard: mpsc::Sender<()>,
}

/// A future's value, to whoever waits for it; `arrived` is fired as it
/// comes (an exec's resize stream ends with its exit).
struct ValueSlot<T> {
    tx: Option<oneshot::Sender<T>>,
    arrived: Option<CancellationToken>,
    _alive: Alive,
}

impl<D, T: Lift + Send + Sync + 'static> FutureConsumer<D> for ValueSlot<T> {
    type Item = T;

    fn poll_consume(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        store: StoreContextMut<D>,
        mut source: Source<'_, T>,
        _finish: bool,
    ) -> Poll<wasmtime::Result<()>> {
        let this = self.get_mut();
        let mut value = None;
        source.read(store, &mut value)?;
        if let (Some(v), Some(tx)) = (value, this.tx.take()) {
            let _ = tx.send(v);
        }
        if let Some(arrived) = this.arrived.take() {
            arrived.cancel();
        }
        Poll::Ready(Ok(()))
    }
}

/// Items the guest writes into a stream, sent on to core's channel one by
/// one: a reader that does not read slows the writer, memory stays bounded.
struct ChannelPipe<T: Send + 'static> {
    tx: PollSender<T>,
    _alive: Alive,
}

impl<D, T: Lift + Send + 'static> StreamConsumer<D> for ChannelPipe<T> {
    type Item = T;

    fn poll_consume(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut store: StoreContextMut<D>,
        mut source: Source<'_, T>,
        finish: bool,
    ) -> Poll<wasmtime::Result<StreamResult>> {
        let this = self.get_mut();
        if source.remaining(&mut store) == 0 {
            return Poll::Ready(Ok(StreamResult::Completed));
        }
        match this.tx.poll_reserve(cx) {
            Poll::Ready(Ok(())) => {}
            // Core stopped receiving: the guest's writes end.
            Poll::Ready(Err(_)) => return Poll::Ready(Ok(StreamResult::Dropped)),
            Poll::Pending if finish => return Poll::Ready(Ok(StreamResult::Cancelled)),
            Poll::Pending => return Poll::Pending,
        }
        let mut item = None;
        source.read(&mut store, &mut item)?;
        Poll::Ready(Ok(match item.map(|i| this.tx.send_item(i)) {
            Some(Err(_)) => StreamResult::Dropped,
            _ => StreamResult::Completed,
        }))
    }
}

/// An instance whose call returned streams or futures, being set up to run
/// its tasks until they are done.
pub(super) struct Driver {
    adapter: Adapter,
    method: &'static str,
    lease: Lease<'static>,
    alive: Alive,
    none_alive: mpsc::Receiver<()>,
    cancel: CancellationToken,
}

impl Driver {
    /// Takes `lease`'s instance, whose call `method` has returned. The
    /// phase that follows is a call of its own to the imports and the
    /// epoch hook: no deadline (a followed log lasts), cancelled when core
    /// drops what it holds.
    pub(super) fn new(adapter: &Adapter, method: &'static str, mut lease: Lease<'static>) -> Self {
        lease.discard_after();
        let cancel = CancellationToken::new();
        let store = &mut lease.instance().store;
        store.data_mut().env.call.begin(None, &cancel);
        store.set_epoch_deadline(1);
        let (alive, none_alive) = mpsc::channel::<()>(1);
        Driver {
            adapter: adapter.clone(),
            method,
            lease,
            alive: Alive { _guard: alive },
            none_alive,
            cancel,
        }
    }

    fn host_error(&self, e: wasmtime::Error) -> CallError {
        CallError::Host {
            adapter: self.adapter.inner.identity.name.clone(),
            method: self.method,
            message: format!("taking the adapter's stream: {e:#}"),
        }
    }

    /// The bytes the guest writes into `stream`, as a duplex end core
    /// reads.
    pub(super) fn bytes(&mut self, stream: StreamReader<u8>) -> Result<DuplexStream, CallError> {
        // 1 MiB, what 0.1.0's channel to core's writer holds at most: each
        // time it fills is a hand-off between the driving task and core's
        // reader, and at 64 KiB a 0.2.0 snapshot ran at 0.74x a 0.1.0 one,
        // at 256 KiB 0.79-0.95x, at 1 MiB 0.96-1.00x (the `versions` bench).
        let (host_end, core_end) = tokio::io::duplex(16 * CHUNK);
        let pipe = WritePipe::new(host_end, self.alive.clone());
        stream
            .pipe(&mut self.lease.instance().store, pipe)
            .map_err(|e| self.host_error(e))?;
        Ok(core_end)
    }

    /// The items the guest writes into `stream`, sent on `tx`.
    pub(super) fn items<T: Lift + Send + 'static>(
        &mut self,
        stream: StreamReader<T>,
        tx: mpsc::Sender<T>,
    ) -> Result<(), CallError> {
        let pipe = ChannelPipe {
            tx: PollSender::new(tx),
            _alive: self.alive.clone(),
        };
        stream
            .pipe(&mut self.lease.instance().store, pipe)
            .map_err(|e| self.host_error(e))
    }

    /// The value the guest writes into `future`; `arrived` is fired as it
    /// comes.
    pub(super) fn value<T: Lift + Send + Sync + 'static>(
        &mut self,
        future: FutureReader<T>,
        arrived: Option<CancellationToken>,
    ) -> Result<oneshot::Receiver<T>, CallError> {
        let (tx, rx) = oneshot::channel();
        let slot = ValueSlot {
            tx: Some(tx),
            arrived,
            _alive: self.alive.clone(),
        };
        future
            .pipe(&mut self.lease.instance().store, slot)
            .map_err(|e| self.host_error(e))?;
        Ok(rx)
    }

    /// Runs the instance's tasks until every part is done or, once core has
    /// let go (the guard dropped), the cancellation grace is over; then
    /// drops the instance. The outcome is `outcome`'s value: the guest's
    /// own error passed through, a trap or a value never written the
    /// host's. A trap counts toward the adapter's quarantine as one in a
    /// call does.
    pub(super) fn spawn<T: Send + 'static>(
        self,
        outcome: oneshot::Receiver<Result<T, Error>>,
    ) -> (oneshot::Receiver<Result<T, CallError>>, DropGuard) {
        let Driver {
            adapter,
            method,
            mut lease,
            alive,
            mut none_alive,
            cancel,
        } = self;
        drop(alive);
        let (tx, rx) = oneshot::channel();
        let stop = cancel.clone();
        tokio::spawn(async move {
            let inst = lease.instance();
            let ran = inst
                .store
                .run_concurrent(async move |_| {
                    tokio::select! {
                        // Every part dropped: the streams ended, the
                        // futures written.
                        _ = none_alive.recv() => {}
                        () = async {
                            stop.cancelled().await;
                            tokio::time::sleep(CANCEL_GRACE).await;
                        } => {}
                    }
                })
                .await;
            let name = &adapter.inner.identity.name;
            let stopped = inst.store.data().env.call.stopped;
            inst.store.data_mut().env.call.finish();
            let mut outcome = outcome;
            let v = match ran {
                Err(e) => Err(classify(&mut inst.store, name, method, stopped, None, e)),
                Ok(()) => match outcome.try_recv() {
                    Ok(Ok(v)) => Ok(v),
                    Ok(Err(e)) => Err(CallError::Adapter(e)),
                    Err(_) => Err(CallError::Cancelled {
                        adapter: name.clone(),
                        method,
                    }),
                },
            };
            adapter.inner.breaker.record(name, &v);
            if let Err(e) = &v {
                tracing::debug!(adapter = %name, method, error = %e, "a 0.2.0 stream ended short");
            }
            drop(lease);
            let _ = tx.send(v);
        });
        (rx, cancel.drop_guard())
    }
}

/// Hands `lease`'s instance, whose call `method` returned `stream`, to a
/// task that runs it until the stream is done.
pub(super) fn drive(
    adapter: &Adapter,
    method: &'static str,
    lease: Lease<'static>,
    stream: GuestBytes,
) -> Result<Driven, CallError> {
    let mut driver = Driver::new(adapter, method, lease);
    let GuestBytes { bytes, done } = stream;
    let bytes = driver.bytes(bytes)?;
    let done = driver.value(done, None)?;
    let (verdict, cancel) = driver.spawn(done);
    Ok(Driven {
        bytes,
        verdict,
        _cancel: cancel,
    })
}

/// The error when the task driving an instance ended without sending what
/// it drove to (it panicked, or the runtime is shutting down).
pub(super) fn driver_lost(adapter: &str, method: &'static str, what: &str) -> CallError {
    CallError::Host {
        adapter: adapter.into(),
        method,
        message: format!("the task driving the adapter's {what} ended without its outcome"),
    }
}

/// Why core stopped waiting on a driven instance.
pub(super) enum Stopped {
    /// The call's token was cancelled.
    Cancelled,
    /// The call's deadline passed.
    PastDeadline,
}

impl Stopped {
    /// The call's error for it.
    pub(super) fn error(
        self,
        adapter: &str,
        method: &'static str,
        ctx: &CallContext,
        default: Duration,
    ) -> CallError {
        match self {
            Stopped::Cancelled => CallError::Cancelled {
                adapter: adapter.into(),
                method,
            },
            Stopped::PastDeadline => CallError::DeadlineExceeded {
                adapter: adapter.into(),
                method,
                timeout: ctx.timeout(default).unwrap_or_default(),
            },
        }
    }
}

/// `work`, within `ctx`'s cancellation and deadline (`default` when it
/// sets none): what a call that waits on a driven instance (a snapshot's
/// copy, a session's exit, a watch's end) waits for, bounded as any call.
pub(super) async fn within<T>(
    ctx: &CallContext,
    default: Duration,
    work: impl Future<Output = T>,
) -> Result<T, Stopped> {
    let past_deadline = async {
        match ctx.deadline(default) {
            Some(at) => tokio::time::sleep_until(at.into()).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        r = work => Ok(r),
        () = ctx.cancel_token().cancelled() => Err(Stopped::Cancelled),
        () = past_deadline => Err(Stopped::PastDeadline),
    }
}

/// A driven stream as one reader: its bytes, then at their end the verdict
/// (an error if the stream was not whole).
pub(super) struct WholeReader {
    driven: Driven,
    verdict: Option<Verdict>,
}

impl WholeReader {
    pub(super) fn new(driven: Driven) -> Self {
        WholeReader {
            driven,
            verdict: None,
        }
    }
}

impl AsyncRead for WholeReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.driven.bytes).poll_read(cx, buf) {
            Poll::Ready(Ok(())) if buf.filled().len() == before => {}
            other => return other,
        }
        if this.verdict.is_none() {
            let v = match Pin::new(&mut this.driven.verdict).poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(v) => v.unwrap_or_else(|_| Err(driver_lost("", "stream", "stream"))),
            };
            this.verdict = Some(v);
        }
        match &this.verdict {
            Some(Err(e)) => Poll::Ready(Err(std::io::Error::other(e.to_string()))),
            _ => Poll::Ready(Ok(())),
        }
    }
}
