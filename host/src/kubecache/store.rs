//! One resource kept by the cache: its objects as compact JSON, fed by one
//! watch (`kube-runtime`'s `watcher`, which lists, watches, and lists again
//! after a watch error), and what the cache needs to know of its freshness
//! and of the memory it holds.
//!
//! Objects are kept as the bytes an answer is made of, not as typed values:
//! a typed `Pod` is a tree of small allocations four times the size of its
//! JSON, and every answer would serialize it again. The JSON is compressed
//! (LZ4) against the first object the store saw, as a dictionary: objects of
//! one kind share most of their shape and many of their values, so each
//! costs what makes it differ (docs/benchmarks.md, `cache-memory`). A store
//! keyed by
//! namespace and name in order is also the order the API server lists in,
//! and a namespace's objects are one range of it.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;

/// The annotation `kubectl apply` leaves: a copy of the object, dropped
/// with `managedFields` to keep objects small.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What an entry costs beyond its bytes: the map's share of a node, the
/// boxes' headers, the allocator's rounding and what it keeps of the freed
/// typed copy (`pando-bench cache-memory` measured 689 B resident against
/// 411 B counted with 96 here: docs/benchmarks.md).
const ENTRY_OVERHEAD: u64 = 380;

/// How long a store over the memory budget waits before it lists again.
pub(crate) const RETRY_OVER_BUDGET: Duration = Duration::from_secs(60);

/// Namespace (empty for cluster-scoped objects), then name.
type Key = (Box<str>, Box<str>);

/// One object as the cache keeps it.
#[derive(Debug)]
pub(crate) struct Entry {
    /// The object, stripped, as the API server would send it.
    /// (LZ4 with its size in front, against the store's dictionary.)
    packed: Box<[u8]>,
    /// Its labels, for selectors.
    pub(crate) labels: Box<[(Box<str>, Box<str>)]>,
}

impl Entry {
    fn cost(&self, key: &Key) -> u64 {
        let labels: usize = self
            .labels
            .iter()
            .map(|(k, v)| k.len() + v.len() + 32)
            .sum();
        (self.packed.len() + labels + key.0.len() + key.1.len()) as u64 + ENTRY_OVERHEAD
    }
}

/// The bytes every store of one cache may hold together.
#[derive(Debug)]
pub(crate) struct Budget {
    pub(crate) max: u64,
    pub(crate) held: AtomicU64,
}

impl Budget {
    pub(crate) fn new(max: u64) -> Self {
        Budget {
            max,
            held: AtomicU64::new(0),
        }
    }

    fn take(&self, bytes: u64) -> bool {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes).filter(|n| *n <= self.max)
            })
            .is_ok()
    }

    fn give(&self, bytes: u64) {
        // Never below zero, whatever the order of takes and gives.
        let _ = self
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                Some(held.saturating_sub(bytes))
            });
    }
}

/// A store's state, behind one lock.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) objects: BTreeMap<Key, Entry>,
    /// The list under way after `Init`, swapped in at `InitDone` so that
    /// objects deleted while the watch was down go with the old list.
    relisting: Option<(BTreeMap<Key, Entry>, u64)>,
    /// Bytes `objects` costs.
    bytes: u64,
    /// The watch is connected and `objects` is a complete list: false from
    /// a watch error until the re-list after it is done.
    synced: bool,
    /// The store outgrew the budget and was emptied; it lists again after
    /// [`RETRY_OVER_BUDGET`].
    pub(crate) over_budget: bool,
    /// When the watch last delivered a change or a complete list.
    pub(crate) heard: Instant,
    /// The newest `resourceVersion` seen, when numeric.
    pub(crate) resource_version: u64,
    /// What entries are compressed against: the JSON of the first object
    /// the store encoded, kept for its lifetime.
    dict: Option<Arc<[u8]>>,
}

impl State {
    fn empty() -> Self {
        State {
            objects: BTreeMap::new(),
            relisting: None,
            bytes: 0,
            synced: false,
            over_budget: false,
            heard: Instant::now(),
            resource_version: 0,
            dict: None,
        }
    }

    /// The JSON of `entry`; `None` only if its bytes are corrupt, and the
    /// read then goes to the API server.
    pub(crate) fn json(&self, entry: &Entry) -> Option<Vec<u8>> {
        let dict = self.dict.as_deref().unwrap_or(&[]);
        lz4_flex::block::decompress_size_prepended_with_dict(&entry.packed, dict).ok()
    }

    /// Objects held.
    pub(crate) fn len(&self) -> usize {
        self.objects.len()
    }

