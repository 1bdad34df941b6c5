//! A fleet: one component loaded once per cluster in one host.
//!
//! One Pando may drive many clusters with the same adapter: a load per
//! cluster, each with its own name, configuration, grants and pool (here no
//! Kubernetes client: a client and its watch-fed cache are per cluster
//! whatever the host does, and the cache has its own row, `cache-memory`).
//! A fresh child process builds a host and loads the Kubernetes adapter N
//! times from the warm compile cache, reading its resident memory after the
//! first load and after the last, and timing each load. Loads after the
//! first share the first one's code (`runtime/code.rs`).
//!
//! One child's adapters keep no idle instance (`max_idle` 0), so that what a
//! load costs beyond its instances is read alone; others have the default
//! limits (one idle instance each) and time `upstream` on the first adapter
//! once all N are loaded, in turn with children that load it alone.
//!
//! No native twin: a native adapter is a value in core's process, whatever
//! the number of clusters; the target is absolute.

use anyhow::{Result, ensure};
use pando_host::types::WorkloadRef;
use pando_host::{CacheOutcome, Limits, LoadOptions};
use serde::{Deserialize, Serialize};

use super::upstream::host_batch;
use super::{us, what};
use crate::child::{self, settle};
use crate::env;
use crate::mem::{Resident, mib};
use crate::report::{Bench, Row, Unit};

/// What a fleet child reports.
#[derive(Debug, Serialize, Deserialize)]
pub struct FleetReport {
    /// Resident memory after the host is built, after the first load and
    /// after the last.
    pub steps: Vec<(String, Resident)>,
    /// Each load's time, in microseconds, in order.
    pub load_us: Vec<f64>,
    /// Loads that took the live code of an earlier one.
    pub shared: u32,
    /// Idle instances of all the adapters after the last load.
    pub idle: u32,
    /// `upstream` on the first adapter once all are loaded, ns per call,
    /// one sample per batch. Empty without `--upstream`.
    pub upstream_ns: Vec<f64>,
}

