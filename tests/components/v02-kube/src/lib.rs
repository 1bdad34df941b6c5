//! A test adapter of `pando:runtime@0.2.0` (world `kubernetes-adapter`)
//! that drives the host's 0.2.0 Kubernetes import with the component
//! model's own streams, for the host's tests against the test cluster.
//! `apply` runs the operation its `plan.id` names; its handle's `location`
//! is what the operation saw; a cancelled call returns `cancelled` at
//! once (`call.cancelled`). `exec` runs the command in pod `workload` of
//! namespace `bundle` through the SDK's typed client, core's stdin and
//! sizes handed to the import and its session back. `logs` hands on the log of pod `workload` in
//! namespace `bundle` as the import opened it (its bytes never pass through
//! the probe). Every other call is the SDK's `unsupported`: the probe is
//! built on `pando-adapter-sdk-v02`, its raw Kubernetes import included.
//!
//! | `plan.id` | Operation | `location` |
//! |---|---|---|
//! | `raw:<method>:<path>` | `send` of `<method>` (`get`, `delete`) to `<path>`, no body | the status |
//! | `logs:<ns>:<pod>` | the pod's log, read to its end, then its `done` future | the log |
//! | `watch:<ns>:<timeout>:<version>` | a watch of pods in `<ns>` from `<version>` (empty: from now), read until the server closes it after `<timeout>` s, then its `end` future | `<end>:<events>`: `closed`, `expired` or `failed`, and how many events came |
//! | `exec:<ns>:<pod>` | `sh -c 'read line; echo "got $line"; exit 3'` with `through the host` written to its stdin stream | `exit=<code> out=<stdout>` |
//! | `typed:<ns>` | the SDK's typed client: a ConfigMap `typed` created, read, listed by label, patched by server-side apply, deleted, waited for until gone | `created=<name> read=<value> listed=<n> patched=<value> gone=<bool> missing=<bool>` |
//! | `watcher:<ns>` | the SDK's watcher of ConfigMaps: its list, then a map `followed` the probe creates | the events, comma-separated: `init`, `listed:<name>`…, `apply:followed` |
//! | `resize:<ns>:<pod>:<cols>x<rows>` | `echo "before: $(stty size)"; read go`, then `after: ` and the terminal's size once it has one (within 5 s), on a terminal: once the first line is read, the terminal is resized to `<cols>x<rows>` through the resize stream and a line written to stdin | `exit=<code> out=<stdout>` (the terminal's output: both sizes) |
//!
//! A Kubernetes error is the operation's error: a grant refusal is
//! `denied("<message> (missing grant: <rule>)")`, anything else
//! `unavailable` with the host's words.

use std::time::Duration;

use pando_adapter_sdk_v02::bindings::kube::wit_stream;
use pando_adapter_sdk_v02::kube::k8s_openapi::api::core::v1::{ConfigMap, Pod};
use pando_adapter_sdk_v02::kube::{
    Api, DeleteParams, ExecParams, ListParams, Patch, PatchParams, PostParams, ResourceExt,
    WatchParams, WatcherEvent, wait_for_deletion, watcher,
};
use pando_adapter_sdk_v02::kubernetes::{
    self as k8s, ApiError, ExecRequest as KubeExec, LogRequest, Method, Request, WatchEnd,
    WatchRequest,
};
use pando_adapter_sdk_v02::types::*;
use pando_adapter_sdk_v02::{Adapter, export_adapter, streams, time};

struct V02Kube;

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
async fn read_until(from: &mut StreamReader<u8>, out: &mut Vec<u8>, until: &[u8]) {
    while !out.windows(until.len()).any(|w| w == until) {
        let (result, chunk) = from.read(Vec::with_capacity(4096)).await;
        out.extend_from_slice(&chunk);
        if !matches!(result, StreamResult::Complete(_)) {
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

/// The SDK's typed client, each call through the host: a ConfigMap
/// created, read, listed, patched by server-side apply, deleted and waited
/// for.
async fn typed(ns: &str) -> Result<String, Error> {
    let maps = Api::<ConfigMap>::namespaced(ns);
    let object: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "typed", "labels": { "probe": "v02" } },
        "data": { "greeting": "hello" },
    }))
    .map_err(|e| Error::Internal(e.to_string()))?;
    let created = maps.create(&PostParams::default(), &object).await?;
    let read = maps.get("typed").await?;
    let listed = maps
        .list(&ListParams::default().labels("probe=v02"))
        .await?
        .items
        .len();
    let patch = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "data": { "greeting": "patched" },
    });
    let patched = maps
        .patch(
            "typed",
            &PatchParams::apply("v02-probe").force(),
            &Patch::Apply(&patch),
        )
        .await?;
    maps.delete("typed", &DeleteParams::background()).await?;
    let gone = wait_for_deletion(&maps, "typed", Duration::from_secs(10)).await?;
    let missing = maps.get_opt("typed").await?.is_none();
    let value = |m: &ConfigMap| {
        m.data
            .as_ref()
            .and_then(|d| d.get("greeting").cloned())
            .unwrap_or_default()
    };
    Ok(format!(
        "created={} read={} listed={listed} patched={} gone={gone} missing={missing}",
        created.name_any(),
        value(&read),
        value(&patched)
    ))
}

