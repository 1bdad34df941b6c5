//! Counts the host's audit events (target `pando_host::audit`): one per
//! Kubernetes request an adapter makes, so a benchmark can report API
//! requests per call from what the host really sent.

use std::sync::atomic::{AtomicU64, Ordering};

use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{Filtered, Targets};
use tracing_subscriber::layer::Context;

static EVENTS: AtomicU64 = AtomicU64::new(0);
static CACHED: AtomicU64 = AtomicU64::new(0);

/// Audit events seen since the process started.
pub fn count() -> u64 {
    EVENTS.load(Ordering::Relaxed)
}

/// Of those, the ones the host's watch-fed cache answered (`cached: true`):
/// requests that never reached the API server.
pub fn cached() -> u64 {
    CACHED.load(Ordering::Relaxed)
}

/// Audit events that reached the API server (not answered by the cache)
/// since the process started: subtract two readings for a window's.
pub fn live() -> u64 {
    count() - cached()
}

struct Counter;

/// Reads an event's `cached` field.
struct CachedField(bool);

impl tracing::field::Visit for CachedField {
    fn record_bool(&mut self, field: &tracing::field::Field, value: bool) {
        if field.name() == "cached" {
            self.0 = value;
        }
    }

    fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
}

impl<S: Subscriber> Layer<S> for Counter {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        EVENTS.fetch_add(1, Ordering::Relaxed);
        let mut cached = CachedField(false);
        event.record(&mut cached);
        if cached.0 {
            CACHED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The counting layer, enabled for audit events only.
pub fn layer<S>() -> impl Layer<S>
where
    S: Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let only_audit = Targets::new().with_target("pando_host::audit", tracing::Level::INFO);
    Filtered::new(Counter, only_audit)
}
