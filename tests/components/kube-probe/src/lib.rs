//! `pando-kube-probe`: the smallest adapter that imports
//! `pando:runtime/kubernetes@0.1.0`, and a driver of the SDK's typed
//! Kubernetes client for the host's tests against a real cluster. The
//! host's load tests load it without a Kubernetes grant and expect a load
//! error that says so.
//!
//! | Export | Behaviour |
//! |---|---|
//! | `health-check` | raw `GET /readyz`; a non-2xx answer is `unavailable` |
//! | `capabilities` | `logs` and `exec`; everything else false, shared-kernel |
//! | `observe(ref)` | `Api::<Namespace>::all().get_opt(ref.id)`: `exists` is whether namespace `ref.id` exists; no workloads, no volumes |
//! | `apply(plan)` | the operation `plan.id` names (below); `location` its result |
//! | `logs(ref, opts)` | `Api::<Pod>::namespaced(ref.bundle).logs(ref.workload)` with `opts`; the host's stream returned unchanged |
//! | `exec(ref, req)` | `Api::<Pod>::namespaced(ref.bundle).exec(ref.workload)`; the raw session returned as the SDK's `ExecSession` (resized first when `req` has a size) |
//! | everything else | the SDK's default, `unsupported` |
//!
//! `apply`'s operations, by `plan.id`:
//!
//! | `plan.id` | Operation | `location` on success |
//! |---|---|---|
//! | `read-ns:<ns>` | list pods in `<ns>` | the number of pods |
//! | `secrets:<ns>` | list secrets in `<ns>` | the number of secrets |
//! | `pv:<name>` | get PersistentVolume `<name>` | its name |
//! | `raw:<method>:<path>` | raw `send` of `<method>` (`get`, `post`, `put`, `patch`, `delete`) to `<path>` as given, no body; a non-2xx answer is an error | the status |
//! | `body:<method>:<type>:<path>` + newline + body | raw `send` of `<method>` to `<path>` with the rest of `plan.id` (after the first newline) as the body, sent as `<type>` (`json`, `merge`, `strategic`, `apply` (as field manager `kube-probe`, forced), `json-patch`); a non-2xx answer is an error | the status, `:`, the response body |
//! | `huge-body:<bytes>` | raw `POST` of a ConfigMap to `pando-probe` whose body is `<bytes>` bytes of JSON (one string value), built in place; the host's error, if any, is reported, not raised | `<status>` on an answer; `too-large:<message>` (or `error:<message>` for any other error) when the host refused it |
//! | `watch-objects:<ns>:<timeout>:<version>` | watch of pods in `<ns>` from `<version>` (`0`: the pods there now, as `ADDED` events) until the server closes it after `<timeout>` s | the events' pods as the guest was shown them, a JSON array |
//! | `watches:<n>:<ns>` | `n` raw watches of pods in `<ns>` opened and held at once, then dropped | `ok=<opened> failed=<refused> error=<the first refusal>` |
//! | `read:<path>`, `read:any:<path>` | raw `GET` of `<path>` (`?k=v&…` after it the query, unencoded; with `resourceVersion=0` for `any:`, which the host's cache may answer); a non-2xx answer is an error | `hit:` or `live:`, then the body as the guest was shown it |
//! | `create-ns:<name>` | create namespace `<name>` | its name |
//! | `flood:<n>` | `n` GETs of `/api/v1/namespaces/default` (stopping early on timeout or cancellation) | how many succeeded |
//! | `big-body:<bytes>` | create a ConfigMap (`generateName: big-body-`) in `pando-probe` with one data value of `<bytes>` bytes | its name |
//! | `dynamic:<ns>:<name>` | ConfigMap `<name>` created from JSON, patched, read and listed through `Api<DynamicObject>`, listed and read as metadata only (`sdk.rs`) | `kind=… greeting=… patched=… listed=… meta=… meta-rv=…` |
//! | `wait-deleted:<ns>:<name>:<seconds>` | `wait_for_deletion` of ConfigMap `<name>` | `deleted:<ms>` or `present:<ms>` |
//! | `watcher:<ns>:<version>:<until>` | the SDK's watcher of ConfigMaps in `<ns>` from `<version>` (empty: list first) until ConfigMap `<until>` is applied | its events: `init`, `init-apply:<name>`, `init-done`, `apply:<name>`, `delete:<name>` |
//! | anything else | `invalid` | |
//!
//! Failures are the SDK's mapping of the `KubeError` onto the contract's
//! error, its message the `KubeError`'s: a grant refusal is
//! `denied("<message> (missing grant: <rule>)")`.

