//! `pando-test-server`: the project's own server for real-node tests, built statically into the
//! image `pando.test/server:1` (scripts/lib/images.bash).
//!
//! - `--listen PORT` (repeatable; `ADDRESS:PORT` too) serves HTTP/1 on each, `0.0.0.0` for a
//!   bare port. Each listener's address goes to stderr as `listening on ADDRESS:PORT`.
//!   - `GET /` (any path but those below) answers `pando-test-server host=<h> pod=<p> port=<n>`:
//!     the hostname (the pod's), `$POD_NAME` or `-`, the port the request came in on.
//!   - `GET /write?path=P&data=D` writes D to the file P and answers `ok` (volume tests).
//!   - `GET /read?path=P` answers the file's bytes.
//!   - `GET /exit?code=N` answers `exiting N`, then the process exits with N.
//! - `--print LINE --exit N` prints LINE to stdout and exits with N at once (the logs-after-stop
//!   test); either alone works (`--exit` defaults to 0).
//!
//! Standard library only, a thread per connection: it serves a test's handful of requests, and
//! it must stay small and static.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

/// Largest request head read; tests send short ones.
const MAX_HEAD: usize = 8 * 1024;

/// An answer to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
    /// Exit the process with this code once the answer is sent.
    pub exit: Option<i32>,
}

impl Answer {
    fn text(status: u16, body: impl Into<String>) -> Answer {
        let mut body = body.into();
        body.push('\n');
        Answer {
            status,
            body: body.into_bytes(),
            exit: None,
        }
    }
}

/// Who this server is, for the identity answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The hostname.
    pub host: String,
    /// `$POD_NAME`, or `-`.
    pub pod: String,
}

impl Identity {
    /// Read from the kernel and the environment.
    pub fn current() -> Identity {
        // In a container the UTS namespace's hostname is the pod's name; std has no gethostname.
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .ok()
            .filter(|h| !h.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "-".into());
        let pod = std::env::var("POD_NAME")
            .ok()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "-".into());
        Identity { host, pod }
    }

    /// The identity line for a request on `port`.
    pub fn line(&self, port: u16) -> String {
        format!(
            "pando-test-server host={} pod={} port={port}",
            self.host, self.pod
        )
    }
}

/// Decodes `%XX` escapes and `+` as a space; a malformed escape is an error.
pub fn percent_decode(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("a malformed escape at byte {i} of `{text}`"))?;
                out.push(hex);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// The query's value of `name`, decoded.
fn param(query: &str, name: &str) -> Result<Option<Vec<u8>>, String> {
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if percent_decode(k)? == name.as_bytes() {
            return percent_decode(v).map(Some);
        }
    }
    Ok(None)
}

fn path_param(query: &str) -> Result<String, Answer> {
    match param(query, "path") {
        Ok(Some(p)) if !p.is_empty() => {
            String::from_utf8(p).map_err(|_| Answer::text(400, "path is not UTF-8"))
        }
        Ok(_) => Err(Answer::text(400, "missing path=")),
        Err(e) => Err(Answer::text(400, e)),
    }
}

/// The answer to `method target` arriving on `port`.
pub fn answer(identity: &Identity, port: u16, method: &str, target: &str) -> Answer {
    if method != "GET" {
        return Answer::text(405, format!("{method} is not served; only GET"));
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    match path {
        "/write" => {
            let file = match path_param(query) {
                Ok(f) => f,
                Err(a) => return a,
            };
            let data = match param(query, "data") {
                Ok(d) => d.unwrap_or_default(),
                Err(e) => return Answer::text(400, e),
            };
            match std::fs::write(&file, data) {
                Ok(()) => Answer::text(200, "ok"),
                Err(e) => Answer::text(500, format!("writing {file}: {e}")),
            }
        }
        "/read" => {
            let file = match path_param(query) {
                Ok(f) => f,
                Err(a) => return a,
            };
            match std::fs::read(&file) {
                Ok(body) => Answer {
                    status: 200,
                    body,
                    exit: None,
                },
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    Answer::text(404, format!("{file}: no such file"))
                }
                Err(e) => Answer::text(500, format!("reading {file}: {e}")),
            }
        }
        "/exit" => match param(query, "code").map(|c| c.map(String::from_utf8)) {
            Ok(Some(Ok(c))) => match c.parse::<i32>() {
                Ok(code) => Answer {
                    exit: Some(code),
                    ..Answer::text(200, format!("exiting {code}"))
                },
                Err(_) => Answer::text(400, format!("code `{c}` is not a number")),
            },
            Ok(_) => Answer::text(400, "missing code="),
            Err(e) => Answer::text(400, e),
        },
        _ => Answer::text(200, identity.line(port)),
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        _ => "Internal Server Error",
    }
}

