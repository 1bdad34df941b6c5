//! Stop, destroy, and what an app (and all of Pando's apps) use.

use std::collections::BTreeSet;

use pando_adapter_sdk::error::ErrorExt;
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, PersistentVolumeClaim, Pod, Secret, Service,
};
use pando_adapter_sdk::kube::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use pando_adapter_sdk::kube::k8s_openapi::{ListableResource, Metadata};
use pando_adapter_sdk::kube::{Api, DeleteParams, ListParams, NamespaceResourceScope, Resource};
use pando_adapter_sdk::types::{
    BundleRef, BundleUsage, DestroyOptions, Error, InUseReport, Resources, WorkloadUsage,
};
use serde::de::DeserializeOwned;

use crate::app::binding;
use crate::app::objects;
use crate::capacity::{self, quantity};
use crate::kit::names;
use crate::kit::pods::has_exited;
use crate::kit::{self};
use crate::volumes;

/// Stop removes the app's running (and pending) pods and keeps everything
/// else: Services, volumes, configuration, and any pod that has already
/// finished, whose log is how the last crash stays readable. A
/// stopped app is started by Apply creating new pods.
pub fn stop(bundle: &BundleRef) -> Result<(), Error> {
    let ns = names::app_namespace(&bundle.id)?;
    // Only in the app's own namespace: never another's pods (`conflict`).
    if volumes::owned_namespace(&ns, &bundle.id)?.is_none() {
        return Ok(());
    }
    let api = Api::<Pod>::namespaced(&ns);
    let ctx = |e| Error::from(e).context(&format!("stopping the pods of namespace `{ns}`"));
    let pods = match api.list(&ListParams::default().labels(&kit::managed_selector())) {
        Ok(pods) => pods,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(ctx(e)),
    };
    for pod in pods.items.iter().filter(|p| !has_exited(p)) {
        if let Some(name) = &pod.metadata.name {
            api.delete_opt(name, &DeleteParams::background())
                .map_err(ctx)?;
        }
    }
    Ok(())
}

/// Deletes every object of kind `K` in `ns` that Pando made.
fn delete_managed<K>(ns: &str) -> Result<(), Error>
where
    K: Resource<Scope = NamespaceResourceScope>
        + ListableResource
        + Metadata<Ty = ObjectMeta>
        + DeserializeOwned,
{
    let api = Api::<K>::namespaced(ns);
    let ctx = |e| Error::from(e).context(&format!("deleting the {} of `{ns}`", K::KIND));
    let list = api
        .list(&ListParams::default().labels(&kit::managed_selector()))
        .map_err(ctx)?;
    for item in &list.items {
        if let Some(name) = &item.metadata().name {
            api.delete_opt(name, &DeleteParams::background())
                .map_err(ctx)?;
        }
    }
    Ok(())
}

/// Destroy removes an app. With `keep_volumes` the pods, Services,
/// Secrets and ConfigMaps go, and the namespace stays with its claims and
/// its default-deny policy: a claim lives in a namespace. Without it, each
/// volume goes as `destroy-volume` removes one, then the namespace. An app
/// already gone is not an error; a namespace not the app's own is
/// `conflict`, and nothing is deleted.
pub fn destroy(bundle: &BundleRef, options: &DestroyOptions) -> Result<(), Error> {
    let ns = names::app_namespace(&bundle.id)?;
    let namespaces = Api::<Namespace>::all();
    let ctx = |e| Error::from(e).context(&format!("destroying namespace `{ns}`"));
    // A `pando-*` namespace the adapter did not make for this app (the
    // edge's, the canary's, another's) is `conflict`, and nothing goes.
    if volumes::owned_namespace(&ns, &bundle.id)?.is_none() {
        return Ok(());
    }
    if options.keep_volumes {
        delete_managed::<Pod>(&ns)?;
        delete_managed::<Service>(&ns)?;
        delete_managed::<Secret>(&ns)?;
        delete_managed::<ConfigMap>(&ns)?;
        return Ok(());
    }
    for volume in volumes::list_handles(&bundle.id, &ns)? {
        volumes::destroy_volume(&volume)?;
    }
    namespaces
        .delete_opt(&ns, &DeleteParams::background())
        .map_err(ctx)?;
    Ok(())
}

