//! Issue 14: what an adapter can make the host hold on its behalf is
//! bounded, and each bound, when hit, is a typed error naming the limit and
//! how to raise it. Host-only: the Kubernetes client points at a closed
//! loopback port, so nothing here needs the test cluster (a request that
//! got past the host's checks fails as `transport`).
//!
//! The tests measure the process's resident memory, so they run one at a
//! time whatever the harness's thread count.

use pando_host::{Adapter, Grants, Host, LoadOptions};
use pando_tests::memory::{mib, peak, reset_peak, rss};
use pando_tests::{components, probe};

/// One test at a time: they measure the process's memory.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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
    let _serial = SERIAL.lock().await;
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
