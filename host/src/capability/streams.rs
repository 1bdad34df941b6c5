//! `pando:runtime/streams`: streams an adapter makes of its own.

use bytes::Bytes;
use wasmtime::component::Resource;
use wasmtime_wasi::p2::pipe::{AsyncReadStream, AsyncWriteStream, MemoryInputPipe};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream};

use super::View;
use crate::bindings::v0_1::pando::runtime::streams::{self as wit, Host};
use crate::capability::held::{HeldStream, READ_AHEAD, Refused};

/// `pando:runtime/streams`: its buffers draw on the adapter's stream budget
/// in the store's [`Env`](super::env::Env).
pub(crate) struct Streams;

super::stateless_capability!(
    Streams,
    "streams",
    wit,
    "which pando:runtime@0.2.0 does not have: an adapter makes its byte streams with the \
     component model's `stream<u8>`"
);

/// The most a pipe buffers, whatever the guest asks for.
pub const MAX_PIPE_CAPACITY: u64 = 1 << 20;
/// A pipe's write chunk.
const CHUNK: usize = 64 << 10;

impl Host for View<'_, Streams> {
    async fn from_bytes(&mut self, bytes: Vec<u8>) -> wasmtime::Result<Resource<DynInputStream>> {
        // Over the budget the bytes are dropped here, and the stream the
        // guest gets says why on its first read.
        let stream: DynInputStream = match self.env.hold("from-bytes", bytes.len() as u64) {
            Ok(held) => {
                let inner: DynInputStream = Box::new(MemoryInputPipe::new(Bytes::from(bytes)));
                Box::new(HeldStream::new(inner, held))
            }
            Err(why) => Box::new(Refused(why)),
        };
        Ok(self.env.table.push(stream)?)
    }

    async fn pipe(
        &mut self,
        capacity: u64,
    ) -> wasmtime::Result<(Resource<DynOutputStream>, Resource<DynInputStream>)> {
        let capacity = usize::try_from(capacity.clamp(1, MAX_PIPE_CAPACITY)).unwrap_or(CHUNK);
        // Each end is a stream held open. The writing end holds the
        // duplex's capacity and the chunk its writer may have pending; the
        // reading end wasmtime-wasi's reads ahead of the guest.
        let chunk = capacity.min(CHUNK);
        let held = self
            .env
            .hold("pipe", (capacity + chunk) as u64)
            .and_then(|w| Ok((w, self.env.hold("pipe", READ_AHEAD)?)));
        let (out, inp): (DynOutputStream, DynInputStream) = match held {
            Ok((held_out, held_in)) => {
                // A duplex's halves close each other on drop, so dropping the
                // output end ends the input.
                let (writer, reader) = tokio::io::duplex(capacity);
                let out: DynOutputStream = Box::new(AsyncWriteStream::new(chunk, writer));
                let inp: DynInputStream = Box::new(AsyncReadStream::new(reader));
                (
                    Box::new(HeldStream::new(out, held_out)),
                    Box::new(HeldStream::new(inp, held_in)),
                )
            }
            Err(why) => (Box::new(Refused(why.clone())), Box::new(Refused(why))),
        };
        let out = self.env.table.push(out)?;
        let inp = self.env.table.push(inp)?;
        Ok((out, inp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime_wasi::p2::{Pollable, StreamError};

    /// What the exec echo session relies on: bytes written into the output
    /// end come out of the input end, and dropping the output end ends it.
    #[tokio::test]
    async fn pipe_delivers_then_ends_when_the_writer_is_dropped() {
        let (writer, reader) = tokio::io::duplex(1024);
        let mut out: DynOutputStream = Box::new(AsyncWriteStream::new(1024, writer));
        let mut inp: DynInputStream = Box::new(AsyncReadStream::new(reader));
        out.ready().await;
        assert!(out.check_write().expect("writable") >= 5);
        out.write(Bytes::from_static(b"hello")).expect("write");
        out.flush().expect("flush");
        out.ready().await;
        drop(out);
        let mut got = Vec::new();
        let end = tokio::time::timeout(std::time::Duration::from_secs(5), async {
            loop {
                match inp.read(1024) {
                    Ok(b) if b.is_empty() => inp.ready().await,
                    Ok(b) => got.extend_from_slice(&b),
                    Err(StreamError::Closed) => break,
                    Err(e) => panic!("read failed: {e:?}"),
                }
            }
        })
        .await;
        assert!(
            end.is_ok(),
            "the input never ended after the writer was dropped"
        );
        assert_eq!(got, b"hello");
    }
}
