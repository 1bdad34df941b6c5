//! Call channels: the `Adapter` service's unary calls on unix sockets of
//! their own, beside gRPC (`proto/pando/serve/v1/calls.proto`).
//!
//! Why: a unary call through grpc-go's and tonic's HTTP/2 costs 240–270 µs
//! on a two-core machine before any Pando code runs (go-plugin's own health
//! check), where a request and its answer on a held-open unix socket between
//! a Go and a Rust process cost 21–27 µs (docs/benchmarks.md). Core asks
//! `upstream` on every app change and `observe` in every reconcile.
//!
//! How: the client opens a channel as it opens a byte channel (it listens
//! at NAME.sock in this server's socket directory and names it in the
//! `pando-channel` header, here of `CallChannels.Open`); the server connects
//! and serves calls on it, one at a time, on a thread of its own, until
//! either side closes it. A call is the gRPC request it stands for — method
//! path, headers, message — handed to the same `AdapterServer` in process,
//! so it picks the same adapter, has the same deadline and fails with the
//! same status as on gRPC. The client closing the socket while a call runs is the call's
//! cancellation: the call's future is dropped, and `call::run` cancels the
//! call's token and finishes it on a task of its own, as for a cancelled
//! gRPC call.

use std::fmt::Display;
use std::future::poll_fn;
use std::io::{BufRead, Write as _};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use bytes::{Buf as _, BufMut as _, Bytes, BytesMut};
use http_body_util::{BodyExt as _, Full};
use prost::Message as _;
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use tokio_util::sync::CancellationToken;
use tonic::codegen::Service;
use tonic::{Code, Request, Response, Status};

use crate::channel::{CHANNEL_HEADER, Channels};
use crate::pb::calls::{CallReply, CallRequest, OpenCallChannelRequest, OpenCallChannelResponse};
use crate::service::MAX_MESSAGE;
use crate::status;

/// The largest frame either way: the service's largest message and room for
/// the headers around it.
pub const MAX_FRAME: usize = MAX_MESSAGE + (64 << 10);

/// A gRPC service as tonic generates it (`AdapterServer`), called in
/// process.
pub trait Server:
    Service<
        http::Request<Full<Bytes>>,
        Response = http::Response<Self::Body>,
        Error: Display,
        Future: Send,
    > + Clone
    + Send
    + Sync
    + 'static
{
    /// The answer's body.
    type Body: http_body::Body<Data = Bytes, Error: Display> + Send + 'static;
}

impl<S, B> Server for S
where
    S: Service<http::Request<Full<Bytes>>, Response = http::Response<B>>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Error: Display,
    S::Future: Send,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Display,
{
    type Body = B;
}

/// The `CallChannels` service: connects channels and serves `server`'s calls
/// on them.
#[derive(Debug, Clone)]
pub struct CallChannels<S> {
    server: S,
    channels: Channels,
    stop: CancellationToken,
}

impl<S> CallChannels<S> {
    /// Serves `server`'s calls on channels made in `channels`' directory,
    /// until `stop`.
    pub fn new(server: S, channels: Channels, stop: CancellationToken) -> Self {
        CallChannels {
            server,
            channels,
            stop,
        }
    }
}

#[tonic::async_trait]
impl<S: Server> crate::pb::calls::call_channels_server::CallChannels for CallChannels<S> {
    async fn open(
        &self,
        request: Request<OpenCallChannelRequest>,
    ) -> Result<Response<OpenCallChannelResponse>, Status> {
        let Some(stream) = self.channels.open(request.metadata()).await? else {
            return Err(status::host(
                Code::InvalidArgument,
                "bad-channel",
                format!(
                    "a call channel is a socket: listen at NAME.sock in the server's socket \
                     directory and name it in the `{CHANNEL_HEADER}` header"
                ),
            ));
        };
        let stream = stream
            .into_std()
            .and_then(|s| s.set_nonblocking(false).map(|()| s))
            .map_err(|e| Status::internal(format!("the call channel's socket: {e}")))?;
        spawn(stream, self.server.clone(), self.stop.clone())
            .map_err(|e| Status::internal(format!("a thread for the call channel: {e}")))?;
        tracing::debug!("call channel connected");
        Ok(Response::new(OpenCallChannelResponse {}))
    }
}

