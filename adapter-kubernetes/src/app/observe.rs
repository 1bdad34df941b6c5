//! Observe: what exists of an app. It never remediates (design 05 §2.1): a
//! pod that exited is reported exited, and the reconciler decides.
//!
//! Requests, whatever the number of workloads: the namespace (1 GET), then
//! its pods, Services and claims (1 LIST each): 4, or 1 when the app has no
//! namespace. Each asks for any resource version (`resourceVersion=0`):
//! observe reports, so a copy a moment old will do, and the host's
//! watch-fed cache (or the API server's) answers without reading etcd. With
//! the host's cache on, an observe costs the API server nothing.

use std::collections::BTreeMap;

use pando_adapter_sdk::error::ErrorExt;
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{
    Event, Namespace, PersistentVolumeClaim, Pod, Service,
};
use pando_adapter_sdk::kube::{Api, ListParams};
use pando_adapter_sdk::types::{
    BundleRef, Error, ObservedBundle, ObservedVolume, ObservedWorkload, WorkloadPhase,
};

use crate::app::objects;
use crate::capacity::quantity;
use crate::kit::{self, names};

/// Reports the app's workloads and volumes as the cluster has them.
pub fn observe(bundle: &BundleRef) -> Result<ObservedBundle, Error> {
    let ns = names::app_namespace(&bundle.id)?;
    let ctx = |e| Error::from(e).context(&format!("observing namespace `{ns}`"));
    let mut observed = ObservedBundle {
        id: bundle.id.clone(),
        exists: false,
        workloads: Vec::new(),
        volumes: Vec::new(),
    };
    if Api::<Namespace>::all()
        .get_opt_any_version(&ns)
        .map_err(ctx)?
        .is_none()
    {
        return Ok(observed);
    }
    observed.exists = true;
    // Claims carry the managed label like everything the adapter makes; the
    // selector is what lets a cache of Pando's objects answer the list.
    let managed = ListParams::default()
        .labels(&kit::managed_selector())
        .resource_version("0");
    let pods = Api::<Pod>::namespaced(&ns).list(&managed).map_err(ctx)?;
    let services = Api::<Service>::namespaced(&ns)
        .list(&managed)
        .map_err(ctx)?;
    let claims = Api::<PersistentVolumeClaim>::namespaced(&ns)
        .list(&managed)
        .map_err(ctx)?;

    let mut workloads = BTreeMap::new();
    for svc in &services.items {
        if let Some(name) = workload_of(&svc.metadata.labels) {
            workloads.insert(name.to_owned(), missing(name));
        }
    }
    for pod in &pods.items {
        if let Some(name) = workload_of(&pod.metadata.labels) {
            let mut w = workload(name, pod);
            if sandbox_pending(pod)
                && let Some(pod_name) = &pod.metadata.name
                && let Some(why) = sandbox_warning(&ns, pod_name).map_err(ctx)?
            {
                w.reason = why;
            }
            workloads.insert(name.to_owned(), w);
        }
    }
    observed.workloads = workloads.into_values().collect();
    observed.volumes = claims.items.iter().filter_map(volume).collect();
    Ok(observed)
}

/// Whether the kubelet has yet to make the pod's sandbox (its network and
/// runtime), the one stage whose failure the pod's status does not put in
/// words.
fn sandbox_pending(pod: &Pod) -> bool {
    let Some(status) = &pod.status else {
        return false;
    };
    status.phase.as_deref() == Some("Pending")
        && status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "PodReadyToStartContainers" && c.status == "False")
}

/// The newest Warning event of pod `ns/name`, as `Reason: message`.
fn sandbox_warning(
    ns: &str,
    name: &str,
) -> Result<Option<String>, pando_adapter_sdk::kube::KubeError> {
    let events = Api::<Event>::namespaced(ns).list(
        &ListParams::default()
            .fields(&format!(
                "involvedObject.kind=Pod,involvedObject.name={name},type=Warning"
            ))
            .resource_version("0"),
    )?;
    Ok(newest_warning(&events.items))
}

