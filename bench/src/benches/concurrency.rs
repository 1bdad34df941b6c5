//! Calls from many callers at once: how the host scales with cores.
//!
//! Core calls an adapter from many tasks at once (a reconciler over
//! thousands of apps, the proxy's `upstream` on every request). K tasks on
//! the bench's runtime (one worker thread per core) call one adapter in a
//! loop for a window; a sample is the calls all K made, per second. Two
//! calls: `upstream` (pure guest compute, no I/O) and `observe` of one app
//! answered from the watch-fed cache (four reads the cache answers, the
//! guest's decoding). Rounds take K = 1, 2, 8, 64 in turn, so that a
//! neighbour's load hits each alike.
//!
//! The "native" column of each row is the same call from **one** caller:
//! the ratio is the speed-up over one caller, which on two cores can be at
//! most 2 (target ≥ 1.7 from two callers up). Per-call latency is sampled
//! (every 16th call) for the p99 shown under each row. At 64 callers the
//! pool's 32 instances are all busy and callers wait: the pool's waits are
//! read from the adapter's metrics (`pando_adapter_pool_waits_total`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use pando_host::Adapter;
use pando_host::types::{BundleRef, WorkloadRef};

use super::observe_setup as setup;
use super::upstream::PORT;
use super::{call_ctx, what};
use crate::env::{self, Identity};
use crate::report::{Bench, Row, Unit};
use crate::stats::Summary;

/// The callers' counts, in the order each round takes them.
const CALLERS: [usize; 4] = [1, 2, 8, 64];
/// Every how many calls one's latency is kept.
const SAMPLE_EVERY: u64 = 16;

/// What one window of K callers did.
struct Window {
    per_s: f64,
    latencies_ns: Vec<f64>,
}

/// Runs it.
pub async fn run(quick: bool) -> Result<Bench> {
    let (window, rounds) = if quick {
        (Duration::from_millis(300), 2)
    } else {
        (Duration::from_secs(2), 5)
    };
    let mut bench = Bench::new("concurrency", what("concurrency"));

    let host = env::host()?;
    let upstream_adapter = env::load_kubernetes(&host, None).await?;
    let upstream = Call::Upstream(WorkloadRef {
        bundle: "shop".into(),
        workload: "web".into(),
    });
    let rows = scaling("upstream", &upstream_adapter, window, rounds, &upstream).await?;
    bench.rows.extend(rows);

    let admin = env::client(Identity::Admin).await?;
    let observed = cached_observe(&mut bench, &admin, window, rounds).await;
    let deleted = setup::delete_apps(&admin).await;
    if let Err(e) = deleted {
        bench.note(format!("cleanup failed: {e:#}"));
    }
    observed?;
    bench.note(format!(
        "{} s windows, {rounds} rounds; the 'native' column is the same call from one caller, so \
         the ratio is the speed-up over one caller (at most 2 on two cores)",
        window.as_secs_f64()
    ));
    Ok(bench)
}

/// The `observe` rows: one app made on the bench's KWOK node, a watch-fed
/// cache that has listed it, and an adapter reading through the cache.
async fn cached_observe(
    bench: &mut Bench,
    admin: &kube::Client,
    window: Duration,
    rounds: usize,
) -> Result<()> {
    setup::ensure_node(admin).await?;
    let ids = setup::app_ids("cc", 0, 1);
    setup::create_apps(admin, &ids).await?;
    let running = setup::wait_running(admin, 1, Duration::from_secs(120)).await?;
    ensure!(running >= 1, "the concurrency bench's app did not run");
    let client = env::client(Identity::Pando).await?;
    let cache = env::synced_cache(&client).await?;
    let adapter = env::load_kubernetes_cached(&env::host()?, client, cache).await?;
    let observe = Call::Observe(BundleRef { id: ids[0].clone() });
    let before = crate::audit::live();
    let rows = scaling("observe (cached)", &adapter, window, rounds, &observe).await?;
    let live = crate::audit::live() - before;
    bench.rows.extend(rows);
    bench.note(format!(
        "observe (cached): {live} requests reached the API server over all windows"
    ));
    Ok(())
}

/// A call the callers make. Each caller owns its copy and its clone of
/// the adapter, so the loop touches nothing shared but what the host does
/// (a shared `Arc` cloned per call would be the bench's own contention).
#[derive(Clone)]
enum Call {
    Upstream(WorkloadRef),
    Observe(BundleRef),
}

