//! HTTP/1 message heads: reading one within a size bound, parsing it, and where a proxy request
//! wants to go.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

use crate::allow::{Host, ParseError};

/// Most header fields a head may carry.
const MAX_HEADERS: usize = 100;

/// Why a head could not be read or understood.
#[derive(Debug, thiserror::Error)]
pub enum HeadError {
    /// The peer closed before sending a byte: not an error worth an answer.
    #[error("the connection closed before a request")]
    Closed,
    /// Longer than the limit, or more fields than [`MAX_HEADERS`].
    #[error("the request head is larger than {0} bytes or has more than 100 fields")]
    TooLarge(usize),
    /// Not HTTP/1, or not what a proxy can act on.
    #[error("{0}")]
    Malformed(String),
    /// Reading failed.
    #[error("reading the request head: {0}")]
    Io(#[from] std::io::Error),
}

/// Reads one head, through its empty line, of at most `limit` bytes. The bytes after it stay in
/// `reader`. Empty lines before the head are skipped, as RFC 9112 asks of a server.
pub async fn read<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    limit: usize,
) -> Result<Vec<u8>, HeadError> {
    let mut head = Vec::with_capacity(1024);
    // Skipped empty lines still count towards the limit, or a stream of them would never end.
    let mut skipped = 0;
    loop {
        let start = head.len();
        let room = (limit - start) as u64;
        let n = (&mut *reader)
            .take(room)
            .read_until(b'\n', &mut head)
            .await?;
        let line = &head[start..];
        if n == 0 {
            return Err(if room == 0 {
                HeadError::TooLarge(limit)
            } else if head.len() == skipped {
                HeadError::Closed
            } else {
                HeadError::Malformed(
                    "the connection closed in the middle of the request head".into(),
                )
            });
        }
        if !line.ends_with(b"\n") {
            if head.len() >= limit {
                return Err(HeadError::TooLarge(limit));
            }
            return Err(HeadError::Malformed(
                "the connection closed in the middle of the request head".into(),
            ));
        }
        if line == b"\r\n" || line == b"\n" {
            if start == skipped {
                skipped = head.len();
                continue;
            }
            return Ok(head.split_off(skipped));
        }
    }
}

/// A parsed request head.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method, as sent.
    pub method: String,
    /// The request target, as sent.
    pub target: String,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub version: u8,
    /// The fields in order, names as sent.
    pub headers: Vec<(String, Vec<u8>)>,
}

/// A parsed response head.
#[derive(Debug, Clone)]
pub struct Response {
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub version: u8,
    /// The status code.
    pub code: u16,
    /// The reason phrase, as sent.
    pub reason: String,
    /// The fields in order, names as sent.
    pub headers: Vec<(String, Vec<u8>)>,
}

fn fields(headers: &[httparse::Header<'_>]) -> Vec<(String, Vec<u8>)> {
    headers
        .iter()
        .map(|h| (h.name.to_owned(), h.value.to_vec()))
        .collect()
}

fn parse_error(e: httparse::Error, limit: usize) -> HeadError {
    match e {
        httparse::Error::TooManyHeaders => HeadError::TooLarge(limit),
        e => HeadError::Malformed(format!("not an HTTP/1 request: {e}")),
    }
}

/// Parses a head [`read`] returned.
pub fn parse_request(head: &[u8], limit: usize) -> Result<Request, HeadError> {
    let mut storage = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut storage);
    match req.parse(head).map_err(|e| parse_error(e, limit))? {
        httparse::Status::Complete(_) => {}
        httparse::Status::Partial => {
            return Err(HeadError::Malformed("an incomplete request head".into()));
        }
    }
    Ok(Request {
        method: req.method.unwrap_or_default().to_owned(),
        target: req.path.unwrap_or_default().to_owned(),
        version: req.version.unwrap_or(1),
        headers: fields(req.headers),
    })
}

/// Parses a response head [`read`] returned.
pub fn parse_response(head: &[u8], limit: usize) -> Result<Response, HeadError> {
    let mut storage = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut res = httparse::Response::new(&mut storage);
    match res.parse(head).map_err(|e| parse_error(e, limit))? {
        httparse::Status::Complete(_) => {}
        httparse::Status::Partial => {
            return Err(HeadError::Malformed("an incomplete response head".into()));
        }
    }
    Ok(Response {
        version: res.version.unwrap_or(1),
        code: res.code.unwrap_or_default(),
        reason: res.reason.unwrap_or_default().to_owned(),
        headers: fields(res.headers),
    })
}

impl Request {
    /// The values of every field named `name` (case-insensitively).
    pub fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        values(&self.headers, name)
    }
}

/// The values of every field named `name` (case-insensitively).
pub fn values<'a>(
    headers: &'a [(String, Vec<u8>)],
    name: &'a str,
) -> impl Iterator<Item = &'a [u8]> + 'a {
    headers
        .iter()
        .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_slice())
}

/// Where a request wants to go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// The host, normalized.
    pub host: Host,
    /// The port.
    pub port: u16,
    /// The authority as the client wrote it, for the forwarded `Host` field.
    pub authority: String,
}

fn bad(what: &str, e: ParseError) -> HeadError {
    HeadError::Malformed(format!("{what}: {e}"))
}