/// A pod's requests, summed over its containers.
fn requested(pod: &Pod) -> Resources {
    let mut total = Resources {
        cpu_millis: 0,
        memory_bytes: 0,
    };
    let containers = pod.spec.iter().flat_map(|s| s.containers.iter());
    for requests in containers.filter_map(|c| c.resources.as_ref()?.requests.as_ref()) {
        let r = capacity::resources_in(Some(requests));
        total.cpu_millis += r.cpu_millis;
        total.memory_bytes += r.memory_bytes;
    }
    total
}

/// The storage a claim requests.
fn claim_bytes(claim: &PersistentVolumeClaim) -> u64 {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .and_then(|q| quantity::parse(&q.0, 1))
        .unwrap_or(0)
}

/// What an app reserves: each workload's pod's requests (no metrics API
/// is read, so `used` is none), and its claims' storage.
pub fn usage(bundle: &BundleRef) -> Result<BundleUsage, Error> {
    let ns = names::app_namespace(&bundle.id)?;
    let ctx = |e| Error::from(e).context(&format!("the usage of namespace `{ns}`"));
    let managed = ListParams::default().labels(&kit::managed_selector());
    let pods = Api::<Pod>::namespaced(&ns).list(&managed).map_err(ctx)?;
    // Pods are read cluster-wide; claims only through the adapter's binding,
    // which an app that does not exist has none of: it uses nothing.
    let claims = match Api::<PersistentVolumeClaim>::namespaced(&ns).list(&ListParams::default()) {
        Err(e) if binding::namespace_gone(&ns, &e) => Default::default(),
        other => other.map_err(ctx)?,
    };
    Ok(BundleUsage {
        workloads: pods
            .items
            .iter()
            .filter(|p| !has_exited(p))
            .filter_map(|p| {
                let name = p.metadata.labels.as_ref()?.get(objects::WORKLOAD_LABEL)?;
                Some(WorkloadUsage {
                    name: name.clone(),
                    requested: requested(p),
                    used: None,
                })
            })
            .collect(),
        volume_bytes: claims.items.iter().map(claim_bytes).sum(),
    })
}

/// Everything Pando has on the cluster: the apps whose namespaces are
/// labelled as Pando's, their claims, and what their running pods request.
///
/// Every read is a list with Pando's label selector at any resource
/// version: the API server answers it from its own watch cache, and the
/// host's cache of Pando's objects (when the host runs one) answers it
/// without a request at all. The pods are one cluster-wide list (granted
/// for capacity accounting), so the cost is 2 + 1 claim list per app
/// namespace rather than 1 + 2 per app namespace.
pub fn in_use() -> Result<InUseReport, Error> {
    let managed = ListParams::default()
        .labels(&kit::managed_selector())
        .resource_version("0");
    let namespaces = Api::<Namespace>::all()
        .list(&managed)
        .map_err(|e| Error::from(e).context("listing Pando's namespaces"))?;
    let mut report = InUseReport {
        bundles: Vec::new(),
        volumes: Vec::new(),
        requested: Resources {
            cpu_millis: 0,
            memory_bytes: 0,
        },
    };
    let mut apps = BTreeSet::new();
    for ns in &namespaces.items {
        let (Some(name), Some(id)) = (
            ns.metadata.name.as_deref(),
            ns.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(kit::APP_LABEL)),
        ) else {
            continue;
        };
        if names::app_namespace(id).ok().as_deref() != Some(name) {
            continue;
        }
        report.bundles.push(id.clone());
        apps.insert(name);
        let claims = Api::<PersistentVolumeClaim>::namespaced(name)
            .list(&managed)
            .map_err(|e| Error::from(e).context(&format!("the claims of namespace `{name}`")))?;
        report.volumes.extend(
            claims
                .items
                .iter()
                .filter_map(|c| c.metadata.name.as_deref())
                .map(|claim| volumes::handle(id, name, claim)),
        );
    }
    // Pods outside the app namespaces (trials, the edge, the canary)
    // belong to no app and are not counted.
    let pods = Api::<Pod>::all()
        .list(&managed)
        .map_err(|e| Error::from(e).context("listing Pando's pods"))?;
    for pod in pods.items.iter().filter(|p| !has_exited(p)) {
        if !pod
            .metadata
            .namespace
            .as_deref()
            .is_some_and(|ns| apps.contains(ns))
        {
            continue;
        }
        let r = requested(pod);
        report.requested.cpu_millis += r.cpu_millis;
        report.requested.memory_bytes += r.memory_bytes;
    }
    Ok(report)
}
