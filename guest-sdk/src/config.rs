//! Reading the JSON configuration `configure` receives.

use serde::de::DeserializeOwned;

use crate::types::Error;

/// Parse `config` into `T`. An empty (or all-blank) string is `{}`, since a
/// host may pass no configuration at all. A failure is `invalid`, with
/// serde's words, which name the field (`unknown field `bogus`, expected
/// `greeting``) when `T` has `#[serde(deny_unknown_fields)]`.
pub fn parse<T: DeserializeOwned>(config: &str) -> Result<T, Error> {
    let text = if config.trim().is_empty() {
        "{}"
    } else {
        config
    };
    serde_json::from_str(text).map_err(|e| Error::Invalid(format!("configuration: {e}")))
}
