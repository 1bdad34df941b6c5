//! Volumes: a PersistentVolumeClaim per volume in the app's namespace, its
//! PersistentVolume patched to `Retain` once bound, so destroying the app
//! keeps the data unless the volumes are asked for too; and the
//! namespace the claims live in.

use std::collections::BTreeSet;

use pando_adapter_sdk::error::ErrorExt;
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{
    Namespace, PersistentVolume, PersistentVolumeClaim,
};
use pando_adapter_sdk::kube::{Api, DeleteParams, ListParams, Patch, PatchParams};
use pando_adapter_sdk::types::{BundlePlan, Error, VolumeHandle, VolumeRequest};
use serde_json::json;

use crate::app::{binding, objects, quota};
use crate::config::Config;
use crate::kit::{self, names, post};

/// Makes the app's namespace when it is missing, with the adapter's own
/// binding, the quota and the limit range in it ([`quota::set_up`]); a
/// namespace whose set-up fails is removed again. One that exists but is
/// not Pando's is a conflict: Pando never takes over what it did not make.
pub fn ensure_namespace(config: &Config, ns: &str, id: &str) -> Result<(), Error> {
    let api = Api::<Namespace>::all();
    let ctx = |e| Error::from(e).context(&format!("namespace `{ns}`"));
    match api.get_opt(ns).map_err(ctx)? {
        None => {
            api.create(&post(), &objects::namespace(ns, id)?)
                .map_err(ctx)?;
            quota::set_up(config, ns).inspect_err(|_| quota::abandon(ns))
        }
        Some(existing) => {
            check_owned(&existing, ns, id)?;
            if existing.metadata.deletion_timestamp.is_some() {
                return Err(Error::Unavailable(format!(
                    "namespace `{ns}` is being deleted; apply again once it is gone"
                )));
            }
            Ok(())
        }
    }
}

/// Namespace `ns` of app `id`, when it exists and is the app's own;
/// `conflict` when it exists and is not. Every call that writes or
/// deletes in an app's namespace asks this first: `pando-<id>` being
/// Pando's (the managed-by label) is not enough, since the edge's, the
/// canary's and a trial's are Pando's too; the namespace must name the
/// app (`pando.dev/app: <id>`), as the adapter labels the ones it makes.
pub fn owned_namespace(ns: &str, id: &str) -> Result<Option<Namespace>, Error> {
    let found = Api::<Namespace>::all()
        .get_opt(ns)
        .map_err(|e| Error::from(e).context(&format!("namespace `{ns}`")))?;
    if let Some(existing) = &found {
        check_owned(existing, ns, id)?;
    }
    Ok(found)
}

/// `conflict` unless `existing` carries Pando's label and app `id`'s.
fn check_owned(existing: &Namespace, ns: &str, id: &str) -> Result<(), Error> {
    let labels = existing.metadata.labels.clone().unwrap_or_default();
    if labels.get(kit::MANAGED_BY).map(String::as_str) != Some(kit::MANAGER) {
        return Err(Error::Conflict(format!(
            "namespace `{ns}` exists and is not Pando's (no label `{}: {}`): \
             rename the app, or remove the namespace",
            kit::MANAGED_BY,
            kit::MANAGER
        )));
    }
    match labels.get(kit::APP_LABEL) {
        Some(app) if app == id => Ok(()),
        other => Err(Error::Conflict(format!(
            "namespace `{ns}` is Pando's but not app `{id}`'s (its label `{}` is {}): Pando \
             made it for something else, and nothing of it is touched; rename the app",
            kit::APP_LABEL,
            other.map_or_else(|| "absent".to_owned(), |a| format!("`{a}`"))
        ))),
    }
}

/// Creates the plan's missing claims and retains the bound ones' volumes.
/// A claim is never replaced (its spec is immutable, and it holds data);
/// claims the plan no longer has are kept: a volume goes only by
/// `destroy-volume` or `destroy` without `keep-volumes`.
pub fn ensure_claims(config: &Config, ns: &str, plan: &BundlePlan) -> Result<(), Error> {
    let api = Api::<PersistentVolumeClaim>::namespaced(ns);
    let ctx = |e| Error::from(e).context(&format!("the claims of namespace `{ns}`"));
    let existing = api.list(&ListParams::default()).map_err(ctx)?;
    let mut have = BTreeSet::new();
    for claim in &existing.items {
        have.insert(claim.metadata.name.clone().unwrap_or_default());
        retain_bound(claim, "Retain")?;
    }
    for v in &plan.volumes {
        if !have.contains(&v.name) {
            let claim = objects::claim(config, &plan.id, &v.name, v.size_bytes)?;
            api.create(&post(), &claim).map_err(ctx)?;
        }
    }
    Ok(())
}

