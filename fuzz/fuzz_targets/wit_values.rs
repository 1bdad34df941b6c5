//! Values crossing the WIT boundary into the host, fed to the host-side
//! code that takes them (no wasm: the functions the imports call, reached
//! through `pando_host::fuzzing` where they are crate-private).
//!
//! Guest → host, through imports:
//! - `kubernetes.send`: method, path, query, body as a guest passes them,
//!   admitted as `send` does (body name, canonicalization, the grants of
//!   `deploy/grants/kubernetes.yaml`, the watch and streaming refusals, the
//!   body cap). An admitted request's URI, as the host builds it, is a
//!   valid HTTP URI whose path is exactly the checked path and whose query
//!   decodes to exactly the guest's pairs: a value cannot smuggle a key
//!   (`labelSelector=a&namespace=kube-system`) past the key check.
//! - `kubernetes.watch`: the query the host builds from the request's
//!   fields; an admitted watch is always the `watch` verb.
//! - `kubernetes.logs`/`exec`: namespace and pod strings, formatted into a
//!   path as the host does; an admitted one reaches exactly that pod's
//!   subresource (no `/` or `..` in a name can move it).
//! - `log.log`: message, keys and values are clipped to their limits on a
//!   character boundary, the longest prefix that fits.
//! - stderr (`wasi:cli`): whatever bytes in whatever chunks, the tail kept
//!   for a trap message is the last 8 KiB, read lossily.
//! - a `labelSelector` as the watch-fed cache reads it (`kubecache::Selector`).
//!
//! Guest → host, as results: the adapter's `error` as core and the CLI
//! show it, and `observe`/`watch-bundles`/`capacity`/`observe-edge` results
//! rendered by the CLI as text, JSON and YAML; the JSON and YAML read back
//! to the same values.
#![no_main]

use std::sync::LazyLock;

