//! Reading plans, requests and configurations (YAML or JSON) with errors
//! that name the file, the field and the reason.

use std::io::Read;
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::failure::{Failure, Outcome};

/// The syntax of an input document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Syntax {
    Json,
    Yaml,
}

/// By extension (`.json`, `.yaml`, `.yml`), else sniffed: JSON when the
/// first non-blank character opens an object or an array.
fn syntax(path: &Path, text: &str) -> Syntax {
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("json") => Syntax::Json,
        Some(e) if e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml") => Syntax::Yaml,
        _ => match text.trim_start().chars().next() {
            Some('{') | Some('[') => Syntax::Json,
            _ => Syntax::Yaml,
        },
    }
}

/// Reads a file's text; `-` is stdin.
pub fn read_text(path: &Path) -> Outcome<String> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure::input(format!("cannot read stdin: {e}")))?;
        return Ok(text);
    }
    std::fs::read_to_string(path)
        .map_err(|e| Failure::input(format!("cannot read {}: {e}", path.display())))
}

/// How `path` is named in errors.
fn display_name(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

/// An error of document `name` at `field`.
fn located(name: &str, field: String, reason: String) -> Failure {
    // The root's path is `.`: nothing to point at.
    if field == "." {
        Failure::input(format!("{name}: {reason}"))
    } else {
        Failure::input(format!("{name}: at {field}: {reason}"))
    }
}

/// Parses `text` (from `path`, which names it in errors) as a `T`.
pub fn parse_document<T: DeserializeOwned>(path: &Path, text: &str) -> Outcome<T> {
    let name = display_name(path);
    let located = |field: String, reason: String| located(&name, field, reason);
    match syntax(path, text) {
        Syntax::Json => {
            let mut de = serde_json::Deserializer::from_str(text);
            let value = serde_path_to_error::deserialize(&mut de)
                .map_err(|e| located(e.path().to_string(), e.inner().to_string()))?;
            de.end()
                .map_err(|e| Failure::input(format!("{name}: {e}")))?;
            Ok(value)
        }
        Syntax::Yaml => pando_host::yaml::from_str(text)
            .map_err(|e| located(e.path.unwrap_or_else(|| ".".into()), e.message)),
    }
}

/// Reads and parses a document from a file (`-` is stdin).
pub fn read_document<T: DeserializeOwned>(path: &Path) -> Outcome<T> {
    let text = read_text(path)?;
    parse_document(path, &text)
}

/// Reads a document, lets `normalize` fill in what its writer may leave
/// out (`plan`), then decodes it as a `T`, errors located as ever. A field
/// `T` does not have is refused: the contract's types (generated from the
/// WIT) would skip it, and a typo (`prot: udp`) would silently become the
/// default.
pub fn read_normalized<T: DeserializeOwned + Serialize>(
    path: &Path,
    normalize: fn(&mut Value),
) -> Outcome<T> {
    let doc: Value = read_document(path)?;
    decode_normalized(&display_name(path), doc, normalize)
}

/// [`read_normalized`] of a document already read; `name` names it in
/// errors.
pub fn decode_normalized<T: DeserializeOwned + Serialize>(
    name: &str,
    mut doc: Value,
    normalize: fn(&mut Value),
) -> Outcome<T> {
    normalize(&mut doc);
    let decoded: T = serde_path_to_error::deserialize(&doc)
        .map_err(|e| located(name, e.path().to_string(), e.inner().to_string()))?;
    // What was read, written out again, has every field of `T` and nothing
    // else: a key of the document it lacks is one `T` does not know.
    let read = serde_json::to_value(&decoded)
        .map_err(|e| Failure::other("writing the document out again", e))?;
    match unknown_field(&doc, &read, String::new()) {
        Some((field, known)) => Err(located(
            name,
            field,
            format!("unknown field; the fields here are {}", known.join(", ")),
        )),
        None => Ok(decoded),
    }
}

/// The first key in `written` that `read` has not, with `read`'s keys
/// there; `at` is the path so far.
fn unknown_field(written: &Value, read: &Value, at: String) -> Option<(String, Vec<String>)> {
    match (written, read) {
        (Value::Object(w), Value::Object(r)) => w.iter().find_map(|(key, value)| {
            let here = if at.is_empty() {
                key.clone()
            } else {
                format!("{at}.{key}")
            };
            match r.get(key) {
                Some(inner) => unknown_field(value, inner, here),
                None => Some((here, r.keys().cloned().collect())),
            }
        }),
        (Value::Array(w), Value::Array(r)) => w
            .iter()
            .zip(r)
            .enumerate()
            .find_map(|(i, (w, r))| unknown_field(w, r, format!("{at}[{i}]"))),
        _ => None,
    }
}

/// Reads an adapter configuration (YAML or JSON) and gives the JSON
/// document `configure` takes.
pub fn read_config(path: &Path) -> Outcome<String> {
    let value: serde_json::Value = read_document(path)?;
    serde_json::to_string(&value).map_err(|e| Failure::input(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pando_host::types::BundlePlan;

    const PLAN: &str = "\
id: hello
revision: '1'
workloads:
- name: web
  image: nginx:1.27
  digest: null
  command: []
  args: []
  env: []
  ports:
  - name: null
    port: 80
    protocol: tc
  resources:
    requests: {cpu_millis: 100, memory_bytes: 67108864}
    limits: null
  mounts: []
volumes: []
network: {egress: Open}
pull_credentials: []
";

    #[test]
    fn a_bad_field_is_named_with_its_path() {
        let Err(Failure::Input(e)) = parse_document::<BundlePlan>(Path::new("p.yaml"), PLAN) else {
            panic!("the plan should not parse");
        };
        let msg = e.to_string();
        assert!(
            msg.starts_with(
                "p.yaml: at workloads[0].ports[0].protocol: unknown variant `tc`, expected one of Tcp, Udp at line 13, column 15"
            ),
            "{msg}"
        );
    }

    #[test]
    fn a_field_the_type_does_not_have_is_named_with_the_ones_it_has() {
        let written =
            serde_json::json!({"a": 1, "list": [{"port": 53}, {"port": 80, "prot": "udp"}]});
        let read = serde_json::json!({"a": 1, "b": null, "list": [{"port": 53, "protocol": "Tcp"}, {"port": 80, "protocol": "Tcp"}]});
        let (field, known) = unknown_field(&written, &read, String::new()).expect("`prot`");
        assert_eq!(field, "list[1].prot");
        assert_eq!(known, ["port", "protocol"]);
        assert_eq!(unknown_field(&read, &read, String::new()), None);
    }

    #[test]
    fn json_is_sniffed_without_an_extension() {
        let v: serde_json::Value =
            parse_document(Path::new("conf"), "{\"greeting\": \"hi\"}").expect("JSON parses");
        assert_eq!(v["greeting"], "hi");
        let v: serde_json::Value =
            parse_document(Path::new("conf"), "greeting: hi\n").expect("YAML parses");
        assert_eq!(v["greeting"], "hi");
    }
}
