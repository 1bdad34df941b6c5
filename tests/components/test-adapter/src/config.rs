//! The test adapter's configuration: an optional `greeting`.

use pando_adapter_sdk::error::invalid;
use pando_adapter_sdk::types::Error;
use serde_json::Value;

/// JSON Schema of the configuration.
pub const SCHEMA: &str = r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"greeting":{"type":"string"}},"additionalProperties":false}"#;

const ALLOWED: &[&str] = &["greeting"];

/// The parsed configuration.
pub struct Config {
    pub greeting: Option<String>,
}

/// Parse by hand rather than with serde's `deny_unknown_fields`, so that the
/// messages are exactly the ones the host's tests look for.
pub fn parse(text: &str) -> Result<Config, Error> {
    if text.trim().is_empty() {
        return Ok(Config { greeting: None });
    }
    let value: Value = serde_json::from_str(text)
        .map_err(|e| invalid(format!("configuration is not JSON: {e}")))?;
    let Value::Object(fields) = value else {
        return Err(invalid(format!(
            "configuration must be a JSON object, not {}",
            kind(&value)
        )));
    };
    let mut greeting = None;
    for (name, value) in fields {
        match (name.as_str(), value) {
            ("greeting", Value::String(s)) => greeting = Some(s),
            ("greeting", other) => {
                return Err(invalid(format!(
                    "configuration field `greeting` must be a string, not {}",
                    kind(&other)
                )));
            }
            (unknown, _) => {
                return Err(invalid(format!(
                    "configuration field `{unknown}` is not known; allowed: {}",
                    ALLOWED.join(", ")
                )));
            }
        }
    }
    Ok(Config { greeting })
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
