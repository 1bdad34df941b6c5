//! The gateway's server on 127.0.0.1, an ephemeral port, against loopback upstreams: what it
//! lets through, what it refuses and how it says so.

mod common;

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use common::*;
use pando_gateway::{Allow, Config, Resolver};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

fn config(rules: &[String]) -> Config {
    let rules = rules.iter().map(|r| r.parse().unwrap()).collect();
    Config::new(Allow::new(rules))
}

async fn start(config: Config) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(pando_gateway::serve(
        listener,
        config,
        std::future::pending(),
    ));
    addr
}

/// Names that resolve only here, to loopback, so that no lookup leaves the machine.
fn fixed(names: &[&str]) -> Resolver {
    let lo = vec![IpAddr::V4(Ipv4Addr::LOCALHOST)];
    Resolver::Fixed(
        names
            .iter()
            .map(|n| ((*n).to_owned(), lo.clone()))
            .collect::<HashMap<_, _>>(),
    )
}

#[tokio::test]
async fn connect_to_an_allowed_host_tunnels_bytes_both_ways() {
    let (up, mut seen) = upper_upstream().await;
    let gw = start(config(&[format!("localhost:{}", up.port())])).await;
    let mut s = tunnel(gw, &format!("localhost:{}", up.port())).await;
    assert_eq!(round_trip(&mut s, b"ping").await, b"PING");
    assert_eq!(round_trip(&mut s, b"and again").await, b"AND AGAIN");
    // The client's half-close reaches the upstream, and the upstream's last words come back.
    s.shutdown().await.unwrap();
    let mut rest = Vec::new();
    tokio::time::timeout(WAIT, s.read_to_end(&mut rest))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rest, b"BYE");
    assert_eq!(seen.recv().await.unwrap(), b"pingand again");
}

#[tokio::test]
async fn bytes_sent_right_after_the_connect_head_are_not_lost() {
    let (up, _seen) = upper_upstream().await;
    let gw = start(config(&[format!("localhost:{}", up.port())])).await;
    let mut s = TcpStream::connect(gw).await.unwrap();
    let req = format!(
        "CONNECT localhost:{0} HTTP/1.1\r\nHost: localhost:{0}\r\n\r\nearly",
        up.port()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let (code, _) = read_head(&mut s).await;
    assert_eq!(code, 200);
    let mut back = [0u8; 5];
    tokio::time::timeout(WAIT, s.read_exact(&mut back))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&back, b"EARLY");
}

#[tokio::test]
async fn a_refused_host_gets_403_naming_it_and_the_rule_that_would_admit_it() {
    let gw = start(config(&["localhost:1".into()])).await;
    let (code, head, body) = exchange(
        gw,
        b"CONNECT denied.test:443 HTTP/1.1\r\nHost: denied.test:443\r\n\r\n",
    )
    .await;
    assert_eq!(code, 403, "{head}");
    assert_eq!(body.lines().count(), 1, "{body:?}");
    assert!(
        body.contains("denied.test is not an allowed host"),
        "{body}"
    );
    assert!(body.contains("`--allow denied.test:443`"), "{body}");
    // The same for a forwarded request.
    let (code, _, body) = exchange(
        gw,
        b"GET http://denied.test/x HTTP/1.1\r\nHost: denied.test\r\n\r\n",
    )
    .await;
    assert_eq!(code, 403);
    assert!(body.contains("`--allow denied.test:80`"), "{body}");
}

#[tokio::test]
async fn a_forwarded_get_to_an_allowed_host_gets_the_upstreams_answer() {
    let (up, mut seen) = http_upstream().await;
    let gw = start(config(&[format!("localhost:{}", up.port())])).await;
    let req = format!(
        "GET http://localhost:{}/hello?x=1 HTTP/1.1\r\nHost: wrong.test\r\nProxy-Connection: \
         keep-alive\r\nProxy-Authorization: Basic eDp5\r\nAccept: text/plain\r\n\r\n",
        up.port()
    );
    let (code, head, body) = exchange(gw, req.as_bytes()).await;
    assert_eq!(code, 200, "{head}");
    assert!(head.contains("X-Upstream: yes"), "{head}");
    assert!(head.contains("Connection: close"), "{head}");
    assert!(!head.contains("keep-alive"), "{head}");
    assert_eq!(body, "saw GET /hello?x=1 HTTP/1.1");
    let upstream = String::from_utf8(seen.recv().await.unwrap()).unwrap();
    assert!(
        upstream.starts_with("GET /hello?x=1 HTTP/1.1\r\n"),
        "{upstream}"
    );
    assert!(
        upstream.contains(&format!("\r\nHost: localhost:{}\r\n", up.port())),
        "{upstream}"
    );
    assert!(upstream.contains("Accept: text/plain\r\n"), "{upstream}");
    assert!(upstream.contains("Connection: close\r\n"), "{upstream}");
    assert!(!upstream.contains("wrong.test"), "{upstream}");
    assert!(!upstream.contains("Proxy-"), "{upstream}");
}

