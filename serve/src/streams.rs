//! Byte streams and event streams between gRPC and the host's calls. Each
//! outgoing stream watches its client: when the client goes away (it
//! cancelled, its deadline passed) the call's token is cancelled, so the
//! adapter ends the call as it would for core. A stream of bytes goes as
//! `Chunk`s, or on the byte channel the client asked for (`channel`), the
//! gRPC stream then carrying only the call's end.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::sink::SinkMapErr;
use futures::{SinkExt as _, StreamExt as _};
use pando_host::streams::ByteStream;
use pando_host::{Adapter, CallContext, CallError};
use tokio::io::AsyncWriteExt as _;
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::io::{CopyToBytes, ReaderStream, SinkWriter, StreamReader};
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

/// Where a call writes its output: `Chunk` messages, or the byte channel
/// the client asked for.
pub enum Writer {
    /// Into `Chunk`s on the gRPC stream.
    Chunks(ChunkWriter),
    /// Onto the client's socket.
    Channel(UnixStream),
}

impl tokio::io::AsyncWrite for Writer {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Writer::Chunks(w) => Pin::new(w).poll_write(cx, buf),
            Writer::Channel(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Writer::Chunks(w) => Pin::new(w).poll_flush(cx),
            Writer::Channel(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Writer::Chunks(w) => Pin::new(w).poll_shutdown(cx),
            Writer::Channel(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

fn gone(_: PollSendError<Bytes>) -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the client went away")
}

/// Streams what the call `f` writes into its writer as `Chunk`s — or onto
/// `channel`, which the call shuts before it ends — then the call's error,
/// if it failed, as the stream's status. The stream dropped (the client
/// cancelled, its deadline passed) cancels the call's token.
pub fn writer_call<F, Fut>(ctx: CallContext, channel: Option<UnixStream>, f: F) -> Out<pb::Chunk>
where
    F: FnOnce(CallContext, Writer) -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), CallError>> + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<Bytes>(AHEAD);
    let writer = match channel {
        Some(socket) => Writer::Channel(socket),
        None => {
            let sink =
                PollSender::new(tx).sink_map_err(gone as fn(PollSendError<Bytes>) -> io::Error);
            Writer::Chunks(ChunkWriter(SinkWriter::new(CopyToBytes::new(sink))))
        }
    };
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

/// Streams an open `ByteStream` (a log) as `Chunk`s — or onto `channel` —
/// until it ends or the client goes away (which drops, and so closes, the
/// stream).
pub fn bytes(stream: ByteStream, channel: Option<UnixStream>) -> Out<pb::Chunk> {
    let (tx, rx) = mpsc::channel(4);
    tokio::spawn(pump(stream, channel, tx));
    Box::pin(ReceiverStream::new(rx))
}

/// The stream's bytes as `Chunk`s, or onto the socket, which is shut before
/// the gRPC stream ends (its end, or the failure, comes after the last
/// byte). Stops when the client goes away.
async fn pump(
    mut stream: ByteStream,
    mut socket: Option<UnixStream>,
    tx: mpsc::Sender<Result<pb::Chunk, Status>>,
) {
    let failed = loop {
        let next = tokio::select! {
            _ = tx.closed() => return,
            next = stream.next_chunk() => next,
        };
        match next {
            None => break None,
            Some(Ok(bytes)) => {
                let sent = match &mut socket {
                    Some(socket) => match socket.write_all(&bytes).await {
                        Ok(()) => true,
                        Err(e) => {
                            // The client closed its end: it is done reading.
                            tracing::debug!(error = %e, "the byte channel's reader went away");
                            false
                        }
                    },
                    None => send_pieces(&tx, &bytes, |data| pb::Chunk { data }).await,
                };
                if !sent {
                    return;
                }
            }
            Some(Err(e)) => break Some(Status::unavailable(format!("the stream failed: {e}"))),
        }
    };
    if let Some(socket) = &mut socket
        && let Err(e) = socket.shutdown().await
    {
        tracing::debug!(error = %e, "shutting the byte channel");
    }
    if let Some(status) = failed {
        let _ = tx.send(Err(status)).await;
    }
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
/// taken by `data` (which refuses a message that carries none) — or, with
/// a `channel`, the socket's bytes, whose end counts only when the client
/// then says so on the gRPC stream: one message of no bytes, then its
/// half-close. A client that failed half-way cancels the call instead, so
/// a short archive is an error, never a whole one. (An explicit end is
/// needed: tonic reads a client's cancel of its stream as the stream's
/// clean end.)
pub fn reader<M, B, F>(
    incoming: Streaming<M>,
    channel: Option<UnixStream>,
    data: F,
) -> impl tokio::io::AsyncRead + Send + Unpin + 'static
where
    M: Send + 'static,
    B: Into<Bytes>,
    F: Fn(M) -> Result<B, String> + Send + 'static,
{
    let mut messages = incoming.map(move |m| match m {
        Ok(m) => data(m).map(Into::into).map_err(io::Error::other),
        Err(status) => Err(io::Error::other(format!(
            "the client's stream failed: {}",
            status.message()
        ))),
    });
    let bytes: Pin<Box<dyn futures::Stream<Item = io::Result<Bytes>> + Send>> = match channel {
        None => Box::pin(messages),
        Some(socket) => {
            let end = futures::stream::once(async move {
                let whole = match messages.next().await {
                    Some(Ok(b)) if b.is_empty() => messages.next().await.is_none(),
                    Some(Err(e)) => return Some(Err(e)),
                    _ => false,
                };
                (!whole).then(|| Err(io::Error::other(CHANNEL_NOT_WHOLE)))
            })
            .filter_map(std::future::ready);
            Box::pin(ReaderStream::with_capacity(socket, CHUNK).chain(end))
        }
    };
    StreamReader::new(bytes)
}

/// Why a byte channel's bytes were not taken.
const CHANNEL_NOT_WHOLE: &str = "the client's byte channel ended without the client saying it \
     was whole (one message of no bytes, then the end of its stream): it cancelled, or sent \
     data on the gRPC stream beside the channel";

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

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{Empty, Full, StreamBody};
    use prost::Message as _;
    use tokio::io::AsyncReadExt as _;

    /// A restore's bytes on a byte channel that ends after `sent`, read
    /// with what the gRPC stream then does (`grpc`: the client's side of it).
    async fn read_channel<B>(sent: &[u8], grpc: B) -> io::Result<Vec<u8>>
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (mut client, server) = UnixStream::pair()?;
        client.write_all(sent).await?;
        client.shutdown().await?;
        let incoming = Streaming::new_request(
            tonic_prost::ProstDecoder::<pb::Chunk>::default(),
            grpc,
            None,
            None,
        );
        let mut out = Vec::new();
        reader(incoming, Some(server), |c: pb::Chunk| Ok(c.data))
            .read_to_end(&mut out)
            .await?;
        Ok(out)
    }

    /// gRPC-framed `Chunk` messages, as a client sends them.
    fn messages(data: &[&[u8]]) -> Full<Bytes> {
        let mut framed = Vec::new();
        for d in data {
            let m = pb::Chunk {
                data: Bytes::copy_from_slice(d),
            }
            .encode_to_vec();
            framed.push(0u8);
            framed.extend_from_slice(&u32::try_from(m.len()).expect("small").to_be_bytes());
            framed.extend_from_slice(&m);
        }
        Full::new(Bytes::from(framed))
    }

    #[tokio::test]
    async fn the_channels_end_is_the_end_once_the_client_said_it_was_whole() {
        let got = read_channel(b"archive", messages(&[b""])).await;
        assert_eq!(got.expect("whole"), b"archive");
    }

    #[tokio::test]
    async fn the_channels_end_without_the_clients_word_is_an_error() {
        // A half-close alone; and a cancel, which tonic reads as one.
        let cancelled = StreamBody::new(futures::stream::iter([Err::<
            http_body::Frame<Bytes>,
            Status,
        >(Status::cancelled(
            "the client cancelled",
        ))]));
        for got in [
            read_channel(b"half an arch", Empty::<Bytes>::new()).await,
            read_channel(b"half an arch", cancelled).await,
        ] {
            let e = got.expect_err("an upload the client did not call whole is not");
            assert!(e.to_string().contains("without the client saying"), "{e}");
        }
    }

    #[tokio::test]
    async fn data_on_grpc_beside_a_channel_is_refused() {
        for sent in [&[b"more".as_slice()][..], &[b"", b"more"]] {
            let e = read_channel(b"archive", messages(sent))
                .await
                .expect_err("two sources of bytes");
            assert!(e.to_string().contains("beside the channel"), "{e}");
        }
    }
}
