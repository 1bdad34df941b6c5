//! Writes through the host's object rules (issue 19): what the body check
//! adds to a write, against the same request sent natively.
//!
//! Host: kube-probe's `apply` with plan id `body:<method>:<type>:<path>` and
//! a body, which the guest sends as it is through the host's Kubernetes
//! import (grant check, audit, and for a policed kind the object rules) and
//! whose answer it hands back as a string. Native: the same method, path,
//! content type and body sent with kube-rs's `Client::request_text`, the
//! answer read as a string. Both use one `kube::Client` of the `pando`
//! identity (the host is given a clone) that counts the requests it sends,
//! so the round trips each side made are known, dry runs included. Rows:
//!
//! - a ConfigMap create: a kind the object rules do not police, so the
//!   host sends the body unread — its overhead *without* the body check;
//! - a Pod create of the same request size: parsed, checked against the
//!   baseline profile and the host's pod rules, re-serialized — the
//!   overhead *with* it. The difference of the two is the check's cost;
//! - a merge patch of one label on an existing Pod: the host reads the pod
//!   (its rules compare old and new: a `nodeName` the scheduler set may
//!   stay), sends the patch as a dry run, checks the result, then sends it
//!   conditioned on the dry run's resourceVersion: 3 round trips, where
//!   the native twin makes 1;
//! - the same patch through a probe loaded with the watch-fed cache, on a
//!   pod labelled as Pando's: the cache's copy stands in for the read when
//!   it is the version the dry run changed, 2 round trips (a lagging copy
//!   costs a read and a second dry run, counted and reported).
//!
//! Each iteration makes all four pairs; within a pair the side that goes
//! first alternates. Pods never run: a nodeSelector no node has, and a
//! scheduler name no scheduler serves, so neither the scheduler nor KWOK
//! touches them. Created objects are removed (and counted) with one
//! delete-collection per kind every `BATCH` iterations, outside the timed
//! calls; the namespace goes at the end.

use std::future::Future;
use std::time::Instant;

use anyhow::{Context as _, Result, bail, ensure};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client};
use pando_host::Adapter;
use serde_json::{Value, json};

use super::observe_setup as setup;
use super::{call_ctx, kube_write_check, us, what};
use crate::env::{self, Identity};
use crate::report::{Bench, Row, Unit};
use crate::roundtrips::{Reading, RoundTrips};
use crate::stats::Summary;
use crate::{audit, cpu};

/// The bench's namespace (granted by `env::WRITE_PROBE_GRANTS`).
pub(super) const NAMESPACE: &str = "pando-bench-write";
/// The label on every object the bench makes; its value says which.
const LABEL: &str = "pando.test/bench-write";
/// Its value on the objects the create rows make (deleted per batch).
const CREATED: &str = "create";
/// The pods the patch row patches, one per side.
pub(super) const PATCH_PODS: [&str; 2] = ["bench-write-patch-host", "bench-write-patch-native"];
/// The pod the cached patch row patches through the host: labelled as
/// Pando's, so the watch-fed cache holds it.
const CACHED_PATCH_POD: &str = "bench-write-patch-cached";
/// Iterations between two clean-ups of the created objects.
const BATCH: usize = 50;

/// What one side of a row measured.
#[derive(Default)]
struct Side {
    /// Microseconds per call.
    times: Vec<f64>,
    /// CPU time of the whole process during the calls, ns.
    cpu_ns: u64,
    /// Requests the shared client sent during the calls.
    trips: Reading,
}

impl Side {
    fn per_call(&self, n: u64) -> f64 {
        n as f64 / self.times.len().max(1) as f64
    }
}

/// One row's two sides.
#[derive(Default)]
struct Pair {
    host: Side,
    native: Side,
}

/// Runs it; the namespace is deleted whether or not the measuring worked.
pub async fn run(quick: bool) -> Result<Bench> {
    let admin = env::client(Identity::Admin).await?;
    prepare_namespace(&admin).await?;
    let outcome = measure(&admin, quick).await;
    super::namespace_deleted(admin, NAMESPACE, outcome).await
}

