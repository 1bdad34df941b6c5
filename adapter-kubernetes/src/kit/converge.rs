//! The compare-by-hash-then-write loop, written once (O-41: a satisfied
//! plan writes nothing).
//!
//! [`converge_one`] brings one named object to what is wanted,
//! [`converge_set`] every object of a kind that the adapter lists in a
//! namespace, deleting those nothing wants any more. What "the same" means
//! and how an object that differs is brought round (replaced in place, or
//! deleted and made again) is the kind's [`Way`]: [`Replace`] and
//! [`Recreate`] serve most kinds; pods, which are never changed in place
//! and must be gone before their successor takes the name, have their own.

use std::collections::BTreeMap;

use pando_adapter_sdk::kube::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use pando_adapter_sdk::kube::k8s_openapi::{Metadata, NamespaceResourceScope, Resource};
use pando_adapter_sdk::kube::{Api, DeleteParams, KubeError};
use pando_adapter_sdk::types::Error;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{post, stored_hash};

/// What a converge writes: a named object of a namespaced kind, sent and
/// read as JSON.
pub trait Object:
    Resource<Scope = NamespaceResourceScope> + Metadata<Ty = ObjectMeta> + Serialize + DeserializeOwned
{
}

impl<K> Object for K where
    K: Resource<Scope = NamespaceResourceScope>
        + Metadata<Ty = ObjectMeta>
        + Serialize
        + DeserializeOwned
{
}

/// How a converge brings objects of one kind to what is wanted.
pub trait Way<K: Object> {
    /// A refused or failed request, as the caller words it (which objects).
    fn fail(&self, e: KubeError) -> Error;

    /// Whether `have` is already what `want` asks for: by default, it was
    /// written with the same hash.
    fn same(&self, have: &K, want: &K) -> bool {
        same_hash(have, want)
    }

    /// `have` differs from `want`: writes `want` in its place and answers
    /// `None`, or deletes `have` and hands `want` back, to be created once
    /// every change is made and [`Way::settle`] has waited.
    fn change(&self, api: &Api<K>, have: &K, want: K) -> Result<Option<K>, Error>;

    /// `have` is wanted no more: deleted in the background.
    fn remove(&self, api: &Api<K>, have: &K) -> Result<(), Error> {
        api.delete_opt(name_of(have), &DeleteParams::background())
            .map_err(|e| self.fail(e))?;
        Ok(())
    }

    /// Runs after every change and removal, before the creates: where
    /// [`Way::change`] deleted, until what it deleted is gone.
    fn settle(&self, _api: &Api<K>) -> Result<(), Error> {
        Ok(())
    }
}

/// Whether two objects were written with the same hash.
pub fn same_hash<K: Object>(have: &K, want: &K) -> bool {
    stored_hash(have.metadata()) == stored_hash(want.metadata())
}

/// An object's name; empty for one without (the API server never returns
/// one so).
pub fn name_of<K: Object>(object: &K) -> &str {
    object.metadata().name.as_deref().unwrap_or_default()
}

/// Replaces `have` by `want` in place, on `have`'s resourceVersion.
pub fn replace<K: Object>(api: &Api<K>, have: &K, mut want: K) -> Result<(), KubeError> {
    want.metadata_mut().resource_version = have.metadata().resource_version.clone();
    api.replace(name_of(have), &post(), &want)?;
    Ok(())
}

/// Replaces an object that differs in place: the API server carries what
/// it allocated (a Service's cluster IP, node ports) over when the new spec
/// leaves it out. Its field is the context of every error.
pub struct Replace<F>(pub F);

impl<K: Object, F: Fn(KubeError) -> Error> Way<K> for Replace<F> {
    fn fail(&self, e: KubeError) -> Error {
        (self.0)(e)
    }

    fn change(&self, api: &Api<K>, have: &K, want: K) -> Result<Option<K>, Error> {
        replace(api, have, want).map_err(&self.0)?;
        Ok(None)
    }
}

/// Deletes an object that differs and creates it again at once, for what
/// cannot change in place (a headless Service's `clusterIP`, a
/// RoleBinding's `roleRef`).
pub struct Recreate<F> {
    /// The context of every error.
    pub fail: F,
    /// How the old object is deleted.
    pub delete: DeleteParams,
}

impl<K: Object, F: Fn(KubeError) -> Error> Way<K> for Recreate<F> {
    fn fail(&self, e: KubeError) -> Error {
        (self.fail)(e)
    }

    fn change(&self, api: &Api<K>, have: &K, want: K) -> Result<Option<K>, Error> {
        api.delete_opt(name_of(have), &self.delete)
            .map_err(&self.fail)?;
        api.create(&post(), &want).map_err(&self.fail)?;
        Ok(None)
    }
}

/// Brings the object `want` names to `want`, given what the cluster has of
/// that name (`have`): created when missing, left when the same, else
/// changed as `way` says. No write when it is as wanted.
pub fn converge_one<K: Object>(
    api: &Api<K>,
    have: Option<K>,
    want: K,
    way: &impl Way<K>,
) -> Result<(), Error> {
    let want = match have {
        None => want,
        Some(have) if way.same(&have, &want) => return Ok(()),
        Some(have) => match way.change(api, &have, want)? {
            None => return Ok(()),
            Some(want) => {
                way.settle(api)?;
                want
            }
        },
    };
    api.create(&post(), &want).map_err(|e| way.fail(e))?;
    Ok(())
}

/// Brings a set of objects of one kind to `want` (by name), given every one
/// of them the cluster has (`have`, listed by the caller): those nothing
/// wants are removed, those that differ changed, the missing created, in
/// the order of their names. No write when all are as wanted.
pub fn converge_set<K: Object>(
    api: &Api<K>,
    have: Vec<K>,
    mut want: BTreeMap<String, K>,
    way: &impl Way<K>,
) -> Result<(), Error> {
    let mut again = Vec::new();
    for have in have {
        let name = name_of(&have).to_owned();
        match want.remove(&name) {
            None => way.remove(api, &have)?,
            Some(w) if way.same(&have, &w) => {}
            Some(w) => {
                if let Some(w) = way.change(api, &have, w)? {
                    again.push((name, w));
                }
            }
        }
    }
    way.settle(api)?;
    want.extend(again);
    for w in want.values() {
        api.create(&post(), w).map_err(|e| way.fail(e))?;
    }
    Ok(())
}
