//! Byte streams and event streams between gRPC and the host's calls. Each
//! outgoing stream watches its client: when the client goes away (it
//! cancelled, its deadline passed) the call's token is cancelled, so the
//! adapter ends the call as it would for core.

use std::future::Future;
use std::io;

use bytes::Bytes;
use futures::StreamExt as _;
use pando_host::streams::ByteStream;
use pando_host::{Adapter, CallContext, CallError};
use tokio::io::{AsyncReadExt as _, DuplexStream};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::io::StreamReader;
use tonic::{Status, Streaming};

use crate::pb;
use crate::service::Out;
use crate::status;

/// The most bytes one `Chunk` carries.
pub const CHUNK: usize = 64 << 10;

/// Streams what the call `f` writes into its writer as `Chunk`s, then the
/// call's error, if it failed, as the stream's status.
pub fn writer_call<F, Fut>(ctx: CallContext, f: F) -> Out<pb::Chunk>
where
    F: FnOnce(CallContext, DuplexStream) -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), CallError>> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(4);
    let token = ctx.cancel_token().clone();
    let (writer, mut reader) = tokio::io::duplex(CHUNK);
    let call = tokio::spawn(f(ctx, writer));
    tokio::spawn(async move {
        let mut buf = vec![0u8; CHUNK];
        loop {
            let read = tokio::select! {
                _ = tx.closed() => {
                    token.cancel();
                    break;
                }
                read = reader.read(&mut buf) => read,
            };
            match read {
                Ok(0) => break,
                Ok(n) => {
                    let chunk = pb::Chunk {
                        data: buf[..n].to_vec(),
                    };
                    if tx.send(Ok(chunk)).await.is_err() {
                        token.cancel();
                        break;
                    }
                }
                Err(e) => {
                    token.cancel();
                    let failed = status::host(
                        tonic::Code::Internal,
                        "host",
                        format!("reading the call's output: {e}"),
                    );
                    let _ = tx.send(Err(failed)).await;
                    break;
                }
            }
        }
        // Unread output would hold the call's writer: let it see the end.
        drop(reader);
        finish(&tx, call.await).await;
    });
    Box::pin(ReceiverStream::new(rx))
}

async fn finish<T: Send>(
    tx: &mpsc::Sender<Result<T, Status>>,
    ended: Result<Result<(), CallError>, tokio::task::JoinError>,
) {
    let failed = match ended {
        Ok(Ok(())) => return,
        Ok(Err(e)) => status::from_call(e),
        Err(e) => status::joined("the call", e),
    };
    let _ = tx.send(Err(failed)).await;
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
    bytes: &[u8],
    wrap: impl Fn(Vec<u8>) -> M,
) -> bool {
    for piece in bytes.chunks(CHUNK) {
        if tx.send(Ok(wrap(piece.to_vec()))).await.is_err() {
            return false;
        }
    }
    true
}

/// A client's stream of messages as bytes to read, each message's bytes
/// taken by `data` (which refuses a message that carries none).
pub fn reader<M, F>(
    incoming: Streaming<M>,
    data: F,
) -> impl tokio::io::AsyncRead + Send + Unpin + 'static
where
    M: Send + 'static,
    F: Fn(M) -> Result<Vec<u8>, String> + Send + 'static,
{
    let bytes = incoming.map(move |m| match m {
        Ok(m) => data(m).map(Bytes::from).map_err(io::Error::other),
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