/// Of `events`, the one seen last, as `Reason: message`.
fn newest_warning(events: &[Event]) -> Option<String> {
    let seen = |e: &Event| {
        e.last_timestamp
            .as_ref()
            .map(|t| t.0)
            .or(e.event_time.as_ref().map(|t| t.0))
            .or(e.metadata.creation_timestamp.as_ref().map(|t| t.0))
    };
    let newest = events.iter().max_by_key(|e| seen(e))?;
    let reason = newest.reason.as_deref().unwrap_or("Warning");
    Some(match newest.message.as_deref() {
        Some(m) if !m.is_empty() => format!("{reason}: {m}"),
        _ => reason.to_owned(),
    })
}

/// The workload label of an object.
fn workload_of(labels: &Option<BTreeMap<String, String>>) -> Option<&str> {
    labels
        .as_ref()?
        .get(objects::WORKLOAD_LABEL)
        .map(String::as_str)
}

/// A workload known from its Service, with no pod.
fn missing(name: &str) -> ObservedWorkload {
    ObservedWorkload {
        name: name.into(),
        phase: WorkloadPhase::Missing,
        digest: None,
        exit_code: None,
        reason: String::new(),
        started_at_ms: None,
        finished_at_ms: None,
    }
}

fn ms(
    t: &pando_adapter_sdk::kube::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) -> Option<u64> {
    u64::try_from(t.0.as_millisecond()).ok()
}

/// The digest in a container status's `imageID`: the part after `@` of
/// `repository@sha256:…` (the registry's manifest digest, as containerd and
/// CRI-O report a pulled image), or the whole of a bare `sha256:…` (an
/// image with no registry digest, by its own id). `None` when it is empty
/// or neither: the runtime has not said yet.
pub fn running_digest(image_id: &str) -> Option<String> {
    let digest = image_id.rsplit_once('@').map_or(image_id, |(_, d)| d);
    let (algorithm, hex) = digest.split_once(':')?;
    let plausible = !algorithm.is_empty()
        && algorithm.chars().all(|c| c.is_ascii_alphanumeric())
        && hex.len() >= 32
        && hex.chars().all(|c| c.is_ascii_hexdigit());
    plausible.then(|| digest.to_string())
}

/// A workload from its pod: phase, digest, and the container's state.
pub fn workload(name: &str, pod: &Pod) -> ObservedWorkload {
    let status = pod.status.as_ref();
    let phase = match status.and_then(|s| s.phase.as_deref()) {
        Some("Pending") => WorkloadPhase::Pending,
        Some("Running") => WorkloadPhase::Running,
        Some("Succeeded") => WorkloadPhase::Succeeded,
        Some("Failed") => WorkloadPhase::Failed,
        None => WorkloadPhase::Pending,
        Some(_) => WorkloadPhase::Unknown,
    };
    let mut w = missing(name);
    w.phase = phase;
    let container = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == objects::CONTAINER_NAME));
    // What the runtime says the container runs; until it says (the pod not
    // started yet, its image not pulled), what the plan asked for, as the
    // adapter recorded it.
    w.digest = container
        .and_then(|c| running_digest(&c.image_id))
        .or_else(|| {
            pod.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(objects::DIGEST_ANNOTATION))
                .cloned()
        });
    w.reason = status.and_then(|s| s.reason.clone()).unwrap_or_default();
    let state = container.and_then(|c| c.state.as_ref());
    if let Some(state) = state {
        if let Some(running) = &state.running {
            w.started_at_ms = running.started_at.as_ref().and_then(ms);
        }
        if let Some(done) = &state.terminated {
            w.exit_code = Some(done.exit_code);
            w.started_at_ms = done.started_at.as_ref().and_then(ms);
            w.finished_at_ms = done.finished_at.as_ref().and_then(ms);
            if let Some(reason) = &done.reason {
                w.reason = reason.clone();
            }
        }
        // The kubelet's message says what failed (`ErrImagePull: … 401
        // Unauthorized`, O-41); the reason alone does not.
        if let Some(waiting) = &state.waiting
            && let Some(reason) = &waiting.reason
        {
            w.reason = match waiting.message.as_deref() {
                Some(m) if !m.is_empty() => format!("{reason}: {m}"),
                _ => reason.clone(),
            };
        }
    }
    w
}