#[tokio::test]
async fn a_second_request_on_the_same_connection_never_reaches_the_upstream() {
    let (up, mut seen) = http_upstream().await;
    let gw = start(config(&[format!("localhost:{}", up.port())])).await;
    let req = format!(
        "POST http://localhost:{0}/a HTTP/1.1\r\nHost: localhost:{0}\r\nTransfer-Encoding: \
         chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET http://denied.test/ HTTP/1.1\r\nHost: \
         denied.test\r\n\r\n",
        up.port()
    );
    let (code, _, body) = exchange(gw, req.as_bytes()).await;
    assert_eq!(code, 200);
    assert_eq!(body, "saw POST /a HTTP/1.1");
    let upstream = String::from_utf8(seen.recv().await.unwrap()).unwrap();
    assert!(
        upstream.ends_with("\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
        "{upstream:?}"
    );
    assert!(!upstream.contains("denied.test"), "{upstream:?}");
}

#[tokio::test]
async fn a_wildcard_admits_subdomains_and_not_the_apex() {
    let (up, _seen) = upper_upstream().await;
    let p = up.port();
    let mut c = config(&[format!("*.example.test:{p}")]);
    c.resolver = fixed(&["a.example.test", "a.b.example.test", "example.test"]);
    let gw = start(c).await;
    for host in ["a.example.test", "A.B.Example.TEST."] {
        let mut s = tunnel(gw, &format!("{host}:{p}")).await;
        assert_eq!(round_trip(&mut s, b"x").await, b"X", "{host}");
    }
    for host in [
        "example.test",
        "badexample.test",
        "a.example.test.evil.test",
    ] {
        let req = format!("CONNECT {host}:{p} HTTP/1.1\r\n\r\n");
        let (code, _, body) = exchange(gw, req.as_bytes()).await;
        assert_eq!(code, 403, "{host}: {body}");
        assert!(body.contains(host), "{body}");
    }
}

#[tokio::test]
async fn a_port_restriction_admits_that_port_only() {
    let (up, _seen) = upper_upstream().await;
    let other = closed_port().await;
    let gw = start(config(&[format!("localhost:{}", up.port())])).await;
    let req = format!("CONNECT localhost:{other} HTTP/1.1\r\n\r\n");
    let (code, _, body) = exchange(gw, req.as_bytes()).await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains(&format!("allowed on port {} only, not {other}", up.port())),
        "{body}"
    );
    let mut s = tunnel(gw, &format!("localhost:{}", up.port())).await;
    assert_eq!(round_trip(&mut s, b"ok").await, b"OK");
}

#[tokio::test]
async fn an_address_is_refused_unless_that_address_is_allowed() {
    let (up, _seen) = upper_upstream().await;
    let p = up.port();
    let gw = start(config(&[format!("localhost:{p}")])).await;
    let (code, _, body) = exchange(
        gw,
        format!("CONNECT 127.0.0.1:{p} HTTP/1.1\r\n\r\n").as_bytes(),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("is an IP address"), "{body}");
    let gw = start(config(&[format!("127.0.0.1:{p}")])).await;
    let mut s = tunnel(gw, &format!("127.0.0.1:{p}")).await;
    assert_eq!(round_trip(&mut s, b"ip").await, b"IP");
}

#[tokio::test]
async fn an_oversized_head_is_refused_with_431() {
    let (up, mut seen) = http_upstream().await;
    let mut c = config(&[format!("localhost:{}", up.port())]);
    c.max_head_bytes = 16 * 1024;
    let gw = start(c).await;
    let big = "a".repeat(20 * 1024);
    let req = format!(
        "GET http://localhost:{}/ HTTP/1.1\r\nX-Big: {big}\r\n\r\n",
        up.port()
    );
    let (code, _, body) = exchange(gw, req.as_bytes()).await;
    assert_eq!(code, 431, "{body}");
    // Just under the limit passes.
    let fits = "a".repeat(15 * 1024);
    let req = format!(
        "GET http://localhost:{}/ HTTP/1.1\r\nX-Big: {fits}\r\n\r\n",
        up.port()
    );
    assert_eq!(exchange(gw, req.as_bytes()).await.0, 200);
    assert!(seen.recv().await.is_some());
}

