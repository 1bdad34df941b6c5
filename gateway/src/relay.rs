//! Moving bytes once a request is admitted: the CONNECT tunnel, a forwarded request's body in
//! its framing, the upstream's response head rewritten for one request per connection.

use std::future::Future;
use std::io;
use std::time::Duration;

use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt,
};

use crate::head::{self, Destination, HeadError, Request};

/// Largest response head accepted from an upstream.
pub const MAX_RESPONSE_HEAD: usize = 64 * 1024;
/// Largest chunk-size line, extensions included, and the most trailer bytes.
const MAX_CHUNK_LINE: usize = 4096;
const MAX_TRAILERS: usize = 16 * 1024;
const BUFFER: usize = 16 * 1024;

/// Fields that describe one connection, not the message (RFC 9110 §7.6.1), and the proxy
/// credentials meant for this gateway: none of them is passed on.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
];

/// `fut`, or `TimedOut` after `idle`.
async fn idle<T>(idle: Duration, fut: impl Future<Output = io::Result<T>>) -> io::Result<T> {
    tokio::time::timeout(idle, fut)
        .await
        .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "idle timeout")))
}

/// Bytes each way through a tunnel, and whether it ended by the idle timeout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Moved {
    /// Client to upstream.
    pub up: u64,
    /// Upstream to client.
    pub down: u64,
    /// Closed because nothing moved for the idle timeout.
    pub idled: bool,
}

/// Copies both ways until both sides have closed, or nothing has moved either way for `limit`.
/// A side's end of stream is passed on as a half-close, so request-then-close clients work.
pub async fn tunnel<CR, CW, UR, UW>(
    mut cr: CR,
    mut cw: CW,
    mut ur: UR,
    mut uw: UW,
    limit: Duration,
) -> io::Result<Moved>
where
    CR: AsyncRead + Unpin,
    CW: AsyncWrite + Unpin,
    UR: AsyncRead + Unpin,
    UW: AsyncWrite + Unpin,
{
    let (mut a, mut b) = (vec![0u8; BUFFER], vec![0u8; BUFFER]);
    let (mut client_open, mut upstream_open) = (true, true);
    let mut moved = Moved::default();
    while client_open || upstream_open {
        tokio::select! {
            n = cr.read(&mut a), if client_open => match n? {
                0 => {
                    client_open = false;
                    // The upstream may already be gone; its reading side tells us that.
                    let _ = uw.shutdown().await;
                }
                n => {
                    idle(limit, uw.write_all(&a[..n])).await?;
                    moved.up += n as u64;
                }
            },
            n = ur.read(&mut b), if upstream_open => match n? {
                0 => {
                    upstream_open = false;
                    let _ = cw.shutdown().await;
                }
                n => {
                    idle(limit, cw.write_all(&b[..n])).await?;
                    moved.down += n as u64;
                }
            },
            () = tokio::time::sleep(limit) => {
                moved.idled = true;
                break;
            }
        }
    }
    Ok(moved)
}

