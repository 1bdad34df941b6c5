//! Issue 14: what an adapter can make the host hold on its behalf is
//! bounded, and each bound, when hit, is a typed error naming the limit and
//! how to raise it. Host-only: the Kubernetes client points at a closed
//! loopback port, so nothing here needs the test cluster (a request that
//! got past the host's checks fails as `transport`).
//!
//! The tests measure the process's resident memory, so they run one at a
//! time whatever the harness's thread count.

use std::time::Duration;

use pando_host::{Adapter, CallContext, CallError, Grants, Host, Limits, LoadOptions};
use pando_tests::memory::{mib, open_fds, peak, reset_peak, rss};
use pando_tests::plans::{bundle, plan};
use pando_tests::test_adapter::{self, calls};
use pando_tests::{components, probe};

const MIB: u64 = 1 << 20;

/// The most the process's memory may grow during a test beyond what the
/// test names.
const SLACK: u64 = 64 * MIB;

/// The probe with the probe tests' grants (a 64 KiB body cap) and a client
/// that reaches nothing.
async fn probe_nowhere() -> (Adapter, Host) {
    let host = Host::builder()
        .cache_dir(probe::shared_cache())
        .build()
        .expect("host builds");
    let url = "http://127.0.0.1:9".parse().expect("a loopback URL");
    let client = kube::Client::try_from(kube::Config::new(url)).expect("client");
    let grants = Grants::from_text("test grants", probe::GRANTS).expect("grants parse");
    let adapter = host
        .load_file(
            &components::kube_probe(),
            LoadOptions {
                grants,
                kubernetes: Some(client),
                ..LoadOptions::default()
            },
        )
        .await
        .expect("the probe loads");
    (adapter, host)
}

#[tokio::test]
async fn a_huge_body_is_refused_before_the_host_parses_it() {
    let _serial = pando_tests::memory::MEASURING.lock().await;
    let (a, _h) = probe_nowhere().await;
    // Warm up: the instance, its first memory growth, the runtime.
    let small = probe::op(&a, "huge-body:1000").await.expect("the op runs");
    assert!(
        small.starts_with("error:ApiError::Transport"),
        "a small body passes the cap and is sent: {small}"
    );

    let body = 100 * MIB;
    let before = rss();
    assert!(reset_peak(), "the kernel lets us reset the peak");
    let got = probe::op(&a, &format!("huge-body:{body}"))
        .await
        .expect("the op runs");
    let grown = peak().saturating_sub(before);
    let msg = got
        .strip_prefix("too-large:")
        .unwrap_or_else(|| panic!("expected too-large, got {got}"));
    assert!(msg.contains("cap of 65536 bytes"), "names the cap: {msg}");
    assert!(
        msg.contains("kubernetes.max_body_bytes"),
        "says how to raise it: {msg}"
    );
    // One copy is the guest's own, within its memory limit; one is
    // wasmtime's lift of the argument, made before any host code runs.
    // Parsing the body before the cap (a tree, or even one string of it)
    // would add at least a third.
    let bound = 2 * body + SLACK;
    eprintln!(
        "huge body: {:.0} MiB sent, peak grew {:.0} MiB (bound {:.0} MiB)",
        mib(body),
        mib(grown),
        mib(bound)
    );
    assert!(
        grown < bound,
        "a {:.0} MiB body grew the peak by {:.0} MiB, over {:.0} MiB",
        mib(body),
        mib(grown),
        mib(bound)
    );
    // The same instance serves on.
    let small = probe::op(&a, "huge-body:1000").await.expect("the op runs");
    assert!(small.starts_with("error:ApiError::Transport"), "{small}");
}

fn ctx() -> CallContext {
    CallContext::default().with_timeout(Duration::from_secs(30))
}

/// The instance's call count, as the test adapter's `observe` reports it.
async fn count(a: &Adapter) -> u64 {
    calls(&a.observe(&ctx(), &bundle("x")).await.expect("observe"))
}