use std::collections::BTreeMap;

use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, PersistentVolume, Pod, Secret,
};
use pando_adapter_sdk::kube::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use pando_adapter_sdk::kube::{
    Api, ExecParams, KubeError, ListParams, LogParams, PostParams, WatchEnd, WatchEvent,
    WatchParams, WatchStream,
};
use pando_adapter_sdk::kubernetes::{self, ContentType, Method, Request};
use pando_adapter_sdk::types::{
    BundleHandle, BundlePlan, BundleRef, Category, Error, ExecRequest, InputStream, IsolationClass,
    KindInfo, LogOptions, ObservedBundle, RuntimeCapabilities, WorkloadRef,
};
use pando_adapter_sdk::{Adapter, ExecSession, error, export_adapter};

mod sdk;

struct KubeProbe;

impl Adapter for KubeProbe {
    fn info() -> KindInfo {
        KindInfo {
            kind: "kube-probe".into(),
            category: Category::Cluster,
            description:
                "Probes the Kubernetes API through the SDK's typed client; a test component.".into(),
            config_schema: r#"{"type":"object","additionalProperties":false}"#.into(),
        }
    }

    fn configure(_config: &str) -> Result<Self, Error> {
        Ok(KubeProbe)
    }

    fn capabilities(&self) -> Result<RuntimeCapabilities, Error> {
        Ok(RuntimeCapabilities {
            isolation: IsolationClass::SharedKernel,
            exec: true,
            run: false,
            logs: true,
            trial: false,
            write_observation: false,
            egress_restriction: false,
            image_import: false,
            volume_snapshot: false,
            edge: false,
        })
    }

    fn health_check(&self) -> Result<(), Error> {
        let response = kubernetes::send(&raw_request(Method::Get, "/readyz"))
            .map_err(|e| Error::from(KubeError::from(e)))?;
        if (200..300).contains(&response.status) {
            Ok(())
        } else {
            Err(error::unavailable(format!(
                "the API server answered /readyz with {}",
                response.status
            )))
        }
    }

    fn observe(&self, bundle: BundleRef) -> Result<ObservedBundle, Error> {
        let exists = Api::<Namespace>::all().get_opt(&bundle.id)?.is_some();
        Ok(ObservedBundle {
            id: bundle.id,
            exists,
            workloads: Vec::new(),
            volumes: Vec::new(),
        })
    }

    fn apply(&self, plan: BundlePlan) -> Result<BundleHandle, Error> {
        let location = operation(&plan.id)?;
        Ok(BundleHandle {
            id: plan.id,
            location,
        })
    }

    fn logs(&self, workload: WorkloadRef, options: LogOptions) -> Result<InputStream, Error> {
        let pods = Api::<Pod>::namespaced(&workload.bundle);
        Ok(pods.logs(&workload.workload, &LogParams::from(&options))?)
    }

    fn exec(
        &self,
        workload: WorkloadRef,
        request: ExecRequest,
    ) -> Result<Box<dyn ExecSession>, Error> {
        let pods = Api::<Pod>::namespaced(&workload.bundle);
        let params = ExecParams {
            container: None,
            command: request.command,
            stdin: request.stdin,
            tty: request.tty,
        };
        let mut session = pods.exec(&workload.workload, &params)?;
        if let (true, Some(size)) = (request.tty, request.size) {
            ExecSession::resize(&mut session, size)?;
        }
        Ok(Box::new(session))
    }
}

