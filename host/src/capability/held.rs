//! What the host holds on an adapter's behalf between its calls into the
//! host: the bytes of `pando:runtime/streams` buffers (`from-bytes`, `pipe`)
//! and the streams and sessions it opened (pipes, Kubernetes watches, logs,
//! exec sessions). One budget per adapter, shared by its instances
//! (`limits.stream_buffer_bytes`, `limits.max_streams`): each holding takes
//! a [`Held`] that gives its share back when the resource is dropped,
//! whoever drops it (the guest, core, or the instance's end).
//!
//! Over the budget nothing waits: the import answers a typed error naming
//! the limit (a failing stream for `from-bytes` and `pipe`, whose WIT
//! signatures have no error case; a `denied` for the Kubernetes streams).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use bytes::Bytes;
use wasmtime_wasi::p2::{
    DynInputStream, DynOutputStream, InputStream, OutputStream, Pollable, StreamError, StreamResult,
};

use crate::limits::Limits;

/// What wasmtime-wasi's `AsyncReadStream` (the host end of a log, of an
/// exec session's stdout and stderr, of a pipe's reading half) reads ahead
/// of a guest that does not read: its task reads in 64 KiB allocations and
/// holds one in the stream, one in its one-slot channel and one it is
/// filling while it waits for the slot. Charged to each such stream, so
/// that `limits.stream_buffer_bytes` bounds what the host holds, not only
/// what the guest asked for; `read_ahead_is_three_reads_of_64_kib` holds
/// the figure to the wasmtime-wasi in use.
pub(crate) const READ_AHEAD: u64 = 3 * (64 << 10);

/// An adapter's budget for what the host holds for it.
#[derive(Debug)]
pub(crate) struct HeldBudget {
    max_bytes: u64,
    max_streams: u32,
    bytes: AtomicU64,
    streams: AtomicU32,
    refused_streams: AtomicU64,
    refused_bytes: AtomicU64,
}

/// What an adapter holds now, and how often it was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeldUsage {
    /// Bytes of stream buffers and pipe capacity held now.
    pub bytes: u64,
    /// Streams and sessions open now.
    pub streams: u32,
    /// Opens refused over `limits.max_streams` so far.
    pub refused_streams: u64,
    /// Opens refused over `limits.stream_buffer_bytes` so far.
    pub refused_bytes: u64,
}

impl HeldBudget {
    pub(crate) fn of(limits: &Limits) -> Self {
        HeldBudget {
            max_bytes: limits.stream_buffer_bytes,
            max_streams: limits.max_streams,
            bytes: AtomicU64::new(0),
            streams: AtomicU32::new(0),
            refused_streams: AtomicU64::new(0),
            refused_bytes: AtomicU64::new(0),
        }
    }

    /// What is held now.
    pub(crate) fn usage(&self) -> HeldUsage {
        HeldUsage {
            bytes: self.bytes.load(Ordering::Relaxed),
            streams: self.streams.load(Ordering::Relaxed),
            refused_streams: self.refused_streams.load(Ordering::Relaxed),
            refused_bytes: self.refused_bytes.load(Ordering::Relaxed),
        }
    }

    /// Takes one stream and `bytes` from the budget for `what`, counted in
    /// `instance` too (so the end of a call can tell whether its instance
    /// still holds anything), or says which limit refused it.
    pub(crate) fn take(
        self: &Arc<Self>,
        instance: &Arc<AtomicU32>,
        what: &str,
        bytes: u64,
    ) -> Result<Held, String> {
        let max = self.max_streams;
        if self
            .streams
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_err()
        {
            return Err(self.refuse(
                &self.refused_streams,
                format!(
                    "{what} refused: the adapter has {max} streams and sessions open, its \
                 `limits.max_streams`; close some, or raise the limit"
                ),
            ));
        }
        let max_bytes = self.max_bytes;
        if self
            .bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes).filter(|n| *n <= max_bytes)
            })
            .is_err()
        {
            self.streams.fetch_sub(1, Ordering::AcqRel);
            let held = self.bytes.load(Ordering::Relaxed);
            return Err(self.refuse(&self.refused_bytes, format!(
                "{what} of {bytes} bytes refused: the host holds {held} bytes of stream buffers \
                 for the adapter, and its `limits.stream_buffer_bytes` is {max_bytes}; drop \
                 streams it no longer needs, or raise the limit"
            )));
        }
        instance.fetch_add(1, Ordering::AcqRel);
        Ok(Held {
            budget: self.clone(),
            instance: instance.clone(),
            bytes,
        })
    }

    fn refuse(&self, counter: &AtomicU64, message: String) -> String {
        counter.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(%message, "over a stream limit");
        message
    }
}

