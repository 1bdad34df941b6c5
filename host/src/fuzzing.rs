//! Entry points for the fuzz targets in `fuzz/` (see `docs/security.md`).
//!
//! Not part of the host's API: these wrap crate-private, host-side pure
//! functions that take values a guest (or the cluster, or an operator's
//! file) controls, so that `cargo fuzz` can reach them without a wasm
//! component or a cluster. Each one calls the code the host itself runs;
//! none reimplements it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::capability::kubernetes::{admission, send};
use crate::capability::log;
use crate::capability::ratelimit::RateLimiter;
use crate::runtime::state::Identity;
use crate::runtime::stderr::StderrTail;

/// The URI `kubernetes.send` and `kubernetes.watch` put on the wire for a
/// guest's `path` and `query` (the query encoded by the host).
pub fn request_uri(path: &str, query: &[(String, String)]) -> String {
    send::uri(path, query)
}

/// The `metadata.name` a request body gives itself, as `kubernetes.send`
/// reads it for the grant check of a cluster-scoped `create`.
pub fn body_name(body: Option<&[u8]>) -> Option<String> {
    admission::body_name(body)
}

/// `log.log`'s clipping of guest text: the longest prefix of `s` of at most
/// `max` bytes that ends on a character boundary.
pub fn log_clip(s: &str, max: usize) -> &str {
    log::clip(s, max)
}

/// The limits `log.log` clips a guest's record to: the message, the number
/// of fields, a key and a value, in bytes (fields in number).
pub const LOG_LIMITS: (usize, usize, usize, usize) = (
    log::MAX_MESSAGE,
    log::MAX_FIELDS,
    log::MAX_KEY,
    log::MAX_VALUE,
);

/// Writes `chunks` into a fresh guest stderr, as the guest's `wasi:cli`
/// stderr writes would arrive, and returns the tail a trap message would
/// quote.
pub fn stderr_tail(chunks: &[&[u8]]) -> String {
    let tail = StderrTail::new(Arc::new(Identity {
        name: "fuzz".into(),
    }));
    for chunk in chunks {
        tail.write(chunk);
    }
    tail.take_tail()
}

/// Takes `takes` tokens at once from a rate budget of `qps` and `burst`
/// (as a grants document's `kubernetes.rate` makes it), then asks again
/// `later` after; the waits the budget answered, for the requests it
/// refused.
pub fn rate_waits(qps: f64, burst: u32, takes: u32, later: Duration) -> Vec<Duration> {
    let limiter = RateLimiter::new(qps, burst);
    let now = Instant::now();
    let mut waits = Vec::new();
    for _ in 0..takes {
        if let Err(wait) = limiter.try_take(now) {
            waits.push(wait);
        }
    }
    if let Some(then) = now.checked_add(later)
        && let Err(wait) = limiter.try_take(then)
    {
        waits.push(wait);
    }
    waits
}
