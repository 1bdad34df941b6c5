//! The Kubernetes import lent to a `pando:runtime@0.2.0` adapter, against
//! the test cluster: the same grants, budgets and audit as 0.1.0's, its
//! streams the component model's own. The 0.2.0 probe
//! (`tests/components/v02-kube`) says in its answer what it read, so each
//! test asserts what crossed the boundary, not only that a call returned.

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use pando_host::types::{ExecRequest, LogOptions};
use pando_host::{Grants, Limits, LoadOptions};
use pando_tests::cluster::{self, Identity};
use pando_tests::components;
use pando_tests::plans::wref;
use pando_tests::probe::{self, GRANTS, op};
use pando_tests::real_node;

async fn load() -> (pando_host::Adapter, pando_host::Host) {
    load_with(LoadOptions::default()).await
}

async fn load_with(options: LoadOptions) -> (pando_host::Adapter, pando_host::Host) {
    let grants = Grants::from_text("test grants", GRANTS).expect("test grants parse");
    probe::load_as_pando_with(&components::v02_kube(), LoadOptions { grants, ..options }).await
}

#[tokio::test]
async fn a_0_2_request_passes_the_grants_a_0_1_request_does_and_a_denial_names_the_grant() {
    let (a, _h) = load().await;
    assert_eq!(a.shape().version, "0.2.0");
    let ns = probe::app_namespace("v02-send").await;
    let pods = format!("/api/v1/namespaces/{}/pods", ns.name);
    assert_eq!(
        op(&a, &format!("raw:get:{pods}")).await.expect("granted"),
        "200"
    );
    let err = op(&a, "raw:get:/api/v1/namespaces/kube-system/secrets")
        .await
        .expect_err("not granted");
    assert_eq!(err.kind(), "denied", "{err}");
    assert!(
        err.to_string().contains("missing grant:") && err.to_string().contains("secrets"),
        "the denial names the grant: {err}"
    );
    // Counted and audited as any request: the refusal is in the usage
    // report the operator reads.
    let report = a.grant_report().expect("a Kubernetes adapter has a report");
    assert!(
        report
            .denials
            .iter()
            .any(|d| d.resource == "secrets" && d.namespace.as_deref() == Some("kube-system")),
        "{report:?}"
    );
    // An async call: the deadline reaches the import's wait too.
    a.health_check(&probe::ctx()).await.expect("readyz");
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn a_0_2_log_arrives_as_a_byte_stream_and_its_end_as_a_future() {
    let (a, _h) = load().await;
    let ns = probe::app_namespace("v02-logs").await;
    probe::running_pod(&ns.name, "web", "main").await;
    let log = op(&a, &format!("logs:{}:web", ns.name))
        .await
        .expect("the log");
    assert_eq!(log, cluster::expected_pod_log().expect("expected log"));
    // The stream and its place in the budget are gone with the call.
    let held = a.held_streams();
    assert_eq!((held.streams, held.bytes), (0, 0), "{held:?}");
    let err = op(&a, "logs:kube-system:etcd")
        .await
        .expect_err("not granted");
    assert_eq!(err.kind(), "denied", "{err}");
    ns.delete().await.expect("cleanup");
}

/// A 0.2.0 adapter's `logs` can hand on the stream the Kubernetes import
/// opened, as it is (the SDK's `streams::handed_on`): core reads the pod's
/// log whole through the adapter's export, and the import's stream and its
/// budget are given back once core has read it.
#[tokio::test]
async fn a_0_2_adapter_hands_the_imports_log_stream_on_to_core_as_it_is() {
    let (a, _h) = load().await;
    let ns = probe::app_namespace("v02-handed").await;
    probe::running_pod(&ns.name, "web", "main").await;
    let mut log = a
        .logs(
            &probe::ctx(),
            &wref(&ns.name, "web"),
            &LogOptions::default(),
        )
        .await
        .expect("the log opens");
    let text = log.read_to_end(1 << 20).await.expect("the log, whole");
    assert_eq!(
        String::from_utf8_lossy(&text),
        cluster::expected_pod_log().expect("expected log")
    );
    let held = a.held_streams();
    assert_eq!((held.streams, held.bytes), (0, 0), "{held:?}");
    // A log the grants do not reach fails the call, in the grant's words.
    let err = a
        .logs(
            &probe::ctx(),
            &wref("kube-system", "etcd"),
            &LogOptions::default(),
        )
        .await
        .expect_err("not granted");
    assert!(err.to_string().contains("missing grant:"), "{err}");
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn a_0_2_stream_over_the_adapters_stream_limit_is_refused_naming_the_limit() {
    let (a, _h) = load_with(LoadOptions {
        limits: Limits {
            max_streams: 0,
            ..Limits::default()
        },
        ..LoadOptions::default()
    })
    .await;
    let ns = probe::app_namespace("v02-limit").await;
    probe::running_pod(&ns.name, "web", "main").await;
    let err = op(&a, &format!("logs:{}:web", ns.name))
        .await
        .expect_err("over the limit");
    assert_eq!(err.kind(), "denied", "{err}");
    assert!(err.to_string().contains("limits.max_streams"), "{err}");
    assert_eq!(a.held_streams().refused_streams, 1);
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn a_0_2_watch_streams_its_events_and_its_end() {
    let (a, _h) = load().await;
    let ns = probe::app_namespace("v02-watch").await;
    probe::running_pod(&ns.name, "one", "main").await;
    probe::running_pod(&ns.name, "two", "main").await;
    // From version 0: the pods there now, as events; then the server
    // closes the watch after a second, which is `closed`, not a failure.
    let seen = op(&a, &format!("watch:{}:1:0", ns.name))
        .await
        .expect("watch");
    assert_eq!(seen, "closed:2");
    let err = op(&a, "watch:kube-system:1:0")
        .await
        .expect_err("not granted");
    assert_eq!(err.kind(), "denied", "{err}");
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn a_0_2_exec_session_takes_stdin_as_a_stream_and_its_exit_as_a_future() {
    let (a, _h) = load().await;
    let ns = probe::app_namespace("v02-exec").await;
    probe::running_pod(&ns.name, "shell", "main").await;
    let seen = op(&a, &format!("exec:{}:shell", ns.name))
        .await
        .expect("exec");
    assert_eq!(seen, "exit=3 out=got through the host\n");
    let held = a.held_streams();
    assert_eq!((held.streams, held.bytes), (0, 0), "{held:?}");
    ns.delete().await.expect("cleanup");
}

/// Issue 42's "an exec session is resized while it runs": on the real
/// node (a kubelet, containerd and a terminal of its own), the program
/// prints its terminal's size, the adapter resizes it through the resize
/// stream, and the program prints the new size.
#[tokio::test]
async fn a_0_2_exec_terminal_is_resized_while_the_program_runs_on_the_real_node() {
    let admin = cluster::client(Identity::Admin)
        .await
        .expect("admin client");
    real_node::require(&admin).await;
    let (a, _h) = load().await;
    let ns = probe::app_namespace("v02-resize").await;
    let name = cluster::unique_name("term");
    let pod: Pod = real_node::shell_pod(&name, &[], "sleep 3600");
    real_node::run(&admin, &ns.name, pod).await;
    let seen = op(&a, &format!("resize:{}:{name}:123x45", ns.name))
        .await
        .expect("exec on a terminal");
    let out = seen
        .strip_prefix("exit=0 out=")
        .unwrap_or_else(|| panic!("{seen}"));
    // A terminal's output: `\r\n` line ends, and the input echoed.
    let lines: Vec<&str> = out.lines().map(str::trim).collect();
    assert_eq!(
        lines,
        ["before:", "go", "after: 45 123"],
        "no size before the resize (a terminal given none is 0x0), the \
         line that let the program go on, then the size the resize gave, \
         rows first as `stty size` prints it"
    );
    ns.delete().await.expect("cleanup");
}

/// The SDK 0.2 line's typed client, its calls `async`, through the host:
/// a ConfigMap created, read, listed by label, patched by server-side
/// apply, deleted and waited for until it is gone (`wait_for_deletion`
/// on the import's watch stream).
#[tokio::test]
async fn the_0_2_sdks_typed_client_creates_reads_lists_patches_and_deletes() {
    let (a, _h) = load().await;
    let ns = probe::app_namespace("v02-typed").await;
    let seen = op(&a, &format!("typed:{}", ns.name))
        .await
        .expect("the typed calls");
    assert_eq!(
        seen,
        "created=typed read=hello listed=1 patched=patched gone=true missing=true"
    );
    ns.delete().await.expect("cleanup");
}

/// The SDK 0.2 line's watcher: it lists first (a map made before it is
/// listed), says where the list ends, then follows a change made after.
#[tokio::test]
async fn the_0_2_sdks_watcher_lists_then_follows() {
    let (a, _h) = load().await;
    let ns = probe::app_namespace("v02-watcher").await;
    let admin = cluster::client(Identity::Admin).await.expect("admin");
    let maps: kube::Api<ConfigMap> = kube::Api::namespaced(admin, &ns.name);
    let before: ConfigMap =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "before"}})).expect("a map");
    maps.create(&kube::api::PostParams::default(), &before)
        .await
        .expect("create");
    let seen = op(&a, &format!("watcher:{}", ns.name))
        .await
        .expect("the watcher");
    let seen: Vec<&str> = seen.split(',').collect();
    assert_eq!(seen.first(), Some(&"init"), "{seen:?}");
    assert!(seen.contains(&"listed:before"), "{seen:?}");
    assert_eq!(seen.last(), Some(&"apply:followed"), "{seen:?}");
    ns.delete().await.expect("cleanup");
}

