//! The `pando-test-server` binary on 127.0.0.1: identity on each port, files written and read,
//! exit on request, and the print-and-exit mode.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_pando-test-server");

/// Starts the server on `n` ephemeral loopback ports and returns them, from its stderr.
fn start(n: usize) -> (Child, Vec<SocketAddr>) {
    let mut cmd = Command::new(BIN);
    for _ in 0..n {
        cmd.args(["--listen", "127.0.0.1:0"]);
    }
    let mut child = cmd
        .env("POD_NAME", "web-7")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addrs = (0..n)
        .map(|_| {
            let line = lines.next().unwrap().unwrap();
            line.strip_prefix("listening on ")
                .unwrap_or_else(|| panic!("{line}"))
                .parse()
                .unwrap()
        })
        .collect();
    (child, addrs)
}

/// One GET; the status and the body.
fn get(addr: SocketAddr, target: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {target} HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("{answer:?}"));
    let code = head.split(' ').nth(1).unwrap().parse().unwrap();
    (code, body.to_owned())
}

fn wait(child: &mut Child) -> Option<i32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        assert!(Instant::now() < deadline, "still running");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn each_port_answers_with_the_servers_identity_and_its_own_port() {
    let (mut child, addrs) = start(2);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    for addr in &addrs {
        let (code, body) = get(*addr, "/");
        assert_eq!(code, 200);
        assert_eq!(
            body,
            format!(
                "pando-test-server host={} pod=web-7 port={}\n",
                host.trim(),
                addr.port()
            )
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_file_written_is_read_back_and_exit_ends_the_process_with_its_code() {
    let dir = std::env::temp_dir().join(format!("pando-test-server-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("data");
    let (mut child, addrs) = start(1);
    let (code, body) = get(
        addrs[0],
        &format!("/write?path={}&data=a%20b%0A", file.display()),
    );
    assert_eq!((code, body.as_str()), (200, "ok\n"));
    assert_eq!(std::fs::read(&file).unwrap(), b"a b\n");
    let (code, body) = get(addrs[0], &format!("/read?path={}", file.display()));
    assert_eq!((code, body.as_str()), (200, "a b\n"));
    let (code, _) = get(addrs[0], &format!("/read?path={}/missing", dir.display()));
    assert_eq!(code, 404);
    let (code, body) = get(addrs[0], "/exit?code=3");
    assert_eq!((code, body.as_str()), (200, "exiting 3\n"));
    assert_eq!(wait(&mut child), Some(3));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn print_and_exit_prints_the_line_and_exits_at_once() {
    let out = Command::new(BIN)
        .args(["--print", "last words", "--exit", "4"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(out.stdout, b"last words\n");
    let out = Command::new(BIN).args(["--exit", "0"]).output().unwrap();
    assert_eq!((out.status.code(), out.stdout.len()), (Some(0), 0));
}

#[test]
fn bad_arguments_are_a_usage_error() {
    for args in [
        &[][..],
        &["--listen"][..],
        &["--listen", "nope"][..],
        &["--exit", "x"][..],
        &["--listen", "127.0.0.1:0", "--print", "x"][..],
        &["--bogus"][..],
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("usage:"),
            "{args:?}"
        );
    }
}

#[test]
fn a_request_that_is_not_http_gets_400() {
    let (mut child, addrs) = start(1);
    let mut s = TcpStream::connect(addrs[0]).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"hello\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
    let _ = child.kill();
    let _ = child.wait();
}