/// The SDK's watcher of ConfigMaps in `ns`: its list (`Init`, an
/// `InitApply` per map, `InitDone`), then a map the probe creates seen
/// as an `Apply`.
async fn follow(ns: &str) -> Result<String, Error> {
    let maps = Api::<ConfigMap>::namespaced(ns);
    let mut w = watcher(maps.clone(), WatchParams::default());
    let mut seen = Vec::new();
    loop {
        match w.next().await? {
            WatcherEvent::Init => seen.push("init".to_string()),
            WatcherEvent::InitApply(m) => seen.push(format!("listed:{}", m.name_any())),
            WatcherEvent::InitDone => break,
            other => return Err(Error::Internal(format!("before the list's end: {other:?}"))),
        }
    }
    let object: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "followed" },
    }))
    .map_err(|e| Error::Internal(e.to_string()))?;
    maps.create(&PostParams::default(), &object).await?;
    loop {
        if let WatcherEvent::Apply(m) = w.next().await?
            && m.name_any() == "followed"
        {
            seen.push("apply:followed".into());
            return Ok(seen.join(","));
        }
    }
}

async fn operation(id: &str) -> Result<String, Error> {
    let parts: Vec<&str> = id.splitn(4, ':').collect();
    match parts.as_slice() {
        ["raw", method, path] => raw(method, path).await,
        ["logs", ns, pod] => logs(ns, pod).await,
        ["watch", ns, timeout, version] => watch(ns, timeout, version).await,
        ["exec", ns, pod] => exec(ns, pod, None).await,
        ["typed", ns] => typed(ns).await,
        ["watcher", ns] => follow(ns).await,
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

impl Adapter for V02Kube {
    fn info() -> KindInfo {
        KindInfo {
            kind: "v02-kube".into(),
            category: Category::Cluster,
            description: "Drives the 0.2.0 Kubernetes import; a test component.".into(),
            config_schema: "{}".into(),
        }
    }

    fn configure(_config: &str) -> Result<Self, Error> {
        Ok(V02Kube)
    }

    async fn health_check(&self) -> Result<(), Error> {
        raw("get", "/readyz").await.map(|_| ())
    }

    async fn apply(&self, plan: BundlePlan) -> Result<BundleHandle, Error> {
        let id = plan.id.clone();
        let location = time::cancellable(operation(&id))
            .await
            .map_err(|_| Error::Cancelled(format!("operation `{id}`: cancelled")))??;
        Ok(BundleHandle {
            id: plan.id,
            location,
        })
    }

    /// The log of pod `workload` in namespace `bundle`, handed on as the
    /// Kubernetes import opened it.
    async fn logs(&self, workload: WorkloadRef, _options: LogOptions) -> Result<ByteStream, Error> {
        let log = k8s::logs(LogRequest {
            namespace: workload.bundle,
            pod: workload.workload,
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
        let done = log.done;
        Ok(streams::handed_on(log.bytes, async move {
            done.await.map_err(|e| api("reading the log", e))
        }))
    }

    /// Pod `workload` in namespace `bundle`: core's stdin and sizes handed
    /// to the import, and its session handed back, through the SDK's typed
    /// client.
    async fn exec(
        &self,
        workload: WorkloadRef,
        request: ExecRequest,
        stdin: Option<StreamReader<u8>>,
        resize: Option<StreamReader<TerminalSize>>,
    ) -> Result<ExecSession, Error> {
        let params = ExecParams {
            container: None,
            command: request.command,
            stdin: request.stdin,
            tty: request.tty,
        };
        let session = Api::<Pod>::namespaced(&workload.bundle)
            .exec(&workload.workload, &params, stdin, resize)
            .await?;
        Ok(ExecSession::from(session))
    }
}

export_adapter!(V02Kube);
