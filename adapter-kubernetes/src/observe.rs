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
    Namespace, PersistentVolumeClaim, Pod, Service,
};
use pando_adapter_sdk::kube::{Api, ListParams};
use pando_adapter_sdk::types::{
    BundleRef, Error, ObservedBundle, ObservedVolume, ObservedWorkload, WorkloadPhase,
};

use crate::{names, objects, quantity};

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
        .labels(&objects::managed_selector())
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
            workloads.insert(name.to_owned(), workload(name, pod));
        }
    }
    observed.workloads = workloads.into_values().collect();
    observed.volumes = claims.items.iter().filter_map(volume).collect();
    Ok(observed)
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
    w.digest = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(objects::DIGEST_ANNOTATION))
        .cloned();
    w.reason = status.and_then(|s| s.reason.clone()).unwrap_or_default();
    let state = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == objects::CONTAINER_NAME))
        .and_then(|c| c.state.as_ref());
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
        if let Some(waiting) = &state.waiting
            && let Some(reason) = &waiting.reason
        {
            w.reason = reason.clone();
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
