//! The YAML `grants rbac` writes, by hand so that it reads as a person
//! would write it (flow lists, comments beside the rules): scalars quoted
//! where YAML would read them as something else, and the objects' frames.

use std::fmt::Write as _;

use pando_host::grants::objects::schema::Subject;

/// The RBAC API group, as bindings and subjects name it.
pub(super) const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// A scalar: plain when YAML reads it back as the same string, else quoted.
pub(super) fn scalar(s: &str) -> String {
    let plain = s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b':' | b'/'))
        && s.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n"
        );
    if plain { s.to_string() } else { quoted(s) }
}

/// A double-quoted scalar (a JSON string is one).
pub(super) fn quoted(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// A flow list of quoted strings: `["get", "list"]`.
pub(super) fn flow(items: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let items: Vec<String> = items.into_iter().map(|s| quoted(s.as_ref())).collect();
    format!("[{}]", items.join(", "))
}

/// A binding's `subjects:`.
pub(super) fn subjects(subjects: &[Subject]) -> String {
    let mut out = String::from("subjects:\n");
    for s in subjects {
        if s.kind == "ServiceAccount" {
            let _ = writeln!(out, "- kind: ServiceAccount\n  name: {}", scalar(&s.name));
            let ns = s.namespace.as_deref().unwrap_or("default");
            let _ = writeln!(out, "  namespace: {}", scalar(ns));
        } else {
            let _ = writeln!(
                out,
                "- apiGroup: {RBAC_GROUP}\n  kind: {}\n  name: {}",
                scalar(&s.kind),
                scalar(&s.name)
            );
        }
    }
    out
}

/// A (Cluster)RoleBinding of the role of the same name to `who`.
pub(super) fn binding(
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    role_kind: &str,
    who: &str,
) -> String {
    let mut out = format!("apiVersion: {RBAC_GROUP}/v1\nkind: {kind}\nmetadata:\n");
    let _ = writeln!(out, "  name: {}", scalar(name));
    if let Some(ns) = namespace {
        let _ = writeln!(out, "  namespace: {}", scalar(ns));
    }
    let _ = writeln!(
        out,
        "roleRef:\n  apiGroup: {RBAC_GROUP}\n  kind: {role_kind}\n  name: {}",
        scalar(name)
    );
    out + who
}

/// A (Cluster)Role with its `rules:`.
pub(super) fn role(kind: &str, name: &str, namespace: Option<&str>, rules: &str) -> String {
    let mut out = format!("apiVersion: {RBAC_GROUP}/v1\nkind: {kind}\nmetadata:\n");
    let _ = writeln!(out, "  name: {}", scalar(name));
    if let Some(ns) = namespace {
        let _ = writeln!(out, "  namespace: {}", scalar(ns));
    }
    out + rules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_names_are_quoted() {
        assert_eq!(scalar("pando-adapter"), "pando-adapter");
        assert_eq!(scalar("123"), "\"123\"");
        assert_eq!(scalar("true"), "\"true\"");
        assert_eq!(scalar("a b"), "\"a b\"");
    }
}