async fn measure(admin: &Client, quick: bool) -> Result<Bench> {
    let (warmup, samples) = if quick { (5, 30) } else { (30, 1_000) };
    let (client, counts) = env::counted_client(Identity::Pando).await?;
    let host = env::host()?;
    let adapter = env::load_probe_with(&host, client.clone(), env::write_probe_grants()?).await?;
    // The same probe with a watch-fed cache, whose own watches go through a
    // client of their own: the shared one counts the calls' requests only.
    let cache = env::synced_cache(&env::client(Identity::Pando).await?).await?;
    let cached = env::load_probe_cached(
        &host,
        client.clone(),
        env::write_probe_grants()?,
        Some(cache),
    )
    .await?;
    // Two bodies of one size, so the two creates differ only in kind.
    let pod_json = pod_body(None, CREATED).to_string();
    let cm_json = configmap_body(pod_json.len())?;

    let mut cm = Pair::default();
    let mut pod = Pair::default();
    let mut patch = Pair::default();
    let mut cached_patch = Pair::default();
    let mut audited_host = 0u64;
    let mut made = 0usize;
    let mut in_batch = 0usize;
    for i in 0..warmup + samples {
        let measuring = i >= warmup;
        if i == warmup {
            // Warm-up objects go before the first sample; from here on
            // only the timed calls' audit events count.
            clean_batch(admin, in_batch).await?;
            in_batch = 0;
            audited_host = 0;
        }
        let host_first = i % 2 == 0;
        let a = audit::count();
        let pairs: [(&mut Pair, Op<'_>, &Adapter); 4] = [
            (&mut cm, Op::Create("configmaps", &cm_json), &adapter),
            (&mut pod, Op::Create("pods", &pod_json), &adapter),
            (&mut patch, Op::Patch(i, PATCH_PODS[0], "n"), &adapter),
            // The native twin writes another value: the same one twice would be
            // a no-op patch, which the API server answers without a write.
            (
                &mut cached_patch,
                Op::Patch(i, CACHED_PATCH_POD, "m"),
                &cached,
            ),
        ];
        for (pair, op, adapter) in pairs {
            let mut scratch = Pair::default();
            let target = if measuring { pair } else { &mut scratch };
            run_pair(adapter, &client, &counts, op, host_first, target).await?;
        }
        // Native calls are not audited: every event here is the host's.
        audited_host += audit::count() - a;
        in_batch += 1;
        if in_batch == BATCH || i + 1 == warmup + samples {
            made += clean_batch(admin, in_batch).await?;
            in_batch = 0;
        }
    }
    let per_call = audited_host as f64 / (4 * samples) as f64;
    ensure!(
        (per_call - 1.0).abs() < 1e-9,
        "the host audited {per_call} requests per call, not 1"
    );
    check_trips("ConfigMap create", &cm, [1, 0, 0])?;
    check_trips("Pod create", &pod, [1, 0, 0])?;
    // A Pod is a kind whose rules compare: read, dry run, write.
    check_trips("Pod patch", &patch, [3, 1, 1])?;
    let stale = check_cached_trips(&cached_patch)?;

    let mut bench = Bench::new("kube-write", what("kube-write"));
    let cm_over = overhead(&cm);
    let pod_over = overhead(&pod);
    bench.rows.push(
        row("create ConfigMap (not policed)", &cm)
            .extra("overhead, p50 host − p50 native", over_text(cm_over))
            .extra("request body", format!("{} bytes", cm_json.len())),
    );
    let mut pod_row = row("create Pod (policed: baseline)", &pod)
        .extra("overhead, p50 host − p50 native", over_text(pod_over))
        .extra("request body", format!("{} bytes", pod_json.len()));
    if let (Some((c, _)), Some((p, _)), Some(n)) =
        (cm_over, pod_over, Summary::of(&pod.native.times))
    {
        pod_row = pod_row.extra(
            "body check on a create, overhead Pod − overhead ConfigMap",
            format!(
                "{:.0} µs = {:.1}% of the native Pod create",
                p - c,
                (p - c) / n.median * 100.0
            ),
        );
    }
    bench.rows.push(pod_row);
    // No "overhead beyond the extra trips" figure: the host's read and
    // dry run commit nothing to etcd, so they are cheaper than the native
    // write and a multiple of its time says nothing.
    let patch_row = row("merge patch of a Pod label", &patch).extra(
        "overhead, p50 host − p50 native",
        over_text(overhead(&patch)),
    );
    bench.rows.push(patch_row);
    bench.rows.push(
        row("merge patch of a Pod label, watch-fed cache", &cached_patch)
            .extra(
                "overhead, p50 host − p50 native",
                over_text(overhead(&cached_patch)),
            )
            .extra(
                "calls whose cached copy was older than the dry run's object (then read)",
                stale,
            ),
    );
    bench
        .rows
        .extend(kube_write_check::rows(quick, admin).await?);
    bench.note(format!(
        "{made} objects created and deleted in the {samples} timed iterations (a ConfigMap and \
         a Pod per side each; {warmup} warm-up iterations before), counted in the delete-collection answers; \
         requests audited per host call: {per_call:.2} (the host audits the adapter's request, \
         not its own read and dry run: those are counted at the shared client)"
    ));
    Ok(bench)
}

/// What one pair of calls does.
#[derive(Clone, Copy)]
enum Op<'a> {
    /// Create from this body in the namespace's collection of this resource.
    Create(&'a str, &'a str),
    /// Patch the label of a patch pod (iteration number; the host side's
    /// pod; the value's prefix on the native side, which patches its own).
    Patch(usize, &'a str, &'a str),
}

