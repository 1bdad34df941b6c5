//! What every case runs with: the adapter, its capabilities, the options,
//! unique app ids, the recorder of results, and the helpers cases share
//! (waiting for observe, measuring requests, judging error kinds).

use std::future::Future;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use pando_host::capability::kubernetes::RequestCounts;
use pando_host::types::{
    BundleRef, DestroyOptions, ObservedBundle, RuntimeCapabilities, WorkloadSpec,
};
use pando_host::{Adapter, CallContext, CallError};

use super::cases::{self, Case};
use super::declared::Capability;
use super::plans::{self, Nonces};
use super::report::{CaseResult, Outcome};
use super::{Options, Target};

/// Why a check stopped short of passing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The adapter broke the contract.
    Fail(String),
    /// The check could not be made here: the environment cannot tell
    /// (never an adapter's error or a timeout).
    Skip(String),
    /// A declared capability whose effect this runtime could not show
    /// (a simulator whose workloads run no commands): neither a pass nor
    /// a failure.
    Unproven(String),
}

/// A check's result.
pub(crate) type Check<T = ()> = Result<T, Stop>;

/// A failure.
pub(crate) fn fail(why: impl Into<String>) -> Stop {
    Stop::Fail(why.into())
}

/// A skip.
pub(crate) fn skip(why: impl Into<String>) -> Stop {
    Stop::Skip(why.into())
}

/// A declared capability not proven.
pub(crate) fn unproven(why: impl Into<String>) -> Stop {
    Stop::Unproven(why.into())
}

/// Fails the check with a formatted reason unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($why:tt)+) => {
        if !$cond {
            return Err($crate::fixture::fail(format!($($why)+)));
        }
    };
}
pub(crate) use ensure;

/// A call that should have worked, and did not.
pub(crate) fn failed(what: &str, e: &CallError) -> Stop {
    fail(format!("{what} failed: {e}"))
}

/// Judges a call that may answer with an error: `Ok(Some(v))` when it
/// worked and `ok` allows that, `Ok(None)` for an adapter error of one of
/// `kinds`, and a failure for anything else: another kind, or a host error
/// (a trap, a deadline), which is never a typed answer.
pub(crate) fn answered<T>(
    what: &str,
    result: Result<T, CallError>,
    ok: bool,
    kinds: &[&str],
) -> Check<Option<T>> {
    let expected = || {
        let mut all: Vec<&str> = kinds.to_vec();
        if ok {
            all.insert(0, "success");
        }
        all.join(" or ")
    };
    match result {
        Ok(v) if ok => Ok(Some(v)),
        Ok(_) => Err(fail(format!("{what} succeeded; expected {}", expected()))),
        Err(CallError::Adapter(e)) if kinds.contains(&e.kind()) => Ok(None),
        Err(CallError::Adapter(e)) => Err(fail(format!(
            "{what} answered `{}` ({}); expected {}",
            e.kind(),
            e.message(),
            expected()
        ))),
        Err(e) => Err(fail(format!(
            "{what} did not answer with one of the contract's errors but the host's `{}`: {e}",
            e.kind()
        ))),
    }
}

/// What a case says beside its outcome: its notes, what a pass claims when
/// it checked less than the case's name says, and the group set-up it
/// waited for.
#[derive(Debug, Default)]
pub(crate) struct Notes {
    lines: Vec<String>,
    claim: Option<String>,
    waited: Option<Duration>,
}

impl Notes {
    /// A note for the reader of the result.
    pub(crate) fn push(&mut self, note: impl Into<String>) {
        self.lines.push(note.into());
    }

    /// The case checked only that `cap`, not declared, is refused:
    /// `answered` says how (`` answered `unsupported` as required ``). A pass
    /// then says so in place of the case's name, which claims the feature
    /// works.
    pub(crate) fn not_declared(&mut self, cap: Capability, answered: &str) {
        self.claim = Some(format!("{}: not declared; {answered}", cap.name()));
    }
}