/// How a request's body is delimited (RFC 9112 §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body.
    None,
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding` ending in `chunked`.
    Chunked,
}

/// The framing of `req`'s body. Both `Content-Length` and `Transfer-Encoding`, differing
/// lengths, or a final coding other than `chunked` are refused: each is how requests are
/// smuggled past a proxy that reads the framing differently from the upstream.
pub fn framing(req: &Request) -> Result<Framing, HeadError> {
    let bad = |m: &str| Err(HeadError::Malformed(m.into()));
    let codings: Vec<String> = req
        .values("transfer-encoding")
        .flat_map(|v| {
            String::from_utf8_lossy(v)
                .split(',')
                .map(|c| c.trim().to_ascii_lowercase())
                .collect::<Vec<_>>()
        })
        .filter(|c| !c.is_empty())
        .collect();
    let lengths: Vec<&[u8]> = req.values("content-length").collect();
    if !codings.is_empty() {
        if !lengths.is_empty() {
            return bad("both Content-Length and Transfer-Encoding");
        }
        if req.version == 0 {
            return bad("Transfer-Encoding in an HTTP/1.0 request");
        }
        if codings.last().map(String::as_str) != Some("chunked") {
            return bad("a Transfer-Encoding whose last coding is not `chunked`");
        }
        return Ok(Framing::Chunked);
    }
    let mut length = None;
    for value in lengths {
        for part in value.split(|&b| b == b',') {
            let part = part.trim_ascii();
            let n = std::str::from_utf8(part)
                .ok()
                .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|p| p.parse::<u64>().ok());
            match (n, length) {
                (None, _) => return bad("a Content-Length that is not a number"),
                (Some(n), Some(l)) if n != l => return bad("differing Content-Lengths"),
                (Some(n), _) => length = Some(n),
            }
        }
    }
    Ok(length.map_or(Framing::None, Framing::Length))
}

/// The head to send upstream: origin-form target, `Host` from the destination, no hop-by-hop
/// fields, and `Connection: close`, since each connection carries one request (every request
/// is checked, and a second one on the same connection never is).
pub fn upstream_head(req: &Request, dest: &Destination, path: &str) -> Vec<u8> {
    let listed = connection_tokens(&req.headers);
    let mut out = format!(
        "{} {path} HTTP/1.{}\r\nHost: {}\r\n",
        req.method, req.version, dest.authority
    )
    .into_bytes();
    push_fields(&mut out, &req.headers, &listed, &["host"]);
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out
}

fn connection_tokens(headers: &[(String, Vec<u8>)]) -> Vec<String> {
    head::values(headers, "connection")
        .flat_map(|v| {
            String::from_utf8_lossy(v)
                .split(',')
                .map(|t| t.trim().to_ascii_lowercase())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn push_fields(out: &mut Vec<u8>, headers: &[(String, Vec<u8>)], listed: &[String], drop: &[&str]) {
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        if HOP_BY_HOP.contains(&lower.as_str())
            || listed.contains(&lower)
            || drop.contains(&lower.as_str())
        {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
}

/// Copies `exactly` bytes.
async fn copy_exact<R, W>(r: &mut R, w: &mut W, mut exactly: u64, limit: Duration) -> io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    while exactly > 0 {
        let buf = idle(limit, r.fill_buf()).await?;
        if buf.is_empty() {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let n = buf
            .len()
            .min(usize::try_from(exactly).unwrap_or(usize::MAX));
        idle(limit, w.write_all(&buf[..n])).await?;
        r.consume(n);
        exactly -= n as u64;
    }
    Ok(())
}

/// One line, through its `\n`, of at most `max` bytes.
async fn line<R: AsyncBufRead + Unpin>(
    r: &mut R,
    max: usize,
    limit: Duration,
) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    idle(
        limit,
        (&mut *r).take(max as u64).read_until(b'\n', &mut line),
    )
    .await?;
    if !line.ends_with(b"\n") {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a chunk line too long or cut off",
        ));
    }
    Ok(line)
}

/// Copies a request body in its framing, and nothing after it.
pub async fn copy_body<R, W>(
    r: &mut R,
    w: &mut W,
    framing: Framing,
    limit: Duration,
) -> io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    match framing {
        Framing::None => Ok(()),
        Framing::Length(n) => copy_exact(r, w, n, limit).await,
        Framing::Chunked => loop {
            let size_line = line(r, MAX_CHUNK_LINE, limit).await?;
            let text = String::from_utf8_lossy(&size_line);
            let digits = text.split(';').next().unwrap_or_default().trim();
            let size = u64::from_str_radix(digits, 16).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidData, "a chunk size that is not hex")
            })?;
            idle(limit, w.write_all(&size_line)).await?;
            if size == 0 {
                let mut trailers = 0;
                loop {
                    let l = line(r, MAX_CHUNK_LINE, limit).await?;
                    trailers += l.len();
                    if trailers > MAX_TRAILERS {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "trailers too large",
                        ));
                    }
                    idle(limit, w.write_all(&l)).await?;
                    if l == b"\r\n" || l == b"\n" {
                        return Ok(());
                    }
                }
            }
            copy_exact(r, w, size, limit).await?;
            let end = line(r, 2, limit).await?;
            if end != b"\r\n" && end != b"\n" {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a chunk not followed by CRLF",
                ));
            }
            idle(limit, w.write_all(&end)).await?;
        },
    }
}

/// Why relaying a response failed.
#[derive(Debug, thiserror::Error)]
pub enum ResponseError {
    /// No response head reached the client: it may still be told (502).
    #[error("the upstream sent no valid response: {0}")]
    NoResponse(String),
    /// No response head within the idle timeout: it may still be told (504).
    #[error("the upstream sent no response within {0:?}")]
    Timeout(Duration),
    /// The client has had a head: the connection can only be cut.
    #[error("relaying the response: {0}")]
    Cut(io::Error),
}

/// Relays the upstream's response: interim (1xx) heads as they come, the final head with
/// `Connection: close`, then the body as it is until the upstream closes. Returns the body's
/// size.
pub async fn relay_response<R, W>(
    mut ur: R,
    cw: &mut W,
    limit: Duration,
) -> Result<u64, ResponseError>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut sent = false;
    loop {
        let raw = match tokio::time::timeout(limit, head::read(&mut ur, MAX_RESPONSE_HEAD)).await {
            Ok(Ok(raw)) => raw,
            Ok(Err(HeadError::Closed)) if !sent => {
                return Err(ResponseError::NoResponse("it closed the connection".into()));
            }
            Ok(Err(e)) if !sent => return Err(ResponseError::NoResponse(e.to_string())),
            Ok(Err(e)) => return Err(ResponseError::Cut(io::Error::other(e.to_string()))),
            Err(_) if !sent => return Err(ResponseError::Timeout(limit)),
            Err(_) => return Err(ResponseError::Cut(io::ErrorKind::TimedOut.into())),
        };
        let res = match head::parse_response(&raw, MAX_RESPONSE_HEAD) {
            Ok(res) => res,
            Err(e) if !sent => return Err(ResponseError::NoResponse(e.to_string())),
            Err(e) => return Err(ResponseError::Cut(io::Error::other(e.to_string()))),
        };
        let interim = (100..200).contains(&res.code) && res.code != 101;
        let listed = connection_tokens(&res.headers);
        let mut out =
            format!("HTTP/1.{} {} {}\r\n", res.version, res.code, res.reason).into_bytes();
        push_fields(&mut out, &res.headers, &listed, &[]);
        if !interim {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        out.extend_from_slice(b"\r\n");
        sent = true;
        idle(limit, cw.write_all(&out))
            .await
            .map_err(ResponseError::Cut)?;
        if interim {
            continue;
        }
        let mut buf = vec![0u8; BUFFER];
        let mut total = 0u64;
        loop {
            let n = idle(limit, ur.read(&mut buf))
                .await
                .map_err(ResponseError::Cut)?;
            if n == 0 {
                let _ = cw.shutdown().await;
                return Ok(total);
            }
            idle(limit, cw.write_all(&buf[..n]))
                .await
                .map_err(ResponseError::Cut)?;
            total += n as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(headers: &[(&str, &str)], version: u8) -> Request {
        Request {
            method: "POST".into(),
            target: "http://a.test/".into(),
            version,
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), v.as_bytes().to_vec()))
                .collect(),
        }
    }

    #[test]
    fn framing_refuses_what_smuggles() {
        assert_eq!(framing(&request(&[], 1)).unwrap(), Framing::None);
        assert_eq!(
            framing(&request(&[("Content-Length", "5")], 1)).unwrap(),
            Framing::Length(5)
        );
        assert_eq!(
            framing(&request(&[("Content-Length", "5, 5")], 1)).unwrap(),
            Framing::Length(5)
        );
        assert_eq!(
            framing(&request(&[("Transfer-Encoding", "gzip, Chunked")], 1)).unwrap(),
            Framing::Chunked
        );
        for bad in [
            request(
                &[("Content-Length", "5"), ("Transfer-Encoding", "chunked")],
                1,
            ),
            request(&[("Content-Length", "5"), ("Content-Length", "6")], 1),
            request(&[("Content-Length", "-1")], 1),
            request(&[("Content-Length", "+5")], 1),
            request(&[("Transfer-Encoding", "chunked, gzip")], 1),
            request(&[("Transfer-Encoding", "chunked")], 0),
        ] {
            assert!(framing(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_upstream_head_drops_hop_by_hop_fields_and_closes() {
        let req = request(
            &[
                ("Host", "other.test"),
                ("Proxy-Authorization", "Basic eA=="),
                ("Connection", "keep-alive, X-Secret"),
                ("X-Secret", "1"),
                ("Accept", "*/*"),
            ],
            1,
        );
        let dest = head::authority("a.test:8080", None).unwrap();
        let out = String::from_utf8(upstream_head(&req, &dest, "/p?q")).unwrap();
        assert_eq!(
            out,
            "POST /p?q HTTP/1.1\r\nHost: a.test:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
    }

    #[tokio::test]
    async fn a_chunked_body_is_copied_through_its_last_chunk_and_no_further() {
        let input = b"4;ext=1\r\nabcd\r\n0\r\nX-T: 1\r\n\r\nGET http://evil.test/ HTTP/1.1\r\n\r\n";
        let mut r = tokio::io::BufReader::new(&input[..]);
        let mut out = Vec::new();
        copy_body(&mut r, &mut out, Framing::Chunked, Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(out, b"4;ext=1\r\nabcd\r\n0\r\nX-T: 1\r\n\r\n");
        let mut r = tokio::io::BufReader::new(&b"zz\r\n"[..]);
        assert!(
            copy_body(
                &mut r,
                &mut Vec::new(),
                Framing::Chunked,
                Duration::from_secs(1)
            )
            .await
            .is_err()
        );
        let mut r = tokio::io::BufReader::new(&b"abc"[..]);
        assert!(
            copy_body(
                &mut r,
                &mut Vec::new(),
                Framing::Length(5),
                Duration::from_secs(1)
            )
            .await
            .is_err()
        );
    }

    #[tokio::test]
    async fn a_response_gets_connection_close_and_interim_heads_pass() {
        let upstream = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nContent-Length: 2\r\n\r\nhi";
        let mut out = Vec::new();
        let n = relay_response(&upstream[..], &mut out, Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"
        );
        let mut out = Vec::new();
        assert!(matches!(
            relay_response(&b"SSH-2.0-x\r\n\r\n"[..], &mut out, Duration::from_secs(1)).await,
            Err(ResponseError::NoResponse(_))
        ));
        assert!(out.is_empty());
    }
}