/// One host and one native call of `op`, in the order `host_first` says.
async fn run_pair(
    adapter: &Adapter,
    client: &Client,
    counts: &RoundTrips,
    op: Op<'_>,
    host_first: bool,
    pair: &mut Pair,
) -> Result<()> {
    let (host_req, native_req) = match op {
        Op::Create(resource, body) => {
            let path = format!("/api/v1/namespaces/{NAMESPACE}/{resource}");
            (
                (format!("body:post:json:{path}\n{body}"), "201:"),
                native_request(http::Method::POST, &path, "application/json", body)?,
            )
        }
        Op::Patch(i, host_pod, native_tag) => {
            let path = |pod: &str| format!("/api/v1/namespaces/{NAMESPACE}/pods/{pod}");
            let body = |side: &str| {
                json!({"metadata": {"labels": {"pando.test/rev": format!("{side}{i}")}}})
                    .to_string()
            };
            (
                (
                    format!("body:patch:merge:{}\n{}", path(host_pod), body("h")),
                    "200:",
                ),
                native_request(
                    http::Method::PATCH,
                    &path(PATCH_PODS[1]),
                    "application/merge-patch+json",
                    &body(native_tag),
                )?,
            )
        }
    };
    let plan = super::probe_plan(host_req.0);
    let expect = host_req.1;
    let mut native_req = Some(native_req);
    for host_turn in [host_first, !host_first] {
        if host_turn {
            let location = timed(&mut pair.host, counts, async {
                Ok(adapter.apply(&call_ctx(), &plan).await?.location)
            })
            .await?;
            ensure!(
                location.starts_with(expect),
                "the host's write answered {}",
                location.chars().take(200).collect::<String>()
            );
            answered_as(&location[expect.len()..], op, "h")?;
        } else {
            let req = native_req.take().context("one native call a pair")?;
            let text = timed(&mut pair.native, counts, async {
                Ok(client.request_text(req).await?)
            })
            .await?;
            let tag = match op {
                Op::Patch(_, _, tag) => tag,
                Op::Create(..) => "",
            };
            answered_as(&text, op, tag)?;
        }
    }
    Ok(())
}

/// Times `call`, and counts the CPU time and requests it took into `side`.
async fn timed<T>(
    side: &mut Side,
    counts: &RoundTrips,
    call: impl Future<Output = Result<T>>,
) -> Result<T> {
    let trips = counts.read();
    let c = cpu::process_ns();
    let t = Instant::now();
    let out = call.await?;
    side.times.push(us(t.elapsed()));
    side.cpu_ns += cpu::process_ns() - c;
    side.trips += counts.read() - trips;
    Ok(out)
}