/// One holding; dropping it gives its share back.
#[derive(Debug)]
pub(crate) struct Held {
    budget: Arc<HeldBudget>,
    instance: Arc<AtomicU32>,
    bytes: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.bytes.fetch_sub(self.bytes, Ordering::AcqRel);
        self.budget.streams.fetch_sub(1, Ordering::AcqRel);
        self.instance.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A stream that holds its share of the budget as long as it lives.
pub(crate) struct HeldStream<S> {
    inner: S,
    _held: Held,
}

impl<S> HeldStream<S> {
    pub(crate) fn new(inner: S, held: Held) -> Self {
        HeldStream { inner, _held: held }
    }
}

#[async_trait::async_trait]
impl Pollable for HeldStream<DynInputStream> {
    async fn ready(&mut self) {
        self.inner.ready().await;
    }
}

impl InputStream for HeldStream<DynInputStream> {
    fn read(&mut self, size: usize) -> StreamResult<Bytes> {
        self.inner.read(size)
    }

    fn skip(&mut self, nelem: usize) -> StreamResult<usize> {
        self.inner.skip(nelem)
    }
}

#[async_trait::async_trait]
impl Pollable for HeldStream<DynOutputStream> {
    async fn ready(&mut self) {
        self.inner.ready().await;
    }
}

#[async_trait::async_trait]
impl OutputStream for HeldStream<DynOutputStream> {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.inner.write(bytes)
    }

    fn flush(&mut self) -> StreamResult<()> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        self.inner.check_write()
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await;
    }
}

/// A stream refused over a limit: every operation fails with the refusal,
/// at once.
pub(crate) struct Refused(pub(crate) String);

impl Refused {
    fn error(&self) -> StreamError {
        StreamError::LastOperationFailed(wasmtime::format_err!("{}", self.0))
    }
}

#[async_trait::async_trait]
impl Pollable for Refused {
    async fn ready(&mut self) {}
}

impl InputStream for Refused {
    fn read(&mut self, _size: usize) -> StreamResult<Bytes> {
        Err(self.error())
    }
}

#[async_trait::async_trait]
impl OutputStream for Refused {
    fn write(&mut self, _bytes: Bytes) -> StreamResult<()> {
        Err(self.error())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Err(self.error())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Err(self.error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tokio::io::{AsyncRead, ReadBuf};
    use wasmtime_wasi::p2::pipe::AsyncReadStream;

    /// An endless source that counts what was read from it.
    struct Counted(Arc<AtomicU64>);

    impl AsyncRead for Counted {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let n = buf.remaining();
            buf.put_slice(&vec![b'x'; n]);
            self.0.fetch_add(n as u64, Ordering::Relaxed);
            Poll::Ready(Ok(()))
        }
    }

    /// The charge is only as true as wasmtime-wasi's buffering: a stream
    /// nobody reads takes exactly [`READ_AHEAD`] from its source, then
    /// stops. A wasmtime upgrade that reads further ahead fails here.
    #[tokio::test]
    async fn read_ahead_is_three_reads_of_64_kib() {
        let read = Arc::new(AtomicU64::new(0));
        let mut stream = AsyncReadStream::new(Counted(read.clone()));
        // The stream's own `ready` takes the first read into its buffer.
        stream.ready().await;
        // Its task then fills the channel's slot and one more read, and
        // waits; let it run until the count has stood still a while.
        let (mut last, mut still) = (u64::MAX, 0);
        for _ in 0..400 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            let now = read.load(Ordering::Relaxed);
            still = if now == last { still + 1 } else { 0 };
            if still == 10 {
                break;
            }
            last = now;
        }
        assert_eq!(read.load(Ordering::Relaxed), READ_AHEAD);
    }

    #[test]
    fn a_holding_is_given_back_when_dropped_and_limits_name_themselves() {
        let budget = Arc::new(HeldBudget::of(&Limits {
            stream_buffer_bytes: 100,
            max_streams: 2,
            ..Limits::default()
        }));
        let inst = Arc::new(AtomicU32::new(0));
        let a = budget.take(&inst, "from-bytes", 60).expect("fits");
        let e = budget
            .take(&inst, "from-bytes", 60)
            .expect_err("over bytes");
        assert!(e.contains("limits.stream_buffer_bytes"), "{e}");
        let b = budget.take(&inst, "pipe", 40).expect("fits exactly");
        let e = budget.take(&inst, "watch", 0).expect_err("over streams");
        assert!(e.contains("limits.max_streams"), "{e}");
        assert_eq!(inst.load(Ordering::Relaxed), 2);
        drop((a, b));
        assert_eq!(
            budget.usage(),
            HeldUsage {
                bytes: 0,
                streams: 0,
                refused_streams: 1,
                refused_bytes: 1,
            }
        );
        assert_eq!(inst.load(Ordering::Relaxed), 0);
    }
}
