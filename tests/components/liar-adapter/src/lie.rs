//! The lie the adapter tells, read from the configuration field `lie`, and
//! the configuration schema that names them.

use pando_adapter_sdk::error::invalid;
use pando_adapter_sdk::types::Error;
use serde_json::{Map, Value, json};

/// The configuration field that chooses the lie.
pub const FIELD: &str = "lie";

/// One lie, each the way a careless or dishonest adapter breaks what it
/// declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lie {
    /// None: the Kubernetes adapter as it is (the tests' control).
    None,
    /// `logs` of a workload answers the log of another workload of its app.
    LogsOfAnotherWorkload,
    /// `apply` opens the plan's egress, ignoring every rule, while
    /// `egress_restriction` stays declared.
    EgressIgnored,
    /// `trial` reports the ports the workload declares, not those it
    /// listened on.
    TrialDeclaredPorts,
    /// `restore_volume` reads the snapshot and writes nothing.
    RestoreIgnored,
    /// `apply_edge` wires the edge to ports its image does not listen on, and
    /// `observe_edge` of an edge that exists says it serves, whatever the
    /// runtime says.
    EdgeClaimsServing,
    /// `observe` always answers `unavailable`.
    ObserveFails,
    /// `image_import` declared while `import_image` answers `unsupported`.
    ImageImportDeclared,
    /// `write_observation` declared while a trial reports no writes.
    WriteObservationDeclared,
}

/// Every lie by its configuration value.
const LIES: &[(&str, Lie)] = &[
    ("none", Lie::None),
    ("logs-of-another-workload", Lie::LogsOfAnotherWorkload),
    ("egress-ignored", Lie::EgressIgnored),
    ("trial-declared-ports", Lie::TrialDeclaredPorts),
    ("restore-ignored", Lie::RestoreIgnored),
    ("edge-claims-serving", Lie::EdgeClaimsServing),
    ("observe-fails", Lie::ObserveFails),
    ("image-import-declared", Lie::ImageImportDeclared),
    ("write-observation-declared", Lie::WriteObservationDeclared),
];

/// The known values, for messages: `none, logs-of-another-workload, …`.
fn known() -> String {
    LIES.iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Takes `lie` out of the configuration: the lie, and the rest for the
/// Kubernetes adapter's `configure`, whose parser refuses fields it does not
/// know. A configuration that is not a JSON object is handed on as it is,
/// for that parser to refuse in its own words.
pub fn split(config: &str) -> Result<(Lie, String), Error> {
    let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(config) else {
        return Ok((Lie::None, config.to_owned()));
    };
    let lie = match fields.remove(FIELD) {
        None | Some(Value::Null) => Lie::None,
        Some(Value::String(name)) => LIES
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, lie)| *lie)
            .ok_or_else(|| {
                invalid(format!(
                    "configuration field `{FIELD}`: unknown lie `{name}`; known: {}",
                    known()
                ))
            })?,
        Some(other) => {
            return Err(invalid(format!(
                "configuration field `{FIELD}` must be a string, one of: {}; not {other}",
                known()
            )));
        }
    };
    Ok((lie, Value::Object(fields).to_string()))
}

/// The Kubernetes adapter's schema (`filled`) with `lie` added. A schema
/// that does not parse is returned as it is: `info()` must not fail.
pub fn schema(filled: &str) -> String {
    let Ok(mut schema) = serde_json::from_str::<Value>(filled) else {
        return filled.to_owned();
    };
    let mut names: Vec<Value> = LIES.iter().map(|(name, _)| json!(name)).collect();
    names.push(Value::Null);
    let property = json!({
        "default": "none",
        "description": "The one lie this test adapter tells; `none` is the Kubernetes adapter \
                        as it is. Never deploy it.",
        "enum": names,
        "type": ["string", "null"],
    });
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        properties.insert(FIELD.into(), property);
    } else if let Some(object) = schema.as_object_mut() {
        let mut properties = Map::new();
        properties.insert(FIELD.into(), property);
        object.insert("properties".into(), Value::Object(properties));
    }
    schema.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lie_is_taken_out_and_the_rest_handed_on() {
        let (lie, rest) = split(r#"{"pod_cidr":"10.0.0.0/16","lie":"egress-ignored"}"#).unwrap();
        assert_eq!(lie, Lie::EgressIgnored);
        assert_eq!(rest, r#"{"pod_cidr":"10.0.0.0/16"}"#);
        assert_eq!(split(r#"{"lie":null}"#).unwrap().0, Lie::None);
        assert_eq!(split("{}").unwrap().0, Lie::None);
        assert_eq!(split("[]").unwrap(), (Lie::None, "[]".to_owned()));
    }

    #[test]
    fn an_unknown_lie_is_invalid_naming_the_field_and_the_known_ones() {
        let Err(Error::Invalid(message)) = split(r#"{"lie":"all-of-them"}"#) else {
            panic!("an unknown lie is invalid");
        };
        assert!(message.contains("`lie`") && message.contains("all-of-them"));
        assert!(message.contains("observe-fails, image-import-declared"));
        assert!(matches!(split(r#"{"lie":[1]}"#), Err(Error::Invalid(m)) if m.contains("`lie`")));
    }

    #[test]
    fn the_schema_gains_lie() {
        let schema: Value = serde_json::from_str(&schema(
            r#"{"properties":{"a":{}},"additionalProperties":false}"#,
        ))
        .unwrap();
        assert_eq!(schema["properties"]["lie"]["default"], "none");
        assert!(schema["properties"]["a"].is_object());
    }
}
