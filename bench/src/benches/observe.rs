//! Observe passes over N apps at the reference's default request budget.
//!
//! The apps (see `observe_setup`) are made once per size, cumulatively:
//! 100, then 1,000, then 10,000 when making 1,000 was quick enough. A pass
//! observes the apps in order, one call after another, for a fixed window
//! of wall time (15 s; 5 s in `--quick`); an observe still running when the
//! window closes is not counted.
//!
//! Host: the Kubernetes adapter's `observe`, loaded afresh for each pass
//! (so its rate budget starts full, as after an idle spell) with
//! `deploy/grants/kubernetes.yaml`, whose `rate: {qps: 5, burst: 10}` is
//! what throttles: the host's token bucket, which every Kubernetes request
//! of the adapter waits on. The adapter's own `api_qps`/`api_burst`, set
//! to the same 5 and 10, are a second bucket inside the guest (the SDK's
//! budget); equal to the grant's, they narrow nothing. API requests per app
//! come from the host's audit events. Native: the same four requests (GET the namespace, LIST
//! its managed pods and Services, LIST its claims) with kube-rs and the
//! same `pando` identity, each first taking a token from the host's own
//! `RateLimiter` at 5/s, burst 10. A second pair of passes lifts the budget
//! on both sides (on the host's, the grant's rate and the adapter's
//! `api_qps`/`api_burst` both), to show what the API itself allows.

use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, Pod, Service};
use kube::api::ListParams;
use kube::{Api, Client};
use pando_host::ratelimit::RateLimiter;
use pando_host::types::BundleRef;
use pando_host::{Adapter, LoadOptions};

use super::observe_setup as setup;
use super::{call_ctx, what};
use crate::audit;
use crate::env::{self, Identity};
use crate::report::{Bench, Row, Unit};

/// The budget the spec gives the adapter by default.
const QPS: f64 = 5.0;
const BURST: u32 = 10;
/// The pass length (`--quick` makes it 5 s).
const PASS: Duration = Duration::from_secs(15);
/// Making this many apps must have taken less than this for the next,
/// ten times larger size to be attempted.
const NEXT_SIZE_BUDGET: Duration = Duration::from_secs(120);

/// Runs it, at sizes up to `max_apps`.
pub async fn run(quick: bool, max_apps: usize) -> Result<Bench> {
    let all: &[usize] = if quick { &[100] } else { &[100, 1_000, 10_000] };
    let sizes: Vec<usize> = all
        .iter()
        .copied()
        .filter(|&n| n <= max_apps.max(100))
        .collect();
    let window = if quick { Duration::from_secs(5) } else { PASS };
    let admin = env::client(Identity::Admin).await?;
    let client = env::client(Identity::Pando).await?;
    let mut bench = Bench::new("observe", what("observe"));

    // Leftovers of an interrupted run go first (in the background: their
    // names never collide with this run's).
    let stale = setup::delete_apps(&admin).await?;
    if stale > 0 {
        tracing::info!(namespaces = stale, "deleting a previous run's observe apps");
    }
    setup::ensure_node(&admin).await?;
    let run_id = format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() % 0xfffff)
            .unwrap_or(0)
    );

    let result = passes(&mut bench, &admin, &client, &run_id, &sizes, window).await;
    if let Some(&n) = all.iter().find(|&&n| n > max_apps.max(100)) {
        bench.note(format!("N={n} and above not run: --max-apps {max_apps}"));
    }
    let t = Instant::now();
    let deleted = setup::delete_apps(&admin).await;
    match &deleted {
        Ok(n) => bench.note(format!(
            "cleanup: deleted {n} namespaces in {:.1} s (the namespace controller finishes in \
             the background)",
            t.elapsed().as_secs_f64()
        )),
        Err(e) => bench.note(format!("cleanup failed: {e:#}")),
    }
    result?;
    Ok(bench)
}

