//! `configure` with bad input: the adapter is loaded again with
//! configurations it must reject.

use serde_json::{Map, Value};

use pando_host::{CallError, LoadError};

use super::cases::CONFIGURE;
use super::fixture::{Check, Fixture, fail};

/// A field name no adapter knows.
const UNKNOWN_FIELD: &str = "conformance_unknown_field";

pub(crate) async fn run(fx: &mut Fixture<'_>) {
    fx.case(&CONFIGURE, async |fx, notes| {
        let good: Value = serde_json::from_str(&fx.target.load.config)
            .unwrap_or_else(|_| Value::Object(Map::new()));
        let mut bad = vec![
            ("a configuration that is not JSON".to_string(), "{".to_string(), None),
            ("a configuration that is a JSON array".into(), "[]".into(), None),
        ];
        if let Value::Object(fields) = &good {
            let mut with_unknown = fields.clone();
            with_unknown.insert(UNKNOWN_FIELD.into(), Value::Bool(true));
            bad.push((
                format!("a configuration with the unknown field `{UNKNOWN_FIELD}`"),
                Value::Object(with_unknown).to_string(),
                Some(UNKNOWN_FIELD.to_string()),
            ));
            match wrong_type(&fx.adapter.kind_info().config_schema, fields) {
                Some((field, config)) => bad.push((
                    format!("a configuration whose field `{field}` has the wrong type"),
                    config,
                    Some(field),
                )),
                None => notes.push(
                    "no string, number or boolean field in the schema: the wrong-type check was not made",
                ),
            }
        }
        for (what, config, field) in bad {
            rejected(fx, &what, config, field.as_deref()).await?;
        }
        Ok(())
    })
    .await;
}

/// Loads the adapter with `config` and checks it was refused with
/// `invalid` (naming `field`, when given).
async fn rejected(fx: &Fixture<'_>, what: &str, config: String, field: Option<&str>) -> Check {
    let mut load = fx.target.load.clone();
    load.config = config;
    let result = fx.target.host.load_file(&fx.target.component, load).await;
    match result {
        Ok(_) => Err(fail(format!("{what} was accepted"))),
        Err(LoadError::Config { error, .. }) => match *error {
            CallError::Adapter(pando_host::types::Error::Invalid(message)) => match field {
                Some(f) if !message.contains(f) => Err(fail(format!(
                    "{what} was refused, but the message does not name `{f}`: {message}"
                ))),
                _ => Ok(()),
            },
            other => Err(fail(format!(
                "{what} was refused with `{}`, not `invalid`: {other}",
                other.kind()
            ))),
        },
        Err(other) => Err(fail(format!(
            "loading with {what} failed outside configure: {other}"
        ))),
    }
}

/// The configuration with one field of a scalar type in the schema set to
/// a list, which no scalar accepts; the field's name too.
fn wrong_type(schema: &str, fields: &Map<String, Value>) -> Option<(String, String)> {
    let schema: Value = serde_json::from_str(schema).ok()?;
    let properties = schema.get("properties")?.as_object()?;
    let field = properties.iter().find_map(|(name, prop)| {
        let scalar = match prop.get("type")? {
            Value::String(t) => matches!(t.as_str(), "string" | "integer" | "number" | "boolean"),
            _ => false,
        };
        scalar.then(|| name.clone())
    })?;
    let mut config = fields.clone();
    config.insert(
        field.clone(),
        Value::Array(vec![Value::from(1), Value::from(2)]),
    );
    Some((field, Value::Object(config).to_string()))
}
