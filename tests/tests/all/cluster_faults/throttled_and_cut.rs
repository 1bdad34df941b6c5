//! Throttling (429, from API Priority and Fairness) survived, and a log
//! stream and a volume snapshot cut mid-way reported as errors, not as
//! short output.

use super::*;

// ---------------------------------------------------------------------------------------------
// Throttling
// ---------------------------------------------------------------------------------------------

/// Observes `app` while a request of the throttled identity holds its
/// level's seat (for `hold`, or throughout), with a deadline of `limit`;
/// the outcome, how long it took, and how many requests got 429 meanwhile.
async fn observe_throttled(
    a: &Adapter,
    app: &str,
    ballast: &str,
    hold: Option<Duration>,
    limit: Duration,
) -> (
    Result<pando_host::types::ObservedBundle, CallError>,
    Duration,
    u64,
) {
    let before = faults::throttled_rejections().await;
    let holder = faults::hold_seat(ballast).await;
    let observe = {
        let (a, app) = (a.clone(), app.to_owned());
        tokio::spawn(async move {
            let started = Instant::now();
            let r = a
                .observe(&CallContext::default().with_timeout(limit), &bundle(&app))
                .await;
            (r, started.elapsed())
        })
    };
    if let Some(hold) = hold {
        eventually("the observe to be throttled", ka::WAIT, || async {
            (faults::throttled_rejections().await > before).then_some(())
        })
        .await;
        tokio::time::sleep(hold).await;
        drop(holder);
        let (r, took) = observe.await.expect("join");
        (r, took, faults::throttled_rejections().await - before)
    } else {
        let (r, took) = observe.await.expect("join");
        drop(holder);
        (r, took, faults::throttled_rejections().await - before)
    }
}

#[tokio::test]
async fn throttling_429_is_survived() {
    let _fault = faults::exclusive().await;
    let c = admin().await;
    let ballast = cluster::create_test_namespace(&c, "fault-ballast")
        .await
        .expect("a namespace");
    // The seat holder lists its ConfigMaps as pando-throttled, which reads inside a namespace
    // only where the namespace role is bound to it (deploy/kubernetes/rbac.yaml).
    let binding: k8s_openapi::api::rbac::v1::RoleBinding =
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": "pando-throttled" },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                         "name": cluster::NAMESPACE_ROLE },
            "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                           "name": "pando-throttled" }],
        }))
        .expect("a binding");
    Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(c.clone(), &ballast.name)
        .create(&PostParams::default(), &binding)
        .await
        .expect("pando-throttled's binding in the ballast namespace");
    let app = id("fault-429");
    let mut left = Leftovers::default();
    left.namespace(&ballast.name);
    left.namespace(format!("pando-{app}"));
    faults::fill_with_configmaps(&ballast.name).await;
    let hold = Duration::from_secs(3);
    let limit = Duration::from_secs(10);

    // The client as kube-rs builds it by default, retrying 429 itself.
    let (a, _h) = fault_adapter(FaultIdentity::Throttled).await;
    // One request at a time passes: an apply, its requests one after the
    // other, is not throttled.
    a.apply(&ctx(), &plan(&app, &["web"]))
        .await
        .expect("an apply, unthrottled");
    // Throttled for a while: the call waits, then succeeds.
    let (r, took, rejected) = observe_throttled(&a, &app, &ballast.name, Some(hold), limit).await;
    eprintln!("kube-rs retrying, seat held {hold:?}: {r:?} after {took:?}; {rejected} got 429");
    assert!(
        r.expect("the observe succeeds once the seat is free")
            .exists
    );
    assert!(took >= hold && rejected >= 1, "it was throttled and waited");
    // Throttled throughout: kube-rs would go on retrying for minutes; the
    // host gives up before the deadline, and the adapter returns a typed
    // `timeout` instead of being stopped at the deadline.
    let (r, took, rejected) = observe_throttled(&a, &app, &ballast.name, None, limit).await;
    eprintln!("kube-rs retrying, throttled throughout: {r:?} after {took:?}; {rejected} got 429");
    assert!(
        matches!(&r, Err(CallError::Adapter(AdapterError::Timeout(_)))),
        "a call throttled past its deadline is the adapter's `timeout`: {r:?}"
    );
    assert!(took < limit, "returned before the deadline: {took:?}");

    // A client that does not retry by itself: the host retries the 429,
    // after the server's Retry-After.
    let client = faults::client(FaultIdentity::Throttled, false)
        .await
        .expect("a client");
    let config = POOL_CONFIG.replacen('{', r#"{"adapter_user": "pando-throttled", "#, 1);
    let grants = ka::grants_for_user("pando-throttled");
    let (a, _h2) = ka::load_with_client_grants(&config, client, grants).await;
    let (r, took, rejected) = observe_throttled(&a, &app, &ballast.name, Some(hold), limit).await;
    eprintln!("the host retrying, seat held {hold:?}: {r:?} after {took:?}; {rejected} got 429");
    assert!(
        r.expect("the observe succeeds once the seat is free")
            .exists
    );
    assert!(took >= hold && rejected >= 1, "it was throttled and waited");
    let (r, took, rejected) = observe_throttled(&a, &app, &ballast.name, None, limit).await;
    eprintln!("the host retrying, throttled throughout: {r:?} after {took:?}; {rejected} got 429");
    assert!(
        matches!(&r, Err(CallError::Adapter(AdapterError::Unavailable(m))) if m.contains("429")),
        "a call throttled until its deadline is `unavailable`, naming the 429: {r:?}"
    );
    assert!(took < limit, "returned before the deadline: {took:?}");
    assert!(rejected >= 2, "retried: {rejected} requests got 429");
}

