//! What every call does before and after the adapter: find the adapter the
//! request names, give the call its deadline (the gRPC deadline) and its
//! cancellation (the client going away), and run it on a task of its own so
//! that a cancelled call still ends in the adapter (a trial removes what it
//! made) rather than being dropped mid-way.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pando_host::{Adapter, CallContext, CallError, CancellationToken};
use tonic::metadata::MetadataMap;
use tonic::{Code, Status};

use crate::status;

/// The request header naming the adapter a call is for.
pub const ADAPTER_HEADER: &str = "pando-adapter";

/// The adapters a server serves, by the names they were loaded under.
#[derive(Clone, Debug)]
pub struct Adapters {
    by_name: BTreeMap<String, Adapter>,
}

impl Adapters {
    /// Serves these.
    pub fn new(by_name: BTreeMap<String, Adapter>) -> Self {
        Adapters { by_name }
    }

    /// The names, for logs and errors.
    pub fn names(&self) -> Vec<&str> {
        self.by_name.keys().map(String::as_str).collect()
    }

    /// The adapter a request's header names (or the only one).
    pub fn pick(&self, meta: &MetadataMap) -> Result<&Adapter, Status> {
        match meta.get(ADAPTER_HEADER).map(|v| v.to_str()) {
            Some(Ok(name)) => self.by_name.get(name).ok_or_else(|| {
                status::host(
                    Code::NotFound,
                    "no-adapter",
                    format!(
                        "no adapter named `{name}` is loaded here (loaded: {}); set the \
                         `{ADAPTER_HEADER}` header to one of them",
                        self.names().join(", ")
                    ),
                )
            }),
            Some(Err(_)) => Err(status::host(
                Code::InvalidArgument,
                "no-adapter",
                format!("the `{ADAPTER_HEADER}` header is not ASCII"),
            )),
            None if self.by_name.len() == 1 => self
                .by_name
                .values()
                .next()
                .ok_or_else(|| Status::internal("no adapter")),
            None => Err(status::host(
                Code::InvalidArgument,
                "no-adapter",
                format!(
                    "{} adapters are loaded here ({}): name one in the `{ADAPTER_HEADER}` header",
                    self.by_name.len(),
                    self.names().join(", ")
                ),
            )),
        }
    }
}

/// The gRPC deadline of a request (`grpc-timeout`: up to 8 digits and a
/// unit), if it has one.
pub fn deadline(meta: &MetadataMap) -> Option<Duration> {
    let v = meta.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = v.split_at(v.len().checked_sub(1)?);
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.saturating_mul(3600)),
        "M" => Duration::from_secs(n.saturating_mul(60)),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// A call's context from its request: the gRPC deadline when there is one
/// (else the adapter's default, or none for `long` calls: watches and
/// streams that end with their work), and a fresh cancellation token.
pub fn context(meta: &MetadataMap, long: bool) -> CallContext {
    let ctx = CallContext::new(CancellationToken::new());
    match deadline(meta) {
        Some(d) => ctx.with_timeout(d),
        None if long => ctx.without_deadline(),
        None => ctx,
    }
}

/// Runs `f` and waits for it. If the waiting is dropped (the client
/// cancelled, its deadline passed) the call's token is cancelled and the
/// call goes on, on a task of its own, until the adapter has ended it (a
/// trial removes what it made). It runs in the request's own task until
/// then: a task per call would cost every call a spawn and, on an idle
/// runtime, a wake-up of another worker (measured: docs/history/benchmarks.md,
/// "Calls from Go through `pando-host serve`").
pub async fn run<T, F, Fut>(ctx: CallContext, f: F) -> Result<T, Status>
where
    F: FnOnce(CallContext) -> Fut,
    Fut: Future<Output = Result<T, CallError>> + Send + 'static,
    T: Send + 'static,
{
    let token = ctx.cancel_token().clone();
    let out = Finish {
        call: Some(Box::pin(f(ctx))),
        token,
    }
    .await;
    out.map_err(status::from_call)
}

/// A call that, dropped before it ended, cancels its token and is finished
/// on a spawned task instead of being dropped mid-way.
struct Finish<Fut: Future + Send + 'static> {
    call: Option<Pin<Box<Fut>>>,
    token: CancellationToken,
}

impl<Fut: Future + Send + 'static> Future for Finish<Fut> {
    type Output = Fut::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Fut::Output> {
        let Some(call) = self.call.as_mut() else {
            // Polled after it returned: a caller's bug, not the client's.
            return Poll::Pending;
        };
        let out = std::task::ready!(call.as_mut().poll(cx));
        self.call = None;
        Poll::Ready(out)
    }
}

impl<Fut: Future + Send + 'static> Drop for Finish<Fut> {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            self.token.cancel();
            tokio::spawn(async move {
                let _ = call.await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(timeout: &str) -> MetadataMap {
        let mut m = MetadataMap::new();
        m.insert("grpc-timeout", timeout.parse().expect("ascii"));
        m
    }

    #[test]
    fn grpc_timeouts_read_in_every_unit() {
        assert_eq!(deadline(&meta("2H")), Some(Duration::from_secs(7200)));
        assert_eq!(deadline(&meta("3M")), Some(Duration::from_secs(180)));
        assert_eq!(deadline(&meta("5S")), Some(Duration::from_secs(5)));
        assert_eq!(deadline(&meta("250m")), Some(Duration::from_millis(250)));
        assert_eq!(
            deadline(&meta("99999u")),
            Some(Duration::from_micros(99_999))
        );
        assert_eq!(deadline(&meta("10n")), Some(Duration::from_nanos(10)));
        assert_eq!(deadline(&meta("5x")), None);
        assert_eq!(deadline(&meta("S")), None);
        assert_eq!(deadline(&MetadataMap::new()), None);
    }
}