async fn passes(
    bench: &mut Bench,
    admin: &Client,
    client: &Client,
    run_id: &str,
    sizes: &[usize],
    window: Duration,
) -> Result<()> {
    let mut made = 0usize;
    let mut last_setup = Duration::ZERO;
    for &n in sizes {
        if made > 0 && last_setup > NEXT_SIZE_BUDGET {
            bench.note(format!(
                "N={n} not run: making the previous {made} apps took {:.0} s (over {} s), so {n} \
                 would take about {:.0} min on this shared machine",
                last_setup.as_secs_f64(),
                NEXT_SIZE_BUDGET.as_secs(),
                last_setup.as_secs_f64() * (n - made) as f64 / made.max(1) as f64 / 60.0
            ));
            break;
        }
        let t = Instant::now();
        let ids = setup::app_ids(run_id, 0, n);
        setup::create_apps(admin, &ids[made..]).await?;
        let created = t.elapsed();
        let running =
            setup::wait_running(admin, n, Duration::from_secs(60 + n as u64 / 20)).await?;
        last_setup = t.elapsed();
        tracing::info!(
            apps = n,
            seconds = last_setup.as_secs_f64(),
            running,
            "apps ready"
        );
        let grown = n - made;
        made = n;

        // Host, native, native, host: whatever drifts in the control plane
        // during the four passes hits both sides alike.
        let h = host_pass(client, &ids, window, Budget::Limited).await?;
        let nat = native_pass(client, &ids, window, Budget::Limited).await?;
        let free_n = native_pass(client, &ids, window, Budget::Unlimited).await?;
        let free_h = host_pass(client, &ids, window, Budget::Unlimited).await?;
        // A budget left in place would make the "no budget" row another
        // budgeted one: it was, while this bench lifted the grant's rate
        // and not the adapter's own (docs/history/benchmarks.md, "A session's
        // output in 64 KiB").
        ensure!(
            free_h.apps > h.apps,
            "the host's pass without a budget observed {} apps, no more than at 5 QPS ({}): \
             a request budget still throttles it",
            free_h.apps,
            h.apps
        );
        let cached = cached_pass(client, &ids, window).await?;

        let secs = window.as_secs();
        let row = Row::new(
            &format!("N={n}: apps per {secs} s pass, 5 QPS"),
            Unit::Count,
            &[h.apps as f64],
            &[nat.apps as f64],
        );
        let met = h.apps >= n.min(10_000);
        bench.rows.push(
            row.target(&format!("all {n} apps in one pass (the aim: 10,000)"), met)
                .extra(
                    "API requests per app (host audit)",
                    format!("{:.2}", h.per_app()),
                )
                .extra(
                    "one pass over all N at this rate would take",
                    format!(
                        "{:.0} s",
                        n as f64 * window.as_secs_f64() / h.apps.max(1) as f64
                    ),
                )
                .extra(
                    "setup",
                    format!(
                        "{grown} apps made in {:.1} s, {running}/{n} pods running after {:.1} s",
                        created.as_secs_f64(),
                        last_setup.as_secs_f64()
                    ),
                ),
        );
        bench.rows.push(
            Row::new(
                &format!("N={n}: apps per {secs} s pass, 5 QPS, watch-fed cache"),
                Unit::Count,
                &[cached.apps as f64],
                &[nat.apps as f64],
            )
            .target(
                &format!("all {n} apps in one pass (the aim: 10,000)"),
                cached.apps >= n.min(10_000),
            )
            .extra(
                "requests per app that reached the API server",
                format!("{:.2}", cached.requests as f64 / cached.apps.max(1) as f64),
            )
            .extra("cache", cached.note.clone()),
        );
        bench.rows.push(
            Row::new(
                &format!("N={n}: apps per {secs} s pass, no budget"),
                Unit::Count,
                &[free_h.apps as f64],
                &[free_n.apps as f64],
            )
            .extra(
                "API requests per app (host audit)",
                format!("{:.2}", free_h.per_app()),
            ),
        );
    }
    Ok(())
}

/// What a pass through the watch-fed cache did: apps observed, and
/// requests that reached the API server.
struct CachedPass {
    apps: usize,
    requests: u64,
    note: String,
}

/// A pass at the spec's budget (the grants' 5 QPS, burst 10) with the
/// host's watch-fed cache: observe's reads ask for any version, the cache
/// answers them, and only its misses cost budget. The cache is started
/// (and has listed) before the window opens, as in a host that has run for
/// a while; its start-up is reported.
async fn cached_pass(client: &Client, ids: &[String], window: Duration) -> Result<CachedPass> {
    let t = Instant::now();
    let cache = env::synced_cache(client).await?;
    let synced = t.elapsed();
    let adapter = env::load_kubernetes_cached(&env::host()?, client.clone(), cache.clone()).await?;
    let before = audit::live();
    let pass = observe_for(&adapter, ids, window).await?;
    let live = audit::live() - before;
    Ok(CachedPass {
        apps: pass.apps,
        requests: live,
        note: format!(
            "{} objects held, listed in {:.1} s",
            cache.len(),
            synced.as_secs_f64()
        ),
    })
}

