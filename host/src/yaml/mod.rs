//! The YAML Pando reads and writes, in one place, on `serde-saphyr` (the
//! parser `kube` already brings; `serde_yaml` is unmaintained).
//!
//! Two dialects, because two readers matter:
//! - Pando's own documents (grants, plans, limits, adapter configurations)
//!   read as YAML 1.2's core schema, as they always have: `yes`, `on` and
//!   `0644` stay strings where the type does not say otherwise.
//! - A server-side apply body is read as the API server would read it
//!   (`sigs.k8s.io/yaml`, YAML 1.1): `hostNetwork: yes` is `true` and
//!   `defaultMode: 0644` is 420. The host sends what it read on as JSON,
//!   so reading it any other way would change what the adapter asked for.
//!
//! Errors carry the field path (`kubernetes.rules[0].resources[0]`) and
//! the parser's line and column once each.

mod placed;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A document that does not read as the type asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct YamlError {
    /// Where in the document, as `a.b[2].c`; `None` at the root or for a
    /// syntax error before any field.
    pub path: Option<String>,
    /// What is wrong, with its line and column.
    pub message: String,
}

impl YamlError {
    fn render(&self) -> String {
        match &self.path {
            Some(path) => format!("at `{path}`: {}", self.message),
            None => self.message.clone(),
        }
    }

    fn new(path: Option<String>, e: &serde_saphyr::Error) -> Self {
        Self::placed(path, e, None)
    }

    /// `at`: where the path points, for an error the parser did not place.
    fn placed(
        path: Option<String>,
        e: &serde_saphyr::Error,
        at: Option<serde_saphyr::Location>,
    ) -> Self {
        let message = e.to_string();
        // The parser's hint names its own API; say what a user does instead.
        let message = match message.split_once("; use from_str_multiple") {
            Some((head, tail)) => format!(
                "{head}: the file holds more than one document (`---`); keep one{}",
                tail.trim_start_matches(" or from_str_multiple_with_options")
            ),
            None => message,
        };
        // Errors a type's own `Deserialize` raises (`pod` names no
        // resource) are rendered without the place the parser knows.
        let known = |l: &serde_saphyr::Location| l.line() > 0;
        let message = match e.location().filter(known).or(at.filter(known)) {
            Some(l) if !message.contains(" line ") => {
                format!("{message} at line {}, column {}", l.line(), l.column())
            }
            _ => message,
        };
        YamlError { path, message }
    }
}

/// Pando's own documents: YAML 1.2 core schema, one document.
fn document_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        strict_booleans: true,
        leading_zero_numbers_as_strings: true,
        underscored_numbers_as_strings: true,
        with_snippet: false,
    }
}

/// What the API server reads an apply body as: YAML 1.1 booleans and
/// octals.
fn api_server_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        legacy_octal_numbers: true,
        with_snippet: false,
    }
}

fn located<T: DeserializeOwned>(
    text: &str,
    options: serde_saphyr::Options,
) -> Result<T, YamlError> {
    let mut path = None;
    serde_saphyr::with_deserializer_from_str_with_options(text, options.clone(), |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            path = Some(e.path().clone());
            e.into_inner()
        })
    })
    .map_err(|e| {
        // Only on this error path: read the document again as a tree of
        // placed nodes, to say where a type's own refusal points.
        let at = path.as_ref().and_then(|p| {
            placed::locate(text, options, p.iter().filter_map(placed::Step::of_serde))
        });
        let shown = path.map(|p| p.to_string()).filter(|p| p != ".");
        YamlError::placed(shown, &e, at)
    })
}

/// Reads one of Pando's own documents (YAML, or JSON, which is YAML) as a
/// `T`.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    located(text, document_options())
}

/// Reads a stream of documents separated by `---`; empty documents are
/// left out.
pub fn documents(text: &str) -> Result<Vec<serde_json::Value>, YamlError> {
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple_with_options(text, document_options())
            .map_err(|e| YamlError::new(None, &e))?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// Where the node at `path` (`kubernetes.rules[0].resources[1]`, as the
/// errors write paths) is in `text`, one of Pando's own documents: line and
/// column, both from 1. For a check made after decoding, to point at the
/// line as a parse error does.
pub fn position(text: &str, path: &str) -> Option<(u64, u64)> {
    let at = placed::locate(text, document_options(), placed::Step::parse(path))?;
    (at.line() > 0).then(|| (at.line(), at.column()))
}

/// Reads a server-side apply body as the API server will.
pub fn apply_body(body: &[u8]) -> Result<serde_json::Value, YamlError> {
    let text = std::str::from_utf8(body).map_err(|e| YamlError {
        path: None,
        message: format!("not UTF-8: {e}"),
    })?;
    located(text, api_server_options())
}

/// Writes `value` as one YAML document, ending in a newline.
pub fn to_string<T: Serialize>(value: &T) -> Result<String, YamlError> {
    serde_saphyr::to_string(value).map_err(|e| YamlError {
        path: None,
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::{Value, json};

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Rule {
        #[allow(dead_code)]
        verbs: Vec<Verb>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Verb {
        Get,
    }

    #[derive(Debug, Deserialize)]
    struct Doc {
        #[allow(dead_code)]
        rules: Vec<Rule>,
    }

    #[test]
    fn an_error_names_its_field_path_and_line_once() {
        let err = from_str::<Doc>("rules:\n  - verbs: [get, lisst]\n").expect_err("bad verb");
        assert_eq!(err.path.as_deref(), Some("rules[0].verbs[1]"));
        let text = err.to_string();
        assert!(
            text.starts_with("at `rules[0].verbs[1]`: unknown variant `lisst`"),
            "{text}"
        );
        assert!(text.contains("line 2, column 18"), "{text}");
        assert_eq!(text.matches("rules[0]").count(), 1, "{text}");
    }

    #[test]
    fn an_unknown_field_is_named() {
        let err = from_str::<Doc>("rules:\n  - verbs: [get]\n    verbz: []\n").expect_err("typo");
        assert_eq!(err.path.as_deref(), Some("rules[0].verbz"));
        assert!(err.message.contains("unknown field `verbz`"), "{err}");
    }

    #[test]
    fn a_second_document_is_refused_in_words_a_user_can_act_on() {
        let err = from_str::<Value>("a: 1\n---\nb: 2\n").expect_err("two documents");
        assert!(err.message.contains("more than one document"), "{err}");
        assert!(!err.message.contains("from_str"), "{err}");
    }

    #[test]
    fn own_documents_read_yaml_1_2_scalars() {
        let v: Value = from_str("a: yes\nb: 0644\nc: 1_000\nd: true\ne: 0x10\n").expect("parses");
        assert_eq!(
            v,
            json!({"a": "yes", "b": "0644", "c": "1_000", "d": true, "e": 16})
        );
    }

    #[test]
    fn an_apply_body_reads_as_the_api_server_reads_it() {
        let v = apply_body(b"spec:\n  hostNetwork: yes\n  mode: 0644\n").expect("parses");
        assert_eq!(v, json!({"spec": {"hostNetwork": true, "mode": 420}}));
    }

    #[test]
    fn documents_skip_empty_ones() {
        let docs = documents("---\na: 1\n---\n---\nb: 2\n").expect("parses");
        assert_eq!(docs, vec![json!({"a": 1}), json!({"b": 2})]);
    }

    #[test]
    fn written_yaml_reads_back() {
        let v = json!({"n": "no", "list": [1, "2", null], "s": "line\nbreak"});
        let text = to_string(&v).expect("writes");
        assert_eq!(from_str::<Value>(&text).expect("reads back"), v);
    }
}
