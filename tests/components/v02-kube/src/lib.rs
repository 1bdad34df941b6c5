//! A test adapter of `pando:runtime@0.2.0` (world `kubernetes-adapter`)
//! that drives the host's 0.2.0 Kubernetes import with the component
//! model's own streams, for the host's tests against the test cluster.
//! `apply` runs the operation its `plan.id` names; its handle's `location`
//! is what the operation saw; a cancelled call returns `cancelled` at
//! once (`call.cancelled`). Every other call is `unsupported`.
//!
//! | `plan.id` | Operation | `location` |
//! |---|---|---|
//! | `raw:<method>:<path>` | `send` of `<method>` (`get`, `delete`) to `<path>`, no body | the status |
//! | `logs:<ns>:<pod>` | the pod's log, read to its end, then its `done` future | the log |
//! | `watch:<ns>:<timeout>:<version>` | a watch of pods in `<ns>` from `<version>` (empty: from now), read until the server closes it after `<timeout>` s, then its `end` future | `<end>:<events>`: `closed`, `expired` or `failed`, and how many events came |
//! | `exec:<ns>:<pod>` | `sh -c 'read line; echo "got $line"; exit 3'` with `through the host` written to its stdin stream | `exit=<code> out=<stdout>` |
//! | `resize:<ns>:<pod>:<cols>x<rows>` | `echo "before: $(stty size)"; read go`, then `after: ` and the terminal's size once it has one (within 5 s), on a terminal: once the first line is read, the terminal is resized to `<cols>x<rows>` through the resize stream and a line written to stdin | `exit=<code> out=<stdout>` (the terminal's output: both sizes) |
//!
//! A Kubernetes error is the operation's error: a grant refusal is
//! `denied("<message> (missing grant: <rule>)")`, anything else
//! `unavailable` with the host's words.

wit_bindgen::generate!({
    path: "../../../wit/v0.2",
    world: "kubernetes-adapter",
    generate_all,
});

use exports::pando::runtime::adapter::Guest;
use pando::runtime::kubernetes::{
    self as k8s, ApiError, ExecRequest as KubeExec, LogRequest, Method, Request, WatchEnd,
    WatchRequest,
};
use pando::runtime::types::*;

struct V02Kube;

fn unsupported<T>(what: &str) -> Result<T, Error> {
    Err(Error::Unsupported(format!(
        "{what}: the 0.2 Kubernetes probe does not do it"
    )))
}

fn api(what: &str, e: ApiError) -> Error {
    match e {
        ApiError::Denied(d) => Error::Denied(format!(
            "{what}: {} (missing grant: {})",
            d.message, d.missing_grant
        )),
        ApiError::Cancelled => Error::Cancelled(format!("{what}: cancelled")),
        other => Error::Unavailable(format!("{what}: {other:?}")),
    }
}

fn invalid(id: &str) -> Error {
    Error::Invalid(format!("operation `{id}`: not one the probe knows"))
}

async fn raw(method: &str, path: &str) -> Result<String, Error> {
    let method = match method {
        "get" => Method::Get,
        "delete" => Method::Delete,
        other => return Err(Error::Invalid(format!("method `{other}`"))),
    };
    let response = k8s::send(Request {
        method,
        path: path.into(),
        query: Vec::new(),
        body: None,
        content_type: None,
    })
    .await
    .map_err(|e| api(path, e))?;
    Ok(response.status.to_string())
}

