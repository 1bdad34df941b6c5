//! `upstream` through the host vs the same function called natively.
//!
//! Host: `Adapter::upstream` of the Kubernetes adapter component (lease a
//! warm pooled instance, lower the arguments, run the guest's
//! `names::upstream`, lift the result, return the instance), awaited on the
//! bench's tokio runtime. Native: `KubernetesAdapter::upstream` of the same
//! crate compiled for this machine (`adapter-kubernetes` is also an rlib),
//! configured with the same JSON; its `WorkloadRef` is cloned per call
//! because the native trait takes it by value, as the guest receives owned
//! strings lifted into its memory.
//!
//! Timers cost tens of nanoseconds, so calls are batched: each sample is
//! the mean of a batch, host and native batches alternating so that a
//! neighbour's load hits both alike. A second series times single host
//! calls for the tail (p99) a batch mean hides.

use std::hint::black_box;
use std::time::Instant;

use anyhow::{Result, ensure};
use pando_adapter_sdk::Adapter as _;
use pando_adapter_sdk::types::WorkloadRef as NativeRef;
use pando_host::Adapter;
use pando_host::types::WorkloadRef;
use tracing::instrument::WithSubscriber as _;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;

use super::{call_ctx, ns, what};
use crate::env;
use crate::report::{Bench, Row, Unit};

/// The port every `upstream` benchmark asks for.
pub(super) const PORT: u16 = 8080;

/// Runs it.
pub async fn run(quick: bool) -> Result<Bench> {
    let (batch, samples, singles) = if quick {
        (1_000u64, 30usize, 5_000usize)
    } else {
        (10_000, 200, 200_000)
    };
    let host = env::host()?;
    let adapter = env::load_kubernetes(&host, None).await?;
    let native = env::native_kubernetes()?;
    let wref = WorkloadRef {
        bundle: "shop".into(),
        workload: "web".into(),
    };
    let nref = NativeRef {
        bundle: "shop".into(),
        workload: "web".into(),
    };
    let cx = call_ctx();

    // The two compute the same thing, or the comparison means nothing.
    let h = adapter.upstream(&cx, &wref, PORT).await?;
    let n = native
        .upstream(nref.clone(), PORT)
        .map_err(|e| anyhow::anyhow!("native upstream: {e:?}"))?;
    ensure!(
        h.host == n.host && h.port == n.port,
        "host and native disagree: {}:{} vs {}:{}",
        h.host,
        h.port,
        n.host,
        n.port
    );

    // The baseline the host's bookkeeping is measured against: the same
    // component's export called straight on a configured store.
    let mut raw = adapter
        .raw_instance()
        .await
        .map_err(|e| anyhow::anyhow!("raw instance: {e}"))?;
    let r = raw
        .upstream(&wref, PORT)
        .await
        .map_err(|e| anyhow::anyhow!("raw upstream: {e}"))?;
    ensure!(
        r == h,
        "the raw call and the host call disagree: {r:?} vs {h:?}"
    );

    // Warm-up: caches, branch predictors, the pool's one instance.
    host_batch(&adapter, &wref, batch).await?;
    raw_batch(&mut raw, &wref, batch).await?;
    native_batch(&native, &nref, batch);

    let (mut host_ns, mut raw_ns, mut native_ns) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..samples {
        host_ns.push(host_batch(&adapter, &wref, batch).await? / batch as f64);
        raw_ns.push(raw_batch(&mut raw, &wref, batch).await? / batch as f64);
        native_ns.push(native_batch(&native, &nref, batch) / batch as f64);
    }
    let batched = Row::new("per call, batched", Unit::Ns, &host_ns, &native_ns).per_sample(batch);
    let met = batched.host.is_some_and(|s| s.median <= 1000.0);
    let batched = batched.target("host p50 ≤ 1.0 µs (1000 ns)", met);
    let against_raw = Row::new("host vs raw wasmtime call", Unit::Ns, &host_ns, &raw_ns)
        .per_sample(batch)
        .extra(
            "what",
            "the 'native' column is the same component's export called on a configured store \
             (wasmtime's async call, lowering, lifting, the guest's work; no lease, deadline, \
             span, metrics or quarantine): the ratio is what the host's bookkeeping costs",
        );
    let met = against_raw.ratio.is_some_and(|x| x <= 1.2);
    let against_raw = against_raw.target("host ≤ 1.2× the raw call", met);

    // Single calls, each timed, for the tail.
    let (mut host_one, mut native_one) = (Vec::with_capacity(singles), Vec::new());
    for _ in 0..singles {
        let t = Instant::now();
        black_box(adapter.upstream(&cx, black_box(&wref), PORT).await?);
        host_one.push(ns(t.elapsed()));
        let t = Instant::now();
        let _ = black_box(native.upstream(black_box(&nref).clone(), PORT));
        native_one.push(ns(t.elapsed()));
    }
    let single = Row::new("single call", Unit::Ns, &host_one, &native_one);

    // With a subscriber that records the host's `adapter_call` span (as
    // core would at INFO), formatted into a sink.
    let info = tracing_subscriber::registry().with(
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::sink)
            .with_filter(tracing_subscriber::filter::LevelFilter::INFO),
    );
    let spanned = async {
        let mut v = Vec::new();
        for _ in 0..samples.min(50) {
            v.push(host_batch(&adapter, &wref, batch).await? / batch as f64);
        }
        Ok::<_, anyhow::Error>(v)
    }
    .with_subscriber(info)
    .await?;
    let spanned = Row::new("batched, INFO span on", Unit::Ns, &spanned, &native_ns)
        .per_sample(batch)
        .extra(
            "what",
            "the same host call with a subscriber recording the adapter_call span at INFO",
        );

    // What every call moves and zeroes: its future, made and dropped unpolled.
    let host_future = std::mem::size_of_val(&adapter.upstream(&cx, &wref, PORT));
    let raw_future = std::mem::size_of_val(&raw.upstream(&wref, PORT));

    let mut bench = Bench::new("upstream", what("upstream"));
    bench.rows = vec![batched, against_raw, single, spanned];
    bench.note(format!(
        "result `{}:{}`; the bench's own subscriber leaves the host's spans disabled except in the \
         spanned row; the host call's future is {host_future} bytes, the raw call's {raw_future}",
        h.host, h.port
    ));
    Ok(bench)
}

