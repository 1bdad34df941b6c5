//! `exec -t -i` on a real terminal: a pseudo-terminal this test opens is
//! `pando-host`'s stdin. The terminal is in raw mode while the session runs
//! and exactly as it was after the session ends, here by an interrupt. A
//! first compile shows progress on a terminal, and only there.

use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rustix::fs::{Mode, OFlags};
use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
use rustix::termios::{self, LocalModes, Termios};

use crate::common::{interrupt, test_adapter};

/// A pseudo-terminal: the controlling end and the terminal end.
fn pty() -> (OwnedFd, OwnedFd) {
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).expect("a pseudo-terminal");
    grantpt(&master).expect("grantpt");
    unlockpt(&master).expect("unlockpt");
    let name = ptsname(&master, Vec::new()).expect("its name");
    let terminal = rustix::fs::open(
        name.as_c_str(),
        OFlags::RDWR | OFlags::NOCTTY,
        Mode::empty(),
    )
    .expect("its terminal end");
    (master, terminal)
}

/// The settings raw mode changes, for comparing before and after.
fn modes(t: &Termios) -> String {
    format!(
        "{:?} {:?} {:?} {:?}",
        t.input_modes, t.output_modes, t.control_modes, t.local_modes
    )
}

/// A session of the test adapter's `hang` (it never exits by itself) on a
/// pseudo-terminal, once the terminal has gone raw: the process, the
/// terminal end, and its settings from before.
struct Session {
    child: std::process::Child,
    terminal: OwnedFd,
    before: Termios,
    _master: OwnedFd,
    _cache: tempfile::TempDir,
}

const COOKED: LocalModes = LocalModes::ICANON
    .union(LocalModes::ECHO)
    .union(LocalModes::ISIG);

fn raw_session() -> Session {
    let (master, terminal) = pty();
    let before = termios::tcgetattr(&terminal).expect("the terminal's settings");
    assert!(before.local_modes.contains(COOKED), "{}", modes(&before));
    let cache = tempfile::tempdir().expect("a cache dir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_pando-host"))
        .arg("--cache-dir")
        .arg(cache.path())
        .env("PANDO_ADAPTER", test_adapter())
        .env_remove("RUST_LOG")
        .args(["exec", "-t", "-i", "shop", "web", "--", "hang"])
        .stdin(Stdio::from(terminal.try_clone().expect("a second handle")))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pando-host starts");
    // Loading compiles the component first: wait for the session to begin.
    let deadline = Instant::now() + Duration::from_secs(120);
    let raw = loop {
        let now = termios::tcgetattr(&terminal).expect("the terminal's settings");
        if !now.local_modes.contains(LocalModes::ICANON) {
            break now;
        }
        if let Some(status) = child.try_wait().expect("pando-host's status") {
            let out = child.wait_with_output().expect("its stderr");
            panic!(
                "pando-host ended ({status:?}) before the terminal went raw: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(Instant::now() < deadline, "the terminal never went raw");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        !raw.local_modes.intersects(COOKED),
        "no line editing, echo or signal keys in the session: {}",
        modes(&raw)
    );
    Session {
        child,
        terminal,
        before,
        _master: master,
        _cache: cache,
    }
}

/// Waits for the end (exit 130) and asserts the terminal is as it was.
fn assert_restored(s: Session) {
    let Session {
        child,
        terminal,
        before,
        ..
    } = s;
    let out = child.wait_with_output().expect("pando-host ends");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = termios::tcgetattr(&terminal).expect("the terminal's settings");
    assert_eq!(modes(&after), modes(&before), "the terminal as it was");
}

#[test]
fn exec_tty_interactive_is_raw_for_the_session_and_restores_the_terminal() {
    let session = raw_session();
    // One interrupt: the call is cancelled and unwinds to the end.
    interrupt(&session.child);
    assert_restored(session);
}

#[test]
fn a_second_interrupt_that_exits_at_once_restores_the_terminal_too() {
    let session = raw_session();
    // The second comes while the first's cancellation is still running out its
    // grace: `pando-host` exits at once, past every destructor.
    interrupt(&session.child);
    std::thread::sleep(Duration::from_millis(200));
    interrupt(&session.child);
    assert_restored(session);
}

/// Runs `pando-host health` with its stderr on a pseudo-terminal and gives
/// what it wrote there.
fn health_on_a_terminal(cache: &std::path::Path) -> String {
    let (master, terminal) = pty();
    let status = Command::new(env!("CARGO_BIN_EXE_pando-host"))
        .arg("--cache-dir")
        .arg(cache)
        .env("PANDO_ADAPTER", test_adapter())
        .env_remove("RUST_LOG")
        .arg("health")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(terminal))
        .status()
        .expect("pando-host runs");
    assert!(status.success(), "{status:?}");
    // The child has exited and its end is closed: what it wrote is in the
    // pseudo-terminal's buffer, and a read past it fails instead of waiting.
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = rustix::io::read(&master, &mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn a_first_compile_says_so_on_a_terminal_and_a_cached_load_says_nothing() {
    let cache = tempfile::tempdir().expect("a cache dir");
    let first = health_on_a_terminal(cache.path());
    assert!(
        first.contains("compiling ") && first.contains("for this machine"),
        "{first:?}"
    );
    assert!(first.contains("compiled in "), "{first:?}");
    let again = health_on_a_terminal(cache.path());
    assert!(!again.contains("compil"), "{again:?}");
}

#[test]
fn a_first_compile_into_a_pipe_writes_no_progress() {
    let cache = tempfile::tempdir().expect("a cache dir");
    let out = Command::new(env!("CARGO_BIN_EXE_pando-host"))
        .arg("--cache-dir")
        .arg(cache.path())
        .env("PANDO_ADAPTER", test_adapter())
        .env_remove("RUST_LOG")
        .arg("health")
        .output()
        .expect("pando-host runs");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}
