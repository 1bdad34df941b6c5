//! Issue 14 against the test cluster: Kubernetes watches the guest opens
//! count against `limits.max_streams`. Past it each open is a typed
//! `denied` naming the limit, before anything is sent; the host's memory
//! and descriptors stay bounded, all is given back when the call ends, and
//! a neighbour adapter opens its own. Refused requests and the PV claim
//! check's read draw on the rate budget as requests do. Request bodies draw
//! on the write budget in bytes: paced, then refused naming it.

use std::time::Duration;

use pando_host::types::Error as AdapterError;
use pando_host::{Adapter, CallContext, CallError, Grants, Host, Limits, LoadOptions};
use pando_tests::cluster::{self, Identity};
use pando_tests::faults::{self, FaultIdentity};
use pando_tests::memory::{mib, open_fds, peak, reset_peak, rss};
use pando_tests::{components, plans, probe};

const MIB: u64 = 1 << 20;

/// The probe loaded with `options` (its component and compile cache set).
async fn load_probe(options: LoadOptions) -> (Adapter, Host) {
    let host = Host::builder()
        .cache_dir(probe::shared_cache())
        .build()
        .expect("host builds");
    let adapter = host
        .load_file(&components::kube_probe(), options)
        .await
        .expect("the probe loads");
    (adapter, host)
}

async fn pando_client() -> kube::Client {
    cluster::client(Identity::Pando)
        .await
        .expect("a client for the pando identity")
}

async fn probe_with(limits: Limits) -> (Adapter, Host) {
    let grants = Grants::from_text("test grants", probe::GRANTS).expect("grants parse");
    load_probe(LoadOptions {
        grants,
        limits,
        kubernetes: Some(pando_client().await),
        ..LoadOptions::default()
    })
    .await
}

/// `ok=<n> failed=<n> error=<first>`, as the probe reports held watches.
fn holdings(location: &str) -> (u64, u64, String) {
    let rest = location
        .strip_prefix("ok=")
        .unwrap_or_else(|| panic!("unexpected location {location:?}"));
    let (ok, rest) = rest.split_once(" failed=").expect("failed=");
    let (failed, error) = rest.split_once(" error=").expect("error=");
    (
        ok.parse().expect("ok count"),
        failed.parse().expect("failed count"),
        error.to_string(),
    )
}

#[tokio::test]
async fn watches_past_max_streams_are_denied_naming_the_limit() {
    let _measuring = pando_tests::memory::MEASURING.lock().await;
    let (a, _h1) = probe_with(Limits {
        max_streams: 16,
        ..Limits::default()
    })
    .await;
    let (neighbour, _h2) = probe_with(Limits::default()).await;
    let ns = probe::app_namespace("bounds").await;
    // Warm up: the instance, the client's connections.
    let got = probe::op(&a, &format!("watches:2:{}", ns.name))
        .await
        .expect("runs");
    assert_eq!(holdings(&got).0, 2, "{got}");

    let fds = open_fds();
    let before = rss();
    assert!(reset_peak());
    let got = probe::op(&a, &format!("watches:200:{}", ns.name))
        .await
        .expect("runs");
    let grown = peak().saturating_sub(before);
    let (ok, failed, error) = holdings(&got);
    assert_eq!((ok, failed), (16, 184), "{got}");
    assert!(
        error.contains("Denied") && error.contains("limits.max_streams"),
        "{error}"
    );
    eprintln!(
        "200 watches, cap 16: peak grew {:.1} MiB, descriptors {fds} -> {}",
        mib(grown),
        open_fds()
    );
    assert!(grown < 64 * MIB, "peak grew {:.0} MiB", mib(grown));
    // HTTP/2 may carry the watches on one connection, or not: at most one
    // descriptor each for the 16 allowed, none for the refused.
    assert!(open_fds() <= fds + 16 + 4, "{fds} -> {}", open_fds());
    let held = a.held_streams();
    assert_eq!((held.bytes, held.streams), (0, 0), "{held:?}");
    assert_eq!((held.refused_streams, held.refused_bytes), (184, 0));

    let got = probe::op(&neighbour, &format!("watches:20:{}", ns.name))
        .await
        .expect("runs");
    assert_eq!(
        holdings(&got),
        (20, 0, String::new()),
        "the neighbour opens its own"
    );
    ns.delete().await.expect("cleanup");
}

