//! What a run of the suite found: one result per case, and the run's
//! summary.

use std::time::Duration;

use serde::{Serialize, Serializer};

use super::cases::Case;

/// How a case ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "reason", rename_all = "lowercase")]
pub enum Outcome {
    /// The adapter did what the contract says.
    Pass,
    /// It did not: why, naming the call and what it answered.
    Fail(String),
    /// Not checked, because the environment cannot tell: why (a runtime
    /// the runner declared simulated, where a workload's command never
    /// ends it). Never an adapter's error or a timeout.
    Skip(String),
    /// A declared capability that this runtime could not show working (a
    /// simulator whose workloads run no commands): why, naming the
    /// declaration. Not a failure, and not a pass: a run with one exits
    /// with its own status.
    Unproven(String),
}

impl Outcome {
    /// `PASS`, `FAIL`, `SKIP` or `UNPROVEN`.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Fail(_) => "FAIL",
            Outcome::Skip(_) => "SKIP",
            Outcome::Unproven(_) => "UNPROVEN",
        }
    }

    /// The reason of a failure, a skip or an unproven declaration.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Outcome::Pass => None,
            Outcome::Fail(r) | Outcome::Skip(r) | Outcome::Unproven(r) => Some(r),
        }
    }
}

/// One case's result.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    /// The case's stable id (`C-APPLY-02`).
    pub id: String,
    /// The spec rules it checks, comma-separated (`R-243,R-242`); empty
    /// when the spec names none.
    pub rule: String,
    /// What it checks.
    pub name: String,
    /// How it ended.
    pub outcome: Outcome,
    /// For a pass that checked less than `name` says, what it did check:
    /// a capability not declared, whose call answered `unsupported` as
    /// required (`` exec: not declared; answered `unsupported` as
    /// required ``). The case's line shows it in place of the name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim: Option<String>,
    /// How long it took, its set-up included.
    #[serde(rename = "duration_ms", serialize_with = "millis")]
    pub duration: Duration,
    /// What a reader of a pass should know (a check that could not be
    /// made on this runtime, what was measured).
    pub notes: Vec<String>,
}

impl CaseResult {
    pub(crate) fn new(
        case: &Case,
        outcome: Outcome,
        duration: Duration,
        notes: Vec<String>,
        claim: Option<String>,
    ) -> Self {
        CaseResult {
            id: case.id.into(),
            rule: case.rule(),
            name: case.name.into(),
            outcome,
            claim,
            duration,
            notes,
        }
    }

    /// The case as one line:
    /// `PASS C-APPLY-02 O-41 apply again … (1.2s)`, then `: reason` for a
    /// failure or a skip. A pass with a [`claim`](CaseResult::claim) shows
    /// the claim in place of the name.
    pub fn line(&self) -> String {
        let mut line = format!("{} {}", self.outcome.label(), self.id);
        if !self.rule.is_empty() {
            line.push(' ');
            line.push_str(&self.rule);
        }
        line.push(' ');
        line.push_str(self.claim.as_deref().unwrap_or(&self.name));
        line.push_str(&format!(" ({:.1}s)", self.duration.as_secs_f64()));
        if let Some(reason) = self.outcome.reason() {
            line.push_str(": ");
            // One line per case: a reason quoting a multi-line message is
            // folded.
            line.push_str(&reason.replace('\n', " "));
        }
        line
    }
}

fn millis<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// What a run says of the adapter as a whole; the command line's exit
/// status (`docs/conformance.md`, "Output and exit codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// No case failed and no declared capability was left unproven (a
    /// case may still be skipped for what the environment cannot tell).
    Proven,
    /// No case failed, but a declared capability could not be proven here.
    Unproven,
    /// A case failed.
    Failed,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The adapter's kind.
    pub adapter: String,
    /// The component file.
    pub component: String,
    /// Its SHA-256.
    pub digest: String,
    /// The contract version it exports (`0.1.0`): which cases apply
    /// ([`crate::cases_for`]).
    pub contract: String,
    /// How long the run took.
    #[serde(rename = "duration_ms", serialize_with = "millis")]
    pub duration: Duration,
    /// The longest the runtime took to get somewhere the suite waited for
    /// (a workload running or exited, a volume ready, a watch event), of
    /// the waits that ended within the settle timeout: how much of
    /// `Options::settle_timeout` this runtime needs.
    #[serde(rename = "longest_settle_ms", serialize_with = "millis")]
    pub longest_settle: Duration,
    /// Each case run, in order.
    pub cases: Vec<CaseResult>,
}