/// The child side of `upstream-loop`: `calls` host calls, or with `raw`
/// the raw baseline's, on a host of `slots` engine slots (the default
/// without); the mean in nanoseconds.
pub async fn profile_loop(calls: u64, slots: Option<u32>, raw: bool) -> Result<f64> {
    let host = env::host_with_slots(slots)?;
    // The same clock on every call of every run, whatever the epoch
    // thread has done by now; calibrated on a thread of its own, so that
    // a profile of this one counts the calls alone.
    std::thread::spawn(pando_host::calibrate_call_clock)
        .join()
        .map_err(|_| anyhow::anyhow!("calibrating the call clock panicked"))?;
    let adapter = env::load_kubernetes(&host, None).await?;
    let wref = WorkloadRef {
        bundle: "shop".into(),
        workload: "web".into(),
    };
    let total = if raw {
        let mut raw = adapter
            .raw_instance()
            .await
            .map_err(|e| anyhow::anyhow!("raw instance: {e}"))?;
        raw_batch(&mut raw, &wref, calls).await?
    } else {
        host_batch(&adapter, &wref, calls).await?
    };
    Ok(total / calls.max(1) as f64)
}

/// `n` host calls; the total in nanoseconds.
pub(super) async fn host_batch(adapter: &Adapter, wref: &WorkloadRef, n: u64) -> Result<f64> {
    let cx = call_ctx();
    let t = Instant::now();
    for _ in 0..n {
        black_box(adapter.upstream(&cx, black_box(wref), PORT).await?);
    }
    Ok(ns(t.elapsed()))
}

/// `n` raw wasmtime calls; the total in nanoseconds.
async fn raw_batch(
    raw: &mut pando_host::adapter::RawInstance,
    wref: &WorkloadRef,
    n: u64,
) -> Result<f64> {
    let t = Instant::now();
    for _ in 0..n {
        black_box(
            raw.upstream(black_box(wref), PORT)
                .await
                .map_err(|e| anyhow::anyhow!("raw upstream: {e}"))?,
        );
    }
    Ok(ns(t.elapsed()))
}

/// `n` native calls; the total in nanoseconds.
fn native_batch(
    native: &pando_adapter_kubernetes::KubernetesAdapter,
    nref: &NativeRef,
    n: u64,
) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        let _ = black_box(native.upstream(black_box(nref).clone(), PORT));
    }
    ns(t.elapsed())
}
