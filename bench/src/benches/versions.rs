//! A call on a 0.2.0 adapter against the same call on a 0.1.0 one, both
//! through the host: what the second contract line costs a call.
//!
//! Host column: the 0.2.0 test adapter (`tests/components/v02-adapter`),
//! on the 0.2 engine (concurrency on). Native column: the 0.1.0 test adapter
//! (`tests/components/test-adapter`), on the 0.1 engine. Both compute next
//! to nothing, so the rows are the call path: `upstream` is a plain export
//! on both lines (wasmtime runs it as a task on the 0.2 engine, a fiber call
//! on the 0.1 one); `health-check` is a plain export in 0.1.0 and an `async
//! func` in 0.2.0 (run inside `Store::run_concurrent`). Batches alternate
//! between the two, as in `upstream`.

use std::hint::black_box;
use std::time::Instant;

use anyhow::{Result, ensure};
use pando_host::types::WorkloadRef;
use pando_host::{Adapter, LoadOptions};

use super::{call_ctx, ns, what};
use crate::env;
use crate::report::{Bench, Row, Unit};

/// Runs it.
pub async fn run(quick: bool) -> Result<Bench> {
    let (batch, samples) = if quick {
        (1_000u64, 20usize)
    } else {
        (10_000, 100)
    };
    let host = env::host()?;
    let load = async |name: &str| {
        let path = env::component(name)?;
        host.load_file(&path, LoadOptions::default())
            .await
            .map_err(|e| anyhow::anyhow!("loading {}: {e}", path.display()))
    };
    let old = load("pando_test_adapter").await?;
    let new = load("pando_v02_adapter").await?;
    ensure!(
        old.shape().version == "0.1.0" && new.shape().version == "0.2.0",
        "expected a 0.1.0 and a 0.2.0 adapter, got {} and {}",
        old.shape().version,
        new.shape().version
    );
    let wref = WorkloadRef {
        bundle: "shop".into(),
        workload: "web".into(),
    };

    let mut bench = Bench::new("versions", what("versions"));
    for call in [Call::Upstream, Call::HealthCheck] {
        // Warm-up: each adapter's pooled instance, caches.
        batch_of(call, &old, &wref, batch).await?;
        batch_of(call, &new, &wref, batch).await?;
        let (mut v2, mut v1) = (Vec::new(), Vec::new());
        for _ in 0..samples {
            v2.push(batch_of(call, &new, &wref, batch).await? / batch as f64);
            v1.push(batch_of(call, &old, &wref, batch).await? / batch as f64);
        }
        bench.rows.push(
            Row::new(call.row(), Unit::Ns, &v2, &v1)
                .per_sample(batch)
                .extra("what", call.what()),
        );
    }
    bench.note(
        "host column: the 0.2.0 test adapter on the 0.2 engine; native column: the 0.1.0 test \
         adapter on the 0.1 engine; both through `Adapter`, one caller",
    );
    Ok(bench)
}

#[derive(Clone, Copy)]
enum Call {
    Upstream,
    HealthCheck,
}

impl Call {
    fn row(self) -> &'static str {
        match self {
            Call::Upstream => "upstream, 0.2 vs 0.1",
            Call::HealthCheck => "health-check, 0.2 vs 0.1",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Call::Upstream => "a plain export on both lines",
            Call::HealthCheck => "an `async func` in 0.2.0, a plain export in 0.1.0",
        }
    }
}

/// `n` calls of `call`; the total in nanoseconds.
async fn batch_of(call: Call, adapter: &Adapter, wref: &WorkloadRef, n: u64) -> Result<f64> {
    let cx = call_ctx();
    let t = Instant::now();
    for _ in 0..n {
        match call {
            Call::Upstream => {
                black_box(adapter.upstream(&cx, black_box(wref), 8080).await?);
            }
            Call::HealthCheck => adapter.health_check(&cx).await?,
        }
    }
    Ok(ns(t.elapsed()))
}
