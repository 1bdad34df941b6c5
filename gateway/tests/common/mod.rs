//! Loopback upstreams and a raw client for the gateway's tests. Everything listens on
//! 127.0.0.1 with an ephemeral port.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Bounds every wait in a test, so a broken gateway fails it rather than hanging it.
pub const WAIT: Duration = Duration::from_secs(10);

/// An upstream that answers each byte with its uppercase, until the client closes; then it
/// writes `BYE` and closes.
pub async fn upper_upstream() -> (SocketAddr, mpsc::UnboundedReceiver<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            seen.extend_from_slice(&buf[..n]);
                            let up = buf[..n].to_ascii_uppercase();
                            if s.write_all(&up).await.is_err() {
                                break;
                            }
                        }
                    }
                }
                let _ = s.write_all(b"BYE").await;
                let _ = tx.send(seen);
            });
        }
    });
    (addr, rx)
}

/// An HTTP upstream: reads one request (its body by Content-Length or through the last chunk),
/// answers `200` with `saw <request line>` and a keep-alive it does not honour, then records
/// whatever else arrives until the client closes or half a second passes.
pub async fn http_upstream() -> (SocketAddr, mpsc::UnboundedReceiver<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                let head_end = loop {
                    if let Some(i) = find(&seen, b"\r\n\r\n") {
                        break i + 4;
                    }
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => {
                            let _ = tx.send(seen);
                            return;
                        }
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                };
                let head = String::from_utf8_lossy(&seen[..head_end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .and_then(|v| v.trim().parse::<usize>().ok());
                let chunked = head.contains("transfer-encoding: chunked");
                while !(length.is_some_and(|n| seen.len() >= head_end + n)
                    || chunked && seen.ends_with(b"0\r\n\r\n")
                    || length.is_none() && !chunked)
                {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let line = String::from_utf8_lossy(&seen[..head_end]);
                let body = format!("saw {}", line.lines().next().unwrap_or_default());
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: keep-alive\r\n\
                     X-Upstream: yes\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(answer.as_bytes()).await;
                let _ = tokio::time::timeout(Duration::from_millis(500), async {
                    loop {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => seen.extend_from_slice(&buf[..n]),
                        }
                    }
                })
                .await;
                let _ = tx.send(seen);
            });
        }
    });
    (addr, rx)
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A port nothing listens on (bound, then released).
pub async fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    l.local_addr().unwrap().port()
}

/// Reads a response head, byte by byte so that nothing after it is consumed, and returns its
/// status code and text.
pub async fn read_head(s: &mut TcpStream) -> (u16, String) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(WAIT, s.read(&mut byte))
            .await
            .expect("the gateway answers in time")
            .expect("reading the answer");
        assert!(
            n == 1,
            "closed before a full head: {:?}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    let text = String::from_utf8(head).unwrap();
    let code = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"));
    (code, text)
}

/// Sends `request` and reads the whole answer, which the gateway ends by closing.
pub async fn exchange(gateway: SocketAddr, request: &[u8]) -> (u16, String, String) {
    let mut s = TcpStream::connect(gateway).await.unwrap();
    s.write_all(request).await.unwrap();
    let (code, head) = read_head(&mut s).await;
    let mut body = Vec::new();
    tokio::time::timeout(WAIT, s.read_to_end(&mut body))
        .await
        .expect("the gateway closes after its answer")
        .expect("reading the body");
    (code, head, String::from_utf8_lossy(&body).into_owned())
}

/// Opens a CONNECT tunnel and returns the stream after the gateway's 200.
pub async fn tunnel(gateway: SocketAddr, target: &str) -> TcpStream {
    let mut s = TcpStream::connect(gateway).await.unwrap();
    let req = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let (code, head) = read_head(&mut s).await;
    assert_eq!(code, 200, "{head}");
    s
}

/// Writes `data` and reads exactly as many bytes back.
pub async fn round_trip(s: &mut TcpStream, data: &[u8]) -> Vec<u8> {
    s.write_all(data).await.unwrap();
    let mut back = vec![0u8; data.len()];
    tokio::time::timeout(WAIT, s.read_exact(&mut back))
        .await
        .expect("the tunnel answers in time")
        .expect("reading through the tunnel");
    back
}