/// Runs it.
pub async fn run(quick: bool) -> Result<Bench> {
    let count: u32 = if quick { 10 } else { 100 };
    // The children load from the bench's cache: make sure it is warm.
    env::load_kubernetes(&env::host()?, None).await?;
    let n = count.to_string();
    let (bare, _): (FleetReport, _) = child::spawn(&["fleet", &n, "--max-idle", "0"]).await?;
    // `upstream` with one adapter loaded and with all, from children taken
    // in turn, so that a neighbour's load hits both alike.
    let (mut one_ns, mut all_ns, mut pooled) = (Vec::new(), Vec::new(), None);
    for _ in 0..if quick { 1 } else { 3 } {
        let (one, _): (FleetReport, _) = child::spawn(&["fleet", "1", "--upstream"]).await?;
        one_ns.extend(one.upstream_ns);
        let (all, _): (FleetReport, _) = child::spawn(&["fleet", &n, "--upstream"]).await?;
        all_ns.extend(all.upstream_ns.iter().copied());
        pooled.get_or_insert(all);
    }
    let pooled = pooled.ok_or_else(|| anyhow::anyhow!("no fleet child ran"))?;
    ensure!(
        count >= 2 && bare.steps.len() == 3,
        "a fleet is two loads or more"
    );
    for r in [&bare, &pooled] {
        ensure!(
            r.shared == count - 1,
            "{} of {} loads after the first shared its code",
            r.shared,
            count - 1
        );
    }
    ensure!(
        bare.idle == 0 && pooled.idle >= count,
        "idle instances: {} without, {} with (wanted 0 and at least {count})",
        bare.idle,
        pooled.idle
    );

    let per_load = |r: &FleetReport, f: fn(&Resident) -> u64| {
        let (first, last) = (&r.steps[1].1, &r.steps[2].1);
        mib(f(last).saturating_sub(f(first))) / f64::from(count - 1)
    };
    let bare_rss = per_load(&bare, |r| r.rss);
    let memory = Row::new("memory per extra load", Unit::Mib, &[bare_rss], &[])
        .target("≤ 0.5 MiB beyond its instances", bare_rss <= 0.5)
        .extra(
            "of which anonymous / file-backed / PSS",
            format!(
                "{:.3} / {:.3} / {:.3} MiB",
                per_load(&bare, |r| r.anon),
                per_load(&bare, |r| r.file),
                per_load(&bare, |r| r.pss)
            ),
        )
        .extra(
            "with one idle instance each (default limits)",
            format!("{:.3} MiB", per_load(&pooled, |r| r.rss)),
        )
        .extra(
            format!("process with {count} loaded (default limits)").as_str(),
            format!("{:.1} MiB", mib(pooled.steps[2].1.rss)),
        );

    // The first load reads the cache; the others share its code.
    let extra_loads: Vec<f64> = pooled.load_us[1..].iter().map(|u| u / 1e3).collect();
    let load = Row::new("each extra cached load", Unit::Ms, &extra_loads, &[]);
    let met = load.host.is_some_and(|s| s.median <= 1.0);
    let load = load.target("≤ 1 ms", met).extra(
        "the first load (reads the compile cache)",
        format!("{:.2} ms", pooled.load_us[0] / 1e3),
    );

    let upstream = Row::new(
        format!("upstream with {count} loaded vs 1").as_str(),
        Unit::Ns,
        &all_ns,
        &one_ns,
    );
    let met = upstream.ratio.is_some_and(|r| r <= 1.03);
    let upstream = upstream.target("unchanged (≤ 1.03× the call with one loaded)", met);

    let mut bench = Bench::new("fleet", what("fleet"));
    bench.rows = vec![memory, load, upstream];
    bench.note(format!(
        "the Kubernetes adapter loaded {count} times under different names, without a Kubernetes \
         client; every reading is VmRSS of a fresh child; in the `upstream` row the 'native' column \
         is the same call in a child with one adapter loaded, children taken in turn"
    ));
    Ok(bench)
}

/// The child side: loads the Kubernetes adapter `count` times.
pub async fn child(count: u32, max_idle: u32, upstream: bool) -> Result<FleetReport> {
    let (batch, batches) = (10_000u64, 20usize);
    let wref = WorkloadRef {
        bundle: "shop".into(),
        workload: "web".into(),
    };
    let host = env::host()?;
    let (component, grants) = (env::kubernetes_adapter()?, env::kubernetes_grants()?);
    settle().await;
    let mut steps = vec![("host built".to_string(), Resident::now())];
    let (mut loaded, mut load_us, mut shared) = (Vec::new(), Vec::new(), 0u32);
    let mut upstream_ns = Vec::new();
    for i in 0..count {
        let options = LoadOptions {
            grants: grants.clone(),
            config: env::KUBERNETES_CONFIG.into(),
            name: Some(format!("cluster-{i}")),
            limits: Limits {
                max_idle,
                ..Limits::default()
            },
            ..LoadOptions::default()
        };
        let started = std::time::Instant::now();
        let adapter = env::load(&host, &component, options).await?;
        load_us.push(us(started.elapsed()));
        shared += u32::from(adapter.cache_outcome() == CacheOutcome::Shared);
        loaded.push(adapter);
        if i == 0 {
            settle().await;
            steps.push(("first loaded".into(), Resident::now()));
        }
    }
    settle().await;
    steps.push((format!("{count} loaded"), Resident::now()));
    if let Some(first) = loaded.first().filter(|_| upstream) {
        host_batch(first, &wref, batch).await?;
        for _ in 0..batches {
            upstream_ns.push(host_batch(first, &wref, batch).await? / batch as f64);
        }
    }
    let idle = loaded.iter().map(|a| a.idle_instances() as u32).sum();
    std::hint::black_box(&loaded);
    Ok(FleetReport {
        steps,
        load_us,
        shared,
        idle,
        upstream_ns,
    })
}
