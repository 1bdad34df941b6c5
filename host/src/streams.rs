//! Byte streams between core and an adapter, without wasm in sight.
//!
//! A stream the adapter returns (a log) becomes a [`ByteStream`] core reads;
//! a session's stdin becomes a [`ByteSink`] core writes. A stream core hands
//! the adapter (a snapshot's destination, `run`'s stdout) is a bounded
//! channel to a task that writes into core's writer, so a slow writer slows
//! the adapter and memory stays bounded.

use std::io;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use wasmtime_wasi::p2::{
    DynInputStream, DynOutputStream, OutputStream, Pollable, StreamError, StreamResult,
};

/// The most one read returns.
const READ_CHUNK: usize = 64 << 10;
/// The most the guest may write at once into a channel stream.
const WRITE_CHUNK: usize = 64 << 10;
/// Chunks buffered between the guest and core's writer (1 MiB at most).
const CHANNEL_DEPTH: usize = 16;

/// Bytes coming from an adapter: a log, a session's output.
pub struct ByteStream {
    inner: DynInputStream,
}

impl std::fmt::Debug for ByteStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByteStream").finish_non_exhaustive()
    }
}

impl ByteStream {
    pub(crate) fn new(inner: DynInputStream) -> Self {
        ByteStream { inner }
    }

    /// The next chunk; `None` at the end. An error means the stream broke
    /// (a cut connection): what was read before it is not the whole.
    pub async fn next_chunk(&mut self) -> Option<io::Result<Bytes>> {
        loop {
            match self.inner.read(READ_CHUNK) {
                Ok(b) if b.is_empty() => self.inner.ready().await,
                Ok(b) => return Some(Ok(b)),
                Err(StreamError::Closed) => return None,
                Err(StreamError::LastOperationFailed(e)) | Err(StreamError::Trap(e)) => {
                    return Some(Err(io::Error::other(format!("{e:#}"))));
                }
            }
        }
    }

    /// Reads to the end, failing past `limit` bytes.
    pub async fn read_to_end(&mut self, limit: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(chunk) = self.next_chunk().await {
            let chunk = chunk?;
            if out.len() + chunk.len() > limit {
                return Err(io::Error::other(format!(
                    "stream longer than {limit} bytes"
                )));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }

    /// Copies the stream into `w` to the end; the number of bytes.
    pub async fn copy_to<W: AsyncWrite + Unpin>(&mut self, w: &mut W) -> io::Result<u64> {
        let mut n = 0u64;
        while let Some(chunk) = self.next_chunk().await {
            let chunk = chunk?;
            w.write_all(&chunk).await?;
            n += chunk.len() as u64;
        }
        w.flush().await?;
        Ok(n)
    }

    /// As a `futures::Stream` of chunks.
    pub fn into_stream(self) -> impl futures::Stream<Item = io::Result<Bytes>> + Send {
        futures::stream::unfold(self, |mut s| async move {
            let item = s.next_chunk().await?;
            Some((item, s))
        })
    }
}

/// Bytes going to an adapter: a session's stdin.
pub struct ByteSink {
    inner: DynOutputStream,
}

impl std::fmt::Debug for ByteSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByteSink").finish_non_exhaustive()
    }
}

impl ByteSink {
    pub(crate) fn new(inner: DynOutputStream) -> Self {
        ByteSink { inner }
    }

    /// Writes all of `bytes`, waiting while the other side is full.
    pub async fn write_all(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let n = loop {
                match self.inner.check_write() {
                    Ok(0) => self.inner.ready().await,
                    Ok(n) => break n,
                    Err(e) => return Err(stream_error(e)),
                }
            };
            let take = n.min(bytes.len());
            self.inner
                .write(Bytes::copy_from_slice(&bytes[..take]))
                .map_err(stream_error)?;
            bytes = &bytes[take..];
        }
        Ok(())
    }

    /// Flushes and closes: the other side sees the end.
    pub async fn close(mut self) -> io::Result<()> {
        match self.inner.flush() {
            // The reader went away first: nothing left to deliver.
            Err(StreamError::Closed) => return Ok(()),
            Err(e) => return Err(stream_error(e)),
            Ok(()) => {}
        }
        // Ready again once the flush is done; dropping then ends the stream.
        self.inner.ready().await;
        match self.inner.check_write() {
            Ok(_) | Err(StreamError::Closed) => Ok(()),
            Err(e) => Err(stream_error(e)),
        }
    }
}

