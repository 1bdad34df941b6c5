//! `pando-host schema grants|plan|trial|limits`: the JSON Schema of each
//! document the command line reads, for editors (`schemas/*.schema.json`
//! holds what this prints; `cli/tests/all/schema.rs` keeps them equal).
//!
//! Grants and limits are read exactly as their types decode, so their
//! schemas are the derived ones (with the grants' load-time checks written
//! in, `pando_host::grants`). Plans and trial requests are not: the CLI
//! fills in what a person may leave out first ([`crate::plan`]), so their
//! derived schemas are relaxed here to what a person may write.

use clap::ValueEnum;
use pando_host::Grants;
use pando_host::limits::Limits;
use pando_host::types::{BundlePlan, TrialRequest};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value, json};

use crate::failure::{Failure, Outcome};
use crate::output;

/// The documents `pando-host` reads that have a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Document {
    /// The grants (`--grants FILE`).
    Grants,
    /// A BundlePlan (`apply PLAN`).
    Plan,
    /// A TrialRequest (`trial REQUEST`).
    Trial,
    /// The limits (`--limits FILE`).
    Limits,
}

impl Document {
    /// Every document, in the order the files are listed.
    pub const ALL: [Document; 4] = [
        Document::Grants,
        Document::Plan,
        Document::Trial,
        Document::Limits,
    ];

    /// The name on the command line and in `schemas/NAME.schema.json`.
    pub fn name(self) -> &'static str {
        match self {
            Document::Grants => "grants",
            Document::Plan => "plan",
            Document::Trial => "trial",
            Document::Limits => "limits",
        }
    }

    /// The document's JSON Schema (draft 2020-12).
    pub fn schema(self) -> Schema {
        let (mut schema, title, description) = match self {
            Document::Grants => (
                schemars::schema_for!(Grants),
                "Pando grants",
                "What an adapter may reach: the grants document `pando-host --grants FILE` \
                 reads (YAML or JSON). Absent, an adapter gets the generic imports only. \
                 See docs/grants.md.",
            ),
            Document::Plan => (
                relaxed::<BundlePlan>(&["workloads", "volumes", "pull_credentials"]),
                "Pando bundle plan",
                "A BundlePlan, what an app should be, as `pando-host apply PLAN` reads it \
                 (YAML or JSON): lists may be left out (empty), a port's protocol too (TCP), \
                 enum cases in any case, keys in snake_case or kebab-case. See docs/cli.md.",
            ),
            Document::Trial => (
                relaxed::<TrialRequest>(&["pull_credentials"]),
                "Pando trial request",
                "A TrialRequest, a workload run once and watched, as `pando-host trial \
                 REQUEST` reads it (YAML or JSON), with the plan's defaults and spellings. \
                 See docs/cli.md.",
            ),
            Document::Limits => (
                schemars::schema_for!(Limits),
                "Pando adapter limits",
                "The limits an adapter runs under, as `pando-host --limits FILE` reads them \
                 (YAML or JSON): any fields, the rest at their defaults; durations in \
                 milliseconds. See docs/architecture.md.",
            ),
        };
        schema.insert("title".into(), title.into());
        schema.insert("description".into(), description.into());
        if let Some(root) = schema.as_object_mut() {
            root.values_mut().for_each(integer_bounds);
        }
        schema
    }

    /// The schema as `pando-host schema` prints it: pretty JSON, a newline
    /// at the end.
    pub fn render(self) -> Result<String, serde_json::Error> {
        let mut text = serde_json::to_string_pretty(&self.schema())?;
        text.push('\n');
        Ok(text)
    }
}

/// Prints `document`'s schema on stdout.
pub fn print(document: Document) -> Outcome {
    let text = document
        .render()
        .map_err(|e| Failure::other("rendering the schema", e))?;
    output::write_stdout(&text)
}

