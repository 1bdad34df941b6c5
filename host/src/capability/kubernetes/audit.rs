//! The audit trail: one `tracing` event per Kubernetes call, with the
//! adapter's identity, what was asked, the decision and how long it took.

use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::grants::request::ApiRequest;

/// One Kubernetes call being audited: who, which call, which path, since
/// when. Each way the call can end writes its one event.
pub(crate) struct Audit<'a> {
    runs: &'a DenialRuns,
    adapter: &'a str,
    call: &'static str,
    path: &'a str,
    started: Instant,
}

impl<'a> Audit<'a> {
    /// Starts timing a call.
    pub(crate) fn start(
        runs: &'a DenialRuns,
        adapter: &'a str,
        call: &'static str,
        path: &'a str,
    ) -> Self {
        Audit {
            runs,
            adapter,
            call,
            path,
            started: Instant::now(),
        }
    }

    /// Refused before anything was sent.
    pub(crate) fn denied(&self, request: Option<&ApiRequest>, why: &str) {
        // The same refusal again and again is written at its 1st, 2nd, 4th,
        // 8th … time in a row, saying how many: a guest repeating it cannot
        // fill the trail, and the count is still there.
        let Some(repeated) = self.runs.note(self.call, self.path, why) else {
            return;
        };
        self.write_repeated(request, Outcome::Denied(why), Duration::ZERO, repeated);
    }

    /// Sending failed, after `throttled` waiting for the rate budget.
    pub(crate) fn failed(&self, request: &ApiRequest, why: &str, throttled: Duration) {
        self.write(Some(request), Outcome::Failed(why), throttled);
    }

    /// The API server answered.
    pub(crate) fn answered(&self, request: &ApiRequest, status: u16, throttled: Duration) {
        self.write(Some(request), Outcome::Status(status), throttled);
    }

    /// The adapter's name, as its events carry it.
    pub(crate) fn adapter(&self) -> &str {
        self.adapter
    }

    /// A stream was opened.
    pub(crate) fn opened(&self, request: &ApiRequest, throttled: Duration) {
        self.write(Some(request), Outcome::Opened, throttled);
    }

    fn write(&self, request: Option<&ApiRequest>, outcome: Outcome<'_>, throttled: Duration) {
        self.write_repeated(request, outcome, throttled, 1);
    }

    fn write_repeated(
        &self,
        request: Option<&ApiRequest>,
        outcome: Outcome<'_>,
        throttled: Duration,
        repeated: u64,
    ) {
        record(self, request, outcome, throttled, repeated);
    }
}

/// An adapter's run of identical refusals in a row: which one, how many.
#[derive(Debug, Default)]
pub(crate) struct DenialRuns {
    last: Mutex<(u64, u64)>,
}

impl DenialRuns {
    /// Counts one refusal; `Some(n)` when the event is to be written, `n`
    /// the refusals in a row it stands for (a power of two, or 1 for a new
    /// one).
    pub(crate) fn note(&self, call: &str, path: &str, why: &str) -> Option<u64> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (call, path, why).hash(&mut h);
        let key = h.finish();
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if last.0 == key && last.1 > 0 {
            last.1 += 1;
        } else {
            *last = (key, 1);
        }
        last.1.is_power_of_two().then_some(last.1)
    }
}

/// How often the cache's answers to one adapter are summed up in one
/// audit event, at most.
pub(crate) const CACHE_SUMMARY_EVERY: Duration = Duration::from_secs(10);

/// The most distinct reads a cache summary names; past it they are counted
/// under `(other)`, so a summary stays one line.
const MAX_SUMMARY_KEYS: usize = 32;

/// The watch-fed cache's answers to one adapter, audited in aggregate: one
/// event (`kubernetes cache summary`) for all the hits of up to
/// [`CACHE_SUMMARY_EVERY`], written by the first hit after that time or
/// when the adapter is dropped, rather than one event a hit (an observe
/// pass over thousands of apps would write thousands of lines a second).
#[derive(Debug, Default)]
pub(crate) struct CacheHits {
    state: Mutex<HitState>,
}

