//! Every export shape of the contract, through the host's typed API, against
//! the test adapter.

use std::time::Duration;

use pando_host::types::{
    BundleEvent, DestroyOptions, Error as AdapterError, ExecRequest, LogOptions, RunRequest,
    TerminalSize, TrialRequest, VolumeHandle, VolumeRequest, WatchEnd, WorkloadPhase,
};
use pando_host::{Adapter, CallContext, CallError, CancellationToken, Limits};
use pando_tests::plans::{bundle, plan, workload, wref};
use pando_tests::test_adapter;
use tokio::sync::mpsc;

async fn adapter() -> (Adapter, tempfile::TempDir) {
    test_adapter::load(Limits::default()).await
}

fn ctx() -> CallContext {
    CallContext::default().with_timeout(Duration::from_secs(20))
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

#[tokio::test]
async fn plain_calls_return_the_adapters_answers() {
    let (a, _c) = adapter().await;
    let caps = a.capabilities(&ctx()).await.expect("capabilities");
    assert!(caps.exec && caps.logs && caps.run && caps.volume_snapshot);
    assert!(!caps.image_import && !caps.write_observation);
    a.health_check(&ctx()).await.expect("health");
    let cap = a.capacity(&ctx()).await.expect("capacity");
    assert_eq!(cap.total.cpu_millis, 4000);
    assert_eq!(cap.largest_fit.expect("a fit").node, "local");
    assert!(a.largest_fit_for(&ctx(), "x").await.expect("fit").is_some());
    assert!(a.in_use(&ctx()).await.expect("in use").bundles.is_empty());

    let handle = a
        .apply(&ctx(), &plan("shop", &["web", "db"]))
        .await
        .expect("apply");
    assert_eq!(handle.id, "shop");
    assert_eq!(handle.location, "test/shop");
    let observed = a.observe(&ctx(), &bundle("shop")).await.expect("observe");
    assert!(observed.exists);
    assert_eq!(observed.workloads[0].phase, WorkloadPhase::Running);
    a.stop(&ctx(), &bundle("shop")).await.expect("stop");
    a.destroy(&ctx(), &bundle("shop"), DestroyOptions::default())
        .await
        .expect("destroy");
    a.usage(&ctx(), &bundle("shop")).await.expect("usage");

    let vol = a
        .create_volume(
            &ctx(),
            &VolumeRequest {
                bundle: "shop".into(),
                name: "data".into(),
                size_bytes: None,
            },
        )
        .await
        .expect("create volume");
    assert_eq!(vol.location, "test/shop/data");
    a.destroy_volume(&ctx(), &vol)
        .await
        .expect("destroy volume");
    assert!(a.has_image(&ctx(), "busybox").await.expect("has image"));

    let up = a
        .upstream(&ctx(), &wref("shop", "web"), 8080)
        .await
        .expect("upstream");
    assert_eq!((up.host.as_str(), up.port), ("web.shop.test", 8080));

    let trial = a
        .trial(
            &ctx(),
            &TrialRequest {
                bundle: "shop".into(),
                workload: workload("web"),
                network: plan("x", &[]).network,
                pull_credentials: vec![],
                duration_ms: 10,
            },
        )
        .await
        .expect("trial");
    assert_eq!(trial.listening[0].port, 8080);
    assert!(trial.writes.is_none());

    let edge = a.observe_edge(&ctx(), "edge").await.expect("observe edge");
    assert!(edge.serving);
    assert!(a.edges(&ctx()).await.expect("edges").is_empty());
    assert!(
        a.edge_volumes(&ctx())
            .await
            .expect("edge volumes")
            .is_empty()
    );
    a.remove_edge(&ctx(), "edge").await.expect("remove edge");
}

#[tokio::test]
async fn adapter_errors_arrive_typed() {
    let (a, _c) = adapter().await;
    let err = a
        .apply(&ctx(), &plan("shop", &["Not_A_Label"]))
        .await
        .expect_err("a bad workload name is invalid");
    match &err {
        CallError::Adapter(AdapterError::Invalid(m)) => assert!(m.contains("Not_A_Label"), "{m}"),
        other => panic!("expected invalid, got {other:?}"),
    }
    let err = a
        .import_image(&ctx(), &b"tar"[..])
        .await
        .expect_err("import is unsupported");
    assert_eq!(err.kind(), "unsupported", "{err}");
}

#[tokio::test]
async fn logs_stream_through_the_host() {
    let (a, _c) = adapter().await;
    let mut stream = a
        .logs(
            &ctx(),
            &wref("shop", "bytes-3000000"),
            &LogOptions::default(),
        )
        .await
        .expect("logs");
    let bytes = stream.read_to_end(16 << 20).await.expect("read log");
    assert_eq!(bytes.len(), 3_000_000);
    assert!(
        bytes == pattern(3_000_000),
        "log bytes differ from the pattern"
    );

    let mut stream = a
        .logs(&ctx(), &wref("shop", "web"), &LogOptions::default())
        .await
        .expect("logs");
    let text = stream.read_to_end(1 << 20).await.expect("read log");
    assert_eq!(text, b"log of shop/web\n");
}

#[tokio::test]
async fn snapshot_and_restore_round_trip_byte_for_byte() {
    let (a, _c) = adapter().await;
    let handle = VolumeHandle {
        bundle: "shop".into(),
        name: "bytes-5000000".into(),
        location: String::new(),
    };
    let (writer, mut reader) = tokio::io::duplex(64 << 10);
    let collect = tokio::spawn(async move {
        let mut out = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut reader, &mut out)
            .await
            .map(|_| out)
    });
    let n = a
        .snapshot_volume(&ctx(), &handle, writer)
        .await
        .expect("snapshot");
    let snapshot = collect.await.expect("join").expect("read snapshot");
    assert_eq!(n, 5_000_000);
    assert!(snapshot == pattern(5_000_000), "snapshot bytes differ");

    a.restore_volume(&ctx(), &handle, std::io::Cursor::new(snapshot.clone()))
        .await
        .expect("restore of the snapshot");

    let mut damaged = snapshot;
    damaged[4_000_000] ^= 0xff;
    let err = a
        .restore_volume(&ctx(), &handle, std::io::Cursor::new(damaged))
        .await
        .expect_err("a damaged snapshot is refused");
    assert!(err.to_string().contains("offset 4000000"), "{err}");
}