/// The derived schema of `T` (a plan or a trial request), relaxed to what
/// `crate::plan::normalize_plan` and `normalize_trial` accept: change the
/// two together. `root_lists` are the lists of `T` itself that may be left
/// out; the nested types' are the same for both.
fn relaxed<T: JsonSchema>(root_lists: &[&str]) -> Schema {
    let mut schema = schemars::schema_for!(T);
    let Some(root) = schema.as_object_mut() else {
        return schema;
    };
    defaults(root, root_lists, &json!([]));
    if let Some(Value::Object(defs)) = root.get_mut("$defs") {
        let def = |defs: &mut Map<String, Value>, name: &str| -> Option<Map<String, Value>> {
            match defs.remove(name) {
                Some(Value::Object(o)) => Some(o),
                _ => None,
            }
        };
        // `normalize_workload`: its lists, a port's protocol, a mount's
        // `read_only`.
        for (name, fields, default) in [
            (
                "WorkloadSpec",
                &["command", "args", "env", "ports", "mounts"][..],
                json!([]),
            ),
            ("Port", &["protocol"][..], json!("Tcp")),
            ("VolumeMount", &["read_only"][..], json!(false)),
            // `normalize_network`: a restricted rule's ports.
            ("EgressRule", &["ports"][..], json!([])),
        ] {
            if let Some(mut object) = def(defs, name) {
                defaults(&mut object, fields, &default);
                defs.insert(name.into(), Value::Object(object));
            }
        }
        // `canonical_case(protocol, ["Tcp", "Udp"])`: any case. The enum is
        // for an editor's completion, the pattern says the rest.
        if let Some(Value::Object(protocol)) = defs.get_mut("Protocol") {
            protocol.remove("enum");
            protocol.insert(
                "anyOf".into(),
                json!([
                    { "enum": ["Tcp", "Udp", "TCP", "UDP", "tcp", "udp"] },
                    { "pattern": any_case(&["tcp", "udp"]) },
                ]),
            );
        }
        // `normalize_network`: `open` or `none` in any case, or one key
        // `restricted` in any case holding the rules.
        if let Some(Value::Object(egress)) = defs.get_mut("EgressPolicy") {
            egress.insert(
                "oneOf".into(),
                json!([
                    {
                        "description": "`open`: anywhere outside the cluster's own ranges; \
                                        `none`: nowhere outside the app. Any case.",
                        "type": "string",
                        "anyOf": [
                            { "enum": ["Open", "None", "open", "none", "OPEN", "NONE"] },
                            { "pattern": any_case(&["open", "none"]) },
                        ],
                    },
                    {
                        "description": "`restricted: [...]` (any case): only these destinations.",
                        "type": "object",
                        "properties": {
                            "restricted": { "$ref": "#/$defs/EgressRules" },
                        },
                        "propertyNames": { "pattern": any_case(&["restricted"]) },
                        "additionalProperties": { "$ref": "#/$defs/EgressRules" },
                        "minProperties": 1,
                        "maxProperties": 1,
                    },
                ]),
            );
            defs.insert(
                "EgressRules".into(),
                json!({ "type": "array", "items": { "$ref": "#/$defs/EgressRule" } }),
            );
        }
    }
    kebab_case_keys(&mut schema);
    if let Some(root) = schema.as_object_mut() {
        closed(root);
    }
    schema
}

/// Every object schema with properties takes no others: the reading
/// refuses a field its type does not have (`crate::input::read_normalized`).
fn closed(object: &mut Map<String, Value>) {
    if object.contains_key("properties") {
        object
            .entry("additionalProperties")
            .or_insert(Value::Bool(false));
    }
    for value in object.values_mut() {
        match value {
            Value::Object(inner) => closed(inner),
            Value::Array(items) => items
                .iter_mut()
                .filter_map(Value::as_object_mut)
                .for_each(closed),
            _ => {}
        }
    }
}

/// Gives each `u32` and `u64` its largest value: schemars bounds the
/// smaller integers only, and the decoders refuse `4294967296` for a `u32`.
fn integer_bounds(value: &mut Value) {
    match value {
        Value::Object(object) => {
            let max = match object.get("format").and_then(Value::as_str) {
                Some("uint32") => Some(Value::from(u32::MAX)),
                Some("uint64") => Some(Value::from(u64::MAX)),
                _ => None,
            };
            if let Some(max) = max {
                object.entry("maximum").or_insert(max);
            }
            object.values_mut().for_each(integer_bounds);
        }
        Value::Array(items) => items.iter_mut().for_each(integer_bounds),
        _ => {}
    }
}

/// Takes `fields` of an object schema out of its `required`, with
/// `default` as what they are when left out.
fn defaults(object: &mut Map<String, Value>, fields: &[&str], default: &Value) {
    if let Some(Value::Array(required)) = object.get_mut("required") {
        required.retain(|r| !fields.iter().any(|f| r == f));
    }
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        for field in fields {
            if let Some(Value::Object(p)) = properties.get_mut(*field) {
                p.insert("default".into(), default.clone());
            }
        }
    }
}

/// A pattern matching each word in any case: `^(?:[Tt][Cc][Pp]|…)$`
/// (ECMA-262 regular expressions, which schemas use, have no `(?i)`).
fn any_case(words: &[&str]) -> String {
    let word = |w: &str| -> String {
        w.chars()
            .map(|c| format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase()))
            .collect()
    };
    format!(
        "^(?:{})$",
        words.iter().map(|w| word(w)).collect::<Vec<_>>().join("|")
    )
}