#[derive(Debug, Default)]
struct HitState {
    adapter: String,
    since: Option<Instant>,
    hits: u64,
    bytes: u64,
    reads: std::collections::BTreeMap<String, u64>,
}

impl CacheHits {
    /// Counts one answer of `bytes` to `request`; writes the summary when
    /// it is due.
    pub(crate) fn note(&self, adapter: &str, request: &ApiRequest, bytes: usize) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if s.since.is_none() {
            s.since = Some(now);
            s.adapter = adapter.to_string();
        }
        s.hits += 1;
        s.bytes += bytes as u64;
        let key = match request {
            ApiRequest::Resource { verb, target } => format!("{verb} {}", target.spelled()),
            ApiRequest::NonResource { path } => path.clone(),
        };
        let key = if s.reads.contains_key(&key) || s.reads.len() < MAX_SUMMARY_KEYS {
            key
        } else {
            "(other)".into()
        };
        *s.reads.entry(key).or_insert(0) += 1;
        if s.since
            .is_some_and(|t| now.duration_since(t) >= CACHE_SUMMARY_EVERY)
        {
            write_summary(&mut s);
        }
    }

    /// Writes what is counted and not yet written.
    pub(crate) fn flush(&self) {
        write_summary(&mut self.state.lock().unwrap_or_else(|p| p.into_inner()));
    }
}

impl Drop for CacheHits {
    fn drop(&mut self) {
        self.flush();
    }
}

fn write_summary(s: &mut HitState) {
    let Some(since) = s.since.take() else {
        return;
    };
    let reads = s
        .reads
        .iter()
        .map(|(k, n)| format!("{k} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ");
    tracing::info!(
        target: "pando_host::audit",
        adapter = %s.adapter,
        call = "send",
        decision = "allowed",
        status = 200u16,
        cached = true,
        hits = s.hits,
        bytes = s.bytes,
        reads = %reads,
        period_ms = since.elapsed().as_secs_f64() * 1e3,
        "kubernetes cache summary"
    );
    s.hits = 0;
    s.bytes = 0;
    s.reads.clear();
}

/// What became of a call.
enum Outcome<'a> {
    /// Refused before anything was sent.
    Denied(&'a str),
    /// The API server answered with this status.
    Status(u16),
    /// A stream (watch, log, exec) was opened.
    Opened,
    /// Sending failed.
    Failed(&'a str),
}

/// The most of a guest's path or refusal message an audit event carries:
/// a path is the guest's text, and one audit line a request must stay a
/// line.
pub(crate) const MAX_AUDIT_TEXT: usize = 1024;

/// `text`, clipped to [`MAX_AUDIT_TEXT`] bytes on a character boundary,
/// saying how long it was when clipped.
pub(crate) fn clip(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_AUDIT_TEXT {
        return text.into();
    }
    let mut end = MAX_AUDIT_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len()).into()
}

/// Writes the audit event for one call.
fn record(
    audit: &Audit<'_>,
    request: Option<&ApiRequest>,
    outcome: Outcome<'_>,
    throttled: Duration,
    repeated: u64,
) {
    let (adapter, call) = (audit.adapter, audit.call);
    let latency = audit.started.elapsed();
    // Borrowed, not built: the event's fields are formatted only by a
    // subscriber that takes the event.
    let (verb, namespace, name) = match request {
        Some(ApiRequest::Resource { verb, target }) => (
            verb.as_str(),
            target.namespace.as_deref().unwrap_or_default(),
            target.name.as_deref().unwrap_or_default(),
        ),
        Some(ApiRequest::NonResource { .. }) => ("get", "", ""),
        None => ("", "", ""),
    };
    let resource = Resource(request);
    // The cache's answers are summed up apart (`CacheHits`).
    let cached = false;
    let (decision, status, error) = match outcome {
        Outcome::Denied(why) => ("denied", 0u16, why),
        Outcome::Status(s) => ("allowed", s, ""),
        Outcome::Opened => ("allowed", 0, ""),
        Outcome::Failed(why) => ("allowed", 0, why),
    };
    let (path, error) = (clip(audit.path), clip(error));
    let (path, error) = (path.as_ref(), error.as_ref());
    tracing::info!(
        target: "pando_host::audit",
        adapter,
        call,
        verb,
        resource = %resource,
        namespace,
        name,
        path,
        decision,
        status,
        cached,
        error,
        repeated,
        throttled_ms = throttled.as_secs_f64() * 1e3,
        latency_ms = latency.as_secs_f64() * 1e3,
        "kubernetes {call}"
    );
}

/// A request's resource as a grant spells it (`pods`, `apps/deployments`,
/// `pods/log`), its path for a request that names none, or nothing.
struct Resource<'a>(Option<&'a ApiRequest>);

