//! What `pando-host grants check` found, and its text form.

use pando_host::grants::check::is_cluster_scoped;
use pando_host::grants::rbac::RbacResource;
use serde::Serialize;

/// A grant the cluster would refuse.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Refused {
    /// The grant rule's index in `kubernetes.rules`.
    pub rule: usize,
    /// The verb.
    pub verb: String,
    /// The resource, as the grants spell it.
    pub resource: String,
    /// The namespace; none for cluster-scoped objects or every namespace.
    pub namespace: Option<String>,
    /// `cluster`, `all-namespaces` or `namespace`.
    pub scope: &'static str,
    /// The object's name, where the rule names objects exactly.
    pub name: Option<String>,
}

/// A permission the identity holds that no grant asks for.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Beyond {
    /// The verb (`*` as the cluster says it).
    pub verb: String,
    /// The API group (empty: core).
    pub api_group: String,
    /// The resource (with `/subresource`).
    pub resource: String,
    /// Only these names; empty is every name.
    pub names: Vec<String>,
    /// Where the reviews show it (every reviewed namespace for a
    /// cluster-wide permission).
    pub namespaces: Vec<String>,
}

/// Something the reviews could not settle.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Unchecked {
    /// The grant rule's index, when it is about one rule.
    pub rule: Option<usize>,
    /// What and why.
    pub reason: String,
}

/// The report.
#[derive(Debug, Default, Serialize)]
pub struct CheckReport {
    /// How many (verb, resource, place) grants were asked about.
    pub checked: usize,
    /// (a) What the cluster would refuse: 403 ahead.
    pub refused: Vec<Refused>,
    /// (b) What the identity holds beyond the grants.
    pub beyond: Vec<Beyond>,
    /// (c) What could not be checked.
    pub unchecked: Vec<Unchecked>,
}

fn place(r: &Refused) -> String {
    let name = r
        .name
        .as_ref()
        .map(|n| format!(" \"{n}\""))
        .unwrap_or_default();
    match (&r.namespace, r.scope) {
        (Some(ns), _) => format!("{}{name} in namespace \"{ns}\"", r.resource),
        (None, "all-namespaces") => format!("{}{name} in all namespaces", r.resource),
        (None, _) => format!("{}{name} (cluster-scoped)", r.resource),
    }
}

/// Lines that differ only in their verb, as one line listing the verbs.
fn by_verb(items: impl IntoIterator<Item = (String, String)>) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = vec![];
    for (key, verb) in items {
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, verbs)) => verbs.push(verb),
            None => out.push((key, vec![verb])),
        }
    }
    out
}

/// Each line with its verbs in the place of `{}`.
fn push_lines(out: &mut String, lines: Vec<(String, Vec<String>)>) {
    for (line, verbs) in lines {
        out.push_str("  ");
        out.push_str(&line.replacen("{}", &verbs.join(", "), 1));
        out.push('\n');
    }
}

/// The report as text: one line per rule and place, its verbs together.
pub fn text(report: &CheckReport) -> String {
    let mut out = String::new();
    if !report.refused.is_empty() {
        out.push_str("refused: the cluster would answer these grants with 403\n");
        let lines = by_verb(report.refused.iter().map(|r| {
            (
                format!("kubernetes.rules[{}]: {{}} {}", r.rule, place(r)),
                r.verb.clone(),
            )
        }));
        push_lines(&mut out, lines);
    }
    if !report.beyond.is_empty() {
        out.push_str("beyond the grants: the identity may also (informational)\n");
        let lines = by_verb(report.beyond.iter().map(|b| {
            let resource = RbacResource {
                api_group: b.api_group.clone(),
                resource: b.resource.clone(),
            };
            let names = if b.names.is_empty() {
                String::new()
            } else {
                format!(" {:?}", b.names)
            };
            let base = b.resource.split('/').next().unwrap_or_default();
            let place = if is_cluster_scoped(&b.api_group, base) {
                "(cluster-scoped)".to_string()
            } else {
                format!("in {}", b.namespaces.join(", "))
            };
            (
                format!("{{}} {}{names} {place}", resource.spelling()),
                b.verb.clone(),
            )
        }));
        push_lines(&mut out, lines);
    }
    if !report.unchecked.is_empty() {
        out.push_str("not checked:\n");
        for u in &report.unchecked {
            match u.rule {
                Some(i) => out.push_str(&format!("  kubernetes.rules[{i}]: {}\n", u.reason)),
                None => out.push_str(&format!("  {}\n", u.reason)),
            }
        }
    }
    out.push_str(&format!(
        "{} grants checked: {} refused, {} permissions beyond the grants, {} not checked\n",
        report.checked,
        report.refused.len(),
        report.beyond.len(),
        report.unchecked.len()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_puts_the_verbs_of_one_place_on_one_line() {
        let refused = |verb: &str| Refused {
            rule: 0,
            verb: verb.into(),
            resource: "pods".into(),
            namespace: Some("app-a".into()),
            scope: "namespace",
            name: None,
        };
        let report = CheckReport {
            checked: 3,
            refused: vec![refused("create"), refused("delete")],
            beyond: vec![Beyond {
                verb: "watch".into(),
                api_group: String::new(),
                resource: "nodes".into(),
                names: vec![],
                namespaces: vec!["app-a".into()],
            }],
            unchecked: vec![],
        };
        let text = text(&report);
        assert!(
            text.contains("  kubernetes.rules[0]: create, delete pods in namespace \"app-a\"\n"),
            "{text}"
        );
        assert!(text.contains("  watch nodes (cluster-scoped)\n"), "{text}");
        assert!(
            text.ends_with(
                "3 grants checked: 2 refused, 1 permissions beyond the grants, 0 not checked\n"
            ),
            "{text}"
        );
    }
}
