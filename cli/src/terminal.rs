//! `exec -t -i` on a terminal, as kubectl and ssh do it: our terminal in raw
//! mode for the session, so that each key reaches the remote process as it
//! is typed (no line editing, no local echo) and Ctrl-C, Ctrl-Z and Ctrl-\
//! are bytes for the remote terminal, not signals for `pando-host`; then the
//! terminal exactly as it was, however the session ends. The size sent with
//! the request is the terminal's own.
//!
//! The terminal is not resized after the session starts: the session's one
//! instance is inside `wait` for as long as the process runs, and a call
//! (`resize`) cannot enter it meanwhile.

use std::io::IsTerminal;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::{Mutex, PoisonError};

use pando_host::types::TerminalSize;
use rustix::termios::{self, OptionalActions, Termios};

/// The settings raw mode replaced, while it is on: also read by [`restore`],
/// for an exit that skips destructors (a second interrupt).
static SAVED: Mutex<Option<Termios>> = Mutex::new(None);

/// Our stdin in raw mode until dropped, then restored as it was found.
pub struct RawMode(());

impl RawMode {
    /// Puts stdin in raw mode when it is a terminal; `None` when it is not
    /// (a pipe, a file), which is left alone.
    pub fn enter() -> std::io::Result<Option<RawMode>> {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return Ok(None);
        }
        Self::enter_on(stdin.as_fd()).map(Some)
    }

    /// Puts the terminal `fd` in raw mode.
    fn enter_on(fd: BorrowedFd<'_>) -> std::io::Result<RawMode> {
        let saved = termios::tcgetattr(fd)?;
        let mut raw = saved.clone();
        raw.make_raw();
        *SAVED.lock().unwrap_or_else(PoisonError::into_inner) = Some(saved);
        if let Err(e) = termios::tcsetattr(fd, OptionalActions::Now, &raw) {
            SAVED.lock().unwrap_or_else(PoisonError::into_inner).take();
            return Err(e.into());
        }
        Ok(RawMode(()))
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        restore();
    }
}

/// Puts stdin's terminal back as raw mode found it, if raw mode is on;
/// for an exit that does not unwind to [`RawMode`]'s drop.
pub fn restore() {
    let Some(saved) = SAVED.lock().unwrap_or_else(PoisonError::into_inner).take() else {
        return;
    };
    // `Drain`: what the session wrote reaches the terminal in raw mode, then
    // the user's settings are back.
    let stdin = std::io::stdin();
    if let Err(e) = termios::tcsetattr(stdin.as_fd(), OptionalActions::Drain, &saved) {
        tracing::warn!(error = %e, "the terminal's settings could not be restored (run `reset`)");
    }
}

/// The size of the terminal on stdout or stdin, if either is one.
pub fn size() -> Option<TerminalSize> {
    let stdout = std::io::stdout();
    let stdin = std::io::stdin();
    [stdout.as_fd(), stdin.as_fd()].into_iter().find_map(|fd| {
        let ws = termios::tcgetwinsize(fd).ok()?;
        (ws.ws_col > 0 && ws.ws_row > 0).then_some(TerminalSize {
            cols: ws.ws_col,
            rows: ws.ws_row,
        })
    })
}
