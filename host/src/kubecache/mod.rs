//! The watch-fed cache: the adapter's reads of hot resources answered from
//! stores in the host, each fed by one watch (`kube-runtime` reflectors),
//! so that observing thousands of apps costs the API server nothing but
//! four watches.
//!
//! What is kept: namespaces, pods, Services and PersistentVolumeClaims that
//! carry the cache's label selector (by default Pando's
//! `app.kubernetes.io/managed-by=pando`), cluster-wide, without
//! `managedFields` or kubectl's last-applied copy, as compressed JSON
//! (`store`): about 700 bytes a pod held, where typed objects cost 13 KiB.
//! All stores together hold at most [`CacheOptions::max_bytes`]; a store
//! that would pass it is emptied, answers nothing (reads go to the API
//! server), says so ([`WatchCache::status`], a warning) and lists again a
//! minute later.
//!
//! What is answered, and the consistency the guest gets:
//! - Only a `GET` or `LIST` that asks for `resourceVersion=0`, which in
//!   Kubernetes means "any version; a cache may answer", as the API
//!   server's own watch cache does. A request without it is a consistent
//!   read and goes to the API server, so an adapter decides per request
//!   (the Kubernetes adapter's `observe` opts in; `apply` does not: it must
//!   see its own writes).
//! - A `GET` answered only when the object is in the store (an object
//!   without the label may exist all the same: a miss goes to the API
//!   server). A `LIST` answered only when its label selector includes every
//!   requirement of the cache's, so nothing it selects can be missing from
//!   the store; other query keys (`fieldSelector`, `limit`, …) go to the
//!   API server.
//! - Only while the store's watch is connected and has listed: from a watch
//!   error until the re-list after it, every read goes to the API server.
//!   While connected, a store lags the API server by the watch's delivery
//!   time.
//! - The answer says it came from the cache, and how old: headers
//!   `pando-cache: hit` and `pando-cache-age-ms` (since the store last heard
//!   of a change or listed; it grows while nothing changes, and the store is
//!   current all the same). The list's `resourceVersion` is the newest the
//!   store has seen: not older than that.
//! - Grants are enforced exactly as on a live request: the request is
//!   parsed, canonicalized and checked by the same code before the cache
//!   is asked. A cached read takes a token of the rate budget as a live
//!   read does (the budget bounds what an adapter makes the host do, not
//!   only what reaches the API server), its answer is built within the same
//!   byte cap as a live answer ([`Shape::max_bytes`]: past it the read
//!   fails, no larger body is built), the adapter's read masks apply to
//!   each object ([`Shape::item`]), and hits are audited in aggregate (a
//!   summary event, not one per hit).
//!
//! The stores read with the host's identity, not the adapter's: one cache
//! serves every adapter the host loads with the same client
//! ([`crate::LoadOptions::kubernetes_cache`]).

mod selector;
mod store;

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, Pod, Service};
use serde::Serialize;

use crate::grants::request::{ApiTarget, Verb};
pub use selector::{Labels, Selector};
#[doc(hidden)]
pub use store::Filled;
pub use store::StoreStatus;
use store::{Budget, Reflected};

/// How the cache is set up.
#[derive(Debug, Clone)]
pub struct CacheOptions {
    /// Which objects are kept: a label selector in the equality form
    /// (`k=v,k2`).
    pub label_selector: String,
    /// The bytes the stores may hold together, as they count them (an
    /// object's JSON, its labels and key, and a fixed overhead). A store
    /// that would pass it is emptied, answers nothing (reads go to the API
    /// server), says so in [`WatchCache::status`] and a warning, and lists
    /// again a minute later. A re-list holds the old list and the new one
    /// until it is done: leave room for twice the largest store.
    pub max_bytes: u64,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            label_selector: "app.kubernetes.io/managed-by=pando".into(),
            // About 700 B a pod held (docs/benchmarks.md): some 90 000
            // pods, with room to re-list them.
            max_bytes: 128 << 20,
        }
    }
}

