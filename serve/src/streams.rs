//! Byte streams and event streams between gRPC and the host's calls. Each
//! outgoing stream watches its client: when the client goes away (it
//! cancelled, its deadline passed) the call's token is cancelled, so the
//! adapter ends the call as it would for core.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::sink::SinkMapErr;
use futures::{SinkExt as _, StreamExt as _};
use pando_host::streams::ByteStream;
use pando_host::{Adapter, CallContext, CallError};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::io::{CopyToBytes, SinkWriter, StreamReader};
use tokio_util::sync::{PollSendError, PollSender};
use tonic::{Status, Streaming};

use crate::pb;
use crate::service::Out;
use crate::status;

/// The most bytes one `Chunk` carries.
pub const CHUNK: usize = 64 << 10;

/// The chunks a call may write ahead of the stream's sender: the call
/// writes on while the last ones are sent, rather than waiting at each.
const AHEAD: usize = 16;

/// The writer a streaming call writes its output into: each write becomes
/// one `Chunk` of at most [`CHUNK`] bytes, copied once (from the caller's
/// buffer into the message's `Bytes`, which tonic then encodes).
pub struct ChunkWriter(SinkWriter<CopyToBytes<ChunkSink>>);

/// The channel of chunks, its closing an I/O error to the writer.
type ChunkSink = SinkMapErr<PollSender<Bytes>, fn(PollSendError<Bytes>) -> io::Error>;

impl tokio::io::AsyncWrite for ChunkWriter {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let n = buf.len().min(CHUNK);
        Pin::new(&mut self.0).poll_write(cx, &buf[..n])
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

fn gone(_: PollSendError<Bytes>) -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the client went away")
}

/// Streams what the call `f` writes into its writer as `Chunk`s, then the
/// call's error, if it failed, as the stream's status. The stream dropped
/// (the client cancelled, its deadline passed) cancels the call's token.
pub fn writer_call<F, Fut>(ctx: CallContext, f: F) -> Out<pb::Chunk>
where
    F: FnOnce(CallContext, ChunkWriter) -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), CallError>> + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<Bytes>(AHEAD);
    let sink = PollSender::new(tx).sink_map_err(gone as fn(PollSendError<Bytes>) -> io::Error);
    let writer = ChunkWriter(SinkWriter::new(CopyToBytes::new(sink)));
    let guard = ctx.cancel_token().clone().drop_guard();
    let call = tokio::spawn(f(ctx, writer));
    let chunks = ReceiverStream::new(rx).map(|data| Ok(pb::Chunk { data }));
    let end = futures::stream::once(async move {
        match call.await {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(Err(status::from_call(e))),
            Err(e) => Some(Err(status::joined("the call", e))),
        }
    })
    .filter_map(std::future::ready);
    Box::pin(chunks.chain(end).map(move |item| {
        // Held by the stream: dropped with it, it cancels the call.
        let _ = &guard;
        item
    }))
}

/// Streams an open `ByteStream` (a log) as `Chunk`s, until it ends or the
/// client goes away (which drops, and so closes, the stream).
pub fn bytes(mut stream: ByteStream) -> Out<pb::Chunk> {
    let (tx, rx) = mpsc::channel(4);
    tokio::spawn(async move {
        loop {
            let next = tokio::select! {
                _ = tx.closed() => break,
                next = stream.next_chunk() => next,
            };
            let bytes: Bytes = match next {
                None => break,
                Some(Ok(b)) => b,
                Some(Err(e)) => {
                    let failed = Status::unavailable(format!("the stream failed: {e}"));
                    let _ = tx.send(Err(failed)).await;
                    break;
                }
            };
            if !send_pieces(&tx, &bytes, |data| pb::Chunk { data }).await {
                return;
            }
        }
    });
    Box::pin(ReceiverStream::new(rx))
}

/// Sends `bytes` as messages of at most `CHUNK` bytes each, made by `wrap`;
/// false once the receiver is gone.
pub(crate) async fn send_pieces<M>(
    tx: &mpsc::Sender<Result<M, Status>>,
    bytes: &Bytes,
    wrap: impl Fn(Bytes) -> M,
) -> bool {
    for start in (0..bytes.len()).step_by(CHUNK) {
        let piece = bytes.slice(start..bytes.len().min(start + CHUNK));
        if tx.send(Ok(wrap(piece))).await.is_err() {
            return false;
        }
    }
    true
}

/// A client's stream of messages as bytes to read, each message's bytes
/// taken by `data` (which refuses a message that carries none).
pub fn reader<M, B, F>(
    incoming: Streaming<M>,
    data: F,
) -> impl tokio::io::AsyncRead + Send + Unpin + 'static
where
    M: Send + 'static,
    B: Into<Bytes>,
    F: Fn(M) -> Result<B, String> + Send + 'static,
{
    let bytes = incoming.map(move |m| match m {
        Ok(m) => data(m).map(Into::into).map_err(io::Error::other),
        Err(status) => Err(io::Error::other(format!(
            "the client's stream failed: {}",
            status.message()
        ))),
    });
    StreamReader::new(Box::pin(bytes))
}

/// The watch: each event as it comes, then how it ended.
pub fn watch(adapter: Adapter, ctx: CallContext) -> Out<pb::WatchBundlesMessage> {
    let (tx, rx) = mpsc::channel(64);
    let (events_tx, mut events) = mpsc::channel(256);
    let token = ctx.cancel_token().clone();
    let call = tokio::spawn(async move { adapter.watch_bundles(&ctx, events_tx).await });
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                _ = tx.closed() => {
                    token.cancel();
                    break;
                }
                e = events.recv() => e,
            };
            let Some(event) = event else { break };
            let m = pb::WatchBundlesMessage {
                part: Some(pb::watch_bundles_message::Part::Event(event.into())),
            };
            if tx.send(Ok(m)).await.is_err() {
                token.cancel();
                break;
            }
        }
        match call.await {
            Ok(Ok(end)) => {
                let m = pb::WatchBundlesMessage {
                    part: Some(pb::watch_bundles_message::Part::End(
                        pb::WatchEnd::from(end) as i32,
                    )),
                };
                let _ = tx.send(Ok(m)).await;
            }
            Ok(Err(e)) => {
                let _ = tx.send(Err(status::from_call(e))).await;
            }
            Err(e) => {
                let _ = tx.send(Err(status::joined("the watch", e))).await;
            }
        }
    });
    Box::pin(ReceiverStream::new(rx))
}