/// Checks the API server's answer to a write is the object written: of the
/// right kind, and for a patch carrying the label value just set.
fn answered_as(body: &str, op: Op<'_>, side: &str) -> Result<()> {
    let v: Value = serde_json::from_str(body).context("the write's answer is not JSON")?;
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    match op {
        Op::Create(resource, _) => {
            let want = if resource == "pods" {
                "Pod"
            } else {
                "ConfigMap"
            };
            ensure!(kind == want, "a create of {resource} answered a {kind:?}");
            ensure!(
                v.pointer("/metadata/uid").is_some(),
                "the created {want} has no uid"
            );
        }
        Op::Patch(i, _, _) => {
            let label = v.pointer("/metadata/labels/pando.test~1rev");
            ensure!(
                kind == "Pod" && label == Some(&json!(format!("{side}{i}"))),
                "the patch answered {kind:?} with label {label:?}"
            );
        }
    }
    Ok(())
}

/// Checks each host call of a row made `[sent, reads, dry runs]`
/// requests, and each native call one plain write.
fn check_trips(name: &str, pair: &Pair, per_call: [u64; 3]) -> Result<()> {
    let count = |side: &Side| {
        let n = side.times.len() as u64;
        let t = side.trips;
        (n, [t.sent, t.reads, t.dry_runs])
    };
    let (n, host) = count(&pair.host);
    ensure!(
        host == per_call.map(|k| k * n),
        "{name}: in {n} calls the host sent [requests, reads, dry runs] {host:?}, not {per_call:?} a call"
    );
    let (n, native) = count(&pair.native);
    ensure!(
        native == [n, 0, 0],
        "{name}: in {n} calls the native twin sent [requests, reads, dry runs] {native:?}"
    );
    Ok(())
}

/// Checks the cached patch row's round trips: a dry run and the write
/// where the cache's copy was the object the dry run changed; where it
/// lagged (the watch had not yet delivered the last write), a read and a
/// second dry run besides — in at most half the calls. Says how many.
fn check_cached_trips(pair: &Pair) -> Result<String> {
    let n = pair.host.times.len() as u64;
    let t = pair.host.trips;
    let stale = t.reads;
    ensure!(
        t.sent == 2 * n + 2 * stale && t.dry_runs == n + stale,
        "cached Pod patch: in {n} calls the host sent [requests, reads, dry runs] {:?}, not 2 a \
         call and 2 more for each of the {stale} reads",
        [t.sent, t.reads, t.dry_runs]
    );
    // A copy lags only while the watch has not delivered the last patch,
    // which the other pairs between two cached patches give it time to.
    ensure!(
        stale * 2 <= n,
        "cached Pod patch: the cache's copy lagged in {stale} of {n} calls"
    );
    let native = pair.native.trips;
    ensure!(
        [native.sent, native.reads, native.dry_runs] == [n, 0, 0],
        "cached Pod patch: the native twin sent {native:?} in {n} calls"
    );
    Ok(format!("{stale} of {n}"))
}

/// A row of a pair, with its round trips and CPU time per call.
fn row(name: &str, pair: &Pair) -> Row {
    let (h, n) = (&pair.host, &pair.native);
    Row::new(name, Unit::Us, &h.times, &n.times)
        .extra(
            "API round trips per call",
            format!(
                "host {:.2} ({:.2} read, {:.2} dry run), native {:.2}",
                h.per_call(h.trips.sent),
                h.per_call(h.trips.reads),
                h.per_call(h.trips.dry_runs),
                n.per_call(n.trips.sent)
            ),
        )
        .extra(
            "CPU time of this process per call, mean",
            format!(
                "host {:.0} µs, native {:.0} µs",
                h.per_call(h.cpu_ns) / 1e3,
                n.per_call(n.cpu_ns) / 1e3
            ),
        )
}

/// Host p50 − native p50, in µs and as a fraction of native p50 in %.
fn overhead(pair: &Pair) -> Option<(f64, f64)> {
    let h = Summary::of(&pair.host.times)?;
    let n = Summary::of(&pair.native.times)?;
    Some((
        h.median - n.median,
        (h.median - n.median) / n.median * 100.0,
    ))
}

fn over_text(o: Option<(f64, f64)>) -> String {
    o.map(|(us, pct)| format!("{us:.0} µs = {pct:.1}%"))
        .unwrap_or_else(|| "-".into())
}