// ---------------------------------------------------------------------------------------------
// Streams cut mid-way
// ---------------------------------------------------------------------------------------------

/// The container KWOK serves the 64 MiB log for (`scripts/cluster`):
/// 65536 lines of 1024 bytes, line N starting `line NNNNNN `.
const BIG_LOG_CONTAINER: &str = "big-log";
const BIG_LOG_BYTES: usize = 65536 * 1024;

#[tokio::test]
async fn a_log_stream_cut_mid_way_is_an_error_not_a_short_log() {
    let _fault = faults::exclusive().await;
    // KWOK serves the big log for containers named `big-log`, and the
    // Kubernetes adapter's pods' container is `workload`: the kube probe
    // opens the log the same way (the SDK's `Api::logs`, the host's
    // `kubernetes.logs` stream handed on untouched), for a pod of its own.
    let client = faults::client(FaultIdentity::Pando, true)
        .await
        .expect("a client of the fault API server");
    let host = Host::builder()
        .cache_dir(pando_tests::probe::shared_cache())
        .build()
        .expect("host");
    let probe = host
        .load_file(
            &pando_tests::components::kube_probe(),
            pando_host::LoadOptions {
                grants: pando_host::Grants::from_text("probe", pando_tests::probe::GRANTS)
                    .expect("grants"),
                config: "{}".into(),
                kubernetes: Some(client),
                ..pando_host::LoadOptions::default()
            },
        )
        .await
        .expect("the probe loads");
    let ns = pando_tests::probe::app_namespace("fault-log").await;
    let mut left = Leftovers::default();
    left.namespace(&ns.name);
    pando_tests::probe::running_pod(&ns.name, "chatty", BIG_LOG_CONTAINER).await;
    let options = LogOptions::default();
    let mut log = probe
        .logs(&ctx(), &wref(&ns.name, "chatty"), &options)
        .await
        .expect("logs");

    // Read the first 4 MiB, cut the connection, read on.
    let mut received = Vec::new();
    while received.len() < 4 << 20 {
        let chunk = log
            .next_chunk()
            .await
            .expect("more of the log")
            .expect("the stream is whole so far");
        received.extend_from_slice(&chunk);
    }
    faults::stop(Stop::Kill).await;
    let end = loop {
        match log.next_chunk().await {
            Some(Ok(chunk)) => received.extend_from_slice(&chunk),
            Some(Err(e)) => break Some(e),
            None => break None,
        }
    };
    eprintln!(
        "the log stream ended after {} of {BIG_LOG_BYTES} bytes: {end:?}",
        received.len()
    );
    assert!(
        received.len() < BIG_LOG_BYTES,
        "the cut landed mid-stream ({} bytes arrived)",
        received.len()
    );
    assert!(
        end.is_some(),
        "a log cut short ends with an error, never as if it were whole"
    );
    // What arrived is the log's beginning, line for line.
    for (n, line) in received.chunks(1024).enumerate() {
        if line.len() == 1024 {
            assert!(line.starts_with(format!("line {n:06} ").as_bytes()));
        }
    }
}