/// Serves calls on `stream` on a thread of its own until the client closes
/// it, breaks the protocol, or `stop`. A thread, not a task: it sleeps in
/// the socket's read and is woken by the client's write alone, and runs the
/// call in place (`Handle::block_on`, the runtime's drivers doing any I/O
/// the call does). As a task, each call woke the runtime's I/O driver and
/// then a worker, and on two cores the second worker woke as well, to find
/// nothing: three wake-ups a call where one will do (docs/go.md).
pub fn spawn<S: Server>(
    stream: UnixStream,
    server: S,
    stop: CancellationToken,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let runtime = tokio::runtime::Handle::current();
    let closer = stream.try_clone()?;
    let (done, ended) = tokio::sync::oneshot::channel::<()>();
    // An idle channel's thread sleeps in its read: stopping shuts the
    // socket under it.
    runtime.spawn(async move {
        tokio::select! {
            () = stop.cancelled() => {
                let _ = closer.shutdown(std::net::Shutdown::Both);
            }
            _ = ended => {}
        }
    });
    std::thread::Builder::new()
        .name("pando-call-channel".into())
        .spawn(move || {
            serve(&stream, &server, &runtime);
            drop(done);
        })
}

/// The channel's loop: read a call, answer it, until the end.
fn serve<S: Server>(stream: &UnixStream, server: &S, runtime: &tokio::runtime::Handle) {
    let mut reader = std::io::BufReader::with_capacity(16 << 10, stream);
    let mut out = BytesMut::with_capacity(8 << 10);
    loop {
        let call = match read_frame(&mut reader).and_then(|f| {
            f.map(CallRequest::decode)
                .transpose()
                .map_err(std::io::Error::other)
        }) {
            Ok(Some(call)) => call,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "a call channel's request is not one: closing it");
                return;
            }
        };
        let reply = runtime.block_on(async {
            tokio::select! {
                biased;
                reply = one(server.clone(), call) => Some(reply),
                () = hung_up(stream) => None,
            }
        });
        let Some(reply) = reply else {
            tracing::debug!("the client closed its call channel mid-call: the call is cancelled");
            return;
        };
        out.clear();
        let len = reply.encoded_len();
        out.reserve(4 + len);
        // Cannot exceed u32: the largest message is MAX_FRAME.
        out.put_u32_le(u32::try_from(len).unwrap_or(u32::MAX));
        if reply.encode(&mut out).is_err() || (&*stream).write_all(&out).is_err() {
            return;
        }
    }
}

/// The next frame, `None` at the end of the stream between frames.
fn read_frame(rd: &mut impl BufRead) -> std::io::Result<Option<Bytes>> {
    if rd.fill_buf()?.is_empty() {
        return Ok(None);
    }
    let mut head = [0u8; 4];
    rd.read_exact(&mut head)?;
    let len = u32::from_le_bytes(head) as usize;
    if len > MAX_FRAME {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes, over the {MAX_FRAME} a call may have"),
        ));
    }
    let mut body = vec![0; len];
    rd.read_exact(&mut body)?;
    Ok(Some(Bytes::from(body)))
}

/// How often a running call looks whether its client hung up.
const HANG_UP_CHECK: Duration = Duration::from_millis(20);

