//! Calls that wait, from many callers: 0.2.0 instances each serving many
//! of them at once (`limits.calls_per_instance`) against a pool of 0.1.0
//! instances, one per call in flight.
//!
//! The call is `apply`, which in both test adapters waits a few
//! milliseconds on the host's clock and returns (0.1.0: `sleep-<ms>`, a
//! `wasi:io` pollable its instance blocks on; 0.2.0: the plan's `revision`,
//! an `async` sleep during which its instance runs other calls). That is
//! the shape of a real adapter's call waiting on the API server, with the
//! server left out. Both with the same limits (`max_instances` 64), the
//! 0.2.0 one with 64 calls to an instance: it makes one instance per core
//! (a store runs on one thread) and seats the rest beside them; the 0.1.0
//! one makes one per caller. Each row: calls a second from k callers over a window, the
//! instances each made, and the resident anonymous memory each grew by
//! (its instances' memories and stores: the pool keeps what it made).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use pando_host::types::{BundlePlan, EgressPolicy, NetworkRules};
use pando_host::{Adapter, Limits, LoadOptions};

use super::{call_ctx, what};
use crate::env;
use crate::mem::{Resident, mib};
use crate::report::{Bench, Row, Unit};

/// How long each call waits.
const WAIT_MS: u64 = 5;

/// Callers at once.
const CALLERS: [usize; 3] = [1, 8, 64];

/// Runs it.
pub async fn run(quick: bool) -> Result<Bench> {
    let (window, rounds) = if quick {
        (Duration::from_millis(500), 2)
    } else {
        (Duration::from_secs(2), 5)
    };
    let host = env::host()?;
    let load = async |name: &str, limits: Limits| {
        let path = env::component(name)?;
        host.load_file(
            &path,
            LoadOptions {
                limits,
                ..LoadOptions::default()
            },
        )
        .await
        .map_err(|e| anyhow::anyhow!("loading {}: {e}", path.display()))
    };
    let mut bench = Bench::new("shared", what("shared"));
    for &k in &CALLERS {
        // Fresh adapters for each count, so each one's instances and memory
        // are this count's.
        let pooled = Limits {
            max_instances: 64,
            max_idle: 64,
            ..Limits::default()
        };
        let before = Resident::now();
        let old = load("pando_test_adapter", pooled.clone()).await?;
        let v1 = windows(&old, Version::V0_1, k, window, rounds).await?;
        let old_grew = Resident::now().since(&before).anon;
        let old_made = old.idle_instances();
        drop(old);

        let shared = Limits {
            calls_per_instance: 64,
            ..pooled
        };
        let before = Resident::now();
        let new = load("pando_v02_adapter", shared).await?;
        let v2 = windows(&new, Version::V0_2, k, window, rounds).await?;
        let new_grew = Resident::now().since(&before).anon;
        let usage = new.shared_instances();
        ensure!(
            usage.is_some_and(|u| u.made >= 1),
            "the 0.2.0 adapter served no call from a shared instance: {usage:?}"
        );
        let new_made = usage.map_or(0, |u| u.made);
        drop(new);
        bench.rows.push(
            Row::new(
                &format!(
                    "apply waiting {WAIT_MS} ms, {k} caller{}",
                    if k == 1 { "" } else { "s" }
                ),
                Unit::PerS,
                &v2,
                &v1,
            )
            .extra(
                "instances: 0.2 shared / 0.1 pool",
                format!("{new_made} / {old_made}"),
            )
            .extra(
                "anonymous memory grown: 0.2 / 0.1",
                format!("{:.1} / {:.1} MiB", mib(new_grew), mib(old_grew)),
            ),
        );
    }
    bench.note(
        "host column: the 0.2.0 test adapter, `calls_per_instance` 64; native column: the 0.1.0 \
         test adapter; both `max_instances` 64, through `Adapter`, a fresh load for each count of \
         callers",
    );
    Ok(bench)
}

#[derive(Clone, Copy)]
enum Version {
    V0_1,
    V0_2,
}

/// Calls a second from `k` callers, each window a sample.
async fn windows(
    adapter: &Adapter,
    version: Version,
    k: usize,
    window: Duration,
    rounds: usize,
) -> Result<Vec<f64>> {
    // Warm: the instances `k` callers need.
    calls(adapter, version, k, window / 4).await?;
    let mut per_s = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        per_s.push(calls(adapter, version, k, window).await?);
    }
    Ok(per_s)
}

/// `k` callers calling `apply` in a loop until `window` has passed; the
/// calls a second.
async fn calls(adapter: &Adapter, version: Version, k: usize, window: Duration) -> Result<f64> {
    let start = Arc::new(tokio::sync::Barrier::new(k));
    let tasks: Vec<_> = (0..k)
        .map(|i| {
            let (a, start) = (adapter.clone(), start.clone());
            let p = match version {
                Version::V0_1 => plan(format!("sleep-{WAIT_MS}")),
                Version::V0_2 => plan(format!("app-{i}")),
            };
            tokio::spawn(async move {
                start.wait().await;
                let begun = Instant::now();
                let mut n = 0u64;
                while begun.elapsed() < window {
                    a.apply(&call_ctx(), &p).await?;
                    n += 1;
                }
                Ok::<_, anyhow::Error>((n, begun.elapsed()))
            })
        })
        .collect();
    let (mut n, mut longest) = (0u64, Duration::ZERO);
    for t in tasks {
        let (calls, took) = t.await??;
        n += calls;
        longest = longest.max(took);
    }
    Ok(n as f64 / longest.as_secs_f64())
}

/// A plan with no workloads: `id` says what the 0.1.0 adapter does, the
/// revision how long the 0.2.0 one waits.
fn plan(id: String) -> BundlePlan {
    BundlePlan {
        id,
        revision: WAIT_MS.to_string(),
        workloads: Vec::new(),
        volumes: Vec::new(),
        network: NetworkRules {
            egress: EgressPolicy::Open,
        },
        pull_credentials: Vec::new(),
    }
}
