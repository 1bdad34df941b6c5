//! The guest's stderr: forwarded line by line to `tracing`, within the
//! adapter's log budget (each line one record), with the last few KiB kept
//! whatever the budget, so a crash can be explained (a Rust panic writes its
//! message there just before it traps).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;

use crate::capability::log::LogBudget;
use crate::runtime::state::Identity;

/// How much of the tail is kept.
const TAIL: usize = 8 << 10;
/// A line longer than this is logged in pieces.
const MAX_LINE: usize = 4 << 10;

#[derive(Default)]
struct Buffer {
    tail: Vec<u8>,
    line: Vec<u8>,
}

/// The guest's stderr.
#[derive(Clone)]
pub(crate) struct StderrTail {
    inner: Arc<Mutex<Buffer>>,
    /// Set by every write: a call's start clears the tail only when there
    /// is one, without taking the lock on every call (most write nothing).
    written: Arc<AtomicBool>,
    identity: Arc<Mutex<Arc<Identity>>>,
    budget: Arc<LogBudget>,
}

impl StderrTail {
    pub(crate) fn set_identity(&self, identity: Arc<Identity>) {
        *self.identity.lock().unwrap_or_else(|p| p.into_inner()) = identity;
    }

    /// A stderr with no log budget (the fuzz target's).
    pub(crate) fn new(identity: Arc<Identity>) -> Self {
        Self::budgeted(identity, Arc::new(LogBudget::unlimited()))
    }

    /// A stderr whose lines draw on the adapter's log budget.
    pub(crate) fn budgeted(identity: Arc<Identity>, budget: Arc<LogBudget>) -> Self {
        StderrTail {
            inner: Arc::default(),
            written: Arc::default(),
            identity: Arc::new(Mutex::new(identity)),
            budget,
        }
    }

    /// Forgets the tail, at the start of a call: a crash is explained by
    /// what that call wrote. (No text is made of it: this runs on every
    /// call.)
    pub(crate) fn clear_tail(&self) {
        // A write racing this one sets the flag again after its bytes are in:
        // at worst the next call clears a tail that is already empty.
        // Read before the swap: the swap is a locked instruction on every
        // call, and almost every call finds nothing written.
        if !self.written.load(Ordering::Acquire) || !self.written.swap(false, Ordering::AcqRel) {
            return;
        }
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .tail
            .clear();
    }

    /// The last bytes written, as text, and forget them.
    pub(crate) fn take_tail(&self) -> String {
        let mut b = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let tail = std::mem::take(&mut b.tail);
        String::from_utf8_lossy(&tail).trim_end().to_string()
    }

    pub(crate) fn write(&self, bytes: &[u8]) {
        let mut b = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        // The tail is kept whatever the budget: it explains a crash.
        b.tail.extend_from_slice(bytes);
        self.written.store(true, Ordering::Release);
        if b.tail.len() > TAIL {
            let cut = b.tail.len() - TAIL;
            b.tail.drain(..cut);
        }
        for &byte in bytes {
            if byte == b'\n' || b.line.len() >= MAX_LINE {
                let line = std::mem::take(&mut b.line);
                let identity = self
                    .identity
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone();
                // A line the subscriber would discard takes nothing of the
                // budget.
                if tracing::enabled!(target: "pando_host::guest", tracing::Level::WARN)
                    && self.budget.pass(&identity.name)
                {
                    tracing::warn!(
                        target: "pando_host::guest",
                        adapter = %identity.name,
                        stream = "stderr",
                        "{}",
                        String::from_utf8_lossy(&line)
                    );
                }
                if byte == b'\n' {
                    continue;
                }
            }
            b.line.push(byte);
        }
    }
}

impl wasmtime_wasi::cli::IsTerminal for StderrTail {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl wasmtime_wasi::cli::StdoutStream for StderrTail {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for StderrTail {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.write(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail() -> StderrTail {
        StderrTail::new(Arc::new(Identity { name: "t".into() }))
    }

    #[test]
    fn a_calls_start_forgets_what_an_earlier_call_wrote() {
        let t = tail();
        t.write(b"panicked at first call\n");
        t.clear_tail();
        assert_eq!(t.take_tail(), "");
        t.write(b"panicked at second call\n");
        assert_eq!(t.take_tail(), "panicked at second call");
    }

    #[test]
    fn a_clear_with_nothing_written_keeps_later_writes() {
        let t = tail();
        t.clear_tail();
        t.clear_tail();
        t.write(b"late");
        t.clear_tail();
        assert_eq!(t.take_tail(), "", "a write since the last clear is cleared");
        t.write(b"after");
        assert_eq!(t.take_tail(), "after");
    }
}
