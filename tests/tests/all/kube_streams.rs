//! Streams through the Kubernetes import against the real control plane:
//! a watch that survives a server-side timeout and reports 410, and an exec
//! session with stdin and an exit status.

use pando_host::types::{ExecRequest, LogOptions};
use pando_tests::cluster;
use pando_tests::plans::wref;
use pando_tests::probe::{self, GRANTS, op};

#[tokio::test]
async fn a_watch_survives_a_server_timeout_and_reports_410_after_compaction() {
    let (a, _c) = probe::load(GRANTS).await;
    let ns = probe::app_namespace("watch").await;
    // The server closes the watch after a second; the probe sees `closed`
    // (not an error) with the version to resume from.
    let first = op(&a, &format!("watch:{}:1:", ns.name))
        .await
        .expect("watch");
    let rest = first
        .strip_prefix("closed:")
        .unwrap_or_else(|| panic!("{first}"));
    let (_events, rv) = rest.split_once(':').expect("closed:<events>:<version>");
    // Resuming from that version works, and closes again.
    let again = op(&a, &format!("watch:{}:1:{rv}", ns.name))
        .await
        .expect("resume");
    assert!(again.starts_with("closed:"), "{again}");

    // Make a change so the old version is behind, compact, and watch from
    // it: 410 Gone, reported distinctly so the adapter re-lists.
    probe::running_pod(&ns.name, "bump", "main").await;
    cluster::compact_etcd().await.expect("compaction");
    let expired = op(&a, &format!("watch:{}:5:{rv}", ns.name))
        .await
        .expect("watch");
    assert!(expired.starts_with("expired:"), "{expired}");
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn an_exec_session_carries_stdin_and_the_exit_status() {
    let (a, _c) = probe::load(GRANTS).await;
    let ns = probe::app_namespace("exec").await;
    probe::running_pod(&ns.name, "shell", "main").await;
    let mut session = a
        .exec(
            &probe::ctx(),
            &wref(&ns.name, "shell"),
            &ExecRequest {
                // One line, not to the end of stdin: whether closing stdin
                // reaches the process depends on the streaming protocol's
                // version on both ends.
                command: vec![
                    "sh".into(),
                    "-c".into(),
                    r#"read line; echo "got $line"; exit 3"#.into(),
                ],
                stdin: true,
                tty: false,
                size: None,
            },
        )
        .await
        .expect("exec");
    let mut stdin = session.stdin().await.expect("stdin call").expect("stdin");
    let mut stdout = session
        .stdout()
        .await
        .expect("stdout call")
        .expect("stdout");
    stdin.write_all(b"through the host\n").await.expect("write");
    let out = stdout.read_to_end(1 << 20).await.expect("read stdout");
    assert_eq!(out, b"got through the host\n");
    assert_eq!(session.wait(&probe::ctx()).await.expect("exit status"), 3);
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn a_pod_log_streams_through_the_host() {
    let (a, _c) = probe::load(GRANTS).await;
    let ns = probe::app_namespace("logs").await;
    probe::running_pod(&ns.name, "web", "main").await;
    let options = LogOptions::default();
    let mut log = a
        .logs(&probe::ctx(), &wref(&ns.name, "web"), &options)
        .await
        .expect("logs");
    let text = log.read_to_end(1 << 20).await.expect("read");
    let expected = cluster::expected_pod_log().expect("expected log");
    assert_eq!(String::from_utf8_lossy(&text), expected);

    // A log the grants do not reach: denied.
    let err = a
        .logs(&probe::ctx(), &wref("kube-system", "etcd"), &options)
        .await
        .expect_err("denied");
    assert_eq!(err.kind(), "denied", "{err}");
    ns.delete().await.expect("cleanup");
}