/// `host:port`, `[v6]:port`, or, with a `default` port, the host alone.
pub fn authority(text: &str, default: Option<u16>) -> Result<Destination, HeadError> {
    if text.contains('@') {
        return Err(HeadError::Malformed(format!(
            "`{text}`: credentials in the authority are not accepted"
        )));
    }
    let (host, port) = match text.rfind(':') {
        // A colon inside brackets belongs to an IPv6 address.
        Some(i) if !text[i..].contains(']') => (&text[..i], Some(&text[i + 1..])),
        _ => (text, None),
    };
    let port = match (port, default) {
        (Some(p), _) if !p.is_empty() => match p.parse::<u16>() {
            Ok(n) if n != 0 && p.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => return Err(bad(text, ParseError::Port(p.into()))),
        },
        (_, Some(d)) => d,
        (_, None) => {
            return Err(HeadError::Malformed(format!(
                "`{text}` has no port: CONNECT wants `host:port`"
            )));
        }
    };
    Ok(Destination {
        host: Host::parse(host).map_err(|e| bad(text, e))?,
        port,
        authority: text.to_owned(),
    })
}

/// Where a forwarded (non-CONNECT) request goes, and the origin-form target to send upstream.
/// An absolute `http://` target decides (RFC 9112 §3.2.2: its authority replaces `Host`);
/// an origin-form target goes by `Host`.
pub fn forward_target(req: &Request) -> Result<(Destination, String), HeadError> {
    let target = req.target.as_str();
    if target.starts_with('/') {
        let mut hosts = req.values("host");
        let (Some(host), None) = (hosts.next(), hosts.next()) else {
            return Err(HeadError::Malformed(
                "an origin-form request needs exactly one `Host` field; a proxy request \
                 names its destination as `http://host/path`"
                    .into(),
            ));
        };
        let host = std::str::from_utf8(host)
            .map_err(|_| HeadError::Malformed("the `Host` field is not text".into()))?;
        return Ok((authority(host.trim(), Some(80))?, target.to_owned()));
    }
    let Some((scheme, rest)) = target.split_once("://") else {
        return Err(HeadError::Malformed(format!(
            "`{target}` is neither an absolute `http://` URI nor a path"
        )));
    };
    if !scheme.eq_ignore_ascii_case("http") {
        return Err(HeadError::Malformed(format!(
            "scheme `{scheme}` is not proxied as a plain request; for https use CONNECT \
             (HTTPS_PROXY does that)"
        )));
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (auth, path) = rest.split_at(end);
    let path = match path.split_once('#') {
        Some((p, _)) => p,
        None => path,
    };
    let path = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    Ok((authority(auth, Some(80))?, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read_all(input: &[u8], limit: usize) -> Result<(Vec<u8>, Vec<u8>), HeadError> {
        let mut r = tokio::io::BufReader::new(input);
        let head = read(&mut r, limit).await?;
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).await?;
        Ok((head, rest))
    }

    #[tokio::test]
    async fn a_head_ends_at_its_empty_line_and_the_rest_stays() {
        let (head, rest) = read_all(b"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\nbody", 1024)
            .await
            .unwrap();
        assert_eq!(head, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(rest, b"body");
    }

    #[tokio::test]
    async fn a_head_over_the_limit_is_too_large() {
        let mut long = b"GET / HTTP/1.1\r\n".to_vec();
        long.extend(std::iter::repeat_n(b'a', 200));
        long.extend(b"\r\n\r\n");
        assert!(matches!(
            read_all(&long, 100).await,
            Err(HeadError::TooLarge(100))
        ));
        assert!(matches!(read_all(b"", 100).await, Err(HeadError::Closed)));
        assert!(matches!(
            read_all(b"GET / HTTP/1.1\r\n", 100).await,
            Err(HeadError::Malformed(_))
        ));
    }

    #[test]
    fn absolute_targets_name_the_destination_and_become_paths() {
        let req = |target: &str| Request {
            method: "GET".into(),
            target: target.into(),
            version: 1,
            headers: vec![("Host".into(), b"elsewhere.test".to_vec())],
        };
        let (d, path) = forward_target(&req("http://Example.com:8080/a?b=c#frag")).unwrap();
        assert_eq!(d.host, Host::Name("example.com".into()));
        assert_eq!((d.port, path.as_str()), (8080, "/a?b=c"));
        let (d, path) = forward_target(&req("http://example.com?q")).unwrap();
        assert_eq!((d.port, path.as_str()), (80, "/?q"));
        let (d, _) = forward_target(&req("/x")).unwrap();
        assert_eq!(d.host, Host::Name("elsewhere.test".into()));
        assert!(forward_target(&req("https://example.com/")).is_err());
        assert!(forward_target(&req("http://user:pw@example.com/")).is_err());
        assert!(forward_target(&req("example.com")).is_err());
    }

    #[test]
    fn authorities() {
        let d = authority("[2001:db8::1]:443", None).unwrap();
        assert_eq!(
            (d.host.to_string().as_str(), d.port),
            ("[2001:db8::1]", 443)
        );
        assert!(authority("[2001:db8::1]", None).is_err());
        assert_eq!(authority("[2001:db8::1]", Some(80)).unwrap().port, 80);
        assert!(authority("example.com", None).is_err());
        assert!(authority("example.com:0", None).is_err());
        assert!(authority("example.com:99999", None).is_err());
        assert!(authority(":443", None).is_err());
    }
}
