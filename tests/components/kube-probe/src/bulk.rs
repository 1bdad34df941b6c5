//! The operations of `apply` that are more than one request: watches
//! read to their end, reads and writes in bulk, and sessions held open,
//! each reporting what it saw as text for the host's tests and benches.

use std::collections::BTreeMap;

use pando_adapter_sdk::error;
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{ConfigMap, Pod};
use pando_adapter_sdk::kube::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use pando_adapter_sdk::kube::{Api, PostParams, WatchEnd, WatchEvent, WatchParams, WatchStream};
use pando_adapter_sdk::kubernetes::{self, ContentType, Method};
use pando_adapter_sdk::types::Error;

use crate::{raw_request, send_ok};

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
pub(crate) fn watch(arg: &str) -> Result<String, Error> {
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
pub(crate) fn watch_objects(arg: &str) -> Result<String, Error> {
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

/// `pod-reads:<n>:<keep|strip>:<ns>/<name>`: what decoding a pod costs the
/// guest with its `managedFields` and without (the `managed-fields` bench).
pub(crate) fn pod_reads(arg: &str) -> Result<String, Error> {
    let usage = "plan.id: pod-reads:<n>:<keep|strip>:<ns>/<name>";
    let mut parts = arg.splitn(3, ':');
    let (Some(n), Some(mode), Some(target)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(error::invalid(usage));
    };
    let n: u32 = n
        .parse()
        .map_err(|_| error::invalid(format!("plan.id: {n:?} is not a count")))?;
    let (ns, name) = target
        .split_once('/')
        .ok_or_else(|| error::invalid(usage))?;
    let mut request = raw_request(Method::Get, &format!("/api/v1/namespaces/{ns}/pods/{name}"));
    match mode {
        "keep" => request
            .query
            .push(("showManagedFields".into(), "true".into())),
        "strip" => {}
        other => return Err(error::invalid(format!("plan.id: no mode {other:?}"))),
    }
    let mut bytes = 0;
    for _ in 0..n {
        let response = send_ok(&request)?;
        let pod: Pod = serde_json::from_slice(&response.body)
            .map_err(|e| error::invalid(format!("the pod does not decode: {e}")))?;
        std::hint::black_box(&pod);
        bytes = response.body.len();
    }
    Ok(bytes.to_string())
}

/// `huge-body:<bytes>`: a body of that size, built once in the guest's
/// memory (no serialization copy), sent raw; the host's refusal reported
/// by variant, so a test can tell `too-large` from any other error.
pub(crate) fn huge_body(arg: &str) -> Result<String, Error> {
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
pub(crate) fn hold_watches(arg: &str) -> Result<String, Error> {
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
pub(crate) fn deny_flood(arg: &str) -> Result<String, Error> {
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
pub(crate) fn write_flood(arg: &str) -> Result<String, Error> {
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
pub(crate) fn hold_sessions(arg: &str) -> Result<String, Error> {
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