/// A raw request as the host's import would send it.
fn native_request(
    method: http::Method,
    path: &str,
    content_type: &str,
    body: &str,
) -> Result<http::Request<Vec<u8>>> {
    Ok(http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::ACCEPT, "application/json")
        .header(http::header::CONTENT_TYPE, content_type)
        .body(body.as_bytes().to_vec())?)
}

/// A pod that meets baseline and the host's pod rules (no token, no
/// `nodeName`), and that nothing will schedule or run: `name` if given,
/// else `generateName`, labelled `LABEL=label`.
pub(super) fn pod_body(name: Option<&str>, label: &str) -> Value {
    let mut meta = json!({"labels": {LABEL: label}});
    match name {
        Some(n) => meta["name"] = json!(n),
        None => meta["generateName"] = json!("bench-write-"),
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "automountServiceAccountToken": false,
            "restartPolicy": "Never",
            // No node has this label and no scheduler has this name: the
            // pod stays Pending and unseen, costing the cluster nothing
            // after its write.
            "nodeSelector": {"pando.test/bench": "none"},
            "schedulerName": "pando-bench-none",
            "containers": [{"name": "c", "image": "registry.invalid/pando/bench:1"}],
        },
    })
}

/// A ConfigMap whose JSON is exactly `len` bytes (its one value padded).
fn configmap_body(len: usize) -> Result<String> {
    let with = |pad: usize| {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"generateName": "bench-write-", "labels": {LABEL: CREATED}},
            "data": {"pad": "x".repeat(pad)},
        })
        .to_string()
    };
    let bare = with(0).len();
    if bare > len {
        bail!("a bare ConfigMap is {bare} bytes, over the pod's {len}");
    }
    Ok(with(len - bare))
}

/// The namespace, empty of earlier runs' objects, with its `default`
/// ServiceAccount (pod admission needs it) and the two patch pods.
async fn prepare_namespace(admin: &Client) -> Result<()> {
    // `pando` writes here only through the adapter's namespace role.
    setup::bench_namespace(admin, NAMESPACE, true).await?;
    // A run that failed midway may have left created objects.
    clean_batch(admin, 0).await.ok();
    let pods: Api<Pod> = Api::namespaced(admin.clone(), NAMESPACE);
    for name in PATCH_PODS {
        if pods.get_opt(name).await?.is_none() {
            let pod: Pod = serde_json::from_value(pod_body(Some(name), "patch"))?;
            pods.create(&PostParams::default(), &pod).await?;
        }
    }
    if pods.get_opt(CACHED_PATCH_POD).await?.is_none() {
        let mut pod = pod_body(Some(CACHED_PATCH_POD), "patch");
        pod["metadata"]["labels"]["app.kubernetes.io/managed-by"] = json!("pando");
        let pod: Pod = serde_json::from_value(pod)?;
        pods.create(&PostParams::default(), &pod).await?;
    }
    Ok(())
}

/// Deletes the objects the create rows made, checking there were `iterations`
/// × 2 (host and native) of each kind, all pods unscheduled; how many went.
async fn clean_batch(admin: &Client, iterations: usize) -> Result<usize> {
    let selector = ListParams::default().labels(&format!("{LABEL}={CREATED}"));
    let dp = DeleteParams::default();
    let pods = Api::<Pod>::namespaced(admin.clone(), NAMESPACE)
        .delete_collection(&dp, &selector)
        .await?
        .left()
        .map(|l| l.items)
        .unwrap_or_default();
    let maps = Api::<ConfigMap>::namespaced(admin.clone(), NAMESPACE)
        .delete_collection(&dp, &selector)
        .await?
        .left()
        .map(|l| l.items)
        .unwrap_or_default();
    let want = 2 * iterations;
    if iterations > 0 {
        ensure!(
            pods.len() == want && maps.len() == want,
            "{want} pods and ConfigMaps were to be created; {} and {} were",
            pods.len(),
            maps.len()
        );
        let placed = pods
            .iter()
            .filter(|p| p.spec.as_ref().is_some_and(|s| s.node_name.is_some()))
            .count();
        ensure!(
            placed == 0,
            "{placed} of the bench's pods were placed on a node"
        );
    }
    Ok(pods.len() + maps.len())
}
