//! The host's ends of 0.2.0's streams and futures, over what the context
//! opened: a reader (a log, an exec's stdout or stderr) as a `stream<u8>`
//! the guest reads, a `stream<u8>` the guest writes as an exec's stdin, a
//! `stream<terminal-size>` as the terminal's sizes, a watch as a
//! `stream<watch-event>`.
//!
//! Each end reads straight into (or writes straight from) the guest's
//! memory: wasmtime hands a producer the guest's buffer, so a log's bytes
//! are copied once, from kube-rs's pipe to the guest, with no read-ahead
//! task between (0.1.0's `wasi:io` streams read ahead three 64 KiB
//! buffers). Nothing here returns an error to wasmtime, which would trap
//! the guest: how a stream ended goes into its companion future.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::Sink;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::oneshot;
use tokio_util::sync::WaitForCancellationFutureOwned;
use wasmtime::StoreContextMut;
use wasmtime::component::{Destination, Source, StreamConsumer, StreamProducer, StreamResult};

use crate::bindings::v0_1::pando::runtime::kubernetes as v1;
use crate::bindings::v0_2::pando::runtime::kubernetes as v2;
use crate::capability::held::Held;
use crate::capability::kubernetes::WatchStream;
use crate::capability::kubernetes::exec::Exit;

/// The most a byte stream moves in one read when its reader is the host
/// (a guest reader lends its own buffer): what a 0.2.0 log or exec output
/// holds beyond kube-rs's pipe.
pub(crate) const CHUNK: usize = 64 << 10;

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

/// How a byte stream the host reads for the guest ended, for its future:
/// `Ok` at its end, the error when it broke. A stream the guest dropped
/// before its end resolves nothing; the future then says so.
pub(crate) type Done = oneshot::Sender<Result<(), v1::ApiError>>;

/// The answer of a byte stream's future once its sender is gone unused.
pub(crate) async fn done(
    rx: oneshot::Receiver<Result<(), v1::ApiError>>,
) -> Result<(), v2::ApiError> {
    match rx.await {
        Ok(r) => r.map_err(Into::into),
        Err(_) => Err(v2::ApiError::Transport(
            "the stream was closed before its end".into(),
        )),
    }
}

/// A reader the host holds, as a `stream<u8>` the guest reads.
pub(crate) struct ReadPipe<R> {
    pub(crate) reader: R,
    pub(crate) done: Option<Done>,
    pub(crate) _keep: Keep,
}

impl<R> ReadPipe<R> {
    fn end(&mut self, result: Result<(), v1::ApiError>) -> Poll<wasmtime::Result<StreamResult>> {
        if let Some(tx) = self.done.take() {
            let _ = tx.send(result);
        }
        Poll::Ready(Ok(StreamResult::Dropped))
    }
}

impl<D, R: AsyncRead + Send + Unpin + 'static> StreamProducer<D> for ReadPipe<R> {
    type Item = u8;
    type Buffer = bytes::BytesMut;

    fn poll_produce<'a>(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut store: StoreContextMut<'a, D>,
        dst: Destination<'a, u8, bytes::BytesMut>,
        finish: bool,
    ) -> Poll<wasmtime::Result<StreamResult>> {
        let this = self.get_mut();
        // A zero-length read asks whether bytes are ready; `AsyncRead` cannot
        // tell without reading, so the answer is "read and see", as
        // wasmtime-wasi's own stdin answers (component-model#561).
        if dst.remaining(&mut store) == Some(0) {
            return Poll::Ready(Ok(StreamResult::Completed));
        }
        let mut dst = dst.as_direct(store, CHUNK);
        let mut buf = ReadBuf::new(dst.remaining());
        match Pin::new(&mut this.reader).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) if buf.filled().is_empty() => this.end(Ok(())),
            Poll::Ready(Ok(())) => {
                let n = buf.filled().len();
                dst.mark_written(n);
                Poll::Ready(Ok(StreamResult::Completed))
            }
            Poll::Ready(Err(e)) => this.end(Err(v1::ApiError::Transport(e.to_string()))),
            Poll::Pending if finish => Poll::Ready(Ok(StreamResult::Cancelled)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A writer the host holds (an exec's stdin), fed by a `stream<u8>` the
/// guest writes. The guest dropping its end drops this, which closes the
/// process's stdin. Each write is flushed before the guest's write
/// completes: kube-rs's stdin sends what was flushed, so an unflushed line
/// would wait for the next write or the close.
pub(crate) struct WritePipe<W> {
    pub(crate) writer: W,
    pub(crate) flushing: bool,
    pub(crate) _keep: Keep,
}

impl<W: AsyncWrite + Unpin> WritePipe<W> {
    fn flush(
        &mut self,
        cx: &mut Context<'_>,
        finish: bool,
    ) -> Poll<wasmtime::Result<StreamResult>> {
        match Pin::new(&mut self.writer).poll_flush(cx) {
            Poll::Ready(Ok(())) => {
                self.flushing = false;
                Poll::Ready(Ok(StreamResult::Completed))
            }
            // The process's stdin is gone (it exited, or the connection
            // broke): the guest's writes end; the exit future says why.
            Poll::Ready(Err(_)) => Poll::Ready(Ok(StreamResult::Dropped)),
            Poll::Pending if finish => {
                self.flushing = false;
                Poll::Ready(Ok(StreamResult::Cancelled))
            }
            Poll::Pending => {
                self.flushing = true;
                Poll::Pending
            }
        }
    }
}

impl<D, W: AsyncWrite + Send + Unpin + 'static> StreamConsumer<D> for WritePipe<W> {
    type Item = u8;

    fn poll_consume(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        store: StoreContextMut<D>,
        src: Source<u8>,
        finish: bool,
    ) -> Poll<wasmtime::Result<StreamResult>> {
        let this = self.get_mut();
        if this.flushing {
            return this.flush(cx, finish);
        }
        let mut src = src.as_direct(store);
        let buf = src.remaining();
        if buf.is_empty() {
            return Poll::Ready(Ok(StreamResult::Completed));
        }
        match Pin::new(&mut this.writer).poll_write(cx, buf) {
            Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => Poll::Ready(Ok(StreamResult::Dropped)),
            Poll::Ready(Ok(n)) => {
                src.mark_read(n);
                this.flush(cx, finish)
            }
            Poll::Pending if finish => Poll::Ready(Ok(StreamResult::Cancelled)),
            Poll::Pending => Poll::Pending,
        }
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