use arbitrary::{Arbitrary, Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use pando_fuzz::cli::output;
use pando_fuzz::{Req, SEGMENTS};
use pando_host::CallError;
use pando_host::fuzzing;
use pando_host::grants::Grants;
use pando_host::grants::check::{Checker, Decision};
use pando_host::grants::request::{ApiRequest, Method, Verb, parse};
use pando_host::types::{
    BundleEvent, CapacityReport, CommandFailure, EdgeState, Error as AdapterError, Fit,
    ObservedBundle, ObservedVolume, ObservedWorkload, Resources, WorkloadChange, WorkloadPhase,
};

static CHECKER: LazyLock<(Checker, u64)> = LazyLock::new(|| {
    let grants = Grants::from_text(
        "deploy/grants/kubernetes.yaml",
        include_str!("../../deploy/grants/kubernetes.yaml"),
    )
    .expect("the shipped grants load");
    let k = grants.kubernetes.expect("a kubernetes section");
    (Checker::new(&k), k.max_body_bytes)
});

fn text(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(if u.ratio(1, 2)? {
        (*u.choose(SEGMENTS)?).to_string()
    } else {
        String::arbitrary(u)?
    })
}

#[derive(Debug)]
enum Op {
    Send(Req, Option<Vec<u8>>),
    Watch(String, Vec<Option<String>>, bool, Option<u32>),
    PodStream(String, String, bool),
    Log(String, Vec<(String, String)>),
    Stderr(Vec<Vec<u8>>),
    GuestError(u8, String, i32),
    Observed(ObservedBundle),
    Event(BundleEvent),
    Capacity(CapacityReport),
    Edge(EdgeState),
    Selector(String, Vec<(String, String)>),
}

fn body(u: &mut Unstructured<'_>) -> Result<Option<Vec<u8>>> {
    Ok(match u.int_in_range(0..=3)? {
        0 => None,
        1 => Some(Vec::arbitrary(u)?),
        _ => {
            let name = text(u)?;
            let extra = if u.ratio(1, 4)? {
                format!(r#","metadata":{{"generateName":{:?}}}"#, text(u)?)
            } else {
                String::new()
            };
            Some(format!(r#"{{"metadata":{{"name":{name:?}}}{extra}}}"#).into_bytes())
        }
    })
}

fn phase(u: &mut Unstructured<'_>) -> Result<WorkloadPhase> {
    Ok(*u.choose(&[
        WorkloadPhase::Missing,
        WorkloadPhase::Pending,
        WorkloadPhase::Running,
        WorkloadPhase::Succeeded,
        WorkloadPhase::Failed,
        WorkloadPhase::Unknown,
    ])?)
}

fn workload(u: &mut Unstructured<'_>) -> Result<ObservedWorkload> {
    Ok(ObservedWorkload {
        name: String::arbitrary(u)?,
        phase: phase(u)?,
        digest: Option::arbitrary(u)?,
        exit_code: Option::arbitrary(u)?,
        reason: String::arbitrary(u)?,
        started_at_ms: Option::arbitrary(u)?,
        finished_at_ms: Option::arbitrary(u)?,
    })
}

fn resources(u: &mut Unstructured<'_>) -> Result<Resources> {
    Ok(Resources {
        cpu_millis: u.arbitrary()?,
        memory_bytes: u.arbitrary()?,
    })
}

impl<'a> Arbitrary<'a> for Op {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(match u.int_in_range(0..=10)? {
            10 => Op::Selector(String::arbitrary(u)?, Vec::arbitrary(u)?),
            0 => Op::Send(Req::arbitrary(u)?, body(u)?),
            1 => Op::Watch(
                pando_fuzz::path(u)?,
                vec![
                    Option::arbitrary(u)?,
                    Option::arbitrary(u)?,
                    Option::arbitrary(u)?,
                ],
                u.arbitrary()?,
                u.arbitrary()?,
            ),
            2 => Op::PodStream(text(u)?, text(u)?, u.arbitrary()?),
            3 => Op::Log(String::arbitrary(u)?, Vec::arbitrary(u)?),
            4 => Op::Stderr(Vec::arbitrary(u)?),
            5 => Op::GuestError(u.arbitrary()?, String::arbitrary(u)?, u.arbitrary()?),
            6 => {
                let n = u.int_in_range(0..=4)?;
                let workloads = (0..n).map(|_| workload(u)).collect::<Result<_>>()?;
                let m = u.int_in_range(0..=3)?;
                let volumes = (0..m)
                    .map(|_| {
                        Ok(ObservedVolume {
                            name: String::arbitrary(u)?,
                            ready: u.arbitrary()?,
                            size_bytes: u.arbitrary()?,
                        })
                    })
                    .collect::<Result<_>>()?;
                Op::Observed(ObservedBundle {
                    id: String::arbitrary(u)?,
                    exists: u.arbitrary()?,
                    workloads,
                    volumes,
                })
            }
            7 => Op::Event(if u.ratio(1, 8)? {
                BundleEvent::Watching
            } else {
                BundleEvent::Changed(WorkloadChange {
                    bundle: String::arbitrary(u)?,
                    workload: workload(u)?,
                    deleted: u.arbitrary()?,
                })
            }),
            8 => Op::Capacity(CapacityReport {
                total: resources(u)?,
                largest_fit: if u.arbitrary()? {
                    Some(Fit {
                        node: String::arbitrary(u)?,
                        free: resources(u)?,
                    })
                } else {
                    None
                },
                nodes: u.arbitrary()?,
            }),
            _ => Op::Edge(EdgeState {
                name: String::arbitrary(u)?,
                serving: u.arbitrary()?,
                ready_replicas: u.arbitrary()?,
                desired_replicas: u.arbitrary()?,
                address: Option::arbitrary(u)?,
                message: String::arbitrary(u)?,
                warnings: Vec::arbitrary(u)?,
            }),
        })
    }
}

/// The URI the host sends is the checked path and the guest's query,
/// nothing more.
fn check_uri(path: &str, query: &[(String, String)]) {
    let uri = fuzzing::request_uri(path, query);
    let req = http::Request::builder()
        .uri(&uri)
        .body(())
        .unwrap_or_else(|e| panic!("an admitted request makes no URI: {uri:?}: {e}"));
    assert_eq!(req.uri().path(), path, "{uri}");
    let got: Vec<(String, String)> =
        form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    assert_eq!(got, query, "{uri}");
}

/// `kubernetes.send`'s admission, in its order; whether it would send.
fn admit_send(req: &Req, body: Option<&[u8]>) -> bool {
    let (checker, max_body) = &*CHECKER;
    let name = fuzzing::body_name(body);
    if let Some(n) = &name {
        let v: serde_json::Value =
            serde_json::from_slice(body.unwrap_or_default()).expect("a body with a name is JSON");
        assert_eq!(v["metadata"]["name"].as_str(), Some(n.as_str()));
    }
    let Ok(parsed) = parse(req.method, &req.path, &req.query) else {
        return false;
    };
    if let ApiRequest::Resource { verb, target } = &parsed {
        if matches!(
            checker.check(*verb, target, name.as_deref()),
            Decision::Deny(_)
        ) {
            return false;
        }
        if *verb == Verb::Watch
            || matches!(
                target.subresource.as_deref(),
                Some("exec" | "attach" | "portforward" | "proxy")
            )
        {
            return false;
        }
    }
    if body.is_some_and(|b| b.len() as u64 > *max_body) {
        return false;
    }
    true
}

fn render<T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(
    v: &T,
    text: impl Fn(&T) -> String,
) {
    let _ = text(v);
    let json = output::json(v).expect("renders as JSON");
    let back: T = serde_json::from_str(&json).expect("the JSON reads back");
    assert_eq!(&back, v);
    let yaml = output::yaml(v).expect("renders as YAML");
    let back: T = pando_host::yaml::from_str(&yaml).expect("the YAML reads back");
    assert_eq!(&back, v);
}

/// Readable seeds: `S` and a request line (`req_from_line`; a body name
/// becomes a JSON body naming itself), `L`/`X` and `NAMESPACE POD` for a log
/// or an exec. Anything else is structured input.
fn from_text(data: &[u8]) -> Option<Op> {
    let (&kind, rest) = data.split_first()?;
    let line = String::from_utf8_lossy(rest);
    match kind {
        b'S' => {
            let (req, name) = pando_fuzz::req_from_line(&line)?;
            let body = name.map(|n| format!(r#"{{"metadata":{{"name":{n:?}}}}}"#).into_bytes());
            Some(Op::Send(req, body))
        }
        b'L' | b'X' => {
            let (ns, pod) = line.split_once(' ')?;
            Some(Op::PodStream(ns.into(), pod.into(), kind == b'X'))
        }
        _ => None,
    }
}

fuzz_target!(|data: &[u8]| {
    let op = match from_text(data) {
        Some(op) => op,
        None => match Op::arbitrary_take_rest(Unstructured::new(data)) {
            Ok(op) => op,
            Err(_) => return,
        },
    };
    match op {
        Op::Send(req, body) => {
            if admit_send(&req, body.as_deref()) {
                check_uri(&req.path, &req.query);
            }
        }
        Op::Watch(path, fields, allow_bookmarks, timeout_seconds) => {
            // As `KubeContext::watch` builds it.
            let mut q: Vec<(String, String)> = vec![("watch".into(), "true".into())];
            for (key, v) in ["labelSelector", "fieldSelector", "resourceVersion"]
                .iter()
                .zip(&fields)
            {
                if let Some(v) = v {
                    q.push(((*key).into(), v.clone()));
                }
            }
            if allow_bookmarks {
                q.push(("allowWatchBookmarks".into(), "true".into()));
            }
            if let Some(t) = timeout_seconds {
                q.push(("timeoutSeconds".into(), t.to_string()));
            }
            match parse(Method::Get, &path, &q) {
                Ok(ApiRequest::Resource { verb, .. }) => {
                    assert_eq!(verb, Verb::Watch);
                    check_uri(&path, &q);
                }
                Ok(ApiRequest::NonResource { .. }) => panic!("a watch of {path}"),
                Err(_) => {}
            }
        }
        Op::PodStream(namespace, pod, exec) => {
            let sub = if exec { "exec" } else { "log" };
            // As `admit_pod_stream` builds it.
            let path = format!("/api/v1/namespaces/{namespace}/pods/{pod}/{sub}");
            if let Ok(ApiRequest::Resource { verb, target }) = parse(Method::Get, &path, &[]) {
                assert_eq!(verb, Verb::Get);
                assert_eq!(target.namespace.as_deref(), Some(namespace.as_str()));
                assert_eq!(target.name.as_deref(), Some(pod.as_str()));
                assert_eq!(target.grant_spelling(), format!("pods/{sub}"));
            }
        }
        Op::Log(message, fields) => {
            let (max_message, max_fields, max_key, max_value) = fuzzing::LOG_LIMITS;
            assert!(max_fields > 0);
            let mut all = vec![(message, max_message)];
            for (k, v) in fields.into_iter().take(max_fields) {
                all.push((k, max_key));
                all.push((v, max_value));
            }
            for (s, max) in &all {
                let c = fuzzing::log_clip(s, *max);
                assert!(s.starts_with(c) && c.len() <= *max);
                if c.len() < s.len() {
                    let next = s[c.len()..].chars().next().map_or(0, char::len_utf8);
                    assert!(c.len() + next > *max, "clipped more than needed");
                }
            }
            // Tiny limits too: every boundary.
            if let Some((s, _)) = all.first() {
                for max in 0..s.len().min(8) {
                    let c = fuzzing::log_clip(s, max);
                    assert!(s.starts_with(c) && c.len() <= max);
                }
            }
        }
        Op::Stderr(chunks) => {
            let refs: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
            let tail = fuzzing::stderr_tail(&refs);
            let all: Vec<u8> = chunks.concat();
            let last = &all[all.len().saturating_sub(8 << 10)..];
            assert_eq!(tail, String::from_utf8_lossy(last).trim_end());
        }
        Op::GuestError(case, message, exit_code) => {
            let e = match case % 10 {
                0 => AdapterError::Invalid(message),
                1 => AdapterError::NotFound(message),
                2 => AdapterError::Conflict(message),
                3 => AdapterError::Unsupported(message),
                4 => AdapterError::Unavailable(message),
                5 => AdapterError::Denied(message),
                6 => AdapterError::Timeout(message),
                7 => AdapterError::Cancelled(message),
                8 => AdapterError::CommandFailed(CommandFailure {
                    exit_code,
                    stderr: message,
                }),
                _ => AdapterError::Internal(message),
            };
            let kind = e.kind();
            let shown = e.message();
            let call = CallError::Adapter(e);
            assert_eq!(call.kind(), kind);
            assert_eq!(call.to_string(), format!("{kind}: {shown}"));
            assert!(call.adapter_error().is_some());
        }
        Op::Observed(b) => render(&b, output::observed),
        Op::Event(e) => render(&e, output::event),
        Op::Capacity(c) => render(&c, output::capacity),
        Op::Edge(e) => render(&e, output::edge),
        // A guest's `labelSelector`, as the watch-fed cache reads it to
        // decide whether it may answer a list: parsing never panics, a
        // selector implies itself, and matching is a pure function.
        Op::Selector(text, labels) => {
            if let Some(sel) = pando_host::kubecache::Selector::parse(&text) {
                assert!(sel.implies(&sel), "{text:?} implies itself");
                let labels: std::collections::BTreeMap<String, String> =
                    labels.into_iter().collect();
                assert_eq!(sel.matches(&labels), sel.matches(&labels));
                // The store's own selector is what every answered list has.
                let store = pando_host::kubecache::Selector::parse(
                    "app.kubernetes.io/managed-by=pando",
                )
                .expect("the store's selector");
                if sel.implies(&store) {
                    assert!(
                        !sel.matches(&labels)
                            || labels.get("app.kubernetes.io/managed-by").map(String::as_str)
                                == Some("pando"),
                        "a list the cache answers selects only what the store holds"
                    );
                }
            }
        }
    }
});
