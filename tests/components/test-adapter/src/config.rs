//! The test adapter's configuration: an optional `greeting`, and an
//! optional `misbehave` that makes it break the contract in one way, for
//! the conformance suite's tests (the suite must catch it).

use pando_adapter_sdk::error::invalid;
use pando_adapter_sdk::types::Error;
use serde_json::Value;

/// JSON Schema of the configuration.
pub const SCHEMA: &str = r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"greeting":{"type":"string"},"misbehave":{"enum":["claim-image-import","import-image-internal","import-image-panic","panic-everywhere","huge-returns"]}},"additionalProperties":false}"#;

const ALLOWED: &[&str] = &["greeting", "misbehave"];

/// A way to break the contract on purpose.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Misbehave {
    /// Declare `image-import` in capabilities, and still answer
    /// `unsupported`.
    ClaimImageImport,
    /// Answer `import-image` with `internal` instead of `unsupported`.
    ImportImageInternal,
    /// Panic in `import-image` (a trap, not a typed answer).
    ImportImagePanic,
    /// Panic in every export but `info` and `configure`, naming the
    /// instance's call count (so a test sees each panic on a fresh instance).
    PanicEverywhere,
    /// `edges` returns ten million names (more than any sane memory limit
    /// holds): a huge return value.
    HugeReturns,
}

const MISBEHAVIOURS: &[(&str, Misbehave)] = &[
    ("claim-image-import", Misbehave::ClaimImageImport),
    ("import-image-internal", Misbehave::ImportImageInternal),
    ("import-image-panic", Misbehave::ImportImagePanic),
    ("panic-everywhere", Misbehave::PanicEverywhere),
    ("huge-returns", Misbehave::HugeReturns),
];

/// The parsed configuration.
pub struct Config {
    pub greeting: Option<String>,
    pub misbehave: Option<Misbehave>,
}

/// Parse by hand rather than with serde's `deny_unknown_fields`, so that the
/// messages are exactly the ones the host's tests look for.
pub fn parse(text: &str) -> Result<Config, Error> {
    if text.trim().is_empty() {
        return Ok(Config {
            greeting: None,
            misbehave: None,
        });
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
    let mut misbehave = None;
    for (name, value) in fields {
        match (name.as_str(), value) {
            ("greeting", Value::String(s)) => greeting = Some(s),
            ("greeting", other) => {
                return Err(invalid(format!(
                    "configuration field `greeting` must be a string, not {}",
                    kind(&other)
                )));
            }
            ("misbehave", Value::String(s)) => {
                let found = MISBEHAVIOURS.iter().find(|(n, _)| *n == s);
                misbehave = Some(found.map(|(_, m)| *m).ok_or_else(|| {
                    let names: Vec<&str> = MISBEHAVIOURS.iter().map(|(n, _)| *n).collect();
                    invalid(format!(
                        "configuration field `misbehave` is `{s}`; allowed: {}",
                        names.join(", ")
                    ))
                })?);
            }
            ("misbehave", other) => {
                return Err(invalid(format!(
                    "configuration field `misbehave` must be a string, not {}",
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
    Ok(Config {
        greeting,
        misbehave,
    })
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
