//! The report as JUnit XML, the format CI systems read.
//!
//! Written by hand: the document is one fixed shape, and the only care it
//! needs is escaping, which must also drop the characters XML 1.0 cannot
//! carry at all (control characters in an adapter's error message), which
//! an XML library's escaping leaves in.

use std::fmt::Write;

use super::report::{Outcome, Report};

/// One `<testsuites>` holding one `<testsuite>` named after the adapter,
/// a `<testcase>` per case: `classname` the case id, `name` the rule and
/// what it checks, `time` in seconds; `<failure message>` or
/// `<skipped message>` with the reason; notes in `<system-out>`.
pub(crate) fn render(report: &Report) -> String {
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let suite = format!("pando-conformance {}", report.adapter);
    let _ = writeln!(
        x,
        "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" errors=\"0\" time=\"{:.3}\">",
        escape(&suite),
        report.cases.len(),
        report.failed(),
        report.skipped(),
        report.duration.as_secs_f64()
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" errors=\"0\" time=\"{:.3}\">",
        escape(&suite),
        report.cases.len(),
        report.failed(),
        report.skipped(),
        report.duration.as_secs_f64()
    );
    let _ = writeln!(x, "    <properties>");
    for (name, value) in [
        ("component", report.component.as_str()),
        ("digest", report.digest.as_str()),
    ] {
        let _ = writeln!(
            x,
            "      <property name=\"{name}\" value=\"{}\"/>",
            escape(value)
        );
    }
    let _ = writeln!(x, "    </properties>");
    for case in &report.cases {
        let name = if case.rule.is_empty() {
            case.name.clone()
        } else {
            format!("{} {}", case.rule, case.name)
        };
        let _ = write!(
            x,
            "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
            escape(&case.id),
            escape(&name),
            case.duration.as_secs_f64()
        );
        // A pass's claim (what it checked, when less than its name says)
        // goes first in its output: the name stays the case's, for CI's
        // history of it.
        let out: Vec<String> = case
            .claim
            .iter()
            .map(|c| format!("checked only: {c}"))
            .chain(case.notes.iter().cloned())
            .collect();
        if matches!(case.outcome, Outcome::Pass) && out.is_empty() {
            x.push_str("/>\n");
            continue;
        }
        x.push_str(">\n");
        match &case.outcome {
            Outcome::Pass => {}
            Outcome::Fail(reason) => {
                let _ = writeln!(
                    x,
                    "      <failure message=\"{}\">{}</failure>",
                    escape(reason),
                    escape(reason)
                );
            }
            Outcome::Skip(reason) => {
                let _ = writeln!(x, "      <skipped message=\"{}\"/>", escape(reason));
            }
        }
        if !out.is_empty() {
            let _ = writeln!(
                x,
                "      <system-out>{}</system-out>",
                escape(&out.join("\n"))
            );
        }
        x.push_str("    </testcase>\n");
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// Text for an attribute or element: the five markup characters as
/// entities, and characters XML 1.0 does not allow (most C0 controls,
/// U+FFFE, U+FFFF) as `\u{…}` text, so the document always parses.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Kept in attributes too: a newline in an attribute is
            // normalized to a space by parsers, so write it as a reference.
            '\n' => out.push_str("&#10;"),
            '\t' => out.push_str("&#9;"),
            '\r' => out.push_str("&#13;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
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
            duration: Duration::from_secs(2),
            longest_settle: Duration::from_secs(1),
            cases: vec![
                result("C-A-01", Outcome::Pass),
                result("C-A-02", Outcome::Fail("wrote \"secrets\" <1>\u{1}".into())),
                result("C-A-03", Outcome::Skip("not declared".into())),
            ],
        };
        let x = render(&report);
        assert!(
            x.contains("tests=\"3\" failures=\"1\" skipped=\"1\""),
            "{x}"
        );
        assert!(x.contains(
            "<testcase classname=\"C-A-01\" name=\"O-41 apply &lt;again&gt;\" time=\"1.200\"/>"
        ));
        assert!(x.contains("<failure message=\"wrote &quot;secrets&quot; &lt;1&gt;\\u{1}\">"));
        assert!(x.contains("<skipped message=\"not declared\"/>"));
        assert!(x.contains("value=\"a&amp;b.wasm\""));
        assert!(x.ends_with("</testsuites>\n"));
    }
}
