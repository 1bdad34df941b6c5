//! The `pando` binary itself: the adapter's command line, its log lines, and SIGTERM.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The next stderr line that is a JSON object with this `message`.
fn wait_for(lines: &mpsc::Receiver<String>, message: &str) -> Value {
    loop {
        let line = lines
            .recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("no `{message}` log line"));
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("a log line that is not JSON ({e}): {line}"));
        if value["message"] == message {
            return value;
        }
    }
}

#[tokio::test]
async fn the_binary_logs_each_decision_and_drains_on_sigterm() {
    let (up, _seen) = upper_upstream().await;
    let allow = format!("localhost:{}", up.port());
    let mut child = Command::new(env!("CARGO_BIN_EXE_pando"))
        .args([
            "egress-gateway",
            "--listen",
            "127.0.0.1:0",
            "--allow",
            &allow,
        ])
        .args(["--shutdown-grace", "10s"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let listening = wait_for(&lines, "egress gateway listening");
    let gw: std::net::SocketAddr = listening["listen"].as_str().unwrap().parse().unwrap();
    assert_eq!(listening["allow"], format!("[\"{allow}\"]"));

    let (code, _, body) = exchange(gw, b"CONNECT denied.test:443 HTTP/1.1\r\n\r\n").await;
    assert_eq!(code, 403, "{body}");
    let refused = wait_for(&lines, "request refused");
    assert_eq!(refused["decision"], "refused");
    assert_eq!(refused["host"], "denied.test");
    assert_eq!(refused["port"], 443);
    assert_eq!(refused["status"], 403);
    assert!(
        refused["client"]
            .as_str()
            .unwrap()
            .starts_with("127.0.0.1:")
    );
    assert!(
        refused["reason"]
            .as_str()
            .unwrap()
            .contains("--allow denied.test:443")
    );

    let mut open = tunnel(gw, &allow).await;
    let allowed = wait_for(&lines, "request allowed");
    assert_eq!(allowed["decision"], "allowed");
    assert_eq!(allowed["rule"], allow.as_str());
    assert_eq!(allowed["port"], up.port());

    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    wait_for(&lines, "shutting down: no new connections");
    // No new connections, while the open tunnel keeps working through the grace period.
    assert!(
        TcpStream::connect(gw).await.is_err(),
        "still accepting after SIGTERM"
    );
    assert_eq!(round_trip(&mut open, b"still here").await, b"STILL HERE");
    open.shutdown().await.unwrap();
    let mut rest = Vec::new();
    open.read_to_end(&mut rest).await.unwrap();
    // Its last tunnel closed, the gateway exits well before the grace period ends.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running after its last tunnel"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status}");
}

#[test]
fn a_malformed_rule_stops_the_binary_with_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_pando"))
        .args([
            "egress-gateway",
            "--listen",
            "127.0.0.1:0",
            "--allow",
            "a.*.example.com",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("a.*.example.com"), "{stderr}");
}
