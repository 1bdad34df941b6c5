//! Counts the HTTP requests a `kube::Client` sends, and of those the reads
//! (GET) and the dry runs (`dryRun=All`). The host's audit has one event
//! per request the *adapter* makes; the requests the host adds for its own
//! checks (the read of the object and the dry run before a patch) are not
//! audited, so a benchmark that must show them counts them here, at the
//! client the host and the native twin share.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tower::{Layer, Service};

/// Requests sent so far through a counted client.
#[derive(Debug, Default)]
pub struct RoundTrips {
    sent: AtomicU64,
    reads: AtomicU64,
    dry_runs: AtomicU64,
}

/// A reading of [`RoundTrips`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// All requests.
    pub sent: u64,
    /// Of those, the GETs.
    pub reads: u64,
    /// Of those, the ones with `dryRun=All` in their query.
    pub dry_runs: u64,
}

impl RoundTrips {
    /// The counts now.
    pub fn read(&self) -> Reading {
        Reading {
            sent: self.sent.load(Ordering::Relaxed),
            reads: self.reads.load(Ordering::Relaxed),
            dry_runs: self.dry_runs.load(Ordering::Relaxed),
        }
    }
}

impl std::ops::Sub for Reading {
    type Output = Reading;

    fn sub(self, earlier: Reading) -> Reading {
        Reading {
            sent: self.sent - earlier.sent,
            reads: self.reads - earlier.reads,
            dry_runs: self.dry_runs - earlier.dry_runs,
        }
    }
}

impl std::ops::AddAssign for Reading {
    fn add_assign(&mut self, other: Reading) {
        self.sent += other.sent;
        self.reads += other.reads;
        self.dry_runs += other.dry_runs;
    }
}

/// The layer that counts into a shared [`RoundTrips`].
#[derive(Debug, Clone)]
pub struct CountLayer(pub Arc<RoundTrips>);

impl<S> Layer<S> for CountLayer {
    type Service = Counted<S>;

    fn layer(&self, inner: S) -> Counted<S> {
        Counted {
            inner,
            counts: self.0.clone(),
        }
    }
}

/// A service that counts each request, then sends it on unchanged.
#[derive(Debug, Clone)]
pub struct Counted<S> {
    inner: S,
    counts: Arc<RoundTrips>,
}

impl<S, B> Service<http::Request<B>> for Counted<S>
where
    S: Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> S::Future {
        self.counts.sent.fetch_add(1, Ordering::Relaxed);
        if req.method() == http::Method::GET {
            self.counts.reads.fetch_add(1, Ordering::Relaxed);
        }
        let dry = req
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|kv| kv == "dryRun=All"));
        if dry {
            self.counts.dry_runs.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.call(req)
    }
}