/// Whether a pass runs at the spec's budget or without one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Budget {
    Limited,
    Unlimited,
}

/// What one pass did.
struct Pass {
    apps: usize,
    requests: u64,
}

impl Pass {
    fn per_app(&self) -> f64 {
        if self.apps == 0 {
            0.0
        } else {
            self.requests as f64 / self.apps as f64
        }
    }
}

async fn host_pass(
    client: &Client,
    ids: &[String],
    window: Duration,
    budget: Budget,
) -> Result<Pass> {
    let host = env::host()?;
    let adapter = reload(&host, client, budget).await?;
    // Sanity: the first app is seen as made.
    let first = adapter
        .observe(&call_ctx(), &BundleRef { id: ids[0].clone() })
        .await?;
    ensure!(
        first.exists && first.workloads.len() == 1,
        "app {} observed as {first:?}",
        ids[0]
    );
    drop(adapter);
    // A fresh load: its budget starts full, untouched by the check above.
    let adapter = reload(&host, client, budget).await?;
    observe_for(&adapter, ids, window).await
}

/// The Kubernetes adapter loaded for a pass. Without a budget both
/// buckets are lifted: the host's grant rate and the adapter's own
/// `api_qps`/`api_burst`, which narrow the grant inside the guest.
async fn reload(host: &pando_host::Host, client: &Client, budget: Budget) -> Result<Adapter> {
    let mut grants = env::kubernetes_grants()?;
    let mut config = env::KUBERNETES_CONFIG.to_string();
    if budget == Budget::Unlimited {
        grants = env::unbudgeted_grants(grants);
        config = env::unbudgeted(&config)?;
    }
    env::load(
        host,
        &env::kubernetes_adapter()?,
        LoadOptions {
            grants,
            config,
            kubernetes: Some(client.clone()),
            ..LoadOptions::default()
        },
    )
    .await
}

/// Observes the apps in turn until `window` has passed.
async fn observe_for(adapter: &Adapter, ids: &[String], window: Duration) -> Result<Pass> {
    let started = Instant::now();
    let audited = audit::count();
    let mut pass = Pass {
        apps: 0,
        requests: 0,
    };
    for id in ids.iter().cycle() {
        if started.elapsed() >= window {
            break;
        }
        adapter
            .observe(&call_ctx(), &BundleRef { id: id.clone() })
            .await?;
        if started.elapsed() <= window {
            pass.apps += 1;
            pass.requests = audit::count() - audited;
        }
    }
    Ok(pass)
}

async fn native_pass(
    client: &Client,
    ids: &[String],
    window: Duration,
    budget: Budget,
) -> Result<Pass> {
    let limiter = RateLimiter::new(QPS, BURST);
    let take = async || {
        if budget == Budget::Limited {
            limiter.acquire().await;
        }
    };
    let managed = ListParams::default().labels("app.kubernetes.io/managed-by=pando");
    let started = Instant::now();
    let mut pass = Pass {
        apps: 0,
        requests: 0,
    };
    for id in ids.iter().cycle() {
        if started.elapsed() >= window {
            break;
        }
        let ns = format!("pando-{id}");
        take().await;
        let exists = Api::<Namespace>::all(client.clone()).get_opt(&ns).await?;
        ensure!(exists.is_some(), "namespace {ns} is missing");
        take().await;
        let pods = Api::<Pod>::namespaced(client.clone(), &ns)
            .list(&managed)
            .await?;
        take().await;
        let services = Api::<Service>::namespaced(client.clone(), &ns)
            .list(&managed)
            .await?;
        take().await;
        let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), &ns)
            .list(&ListParams::default())
            .await?;
        std::hint::black_box((pods, services, claims));
        if started.elapsed() <= window {
            pass.apps += 1;
            pass.requests += 4;
        }
    }
    Ok(pass)
}