/// The cache could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The label selector is not in the equality form.
    #[error(
        "the cache's label selector `{0}` is not of the form `key=value,key2`: set-based \
         selectors cannot decide which lists the cache may answer"
    )]
    Selector(String),
}

/// How a cached answer is built for one adapter: its byte cap, and what
/// each object is made into before it is added (the adapter's read masks).
pub struct Shape<'a> {
    /// The largest body answered; a list that would pass it is refused
    /// ([`TooLarge`]) as soon as it does, so no larger body is built.
    pub max_bytes: usize,
    /// Rewrites one object's JSON (a mask); `None` leaves it as stored.
    pub item: Option<&'a dyn Fn(Vec<u8>) -> Vec<u8>>,
}

/// A cached answer would be larger than [`Shape::max_bytes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the response is larger than {max} bytes; page the list with `limit` and `continue`")]
pub struct TooLarge {
    /// The cap that was passed.
    pub max: usize,
}

/// A cached answer.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The JSON body, as the API server would send it.
    pub body: Vec<u8>,
    /// How long ago the store last heard from the API server.
    pub age: Duration,
}

/// What the cache holds and whether it answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheStatus {
    /// Bytes held by every store, as counted against `max_bytes`.
    pub bytes: u64,
    /// The budget, [`CacheOptions::max_bytes`].
    pub max_bytes: u64,
    /// Each store.
    pub stores: Vec<StoreStatus>,
}

/// The watch-fed cache (see the module doc). Its watches run on the tokio
/// runtime it was started on and stop when it is dropped.
pub struct WatchCache {
    selector: Selector,
    budget: Arc<Budget>,
    namespaces: Reflected,
    pods: Reflected,
    services: Reflected,
    claims: Reflected,
}

impl std::fmt::Debug for WatchCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchCache")
            .field("selector", &self.selector)
            .finish_non_exhaustive()
    }
}

impl WatchCache {
    /// Starts the four watches with `client`. Must be called within a
    /// tokio runtime.
    pub fn start(client: kube::Client, options: CacheOptions) -> Result<Arc<Self>, CacheError> {
        let selector = Selector::parse(&options.label_selector)
            .ok_or_else(|| CacheError::Selector(options.label_selector.clone()))?;
        let s = &options.label_selector;
        let budget = Arc::new(Budget::new(options.max_bytes));
        let b = || Arc::clone(&budget);
        Ok(Arc::new(WatchCache {
            selector,
            namespaces: Reflected::start::<Namespace>(client.clone(), s, b()),
            pods: Reflected::start::<Pod>(client.clone(), s, b()),
            services: Reflected::start::<Service>(client.clone(), s, b()),
            claims: Reflected::start::<PersistentVolumeClaim>(client, s, b()),
            budget,
        }))
    }

    fn stores(&self) -> [&Reflected; 4] {
        [&self.namespaces, &self.pods, &self.services, &self.claims]
    }

    /// Whether every store has listed, its watch is connected and it is
    /// within the budget.
    pub fn is_synced(&self) -> bool {
        self.stores().iter().all(|s| s.ready().is_some())
    }

