//! The host's ends of 0.2.0's byte streams (`stream<u8>`), over tokio's
//! readers and writers: a reader as a stream the guest reads ([`ReadPipe`]:
//! a Kubernetes log, an exec's output, core's restore archive), a writer
//! fed by a stream the guest writes ([`WritePipe`]: an exec's stdin, a log
//! the adapter returns to core).
//!
//! Each end reads straight into (or writes straight from) the guest's
//! memory: wasmtime hands a producer the guest's buffer and a consumer the
//! guest's bytes, so nothing is copied twice and no read-ahead task sits
//! between (0.1.0's `wasi:io` streams read ahead three 64 KiB buffers).
//! Nothing here returns an error to wasmtime, which would trap the guest:
//! how a stream ended goes to whoever holds the [`Done`] end.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::oneshot;
use wasmtime::StoreContextMut;
use wasmtime::component::{Destination, Source, StreamConsumer, StreamProducer, StreamResult};

/// The most a byte stream moves in one read when its reader is the host
/// (a guest reader lends its own buffer).
pub(crate) const CHUNK: usize = 64 << 10;

/// How a stream a [`ReadPipe`] produced ended: `Ok` at its reader's end,
/// the reader's error when it broke. A stream the guest dropped before its
/// end sends nothing.
pub(crate) type Done = oneshot::Sender<Result<(), String>>;

/// A reader the host holds, as a `stream<u8>` the guest reads. `keep` lives
/// as long as the stream: what the reader needs kept alive beside it.
pub(crate) struct ReadPipe<R, K = ()> {
    reader: R,
    done: Option<Done>,
    _keep: K,
}

impl<R, K> ReadPipe<R, K> {
    /// A pipe from `reader`, its end told to `done` if given.
    pub(crate) fn new(reader: R, done: Option<Done>, keep: K) -> Self {
        ReadPipe {
            reader,
            done,
            _keep: keep,
        }
    }

    fn end(&mut self, result: Result<(), String>) -> Poll<wasmtime::Result<StreamResult>> {
        if let Some(tx) = self.done.take() {
            let _ = tx.send(result);
        }
        Poll::Ready(Ok(StreamResult::Dropped))
    }
}

impl<D, R, K> StreamProducer<D> for ReadPipe<R, K>
where
    R: AsyncRead + Send + Unpin + 'static,
    K: Send + Unpin + 'static,
{
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
            Poll::Ready(Err(e)) => this.end(Err(e.to_string())),
            Poll::Pending if finish => Poll::Ready(Ok(StreamResult::Cancelled)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A writer the host holds, fed by a `stream<u8>` the guest writes. The
/// guest dropping its end drops this, and with it the writer (an exec's
/// stdin closes; a duplex's reader sees its end); `keep` goes with it.
/// Each write is flushed before the guest's write completes: kube-rs's
/// exec stdin sends only what was flushed, so an unflushed line would wait
/// for the next write or the close.
pub(crate) struct WritePipe<W, K = ()> {
    writer: W,
    flushing: bool,
    _keep: K,
}

impl<W: AsyncWrite + Unpin, K> WritePipe<W, K> {
    /// A pipe into `writer`.
    pub(crate) fn new(writer: W, keep: K) -> Self {
        WritePipe {
            writer,
            flushing: false,
            _keep: keep,
        }
    }

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
            // The writer is gone (the process exited, the connection broke,
            // core dropped what it read): the guest's writes end.
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

impl<D, W, K> StreamConsumer<D> for WritePipe<W, K>
where
    W: AsyncWrite + Send + Unpin + 'static,
    K: Send + Unpin + 'static,
{
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