/// Reads one request from `stream`, answers it, and returns the exit code it asked for.
pub fn serve_one(
    stream: &mut TcpStream,
    identity: &Identity,
    port: u16,
) -> io::Result<Option<i32>> {
    let mut reader = BufReader::new(Read::take(stream.try_clone()?, MAX_HEAD as u64));
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // The rest of the head is read and dropped: no field changes an answer.
    let mut complete = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if line == b"\r\n" || line == b"\n" {
            complete = true;
            break;
        }
    }
    let mut parts = request_line.split_whitespace();
    let answer = match (parts.next(), parts.next(), parts.next()) {
        _ if !complete && reader.get_ref().limit() == 0 => {
            Answer::text(431, "request head too large")
        }
        (Some(method), Some(target), Some(v)) if complete && v.starts_with("HTTP/1.") => {
            answer(identity, port, method, target)
        }
        _ => Answer::text(400, "not an HTTP/1 request"),
    };
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        answer.status,
        reason(answer.status),
        answer.body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(&answer.body)?;
    stream.flush()?;
    Ok(answer.exit)
}

/// Serves `listener` forever, a thread per connection; a request to `/exit` ends the process.
pub fn serve(listener: TcpListener, identity: Identity) -> io::Result<()> {
    let port = listener.local_addr()?.port();
    for stream in listener.incoming() {
        let mut stream = match stream {
            Ok(s) => s,
            Err(e) => {
                eprintln!("pando-test-server: accept on port {port}: {e}");
                continue;
            }
        };
        let identity = identity.clone();
        std::thread::spawn(move || match serve_one(&mut stream, &identity, port) {
            Ok(Some(code)) => {
                let _ = stream.shutdown(std::net::Shutdown::Write);
                std::process::exit(code);
            }
            Ok(None) => {}
            Err(e) => eprintln!("pando-test-server: port {port}: {e}"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> Identity {
        Identity {
            host: "h1".into(),
            pod: "web-0".into(),
        }
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%20b+c%2Fd").unwrap(), b"a b c/d");
        assert_eq!(percent_decode("%e2%9c%93").unwrap(), "✓".as_bytes());
        assert!(percent_decode("%zz").is_err());
        assert!(percent_decode("%4").is_err());
    }

    #[test]
    fn the_identity_line() {
        let a = answer(&id(), 8080, "GET", "/anything?x=1");
        assert_eq!(a.status, 200);
        assert_eq!(a.body, b"pando-test-server host=h1 pod=web-0 port=8080\n");
    }

    #[test]
    fn write_then_read() {
        let dir = std::env::temp_dir().join(format!("pando-test-server-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f.txt");
        let target = format!("/write?path={}&data=hello%20there", file.display());
        assert_eq!(answer(&id(), 1, "GET", &target).body, b"ok\n");
        let read = answer(&id(), 1, "GET", &format!("/read?path={}", file.display()));
        assert_eq!(
            (read.status, read.body.as_slice()),
            (200, &b"hello there"[..])
        );
        let missing = answer(
            &id(),
            1,
            "GET",
            &format!("/read?path={}/nope", dir.display()),
        );
        assert_eq!(missing.status, 404);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_requests() {
        assert_eq!(answer(&id(), 1, "GET", "/write?data=x").status, 400);
        assert_eq!(answer(&id(), 1, "GET", "/read").status, 400);
        assert_eq!(answer(&id(), 1, "GET", "/exit?code=x").status, 400);
        assert_eq!(answer(&id(), 1, "GET", "/exit").status, 400);
        assert_eq!(answer(&id(), 1, "POST", "/").status, 405);
        let exit = answer(&id(), 1, "GET", "/exit?code=7");
        assert_eq!((exit.status, exit.exit), (200, Some(7)));
    }
}