impl std::fmt::Display for Resource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(ApiRequest::Resource { target, .. }) => write!(f, "{}", target.spelled()),
            Some(ApiRequest::NonResource { path }) => f.write_str(path),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_repeated_is_written_at_powers_of_two_and_a_new_one_at_once() {
        let runs = DenialRuns::default();
        let written: Vec<Option<u64>> = (0..9).map(|_| runs.note("send", "/p", "no")).collect();
        assert_eq!(
            written,
            [
                Some(1),
                Some(2),
                None,
                Some(4),
                None,
                None,
                None,
                Some(8),
                None
            ]
        );
        assert_eq!(runs.note("send", "/q", "no"), Some(1), "another path");
        assert_eq!(runs.note("send", "/p", "no"), Some(1), "a new run");
    }

    #[test]
    fn cache_hits_are_summed_up_by_verb_and_resource_then_reset() {
        use crate::grants::request::{Method, parse};
        let hits = CacheHits::default();
        for i in 0..(MAX_SUMMARY_KEYS + 5) {
            let request = parse(
                Method::Get,
                &format!("/api/v1/namespaces/pando-{i}/pods"),
                &[],
            )
            .expect("a valid path");
            hits.note("a", &request, 10);
        }
        {
            let s = hits.state.lock().unwrap();
            assert_eq!(s.hits, (MAX_SUMMARY_KEYS + 5) as u64);
            assert_eq!(s.bytes, 10 * (MAX_SUMMARY_KEYS + 5) as u64);
            // Every list of pods is one read: keyed by verb and resource
            // (which the grants bound), not by path.
            assert_eq!(
                s.reads.get("list pods"),
                Some(&((MAX_SUMMARY_KEYS + 5) as u64))
            );
            assert_eq!(s.reads.len(), 1, "{:?}", s.reads);
        }
        hits.flush();
        let s = hits.state.lock().unwrap();
        assert_eq!(
            (s.hits, s.bytes, s.since),
            (0, 0, None),
            "written and reset"
        );
    }

    #[test]
    fn the_resource_is_written_as_a_grant_spells_it() {
        use crate::grants::request::{Method, parse};
        for (path, spelled) in [
            ("/api/v1/namespaces/pando-a/pods/web/log", "pods/log"),
            (
                "/apis/apps/v1/namespaces/pando-a/deployments",
                "apps/deployments",
            ),
            ("/api/v1/nodes/n1", "nodes"),
            ("/readyz", "/readyz"),
        ] {
            let request = parse(Method::Get, path, &[]).expect("a valid path");
            assert_eq!(Resource(Some(&request)).to_string(), spelled, "{path}");
        }
        assert_eq!(Resource(None).to_string(), "");
    }

    #[test]
    fn long_guest_text_is_clipped_on_a_character_boundary() {
        assert_eq!(clip("/api/v1/pods"), "/api/v1/pods");
        let exact = "a".repeat(MAX_AUDIT_TEXT);
        assert_eq!(clip(&exact), exact.as_str());
        // A two-byte character straddling the limit is left out whole.
        let long = format!("{}é{}", "a".repeat(MAX_AUDIT_TEXT - 1), "b".repeat(5000));
        let clipped = clip(&long);
        assert!(
            clipped.starts_with(&"a".repeat(MAX_AUDIT_TEXT - 1)),
            "{clipped}"
        );
        assert!(!clipped.contains('é'));
        assert!(
            clipped.ends_with(&format!("({} bytes)", long.len())),
            "{clipped}"
        );
        assert!(clipped.len() < MAX_AUDIT_TEXT + 32);
    }
}