/// wasmtime's hostcall fuel, set from `limits.hostcall_bytes`: a result
/// larger than it traps naming the limit, well within the guest's memory.
#[tokio::test]
async fn a_value_over_hostcall_bytes_traps_naming_the_limit() {
    let _serial = pando_tests::memory::MEASURING.lock().await;
    let (a, _c) = test_adapter::load(Limits {
        hostcall_bytes: 8 * MIB,
        quarantine_after: 1000,
        ..Limits::default()
    })
    .await;
    let fits = a
        .observe(&ctx(), &bundle(&format!("huge-{}", 4 * MIB)))
        .await
        .expect("4 MiB fits under 8 MiB");
    assert_eq!(fits.workloads[0].reason.len() as u64, 4 * MIB);
    let before = rss();
    assert!(reset_peak());
    let err = a
        .observe(&ctx(), &bundle(&format!("huge-{}", 32 * MIB)))
        .await
        .expect_err("32 MiB is over the 8 MiB the host lifts");
    let grown = peak().saturating_sub(before);
    match &err {
        CallError::Trap { message, .. } => {
            assert!(message.contains("limits.hostcall_bytes"), "{message}");
            assert!(message.contains(&(8 * MIB).to_string()), "{message}");
        }
        other => panic!("expected a trap naming the limit, got {other:?}"),
    }
    // The guest built its 32 MiB; the host did not copy it.
    eprintln!("over hostcall_bytes: peak grew {:.0} MiB", mib(grown));
    assert!(grown < 32 * MIB + SLACK, "peak grew {:.0} MiB", mib(grown));
    assert_eq!(count(&a).await, 1, "a fresh instance serves the next call");
}

#[tokio::test]
async fn limits_below_the_smallest_accepted_are_refused_at_load() {
    let host = Host::builder()
        .cache_dir(probe::shared_cache())
        .build()
        .expect("host");
    for (limits, field) in [
        (
            Limits {
                hostcall_bytes: 0,
                ..Limits::default()
            },
            "limits.hostcall_bytes",
        ),
        (
            Limits {
                max_handles: 1,
                ..Limits::default()
            },
            "limits.max_handles",
        ),
    ] {
        let err = test_adapter::load_into(&host, limits)
            .await
            .expect_err("refused");
        assert!(err.to_string().contains(field), "{err}");
    }
}

/// `ok=<n> failed=<n> error=<first>`, as the test adapter reports holdings.
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

async fn apply(a: &Adapter, id: &str) -> Result<String, CallError> {
    a.apply(&ctx(), &plan(id, &[])).await.map(|h| h.location)
}

/// 128 streams of 16 MiB from `from-bytes` (2 GiB): the first 256 MiB are
/// held, the rest fail on first read naming the limit; the host's memory
/// stays within the budget, everything is given back when the streams are
/// dropped, and a neighbour adapter goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_bytes_past_the_budget_fails_typed_and_memory_stays_bounded() {
    let _serial = pando_tests::memory::MEASURING.lock().await;
    let (a, _c1) = test_adapter::load(Limits::default()).await;
    let (neighbour, _c2) = test_adapter::load(Limits::default()).await;
    assert_eq!(count(&a).await, 1);
    assert_eq!(count(&neighbour).await, 1);
    let budget = Limits::default().stream_buffer_bytes;
    let chunk = 16 * MIB;
    let fds = open_fds();
    let before = rss();
    assert!(reset_peak());
    // 2 GiB cross into the host, 16 MiB at a time: wasmtime's lift is slow
    // in an unoptimized build, so this call gets time.
    let started = std::time::Instant::now();
    let got = a
        .apply(
            &CallContext::default().with_timeout(Duration::from_secs(600)),
            &plan(&format!("from-bytes-128-{chunk}"), &[]),
        )
        .await
        .map(|h| h.location)
        .expect("the call returns");
    eprintln!("from-bytes 128 x 16 MiB: {:?}", started.elapsed());
    let grown = peak().saturating_sub(before);
    let (ok, failed, error) = holdings(&got);
    assert_eq!(ok, budget / chunk, "{got}");
    assert_eq!(ok + failed, 128);
    assert!(error.contains("limits.stream_buffer_bytes"), "{error}");
    // The budget, the guest's chunk and wasmtime's copy of the one in flight.
    let bound = budget + 2 * chunk + SLACK;
    eprintln!(
        "from-bytes 128 x 16 MiB: peak grew {:.0} MiB (bound {:.0} MiB), {ok} held, {failed} refused",
        mib(grown),
        mib(bound)
    );
    assert!(grown < bound, "peak grew {:.0} MiB", mib(grown));
    assert!(open_fds() <= fds + 4, "descriptors {fds} -> {}", open_fds());
    let held = a.held_streams();
    assert_eq!(
        (held.bytes, held.streams),
        (0, 0),
        "all given back: {held:?}"
    );
    assert_eq!((held.refused_streams, held.refused_bytes), (0, failed));
    assert_eq!(count(&a).await, 3, "nothing held: the instance is reused");
    assert_eq!(count(&neighbour).await, 2, "the neighbour goes on");
    assert_eq!(neighbour.held_streams().refused_bytes, 0);
}

