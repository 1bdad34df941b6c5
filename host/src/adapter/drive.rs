//! A 0.2.0 call's byte stream after the call has returned.
//!
//! A 0.2.0 adapter returns a `byte-stream` (a log, a snapshot, a command's
//! output) whose bytes its own tasks write after the call: they run only
//! while the store's event loop does. So the call's instance (one of its
//! own, as 0.1.0's long calls have) goes to a task that runs the event loop
//! until the stream is done, its bytes piped into a duplex core reads, its
//! `done` taken as the stream's verdict. Then the instance is dropped: what
//! the adapter's tasks hold goes with it, and nothing of one stream reaches
//! the next call.
//!
//! Core dropping its end cancels the stream: the adapter's writes fail, its
//! `call.cancelled` fires, and the host waits the cancellation grace for it
//! to end before it drops the instance anyway.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, DuplexStream, ReadBuf};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, DropGuard};
use wasmtime::StoreContextMut;
use wasmtime::component::{FutureConsumer, Source};

use super::classify::classify;
use crate::bindings::v0_2_types::ByteStream as GuestBytes;
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

/// Held by each part of the stream the guest can still act on; the driver
/// stops once none is left.
#[derive(Clone)]
struct Alive(#[allow(dead_code)] mpsc::Sender<()>);

/// The `done` future's value, to the driver.
struct DoneSlot {
    tx: Option<oneshot::Sender<Result<(), Error>>>,
    _alive: Alive,
}

impl<D> FutureConsumer<D> for DoneSlot {
    type Item = Result<(), Error>;

    fn poll_consume(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        store: StoreContextMut<D>,
        mut source: Source<'_, Result<(), Error>>,
        _finish: bool,
    ) -> Poll<wasmtime::Result<()>> {
        let this = self.get_mut();
        let mut value = None;
        source.read(store, &mut value)?;
        if let (Some(v), Some(tx)) = (value, this.tx.take()) {
            let _ = tx.send(v);
        }
        Poll::Ready(Ok(()))
    }
}

/// Hands `lease`'s instance, whose call `method` returned `stream`, to a
/// task that runs it until the stream is done.
pub(super) fn drive(
    adapter: &str,
    method: &'static str,
    mut lease: Lease<'static>,
    stream: GuestBytes,
) -> Result<Driven, CallError> {
    lease.discard_after();
    let (host_end, core_end) = tokio::io::duplex(CHUNK);
    let (done_tx, done_rx) = oneshot::channel();
    let (alive, mut none_alive) = mpsc::channel::<()>(1);
    let cancel = CancellationToken::new();
    let host_error = |e: wasmtime::Error| CallError::Host {
        adapter: adapter.into(),
        method,
        message: format!("taking the adapter's stream: {e:#}"),
    };
    {
        let store = &mut lease.instance().store;
        // The stream's phase is a call of its own to the imports and the
        // epoch hook: no deadline (a followed log lasts), cancelled when
        // core drops its end.
        store.data_mut().env.call.begin(None, &cancel);
        store.set_epoch_deadline(1);
        let GuestBytes { bytes, done } = stream;
        bytes
            .pipe(&mut *store, WritePipe::new(host_end, Alive(alive.clone())))
            .map_err(host_error)?;
        done.pipe(
            &mut *store,
            DoneSlot {
                tx: Some(done_tx),
                _alive: Alive(alive),
            },
        )
        .map_err(host_error)?;
    }
    let (verdict_tx, verdict) = oneshot::channel();
    let (name, stop) = (adapter.to_string(), cancel.clone());
    tokio::spawn(async move {
        let inst = lease.instance();
        let ran = inst
            .store
            .run_concurrent(async move |_| {
                tokio::select! {
                    // Every part dropped: the bytes ended, `done` written.
                    _ = none_alive.recv() => {}
                    () = async {
                        stop.cancelled().await;
                        tokio::time::sleep(CANCEL_GRACE).await;
                    } => {}
                }
            })
            .await;
        let stopped = inst.store.data().env.call.stopped;
        inst.store.data_mut().env.call.finish();
        let mut done_rx = done_rx;
        let v = match ran {
            Err(e) => Err(classify(&mut inst.store, &name, method, stopped, None, e)),
            Ok(()) => match done_rx.try_recv() {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(CallError::Adapter(e)),
                Err(_) => Err(CallError::Cancelled {
                    adapter: name.clone(),
                    method,
                }),
            },
        };
        if let Err(e) = &v {
            tracing::debug!(adapter = %name, method, error = %e, "a 0.2.0 stream ended short");
        }
        drop(lease);
        let _ = verdict_tx.send(v);
    });
    Ok(Driven {
        bytes: core_end,
        verdict,
        _cancel: cancel.drop_guard(),
    })
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
                Poll::Ready(v) => v.unwrap_or_else(|_| {
                    Err(CallError::Host {
                        adapter: String::new(),
                        method: "stream",
                        message: "the task driving the adapter's stream ended without a verdict"
                            .into(),
                    })
                }),
            };
            this.verdict = Some(v);
        }
        match &this.verdict {
            Some(Err(e)) => Poll::Ready(Err(std::io::Error::other(e.to_string()))),
            _ => Poll::Ready(Ok(())),
        }
    }
}
