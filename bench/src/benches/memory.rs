//! Resident memory: an idle configured instance, and a host with 10
//! adapters loaded. Every reading is taken in a fresh child process, so
//! nothing the parent did before counts.
//!
//! **Idle instance.** The child loads the Kubernetes adapter and grows its
//! pool of idle configured instances, then reads its resident memory
//! (VmRSS; Anonymous and file-backed from smaps_rollup) at each size. The
//! pool's internals are private, so the pool is grown through the public
//! API: K concurrent `observe` calls of an app that does not exist (one
//! GET each), each of which holds its instance while it waits in the
//! host's rate budget (1 token, 8 a
//! second), so the pool must make K instances, all returned idle
//! (`max_idle` is raised above K). The growth from `small` to `large` idle
//! instances, divided by the instances added, is the cost of one idle
//! configured instance; the first growth (from the one instance a load
//! leaves) also carries the first concurrent calls' buffers and is shown
//! for comparison. Linear memory is measured apart: the smallest
//! `limits.memory_bytes` (in 64 KiB pages) under which the adapter still
//! loads, configures and answers `capabilities` and `upstream` is the size
//! of its linear memory when idle. Native twin: ΔRSS of 10,000 configured
//! native adapters, divided.
//!
//! **10 adapters.** A child builds a host and loads the Kubernetes adapter
//! 10 times under different names from the warm compile cache (each load
//! is a separate `Adapter`: its own deserialized code, pool and first
//! instance). Native twin: the same binary configuring 10 native adapters.

use anyhow::{Result, ensure};
use futures::future::join_all;
use pando_host::types::BundleRef;
use pando_host::{Limits, LoadOptions};

use super::{call_ctx, what};
use crate::child::{self, MemoryReport, settle};
use crate::env::{self, Identity};
use crate::mem::{Resident, mib};
use crate::report::{Bench, Row, Unit};

/// Pool sizes the idle-instance child grows to.
const SMALL: u32 = 8;
const LARGE: u32 = 24;
/// Native adapters configured to measure one.
const NATIVE_MANY: u32 = 10_000;
/// Adapters in the loaded-host reading.
const ADAPTERS: u32 = 10;
/// A page of linear memory.
const PAGE: u64 = 64 << 10;

/// Runs it.
pub async fn run(quick: bool) -> Result<Bench> {
    let repeats = if quick { 1 } else { 3 };
    // The children load from the bench's cache: make sure it is warm.
    env::load_kubernetes(&env::host()?, None).await?;
    let small_s = SMALL.to_string();
    let large_s = LARGE.to_string();

    let (mut per_instance, mut first_growth, mut anon_share) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..repeats {
        let (r, _): (MemoryReport, _) = child::spawn(&["instances", &small_s, &large_s]).await?;
        let [(_, r1), (_, r2), (_, r3)] = &r.steps[..] else {
            anyhow::bail!("the instances child reported {} steps", r.steps.len());
        };
        let [c1, c2, c3] = r.counts[..] else {
            anyhow::bail!("the instances child reported {} counts", r.counts.len());
        };
        ensure!(
            c2 == SMALL && c3 == LARGE,
            "the pool grew to {c2} and {c3} idle instances, not {SMALL} and {LARGE}"
        );
        let grown = r3.since(r2);
        per_instance.push(mib(grown.rss) / f64::from(c3 - c2));
        anon_share.push(grown.anon as f64 / grown.rss.max(1) as f64);
        first_growth.push(mib(r2.since(r1).rss) / f64::from(c2 - c1));
    }
    let (native, _): (MemoryReport, _) =
        child::spawn(&["native-adapters", &NATIVE_MANY.to_string()]).await?;
    let native_one = mib(native.steps[1].1.since(&native.steps[0].1).rss) / f64::from(NATIVE_MANY);
    let linear = linear_memory().await?;
    let idle = Row::new(
        "idle configured instance",
        Unit::Mib,
        &per_instance,
        &[native_one],
    );
    let p50 = idle.host.map(|s| s.median).unwrap_or(f64::NAN);
    let beyond = p50 - mib(linear);
    let idle = idle
        .target(
            "≤ 2 MiB resident beyond its linear memory",
            p50 <= 2.0 || beyond <= 2.0,
        )
        .extra(
            "linear memory when idle (size, not residency)",
            format!("{:.2} MiB", mib(linear)),
        )
        .extra(
            "resident − linear memory size, p50",
            format!("{beyond:.2} MiB"),
        )
        .extra(
            "anonymous share of the growth",
            format!("{:.0}%", median(&anon_share) * 100.0),
        )
        .extra(
            "first growth (1 → 8, carries the first concurrent calls' buffers)",
            format!("{:.2} MiB per instance", median(&first_growth)),
        );

    let (mut host_rss, mut per_adapter, mut native_rss) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..repeats {
        let (h, _): (MemoryReport, _) = child::spawn(&["adapters", &ADAPTERS.to_string()]).await?;
        let built = h.steps[1].1;
        let loaded = h.steps[2].1;
        host_rss.push(mib(loaded.rss));
        per_adapter.push(mib(loaded.since(&built).rss) / f64::from(ADAPTERS));
        let (n, _): (MemoryReport, _) =
            child::spawn(&["native-adapters", &ADAPTERS.to_string()]).await?;
        native_rss.push(mib(n.steps[1].1.rss));
    }
    let loaded = Row::new(
        "process with 10 adapters",
        Unit::Mib,
        &host_rss,
        &native_rss,
    )
    .extra(
        "per adapter loaded, p50",
        format!("{:.2} MiB", median(&per_adapter)),
    );

    let mut bench = Bench::new("memory", what("memory"));
    bench.rows = vec![idle, loaded];
    bench.note(
        "the 10 adapters are the Kubernetes adapter under 10 names; \
         every reading is VmRSS of a fresh child process",
    );
    Ok(bench)
}

