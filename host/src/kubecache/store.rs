//! One resource kept by a reflector (`kube-runtime`): a store fed by one
//! watch, and what the cache needs to know of its freshness.

use std::fmt::Debug;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;

use super::index::NamespaceIndex;

/// The annotation `kubectl apply` leaves: a copy of the object, dropped
/// from the store with `managedFields` to keep it small.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// How fresh a store is.
#[derive(Debug, Clone)]
struct Freshness {
    /// The watch is connected and the store holds a complete list: false
    /// from a watch error until the re-list that follows it is done.
    synced: bool,
    /// When the watch last delivered a change or a complete list.
    heard: Instant,
    /// The newest `resourceVersion` seen, when numeric.
    resource_version: u64,
}

/// A store of `K` and the task that feeds it.
pub(crate) struct Reflected<K: Resource<DynamicType = ()> + 'static> {
    store: Store<K>,
    index: Arc<RwLock<NamespaceIndex>>,
    freshness: Arc<Mutex<Freshness>>,
    task: JoinHandle<()>,
}

impl<K> Reflected<K>
where
    K: Resource<DynamicType = ()>
        + Clone
        + Debug
        + DeserializeOwned
        + Serialize
        + Send
        + Sync
        + 'static,
{
    /// Starts a reflector over every `K` in the cluster that `selector`
    /// selects, on the tokio runtime of the caller.
    pub(crate) fn start(client: kube::Client, selector: &str) -> Self {
        let (store, writer) = reflector::store();
        let freshness = Arc::new(Mutex::new(Freshness {
            synced: false,
            heard: Instant::now(),
            resource_version: 0,
        }));
        let api: Api<K> = Api::all(client);
        let config = watcher::Config::default().labels(selector);
        let stream = reflector::reflector(
            writer,
            watcher::watcher(api, config)
                .modify(strip)
                .default_backoff(),
        );
        let index = Arc::new(RwLock::new(NamespaceIndex::default()));
        let fresh = Arc::clone(&freshness);
        let indexed = Arc::clone(&index);
        let kind = K::kind(&());
        let task = tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                // The store has applied the event; the index follows it
                // before the store may be reported synced.
                if let Ok(event) = &event {
                    let Ok(mut index) = indexed.write() else {
                        return;
                    };
                    index.follow(event);
                }
                let Ok(mut f) = fresh.lock() else { return };
                match event {
                    Ok(Event::InitDone) => {
                        f.synced = true;
                        f.heard = Instant::now();
                        tracing::debug!(kind = %kind, "cache store listed");
                    }
                    Ok(Event::Init) => {}
                    Ok(Event::InitApply(obj)) => f.see(&obj),
                    Ok(Event::Apply(obj) | Event::Delete(obj)) => {
                        f.see(&obj);
                        f.heard = Instant::now();
                    }
                    Err(e) => {
                        // The store stays as it was, older by the minute:
                        // until the re-list, reads go to the API server.
                        f.synced = false;
                        tracing::warn!(kind = %kind, error = %e, "cache watch failed; reads go to the API server until it has listed again");
                    }
                }
            }
        });
        Reflected {
            store,
            index,
            freshness,
            task,
        }
    }

    /// The store and how long ago it last heard from the API server, when
    /// it may answer: synced.
    pub(crate) fn ready(&self) -> Option<(&Store<K>, Duration, u64)> {
        let f = self.freshness.lock().ok()?.clone();
        f.synced
            .then(|| (&self.store, f.heard.elapsed(), f.resource_version))
    }

    /// The objects of namespace `ns`, found through the index rather than
    /// by scanning the store; `None` if the index cannot be read (its
    /// feeding task panicked), and then the caller scans.
    pub(crate) fn in_namespace(&self, ns: &str) -> Option<Vec<Arc<K>>> {
        let names = self.index.read().ok()?.names(ns);
        Some(
            names
                .iter()
                .filter_map(|name| self.store.get(&ObjectRef::new(name).within(ns)))
                .collect(),
        )
    }

    /// How many objects the store holds.
    pub(crate) fn len(&self) -> usize {
        self.store.state().len()
    }
}

impl<K: Resource<DynamicType = ()> + 'static> Drop for Reflected<K> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Freshness {
    fn see<K: Resource>(&mut self, obj: &K) {
        if let Some(rv) = obj.meta().resource_version.as_deref()
            && let Ok(rv) = rv.parse::<u64>()
        {
            self.resource_version = self.resource_version.max(rv);
        }
    }
}

/// Drops what no reader of the cache needs and what makes objects large.
fn strip<K: Resource>(obj: &mut K) {
    let meta = obj.meta_mut();
    meta.managed_fields = None;
    if let Some(a) = meta.annotations.as_mut() {
        a.remove(LAST_APPLIED);
    }
}

/// Keys `obj` for sorting as the API server lists: namespace, then name.
pub(crate) fn list_key<K: ResourceExt>(obj: &K) -> (String, String) {
    (obj.namespace().unwrap_or_default(), obj.name_any())
}
