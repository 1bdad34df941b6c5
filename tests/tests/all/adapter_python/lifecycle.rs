//! The Python adapter's app lifecycle on the test cluster: observe, upstream,
//! logs, stop and destroy, each as the Rust adapter does it.

use super::*;

#[tokio::test]
async fn observe_reports_the_workload_and_never_remediates() {
    let (a, _h) = py::load().await;
    let app = id("py-obs");
    let ns = format!("pando-{app}");
    let missing = a.observe(&ctx(), &bundle(&app)).await.expect("observe");
    assert!(!missing.exists);
    assert!(missing.workloads.is_empty());

    let mut p = plan(&app, &["web"]);
    p.workloads[0].digest = Some("sha256:cafe".into());
    a.apply(&ctx(), &p).await.expect("apply");
    wait_phase(&ns, "web", "Running").await;
    let seen = a.observe(&ctx(), &bundle(&app)).await.expect("observe");
    assert!(seen.exists);
    assert_eq!(seen.workloads.len(), 1);
    let web = &seen.workloads[0];
    assert_eq!(web.name, "web");
    assert_eq!(web.phase, WorkloadPhase::Running);
    assert_eq!(web.digest.as_deref(), Some("sha256:cafe"));
    let started = web.started_at_ms.expect("a start time");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64;
    assert!(
        started <= now_ms && now_ms - started < 600_000,
        "started {started}, now {now_ms}"
    );

    let failed = exit_pod(&ns, "web", 1).await;
    let mark = audit_mark();
    let seen = a.observe(&ctx(), &bundle(&app)).await.expect("observe");
    let sent = requests(mark, &ns);
    eprintln!("observe sent {} requests: {sent:?}", sent.len());
    assert!(sent.iter().all(|r| !r.is_write()), "observe only reads");
    let web = &seen.workloads[0];
    assert_eq!(web.phase, WorkloadPhase::Failed);
    assert_eq!(web.exit_code, Some(1));
    assert!(web.finished_at_ms.is_some());
    let pod = Api::<Pod>::namespaced(admin().await, &ns)
        .get("web")
        .await
        .expect("the failed pod stays");
    assert_eq!(uid(&pod), uid(&failed), "never remediates");

    // A workload whose pod is gone is missing.
    Api::<Pod>::namespaced(admin().await, &ns)
        .delete("web", &DeleteParams::default().grace_period(0))
        .await
        .expect("deleting");
    let deadline = tokio::time::Instant::now() + ka::WAIT;
    loop {
        let seen = a.observe(&ctx(), &bundle(&app)).await.expect("observe");
        if seen.workloads[0].phase == WorkloadPhase::Missing {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{seen:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn r023_upstream_is_computed_as_the_rust_adapter_computes_it() {
    let (a, _h) = py::load().await;
    let (rust, _h2) = rust_adapter().await;
    let sent_before = a.kubernetes_requests().map(|c| c.total());
    for (app, workload, port) in [
        ("shop", "web", 8080),
        ("a", "db", 5432),
        (&"a".repeat(57)[..], "x", 1),
    ] {
        let py_up = a
            .upstream(&ctx(), &wref(app, workload), port)
            .await
            .expect("upstream");
        let rust_up = rust
            .upstream(&ctx(), &wref(app, workload), port)
            .await
            .expect("rust upstream");
        assert_eq!(py_up, rust_up);
    }
    let up = a
        .upstream(&ctx(), &wref("shop", "web"), 8080)
        .await
        .expect("upstream");
    assert_eq!(up.host, "web.pando-shop.svc.cluster.local");
    assert_eq!(up.port, 8080);
    for (app, workload, port, words) in [
        ("Shop", "web", 80, "app id `Shop`"),
        ("shop", "web.x", 80, "workload name `web.x`"),
        (&"a".repeat(58)[..], "web", 80, "app id"),
        ("shop", "web", 0, "port 0"),
    ] {
        let err = a
            .upstream(&ctx(), &wref(app, workload), port)
            .await
            .expect_err("refused");
        let rust_err = rust
            .upstream(&ctx(), &wref(app, workload), port)
            .await
            .expect_err("refused by the Rust adapter");
        assert_eq!(err.kind(), "invalid", "{err}");
        assert_eq!(err.to_string(), rust_err.to_string());
        assert!(err.to_string().contains(words), "{err}");
    }
    let sent_after = a.kubernetes_requests().map(|c| c.total());
    assert_eq!(sent_before, sent_after, "upstream sends no request");
}

#[tokio::test]
async fn logs_are_the_newest_pods_log_a_finished_one_included() {
    let (a, _h) = py::load_with(
        r#"{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17",
            "node_selector": "pando.dev/pool=apps"}"#,
    )
    .await;
    let app = id("py-logs");
    let ns = format!("pando-{app}");
    a.apply(&ctx(), &plan(&app, &["web"])).await.expect("apply");
    let pod = wait_phase(&ns, "web", "Running").await;
    let node = pod.spec.and_then(|s| s.node_name).unwrap_or_default();
    assert!(
        node == "kwok-node-0" || node == "kwok-node-1",
        "node_selector places the pod: {node}"
    );
    let expected = cluster::expected_pod_log().expect("expected log");
    let mark = audit_mark();
    let mut log = a
        .logs(&ctx(), &wref(&app, "web"), &LogOptions::default())
        .await
        .expect("logs");
    let text = log.read_to_end(1 << 20).await.expect("read");
    assert_eq!(String::from_utf8_lossy(&text), expected);
    // KWOK serves one file as every pod's log: the host's audit says which pod was read.
    assert_eq!(ka::log_reads(mark, &ns), ["web"], "the workload's pod");

    exit_pod(&ns, "web", 1).await;
    let mark = audit_mark();
    let mut log = a
        .logs(&ctx(), &wref(&app, "web"), &LogOptions::default())
        .await
        .expect("the crash's log (R-150)");
    let text = log.read_to_end(1 << 20).await.expect("read");
    assert_eq!(String::from_utf8_lossy(&text), expected);
    assert_eq!(ka::log_reads(mark, &ns), ["web"], "the finished pod's own");

    let err = a
        .logs(&ctx(), &wref(&app, "ghost"), &LogOptions::default())
        .await
        .expect_err("no pod");
    assert_eq!(err.kind(), "not-found", "{err}");
    assert!(err.to_string().contains("ghost"), "{err}");
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn r150_stop_keeps_finished_pods_and_r204_destroy_removes_the_app() {
    let (a, _h) = py::load().await;
    let app = id("py-stop");
    let ns = format!("pando-{app}");
    let p = plan(&app, &["web"]);
    a.apply(&ctx(), &p).await.expect("apply");
    let first = wait_phase(&ns, "web", "Running").await;

    a.stop(&ctx(), &bundle(&app)).await.expect("stop");
    let c = admin().await;
    let pods = Api::<Pod>::namespaced(c.clone(), &ns);
    let deadline = tokio::time::Instant::now() + ka::WAIT;
    while pods.get_opt("web").await.expect("reading").is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the running pod goes"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let services = Api::<Service>::namespaced(c.clone(), &ns);
    assert!(
        services.get_opt("web").await.expect("svc").is_some(),
        "stop keeps the Service"
    );

    // Apply starts it again; a finished pod survives stop (R-150).
    a.apply(&ctx(), &p).await.expect("apply after stop");
    let second = wait_phase(&ns, "web", "Running").await;
    assert_ne!(uid(&second), uid(&first));
    let finished = exit_pod(&ns, "web", 0).await;
    a.stop(&ctx(), &bundle(&app)).await.expect("stop again");
    let kept = pods.get("web").await.expect("the finished pod stays");
    assert_eq!(uid(&kept), uid(&finished));
    // Only apply starts an exited workload again (R-151).
    a.apply(&ctx(), &p).await.expect("apply after the exit");
    let third = wait_phase(&ns, "web", "Running").await;
    assert_ne!(uid(&third), uid(&finished), "the exited pod is replaced");

    // Destroy keeping volumes: pods and Services go, the namespace and its
    // default-deny policy stay.
    a.destroy(&ctx(), &bundle(&app), DestroyOptions { keep_volumes: true })
        .await
        .expect("destroy");
    let lp = ListParams::default();
    let deadline = tokio::time::Instant::now() + ka::WAIT;
    while !pods.list(&lp).await.expect("pods").items.is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "the pods go");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(services.list(&lp).await.expect("svcs").items.is_empty());
    assert!(
        Api::<NetworkPolicy>::namespaced(c.clone(), &ns)
            .get_opt("pando-default-deny")
            .await
            .expect("np")
            .is_some()
    );
    let namespaces = Api::<Namespace>::all(c.clone());
    assert!(namespaces.get_opt(&ns).await.expect("ns").is_some());

    // Without keep-volumes the namespace goes; destroying again is fine.
    a.destroy(
        &ctx(),
        &bundle(&app),
        DestroyOptions {
            keep_volumes: false,
        },
    )
    .await
    .expect("destroy all");
    let n = namespaces.get_opt(&ns).await.expect("ns");
    assert!(
        n.is_none_or(|n| n.metadata.deletion_timestamp.is_some()),
        "the namespace goes"
    );
    a.destroy(
        &ctx(),
        &bundle(&format!("{app}-never")),
        DestroyOptions {
            keep_volumes: false,
        },
    )
    .await
    .expect("an app already gone is not an error");
    cleanup(&a, &app).await;
}