    /// Waits until [`is_synced`](Self::is_synced), up to `timeout`; whether
    /// it is.
    pub async fn wait_synced(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        while !self.is_synced() {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }

    /// Objects held, all stores together.
    pub fn len(&self) -> usize {
        self.stores().iter().map(|s| s.len()).sum()
    }

    /// Whether no object is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What each store holds, whether it answers, and the budget.
    pub fn status(&self) -> CacheStatus {
        CacheStatus {
            bytes: self.budget.held.load(std::sync::atomic::Ordering::Relaxed),
            max_bytes: self.budget.max,
            stores: self.stores().iter().map(|s| s.status()).collect(),
        }
    }

    /// Answers a request the grants have already allowed, when the module
    /// doc's conditions hold, built as `shape` says; `None` sends it to the
    /// API server, `Some(Err)` refuses it (over the byte cap).
    pub fn answer(
        &self,
        verb: Verb,
        target: &ApiTarget,
        query: &[(String, String)],
        shape: &Shape<'_>,
    ) -> Option<Result<Hit, TooLarge>> {
        if !matches!(verb, Verb::Get | Verb::List)
            || !target.group.is_empty()
            || target.version != "v1"
            || target.subresource.is_some()
        {
            return None;
        }
        let mut any_version = false;
        let mut labels = None;
        for (k, v) in query {
            match k.as_str() {
                "resourceVersion" if v == "0" => any_version = true,
                "labelSelector" => labels = Some(v.as_str()),
                _ => return None,
            }
        }
        if !any_version {
            return None;
        }
        let request = Request {
            name: target.name.as_deref(),
            namespace: target.namespace.as_deref(),
            labels,
            selector: &self.selector,
            shape,
        };
        match target.resource.as_str() {
            "namespaces" => request.answer(&self.namespaces, "NamespaceList"),
            "pods" => request.answer(&self.pods, "PodList"),
            "services" => request.answer(&self.services, "ServiceList"),
            "persistentvolumeclaims" => request.answer(&self.claims, "PersistentVolumeClaimList"),
            _ => None,
        }
    }
}

/// One read, for any store.
struct Request<'a> {
    name: Option<&'a str>,
    namespace: Option<&'a str>,
    labels: Option<&'a str>,
    selector: &'a Selector,
    shape: &'a Shape<'a>,
}

impl Request<'_> {
    /// One stored object as this adapter is shown it.
    fn item(&self, json: Vec<u8>) -> Vec<u8> {
        match self.shape.item {
            Some(f) => f(json),
            None => json,
        }
    }

    fn answer(&self, reflected: &Reflected, list_kind: &str) -> Option<Result<Hit, TooLarge>> {
        let state = reflected.ready()?;
        let age = state.heard.elapsed();
        let too_large = TooLarge {
            max: self.shape.max_bytes,
        };
        if let Some(name) = self.name {
            if self.labels.is_some() {
                return None;
            }
            let entry = state.get(self.namespace.unwrap_or(""), name)?;
            let body = self.item(state.json(entry)?);
            if body.len() > self.shape.max_bytes {
                return Some(Err(too_large));
            }
            return Some(Ok(Hit { body, age }));
        }
        let wanted = Selector::parse(self.labels.unwrap_or(""))?;
        if !wanted.implies(self.selector) {
            return None;
        }
        // The list the API server would send, made of the stored bytes:
        // the store is in its order (namespace, then name).
        let mut body = Vec::with_capacity(512);
        write!(
            body,
            r#"{{"apiVersion":"v1","kind":"{list_kind}","metadata":{{"resourceVersion":"{}"}},"items":["#,
            state.resource_version
        )
        .ok()?;
        let mut first = true;
        // `Err(None)`: an object could not be read (the API server
        // answers); `Err(Some)`: over the cap, checked as each object is
        // added so that no body much larger than the cap is ever built.
        let max = self.shape.max_bytes;
        let mut push = |entry: &store::Entry| -> Result<(), Option<TooLarge>> {
            if wanted.matches(&*entry.labels) {
                if !first {
                    body.push(b',');
                }
                first = false;
                let item = self.item(state.json(entry).ok_or(None)?);
                if body.len() + item.len() + 2 > max {
                    return Err(Some(too_large));
                }
                body.extend_from_slice(&item);
            }
            Ok(())
        };
        let built = match self.namespace {
            Some(ns) => state.in_namespace(ns).try_for_each(&mut push),
            None => state.all().try_for_each(&mut push),
        };
        match built {
            Ok(()) => {}
            Err(None) => return None,
            Err(Some(e)) => return Some(Err(e)),
        }
        body.extend_from_slice(b"]}");
        Some(Ok(Hit { body, age }))
    }
}