#[tokio::test]
async fn malformed_requests_get_400() {
    let gw = start(config(&["*".into()])).await;
    for req in [
        "NONSENSE\r\n\r\n",
        "CONNECT no-port HTTP/1.1\r\n\r\n",
        "CONNECT bad host:443 HTTP/1.1\r\n\r\n",
        "CONNECT 127.1:443 HTTP/1.1\r\n\r\n",
        "GET https://example.test/ HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\n\r\n",
        "GET http://example.test/ HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        "GET http://user@example.test/ HTTP/1.1\r\n\r\n",
    ] {
        let (code, _, body) = exchange(gw, req.as_bytes()).await;
        assert_eq!(code, 400, "{req:?}: {body}");
        assert!(!body.is_empty(), "{req:?}");
    }
}

#[tokio::test]
async fn an_unreachable_upstream_is_502_and_a_connect_timeout_504() {
    let closed = closed_port().await;
    let gw = start(config(&[format!("localhost:{closed}")])).await;
    let (code, _, body) = exchange(
        gw,
        format!("CONNECT localhost:{closed} HTTP/1.1\r\n\r\n").as_bytes(),
    )
    .await;
    assert_eq!(code, 502, "{body}");
    assert!(body.contains("cannot connect"), "{body}");
    let mut c = config(&["unknown.test".into()]);
    c.resolver = fixed(&[]);
    let gw = start(c).await;
    let (code, _, body) = exchange(gw, b"CONNECT unknown.test:443 HTTP/1.1\r\n\r\n").await;
    assert_eq!(code, 502, "{body}");

    // A listener whose accept queue is full drops further SYNs, so connecting to it hangs.
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let full = socket.listen(1).unwrap();
    let port = full.local_addr().unwrap().port();
    let mut fillers = Vec::new();
    let mut hung = false;
    for _ in 0..16 {
        match tokio::time::timeout(
            Duration::from_millis(300),
            TcpStream::connect(("127.0.0.1", port)),
        )
        .await
        {
            Ok(s) => fillers.push(s.unwrap()),
            Err(_) => {
                hung = true;
                break;
            }
        }
    }
    assert!(hung, "the accept queue never filled");
    let mut c = config(&[format!("127.0.0.1:{port}")]);
    c.connect_timeout = Duration::from_millis(500);
    let gw = start(c).await;
    let (code, _, body) = exchange(
        gw,
        format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").as_bytes(),
    )
    .await;
    assert_eq!(code, 504, "{body}");
    assert!(body.contains("took longer than"), "{body}");
    drop((full, fillers));
}

#[tokio::test]
async fn connections_over_the_bound_get_503_and_an_idle_tunnel_is_closed() {
    let (up, _seen) = upper_upstream().await;
    let mut c = config(&[format!("localhost:{}", up.port())]);
    c.max_connections = 1;
    c.idle_timeout = Duration::from_millis(500);
    let gw = start(c).await;
    let mut first = tunnel(gw, &format!("localhost:{}", up.port())).await;
    // It is answered at once, before it has sent anything: a gateway at its bound reads nothing.
    let mut second = TcpStream::connect(gw).await.unwrap();
    let (code, _) = read_head(&mut second).await;
    let mut body = String::new();
    tokio::time::timeout(WAIT, second.read_to_string(&mut body))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("--max-connections"), "{body}");
    // Left silent, the tunnel is closed after the idle timeout, and its slot is free again.
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), first.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the idle tunnel stayed open");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut s = tunnel(gw, &format!("localhost:{}", up.port())).await;
    assert_eq!(round_trip(&mut s, b"again").await, b"AGAIN");
}

#[tokio::test]
async fn a_slow_head_gets_408() {
    let mut c = config(&["*".into()]);
    c.head_timeout = Duration::from_millis(300);
    let gw = start(c).await;
    let (code, _, _) = exchange(gw, b"CONNECT a.test:443 HTTP/1.1\r\n").await;
    assert_eq!(code, 408);
}
