//! Byte streams: a [`ByteStream`] an adapter returns (from bytes, or
//! written by a task after the call returned), and reading the
//! `stream<u8>`s core hands an adapter.
//!
//! A returned stream is written after its call returned, by a task on the
//! instance's event loop ([`crate::spawn`]); its `done` future tells core
//! how the bytes ended, so a stream cut by an error never reads as whole.
//! [`written`] does both: it runs the writer, closes the bytes, then
//! resolves `done` with the writer's outcome.
//!
//! ```no_run
//! use pando_adapter_sdk_v02::streams;
//! use pando_adapter_sdk_v02::types::{ByteStream, Error};
//!
//! fn numbers(n: u32) -> ByteStream {
//!     streams::written(move |mut out| async move {
//!         for i in 1..=n {
//!             // Fails `cancelled` once core dropped the stream.
//!             out.write(format!("{i}\n").into_bytes()).await?;
//!         }
//!         Ok(())
//!     })
//! }
//! ```

use std::future::Future;

use crate::bindings::{wit_future, wit_stream};
use crate::types::{ByteStream, Error, FutureWriter, StreamReader, StreamResult, StreamWriter};

/// The writing end of a byte stream core reads.
#[derive(Debug)]
pub struct Writer(StreamWriter<u8>);

impl Writer {
    /// Write all of `bytes`; `cancelled` once core dropped its end (then
    /// nothing more will be read: stop writing).
    pub async fn write(&mut self, bytes: Vec<u8>) -> Result<(), Error> {
        if self.0.write_all(bytes).await.is_empty() {
            Ok(())
        } else {
            Err(dropped())
        }
    }

    /// The component model's writer, for what [`write`](Self::write) does
    /// not cover.
    pub fn into_inner(self) -> StreamWriter<u8> {
        self.0
    }
}

impl From<StreamWriter<u8>> for Writer {
    fn from(writer: StreamWriter<u8>) -> Self {
        Writer(writer)
    }
}

/// The error a write returns once core dropped the stream.
pub(crate) fn dropped() -> Error {
    Error::Cancelled("core dropped the stream".into())
}

/// A new byte stream: its writer and what the call returns. Resolve `done`
/// yourself, after dropping the writer; [`written`] does that for you.
pub fn new() -> (Writer, FutureWriter<Result<(), Error>>, ByteStream) {
    let (bytes, reader) = wit_stream::new::<u8>();
    let (done, done_reader) = wit_future::new::<Result<(), Error>>(unwritten_done);
    (
        Writer(bytes),
        done,
        ByteStream {
            bytes: reader,
            done: done_reader,
        },
    )
}

/// What core reads when an adapter drops `done` without writing it.
fn unwritten_done() -> Result<(), Error> {
    Err(Error::Internal(
        "the adapter dropped the stream's `done` unwritten".into(),
    ))
}

/// A byte stream whose bytes `write` writes, in a task of its own, after
/// the call returned; `done` resolves with `write`'s outcome once the
/// bytes are closed.
pub fn written<F, Fut>(write: F) -> ByteStream
where
    F: FnOnce(Writer) -> Fut,
    Fut: Future<Output = Result<(), Error>> + 'static,
{
    let (writer, done, stream) = new();
    let work = write(writer);
    settle(done, work);
    stream
}

/// A byte stream of `bytes`, then its end.
pub fn from_bytes(bytes: Vec<u8>) -> ByteStream {
    written(move |mut out| async move { out.write(bytes).await })
}

/// A byte stream of `bytes` as they are, another import's stream (a pod's
/// log the Kubernetes import opened): they go from the host to core
/// without passing through the adapter. Its `done` is `done`'s outcome,
/// the other import's own end told in the contract's words.
pub fn handed_on(
    bytes: StreamReader<u8>,
    done: impl Future<Output = Result<(), Error>> + 'static,
) -> ByteStream {
    let (writer, done_reader) = wit_future::new::<Result<(), Error>>(unwritten_done);
    settle(writer, done);
    ByteStream {
        bytes,
        done: done_reader,
    }
}

/// Run `work` in a task of its own, then write its outcome into `into`.
/// Whatever `work` holds (a stream's writer) is dropped before the outcome
/// is written, so core sees the stream end before its outcome.
pub(crate) fn settle<T: 'static>(into: FutureWriter<T>, work: impl Future<Output = T> + 'static) {
    crate::spawn(async move {
        let outcome = work.await;
        // Core may have dropped its end: then nobody wants the outcome.
        let _ = into.write(outcome).await;
    });
}

/// The next chunk of `from`, at most `max` bytes; `None` at its end.
pub async fn next_chunk(from: &mut StreamReader<u8>, max: usize) -> Option<Vec<u8>> {
    loop {
        let (result, chunk) = from.read(Vec::with_capacity(max.max(1))).await;
        match result {
            _ if !chunk.is_empty() => return Some(chunk),
            StreamResult::Complete(_) => continue,
            StreamResult::Dropped | StreamResult::Cancelled => return None,
        }
    }
}

/// All of `from`, to its end; `invalid` once it passes `limit` bytes
/// (naming it), so a stream larger than the adapter can hold is refused
/// rather than held.
pub async fn read_to_end(mut from: StreamReader<u8>, limit: usize) -> Result<Vec<u8>, Error> {
    let mut all = Vec::new();
    while let Some(chunk) = next_chunk(&mut from, 64 << 10).await {
        if all.len() + chunk.len() > limit {
            return Err(Error::Invalid(format!(
                "the stream is larger than {limit} bytes, the most this adapter reads whole"
            )));
        }
        all.extend_from_slice(&chunk);
    }
    Ok(all)
}
