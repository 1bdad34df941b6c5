//! How an adapter used its grants: uses per rule, the requests denied, and
//! the refusals over a limit; what `GrantReport` tells the operator.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Serialize;

use super::Decision;
use crate::grants::request::{ApiTarget, Verb};
use crate::grants::{KubernetesGrants, Rule};

/// The most distinct denials kept; past it, only a count.
pub const MAX_DENIAL_ENTRIES: usize = 1000;

/// The most rules counted, against a bogus index.
const MAX_RULES: usize = 1 << 16;

/// How an adapter used its grants: uses per rule, and the requests denied.
/// Thread-safe; share it behind an `Arc`.
#[derive(Debug, Default)]
pub struct GrantUsage {
    inner: Mutex<UsageInner>,
}

#[derive(Debug, Default)]
struct UsageInner {
    allowed: Vec<u64>,
    denied: HashMap<DenialKey, u64>,
    dropped: u64,
    /// Writes the object rules refused, by rule id (a fixed set).
    object_denied: HashMap<&'static str, u64>,
    /// Requests a host limit refused, by the limit's field (a fixed set).
    limit_refused: HashMap<&'static str, u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct DenialKey {
    verb: Verb,
    resource: String,
    namespace: Option<String>,
}

impl GrantUsage {
    fn lock(&self) -> std::sync::MutexGuard<'_, UsageInner> {
        // Counters stay meaningful after a panic elsewhere: keep counting.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a decision: a use of the rule, or a denial.
    pub fn record(&self, verb: Verb, target: &ApiTarget, decision: &Decision) {
        match decision {
            Decision::Allow { rule } | Decision::AllowIfClaimed { rule } => {
                self.record_allowed(*rule)
            }
            Decision::Deny(_) => self.record_denied(verb, target),
        }
    }

    /// Records one use of rule `rule`.
    pub fn record_allowed(&self, rule: usize) {
        if rule >= MAX_RULES {
            return;
        }
        let mut inner = self.lock();
        if inner.allowed.len() <= rule {
            inner.allowed.resize(rule + 1, 0);
        }
        inner.allowed[rule] += 1;
    }

    /// Records one denied request.
    pub fn record_denied(&self, verb: Verb, target: &ApiTarget) {
        let key = DenialKey {
            verb,
            resource: target.grant_spelling(),
            namespace: target.namespace.clone(),
        };
        let mut inner = self.lock();
        let full = inner.denied.len() >= MAX_DENIAL_ENTRIES;
        match inner.denied.get_mut(&key) {
            Some(n) => *n += 1,
            None if full => inner.dropped += 1,
            None => {
                inner.denied.insert(key, 1);
            }
        }
    }

    /// Records a write the object rules refused: a denial of the request,
    /// and one of object rule `rule` (`pods.baseline`).
    pub fn record_object_denied(&self, verb: Verb, target: &ApiTarget, rule: &'static str) {
        self.record_denied(verb, target);
        *self.lock().object_denied.entry(rule).or_insert(0) += 1;
    }

    /// Records a request refused by a host limit rather than a grant:
    /// `limit` is the field that would let it through
    /// (`kubernetes.max_body_bytes`).
    pub fn record_limit(&self, limit: &'static str) {
        *self.lock().limit_refused.entry(limit).or_insert(0) += 1;
    }

    /// The usage report: each rule of `grants` with its uses, and the
    /// denials, most frequent first.
    pub fn report(&self, grants: &KubernetesGrants) -> GrantReport {
        let inner = self.lock();
        let rules = grants
            .rules
            .iter()
            .enumerate()
            .map(|(index, rule)| {
                let uses = inner.allowed.get(index).copied().unwrap_or(0);
                RuleUsage {
                    index,
                    rule: rule.clone(),
                    uses,
                    used: uses > 0,
                }
            })
            .collect();
        let mut denials: Vec<DenialCount> = inner
            .denied
            .iter()
            .map(|(k, &count)| DenialCount {
                verb: k.verb,
                resource: k.resource.clone(),
                namespace: k.namespace.clone(),
                count,
            })
            .collect();
        denials.sort_by(|a, b| {
            b.count.cmp(&a.count).then_with(|| {
                (&a.resource, &a.namespace, a.verb).cmp(&(&b.resource, &b.namespace, b.verb))
            })
        });
        let mut object_denials: Vec<ObjectDenialCount> = inner
            .object_denied
            .iter()
            .map(|(rule, &count)| ObjectDenialCount {
                rule: (*rule).to_string(),
                count,
            })
            .collect();
        object_denials.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.rule.cmp(&b.rule)));
        let mut report = GrantReport {
            rules,
            denials,
            denials_dropped: inner.dropped,
            object_denials,
            limit_refusals: Vec::new(),
        };
        for (limit, &count) in &inner.limit_refused {
            report.add_limit_refusals(limit, count);
        }
        report
    }
}

/// Which grants an adapter used and which requests were denied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GrantReport {
    /// Every rule, in order, with its use count.
    pub rules: Vec<RuleUsage>,
    /// Denied requests, aggregated, most frequent first.
    pub denials: Vec<DenialCount>,
    /// Denials not listed because [`MAX_DENIAL_ENTRIES`] distinct ones were
    /// already kept.
    pub denials_dropped: u64,
    /// Writes the object rules refused, by rule, most frequent first.
    pub object_denials: Vec<ObjectDenialCount>,
    /// Requests and streams a host limit refused, by the limit's field,
    /// most frequent first: raise the field, or find why the adapter asks
    /// for so much.
    pub limit_refusals: Vec<LimitRefusalCount>,
}

impl GrantReport {
    /// Counts `count` more refusals by `limit`, keeping the order.
    pub fn add_limit_refusals(&mut self, limit: &str, count: u64) {
        if count == 0 {
            return;
        }
        match self.limit_refusals.iter_mut().find(|r| r.limit == limit) {
            Some(r) => r.count += count,
            None => self.limit_refusals.push(LimitRefusalCount {
                limit: limit.to_string(),
                count,
            }),
        }
        self.limit_refusals
            .sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.limit.cmp(&b.limit)));
    }
}

/// Refusals by one host limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LimitRefusalCount {
    /// The limit's field: `kubernetes.max_body_bytes`,
    /// `kubernetes.rate.write_bytes_per_second`, `limits.max_streams`,
    /// `limits.stream_buffer_bytes`.
    pub limit: String,
    /// Requests or streams it refused.
    pub count: u64,
}

/// Writes one object rule refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectDenialCount {
    /// The rule's id (`pods.baseline`, `services.types`).
    pub rule: String,
    /// How many.
    pub count: u64,
}

/// One rule's use.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleUsage {
    /// Its index in `kubernetes.rules`.
    pub index: usize,
    /// The rule.
    pub rule: Rule,
    /// Requests it allowed.
    pub uses: u64,
    /// Whether it allowed any: an unused rule is a candidate for removal.
    pub used: bool,
}

/// Denied requests with the same verb, resource and namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DenialCount {
    /// The verb.
    pub verb: Verb,
    /// The resource, as a grant spells it.
    pub resource: String,
    /// The namespace; none for cluster-scoped and all-namespaces requests.
    pub namespace: Option<String>,
    /// How many.
    pub count: u64,
}