/// A volume from its claim: ready when bound; its size, the capacity once
/// bound, the request before.
fn volume(claim: &PersistentVolumeClaim) -> Option<ObservedVolume> {
    let name = claim.metadata.name.clone()?;
    let status = claim.status.as_ref();
    let ready = status.and_then(|s| s.phase.as_deref()) == Some("Bound");
    let size = status
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"))
        .or_else(|| {
            claim
                .spec
                .as_ref()
                .and_then(|s| s.resources.as_ref())
                .and_then(|r| r.requests.as_ref())
                .and_then(|r| r.get("storage"))
        })
        .and_then(|q| quantity::parse(&q.0, 1));
    Some(ObservedVolume {
        name,
        ready,
        size_bytes: size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": { "name": "web-0" },
            "status": status,
        }))
        .expect("a pod")
    }

    fn event(reason: &str, message: &str, last: &str) -> Event {
        serde_json::from_value(json!({
            "metadata": { "name": format!("e-{last}") },
            "involvedObject": { "kind": "Pod", "name": "web-0" },
            "reason": reason,
            "message": message,
            "lastTimestamp": last,
        }))
        .expect("an event")
    }

    #[test]
    fn a_waiting_container_is_reported_with_the_kubelets_words() {
        let p = pod(json!({
            "phase": "Pending",
            "containerStatuses": [{
                "name": objects::CONTAINER_NAME, "ready": false, "restartCount": 0,
                "image": "i", "imageID": "",
                "state": { "waiting": { "reason": "ErrImagePull",
                           "message": "failed to pull: 401 Unauthorized" } },
            }],
        }));
        assert_eq!(
            workload("web", &p).reason,
            "ErrImagePull: failed to pull: 401 Unauthorized"
        );
    }

    #[test]
    fn r114_only_a_pod_without_its_sandbox_costs_an_events_list() {
        let pending = |ready: &str| {
            pod(json!({ "phase": "Pending", "conditions": [
                { "type": "PodReadyToStartContainers", "status": ready },
            ]}))
        };
        assert!(sandbox_pending(&pending("False")));
        assert!(!sandbox_pending(&pending("True")));
        assert!(!sandbox_pending(&pod(
            json!({ "phase": "Running", "conditions": [
                { "type": "PodReadyToStartContainers", "status": "False" },
            ]})
        )));
        assert!(!sandbox_pending(&pod(json!({ "phase": "Pending" }))));
    }

    #[test]
    fn the_newest_warning_is_the_one_reported() {
        let events = [
            event("FailedMount", "old", "2026-01-01T00:00:01Z"),
            event(
                "FailedCreatePodSandBox",
                "no runtime for \"x\" is configured",
                "2026-01-01T00:00:09Z",
            ),
            event("FailedMount", "middle", "2026-01-01T00:00:05Z"),
        ];
        assert_eq!(
            newest_warning(&events).as_deref(),
            Some("FailedCreatePodSandBox: no runtime for \"x\" is configured")
        );
        assert_eq!(newest_warning(&[]), None);
    }

    #[test]
    fn the_digest_is_the_one_the_runtime_says_the_container_runs() {
        let d = "sha256:6ccc695e3688fe44f17c256c0af34f309c2c7383f642c0d2a772d2afccd3c068";
        assert_eq!(
            running_digest(&format!("198.18.0.1:5000/pando/busybox@{d}")).as_deref(),
            Some(d)
        );
        assert_eq!(running_digest(d).as_deref(), Some(d));
        assert_eq!(running_digest(""), None);
        assert_eq!(running_digest("busybox:1.36"), None, "a tag is no digest");
        let with = |image_id: &str| {
            let mut p = pod(json!({ "phase": "Running", "containerStatuses": [{
                "name": objects::CONTAINER_NAME, "ready": true, "restartCount": 0,
                "image": "i", "imageID": image_id,
            }] }));
            p.metadata.annotations = Some(
                [(
                    objects::DIGEST_ANNOTATION.to_string(),
                    "planned".to_string(),
                )]
                .into(),
            );
            workload("web", &p).digest
        };
        assert_eq!(with(&format!("r/x@{d}")).as_deref(), Some(d));
        assert_eq!(
            with("").as_deref(),
            Some("planned"),
            "the plan's, until the runtime says"
        );
    }
}
