//! The host's metrics in the OpenMetrics text format (`prometheus-client`),
//! per adapter: calls by method and outcome with their latency, instances,
//! quarantine, what the host holds against its budget, Kubernetes denials,
//! limit refusals and throttling, and the watch-fed cache.
//!
//! Calls are counted as they end; everything else is read from the
//! adapters' own state when the metrics are encoded, so a scrape costs
//! nothing between scrapes and no count can drift from what the usage
//! report and `Adapter`'s accessors say. docs/operations.md says what each
//! metric means and which to alert on.

use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::adapter::AdapterInner;
use crate::error::CallError;

mod per_thread;
use per_thread::{Count, Durations};

// The labels a call records are an `Arc` and two static strings: counting
// a call allocates nothing (an `upstream` call takes about a microsecond).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    adapter: Arc<str>,
    method: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabels {
    adapter: Arc<str>,
    method: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AdapterLabels {
    adapter: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DenialLabels {
    adapter: String,
    verb: String,
    resource: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabels {
    adapter: String,
    rule: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabels {
    adapter: String,
    limit: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StoreLabels {
    kind: String,
}

type Seconds = Gauge<f64, std::sync::atomic::AtomicU64>;
type SecondsTotal = Counter<f64, std::sync::atomic::AtomicU64>;

/// One host's metrics.
pub(crate) struct Metrics {
    calls: Family<CallLabels, Count>,
    durations: Family<MethodLabels, Durations>,
    adapters: Mutex<Vec<Weak<AdapterInner>>>,
}

impl Metrics {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Metrics {
            calls: Family::default(),
            durations: Family::default(),
            adapters: Mutex::new(Vec::new()),
        })
    }

    /// Counts a loaded adapter in from now on (until it is dropped).
    pub(crate) fn register(&self, adapter: &Arc<AdapterInner>) {
        let mut adapters = self.adapters.lock().unwrap_or_else(|p| p.into_inner());
        adapters.retain(|a| a.strong_count() > 0);
        adapters.push(Arc::downgrade(adapter));
    }

    /// Records one call's end: a call that succeeds through `fast` (no
    /// label is hashed, no family locked), any other through the families.
    ///
    /// Inline, with the handles' lookup and the shards' writes: this is on
    /// every call, and each was a call of its own (docs/history/benchmarks.md, "The
    /// call path, counted in instructions").
    #[inline]
    pub(crate) fn record_call(
        &self,
        fast: &CallHandles,
        adapter: &Arc<str>,
        method: &'static str,
        result: Result<(), &CallError>,
        took: Duration,
    ) {
        let outcome = match result {
            Ok(()) => {
                fast.record(self, adapter, method, took);
                return;
            }
            Err(e) => e.kind(),
        };
        self.record_in_families(adapter, method, outcome, took);
    }

    /// Records one call's end through the families (labels hashed, the
    /// family's lock taken).
    fn record_in_families(
        &self,
        adapter: &Arc<str>,
        method: &'static str,
        outcome: &'static str,
        took: Duration,
    ) {
        self.calls
            .get_or_create(&CallLabels {
                adapter: Arc::clone(adapter),
                method,
                outcome,
            })
            .inc();
        self.durations
            .get_or_create(&MethodLabels {
                adapter: Arc::clone(adapter),
                method,
            })
            .observe(took);
    }

    /// Every metric now, as OpenMetrics text (ending `# EOF`).
    pub(crate) fn encode(&self) -> String {
        let adapters: Vec<Arc<AdapterInner>> = self
            .adapters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        let mut registry = Registry::with_prefix("pando");
        registry.register(
            "adapter_calls",
            "Calls into adapters, by method and outcome (`ok` or the error's kind)",
            self.calls.clone(),
        );
        registry.register(
            "adapter_call_duration_seconds",
            "How long calls took, lease and queueing included",
            self.durations.clone(),
        );
        State::read(&adapters).register(&mut registry);
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }
}

/// One adapter's handles on its `ok` call counter and duration histogram,
/// by method: the families hash every label on every lookup (SipHash over
/// the adapter's name, the method and the outcome, twice), which was a
/// tenth of an `upstream` call's host time. The handles share the
/// families' atomics, so what is encoded is the same either way.
///
/// The slots fill in order and are never emptied, so a call finds its
/// method's handles with atomic loads only (a lock here was two locked
/// instructions on every call); the mutex only orders the adding of a
/// method's handles, once each.
pub(crate) struct CallHandles {
    slots: [OnceLock<Handles>; METHOD_SLOTS],
    adding: Mutex<()>,
}

/// A method's `ok` counter and duration histogram.
type Handles = (&'static str, Count, Durations);

/// More than the contract's methods: a method past them is recorded
/// through the families, correct and slower.
const METHOD_SLOTS: usize = 48;

impl Default for CallHandles {
    fn default() -> Self {
        CallHandles {
            slots: std::array::from_fn(|_| OnceLock::new()),
            adding: Mutex::new(()),
        }
    }
}

impl CallHandles {
    /// Counts a call of `method` that succeeded, and its duration; the
    /// handles are made from the families on the method's first call.
    #[inline]
    fn record(&self, metrics: &Metrics, adapter: &Arc<str>, method: &'static str, took: Duration) {
        match self
            .find(method)
            .or_else(|| self.add(metrics, adapter, method))
        {
            Some((_, ok, duration)) => {
                ok.inc();
                duration.observe(took);
            }
            None => metrics.record_in_families(adapter, method, "ok", took),
        }
    }

    /// The handles of `method`, if a call of it has been recorded.
    #[inline]
    fn find(&self, method: &'static str) -> Option<&Handles> {
        // Each typed method passes its own literal, so the pointer finds it;
        // the text is the fallback for a literal the compiler did not merge.
        let same = |m: &str| std::ptr::eq(m, method) || m == method;
        for slot in &self.slots {
            // The first empty slot ends the filled ones.
            let handles = slot.get()?;
            if same(handles.0) {
                return Some(handles);
            }
        }
        None
    }

    /// Makes `method`'s handles in the next free slot; `None` when every
    /// slot is taken.
    fn add(&self, metrics: &Metrics, adapter: &Arc<str>, method: &'static str) -> Option<&Handles> {
        let _adding = self.adding.lock().unwrap_or_else(|p| p.into_inner());
        // Another call may have added it while this one waited.
        if let Some(handles) = self.find(method) {
            return Some(handles);
        }
        let slot = self.slots.iter().find(|s| s.get().is_none())?;
        let ok = metrics
            .calls
            .get_or_create(&CallLabels {
                adapter: Arc::clone(adapter),
                method,
                outcome: "ok",
            })
            .clone();
        let duration = metrics
            .durations
            .get_or_create(&MethodLabels {
                adapter: Arc::clone(adapter),
                method,
            })
            .clone();
        // Only writers holding `adding` set a slot, and this one was empty.
        let _ = slot.set((method, ok, duration));
        slot.get()
    }
}

/// The families read from the adapters at encode time.
#[derive(Default)]
struct State {
    idle: Family<AdapterLabels, Gauge>,
    made: Family<AdapterLabels, Counter>,
    discarded: Family<AdapterLabels, Counter>,
    pool_waits: Family<AdapterLabels, Counter>,
    pool_wait: Family<AdapterLabels, SecondsTotal>,
    quarantined: Family<AdapterLabels, Gauge>,
    shared_instances: Family<AdapterLabels, Gauge>,
    shared_calls: Family<AdapterLabels, Gauge>,
    held_bytes: Family<AdapterLabels, Gauge>,
    held_bytes_limit: Family<AdapterLabels, Gauge>,
    held_streams: Family<AdapterLabels, Gauge>,
    held_streams_limit: Family<AdapterLabels, Gauge>,
    denied: Family<DenialLabels, Counter>,
    rule_uses: Family<RuleLabels, Counter>,
    refusals: Family<LimitLabels, Counter>,
    throttled: Family<AdapterLabels, Counter>,
    throttle_wait: Family<AdapterLabels, SecondsTotal>,
    cache_objects: Family<StoreLabels, Gauge>,
    cache_bytes: Family<StoreLabels, Gauge>,
    cache_age: Family<StoreLabels, Seconds>,
    cache_serving: Family<StoreLabels, Gauge>,
    cache_over_budget: Family<StoreLabels, Gauge>,
    cache_budget: Gauge,
}

/// Sets a gauge from a count (saturating: gauges are signed).
fn set(g: &Gauge, n: impl TryInto<i64>) {
    g.set(n.try_into().unwrap_or(i64::MAX));
}

impl State {
    fn read(adapters: &[Arc<AdapterInner>]) -> State {
        let s = State::default();
        let mut caches: Vec<Arc<crate::kubecache::WatchCache>> = Vec::new();
        for a in adapters {
            let name = AdapterLabels {
                adapter: a.identity.name.clone(),
            };
            s.read_pool(a, &name);
            let (Some(kube), Some(grants)) = (
                &a.pool.factory.capabilities.kubernetes,
                &a.grants.kubernetes,
            ) else {
                continue;
            };
            s.read_kubernetes(kube, grants, &name);
            if let Some(cache) = &kube.cache
                && !caches.iter().any(|c| Arc::ptr_eq(c, cache))
            {
                caches.push(Arc::clone(cache));
            }
        }
        for cache in caches {
            s.read_cache(&cache);
        }
        s
    }

    fn refused(&self, name: &AdapterLabels, limit: &str, n: u64) {
        if n > 0 {
            self.refusals
                .get_or_create(&LimitLabels {
                    adapter: name.adapter.clone(),
                    limit: limit.into(),
                })
                .inc_by(n);
        }
    }

    /// Instances (pooled, and shared by several calls), quarantine, and
    /// what the host holds for the adapter.
    fn read_pool(&self, a: &AdapterInner, name: &AdapterLabels) {
        use std::sync::atomic::Ordering::Relaxed;
        let pool = &a.pool;
        // A shared instance is made for calls and dropped at its end, as a
        // pooled one is: the same counters, so that a dashboard of
        // instances made holds for either setting of calls_per_instance.
        let shared = a.lanes.as_ref().map(|l| l.usage());
        let (lanes_made, lanes_ended, lane_waits, lane_waited) = shared
            .map(|u| (u.made, u.ended, u.waits, u.waited.as_secs_f64()))
            .unwrap_or_default();
        set(&self.idle.get_or_create(name), pool.idle_count());
        self.made
            .get_or_create(name)
            .inc_by(pool.made.load(Relaxed) + lanes_made);
        self.discarded
            .get_or_create(name)
            .inc_by(pool.discarded() + lanes_ended);
        self.pool_waits
            .get_or_create(name)
            .inc_by(pool.waits.count() + lane_waits);
        self.pool_wait
            .get_or_create(name)
            .inc_by(pool.waits.total().as_secs_f64() + lane_waited);
        if let Some(u) = shared {
            set(&self.shared_instances.get_or_create(name), u.instances);
            set(&self.shared_calls.get_or_create(name), u.calls);
        }
        set(
            &self.quarantined.get_or_create(name),
            i64::from(a.breaker.quarantine().is_some()),
        );
        let held = pool.factory.held_budget.usage();
        set(&self.held_bytes.get_or_create(name), held.bytes);
        set(
            &self.held_bytes_limit.get_or_create(name),
            a.limits.stream_buffer_bytes,
        );
        set(&self.held_streams.get_or_create(name), held.streams);
        set(
            &self.held_streams_limit.get_or_create(name),
            a.limits.max_streams,
        );
        self.refused(name, "limits.max_streams", held.refused_streams);
        self.refused(name, "limits.stream_buffer_bytes", held.refused_bytes);
    }

    /// Denials, rule uses, limit refusals and throttling.
    fn read_kubernetes(
        &self,
        kube: &crate::capability::kubernetes::KubeContext,
        grants: &crate::grants::KubernetesGrants,
        name: &AdapterLabels,
    ) {
        let report = kube.usage().report(grants);
        for d in &report.denials {
            self.denied
                .get_or_create(&DenialLabels {
                    adapter: name.adapter.clone(),
                    verb: d.verb.to_string(),
                    resource: d.resource.clone(),
                })
                .inc_by(d.count);
        }
        for r in &report.rules {
            self.rule_uses
                .get_or_create(&RuleLabels {
                    adapter: name.adapter.clone(),
                    rule: r.index.to_string(),
                })
                .inc_by(r.uses);
        }
        for r in &report.limit_refusals {
            self.refused(name, &r.limit, r.count);
        }
        let (waited, wait) = kube.limiter.throttled();
        self.throttled.get_or_create(name).inc_by(waited);
        self.throttle_wait
            .get_or_create(name)
            .inc_by(wait.as_secs_f64());
    }

    fn read_cache(&self, cache: &crate::kubecache::WatchCache) {
        let status = cache.status();
        set(&self.cache_budget, status.max_bytes);
        for store in status.stores {
            let kind = StoreLabels { kind: store.kind };
            set(&self.cache_objects.get_or_create(&kind), store.objects);
            set(&self.cache_bytes.get_or_create(&kind), store.bytes);
            self.cache_age
                .get_or_create(&kind)
                .set(store.age_ms as f64 / 1e3);
            set(
                &self.cache_serving.get_or_create(&kind),
                i64::from(store.synced),
            );
            set(
                &self.cache_over_budget.get_or_create(&kind),
                i64::from(store.over_budget),
            );
        }
    }

    fn register(self, r: &mut Registry) {
        // name, help, metric: one line each, so the list reads as the page does.
        macro_rules! register {
            ($($name:literal, $help:literal, $field:ident;)*) => {
                $(r.register($name, $help, self.$field);)*
            };
        }
        register! {
            "adapter_instances_idle", "Configured instances idle in the pool", idle;
            "adapter_instances_made", "Instances made for calls since the load (the load's own not counted)", made;
            "adapter_instances_discarded", "Instances dropped rather than pooled: faulted, cut mid-call, holding streams, past their quota, or over max_idle (a shared instance when it ends)", discarded;
            "adapter_pool_waits", "Calls that found every instance busy (max_instances or max_long_running) or every shared seat taken, and waited", pool_waits;
            "adapter_pool_wait_seconds", "Time calls spent waiting for an instance, in all", pool_wait;
            "adapter_shared_instances", "Instances serving several calls at once now (limits.calls_per_instance above 1, a 0.2.0 adapter)", shared_instances;
            "adapter_shared_calls", "Calls running in shared instances now", shared_calls;
            "adapter_quarantined", "1 while the adapter is quarantined after repeated faults", quarantined;
            "adapter_held_bytes", "Bytes the host holds for the adapter in stream buffers", held_bytes;
            "adapter_held_bytes_limit", "limits.stream_buffer_bytes", held_bytes_limit;
            "adapter_held_streams", "Streams and sessions the adapter has open", held_streams;
            "adapter_held_streams_limit", "limits.max_streams", held_streams_limit;
            "kubernetes_requests_denied", "Kubernetes requests the grants denied, by verb and resource", denied;
            "kubernetes_grant_rule_uses", "Requests each grant rule allowed, by the rule's index in the grants", rule_uses;
            "adapter_limit_refusals", "Requests and streams a host limit refused, by the limit's field", refusals;
            "kubernetes_throttled_requests", "Kubernetes requests that waited for the rate budget", throttled;
            "kubernetes_throttle_wait_seconds", "Time Kubernetes requests spent waiting for the rate budget, in all", throttle_wait;
            "cache_objects", "Objects the watch-fed cache holds", cache_objects;
            "cache_bytes", "Bytes the watch-fed cache holds, as counted against its budget", cache_bytes;
            "cache_age_seconds", "Seconds since the store last heard from the API server", cache_age;
            "cache_serving", "1 while the store answers reads (listed, watching, within its budget)", cache_serving;
            "cache_over_budget", "1 while the store is emptied for being over the cache's budget", cache_over_budget;
            "cache_bytes_limit", "CacheOptions::max_bytes", cache_budget;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok_calls(metrics: &Metrics, method: &'static str) -> u64 {
        let labels = CallLabels {
            adapter: Arc::from("a"),
            method,
            outcome: "ok",
        };
        metrics.calls.get_or_create(&labels).get()
    }

    #[test]
    fn a_success_is_counted_once_under_its_own_method() {
        let (metrics, handles, adapter) = (Metrics::new(), CallHandles::default(), Arc::from("a"));
        for _ in 0..3 {
            metrics.record_call(
                &handles,
                &adapter,
                "upstream",
                Ok(()),
                Duration::from_micros(1),
            );
        }
        metrics.record_call(
            &handles,
            &adapter,
            "apply",
            Ok(()),
            Duration::from_micros(1),
        );
        assert_eq!(ok_calls(&metrics, "upstream"), 3);
        assert_eq!(ok_calls(&metrics, "apply"), 1);
        let text = metrics.encode();
        assert!(
            text.contains(
                r#"pando_adapter_call_duration_seconds_count{adapter="a",method="upstream"} 3"#
            ),
            "{text}"
        );
    }

    #[test]
    fn methods_past_the_slots_are_still_counted() {
        let (metrics, handles, adapter) = (Metrics::new(), CallHandles::default(), Arc::from("a"));
        let methods: Vec<&'static str> = (0..METHOD_SLOTS + 5)
            .map(|i| &*Box::leak(format!("m{i}").into_boxed_str()))
            .collect();
        for m in &methods {
            metrics.record_call(&handles, &adapter, m, Ok(()), Duration::from_micros(1));
            metrics.record_call(&handles, &adapter, m, Ok(()), Duration::from_micros(1));
        }
        for m in &methods {
            assert_eq!(ok_calls(&metrics, m), 2, "{m}");
        }
    }

    #[test]
    fn a_method_named_by_another_literal_finds_the_same_handles() {
        let (metrics, handles, adapter) = (Metrics::new(), CallHandles::default(), Arc::from("a"));
        let other: &'static str = Box::leak(String::from("observe").into_boxed_str());
        metrics.record_call(
            &handles,
            &adapter,
            "observe",
            Ok(()),
            Duration::from_micros(1),
        );
        metrics.record_call(&handles, &adapter, other, Ok(()), Duration::from_micros(1));
        assert_eq!(ok_calls(&metrics, "observe"), 2);
        assert_eq!(
            handles.slots.iter().filter(|s| s.get().is_some()).count(),
            1
        );
    }
}