/// Returns once the client has closed its side (or sent bytes, which it
/// must not while its call runs). Looked at every [`HANG_UP_CHECK`]: a
/// call that answers at once never gets here (the select is biased), and
/// one that waits learns of a hang-up within that.
async fn hung_up(stream: &UnixStream) {
    loop {
        tokio::time::sleep(HANG_UP_CHECK).await;
        let mut fds = [PollFd::new(stream, PollFlags::IN | PollFlags::RDHUP)];
        if !matches!(poll(&mut fds, Some(&Timespec::default())), Ok(0)) {
            if !fds[0]
                .revents()
                .intersects(PollFlags::HUP | PollFlags::RDHUP)
            {
                tracing::warn!("a client wrote to its call channel while its call ran: closing it");
            }
            return;
        }
    }
}

/// One call: `call` as the gRPC request it stands for, through `server`,
/// and the answer's status and message.
pub async fn one<S: Server>(mut server: S, call: CallRequest) -> CallReply {
    let request = match request(call) {
        Ok(r) => r,
        Err(st) => return failed(&st),
    };
    if let Err(e) = poll_fn(|cx| server.poll_ready(cx)).await {
        return failed(&Status::unavailable(format!(
            "the service is not ready: {e}"
        )));
    }
    let response = match server.call(request).await {
        Ok(r) => r,
        Err(e) => return failed(&Status::internal(e.to_string())),
    };
    let (parts, body) = response.into_parts();
    let body = match body.collect().await {
        Ok(b) => b,
        Err(e) => return failed(&Status::internal(format!("reading the answer: {e}"))),
    };
    let trailers = body.trailers().cloned();
    let data = body.to_bytes();
    // A call that fails before its answer has only headers (trailers-only).
    let status = trailers
        .as_ref()
        .and_then(Status::from_header_map)
        .or_else(|| Status::from_header_map(&parts.headers))
        .unwrap_or_else(|| Status::internal("the answer carried no gRPC status"));
    if status.code() != Code::Ok {
        return failed(&status);
    }
    match unframe(data) {
        Ok(message) => CallReply {
            code: 0,
            message,
            ..CallReply::default()
        },
        Err(st) => failed(&st),
    }
}

/// The gRPC request a call stands for.
fn request(call: CallRequest) -> Result<http::Request<Full<Bytes>>, Status> {
    if !call.method.starts_with('/') {
        return Err(Status::invalid_argument(format!(
            "a call's method is a gRPC path (`/pando.runtime.v0_1.Adapter/Upstream`), not `{}`",
            call.method
        )));
    }
    let mut b = http::Request::builder()
        .method(http::Method::POST)
        .uri(call.method)
        .header(http::header::CONTENT_TYPE, "application/grpc")
        .header(http::header::TE, "trailers");
    for h in call.headers {
        if h.name.starts_with(':') || h.name == "content-type" || h.name == "te" {
            continue;
        }
        b = b.header(h.name, h.value);
    }
    let mut body = BytesMut::with_capacity(5 + call.message.len());
    body.put_u8(0);
    body.put_u32(u32::try_from(call.message.len()).unwrap_or(u32::MAX));
    body.extend_from_slice(&call.message);
    b.body(Full::new(body.freeze()))
        .map_err(|e| Status::invalid_argument(format!("a call's headers: {e}")))
}

/// The message in an answer's body: one gRPC frame, uncompressed.
fn unframe(mut data: Bytes) -> Result<Bytes, Status> {
    if data.len() < 5 || data[0] != 0 {
        return Err(Status::internal(
            "the answer is not one uncompressed gRPC message",
        ));
    }
    let len = u32::from_be_bytes([data[1], data[2], data[3], data[4]]) as usize;
    data.advance(5);
    if data.len() != len {
        return Err(Status::internal(format!(
            "the answer's frame says {len} bytes and carries {}",
            data.len()
        )));
    }
    Ok(data)
}

fn failed(status: &Status) -> CallReply {
    CallReply {
        code: status.code() as i32,
        text: status.message().to_string(),
        details: Bytes::copy_from_slice(status.details()),
        message: Bytes::new(),
    }
}

#[cfg(test)]
mod tests;