impl Report {
    /// How many cases passed.
    pub fn passed(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Pass))
    }

    /// How many failed.
    pub fn failed(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Fail(_)))
    }

    /// How many were skipped.
    pub fn skipped(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Skip(_)))
    }

    /// How many declared capabilities' cases were left unproven.
    pub fn unproven(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Unproven(_)))
    }

    /// No case failed (some may be skipped or unproven: see
    /// [`Report::verdict`]).
    pub fn is_success(&self) -> bool {
        self.failed() == 0
    }

    /// What the run says of the adapter as a whole.
    pub fn verdict(&self) -> Verdict {
        if self.failed() > 0 {
            Verdict::Failed
        } else if self.unproven() > 0 {
            Verdict::Unproven
        } else {
            Verdict::Proven
        }
    }

    /// The cases that failed.
    pub fn failures(&self) -> impl Iterator<Item = &CaseResult> {
        self.cases
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Fail(_)))
    }

    /// The result of case `id`, if it ran.
    pub fn case(&self, id: &str) -> Option<&CaseResult> {
        self.cases.iter().find(|c| c.id == id)
    }

    /// `28 cases: 25 passed, 0 failed, 1 skipped, 2 unproven (74.2s; the
    /// runtime settled within 4.1s)`.
    pub fn summary(&self) -> String {
        format!(
            "{} cases: {} passed, {} failed, {} skipped, {} unproven ({:.1}s; the runtime settled \
             within {:.1}s)",
            self.cases.len(),
            self.passed(),
            self.failed(),
            self.skipped(),
            self.unproven(),
            self.duration.as_secs_f64(),
            self.longest_settle.as_secs_f64()
        )
    }

    /// One line per case (and its notes, indented), then the summary.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for case in &self.cases {
            out.push_str(&case.line());
            out.push('\n');
            for note in &case.notes {
                out.push_str("    note: ");
                out.push_str(note);
                out.push('\n');
            }
        }
        out.push_str(&self.summary());
        out.push('\n');
        out
    }

    /// The report as a JUnit XML document: one `testsuite`, one
    /// `testcase` per case.
    pub fn to_junit(&self) -> String {
        super::junit::render(self)
    }

    fn count(&self, f: impl Fn(&Outcome) -> bool) -> usize {
        self.cases.iter().filter(|c| f(&c.outcome)).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::CASES;

    fn report(outcomes: &[Outcome]) -> Report {
        let case = CASES[0];
        Report {
            adapter: "test".into(),
            component: "a.wasm".into(),
            digest: "00".into(),
            contract: "0.1.0".into(),
            duration: Duration::from_secs(1),
            longest_settle: Duration::ZERO,
            cases: outcomes
                .iter()
                .map(|o| CaseResult::new(&case, o.clone(), Duration::ZERO, vec![], None))
                .collect(),
        }
    }

    #[test]
    fn the_verdict_tells_proven_unproven_and_failed_apart_and_a_skip_is_neither() {
        let pass = Outcome::Pass;
        let skip = Outcome::Skip("the runner declares the runtime simulated".into());
        let unproven = Outcome::Unproven("logs: declared; …".into());
        let fail = Outcome::Fail("observe failed".into());
        assert_eq!(
            report(&[pass.clone(), skip.clone()]).verdict(),
            Verdict::Proven
        );
        let r = report(&[pass.clone(), skip.clone(), unproven.clone()]);
        assert_eq!(r.verdict(), Verdict::Unproven);
        assert!(r.is_success(), "unproven is not a failure");
        let r = report(&[pass, skip, unproven.clone(), fail]);
        assert_eq!(r.verdict(), Verdict::Failed);
        assert!(
            r.summary()
                .starts_with("4 cases: 1 passed, 1 failed, 1 skipped, 1 unproven (")
        );
        let json = serde_json::to_value(&report(&[unproven]).cases[0]).expect("serializes");
        assert_eq!(
            json["outcome"],
            serde_json::json!({"status": "unproven", "reason": "logs: declared; …"})
        );
        assert!(
            report(&[Outcome::Unproven("x".into())]).cases[0]
                .line()
                .starts_with("UNPROVEN C-INFO-01 "),
        );
    }

    #[test]
    fn a_pass_with_a_claim_says_it_in_place_of_the_name_and_a_failure_never_does() {
        let exec = CASES
            .iter()
            .find(|c| c.id == "C-EXEC-01")
            .expect("C-EXEC-01 is a case");
        let claim = Some("exec: not declared; answered `unsupported` as required".to_string());
        let pass = CaseResult::new(
            exec,
            Outcome::Pass,
            Duration::from_millis(40),
            vec![],
            claim,
        );
        assert_eq!(
            pass.line(),
            "PASS C-EXEC-01 R-084 exec: not declared; answered `unsupported` as required (0.0s)"
        );
        let fail = CaseResult::new(
            exec,
            Outcome::Fail("no".into()),
            Duration::from_secs(2),
            vec![],
            None,
        );
        assert_eq!(
            fail.line(),
            format!("FAIL C-EXEC-01 R-084 {} (2.0s): no", exec.name)
        );
    }
}