impl Call {
    async fn make(&self, a: &Adapter) -> Result<()> {
        match self {
            Call::Upstream(w) => {
                a.upstream(&call_ctx(), w, PORT).await?;
            }
            Call::Observe(b) => {
                let seen = a.observe(&call_ctx(), b).await?;
                // An observe that found nothing would measure the wrong call.
                ensure!(
                    !seen.workloads.is_empty(),
                    "the bench's app has no workloads"
                );
            }
        }
        Ok(())
    }
}

/// Rows of `call` from each count of callers, against one caller.
async fn scaling(
    name: &str,
    adapter: &Adapter,
    window: Duration,
    rounds: usize,
    call: &Call,
) -> Result<Vec<Row>> {
    // Warm: an instance per caller of the largest count the pool keeps.
    callers(adapter, 64, Duration::from_millis(100), call).await?;
    let waits_before = pool_waits(adapter);
    let (made_before, discarded_before) =
        (instances(adapter, "made"), instances(adapter, "discarded"));
    let mut per_k: Vec<(Vec<f64>, Vec<f64>)> = CALLERS.iter().map(|_| Default::default()).collect();
    for _ in 0..rounds {
        for (i, &k) in CALLERS.iter().enumerate() {
            let w = callers(adapter, k, window, call).await?;
            per_k[i].0.push(w.per_s);
            per_k[i].1.extend(w.latencies_ns);
        }
    }
    let waits = pool_waits(adapter) - waits_before;
    let one = per_k[0].0.clone();
    let mut rows = Vec::new();
    for (i, &k) in CALLERS.iter().enumerate() {
        let (per_s, lat) = &per_k[i];
        let mut row = Row::new(
            &format!("{name}, {k} caller{}", if k == 1 { "" } else { "s" }),
            Unit::PerS,
            per_s,
            &one,
        );
        if k >= 2 {
            let met = row.ratio.is_some_and(|r| r >= 1.7);
            row = row.target("≥ 1.7× one caller's throughput on two cores", met);
        }
        if let Some(s) = Summary::of(lat) {
            row = row.extra(
                "per call p50 / p99",
                format!("{:.2} / {:.2} µs", s.median / 1e3, s.p99 / 1e3),
            );
        }
        if k == 64 {
            row = row.extra("pool waits over all windows", waits).extra(
                "instances made / discarded over all windows",
                format!(
                    "{} / {}",
                    instances(adapter, "made") - made_before,
                    instances(adapter, "discarded") - discarded_before
                ),
            );
        }
        rows.push(row);
    }
    Ok(rows)
}

/// K callers calling in a loop until `window` has passed.
async fn callers(adapter: &Adapter, k: usize, window: Duration, call: &Call) -> Result<Window> {
    let start = Arc::new(tokio::sync::Barrier::new(k));
    let tasks: Vec<_> = (0..k)
        .map(|_| {
            let (a, call, start) = (adapter.clone(), call.clone(), start.clone());
            tokio::spawn(async move {
                start.wait().await;
                let begun = Instant::now();
                let (mut n, mut lat) = (0u64, Vec::new());
                while begun.elapsed() < window {
                    let t = Instant::now();
                    call.make(&a).await?;
                    if n % SAMPLE_EVERY == 0 {
                        lat.push(t.elapsed().as_secs_f64() * 1e9);
                    }
                    n += 1;
                }
                Ok::<_, anyhow::Error>((n, begun.elapsed(), lat))
            })
        })
        .collect();
    let (mut calls, mut longest, mut latencies_ns) = (0u64, Duration::ZERO, Vec::new());
    for t in tasks {
        let (n, took, lat) = t.await??;
        calls += n;
        longest = longest.max(took);
        latencies_ns.extend(lat);
    }
    Ok(Window {
        per_s: calls as f64 / longest.as_secs_f64(),
        latencies_ns,
    })
}

/// The adapter's pool waits so far, from its metrics.
fn pool_waits(adapter: &Adapter) -> u64 {
    counter(adapter, "pando_adapter_pool_waits_total")
}

/// The adapter's instances `made` or `discarded` so far, from its metrics.
fn instances(adapter: &Adapter, which: &str) -> u64 {
    counter(adapter, &format!("pando_adapter_instances_{which}_total"))
}

/// The adapter's counter `name`, from its metrics.
fn counter(adapter: &Adapter, name: &str) -> u64 {
    let (metric, who) = (
        format!("{name}{{"),
        format!("adapter=\"{}\"", adapter.name()),
    );
    adapter
        .metrics()
        .lines()
        .filter(|l| l.starts_with(&metric) && l.contains(&who))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0)
}