/// The directory that is the claim's contents on the test cluster
/// (KWOK's exec runs the helper's scripts here, `PANDO_HELPER_ROOT`).
fn volume_dir(ns: &str, claim: &str) -> std::path::PathBuf {
    cluster::state_dir()
        .join("helper-root/pando-volumes")
        .join(ns)
        .join(claim)
}

#[tokio::test]
async fn a_snapshot_cut_mid_way_is_an_error_not_a_short_archive() {
    let _fault = faults::exclusive().await;
    let (a, _h) = fault_adapter(FaultIdentity::Pando).await;
    let app = id("fault-snap");
    let ns = format!("pando-{app}");
    let mut left = Leftovers::default();
    left.namespace(&ns);
    left.dir(
        cluster::state_dir()
            .join("helper-root/pando-volumes")
            .join(&ns),
    );
    left.volume(ka::bound_pv(&ns, "data").await);
    let p = with_volume(plan(&app, &["web"]), "data");
    a.apply(&ctx(), &p).await.expect("apply");
    ka::wait_volume_ready(&a, &app, "data").await;
    wait_phase(&ns, "web", "Running").await;
    let dir = volume_dir(&ns, "data");
    std::fs::create_dir_all(&dir).expect("mkdir");
    // 64 MiB that tar passes as they are.
    let size = 64usize << 20;
    let bytes: Vec<u8> = (0..size as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(dir.join("big.bin"), &bytes).expect("writing the volume");
    let h = VolumeHandle {
        bundle: app.clone(),
        name: "data".into(),
        location: String::new(),
    };

    // The snapshot flows into a pipe this test reads: after 4 MiB, the API
    // server is killed.
    let (writer, mut reader) = tokio::io::duplex(64 << 10);
    let snapshot = {
        let (a, h) = (a.clone(), h.clone());
        tokio::spawn(async move { a.snapshot_volume(&ctx(), &h, writer).await })
    };
    let mut received = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    while received.len() < 4 << 20 {
        let n = reader.read(&mut buf).await.expect("reading the snapshot");
        assert!(n > 0, "the snapshot ended after {} bytes", received.len());
        received.extend_from_slice(&buf[..n]);
    }
    faults::stop(Stop::Kill).await;
    let cut = Instant::now();
    reader
        .read_to_end(&mut received)
        .await
        .expect("reading the rest");
    let r = snapshot.await.expect("join");
    let took = cut.elapsed();
    eprintln!(
        "the snapshot ended {took:?} after the cut, after {} bytes of a {size} byte file: {r:?}",
        received.len(),
    );
    assert!(
        received.len() < size,
        "the cut landed mid-stream ({} bytes)",
        received.len()
    );
    assert!(
        matches!(&r, Err(CallError::Adapter(AdapterError::Unavailable(m))) if m.contains("broke off")),
        "a snapshot cut short is `unavailable`, never a short archive returned as whole: {r:?}"
    );
    assert!(
        took < Duration::from_secs(30),
        "it fails when the connection breaks, not at the call's deadline: {took:?}"
    );
}
