//! The guest's stderr: forwarded line by line to `tracing`, within the
//! adapter's log budget (each line one record), with the last few KiB kept
//! whatever the budget, so a crash can be explained (a Rust panic writes its
//! message there just before it traps).

use std::io;
use std::pin::Pin;
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
            identity: Arc::new(Mutex::new(identity)),
            budget,
        }
    }

    /// Forgets the tail, at the start of a call: a crash is explained by
    /// what that call wrote. (No text is made of it: this runs on every
    /// call.)
    pub(crate) fn clear_tail(&self) {
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