#[tokio::test]
async fn run_streams_stdout_and_explains_failure() {
    let (a, _c) = adapter().await;
    let req = |cmd: &[&str]| RunRequest {
        command: cmd.iter().map(|s| s.to_string()).collect(),
        env: vec![],
    };
    let (writer, mut reader) = tokio::io::duplex(1 << 16);
    let n = a
        .run(
            &ctx(),
            &wref("shop", "web"),
            &req(&["echo", "hello"]),
            writer,
        )
        .await
        .expect("run");
    let mut out = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut reader, &mut out)
        .await
        .expect("read stdout");
    assert_eq!(out, "echo hello\n");
    assert_eq!(n, out.len() as u64);

    let err = a
        .run(
            &ctx(),
            &wref("shop", "web"),
            &req(&["fail"]),
            tokio::io::sink(),
        )
        .await
        .expect_err("fail fails");
    match err {
        CallError::Adapter(AdapterError::CommandFailed(f)) => {
            assert_eq!(f.exit_code, 3);
            assert_eq!(f.stderr, "failing as asked\n");
        }
        other => panic!("expected command-failed, got {other:?}"),
    }
}

#[tokio::test]
async fn exec_session_carries_stdin_stdout_and_exit_status() {
    let (a, _c) = adapter().await;
    let req = |cmd: &str| ExecRequest {
        command: vec![cmd.into()],
        stdin: cmd == "upper",
        tty: false,
        size: None,
    };
    let mut session = a
        .exec(&ctx(), &wref("shop", "web"), &req("upper"))
        .await
        .expect("exec");
    let mut stdin = session.stdin().await.expect("stdin call").expect("stdin");
    let mut stdout = session
        .stdout()
        .await
        .expect("stdout call")
        .expect("stdout");
    assert!(
        session.stdin().await.expect("stdin again").is_none(),
        "stdin is taken once"
    );
    session
        .resize(TerminalSize { cols: 80, rows: 24 })
        .await
        .expect("resize");
    stdin
        .write_all(b"hello, session\n")
        .await
        .expect("write stdin");
    stdin.close().await.expect("close stdin");
    let code = session.wait(&ctx()).await.expect("wait");
    let out = stdout.read_to_end(1 << 20).await.expect("read stdout");
    assert_eq!(code, 0);
    assert_eq!(out, b"HELLO, SESSION\n");

    let session = a
        .exec(&ctx(), &wref("shop", "web"), &req("exit7"))
        .await
        .expect("exec");
    assert_eq!(session.wait(&ctx()).await.expect("wait"), 7);
}

#[tokio::test]
async fn watch_sends_watching_then_changes_until_cancelled() {
    let (a, _c) = adapter().await;
    let (tx, mut rx) = mpsc::channel(4);
    let cancel = CancellationToken::new();
    let call_ctx = CallContext::new(cancel.clone()).without_deadline();
    let watcher = {
        let a = a.clone();
        tokio::spawn(async move { a.watch_bundles(&call_ctx, tx).await })
    };
    let first = rx.recv().await.expect("an event");
    assert_eq!(first, BundleEvent::Watching);
    for i in 0..5 {
        match rx.recv().await.expect("an event") {
            BundleEvent::Changed(c) => assert_eq!(c.workload.name, format!("w{i}")),
            other => panic!("expected a change, got {other:?}"),
        }
    }
    cancel.cancel();
    let end = tokio::time::timeout(Duration::from_secs(5), watcher)
        .await
        .expect("the watch returns after cancellation")
        .expect("join")
        .expect("watch ends cleanly");
    assert_eq!(end, WatchEnd::Cancelled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_share_the_pool() {
    let (a, _c) = adapter().await;
    let mut tasks = Vec::new();
    for i in 0..32 {
        let a = a.clone();
        tasks.push(tokio::spawn(async move {
            let w = format!("w{i}");
            a.upstream(&ctx(), &wref("shop", &w), 80).await
        }));
    }
    for (i, t) in tasks.into_iter().enumerate() {
        let up = t.await.expect("join").expect("upstream");
        assert_eq!(up.host, format!("w{i}.shop.test"));
    }
    assert!(a.idle_instances() >= 1);
    assert!(a.idle_instances() <= a.limits().max_idle as usize);
}