/// An exec through a 0.2 adapter built on the SDK: core's stdin stream is
/// handed to the import and the import's session back to core
/// (`Api::exec`, `ExecSession::from`), its bytes never in the guest; the
/// program reads what core wrote, and its exit code arrives.
#[tokio::test]
async fn a_0_2_adapter_hands_cores_exec_streams_to_the_import_and_its_session_back() {
    let (a, _h) = load().await;
    let ns = probe::app_namespace("v02-exec-on").await;
    probe::running_pod(&ns.name, "web", "main").await;
    let ctx = probe::ctx();
    let mut session = a
        .exec(
            &ctx,
            &wref(&ns.name, "web"),
            &ExecRequest {
                command: ["sh", "-c", "read l; echo \"got $l\"; echo oops >&2; exit 4"]
                    .iter()
                    .map(|s| (*s).to_string())
                    .collect(),
                stdin: true,
                tty: false,
                size: None,
            },
        )
        .await
        .expect("exec");
    let mut stdin = session.stdin().await.expect("stdin").expect("asked for");
    let mut stdout = session.stdout().await.expect("stdout").expect("an output");
    let mut stderr = session.stderr().await.expect("stderr").expect("apart");
    stdin.write_all(b"handed on\n").await.expect("write");
    let out = stdout.read_to_end(1 << 20).await.expect("stdout");
    let err = stderr.read_to_end(1 << 20).await.expect("stderr");
    drop(stdin);
    assert_eq!(String::from_utf8_lossy(&out), "got handed on\n");
    assert_eq!(String::from_utf8_lossy(&err), "oops\n");
    assert_eq!(session.wait(&ctx).await.expect("the exit"), 4);
    ns.delete().await.expect("cleanup");
}