/// A watch reserves its event buffer (1 MiB) of `limits.stream_buffer_bytes`
/// when it opens: past the budget the open is denied naming it, so what
/// watches buffer for a guest that does not read is bounded.
#[tokio::test]
async fn watches_reserve_their_buffers_of_the_stream_budget() {
    let (a, _h) = probe_with(Limits {
        stream_buffer_bytes: 8 * MIB,
        ..Limits::default()
    })
    .await;
    let ns = probe::app_namespace("watchbuf").await;
    let got = probe::op(&a, &format!("watches:20:{}", ns.name))
        .await
        .expect("runs");
    let (ok, failed, error) = holdings(&got);
    assert_eq!((ok, failed), (8, 12), "{got}");
    assert!(
        error.contains("Denied") && error.contains("limits.stream_buffer_bytes"),
        "{error}"
    );
    let held = a.held_streams();
    assert_eq!((held.bytes, held.streams), (0, 0), "given back: {held:?}");
    assert_eq!(held.refused_bytes, 12);
    let report = a.grant_report().expect("a report");
    assert!(
        report
            .limit_refusals
            .iter()
            .any(|r| r.limit == "limits.stream_buffer_bytes" && r.count == 12),
        "counted in the usage report: {:?}",
        report.limit_refusals
    );
    ns.delete().await.expect("cleanup");
}

/// An exec session reserves the buffers of each of its pipes of
/// `limits.stream_buffer_bytes` when it opens, as a watch reserves its
/// event buffer: past the budget the open is denied naming it, and all is
/// given back when the call ends.
#[tokio::test]
async fn exec_sessions_reserve_their_buffers_of_the_stream_budget() {
    // The probe's sessions run `cat` with stdin: stdout and stderr each
    // kube-rs's 64 KiB and wasmtime-wasi's 192 KiB read ahead, stdin
    // kube-rs's 64 KiB and the write budget's 64.
    const EXEC_HOLDS: u64 = 2 * (256 << 10) + (128 << 10);
    sessions_reserve_their_buffers("exec", EXEC_HOLDS).await;
}

/// A followed log reserves wasmtime-wasi's read-ahead (three reads of
/// 64 KiB) of `limits.stream_buffer_bytes`: a guest that opens logs and
/// never reads them is bounded by the budget, not only by
/// `limits.max_streams`.
#[tokio::test]
async fn logs_reserve_their_read_ahead_of_the_stream_budget() {
    const LOG_HOLDS: u64 = 3 * (64 << 10);
    sessions_reserve_their_buffers("logs", LOG_HOLDS).await;
}

/// With room for four of the probe's `kind` sessions of `holds` bytes and
/// half of a fifth, ten opens: four held, six denied naming the budget, all
/// given back at the call's end, and four open again.
async fn sessions_reserve_their_buffers(kind: &str, holds: u64) {
    let (a, _h) = probe_with(Limits {
        stream_buffer_bytes: 4 * holds + holds / 2,
        ..Limits::default()
    })
    .await;
    let ns = probe::app_namespace(&format!("{kind}buf")).await;
    probe::running_pod(&ns.name, "talk", "main").await;
    four_of_ten_sessions_held(&a, kind, &ns.name, "limits.stream_buffer_bytes").await;
    assert_eq!(a.held_streams().refused_bytes, 6);
    let got = probe::op(&a, &format!("sessions:{kind}:4:{}/talk", ns.name))
        .await
        .expect("runs");
    assert_eq!(
        holdings(&got),
        (4, 0, String::new()),
        "{kind}: given back, the budget opens four again: {got}"
    );
    ns.delete().await.expect("cleanup");
}

/// Opens ten of the probe's `kind` sessions of `ns`/talk in one call of
/// `a`: four are held, six denied naming `limit`, and all is given back
/// when the call ends.
async fn four_of_ten_sessions_held(a: &Adapter, kind: &str, ns: &str, limit: &str) {
    let got = probe::op(a, &format!("sessions:{kind}:10:{ns}/talk"))
        .await
        .expect("runs");
    let (ok, failed, error) = holdings(&got);
    assert_eq!((ok, failed), (4, 6), "{kind}: {got}");
    assert!(
        error.contains("Denied") && error.contains(limit),
        "{kind}: {error}"
    );
    let held = a.held_streams();
    assert_eq!(
        (held.bytes, held.streams),
        (0, 0),
        "{kind}: given back: {held:?}"
    );
}

