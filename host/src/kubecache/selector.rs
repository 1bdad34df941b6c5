//! Label selectors as the API server reads them, for answering a LIST from
//! a store: the equality and existence forms (`k=v`, `k==v`, `k!=v`, `k`,
//! `!k`). A selector with set forms (`in`, `notin`) is not parsed, and the
//! request goes to the API server, which reads every form.

use std::collections::BTreeMap;

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key=value` (or `key==value`).
    Equal(String, String),
    /// `key!=value`: absent, or another value.
    NotEqual(String, String),
    /// `key`: present.
    Exists(String),
    /// `!key`: absent.
    DoesNotExist(String),
}

/// An object's labels, as a selector reads them.
pub trait Labels {
    /// The value of label `key`, if the object has it.
    fn label(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// Labels as the cache keeps them: a few pairs, searched in order (an
/// object carries a handful; a map would cost more than its contents).
impl Labels for [(Box<str>, Box<str>)] {
    fn label(&self, key: &str) -> Option<&str> {
        self.iter().find(|(k, _)| &**k == key).map(|(_, v)| &**v)
    }
}

impl Requirement {
    fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        match self {
            Requirement::Equal(k, v) => labels.label(k) == Some(v.as_str()),
            Requirement::NotEqual(k, v) => labels.label(k) != Some(v.as_str()),
            Requirement::Exists(k) => labels.label(k).is_some(),
            Requirement::DoesNotExist(k) => labels.label(k).is_none(),
        }
    }
}

/// A parsed selector: every requirement must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector(Vec<Requirement>);

impl Selector {
    /// Parses `text`; `None` for a form this parser leaves to the API
    /// server (set-based requirements, anything malformed).
    pub fn parse(text: &str) -> Option<Selector> {
        let mut out = Vec::new();
        for term in text.split(',') {
            let term = term.trim();
            if term.is_empty() {
                if text.trim().is_empty() {
                    continue;
                }
                return None;
            }
            if term.contains(" in ") || term.contains(" notin ") || term.contains('(') {
                return None;
            }
            let req = if let Some((k, v)) = term.split_once("!=") {
                Requirement::NotEqual(key(k)?, value(v)?)
            } else if let Some((k, v)) = term.split_once("==") {
                Requirement::Equal(key(k)?, value(v)?)
            } else if let Some((k, v)) = term.split_once('=') {
                Requirement::Equal(key(k)?, value(v)?)
            } else if let Some(k) = term.strip_prefix('!') {
                Requirement::DoesNotExist(key(k)?)
            } else {
                Requirement::Exists(key(term)?)
            };
            out.push(req);
        }
        Some(Selector(out))
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        self.0.iter().all(|r| r.matches(labels))
    }

    /// Whether everything this selector selects is also selected by
    /// `other`, judged by requirements alone: true when every requirement
    /// of `other` is one of this selector's. (Sound, not complete: `a=b`
    /// implies `a` but is not counted as doing so.)
    pub fn implies(&self, other: &Selector) -> bool {
        other.0.iter().all(|r| self.0.contains(r))
    }
}

fn key(k: &str) -> Option<String> {
    let k = k.trim();
    let ok = !k.is_empty()
        && k.len() <= 317
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    ok.then(|| k.to_owned())
}

fn value(v: &str) -> Option<String> {
    let v = v.trim();
    let ok = v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    ok.then(|| v.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn equality_and_existence_forms() {
        let s = Selector::parse(
            "app.kubernetes.io/managed-by=pando,pando.dev/app,!pando.dev/helper,tier!=db",
        )
        .unwrap();
        let web = labels(&[
            ("app.kubernetes.io/managed-by", "pando"),
            ("pando.dev/app", "shop"),
            ("tier", "web"),
        ]);
        assert!(s.matches(&web));
        let mut helper = web.clone();
        helper.insert("pando.dev/helper".into(), "snapshot".into());
        assert!(!s.matches(&helper));
        let mut db = web.clone();
        db.insert("tier".into(), "db".into());
        assert!(!s.matches(&db));
        assert!(
            Selector::parse("a==b")
                .unwrap()
                .matches(&labels(&[("a", "b")]))
        );
    }

    #[test]
    fn set_forms_and_nonsense_are_left_to_the_api_server() {
        assert_eq!(Selector::parse("env in (a,b)"), None);
        assert_eq!(Selector::parse("env notin (a)"), None);
        assert_eq!(Selector::parse("a=b,,c"), None);
        assert_eq!(Selector::parse("a b=c"), None);
        assert_eq!(Selector::parse(""), Some(Selector::default()));
    }

    #[test]
    fn a_narrower_selector_implies_the_stores() {
        let store = Selector::parse("app.kubernetes.io/managed-by=pando").unwrap();
        let narrow = Selector::parse("app.kubernetes.io/managed-by=pando,pando.dev/app=x").unwrap();
        assert!(narrow.implies(&store));
        assert!(!Selector::parse("pando.dev/app=x").unwrap().implies(&store));
        assert!(!Selector::default().implies(&store));
        assert!(store.implies(&Selector::default()));
    }
}
