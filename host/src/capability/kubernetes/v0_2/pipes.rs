//! The host's ends of the Kubernetes import's streams that carry more than
//! bytes (the byte streams are `crate::pipes`'): a `stream<terminal-size>`
//! as the terminal's sizes, a watch as a `stream<watch-event>`; and what
//! the parts of one stream or session keep alive ([`Keep`]). Nothing here
//! returns an error to wasmtime, which would trap the guest: how a stream
//! ended goes into its companion future.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::Sink;
use tokio::sync::oneshot;
use tokio_util::sync::WaitForCancellationFutureOwned;
use wasmtime::StoreContextMut;
use wasmtime::component::{Destination, Source, StreamConsumer, StreamProducer, StreamResult};

use crate::bindings::v0_1::pando::runtime::kubernetes as v1;
use crate::bindings::v0_2::pando::runtime::kubernetes as v2;
use crate::capability::held::Held;
use crate::capability::kubernetes::WatchStream;
use crate::capability::kubernetes::exec::Exit;

/// What the parts of one stream or session keep alive between them: its
/// place in the adapter's budget and, for a session, its connection. The
/// last part dropped (by the guest or at the instance's end) gives both
/// back.
#[derive(Clone)]
pub(crate) struct Keep {
    _kept: Arc<Mutex<(Option<Held>, Option<Exit>)>>,
}

impl Keep {
    pub(crate) fn new(held: Option<Held>, exit: Option<Exit>) -> Self {
        Keep {
            _kept: Arc::new(Mutex::new((held, exit))),
        }
    }
}

/// The answer of a log's `done` future: how its byte stream ended.
pub(crate) async fn done(rx: oneshot::Receiver<Result<(), String>>) -> Result<(), v2::ApiError> {
    match rx.await {
        Ok(r) => r.map_err(v2::ApiError::Transport),
        Err(_) => Err(v2::ApiError::Transport(
            "the stream was closed before its end".into(),
        )),
    }
}

/// The terminal's sizes, as the guest writes them, sent to the session's
/// terminal one by one.
pub(crate) struct ResizePipe {
    pub(crate) tx: futures::channel::mpsc::Sender<kube::api::TerminalSize>,
    pub(crate) _keep: Keep,
}

impl<D> StreamConsumer<D> for ResizePipe {
    type Item = v2::TerminalSize;

    fn poll_consume(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut store: StoreContextMut<D>,
        mut src: Source<v2::TerminalSize>,
        finish: bool,
    ) -> Poll<wasmtime::Result<StreamResult>> {
        let this = self.get_mut();
        if src.remaining(&mut store) == 0 {
            return Poll::Ready(Ok(StreamResult::Completed));
        }
        match Pin::new(&mut this.tx).poll_ready(cx) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(_)) => return Poll::Ready(Ok(StreamResult::Dropped)),
            Poll::Pending if finish => return Poll::Ready(Ok(StreamResult::Cancelled)),
            Poll::Pending => return Poll::Pending,
        }
        let mut size: Option<v2::TerminalSize> = None;
        src.read(&mut store, &mut size)?;
        let Some(size) = size else {
            return Poll::Ready(Ok(StreamResult::Completed));
        };
        let sent = Pin::new(&mut this.tx).start_send(kube::api::TerminalSize {
            width: size.cols,
            height: size.rows,
        });
        Poll::Ready(Ok(if sent.is_ok() {
            StreamResult::Completed
        } else {
            StreamResult::Dropped
        }))
    }
}

/// A watch, as a `stream<watch-event>` the guest reads. Its end goes to
/// the watch's future; the call's cancellation ends it `failed(cancelled)`,
/// as 0.1.0's `next` does.
pub(crate) struct WatchPipe {
    pub(crate) watch: WatchStream,
    pub(crate) cancel: Pin<Box<WaitForCancellationFutureOwned>>,
    pub(crate) end: Option<oneshot::Sender<v1::WatchEnd>>,
}

impl WatchPipe {
    fn end(&mut self, end: v1::WatchEnd) -> Poll<wasmtime::Result<StreamResult>> {
        if let Some(tx) = self.end.take() {
            let _ = tx.send(end);
        }
        Poll::Ready(Ok(StreamResult::Dropped))
    }
}

impl<D> StreamProducer<D> for WatchPipe {
    type Item = v2::WatchEvent;
    type Buffer = Option<v2::WatchEvent>;

    fn poll_produce<'a>(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut store: StoreContextMut<'a, D>,
        mut dst: Destination<'a, v2::WatchEvent, Option<v2::WatchEvent>>,
        finish: bool,
    ) -> Poll<wasmtime::Result<StreamResult>> {
        let this = self.get_mut();
        if dst.remaining(&mut store) == Some(0) {
            return Poll::Ready(Ok(StreamResult::Completed));
        }
        match this.watch.poll_next(cx) {
            Poll::Ready(Ok(event)) => {
                dst.set_buffer(Some(event.into()));
                Poll::Ready(Ok(StreamResult::Completed))
            }
            Poll::Ready(Err(end)) => this.end(end),
            Poll::Pending => {
                if this.cancel.as_mut().poll(cx).is_ready() {
                    return this.end(v1::WatchEnd::Failed(v1::ApiError::Cancelled));
                }
                if finish {
                    Poll::Ready(Ok(StreamResult::Cancelled))
                } else {
                    Poll::Pending
                }
            }
        }
    }
}
