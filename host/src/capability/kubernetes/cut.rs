//! An exec session's pipes as they end: each cut when the session's
//! connection breaks without an exit status ([`Cut`]), and stdin closed when
//! whoever holds it drops it ([`CloseOnDrop`]). Both lines' sessions are made
//! of these (`exec.rs`'s `Attached`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;

use super::exec::Outcome;

/// An exec session's stdout, stderr or stdin that fails, rather than
/// waiting forever, once the session has ended without an exit status (its
/// connection broke) and nothing more can pass: kube-rs then leaves its
/// pipes open. What arrived before is read first. A session that ended
/// with a status is left to end its pipes itself.
pub(super) struct Cut<T> {
    inner: T,
    end: End,
}

/// Whether the session ended without an exit status, as it is learnt.
enum End {
    Waiting(Pin<Box<dyn Future<Output = bool> + Send>>),
    Known { broken: bool },
}

impl<T> Cut<T> {
    pub(super) fn new(inner: T, ended: &watch::Receiver<Option<Outcome>>) -> Self {
        let mut ended = ended.clone();
        let broken = async move {
            match ended.wait_for(Option::is_some).await {
                Ok(outcome) => matches!(*outcome, Some(None)),
                // The session is gone without a word.
                Err(_) => true,
            }
        };
        Cut {
            inner,
            end: End::Waiting(Box::pin(broken)),
        }
    }

    /// Ready once the session is known to have ended without a status.
    fn poll_broken(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if let End::Waiting(fut) = &mut self.end {
            match fut.as_mut().poll(cx) {
                Poll::Ready(broken) => self.end = End::Known { broken },
                Poll::Pending => return Poll::Pending,
            }
        }
        match self.end {
            End::Known { broken: true } => Poll::Ready(()),
            _ => Poll::Pending,
        }
    }
}

fn broken_off() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionAborted,
        "the exec session's connection broke off before the command's exit status arrived",
    )
}

impl<T: AsyncRead + Unpin> AsyncRead for Cut<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if let Poll::Ready(r) = Pin::new(&mut this.inner).poll_read(cx, buf) {
            return Poll::Ready(r);
        }
        if this.poll_broken(cx).is_pending() {
            return Poll::Pending;
        }
        // Nothing more can arrive: what is left, then the error.
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(r) => Poll::Ready(r),
            Poll::Pending => Poll::Ready(Err(broken_off())),
        }
    }
}

impl<T: AsyncWrite + Unpin> Cut<T> {
    fn or_broken<R>(
        &mut self,
        cx: &mut Context<'_>,
        op: impl FnOnce(Pin<&mut T>, &mut Context<'_>) -> Poll<std::io::Result<R>>,
    ) -> Poll<std::io::Result<R>> {
        if let Poll::Ready(r) = op(Pin::new(&mut self.inner), cx) {
            return Poll::Ready(r);
        }
        match self.poll_broken(cx) {
            Poll::Ready(()) => Poll::Ready(Err(broken_off())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Cut<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.get_mut().or_broken(cx, |w, cx| w.poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.get_mut().or_broken(cx, |w, cx| w.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.get_mut().or_broken(cx, |w, cx| w.poll_shutdown(cx))
    }
}

/// Shuts the exec's stdin down when the guest drops it. kube-rs hands out
/// one half of a split pipe, and the halves share it: dropping the writer
/// leaves the pipe open, so the session never sends stdin's close and a
/// command that reads to the end of its input (busybox's `tar -x` drains
/// past the end-of-archive marker) waits for ever. A split pipe's shutdown
/// is immediate, so one poll in `drop` is enough.
pub(super) struct CloseOnDrop<W: AsyncWrite + Unpin>(pub(super) W);

impl<W: AsyncWrite + Unpin> Drop for CloseOnDrop<W> {
    fn drop(&mut self) {
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
        let _ = Pin::new(&mut self.0).poll_shutdown(&mut cx);
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for CloseOnDrop<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}