/// A group's set-up: its result, which the group's cases share, and how
/// long it took, which each case that waited for it counts in its time.
pub(crate) struct Setup<T> {
    result: Check<T>,
    took: Duration,
}

impl<T> Setup<T> {
    /// The set-up's value for a case that needs it, told apart from the
    /// case's own result: "its set-up failed", or the set-up's skip. The
    /// case's time then includes the set-up's.
    pub(crate) fn get(&self, notes: &mut Notes) -> Check<&T> {
        notes.waited = Some(self.took);
        match &self.result {
            Ok(v) => Ok(v),
            Err(Stop::Fail(why)) => Err(fail(format!("its set-up failed: {why}"))),
            Err(Stop::Skip(why)) => Err(skip(why.clone())),
            Err(Stop::Unproven(why)) => Err(unproven(why.clone())),
        }
    }

    /// The set-up's own result.
    pub(crate) fn result(&self) -> &Check<T> {
        &self.result
    }

    /// How long it took.
    pub(crate) fn took(&self) -> Duration {
        self.took
    }
}

/// The suite's state while it runs.
pub(crate) struct Fixture<'a> {
    pub(crate) target: &'a Target,
    pub(crate) options: &'a Options,
    pub(crate) adapter: Adapter,
    capabilities: Option<Result<RuntimeCapabilities, String>>,
    run: String,
    /// What this run's workloads print and write, for the cases to find.
    pub(crate) nonces: Nonces,
    results: Vec<CaseResult>,
    /// The longest wait for the runtime that ended in time, in ms.
    settled_ms: AtomicU64,
}

impl<'a> Fixture<'a> {
    pub(crate) fn new(target: &'a Target, options: &'a Options, adapter: Adapter) -> Self {
        Fixture {
            target,
            options,
            adapter,
            capabilities: None,
            run: run_id(),
            nonces: Nonces::random(),
            results: Vec::new(),
            settled_ms: AtomicU64::new(0),
        }
    }

    /// The results, in order, and the longest wait for the runtime to
    /// settle that ended in time.
    pub(crate) fn into_results(self) -> (Vec<CaseResult>, Duration) {
        let settled = Duration::from_millis(self.settled_ms.into_inner());
        (self.results, settled)
    }

    /// Records a wait for the runtime that ended in time, `took` long.
    pub(crate) fn settled(&self, took: Duration) {
        let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        self.settled_ms.fetch_max(ms, Ordering::Relaxed);
    }

    /// Whether `case` is to run.
    pub(crate) fn wants(&self, case: &Case) -> bool {
        cases::selected(&self.options.only, case.id)
    }

    /// Whether any of `cases` is to run: a group with none skips its set-up.
    pub(crate) fn wants_any(&self, cases: &[Case]) -> bool {
        cases.iter().any(|c| self.wants(c))
    }

    /// The workload serving until stopped, with this run's image and nonces.
    pub(crate) fn server(&self) -> WorkloadSpec {
        plans::server(&self.options.image, &self.nonces)
    }

    /// The workload whose command prints and exits.
    pub(crate) fn finisher(&self) -> WorkloadSpec {
        plans::finisher(&self.options.image, &self.nonces)
    }

    /// A unique app id for one group of this run: `conf-<run>-<group>`.
    pub(crate) fn bundle_id(&self, group: &str) -> String {
        format!("conf-{}-{group}", self.run)
    }

    /// A context for one call: long enough for a slow runtime, bounded so
    /// a hung call costs a case, not the run.
    pub(crate) fn ctx(&self) -> CallContext {
        CallContext::default().with_timeout(Duration::from_secs(120))
    }

    /// The capabilities the adapter declared, read once by `C-INFO-02`.
    pub(crate) fn set_capabilities(&mut self, caps: Result<RuntimeCapabilities, String>) {
        self.capabilities = Some(caps);
    }

