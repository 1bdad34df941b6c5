//! An exec session on a 0.2.0 adapter: core's stdin and terminal sizes are
//! streams the adapter reads while the process runs, its outputs streams
//! and its exit a future the host takes once the call has returned
//! (`drive.rs`). The session's instance is its own, as 0.1.0's is; unlike
//! 0.1.0's it is not re-entered: a resize is a value on a stream, not a
//! call into an instance that sits in `wait`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, DropGuard, WaitForCancellationFutureOwned};
use wasmtime::StoreContextMut;
use wasmtime::component::{Destination, StreamProducer, StreamReader, StreamResult};
use wasmtime_wasi::p2::pipe::{AsyncReadStream, AsyncWriteStream};

use super::Adapter;
use super::drive::{Driver, driver_lost, within};
use super::session::{ExecSession, On};
use super::streams_v0_2::v0_2_only;
use crate::call::CallContext;
use crate::error::CallError;
use crate::pipes::{CHUNK, ReadPipe};
use crate::runtime::instance::run_v0_2;
use crate::streams::{ByteSink, ByteStream};
use crate::types::*;

/// Terminal sizes queued between core and the adapter.
const SIZES: usize = 8;

/// A 0.2.0 session's ends on core's side.
pub(super) struct SessionV0_2 {
    stdin: Option<ByteSink>,
    stdout: Option<ByteStream>,
    stderr: Option<ByteStream>,
    sizes: Option<mpsc::Sender<TerminalSize>>,
    exit: oneshot::Receiver<Result<i32, CallError>>,
    _cancel: DropGuard,
}

/// Core's terminal sizes, as the `stream<terminal-size>` the adapter reads;
/// it ends when core drops its sender or the process exits.
struct SizeFeed {
    rx: mpsc::Receiver<TerminalSize>,
    exited: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl<D> StreamProducer<D> for SizeFeed {
    type Item = TerminalSize;
    type Buffer = Option<TerminalSize>;

    fn poll_produce<'a>(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut store: StoreContextMut<'a, D>,
        mut dst: Destination<'a, TerminalSize, Option<TerminalSize>>,
        finish: bool,
    ) -> Poll<wasmtime::Result<StreamResult>> {
        let this = self.get_mut();
        if dst.remaining(&mut store) == Some(0) {
            return Poll::Ready(Ok(StreamResult::Completed));
        }
        match this.rx.poll_recv(cx) {
            Poll::Ready(Some(size)) => {
                dst.set_buffer(Some(size));
                Poll::Ready(Ok(StreamResult::Completed))
            }
            Poll::Ready(None) => Poll::Ready(Ok(StreamResult::Dropped)),
            Poll::Pending if this.exited.as_mut().poll(cx).is_ready() => {
                Poll::Ready(Ok(StreamResult::Dropped))
            }
            Poll::Pending if finish => Poll::Ready(Ok(StreamResult::Cancelled)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Adapter {
    /// [`Adapter::exec`] on a 0.2.0 adapter.
    pub(super) async fn exec_on_v0_2(
        &self,
        ctx: &CallContext,
        workload: &WorkloadRef,
        request: &ExecRequest,
    ) -> Result<ExecSession, CallError> {
        let (stdin_core, stdin_guest) = match request.stdin {
            true => {
                let (core, guest) = tokio::io::duplex(CHUNK);
                (Some(core), Some(guest))
            }
            false => (None, None),
        };
        let (sizes, sizes_rx) = match request.tty {
            true => {
                let (tx, rx) = mpsc::channel(SIZES);
                (Some(tx), Some(rx))
            }
            false => (None, None),
        };
        let exited = CancellationToken::new();
        let feed_exited = exited.clone();
        let (workload, request) = (workload.clone(), request.clone());
        let (session, lease) = self
            .call_driven(ctx, "exec", async |g, s| {
                let g = v0_2_only(g)?;
                run_v0_2(s, async |a| {
                    let (stdin, resize) = a.with(|mut a| -> wasmtime::Result<_> {
                        let stdin = match stdin_guest {
                            Some(r) => Some(StreamReader::new(&mut a, ReadPipe::new(r, None, ()))?),
                            None => None,
                        };
                        let resize = match sizes_rx {
                            Some(rx) => Some(StreamReader::new(
                                &mut a,
                                SizeFeed {
                                    rx,
                                    exited: Box::pin(feed_exited.cancelled_owned()),
                                },
                            )?),
                            None => None,
                        };
                        Ok((stdin, resize))
                    })?;
                    g.call_exec(a, workload, request, stdin, resize).await
                })
                .await
            })
            .await?;
        let mut driver = Driver::new(self, "exec", lease);
        let stdout = driver.bytes(session.stdout)?;
        let stderr = match session.stderr {
            Some(s) => Some(driver.bytes(s)?),
            None => None,
        };
        let exit = driver.value(session.exit, Some(exited))?;
        let (exit, cancel) = driver.spawn(exit);
        let reader = |r| ByteStream::new(Box::new(AsyncReadStream::new(r)));
        Ok(ExecSession {
            adapter: self.clone(),
            on: On::V0_2(Box::new(SessionV0_2 {
                stdin: stdin_core.map(|w| ByteSink::new(Box::new(AsyncWriteStream::new(CHUNK, w)))),
                stdout: Some(reader(stdout)),
                stderr: stderr.map(reader),
                sizes,
                exit,
                _cancel: cancel,
            })),
        })
    }
}

impl SessionV0_2 {
    pub(super) fn stdin(&mut self) -> Option<ByteSink> {
        self.stdin.take()
    }

    pub(super) fn stdout(&mut self) -> Option<ByteStream> {
        self.stdout.take()
    }

    pub(super) fn stderr(&mut self) -> Option<ByteStream> {
        self.stderr.take()
    }

    /// Queues a size for the terminal; the adapter applies it as it reads.
    pub(super) async fn resize(
        &mut self,
        adapter: &str,
        size: TerminalSize,
    ) -> Result<(), CallError> {
        let Some(tx) = self.sizes.as_ref() else {
            return Err(CallError::Adapter(Error::Invalid(
                "the session has no terminal to resize (exec-request.tty was false)".into(),
            )));
        };
        tx.send(size).await.map_err(|_| CallError::Host {
            adapter: adapter.into(),
            method: "exec-session.resize",
            message: "the session has ended: its terminal takes no more sizes".into(),
        })
    }

    /// The exit code, within `ctx`'s deadline and cancellation. Core
    /// waiting is core done sending: the terminal's sizes end here (an
    /// adapter reading them ends with them), and stdin if core still held
    /// it.
    pub(super) async fn wait(
        mut self,
        adapter: &str,
        ctx: &CallContext,
        default: std::time::Duration,
    ) -> Result<i32, CallError> {
        self.sizes = None;
        self.stdin = None;
        let method = "exec-session.wait";
        let exit = async {
            (&mut self.exit)
                .await
                .unwrap_or_else(|_| Err(driver_lost(adapter, method, "session")))
        };
        within(ctx, default, exit)
            .await
            .unwrap_or_else(|stopped| Err(stopped.error(adapter, method, ctx, default)))
    }
}