/// `keys_to_snake_case`: every `-` in a key is read as `_`, so each field
/// with a `_` may be spelled with `-` in any of its places. Each spelling
/// gets the field's schema (an editor checks it too); a required field is
/// required in one of its spellings.
fn kebab_case_keys(schema: &mut Schema) {
    fn object(object: &mut Map<String, Value>) {
        if let Some(Value::Object(properties)) = object.get_mut("properties") {
            let aliases: Vec<(String, Value)> = properties
                .iter()
                .flat_map(|(key, value)| {
                    spellings(key)
                        .into_iter()
                        .skip(1)
                        .map(|s| (s, value.clone()))
                })
                .collect();
            properties.extend(aliases);
        }
        if let Some(Value::Array(required)) = object.get_mut("required") {
            let (plain, underscored): (Vec<Value>, Vec<Value>) = std::mem::take(required)
                .into_iter()
                .partition(|r| r.as_str().is_none_or(|r| !r.contains('_')));
            *required = plain;
            if required.is_empty() {
                object.remove("required");
            }
            let one_of_each: Vec<Value> = underscored
                .iter()
                .filter_map(Value::as_str)
                .map(|field| {
                    let any: Vec<Value> = spellings(field)
                        .into_iter()
                        .map(|s| json!({ "required": [s] }))
                        .collect();
                    json!({ "anyOf": any })
                })
                .collect();
            if !one_of_each.is_empty() {
                match object.get_mut("allOf") {
                    Some(Value::Array(all)) => all.extend(one_of_each),
                    _ => {
                        object.insert("allOf".into(), Value::Array(one_of_each));
                    }
                }
            }
        }
    }
    let Some(root) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(defs)) = root.get_mut("$defs") {
        defs.values_mut()
            .filter_map(Value::as_object_mut)
            .for_each(object);
    }
    object(root);
}

/// `a_b_c`, then every other spelling with some `_` as `-` (`a-b_c`, …).
fn spellings(field: &str) -> Vec<String> {
    let mut all = vec![String::new()];
    for (i, part) in field.split('_').enumerate() {
        if i == 0 {
            all.iter_mut().for_each(|s| s.push_str(part));
            continue;
        }
        all = all
            .into_iter()
            .flat_map(|s| [format!("{s}_{part}"), format!("{s}-{part}")])
            .collect();
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_cover_every_dash() {
        assert_eq!(spellings("id"), ["id"]);
        assert_eq!(spellings("read_only"), ["read_only", "read-only"]);
        assert_eq!(spellings("a_b_c"), ["a_b_c", "a_b-c", "a-b_c", "a-b-c"]);
    }

    #[test]
    fn any_case_spells_each_letter_both_ways() {
        assert_eq!(any_case(&["tcp", "udp"]), "^(?:[Tt][Cc][Pp]|[Uu][Dd][Pp])$");
    }

    #[test]
    fn every_schema_names_its_document_and_draft() {
        for d in Document::ALL {
            let s = d.schema();
            assert_eq!(
                s.get("$schema").and_then(Value::as_str),
                Some("https://json-schema.org/draft/2020-12/schema"),
                "{d:?}"
            );
            let title = s.get("title").and_then(Value::as_str).unwrap_or_default();
            assert!(title.starts_with("Pando "), "{d:?}: {title}");
            let description = s
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let flag = match d {
                Document::Grants => "--grants",
                Document::Plan => "apply PLAN",
                Document::Trial => "trial",
                Document::Limits => "--limits",
            };
            assert!(description.contains(flag), "{d:?}: {description}");
            assert!(d.render().expect("renders").ends_with("}\n"), "{d:?}");
        }
    }

    #[test]
    fn the_plan_schema_drops_what_normalize_plan_fills_in() {
        let s = Document::Plan.schema().to_value();
        let required = |v: &Value| -> Vec<String> {
            v["required"]
                .as_array()
                .map(|r| {
                    r.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        assert_eq!(required(&s), ["id", "revision", "network"]);
        assert_eq!(
            required(&s["$defs"]["WorkloadSpec"]),
            ["name", "image", "resources"]
        );
        assert!(required(&s["$defs"]["Port"]) == ["port"]);
        assert!(required(&s["$defs"]["VolumeMount"]) == ["volume", "path"]);
        assert_eq!(
            s["$defs"]["Port"]["properties"]["protocol"]["default"],
            "Tcp"
        );
        // `cpu_millis` is required as either spelling.
        assert_eq!(
            s["$defs"]["Resources"]["allOf"][0],
            json!({"anyOf": [{"required": ["cpu_millis"]}, {"required": ["cpu-millis"]}]})
        );
        assert!(s["$defs"]["Resources"]["properties"]["cpu-millis"].is_object());
    }
}