    /// The entries of namespace `ns`, in name order.
    pub(crate) fn in_namespace<'a>(&'a self, ns: &'a str) -> impl Iterator<Item = &'a Entry> + 'a {
        let from: Key = (ns.into(), "".into());
        self.objects
            .range((Bound::Included(from), Bound::Unbounded))
            .take_while(move |((n, _), _)| &**n == ns)
            .map(|(_, e)| e)
    }

    /// The entry `ns`/`name` (`ns` empty for cluster-scoped objects).
    pub(crate) fn get(&self, ns: &str, name: &str) -> Option<&Entry> {
        self.objects.get(&(Box::from(ns), Box::from(name)))
    }

    /// Every entry, in list order.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Entry> {
        self.objects.values()
    }
}

/// What a store reports of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoreStatus {
    /// The kind kept: `Pod`, `Service` …
    pub kind: String,
    /// Objects held.
    pub objects: usize,
    /// Bytes they cost, as counted against the budget.
    pub bytes: u64,
    /// Whether it answers reads: listed, connected, within the budget.
    pub synced: bool,
    /// Whether it outgrew the cache's budget and answers nothing until a
    /// list that fits.
    pub over_budget: bool,
    /// Milliseconds since it last heard from the API server.
    pub age_ms: u64,
}

/// A store of one kind and the task that feeds it.
pub(crate) struct Reflected {
    kind: &'static str,
    state: Arc<RwLock<State>>,
    task: JoinHandle<()>,
}