async fn logs(ns: &str, pod: &str) -> Result<String, Error> {
    let log = k8s::logs(LogRequest {
        namespace: ns.into(),
        pod: pod.into(),
        container: None,
        follow: false,
        previous: false,
        tail_lines: None,
        since_seconds: None,
        timestamps: false,
        limit_bytes: None,
    })
    .await
    .map_err(|e| api("opening the log", e))?;
    let bytes = log.bytes.collect().await;
    log.done.await.map_err(|e| api("reading the log", e))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

async fn watch(ns: &str, timeout: &str, version: &str) -> Result<String, Error> {
    let w = k8s::watch(WatchRequest {
        path: format!("/api/v1/namespaces/{ns}/pods"),
        label_selector: None,
        field_selector: None,
        resource_version: (!version.is_empty()).then(|| version.into()),
        allow_bookmarks: false,
        timeout_seconds: timeout.parse().ok(),
    })
    .await
    .map_err(|e| api("opening the watch", e))?;
    let events = w.events.collect().await.len();
    let end = match w.end.await {
        WatchEnd::Closed => "closed".to_string(),
        WatchEnd::Expired(_) => "expired".to_string(),
        WatchEnd::Failed(e) => format!("failed({e:?})"),
    };
    Ok(format!("{end}:{events}"))
}

/// Reads `from` until `until` has been seen, keeping what was read.
async fn read_until(from: &mut wit_bindgen::StreamReader<u8>, out: &mut Vec<u8>, until: &[u8]) {
    while !out.windows(until.len()).any(|w| w == until) {
        let (result, chunk) = from.read(Vec::with_capacity(4096)).await;
        out.extend_from_slice(&chunk);
        if !matches!(result, wit_bindgen::StreamResult::Complete(_)) {
            return;
        }
    }
}

async fn exec(ns: &str, pod: &str, size: Option<TerminalSize>) -> Result<String, Error> {
    let tty = size.is_some();
    let script = if tty {
        // A terminal given no size yet is 0x0: busybox's `stty size` then
        // prints nothing on stdout (and exits 0). The size reaches the
        // terminal apart from stdin (the kubelet and containerd apply it),
        // so the program waits up to 5 s for one.
        concat!(
            r#"echo "before: $(stty size 2>/dev/null)"; read go; "#,
            r#"for i in $(seq 50); do s=$(stty size 2>/dev/null); [ -n "$s" ] && break; "#,
            r#"sleep 0.1; done; echo "after: $s""#
        )
    } else {
        r#"read line; echo "got $line"; exit 3"#
    };
    let (mut stdin, stdin_rx) = wit_stream::new::<u8>();
    let (mut resize, resize_rx) = if tty {
        let (tx, rx) = wit_stream::new::<TerminalSize>();
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let session = k8s::exec(
        KubeExec {
            namespace: ns.into(),
            pod: pod.into(),
            container: None,
            command: vec!["sh".into(), "-c".into(), script.into()],
            stdin: true,
            tty,
        },
        Some(stdin_rx),
        resize_rx,
    )
    .await
    .map_err(|e| api("starting the command", e))?;
    let mut stdout = session.stdout;
    let mut out = Vec::new();
    if let (Some(size), Some(resize)) = (size, resize.as_mut()) {
        // The first size is printed before the resize: the second is what
        // the resize made, seen by the program while it runs.
        read_until(&mut stdout, &mut out, b"\n").await;
        if resize.write_one(size).await.is_some() {
            return Err(Error::Internal("the resize stream was closed".into()));
        }
        stdin.write_all(b"go\n".to_vec()).await;
    } else {
        stdin.write_all(b"through the host\n".to_vec()).await;
    }
    // Stdin stays open until the program is done: whether its close
    // reaches a program on a terminal before its output is all read
    // depends on the streaming protocol's version on both ends.
    out.extend(stdout.collect().await);
    drop(stdin);
    drop(resize);
    if let Some(stderr) = session.stderr {
        drop(stderr);
    }
    let code = session
        .exit
        .await
        .map_err(|e| api("waiting for the exit", e))?;
    Ok(format!("exit={code} out={}", String::from_utf8_lossy(&out)))
}

async fn operation(id: &str) -> Result<String, Error> {
    let parts: Vec<&str> = id.splitn(4, ':').collect();
    match parts.as_slice() {
        ["raw", method, path] => raw(method, path).await,
        ["logs", ns, pod] => logs(ns, pod).await,
        ["watch", ns, timeout, version] => watch(ns, timeout, version).await,
        ["exec", ns, pod] => exec(ns, pod, None).await,
        ["resize", ns, pod, size] => {
            let (cols, rows) = size.split_once('x').ok_or_else(|| invalid(id))?;
            let size = TerminalSize {
                cols: cols.parse().map_err(|_| invalid(id))?,
                rows: rows.parse().map_err(|_| invalid(id))?,
            };
            exec(ns, pod, Some(size)).await
        }
        _ => Err(invalid(id)),
    }
}

impl Guest for V02Kube {
    fn info() -> KindInfo {
        KindInfo {
            kind: "v02-kube".into(),
            category: Category::Cluster,
            description: "Drives the 0.2.0 Kubernetes import; a test component.".into(),
            config_schema: "{}".into(),
        }
    }

    fn configure(_config: String) -> Result<(), Error> {
        Ok(())
    }

    fn capabilities() -> Result<RuntimeCapabilities, Error> {
        Ok(RuntimeCapabilities {
            isolation: IsolationClass::SharedKernel,
            exec: false,
            run: false,
            logs: false,
            trial: false,
            write_observation: false,
            egress_restriction: false,
            image_import: false,
            volume_snapshot: false,
            edge: false,
        })
    }

    async fn health_check() -> Result<(), Error> {
        raw("get", "/readyz").await.map(|_| ())
    }

    async fn capacity() -> Result<CapacityReport, Error> {
        unsupported("capacity")
    }

    async fn largest_fit_for(_bundle: String) -> Result<Option<Fit>, Error> {
        unsupported("largest-fit-for")
    }

    async fn in_use() -> Result<InUseReport, Error> {
        unsupported("in-use")
    }

    async fn apply(plan: BundlePlan) -> Result<BundleHandle, Error> {
        let id = plan.id.clone();
        let op = core::pin::pin!(operation(&id));
        let cancelled = core::pin::pin!(pando::runtime::call::cancelled());
        let location = match futures::future::select(op, cancelled).await {
            futures::future::Either::Left((r, _)) => r?,
            futures::future::Either::Right(_) => {
                return Err(Error::Cancelled(format!("operation `{id}`: cancelled")));
            }
        };
        Ok(BundleHandle {
            id: plan.id,
            location,
        })
    }

    async fn observe(_bundle: BundleRef) -> Result<ObservedBundle, Error> {
        unsupported("observe")
    }

    async fn stop(_bundle: BundleRef) -> Result<(), Error> {
        unsupported("stop")
    }

    async fn destroy(_bundle: BundleRef, _options: DestroyOptions) -> Result<(), Error> {
        unsupported("destroy")
    }

    async fn usage(_bundle: BundleRef) -> Result<BundleUsage, Error> {
        unsupported("usage")
    }

    async fn create_volume(_request: VolumeRequest) -> Result<VolumeHandle, Error> {
        unsupported("create-volume")
    }

    async fn destroy_volume(_volume: VolumeHandle) -> Result<(), Error> {
        unsupported("destroy-volume")
    }

    async fn snapshot_volume(_volume: VolumeHandle) -> Result<ByteStream, Error> {
        unsupported("snapshot-volume")
    }

    async fn restore_volume(
        _volume: VolumeHandle,
        _from: wit_bindgen::StreamReader<u8>,
    ) -> Result<(), Error> {
        unsupported("restore-volume")
    }

    async fn has_image(_image: String) -> Result<bool, Error> {
        unsupported("has-image")
    }

    async fn import_image(_from: wit_bindgen::StreamReader<u8>) -> Result<String, Error> {
        unsupported("import-image")
    }

    async fn logs(_workload: WorkloadRef, _options: LogOptions) -> Result<ByteStream, Error> {
        unsupported("logs")
    }

    async fn exec(
        _workload: WorkloadRef,
        _request: ExecRequest,
        _stdin: Option<wit_bindgen::StreamReader<u8>>,
        _resize: Option<wit_bindgen::StreamReader<TerminalSize>>,
    ) -> Result<ExecSession, Error> {
        unsupported("exec")
    }

    async fn run(_workload: WorkloadRef, _request: RunRequest) -> Result<ByteStream, Error> {
        unsupported("run")
    }

    async fn trial(_request: TrialRequest) -> Result<TrialResult, Error> {
        unsupported("trial")
    }

    fn upstream(_workload: WorkloadRef, _port: u16) -> Result<UpstreamAddress, Error> {
        unsupported("upstream")
    }

    async fn watch_bundles() -> Result<BundleWatch, Error> {
        unsupported("watch-bundles")
    }

    async fn apply_edge(_plan: EdgePlan) -> Result<(), Error> {
        unsupported("apply-edge")
    }

    async fn observe_edge(_name: String) -> Result<EdgeState, Error> {
        unsupported("observe-edge")
    }

    async fn remove_edge(_name: String) -> Result<(), Error> {
        unsupported("remove-edge")
    }

    async fn edges() -> Result<Vec<String>, Error> {
        unsupported("edges")
    }

    async fn edge_volumes() -> Result<Vec<VolumeHandle>, Error> {
        unsupported("edge-volumes")
    }
}

export!(V02Kube);
