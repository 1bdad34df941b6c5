//! What `pando-host` tells about itself: `--metrics` after a verb,
//! `--metrics-listen` served over HTTP while one runs, and `RUST_LOG`'s log
//! lines of each adapter call.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use crate::common::{Cli, assert_exit, interrupt, stderr, stdout};

/// `--metrics -` writes the host's metrics to stderr after the verb,
/// counting the call just made; stdout stays the verb's.
#[test]
fn metrics_after_a_call_count_it() {
    let cli = Cli::new();
    let o = cli.run(&["--metrics", "-", "-o", "json", "health"]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(
        err.lines()
            .any(|l| l.starts_with("pando_adapter_calls_total{")
                && l.contains("method=\"health-check\"")
                && l.contains("outcome=\"ok\"")
                && l.ends_with(" 1")),
        "{err}"
    );
    assert!(err.contains("# EOF"), "{err}");
    assert!(!stdout(&o).contains("pando_"), "stdout is the verb's");
}

/// One HTTP/1.1 request to `addr`: the status line, the headers and the body.
fn http_get(addr: &str, path: &str) -> (String, String, String) {
    use std::io::Read;
    let mut conn = std::net::TcpStream::connect(addr).expect("the metrics endpoint accepts");
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("the request is sent");
    let mut answer = String::new();
    conn.read_to_string(&mut answer).expect("an answer");
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (status.to_string(), headers.to_lowercase(), body.to_string())
}

/// `--metrics-listen` serves the live metrics over HTTP while a long verb
/// runs, says where on stderr, and stops serving when the verb ends.
#[test]
fn metrics_are_served_over_http_while_a_watch_runs() {
    let cli = Cli::new();
    let mut child = cli
        .command(&["--metrics-listen", "127.0.0.1:0", "watch", "-o", "json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pando-host starts");
    let mut err = BufReader::new(child.stderr.take().expect("piped stderr"));
    let mut first = String::new();
    err.read_line(&mut first).expect("a line on stderr");
    let first = first.trim_end().to_string();
    // The rest drained, so that nothing the host writes later meets a closed pipe.
    let rest = std::thread::spawn(move || {
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut err, &mut rest).map(|_| rest)
    });
    let addr = first
        .strip_prefix("serving metrics on http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("stderr names the endpoint first: {first}"))
        .to_string();
    let out = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(out).lines();
    assert_eq!(
        lines.next().expect("an event").expect("a line"),
        "\"Watching\""
    );

    let (status, headers, body) = http_get(&addr, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK", "{headers}{body}");
    assert!(
        headers.contains("content-type: application/openmetrics-text; version=1.0.0"),
        "{headers}"
    );
    // Read from the adapter's own state as it is now: its pool and its limits.
    assert!(
        body.lines()
            .any(|l| l.starts_with("pando_adapter_instances_idle{adapter=\"")),
        "{body}"
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
    let (status, _, _) = http_get(&addr, "/");
    assert_eq!(status, "HTTP/1.1 404 Not Found");

    interrupt(&child);
    drop(lines);
    let status = child.wait().expect("pando-host ends");
    let rest = rest.join().expect("the drain").unwrap_or_default();
    assert_eq!(status.code(), Some(0), "{status:?}: {rest}");
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "nothing listens on {addr} once the verb has ended"
    );
}

/// A metrics address that cannot be bound is the user's input, named, and
/// no call is made.
#[test]
fn a_metrics_address_in_use_or_without_an_adapter_is_a_usage_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let addr = taken.local_addr().expect("its address").to_string();
    let o = Cli::new().run(&["--metrics-listen", &addr, "health"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains(&format!("--metrics-listen {addr}: cannot listen there")),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty(), "no call was made: {}", stdout(&o));

    // A verb that loads no adapter has no metrics to serve: refused, not ignored.
    let o = Cli::new().run(&["--metrics-listen", "127.0.0.1:0", "completions", "bash"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("this verb runs no loaded adapter"),
        "{}",
        stderr(&o)
    );
}

/// `RUST_LOG=info` shows each adapter call: its span's close, with the
/// method and outcome; into a pipe, without colour escapes.
#[test]
fn rust_log_info_shows_each_adapter_call() {
    let cli = Cli::new();
    let o = cli
        .command(&["health"])
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(
        err.lines().any(|l| l.contains("adapter_call")
            && l.contains("method=\"health-check\"")
            && l.contains("close")),
        "{err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "no escape codes into a pipe: {err:?}"
    );
}
