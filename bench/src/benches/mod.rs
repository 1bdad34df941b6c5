//! The benchmarks, in the order a run takes them, and what they share.

pub(crate) mod cache_memory;
mod concurrency;
pub(crate) mod fleet;
mod go_client;
pub(crate) mod kube_rtt;
mod kube_write;
mod kube_write_check;
mod load;
mod logs;
mod managed_fields;
pub(crate) mod memory;
mod observe;
mod observe_setup;
pub(crate) mod pool;
mod restore;
mod serve;
mod shared;
mod snapshot;
pub(crate) mod upstream;
mod versions;

use std::time::Duration;

use anyhow::Result;
use pando_host::CallContext;

use crate::report::Bench;

/// Every benchmark: the name `--only` takes and what it measures, in the
/// order a run takes them. `observe` goes last: the namespace controller
/// clears its thousands of namespaces for minutes after it, and timings
/// taken meanwhile are that neighbour's.
pub const ALL: &[(&str, &str)] = &[
    (
        "upstream",
        "`Adapter::upstream` through the host vs the adapter's own `upstream` called natively",
    ),
    (
        "versions",
        "`upstream` and `health-check` on a 0.2.0 adapter (0.2 engine) vs a 0.1.0 one (0.1 engine), both through the host",
    ),
    (
        "shared",
        "`apply` waiting 5 ms from 1, 8 and 64 callers: one 0.2.0 instance serving them all vs a pool of 0.1.0 instances (throughput, instances, memory)",
    ),
    (
        "pool",
        "a call on a configured instance from the pool (warm, and when one must be made) vs native",
    ),
    (
        "load",
        "loading a cached component in a fresh process, and a first compile, vs a native configure",
    ),
    (
        "kube-3rtt",
        "a call making 3 Kubernetes GETs through the host vs the same 3 GETs with kube-rs",
    ),
    (
        "managed-fields",
        "a call reading a Pod 3 times, decoded by the guest: `managedFields` left out by the host vs asked for",
    ),
    (
        "kube-write",
        "creates (a ConfigMap, unpoliced; a Pod, body-checked) and a Pod patch (read + dry run + write) through the host vs kube-rs",
    ),
    (
        "log",
        "a large pod log streamed through the host vs read natively with kube-rs",
    ),
    (
        "snapshot",
        "a volume snapshot and a restore streamed through the host vs natively",
    ),
    (
        "serve",
        "calls from Go through `pando-host serve` (go-plugin, gRPC) vs the same calls in process",
    ),
    (
        "concurrency",
        "`upstream` and a cached `observe` from 1, 2, 8 and 64 callers at once: throughput against one caller, p99",
    ),
    (
        "memory",
        "resident memory of an idle configured instance, and of a host with 10 adapters loaded",
    ),
    (
        "fleet",
        "one component loaded once per cluster, 100 times in one host: memory and time per extra load, `upstream` with all loaded",
    ),
    (
        "cache-memory",
        "the watch-fed cache's resident bytes per pod held, at 30 000 and 100 000 pods, vs typed objects",
    ),
    (
        "observe",
        "observe passes over N apps at 5 QPS, burst 10: apps per 15 s pass, API requests per app",
    ),
];

/// Runs the benchmark `name`; `max_apps` caps the observe benchmark's N.
pub async fn run(name: &str, quick: bool, max_apps: usize) -> Result<Bench> {
    match name {
        "upstream" => upstream::run(quick).await,
        "versions" => versions::run(quick).await,
        "shared" => shared::run(quick).await,
        "pool" => pool::run(quick).await,
        "load" => load::run(quick).await,
        "kube-3rtt" => kube_rtt::run(quick).await,
        "managed-fields" => managed_fields::run(quick).await,
        "kube-write" => kube_write::run(quick).await,
        "log" => logs::run(quick).await,
        "snapshot" => snapshot::run(quick).await,
        "serve" => serve::run(quick).await,
        "concurrency" => concurrency::run(quick).await,
        "observe" => observe::run(quick, max_apps).await,
        "memory" => memory::run(quick).await,
        "fleet" => fleet::run(quick).await,
        "cache-memory" => cache_memory::run(quick).await,
        other => anyhow::bail!("no benchmark named `{other}`"),
    }
}

/// Deletes a benchmark's namespace (in the background: the namespace
/// controller finishes it); a failure is a note on `bench`, not an error.
async fn delete_namespace(bench: &mut Bench, admin: kube::Client, ns: &str) {
    let deleted = kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(admin)
        .delete(ns, &kube::api::DeleteParams::background())
        .await;
    if let Err(e) = deleted {
        bench.note(format!("cleanup of {ns} failed: {e}"));
    }
}

/// `outcome`, once namespace `ns` is deleted whether or not it is a bench
/// (a failed deletion is a note on the bench).
async fn namespace_deleted(admin: kube::Client, ns: &str, outcome: Result<Bench>) -> Result<Bench> {
    let cleanup = kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(admin)
        .delete(ns, &kube::api::DeleteParams::background())
        .await;
    let mut bench = outcome?;
    if let Err(e) = cleanup {
        bench.note(format!("cleanup of {ns} failed: {e}"));
    }
    Ok(bench)
}

/// A plan whose `id` names one of kube-probe's operations (its crate
/// docs), and nothing else.
fn probe_plan(id: String) -> pando_host::types::BundlePlan {
    use pando_host::types::{BundlePlan, EgressPolicy, NetworkRules};
    BundlePlan {
        id,
        revision: "1".into(),
        workloads: Vec::new(),
        volumes: Vec::new(),
        network: NetworkRules {
            egress: EgressPolicy::None,
        },
        pull_credentials: Vec::new(),
    }
}

/// The description of benchmark `name` in [`ALL`].
fn what(name: &str) -> &'static str {
    ALL.iter()
        .find(|(n, _)| *n == name)
        .map(|(_, w)| *w)
        .unwrap_or("")
}

/// A call context for benchmark calls: a deadline far enough never to
/// matter, one token reused by every call.
fn call_ctx() -> CallContext {
    CallContext::default().with_timeout(Duration::from_secs(300))
}

/// Nanoseconds of a duration, as the float the statistics take.
fn ns(d: Duration) -> f64 {
    d.as_secs_f64() * 1e9
}

/// Microseconds of a duration.
fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Milliseconds of a duration.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