/// Streams the guest keeps past its call are not carried into the next
/// one: the instance is discarded, and what it held is given back.
#[tokio::test]
async fn streams_kept_past_the_call_discard_their_instance() {
    let _serial = pando_tests::memory::MEASURING.lock().await;
    let (a, _c) = test_adapter::load(Limits::default()).await;
    assert_eq!(count(&a).await, 1);
    let got = apply(&a, "keep-from-bytes-4-1024").await.expect("returns");
    assert_eq!(holdings(&got).0, 4, "{got}");
    let held = a.held_streams();
    assert_eq!((held.bytes, held.streams), (0, 0), "{held:?}");
    assert_eq!(count(&a).await, 1, "a fresh instance serves the next call");
}

/// Pipes past `limits.max_streams` (each pipe is two streams) fail at once
/// naming the limit; no descriptor is spent; all is given back.
#[tokio::test]
async fn pipes_past_max_streams_fail_typed() {
    let _serial = pando_tests::memory::MEASURING.lock().await;
    let limits = Limits {
        max_streams: 64,
        ..Limits::default()
    };
    let (a, _c) = test_adapter::load(limits).await;
    let fds = open_fds();
    let got = apply(&a, "pipes-100").await.expect("returns");
    let (ok, failed, error) = holdings(&got);
    assert_eq!((ok, failed), (32, 68), "{got}");
    assert!(error.contains("limits.max_streams"), "{error}");
    assert!(open_fds() <= fds + 4);
    let held = a.held_streams();
    assert_eq!((held.bytes, held.streams), (0, 0), "{held:?}");
    assert_eq!(held.refused_streams, failed, "each refusal counted");
    assert_eq!(count(&a).await, 2, "nothing held: the instance is reused");
}

/// wasmtime's handle cap, set from `limits.max_handles`: more handles live
/// at once trap naming the limit, and the next call gets a fresh instance.
#[tokio::test]
async fn handles_past_max_handles_trap_naming_the_limit() {
    let _serial = pando_tests::memory::MEASURING.lock().await;
    let (a, _c) = test_adapter::load(Limits {
        max_handles: 64,
        quarantine_after: 1000,
        ..Limits::default()
    })
    .await;
    let err = apply(&a, "from-bytes-200-1").await.expect_err("traps");
    match &err {
        CallError::Trap { message, .. } => {
            assert!(message.contains("limits.max_handles"), "{message}")
        }
        other => panic!("expected a trap naming the limit, got {other:?}"),
    }
    let held = a.held_streams();
    assert_eq!((held.bytes, held.streams), (0, 0), "{held:?}");
    assert_eq!(count(&a).await, 1);
}