    /// The declared capabilities; a failure when they could not be read.
    pub(crate) async fn capabilities(&mut self) -> Check<RuntimeCapabilities> {
        if self.capabilities.is_none() {
            let caps = self
                .adapter
                .capabilities(&self.ctx())
                .await
                .map_err(|e| e.to_string());
            self.capabilities = Some(caps);
        }
        match &self.capabilities {
            Some(Ok(c)) => Ok(*c),
            Some(Err(e)) => Err(fail(format!(
                "the cases are chosen by capabilities, which failed: {e}"
            ))),
            None => Err(fail("capabilities were not read")),
        }
    }

    /// Runs one case, if selected, bounded by the case timeout, and records
    /// its result.
    pub(crate) async fn case(
        &mut self,
        case: &Case,
        body: impl AsyncFnOnce(&Fixture<'a>, &mut Notes) -> Check,
    ) {
        if !self.wants(case) {
            return;
        }
        let started = Instant::now();
        let mut notes = Notes::default();
        let limit = self.options.case_timeout;
        let result = match tokio::time::timeout(limit, body(self, &mut notes)).await {
            Ok(r) => r,
            Err(_) => Err(fail(format!(
                "the case did not finish within its limit of {} s",
                limit.as_secs()
            ))),
        };
        self.record(case, result, started.elapsed(), notes);
    }

    /// Runs a group's set-up, bounded by the case timeout, and times it.
    pub(crate) async fn setup<T>(&self, f: impl Future<Output = Check<T>>) -> Setup<T> {
        let started = Instant::now();
        let limit = self.options.case_timeout;
        let result = match tokio::time::timeout(limit, f).await {
            Ok(r) => r,
            Err(_) => Err(fail(format!(
                "the set-up did not finish within the case limit of {} s",
                limit.as_secs()
            ))),
        };
        Setup {
            result,
            took: started.elapsed(),
        }
    }

    /// Records a case whose check was made elsewhere (a group's set-up).
    /// `took` is the case's own time; a set-up it waited for
    /// ([`Setup::get`]) is added, and said in a note.
    pub(crate) fn record(&mut self, case: &Case, result: Check, took: Duration, notes: Notes) {
        if !self.wants(case) {
            return;
        }
        let outcome = match result {
            Ok(()) => Outcome::Pass,
            Err(Stop::Fail(why)) => Outcome::Fail(why),
            Err(Stop::Skip(why)) => Outcome::Skip(why),
            Err(Stop::Unproven(why)) => Outcome::Unproven(why),
        };
        tracing::info!(target: "pando_conformance", case = case.id, outcome = outcome.label(),
            reason = outcome.reason().unwrap_or(""), "conformance case");
        let Notes {
            mut lines,
            claim,
            waited,
        } = notes;
        let mut took = took;
        if let Some(setup) = waited.filter(|w| *w >= Duration::from_millis(100)) {
            took += setup;
            lines.push(format!(
                "its time includes its group's set-up ({:.1}s), which the group's cases share",
                setup.as_secs_f64()
            ));
        }
        // A claim narrows a pass only: a failure or a skip says its reason.
        let claim = claim.filter(|_| outcome == Outcome::Pass);
        let result = CaseResult::new(case, outcome, took, lines, claim);
        if let Some(progress) = &self.options.progress {
            progress(&result);
        }
        self.results.push(result);
    }

    /// Destroys a group's app, volumes included, whatever its cases did;
    /// a failure is noted on the group's last case.
    pub(crate) async fn cleanup(&mut self, bundle: &str) {
        let options = DestroyOptions {
            keep_volumes: false,
        };
        let r = self
            .adapter
            .destroy(&self.ctx(), &bref(bundle), options)
            .await;
        if let Err(e) = r {
            tracing::warn!(target: "pando_conformance", bundle, error = %e,
                "cleaning up a conformance app failed");
            if let Some(last) = self.results.last_mut() {
                last.notes
                    .push(format!("cleaning up app `{bundle}` failed: {e}"));
            }
        }
    }

    /// The adapter's request record now (none without one).
    pub(crate) fn requests(&self) -> Option<RequestCounts> {
        self.adapter.kubernetes_requests()
    }

    /// Runs `f` and returns what it returned with the requests sent
    /// meanwhile (none when the adapter has no record).
    pub(crate) async fn measured<T>(
        &self,
        f: impl Future<Output = T>,
    ) -> (T, Option<RequestCounts>) {
        let before = self.requests();
        let value = f.await;
        let sent = match (before, self.requests()) {
            (Some(b), Some(a)) => Some(a.since(&b)),
            _ => None,
        };
        (value, sent)
    }

    /// Observes `bundle` until `done` holds, within the settle timeout;
    /// fails naming `what` and the last report otherwise.
    pub(crate) async fn observe_until(
        &self,
        bundle: &str,
        what: &str,
        done: impl Fn(&ObservedBundle) -> bool,
    ) -> Check<ObservedBundle> {
        self.observe_within(bundle, done).await?.map_err(|last| {
            fail(format!(
                "observe did not report {what} within {} s; it last said: {}",
                self.options.settle_timeout.as_secs(),
                describe(&last)
            ))
        })
    }

    /// Observes `bundle` until `done` holds, within the settle timeout:
    /// `Ok(Ok(seen))` when it did, `Ok(Err(last report))` when the time ran
    /// out, for a caller that can tell a runtime that never gets there from
    /// an adapter that never reports it; an `observe` error fails, naming
    /// the call.
    pub(crate) async fn observe_within(
        &self,
        bundle: &str,
        done: impl Fn(&ObservedBundle) -> bool,
    ) -> Check<Result<ObservedBundle, ObservedBundle>> {
        let started = Instant::now();
        let deadline = started + self.options.settle_timeout;
        loop {
            let seen = self
                .adapter
                .observe(&self.ctx(), &bref(bundle))
                .await
                .map_err(|e| failed(&format!("observe of `{bundle}`"), &e))?;
            if done(&seen) {
                self.settled(started.elapsed());
                return Ok(Ok(seen));
            }
            if Instant::now() >= deadline {
                return Ok(Err(seen));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Why this runtime's workloads do not really run, when the runner
    /// said so beforehand ([`crate::Environment::simulated`]); `None` for a
    /// real runtime.
    pub(crate) fn simulated(&self) -> Option<String> {
        self.options
            .environment
            .as_ref()
            .and_then(|env| env.simulated())
    }
}

/// A reference to an app.
pub(crate) fn bref(id: &str) -> BundleRef {
    BundleRef { id: id.into() }
}

/// An observed app in a line, for failure messages.
pub(crate) fn describe(seen: &ObservedBundle) -> String {
    let workloads: Vec<String> = seen
        .workloads
        .iter()
        .map(|w| {
            let mut s = format!("{} {:?}", w.name, w.phase);
            if let Some(code) = w.exit_code {
                s.push_str(&format!(" exit={code}"));
            }
            if !w.reason.is_empty() {
                s.push_str(&format!(" ({})", w.reason));
            }
            s
        })
        .collect();
    let volumes: Vec<String> = seen
        .volumes
        .iter()
        .map(|v| format!("{}{}", v.name, if v.ready { "" } else { " (not ready)" }))
        .collect();
    format!(
        "exists={}, workloads=[{}], volumes=[{}]",
        seen.exists,
        workloads.join(", "),
        volumes.join(", ")
    )
}

/// Eight hex digits, different for every run (and every process).
fn run_id() -> String {
    let hash = std::collections::hash_map::RandomState::new()
        .hash_one((std::process::id(), SystemTime::now()));
    format!("{:08x}", hash as u32)
}

/// Reproducible-enough noise for test data: xorshift64 from a random seed.
pub(crate) fn noise(len: usize) -> Vec<u8> {
    let mut x = std::collections::hash_map::RandomState::new().hash_one(SystemTime::now()) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// A note on what the request record showed, or why there is none.
pub(crate) fn unmeasured_note() -> String {
    "requests not counted: the adapter reaches no runtime API through the host (no Kubernetes \
     import), so it can change nothing through it"
        .into()
}