/// The operation `id` names; its result for `location`.
fn operation(id: &str) -> Result<String, Error> {
    let (op, arg) = id
        .split_once(':')
        .ok_or_else(|| error::invalid(format!("plan.id: {id:?} names no operation")))?;
    match op {
        "read-ns" => {
            let pods = Api::<Pod>::namespaced(arg).list(&ListParams::default())?;
            Ok(pods.items.len().to_string())
        }
        "secrets" => {
            let secrets = Api::<Secret>::namespaced(arg).list(&ListParams::default())?;
            Ok(secrets.items.len().to_string())
        }
        "pv" => {
            let pv = Api::<PersistentVolume>::all().get(arg)?;
            Ok(pv.metadata.name.unwrap_or_default())
        }
        "pv-flood" => {
            let (n, name) = arg
                .split_once(':')
                .ok_or_else(|| error::invalid("plan.id: pv-flood:<n>:<name>"))?;
            let n: u32 = n
                .parse()
                .map_err(|_| error::invalid(format!("plan.id: {n:?} is not a count")))?;
            let pvs = Api::<PersistentVolume>::all();
            let mut answered = 0u32;
            for _ in 0..n {
                match pvs.get_opt(name) {
                    Ok(_) => answered += 1,
                    Err(e @ (KubeError::Timeout | KubeError::Cancelled)) => return Err(e.into()),
                    Err(_) => {}
                }
            }
            Ok(answered.to_string())
        }
        "raw" => {
            let (method, path) = arg
                .split_once(':')
                .ok_or_else(|| error::invalid("plan.id: raw:<method>:<path>"))?;
            let method = match method {
                "get" => Method::Get,
                "post" => Method::Post,
                "put" => Method::Put,
                "patch" => Method::Patch,
                "delete" => Method::Delete,
                other => return Err(error::invalid(format!("plan.id: no method {other:?}"))),
            };
            let response = kubernetes::send(&raw_request(method, path)).map_err(KubeError::from)?;
            if (200..300).contains(&response.status) {
                Ok(response.status.to_string())
            } else {
                Err(
                    KubeError::from_response(response.status, &response.headers, &response.body)
                        .into(),
                )
            }
        }
        // A hostile adapter's request: any method, path, content type and
        // body, exactly as given.
        "body" => {
            let (head, body) = arg
                .split_once('\n')
                .ok_or_else(|| error::invalid("plan.id: body:<method>:<type>:<path>\n<body>"))?;
            let mut parts = head.splitn(3, ':');
            let (Some(method), Some(kind), Some(path)) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(error::invalid("plan.id: body:<method>:<type>:<path>"));
            };
            let method = match method {
                "post" => Method::Post,
                "put" => Method::Put,
                "patch" => Method::Patch,
                other => return Err(error::invalid(format!("plan.id: no method {other:?}"))),
            };
            let content_type = match kind {
                "json" => ContentType::Json,
                "merge" => ContentType::MergePatch,
                "strategic" => ContentType::StrategicMergePatch,
                "apply" => ContentType::ApplyPatch,
                "json-patch" => ContentType::JsonPatch,
                other => return Err(error::invalid(format!("plan.id: no type {other:?}"))),
            };
            let mut request = raw_request(method, path);
            request.body = Some(body.as_bytes().to_vec());
            request.content_type = Some(content_type);
            if kind == "apply" {
                request
                    .query
                    .push(("fieldManager".into(), "kube-probe".into()));
                // Take fields from other managers: what the host checks is
                // the result, not whether the apply conflicts.
                request.query.push(("force".into(), "true".into()));
            }
            let response = kubernetes::send(&request).map_err(KubeError::from)?;
            if (200..300).contains(&response.status) {
                Ok(format!(
                    "{}:{}",
                    response.status,
                    String::from_utf8_lossy(&response.body)
                ))
            } else {
                Err(
                    KubeError::from_response(response.status, &response.headers, &response.body)
                        .into(),
                )
            }
        }
        // A GET whose answer is returned whole, as the guest was shown it:
        // `read:<path>` live, `read:any:<path>` at any resource version
        // (which the host's watch-fed cache may answer).
        "read" => {
            let (any, path) = match arg.strip_prefix("any:") {
                Some(path) => (true, path),
                None => (false, arg),
            };
            // `?k=v&k2=v2` after the path is the query, unencoded.
            let (path, query) = path.split_once('?').unwrap_or((path, ""));
            let mut request = raw_request(Method::Get, path);
            for pair in query.split('&').filter(|p| !p.is_empty()) {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                request.query.push((k.into(), v.into()));
            }
            if any {
                request.query.push(("resourceVersion".into(), "0".into()));
            }
            let response = kubernetes::send(&request).map_err(KubeError::from)?;
            if !(200..300).contains(&response.status) {
                return Err(KubeError::from_response(
                    response.status,
                    &response.headers,
                    &response.body,
                )
                .into());
            }
            let source = response
                .headers
                .iter()
                .find(|(k, _)| k == "pando-cache")
                .map_or("live", |(_, v)| v.as_str());
            Ok(format!(
                "{source}:{}",
                String::from_utf8_lossy(&response.body)
            ))
        }
        // A GET at any resource version, which the host's watch-fed cache
        // may answer: `<status>:hit` from the cache, `<status>:live` not.
        "any-version" => {
            let mut request = raw_request(Method::Get, arg);
            request.query.push(("resourceVersion".into(), "0".into()));
            let response = kubernetes::send(&request).map_err(KubeError::from)?;
            if !(200..300).contains(&response.status) {
                return Err(KubeError::from_response(
                    response.status,
                    &response.headers,
                    &response.body,
                )
                .into());
            }
            let source = response
                .headers
                .iter()
                .find(|(k, _)| k == "pando-cache")
                .map_or("live", |(_, v)| v.as_str());
            Ok(format!("{}:{source}", response.status))
        }
        "create-ns" => {
            let namespace = Namespace {
                metadata: ObjectMeta {
                    name: Some(arg.into()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            };
            let created = Api::<Namespace>::all().create(&PostParams::default(), &namespace)?;
            Ok(created.metadata.name.unwrap_or_default())
        }
        "flood" => {
            let n: u32 = arg
                .parse()
                .map_err(|_| error::invalid(format!("plan.id: {arg:?} is not a count")))?;
            let namespaces = Api::<Namespace>::all();
            let mut succeeded = 0u32;
            for _ in 0..n {
                match namespaces.get("default") {
                    Ok(_) => succeeded += 1,
                    Err(e @ (KubeError::Timeout | KubeError::Cancelled)) => return Err(e.into()),
                    Err(_) => {}
                }
            }
            Ok(succeeded.to_string())
        }
        "big-body" => {
            let bytes: usize = arg
                .parse()
                .map_err(|_| error::invalid(format!("plan.id: {arg:?} is not a size")))?;
            let config_map = ConfigMap {
                metadata: ObjectMeta {
                    generate_name: Some("big-body-".into()),
                    ..ObjectMeta::default()
                },
                data: Some(BTreeMap::from([("big".to_string(), "x".repeat(bytes))])),
                ..ConfigMap::default()
            };
            let created = Api::<ConfigMap>::namespaced("pando-probe")
                .create(&PostParams::default(), &config_map)?;
            Ok(created.metadata.name.unwrap_or_default())
        }
        "huge-body" => huge_body(arg),
        "write-flood" => write_flood(arg),
        "deny-flood" => deny_flood(arg),
        "watches" => hold_watches(arg),
        "sessions" => hold_sessions(arg),
        "watch" => watch(arg),
        "watch-objects" => watch_objects(arg),
        "dynamic" => sdk::dynamic(arg),
        "wait-deleted" => sdk::wait_deleted(arg),
        "watcher" => sdk::watch_until(arg),
        other => Err(error::invalid(format!("plan.id: no operation {other:?}"))),
    }
}

/// The pod watch `<namespace>:<timeout seconds>:<resource version>` names,
/// for the operation `op` (named in the error when `arg` is not that).
fn pod_watch(arg: &str, op: &str) -> Result<WatchStream<Pod>, Error> {
    let mut parts = arg.splitn(3, ':');
    let (Some(ns), Some(timeout), Some(rv)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(error::invalid(format!(
            "plan.id: {op}:<namespace>:<timeout>:<version>"
        )));
    };
    let timeout: u32 = timeout
        .parse()
        .map_err(|_| error::invalid(format!("plan.id: {timeout:?} is not a number of seconds")))?;
    let params = WatchParams {
        timeout_seconds: Some(timeout),
        ..WatchParams::default()
    };
    Ok(Api::<Pod>::namespaced(ns).watch(&params, rv)?)
}

/// `watch:<namespace>:<timeout seconds>:<resource version>`: watches pods in
/// the namespace from that version (empty: from now) until the watch ends,
/// and reports how: `closed:<events>:<last version>` when the server closed
/// it, `expired:<message>` on 410 Gone; a failure is an error.
fn watch(arg: &str) -> Result<String, Error> {
    let mut stream = pod_watch(arg, "watch")?;
    let mut events = 0u32;
    loop {
        match stream.next() {
            Ok(_) => events += 1,
            Err(WatchEnd::Closed) => {
                return Ok(format!(
                    "closed:{events}:{}",
                    stream.resource_version().unwrap_or("")
                ));
            }
            Err(WatchEnd::Expired(message)) => return Ok(format!("expired:{message}")),
            Err(WatchEnd::Failed(e)) => return Err(e.into()),
        }
    }
}

/// `watch-objects:<namespace>:<timeout seconds>:<resource version>`: as
/// `watch`, but reports the pods of the events as the guest was shown them,
/// a JSON array, so that a test sees what a watch delivers (the host's read
/// masks apply to watch events too).
fn watch_objects(arg: &str) -> Result<String, Error> {
    let mut stream = pod_watch(arg, "watch-objects")?;
    let mut pods = Vec::new();
    loop {
        match stream.next() {
            Ok(WatchEvent::Added(p) | WatchEvent::Modified(p) | WatchEvent::Deleted(p)) => {
                pods.push(p)
            }
            Ok(WatchEvent::Bookmark(_)) => {}
            Err(WatchEnd::Closed) => break,
            Err(WatchEnd::Expired(message)) => {
                return Err(error::invalid(format!("the watch expired: {message}")));
            }
            Err(WatchEnd::Failed(e)) => return Err(e.into()),
        }
    }
    serde_json::to_string(&pods)
        .map_err(|e| error::invalid(format!("the pods do not serialize: {e}")))
}

/// `huge-body:<bytes>`: a body of that size, built once in the guest's
/// memory (no serialization copy), sent raw; the host's refusal reported
/// by variant, so a test can tell `too-large` from any other error.
fn huge_body(arg: &str) -> Result<String, Error> {
    let bytes: usize = arg
        .parse()
        .map_err(|_| error::invalid(format!("plan.id: {arg:?} is not a size")))?;
    const HEAD: &[u8] = br#"{"metadata":{"name":"huge-body"},"data":{"big":""#;
    const TAIL: &[u8] = br#""}}"#;
    let fill = bytes.saturating_sub(HEAD.len() + TAIL.len());
    let mut body = Vec::with_capacity(HEAD.len() + fill + TAIL.len());
    body.extend_from_slice(HEAD);
    body.resize(HEAD.len() + fill, b'x');
    body.extend_from_slice(TAIL);
    let mut request = raw_request(Method::Post, "/api/v1/namespaces/pando-probe/configmaps");
    request.body = Some(body);
    request.content_type = Some(ContentType::Json);
    Ok(match kubernetes::send(&request) {
        Ok(response) => response.status.to_string(),
        Err(kubernetes::ApiError::TooLarge(m)) => format!("too-large:{m}"),
        Err(e) => format!("error:{e:?}"),
    })
}

/// `watches:<n>:<ns>`: `n` watches held at once; how many opened, how many
/// were refused, and the first refusal.
fn hold_watches(arg: &str) -> Result<String, Error> {
    let (n, ns) = arg
        .split_once(':')
        .ok_or_else(|| error::invalid("plan.id: watches:<n>:<namespace>"))?;
    let n: usize = n
        .parse()
        .map_err(|_| error::invalid(format!("plan.id: {n:?} is not a count")))?;
    let request = kubernetes::WatchRequest {
        path: format!("/api/v1/namespaces/{ns}/pods"),
        label_selector: None,
        field_selector: None,
        resource_version: None,
        allow_bookmarks: false,
        timeout_seconds: Some(60),
    };
    let mut held = Vec::new();
    let (mut failed, mut first) = (0, String::new());
    for _ in 0..n {
        match kubernetes::watch(&request) {
            Ok(w) => held.push(w),
            Err(e) => {
                failed += 1;
                if first.is_empty() {
                    first = format!("{e:?}");
                }
            }
        }
    }
    Ok(format!("ok={} failed={failed} error={first}", held.len()))
}

/// `deny-flood:<n>:<path-bytes>`: one GET of a path `path-bytes` long,
/// then `n` GETs the grants deny; how many of those were denied.
fn deny_flood(arg: &str) -> Result<String, Error> {
    let (n, path_bytes) = arg
        .split_once(':')
        .ok_or_else(|| error::invalid("plan.id: deny-flood:<n>:<path-bytes>"))?;
    let count = |s: &str| {
        s.parse::<usize>()
            .map_err(|_| error::invalid(format!("plan.id: {s:?} is not a count")))
    };
    let (n, path_bytes) = (count(n)?, count(path_bytes)?);
    let prefix = "/api/v1/namespaces/kube-system/secrets/";
    let long = format!(
        "{prefix}{}",
        "x".repeat(path_bytes.saturating_sub(prefix.len()))
    );
    let _ = kubernetes::send(&raw_request(Method::Get, &long));
    let denied_path = format!("{prefix}token");
    let mut denied = 0;
    for _ in 0..n {
        if let Err(kubernetes::ApiError::Denied(_)) =
            kubernetes::send(&raw_request(Method::Get, &denied_path))
        {
            denied += 1;
        }
    }
    Ok(denied.to_string())
}

/// `write-flood:<n>:<bytes>:<namespace>`: creates `n` ConfigMaps of
/// `bytes` each, going on past failures; `ok=<n> failed=<n> error=<first>`.
fn write_flood(arg: &str) -> Result<String, Error> {
    let mut parts = arg.splitn(3, ':');
    let (Some(n), Some(bytes), Some(ns)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(error::invalid(
            "plan.id: write-flood:<n>:<bytes>:<namespace>",
        ));
    };
    let count = |s: &str| {
        s.parse::<usize>()
            .map_err(|_| error::invalid(format!("plan.id: {s:?} is not a count")))
    };
    let (n, bytes) = (count(n)?, count(bytes)?);
    let api = Api::<ConfigMap>::namespaced(ns);
    let (mut ok, mut failed, mut first) = (0, 0, String::new());
    for _ in 0..n {
        let config_map = ConfigMap {
            metadata: ObjectMeta {
                generate_name: Some("flood-".into()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([("big".to_string(), "x".repeat(bytes))])),
            ..ConfigMap::default()
        };
        match api.create(&PostParams::default(), &config_map) {
            Ok(_) => ok += 1,
            Err(e) => {
                failed += 1;
                if first.is_empty() {
                    first = format!("{e:?}");
                }
            }
        }
    }
    Ok(format!("ok={ok} failed={failed} error={first}"))
}

/// `sessions:<logs|exec>:<n>:<namespace>/<pod>`: opens `n` followed logs or
/// `cat` exec sessions of the pod and holds them to the end of the call;
/// `ok=<n> failed=<n> error=<first>`.
fn hold_sessions(arg: &str) -> Result<String, Error> {
    let mut parts = arg.splitn(3, ':');
    let (Some(kind), Some(n), Some(target)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(error::invalid(
            "plan.id: sessions:<logs|exec>:<n>:<namespace>/<pod>",
        ));
    };
    let n: usize = n
        .parse()
        .map_err(|_| error::invalid(format!("plan.id: {n:?} is not a count")))?;
    let (namespace, pod) = target
        .split_once('/')
        .ok_or_else(|| error::invalid("plan.id: <namespace>/<pod>"))?;
    let mut logs = Vec::new();
    let mut sessions = Vec::new();
    let (mut failed, mut first) = (0, String::new());
    for _ in 0..n {
        let opened = match kind {
            "logs" => kubernetes::logs(&kubernetes::LogRequest {
                namespace: namespace.into(),
                pod: pod.into(),
                container: None,
                follow: true,
                previous: false,
                tail_lines: None,
                since_seconds: None,
                timestamps: false,
                limit_bytes: None,
            })
            .map(|s| logs.push(s)),
            "exec" => kubernetes::exec(&kubernetes::ExecRequest {
                namespace: namespace.into(),
                pod: pod.into(),
                container: None,
                command: vec!["cat".into()],
                stdin: true,
                tty: false,
            })
            .map(|s| sessions.push(s)),
            other => {
                return Err(error::invalid(format!(
                    "plan.id: no session kind {other:?}"
                )));
            }
        };
        if let Err(e) = opened {
            failed += 1;
            if first.is_empty() {
                first = format!("{e:?}");
            }
        }
    }
    Ok(format!(
        "ok={} failed={failed} error={first}",
        logs.len() + sessions.len()
    ))
}

fn raw_request(method: Method, path: &str) -> Request {
    Request {
        method,
        path: path.into(),
        query: Vec::new(),
        body: None,
        content_type: None,
    }
}

export_adapter!(KubeProbe);