impl Reflected {
    /// Starts a watch over every `K` in the cluster that `selector`
    /// selects, on the tokio runtime of the caller, holding its objects
    /// within `budget`.
    pub(crate) fn start<K>(client: kube::Client, selector: &str, budget: Arc<Budget>) -> Self
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
        let state = Arc::new(RwLock::new(State::empty()));
        let kind: &'static str = match K::kind(&()) {
            std::borrow::Cow::Borrowed(k) => k,
            std::borrow::Cow::Owned(_) => "object",
        };
        let api: Api<K> = Api::all(client);
        let config = watcher::Config::default().labels(selector);
        let fed = Arc::clone(&state);
        let task = tokio::spawn(async move {
            loop {
                let stream = watcher::watcher(api.clone(), config.clone())
                    .modify(strip)
                    .default_backoff();
                let mut stream = std::pin::pin!(stream);
                while let Some(event) = stream.next().await {
                    let Ok(mut state) = fed.write() else { return };
                    if !state.follow(kind, &budget, event) {
                        break;
                    }
                }
                // Over the budget: the watch is dropped (it costs the API
                // server nothing while the store is empty) and the store lists
                // again later, when the cluster may hold less.
                tokio::time::sleep(RETRY_OVER_BUDGET).await;
                if let Ok(mut state) = fed.write() {
                    state.over_budget = false;
                }
            }
        });
        Reflected { kind, state, task }
    }

    /// The store's state, when it may answer: synced.
    pub(crate) fn ready(&self) -> Option<RwLockReadGuard<'_, State>> {
        let state = self.state.read().ok()?;
        state.synced.then_some(state)
    }

    /// How many objects the store holds.
    pub(crate) fn len(&self) -> usize {
        self.state.read().map_or(0, |s| s.len())
    }

    /// What it reports of itself.
    pub(crate) fn status(&self) -> StoreStatus {
        let (objects, bytes, synced, over_budget, age) = match self.state.read() {
            Ok(s) => (s.len(), s.bytes, s.synced, s.over_budget, s.heard.elapsed()),
            Err(_) => (0, 0, false, false, Duration::ZERO),
        };
        StoreStatus {
            kind: self.kind.to_string(),
            objects,
            bytes,
            synced,
            over_budget,
            age_ms: u64::try_from(age.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

impl Drop for Reflected {
    fn drop(&mut self) {
        self.task.abort();
        if let Ok(mut state) = self.state.write() {
            state.objects.clear();
            state.relisting = None;
        }
    }
}

/// Puts `entry` (which cost `cost` of the budget) into `list`, counted in
/// `bytes`; what the entry it replaces cost goes back to the budget.
fn put(
    list: &mut BTreeMap<Key, Entry>,
    bytes: &mut u64,
    key: Key,
    entry: Entry,
    cost: u64,
    budget: &Budget,
) {
    *bytes += cost;
    if let Some(old) = list.insert(key.clone(), entry) {
        let freed = old.cost(&key);
        *bytes -= freed;
        budget.give(freed);
    }
}

impl State {
    /// Applies one watcher event within `budget`; false when the store
    /// outgrew it and was emptied (the watch should stop).
    pub(crate) fn follow<K: Resource + Serialize>(
        &mut self,
        kind: &str,
        budget: &Budget,
        event: Result<Event<K>, watcher::Error>,
    ) -> bool {
        match event {
            Ok(Event::Init) => {
                if let Some((_, bytes)) = self.relisting.take() {
                    budget.give(bytes);
                }
                self.relisting = Some((BTreeMap::new(), 0));
                true
            }
            Ok(Event::InitApply(obj)) => self.relisted(kind, budget, &obj),
            Ok(Event::InitDone) => {
                self.listed(kind, budget);
                true
            }
            Ok(Event::Apply(obj)) => self.applied(kind, budget, &obj),
            Ok(Event::Delete(obj)) => {
                self.deleted(budget, &obj);
                true
            }
            Err(e) => {
                // The store stays as it was, older by the minute: until the
                // re-list, reads go to the API server.
                self.synced = false;
                tracing::warn!(kind, error = %e, "cache watch failed; reads go to the API server until it has listed again");
                true
            }
        }
    }

    /// An object of a re-list, into the list that replaces the store once
    /// it is complete.
    fn relisted<K: Resource + Serialize>(&mut self, kind: &str, budget: &Budget, obj: &K) -> bool {
        self.see(obj);
        let Some((key, entry)) = self.encode(obj) else {
            return true;
        };
        let cost = entry.cost(&key);
        if !budget.take(cost) {
            return self.over(kind, budget);
        }
        match self.relisting.as_mut() {
            Some((list, bytes)) => put(list, bytes, key, entry, cost, budget),
            None => budget.give(cost),
        }
        true
    }

    /// A re-list is complete: its list becomes the store.
    fn listed(&mut self, kind: &str, budget: &Budget) {
        if let Some((list, bytes)) = self.relisting.take() {
            // The old store's bytes go back; the list's were taken as it came.
            budget.give(self.bytes);
            self.objects = list;
            self.bytes = bytes;
        }
        self.synced = true;
        self.heard = Instant::now();
        tracing::debug!(
            kind,
            objects = self.objects.len(),
            bytes = self.bytes,
            "cache store listed"
        );
    }

    /// An object created or changed.
    fn applied<K: Resource + Serialize>(&mut self, kind: &str, budget: &Budget, obj: &K) -> bool {
        self.see(obj);
        self.heard = Instant::now();
        let Some((key, entry)) = self.encode(obj) else {
            return true;
        };
        let cost = entry.cost(&key);
        if !budget.take(cost) {
            return self.over(kind, budget);
        }
        put(&mut self.objects, &mut self.bytes, key, entry, cost, budget);
        true
    }

    /// An object deleted.
    fn deleted<K: Resource>(&mut self, budget: &Budget, obj: &K) {
        self.see(obj);
        self.heard = Instant::now();
        let meta = obj.meta();
        let key: Key = (
            meta.namespace.as_deref().unwrap_or("").into(),
            meta.name.as_deref().unwrap_or("").into(),
        );
        if let Some(old) = self.objects.remove(&key) {
            let freed = old.cost(&key);
            self.bytes -= freed;
            budget.give(freed);
        }
    }

    /// Empties the store over the budget; false, to stop its watch.
    fn over(&mut self, kind: &str, budget: &Budget) -> bool {
        let held = self.bytes + self.relisting.as_ref().map_or(0, |(_, b)| *b);
        budget.give(held);
        self.objects.clear();
        self.relisting = None;
        self.bytes = 0;
        self.synced = false;
        self.over_budget = true;
        tracing::warn!(
            kind,
            max_bytes = budget.max,
            retry_s = RETRY_OVER_BUDGET.as_secs(),
            "the watch-fed cache is over its memory budget (`CacheOptions::max_bytes`); this store \
             is emptied and its reads go to the API server until it lists again within the budget: \
             raise the budget, or narrow the cache's label selector"
        );
        false
    }

    fn see<K: Resource>(&mut self, obj: &K) {
        if let Some(rv) = obj.meta().resource_version.as_deref()
            && let Ok(rv) = rv.parse::<u64>()
        {
            self.resource_version = self.resource_version.max(rv);
        }
    }
}

impl State {
    /// The entry for `obj`, keyed by namespace and name; `None` if it
    /// cannot be serialized (never for objects read from the API server).
    fn encode<K: Resource + Serialize>(&mut self, obj: &K) -> Option<(Key, Entry)> {
        let meta = obj.meta();
        let key: Key = (
            meta.namespace.as_deref().unwrap_or("").into(),
            meta.name.as_deref()?.into(),
        );
        let labels = meta
            .labels
            .iter()
            .flatten()
            .map(|(k, v)| (k.as_str().into(), v.as_str().into()))
            .collect();
        let json = serde_json::to_vec(obj).ok()?;
        let dict = self.dict.get_or_insert_with(|| Arc::from(json.as_slice()));
        let packed =
            lz4_flex::block::compress_prepend_size_with_dict(&json, dict).into_boxed_slice();
        Some((key, Entry { packed, labels }))
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

/// A store filled from a list, with no watch: what the bench measures the
/// resident cost of objects held with (`pando-bench cache-memory`).
#[doc(hidden)]
pub struct Filled {
    state: State,
    budget: Budget,
}

impl Filled {
    /// A store holding `objects` (stripped as the watch strips them), as far
    /// as `max_bytes` allows.
    pub fn from_list<K: Resource + Serialize>(
        objects: impl IntoIterator<Item = K>,
        max_bytes: u64,
    ) -> Self {
        let budget = Budget::new(max_bytes);
        let mut state = State::empty();
        state.follow::<K>("object", &budget, Ok(Event::Init));
        for mut obj in objects {
            strip(&mut obj);
            if !state.follow("object", &budget, Ok(Event::InitApply(obj))) {
                break;
            }
        }
        state.follow::<K>("object", &budget, Ok(Event::InitDone));
        Filled { state, budget }
    }

    /// Objects held.
    pub fn len(&self) -> usize {
        self.state.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.state.objects.is_empty()
    }

    /// Bytes counted against the budget.
    pub fn bytes(&self) -> u64 {
        self.budget.held.load(Ordering::Relaxed)
    }

    /// Whether the list outgrew `max_bytes`.
    pub fn over_budget(&self) -> bool {
        self.state.over_budget
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::ObjectMeta;

    use super::*;

    fn pod(ns: &str, name: &str, rv: u64) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                resource_version: Some(rv.to_string()),
                labels: Some([("app".to_string(), name.to_string())].into()),
                managed_fields: Some(vec![Default::default()]),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    fn state() -> State {
        State::empty()
    }

    fn list(s: &mut State, budget: &Budget, pods: &[Pod]) -> bool {
        let mut ok = s.follow::<Pod>("Pod", budget, Ok(Event::Init));
        for p in pods {
            ok &= s.follow("Pod", budget, Ok(Event::InitApply(p.clone())));
        }
        ok && s.follow::<Pod>("Pod", budget, Ok(Event::InitDone))
    }

    #[test]
    fn a_relist_replaces_the_store_and_the_budget_counts_what_is_held() {
        let budget = Budget::new(1 << 20);
        let mut s = state();
        assert!(list(
            &mut s,
            &budget,
            &[pod("a", "x", 1), pod("a", "y", 2), pod("b", "x", 3)]
        ));
        assert!(s.synced);
        assert_eq!(budget.held.load(Ordering::Relaxed), s.bytes);
        let names: Vec<_> = s
            .in_namespace("a")
            .map(|e| e.labels[0].1.to_string())
            .collect();
        assert_eq!(names, ["x", "y"], "a namespace's objects, in name order");
        assert_eq!(s.resource_version, 3);
        // `y` went while the watch was down: the re-list drops it.
        assert!(list(&mut s, &budget, &[pod("a", "x", 4), pod("b", "x", 5)]));
        assert!(s.get("a", "y").is_none());
        assert_eq!(budget.held.load(Ordering::Relaxed), s.bytes);
        s.follow("Pod", &budget, Ok(Event::Delete(pod("a", "x", 6))));
        s.follow("Pod", &budget, Ok(Event::Delete(pod("b", "x", 7))));
        assert_eq!(
            (s.len(), s.bytes, budget.held.load(Ordering::Relaxed)),
            (0, 0, 0)
        );
    }

    #[test]
    fn stored_objects_carry_no_managed_fields_once_stripped() {
        let mut p = pod("a", "x", 1);
        strip(&mut p);
        let mut s = state();
        let (_, entry) = s.encode(&p).expect("encodes");
        let json = String::from_utf8(s.json(&entry).expect("decodes")).expect("utf-8");
        assert!(!json.contains("managedFields"), "{json}");
    }

    #[test]
    fn a_store_over_the_budget_is_emptied_and_answers_nothing() {
        let one = {
            let (key, entry) = state().encode(&pod("a", "x", 1)).expect("encodes");
            entry.cost(&key)
        };
        let budget = Budget::new(one * 2 + one / 2);
        let mut s = state();
        assert!(list(&mut s, &budget, &[pod("a", "x", 1), pod("a", "y", 2)]));
        assert!(!s.follow("Pod", &budget, Ok(Event::Apply(pod("a", "z", 3)))));
        assert!(s.over_budget && !s.synced);
        assert_eq!((s.len(), budget.held.load(Ordering::Relaxed)), (0, 0));
    }
}
