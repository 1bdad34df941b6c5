//! Moving bytes through `wasi:io` streams, and streams of one's own.
//!
//! Waits here include the call's cancellation (see [`crate::time`]): a
//! stream nobody drains does not hold a call past its deadline.

use crate::bindings::pando::runtime::streams as host;
use crate::time;
use crate::types::{Error, InputStream, OutputStream, StreamError};

/// How much one `read` asks for: large enough that a stream costs few host
/// calls, small enough not to bloat the guest's memory.
const READ_CHUNK: u64 = 64 * 1024;

/// How much one `blocking-splice` may move; the host moves less when the
/// output accepts less.
const SPLICE_CHUNK: u64 = 1024 * 1024;

/// An input stream that yields `bytes`, then ends.
pub fn from_bytes(bytes: &[u8]) -> InputStream {
    host::from_bytes(bytes)
}

/// A bounded pipe: what is written into the output end comes out of the
/// input end. Writers wait while `capacity` bytes are unread (the host caps
/// it at 1 MiB); dropping the output end ends the input.
pub fn pipe(capacity: u64) -> (OutputStream, InputStream) {
    host::pipe(capacity)
}

/// Write all of `bytes` into `out` and flush, in chunks as large as the
/// stream accepts (`check-write`), waiting while it accepts nothing.
pub fn write_all(out: &OutputStream, bytes: &[u8]) -> Result<(), Error> {
    let mut rest = bytes;
    while !rest.is_empty() {
        let permit = out.check_write().map_err(write_error)?;
        if permit == 0 {
            wait_writable(out)?;
            continue;
        }
        let n = usize::try_from(permit)
            .unwrap_or(usize::MAX)
            .min(rest.len());
        out.write(&rest[..n]).map_err(write_error)?;
        rest = &rest[n..];
    }
    flush(out)
}

/// Flush `out` and wait until everything written has left it.
pub fn flush(out: &OutputStream) -> Result<(), Error> {
    out.flush().map_err(write_error)?;
    // After `flush`, `check-write` answers 0 until the flush completes.
    while out.check_write().map_err(write_error)? == 0 {
        wait_writable(out)?;
    }
    Ok(())
}

/// Read `input` to its end; `invalid` if it holds more than `limit` bytes.
pub fn read_to_end(input: &InputStream, limit: usize) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    loop {
        match input.read(READ_CHUNK) {
            Ok(chunk) if chunk.is_empty() => {
                let ready = input.subscribe();
                time::wait_any(&[&ready])?;
            }
            Ok(chunk) => {
                if out.len() + chunk.len() > limit {
                    return Err(Error::Invalid(format!(
                        "the stream holds more than its limit of {limit} bytes"
                    )));
                }
                out.extend_from_slice(&chunk);
            }
            Err(StreamError::Closed) => return Ok(out),
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(Error::Unavailable(format!(
                    "reading a stream failed: {}",
                    e.to_debug_string()
                )));
            }
        }
    }
}

/// Copy `input` to its end into `output` with `blocking-splice`: the bytes
/// move inside the host and never enter guest memory. The number of bytes
/// copied. Checks cancellation between chunks.
///
/// WASI reports both "input ended" and "output closed" as `closed`; both end
/// the copy here, so a reader that went away early is not an error.
pub fn copy(input: &InputStream, output: &OutputStream) -> Result<u64, Error> {
    let mut total = 0u64;
    loop {
        time::check_cancelled()?;
        match output.blocking_splice(input, SPLICE_CHUNK) {
            Ok(n) => total += n,
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(Error::Unavailable(format!(
                    "copying a stream failed: {}",
                    e.to_debug_string()
                )));
            }
        }
    }
    match output.blocking_flush() {
        Ok(()) | Err(StreamError::Closed) => Ok(total),
        Err(e) => Err(write_error(e)),
    }
}

fn wait_writable(out: &OutputStream) -> Result<(), Error> {
    let ready = out.subscribe();
    time::wait_any(&[&ready]).map(|_| ())
}

fn write_error(e: StreamError) -> Error {
    match e {
        StreamError::Closed => Error::Unavailable("the stream's reader closed it".into()),
        StreamError::LastOperationFailed(e) => {
            Error::Unavailable(format!("writing a stream failed: {}", e.to_debug_string()))
        }
    }
}
