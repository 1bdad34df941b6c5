//! The call channel against real tonic services: gRPC's health service
//! (generated server code, as `AdapterServer` is) and a service that never
//! answers, to see a closed channel cancel its call.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tonic_health::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::*;
use crate::pb::calls::Header;

type Client = tokio::net::UnixStream;

/// A socket pair: the client's end for this test's runtime, the server's
/// for a channel's thread.
fn pair() -> (Client, UnixStream) {
    let (client, server) = UnixStream::pair().expect("a socket pair");
    client.set_nonblocking(true).expect("non-blocking");
    (Client::from_std(client).expect("registered"), server)
}

/// Waits for a channel's thread to end.
async fn ended(thread: std::thread::JoinHandle<()>) {
    tokio::task::spawn_blocking(move || thread.join())
        .await
        .expect("joined")
        .expect("the channel's thread did not panic");
}

const CHECK: &str = "/grpc.health.v1.Health/Check";

async fn health() -> impl Server {
    let (reporter, server) = tonic_health::server::health_reporter();
    reporter
        .set_service_status("plugin", ServingStatus::Serving)
        .await;
    server
}

fn check(service: &str) -> CallRequest {
    CallRequest {
        method: CHECK.into(),
        headers: vec![Header {
            name: "pando-adapter".into(),
            value: "a".into(),
        }],
        message: HealthCheckRequest {
            service: service.into(),
        }
        .encode_to_vec()
        .into(),
    }
}

#[tokio::test]
async fn a_call_is_answered_by_the_service_in_process() {
    let reply = one(health().await, check("plugin")).await;
    assert_eq!(reply.code, 0, "{}", reply.text);
    let answer = HealthCheckResponse::decode(reply.message).expect("a health answer");
    assert_eq!(answer.status, ServingStatus::Serving as i32);
}

#[tokio::test]
async fn a_failed_call_carries_its_status() {
    let reply = one(health().await, check("no-such-service")).await;
    assert_eq!(reply.code, Code::NotFound as i32);
    assert!(!reply.text.is_empty());
    assert!(reply.message.is_empty());

    let mut unknown = check("plugin");
    unknown.method = "/grpc.health.v1.Health/NoSuchMethod".into();
    let reply = one(health().await, unknown).await;
    assert_eq!(reply.code, Code::Unimplemented as i32);

    let mut bare = check("plugin");
    bare.method = "Check".into();
    let reply = one(health().await, bare).await;
    assert_eq!(reply.code, Code::InvalidArgument as i32);
    assert!(reply.text.contains("gRPC path"), "{}", reply.text);

    let mut bad_header = check("plugin");
    bad_header.headers.push(Header {
        name: "a header".into(),
        value: "x".into(),
    });
    let reply = one(health().await, bad_header).await;
    assert_eq!(reply.code, Code::InvalidArgument as i32);
}

fn framed(call: &CallRequest) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_u32_le(u32::try_from(call.encoded_len()).expect("small"));
    call.encode(&mut out).expect("encoded");
    out
}

async fn reply(client: &mut Client) -> CallReply {
    let len = client.read_u32_le().await.expect("a reply's length") as usize;
    let mut body = vec![0; len];
    client.read_exact(&mut body).await.expect("a reply");
    CallReply::decode(body.as_slice()).expect("a CallReply")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_serves_calls_one_after_another_until_closed() {
    let (mut client, server_end) = pair();
    let served = spawn(server_end, health().await, CancellationToken::new()).expect("spawned");
    for service in ["plugin", "no-such-service", "plugin"] {
        client
            .write_all(&framed(&check(service)))
            .await
            .expect("sent");
        let r = reply(&mut client).await;
        let want = if service == "plugin" {
            0
        } else {
            Code::NotFound as i32
        };
        assert_eq!(r.code, want, "{service}: {}", r.text);
    }
    drop(client);
    ended(served).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_over_the_limit_closes_the_channel() {
    let (mut client, server_end) = pair();
    let served = spawn(server_end, health().await, CancellationToken::new()).expect("spawned");
    let len = u32::try_from(MAX_FRAME + 1).expect("fits");
    client.write_all(&len.to_le_bytes()).await.expect("sent");
    let mut rest = Vec::new();
    let n = client
        .read_to_end(&mut rest)
        .await
        .expect("read to the end");
    assert_eq!(n, 0, "no answer to a frame over the limit");
    ended(served).await;
}

/// A service whose calls never answer and say when they are dropped.
#[derive(Clone)]
struct Hangs {
    dropped: std::sync::Arc<tokio::sync::Notify>,
}

struct Guard(std::sync::Arc<tokio::sync::Notify>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

impl Service<http::Request<Full<Bytes>>> for Hangs {
    type Response = http::Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<Full<Bytes>>) -> Self::Future {
        let guard = Guard(self.dropped.clone());
        Box::pin(async move {
            let _guard = guard;
            std::future::pending::<()>().await;
            Ok(http::Response::new(Full::new(Bytes::new())))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_channel_mid_call_cancels_the_call() {
    let dropped = std::sync::Arc::new(tokio::sync::Notify::new());
    let (mut client, server_end) = pair();
    let served = spawn(
        server_end,
        Hangs {
            dropped: dropped.clone(),
        },
        CancellationToken::new(),
    )
    .expect("spawned");
    client
        .write_all(&framed(&check("plugin")))
        .await
        .expect("sent");
    tokio::task::yield_now().await;
    drop(client);
    tokio::time::timeout(std::time::Duration::from_secs(10), dropped.notified())
        .await
        .expect("the call was dropped once its channel closed");
    ended(served).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_stopping_ends_an_idle_channel() {
    let stop = CancellationToken::new();
    let (mut client, server_end) = pair();
    let served = spawn(server_end, health().await, stop.clone()).expect("spawned");
    stop.cancel();
    ended(served).await;
    let mut rest = Vec::new();
    assert_eq!(client.read_to_end(&mut rest).await.expect("read"), 0);
}
