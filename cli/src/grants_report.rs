//! `--grants-report`: which grant rules a verb used, which it never needed,
//! what was denied (with the rule to add) and what a host limit refused, as
//! a few lines of text for a person or as JSON for a script.

use std::io::IsTerminal;
use std::path::Path;

use clap::ValueEnum;
use pando_host::grants::Rule;
use pando_host::grants::check::{DenialCount, GrantReport, is_cluster_scoped, proposed_rule};
use pando_host::grants::rbac::RbacResource;

/// The form of the grants report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// A few lines: rules used and unused, denials with the rule to add,
    /// limit refusals.
    Text,
    /// The whole report as one JSON document.
    Json,
}

/// The form to write to `path` when none was asked for: text to a terminal
/// (`-` is stderr), JSON to a pipe or a file, so a script keeps its JSON.
pub fn default_format(path: &Path) -> ReportFormat {
    if path.as_os_str() == "-" && std::io::stderr().is_terminal() {
        ReportFormat::Text
    } else {
        ReportFormat::Json
    }
}

/// The report in `format`, ending with a newline.
pub fn render(report: &GrantReport, format: ReportFormat) -> Result<String, serde_json::Error> {
    match format {
        ReportFormat::Json => Ok(serde_json::to_string_pretty(report)? + "\n"),
        ReportFormat::Text => Ok(text(report)),
    }
}

/// What a rule allows, in one phrase: `get, list pods in pando-* except
/// pando-system`, `list nodes (cluster-scoped)`.
fn rule_phrase(rule: &Rule) -> String {
    let except = if rule.except.is_empty() {
        String::new()
    } else {
        format!(" except {}", rule.except.join(", "))
    };
    let place = if rule.cluster {
        match rule.names.is_empty() {
            true => "(cluster-scoped)".to_string(),
            false => format!("named {} (cluster-scoped)", rule.names.join(", ")),
        }
    } else {
        format!("in {}", rule.namespaces.join(", "))
    };
    format!(
        "{} {} {place}{except}",
        rule.verbs.join(", "),
        rule.resources.join(", ")
    )
}

/// The rule that allows a denied request: the host's proposal for a
/// namespace (the app pattern for `pando-<app>`), else cluster-scoped or
/// across all namespaces as the resource is.
fn proposal(d: &DenialCount) -> String {
    match &d.namespace {
        Some(ns) => proposed_rule(d.verb, &d.resource, Some(ns)),
        None => {
            let r = RbacResource::from_spelling(&d.resource);
            let base = r.resource.split('/').next().unwrap_or_default();
            if is_cluster_scoped(&r.api_group, base) {
                format!(
                    "- {{verbs: [{}], resources: [{}], cluster: true}}",
                    d.verb, d.resource
                )
            } else {
                proposed_rule(d.verb, &d.resource, None)
            }
        }
    }
}

/// The short text form.
pub fn text(report: &GrantReport) -> String {
    let used = report.rules.iter().filter(|r| r.used).count();
    let mut out = format!(
        "grants: {} rules, {used} used, {} never used\n",
        report.rules.len(),
        report.rules.len() - used
    );
    for r in &report.rules {
        let uses = match r.used {
            true => format!("used ×{}", r.uses),
            false => "unused".to_string(),
        };
        out.push_str(&format!(
            "  rules[{}] {uses}: {}\n",
            r.index,
            rule_phrase(&r.rule)
        ));
    }
    let denied: u64 = report.denials.iter().map(|d| d.count).sum::<u64>() + report.denials_dropped;
    if denied > 0 {
        out.push_str(&format!("denied: {denied} requests\n"));
        for d in &report.denials {
            let place = d
                .namespace
                .as_ref()
                .map(|ns| format!(" in {ns}"))
                .unwrap_or_default();
            out.push_str(&format!(
                "  {} {}{place} ×{}; to allow it, add: {}\n",
                d.verb,
                d.resource,
                d.count,
                proposal(d)
            ));
        }
        if report.denials_dropped > 0 {
            out.push_str(&format!(
                "  … and {} more not listed\n",
                report.denials_dropped
            ));
        }
    }
    for o in &report.object_denials {
        out.push_str(&format!(
            "refused by object rule {}: ×{} writes\n",
            o.rule, o.count
        ));
    }
    for l in &report.limit_refusals {
        out.push_str(&format!(
            "refused by the limit {}: ×{} (not a grant: raise the limit)\n",
            l.limit, l.count
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use pando_host::grants::check::{LimitRefusalCount, RuleUsage};
    use pando_host::grants::request::Verb;

    use super::*;

    fn rule(yaml: &str) -> Rule {
        pando_host::yaml::from_str(yaml).expect("a rule")
    }

    #[test]
    fn the_text_names_rules_denials_with_their_rule_and_limits() {
        let report = GrantReport {
            rules: vec![
                RuleUsage {
                    index: 0,
                    rule: rule(
                        "{verbs: [get, list], resources: [pods], namespaces: [\"pando-*\"], except: [pando-system]}",
                    ),
                    uses: 7,
                    used: true,
                },
                RuleUsage {
                    index: 1,
                    rule: rule("{verbs: [list], resources: [nodes], cluster: true}"),
                    uses: 0,
                    used: false,
                },
            ],
            denials: vec![
                DenialCount {
                    verb: Verb::Create,
                    resource: "secrets".into(),
                    namespace: Some("pando-hello".into()),
                    count: 2,
                },
                DenialCount {
                    verb: Verb::List,
                    resource: "nodes".into(),
                    namespace: None,
                    count: 1,
                },
            ],
            denials_dropped: 0,
            object_denials: vec![],
            limit_refusals: vec![LimitRefusalCount {
                limit: "kubernetes.max_body_bytes".into(),
                count: 1,
            }],
        };
        let text = text(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "grants: 2 rules, 1 used, 1 never used",
                "  rules[0] used ×7: get, list pods in pando-* except pando-system",
                "  rules[1] unused: list nodes (cluster-scoped)",
                "denied: 3 requests",
                "  create secrets in pando-hello ×2; to allow it, add: - {verbs: [create], \
                 resources: [secrets], namespaces: [\"pando-*\"], except: [\"pando-system\"]}",
                "  list nodes ×1; to allow it, add: - {verbs: [list], resources: [nodes], cluster: true}",
                "refused by the limit kubernetes.max_body_bytes: ×1 (not a grant: raise the limit)",
            ],
            "{text}"
        );
        let json = render(&report, ReportFormat::Json).expect("JSON");
        let v: serde_json::Value = serde_json::from_str(&json).expect("one JSON document");
        assert_eq!(v["rules"][0]["uses"], 7, "{json}");
    }

    #[test]
    fn a_file_gets_json_unless_asked() {
        assert_eq!(
            default_format(Path::new("/tmp/report.json")),
            ReportFormat::Json
        );
    }
}