fn median(v: &[f64]) -> f64 {
    crate::stats::Summary::of(v)
        .map(|s| s.median)
        .unwrap_or(f64::NAN)
}

/// The child side of the idle-instance reading.
pub async fn instances(small: u32, large: u32) -> Result<MemoryReport> {
    let client = env::client(Identity::Pando).await?;
    let host = env::host()?;
    let mut grants = env::kubernetes_grants()?;
    if let Some(k) = grants.kubernetes.as_mut() {
        // One token, then one every 125 ms: K calls hold K instances while
        // they wait, and all K are made before the first token comes.
        k.rate.qps = 8.0;
        k.rate.burst = 1;
    }
    let limits = Limits {
        max_idle: large + 1,
        max_instances: large + 1,
        ..Limits::default()
    };
    let adapter = env::load(
        &host,
        &env::kubernetes_adapter()?,
        LoadOptions {
            grants,
            config: env::KUBERNETES_CONFIG.into(),
            kubernetes: Some(client),
            limits,
            ..LoadOptions::default()
        },
    )
    .await?;
    let cx = call_ctx();
    // An app that does not exist: its observe is one GET of its namespace.
    let none = BundleRef {
        id: "bench-no-such-app".into(),
    };
    // Takes the one token, and warms the client's connection.
    adapter.observe(&cx, &none).await?;
    let mut steps = Vec::new();
    let mut counts = Vec::new();
    settle().await;
    steps.push(("loaded".to_string(), Resident::now()));
    counts.push(adapter.idle_instances() as u32);
    for k in [small, large] {
        let calls = (0..k).map(|_| adapter.observe(&cx, &none));
        for r in join_all(calls).await {
            r?;
        }
        settle().await;
        steps.push((format!("{k} idle"), Resident::now()));
        counts.push(adapter.idle_instances() as u32);
    }
    Ok(MemoryReport { steps, counts })
}

/// The Kubernetes adapter's linear memory when idle: the smallest memory
/// limit, in whole pages, under which it loads, configures and answers.
async fn linear_memory() -> Result<u64> {
    let host = env::host()?;
    let fits = async |bytes: u64| -> bool {
        let options = LoadOptions {
            grants: env::kubernetes_grants().unwrap_or_default(),
            config: env::KUBERNETES_CONFIG.into(),
            limits: Limits {
                memory_bytes: bytes,
                ..Limits::default()
            },
            ..LoadOptions::default()
        };
        let Ok(component) = env::kubernetes_adapter() else {
            return false;
        };
        let Ok(adapter) = host.load_file(&component, options).await else {
            return false;
        };
        let web = pando_host::types::WorkloadRef {
            bundle: "shop".into(),
            workload: "web".into(),
        };
        adapter.capabilities(&call_ctx()).await.is_ok()
            && adapter.upstream(&call_ctx(), &web, 8080).await.is_ok()
    };
    // Pages: `lo` does not fit, `hi` does.
    let (mut lo, mut hi) = (1u64, (256u64 << 20) / PAGE);
    ensure!(
        fits(hi * PAGE).await,
        "the adapter does not run within 256 MiB"
    );
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if fits(mid * PAGE).await {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi * PAGE)
}
