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
//! | `pod-reads:<n>:<keep\|strip>:<ns>/<name>` | `n` raw `GET`s of pod `<ns>/<name>`, each decoded into a typed `Pod` as the SDK's typed reads do; `keep` asks for `managedFields` (`showManagedFields=true`), `strip` takes what the host gives | the last answer's body length in bytes |
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
use pando_adapter_sdk::kube::{Api, ExecParams, KubeError, ListParams, LogParams, PostParams};
use pando_adapter_sdk::kubernetes::{self, ContentType, Method, Request};
use pando_adapter_sdk::types::{
    BundleHandle, BundlePlan, BundleRef, Category, Error, ExecRequest, InputStream, IsolationClass,
    KindInfo, LogOptions, ObservedBundle, RuntimeCapabilities, WorkloadRef,
};
use pando_adapter_sdk::{Adapter, ExecSession, error, export_adapter};

mod bulk;
mod sdk;

use bulk::{
    deny_flood, hold_sessions, hold_watches, huge_body, pod_reads, watch, watch_objects,
    write_flood,
};

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
            let response = send_ok(&raw_request(method, path))?;
            Ok(response.status.to_string())
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
            let response = send_ok(&request)?;
            Ok(format!(
                "{}:{}",
                response.status,
                String::from_utf8_lossy(&response.body)
            ))
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
            let response = send_ok(&request)?;
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
            let response = send_ok(&request)?;
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
        "pod-reads" => pod_reads(arg),
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

/// Sends `request`: its answer when the status is 2xx, else the error the
/// answer carries.
pub(crate) fn send_ok(request: &Request) -> Result<kubernetes::Response, Error> {
    let response = kubernetes::send(request).map_err(KubeError::from)?;
    if (200..300).contains(&response.status) {
        Ok(response)
    } else {
        Err(KubeError::from_response(response.status, &response.headers, &response.body).into())
    }
}

pub(crate) fn raw_request(method: Method, path: &str) -> Request {
    Request {
        method,
        path: path.into(),
        query: Vec::new(),
        body: None,
        content_type: None,
    }
}

export_adapter!(KubeProbe);
