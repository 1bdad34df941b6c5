//! The host's own count of the Kubernetes requests an adapter asked for,
//! by verb and resource.
//!
//! The audit trail (`pando_host::audit` events) says the same one request
//! at a time, but reading it means installing a `tracing` subscriber; this
//! count is what a caller in the same process reads directly
//! ([`crate::Adapter::kubernetes_requests`]): the conformance suite uses it
//! to check that a call wrote nothing (`observe`, a satisfied `apply`, the
//! bundle watch) or made no request at all (`upstream`).
//!
//! Every request that parsed is counted once, when the host admits or
//! refuses it: a denied write is still an attempt to write. Requests whose
//! path does not parse never name a resource and are not counted (they are
//! audited as denied).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;

use serde::Serialize;

use crate::grants::request::{ApiRequest, Verb};

/// The most distinct resources counted by name; past it, requests are
/// counted under [`OTHER_RESOURCES`] with their verb, so a hostile adapter
/// inventing resource names cannot grow the record without bound.
pub const MAX_RESOURCE_KEYS: usize = 1000;

/// The resource name requests are counted under past [`MAX_RESOURCE_KEYS`].
pub const OTHER_RESOURCES: &str = "(other)";

/// What a request did: its verb and the resource as a grant spells it
/// (`pods`, `networking.k8s.io/networkpolicies`, `pods/log`; a path such as
/// `/readyz` for a request that names no resource).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct RequestKind {
    /// The verb (RBAC's name for it).
    pub verb: Verb,
    /// The resource, as a grant spells it.
    pub resource: String,
}

impl RequestKind {
    /// Whether the request changes something: anything but `get`, `list`
    /// and `watch`. (Opening an exec session counts as `get pods/exec`, as
    /// its path reads.)
    pub fn is_write(&self) -> bool {
        !matches!(self.verb, Verb::Get | Verb::List | Verb::Watch)
    }
}

impl fmt::Display for RequestKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.verb, self.resource)
    }
}

/// Counts of requests by [`RequestKind`]: a snapshot of an adapter's
/// record, or the difference of two ([`RequestCounts::since`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestCounts {
    counts: BTreeMap<RequestKind, u64>,
}

impl RequestCounts {
    /// Every request counted.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// The requests that change something ([`RequestKind::is_write`]).
    pub fn writes(&self) -> u64 {
        self.iter()
            .filter(|(k, _)| k.is_write())
            .map(|(_, n)| n)
            .sum()
    }

    /// The requests that only read.
    pub fn reads(&self) -> u64 {
        self.total() - self.writes()
    }

    /// Each kind of request with its count, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&RequestKind, u64)> {
        self.counts.iter().map(|(k, &n)| (k, n))
    }

    /// Only the writes.
    pub fn only_writes(&self) -> RequestCounts {
        RequestCounts {
            counts: self
                .counts
                .iter()
                .filter(|(k, _)| k.is_write())
                .map(|(k, &n)| (k.clone(), n))
                .collect(),
        }
    }

    /// What was counted after `earlier`, a snapshot of the same record: the
    /// requests of the calls made in between.
    pub fn since(&self, earlier: &RequestCounts) -> RequestCounts {
        RequestCounts {
            counts: self
                .counts
                .iter()
                .filter_map(|(k, &n)| {
                    let before = earlier.counts.get(k).copied().unwrap_or(0);
                    let more = n.saturating_sub(before);
                    (more > 0).then(|| (k.clone(), more))
                })
                .collect(),
        }
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

impl fmt::Display for RequestCounts {
    /// `get namespaces ×1, update secrets ×1`, or `none`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.counts.is_empty() {
            return f.write_str("none");
        }
        for (i, (kind, n)) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{kind} ×{n}")?;
        }
        Ok(())
    }
}

/// One adapter's record, shared by its instances. Thread-safe.
#[derive(Debug, Default)]
pub struct RequestCounter {
    counts: Mutex<RequestCounts>,
}

impl RequestCounter {
    /// Counts one request.
    pub(crate) fn record(&self, request: &ApiRequest) {
        let (verb, resource) = match request {
            ApiRequest::Resource { verb, target } => (*verb, target.grant_spelling()),
            ApiRequest::NonResource { path } => (Verb::Get, path.clone()),
        };
        // Counters stay meaningful after a panic elsewhere: keep counting.
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let mut kind = RequestKind { verb, resource };
        if !counts.counts.contains_key(&kind) && counts.counts.len() >= MAX_RESOURCE_KEYS {
            kind.resource = OTHER_RESOURCES.into();
        }
        *counts.counts.entry(kind).or_insert(0) += 1;
    }

    /// The counts so far.
    pub fn snapshot(&self) -> RequestCounts {
        self.counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::request::{Method, parse};

    fn request(method: Method, path: &str) -> ApiRequest {
        parse(method, path, &[]).expect("a valid path")
    }

    #[test]
    fn requests_are_counted_by_verb_and_resource_and_told_apart() {
        let log = RequestCounter::default();
        log.record(&request(Method::Get, "/api/v1/namespaces/pando-a"));
        let before = log.snapshot();
        log.record(&request(Method::Get, "/api/v1/namespaces/pando-a/pods"));
        log.record(&request(
            Method::Put,
            "/api/v1/namespaces/pando-a/secrets/pando-pull",
        ));
        log.record(&request(Method::Get, "/readyz"));
        let after = log.snapshot();
        assert_eq!(after.total(), 4);
        let new = after.since(&before);
        assert_eq!(new.total(), 3);
        assert_eq!(new.writes(), 1);
        assert_eq!(new.reads(), 2);
        assert_eq!(new.only_writes().to_string(), "update secrets ×1");
        assert_eq!(
            new.to_string(),
            "get /readyz ×1, list pods ×1, update secrets ×1"
        );
        assert!(after.since(&after).is_empty());
    }

    #[test]
    fn invented_resources_are_bounded() {
        let log = RequestCounter::default();
        for i in 0..MAX_RESOURCE_KEYS + 10 {
            log.record(&request(
                Method::Delete,
                &format!("/apis/example.com/v1/namespaces/pando-a/thing{i}/x"),
            ));
        }
        let counts = log.snapshot();
        assert_eq!(counts.iter().count(), MAX_RESOURCE_KEYS + 1);
        assert_eq!(counts.writes(), (MAX_RESOURCE_KEYS + 10) as u64);
    }
}