/// Grants with a rate budget of `burst` requests and next to no refill.
fn grants_with_burst(burst: u32) -> Grants {
    let text = probe::GRANTS.replace(
        "rate: {qps: 50, burst: 50}",
        &format!("rate: {{qps: 0.001, burst: {burst}}}"),
    );
    Grants::from_text("test grants", &text).expect("grants parse")
}

async fn probe_granted(grants: Grants) -> (Adapter, Host) {
    load_probe(LoadOptions {
        grants,
        kubernetes: Some(pando_client().await),
        ..LoadOptions::default()
    })
    .await
}

/// An op with a short deadline: with the rate budget spent it cannot be
/// sent, and the call ends at its deadline.
async fn short_op(a: &Adapter, id: &str) -> Result<String, CallError> {
    a.apply(
        &CallContext::default().with_timeout(Duration::from_secs(3)),
        &plans::plan(id, &[]),
    )
    .await
    .map(|h| h.location)
}

#[tokio::test]
async fn denied_requests_draw_on_the_rate_budget() {
    let (a, _h) = probe_granted(grants_with_burst(3)).await;
    let ns = probe::app_namespace("ratedeny").await;
    for _ in 0..3 {
        match short_op(&a, "secrets:kube-system").await {
            Err(CallError::Adapter(AdapterError::Denied(_))) => {}
            other => panic!("expected a denial, got {other:?}"),
        }
    }
    // Three denials spent the burst of three: an allowed request waits.
    let err = short_op(&a, &format!("read-ns:{}", ns.name))
        .await
        .expect_err("the budget is spent");
    assert!(matches!(err, CallError::DeadlineExceeded { .. }), "{err:?}");
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn the_pv_claim_check_draws_on_the_rate_budget() {
    let (a, _h) = probe_granted(grants_with_burst(2)).await;
    let name = cluster::unique_name("pando-no-such-pv");
    // The claim check's read and the request itself: the burst of two.
    match short_op(&a, &format!("pv:{name}")).await {
        Err(CallError::Adapter(_)) => {}
        other => panic!("expected the API server's 404, got {other:?}"),
    }
    let err = short_op(&a, &format!("pv:{name}"))
        .await
        .expect_err("the budget is spent");
    assert!(matches!(err, CallError::DeadlineExceeded { .. }), "{err:?}");
}

/// Grants with a write budget of `per_second` bytes a second and `burst`
/// at once, and a request rate that never binds.
fn grants_with_write_budget(per_second: u64, burst: u64) -> Grants {
    let text = probe::GRANTS.replace(
        "rate: {qps: 50, burst: 50}",
        &format!(
            "rate: {{qps: 50, burst: 50, write_bytes_per_second: {per_second}, \
             write_burst_bytes: {burst}}}"
        ),
    );
    Grants::from_text("test grants", &text).expect("grants parse")
}

#[tokio::test]
async fn a_write_flood_is_paced_by_the_byte_budget_and_refused_typed_past_the_deadline() {
    use k8s_openapi::api::core::v1::ConfigMap;
    const PER_SECOND: u64 = 64 << 10;
    const BURST: u64 = 128 << 10;
    const BODY: u64 = 32 << 10;
    const WRITES: u64 = 40;
    let (a, _h) = probe_granted(grants_with_write_budget(PER_SECOND, BURST)).await;
    let ns = probe::app_namespace("writeflood").await;
    let deadline = Duration::from_secs(3);
    let got = a
        .apply(
            &CallContext::default().with_timeout(deadline),
            &plans::plan(&format!("write-flood:{WRITES}:{BODY}:{}", ns.name), &[]),
        )
        .await
        .expect("the call returns within its deadline: nothing waits past it")
        .location;
    let (ok, failed, error) = holdings(&got);
    // The burst passes at once; the rest of the call's 3 s refills at most
    // 3 s of the rate. Each body is a little over BODY bytes.
    let most = (BURST + PER_SECOND * deadline.as_secs()) / BODY;
    assert!(
        (BURST / (BODY + 1024)..=most).contains(&ok),
        "{ok} writes passed: the budget allows between {} and {most} (got {got})",
        BURST / (BODY + 1024)
    );
    assert_eq!(ok + failed, WRITES);
    assert!(
        error.contains("Denied") && error.contains("kubernetes.rate.write_bytes_per_second"),
        "the refusal names the budget: {error}"
    );
    // What the API server holds is what passed, no more.
    let admin = cluster::client(Identity::Admin).await.expect("admin");
    let held = kube::Api::<ConfigMap>::namespaced(admin, &ns.name)
        .list(&kube::api::ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter(|c| {
            c.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("flood-"))
        })
        .count() as u64;
    assert_eq!(held, ok, "the refused writes were never sent");
    let report = a.grant_report().expect("a report");
    let counted = report
        .limit_refusals
        .iter()
        .find(|r| r.limit == "kubernetes.rate.write_bytes_per_second")
        .map(|r| r.count);
    assert_eq!(counted, Some(failed), "refusals are counted: {report:?}");
    // A neighbour has its own budget: its burst passes at once.
    let (b, _h2) = probe_granted(grants_with_write_budget(PER_SECOND, BURST)).await;
    let got = b
        .apply(
            &CallContext::default().with_timeout(Duration::from_secs(10)),
            &plans::plan(&format!("write-flood:2:{BODY}:{}", ns.name), &[]),
        )
        .await
        .expect("the neighbour writes")
        .location;
    assert_eq!(
        holdings(&got),
        (2, 0, String::new()),
        "the neighbour is unharmed"
    );
    ns.delete().await.expect("cleanup");
}

/// GETs of PersistentVolumes the fault API server has answered since it
/// started (its `apiserver_request_total`).
async fn pv_gets_answered() -> u64 {
    let admin = faults::client(FaultIdentity::Admin, true)
        .await
        .expect("admin client of the fault API server");
    let request = kube::core::Request::new("")
        .get("metrics", &Default::default())
        .expect("a request");
    let text = admin.request_text(request).await.expect("its metrics");
    text.lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
        .filter(|l| l.contains(r#"resource="persistentvolumes""#) && l.contains(r#"verb="GET""#))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum()
}

/// 200 PV reads under `qps: 1`: the API server itself (the fault API
/// server, which only this test talks to while it holds the fault lock)
/// sees at most what the budget allows in the call's time, the claim
/// check's reads included.
#[tokio::test]
async fn two_hundred_pv_reads_at_qps_1_reach_the_api_server_at_its_rate() {
    let _fault = faults::exclusive().await;
    let text = probe::GRANTS.replace("rate: {qps: 50, burst: 50}", "rate: {qps: 1, burst: 1}");
    let grants = Grants::from_text("test grants", &text).expect("grants parse");
    let client = faults::client(FaultIdentity::Pando, false)
        .await
        .expect("a client of the fault API server");
    let (a, _h) = load_probe(LoadOptions {
        grants,
        kubernetes: Some(client),
        ..LoadOptions::default()
    })
    .await;
    let before = pv_gets_answered().await;
    let deadline = Duration::from_secs(6);
    let name = cluster::unique_name("pando-no-such-pv");
    let got = a
        .apply(
            &CallContext::default().with_timeout(deadline),
            &plans::plan(&format!("pv-flood:200:{name}"), &[]),
        )
        .await;
    assert!(
        matches!(got, Err(CallError::DeadlineExceeded { .. })),
        "200 reads at 1 a second cannot finish in 6 s: {got:?}"
    );
    // Let the metrics catch up with the last request.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let seen = pv_gets_answered().await - before;
    // The burst of 1 and 1 a second for 6 s: 7 tokens, each a claim check's
    // read or the request it checks (a missing PV is let through to 404).
    assert!(
        (2..=8).contains(&seen),
        "the API server answered {seen} PV GETs in 6 s at qps 1"
    );
    eprintln!("200 PV reads at qps 1 for 6 s: the API server saw {seen}");
}

/// Logs and exec sessions the guest opens count against
/// `limits.max_streams` as watches do: past it, `denied` naming the limit;
/// all given back when the call ends; a neighbour opens its own.
#[tokio::test]
async fn logs_and_exec_sessions_past_max_streams_are_denied_naming_the_limit() {
    let (a, _h1) = probe_with(Limits {
        max_streams: 4,
        ..Limits::default()
    })
    .await;
    let (neighbour, _h2) = probe_with(Limits::default()).await;
    let ns = probe::app_namespace("sessions").await;
    probe::running_pod(&ns.name, "talk", "main").await;
    for kind in ["logs", "exec"] {
        four_of_ten_sessions_held(&a, kind, &ns.name, "limits.max_streams").await;
        let got = probe::op(&neighbour, &format!("sessions:{kind}:6:{}/talk", ns.name))
            .await
            .expect("runs");
        assert_eq!(
            holdings(&got),
            (6, 0, String::new()),
            "{kind}: the neighbour opens its own"
        );
    }
    assert_eq!(a.held_streams().refused_streams, 12);
    ns.delete().await.expect("cleanup");
}