fn stream_error(e: StreamError) -> io::Error {
    match e {
        StreamError::Closed => io::Error::new(io::ErrorKind::BrokenPipe, "stream closed"),
        StreamError::LastOperationFailed(e) | StreamError::Trap(e) => {
            io::Error::other(format!("{e:#}"))
        }
    }
}

/// The guest's end of a channel to core's writer.
struct ChannelOutput {
    tx: Option<mpsc::Sender<Bytes>>,
    permit: Option<mpsc::OwnedPermit<Bytes>>,
    failed: Arc<Mutex<Option<String>>>,
}

impl ChannelOutput {
    fn failure(&self) -> Option<StreamError> {
        let f = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        f.as_ref()
            .map(|m| StreamError::LastOperationFailed(wasmtime::format_err!("{m}")))
    }
}

impl OutputStream for ChannelOutput {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        if let Some(e) = self.failure() {
            return Err(e);
        }
        if bytes.is_empty() {
            return Ok(());
        }
        if bytes.len() > WRITE_CHUNK {
            return Err(StreamError::Trap(wasmtime::format_err!(
                "write of {} bytes exceeds the {WRITE_CHUNK} bytes check-write allowed",
                bytes.len()
            )));
        }
        let Some(permit) = self.permit.take() else {
            return Err(StreamError::Trap(wasmtime::format_err!(
                "write without check-write permission"
            )));
        };
        self.tx = Some(permit.send(bytes));
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        // Chunks are handed to the writer task in order; the host waits for
        // it to finish before the call is reported done.
        match self.failure() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        if let Some(e) = self.failure() {
            return Err(e);
        }
        if self.permit.is_some() {
            return Ok(WRITE_CHUNK);
        }
        let Some(tx) = self.tx.take() else {
            return Err(StreamError::Closed);
        };
        match tx.try_reserve_owned() {
            Ok(p) => {
                self.permit = Some(p);
                Ok(WRITE_CHUNK)
            }
            Err(mpsc::error::TrySendError::Full(tx)) => {
                self.tx = Some(tx);
                Ok(0)
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Err(StreamError::Closed),
        }
    }
}

#[async_trait::async_trait]
impl Pollable for ChannelOutput {
    async fn ready(&mut self) {
        if self.permit.is_some() {
            return;
        }
        let Some(tx) = self.tx.take() else {
            return;
        };
        if let Ok(p) = tx.reserve_owned().await {
            self.permit = Some(p);
        }
    }
}

/// A stream the guest writes into, delivered to `writer` by a task. The
/// task ends once the guest's end is dropped (with its instance) and yields
/// the bytes written, or the writer's error.
pub(crate) fn channel_output<W>(mut writer: W) -> (DynOutputStream, JoinHandle<io::Result<u64>>)
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (tx, mut rx) = mpsc::channel::<Bytes>(CHANNEL_DEPTH);
    let failed = Arc::new(Mutex::new(None));
    let out = ChannelOutput {
        tx: Some(tx),
        permit: None,
        failed: failed.clone(),
    };
    let task = tokio::spawn(async move {
        let mut n = 0u64;
        let result: io::Result<()> = async {
            while let Some(chunk) = rx.recv().await {
                writer.write_all(&chunk).await?;
                n += chunk.len() as u64;
            }
            writer.flush().await?;
            writer.shutdown().await
        }
        .await;
        if let Err(e) = &result {
            *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
        }
        result.map(|()| n)
    });
    (Box::new(out), task)
}