/// Sets the reclaim policy of a bound claim's volume to `policy`, when it
/// is not so already (a GET, and a PATCH only when needed).
fn retain_bound(claim: &PersistentVolumeClaim, policy: &str) -> Result<(), Error> {
    let Some(pv_name) = claim.spec.as_ref().and_then(|s| s.volume_name.as_deref()) else {
        return Ok(());
    };
    if pv_name.is_empty() {
        return Ok(());
    }
    let api = Api::<PersistentVolume>::all();
    let ctx = |e| Error::from(e).context(&format!("PersistentVolume `{pv_name}`"));
    let Some(pv) = api.get_opt(pv_name).map_err(ctx)? else {
        return Ok(());
    };
    let current = pv
        .spec
        .as_ref()
        .and_then(|s| s.persistent_volume_reclaim_policy.as_deref());
    if current != Some(policy) {
        let patch = json!({ "spec": { "persistentVolumeReclaimPolicy": policy } });
        api.patch(pv_name, &PatchParams::default(), &Patch::Merge(&patch))
            .map_err(ctx)?;
    }
    Ok(())
}

/// The handle of volume `name` of app `id`.
pub fn handle(id: &str, ns: &str, name: &str) -> VolumeHandle {
    VolumeHandle {
        bundle: id.into(),
        name: name.into(),
        location: format!("{ns}/{name}"),
    }
}

/// CreateVolume makes a claim in the app's namespace, which it makes as
/// Apply does when missing. A claim that exists already is the volume.
pub fn create_volume(config: &Config, req: &VolumeRequest) -> Result<VolumeHandle, Error> {
    let ns = names::app_namespace(&req.bundle)?;
    let claim = objects::claim(config, &req.bundle, &req.name, req.size_bytes)?;
    ensure_namespace(config, &ns, &req.bundle)?;
    let api = Api::<PersistentVolumeClaim>::namespaced(&ns);
    match api.create(&post(), &claim) {
        Ok(_) => {}
        Err(e) if e.is_conflict() => {}
        Err(e) => return Err(Error::from(e).context(&format!("claim `{ns}/{}`", req.name))),
    }
    Ok(handle(&req.bundle, &ns, &req.name))
}

/// DestroyVolume deletes a volume and its data: the volume's reclaim
/// policy goes back to `Delete` first, since deleting a retained volume's
/// claim would leave the disk behind it. A volume already gone is not an
/// error.
pub fn destroy_volume(volume: &VolumeHandle) -> Result<(), Error> {
    let ns = names::app_namespace(&volume.bundle)?;
    let name = objects::claim_name(&volume.name)?;
    if owned_namespace(&ns, &volume.bundle)?.is_none() {
        return Ok(());
    }
    let api = Api::<PersistentVolumeClaim>::namespaced(&ns);
    let ctx = |e| Error::from(e).context(&format!("claim `{ns}/{name}`"));
    // A namespace deleted meanwhile leaves no binding of the adapter's:
    // RBAC refuses, and there is no claim either.
    let found = match api.get_opt(name) {
        Err(e) if binding::namespace_gone(&ns, &e) => None,
        other => other.map_err(ctx)?,
    };
    let Some(claim) = found else {
        return Ok(());
    };
    retain_bound(&claim, "Delete")?;
    api.delete_opt(name, &DeleteParams::background())
        .map_err(ctx)?;
    Ok(())
}

/// The claims of namespace `ns`, as handles.
pub fn list_handles(id: &str, ns: &str) -> Result<Vec<VolumeHandle>, Error> {
    let api = Api::<PersistentVolumeClaim>::namespaced(ns);
    let claims = api
        .list(&ListParams::default())
        .map_err(|e| Error::from(e).context(&format!("the claims of namespace `{ns}`")))?;
    Ok(claims
        .items
        .iter()
        .filter_map(|c| c.metadata.name.as_deref())
        .map(|name| handle(id, ns, name))
        .collect())
}
