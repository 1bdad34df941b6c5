//! The report as JUnit XML, the format CI systems read, written by
//! `quick-junit` (which also drops what XML 1.0 cannot carry: the control
//! characters an adapter's error message may hold, and ANSI colours).

use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};

use super::report::{Outcome, Report};

/// One `<testsuites>` holding one `<testsuite>` named after the adapter,
/// a `<testcase>` per case: `classname` the case id, `name` the rule and
/// what it checks, `time` in seconds; `<failure message>` or
/// `<skipped message>` with the reason (an unproven declaration is a
/// `<skipped type="unproven" message="unproven: …">`); notes in
/// `<system-out>`.
pub(crate) fn render(report: &Report) -> String {
    let name = format!("pando-conformance {}", report.adapter);
    let mut suite = TestSuite::new(name.as_str());
    suite.set_time(report.duration);
    suite.add_property(Property::new("component", report.component.as_str()));
    suite.add_property(Property::new("digest", report.digest.as_str()));
    for case in &report.cases {
        let title = if case.rule.is_empty() {
            case.name.clone()
        } else {
            format!("{} {}", case.rule, case.name)
        };
        let status = match &case.outcome {
            Outcome::Pass => TestCaseStatus::success(),
            Outcome::Fail(reason) => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(reason.as_str())
                    .set_description(reason.as_str());
                s
            }
            Outcome::Skip(reason) => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(reason.as_str());
                s
            }
            // Neither passed nor failed: a skip to CI, told apart by its
            // type and message (the exit status tells it apart too).
            Outcome::Unproven(reason) => {
                let mut s = TestCaseStatus::skipped();
                s.set_type("unproven")
                    .set_message(format!("unproven: {reason}"));
                s
            }
        };
        let mut test = TestCase::new(title, status);
        test.set_classname(case.id.as_str()).set_time(case.duration);
        // A pass's claim (what it checked, when less than its name says)
        // goes first in its output: the name stays the case's, for CI's
        // history of it.
        let out: Vec<String> = case
            .claim
            .iter()
            .map(|c| format!("checked only: {c}"))
            .chain(case.notes.iter().cloned())
            .collect();
        if !out.is_empty() {
            test.set_system_out(out.join("\n"));
        }
        suite.add_test_case(test);
    }
    let mut junit = quick_junit::Report::new(name.as_str());
    junit.set_time(report.duration).add_test_suite(suite);
    junit.to_string().unwrap_or_else(|e| {
        // Serializing into memory fails only on a bug of the writer: say
        // so in a document CI still reads.
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"pando-conformance\" \
             tests=\"0\"><!-- the report could not be written: {} --></testsuites>\n",
            e.to_string().replace("--", "- -")
        )
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::report::CaseResult;

    fn result(id: &str, outcome: Outcome) -> CaseResult {
        CaseResult {
            id: id.into(),
            rule: "O-41".into(),
            name: "apply <again>".into(),
            outcome,
            claim: None,
            duration: Duration::from_millis(1200),
            notes: vec![],
        }
    }

    #[test]
    fn failures_and_skips_are_marked_and_text_is_escaped() {
        let report = Report {
            adapter: "test".into(),
            component: "a&b.wasm".into(),
            digest: "00".into(),
            contract: "0.1.0".into(),
            duration: Duration::from_secs(2),
            longest_settle: Duration::from_secs(1),
            cases: vec![
                result("C-A-01", Outcome::Pass),
                result("C-A-02", Outcome::Fail("wrote \"secrets\" <1>\u{1}".into())),
                result("C-A-03", Outcome::Skip("not declared".into())),
                result(
                    "C-A-04",
                    Outcome::Unproven("logs: declared; simulated".into()),
                ),
            ],
        };
        let x = render(&report);
        assert!(x.contains("tests=\"4\""), "{x}");
        assert!(x.contains("failures=\"1\""), "{x}");
        assert!(x.contains("skipped=\"2\""), "{x}");
        assert!(
            x.contains(
                "<skipped message=\"unproven: logs: declared; simulated\" type=\"unproven\"/>"
            ),
            "{x}"
        );
        assert!(
            x.contains("name=\"O-41 apply &lt;again&gt;\" classname=\"C-A-01\" time=\"1.200\"/>"),
            "{x}"
        );
        assert!(
            x.contains("<failure message=\"wrote &quot;secrets&quot; &lt;1&gt;\""),
            "the control character is dropped: {x}"
        );
        assert!(!x.contains('\u{1}'), "{x}");
        assert!(x.contains("<skipped message=\"not declared\"/>"), "{x}");
        assert!(x.contains("value=\"a&amp;b.wasm\""), "{x}");
        assert!(x.trim_end().ends_with("</testsuites>"), "{x}");
    }
}
