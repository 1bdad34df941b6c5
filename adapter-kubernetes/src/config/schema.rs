//! The JSON Schema (draft 2020-12) of the configuration [`Config::parse`]
//! accepts, as `info()` reports it.
//!
//! It states what `Config::parse` checks where JSON Schema can say it
//! (types, ranges, the edge's Service types, required fields, no others);
//! the rest (CIDRs, names, the node selector's labels) is in the
//! descriptions, and `configure` checks it. Tests keep the two in step.
//!
//! The schema is data, `schema.json` beside this file, which any reader of
//! the configuration may load; its `default`s are not written there but
//! filled in from [`defaults`], where every default is written once.
//!
//! `info()` answers with [`FILLED`], `schema.filled.json`: the same schema
//! with the defaults filled in, made by [`schema`] and committed. Every
//! load calls `info()`, and filling the schema in the guest (parse 11 KB of
//! JSON, serialize the defaults, merge, print) was a fifth of a cached
//! load (docs/benchmarks.md). A test keeps the file equal to [`schema`];
//! `PANDO_BLESS=1 cargo test -p pando-adapter-kubernetes filled` rewrites
//! it after a change to `schema.json` or a default.
//!
//! [`Config::parse`]: crate::config::Config::parse

use serde_json::Value;

use super::defaults;

/// The schema, less the defaults.
const SCHEMA: &str = include_str!("schema.json");

/// The configuration's JSON Schema with its defaults, as `info()` reports
/// it: [`schema`], printed and committed.
pub const FILLED: &str = include_str!("schema.filled.json");

/// The configuration's JSON Schema.
pub fn schema() -> Value {
    // `schema.json` is parsed by the tests; a build that could not read it
    // reports no schema rather than trapping in `info()`.
    let mut schema: Value = serde_json::from_str(SCHEMA).unwrap_or_default();
    let defaults = defaults::as_json();
    if let Some(properties) = schema["properties"].as_object_mut() {
        for (field, property) in properties.iter_mut() {
            if let Some(default) = defaults.get(field) {
                property["default"] = default.clone();
            }
        }
    }
    schema
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::json;

    use super::*;
    use crate::config::{Config, EdgeServiceType, NODE_PORT_RANGE};

    const MINIMAL: &str = r#"{"pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12"}"#;

    fn properties() -> serde_json::Map<String, Value> {
        schema()["properties"].as_object().unwrap().clone()
    }

    /// The default-filled configuration, as JSON.
    fn defaults() -> serde_json::Map<String, Value> {
        let config = Config::parse(MINIMAL).unwrap();
        match serde_json::to_value(&config).unwrap() {
            Value::Object(map) => map,
            other => panic!("a Config serializes to {other}"),
        }
    }

    #[test]
    fn every_config_field_is_in_the_schema_and_vice_versa() {
        let in_schema: BTreeSet<_> = properties().keys().cloned().collect();
        let in_config: BTreeSet<_> = defaults().keys().cloned().collect();
        assert_eq!(in_schema, in_config);
    }

    #[test]
    fn every_schema_field_is_accepted_by_parse() {
        // deny_unknown_fields: a key of the schema that `parse` did not know
        // would be refused.
        for field in properties().keys() {
            let mut doc: serde_json::Map<String, Value> = serde_json::from_str(MINIMAL).unwrap();
            doc.entry(field.clone()).or_insert(Value::Null);
            Config::parse(&Value::Object(doc).to_string())
                .unwrap_or_else(|e| panic!("{field}: {e:?}"));
        }
    }

    #[test]
    fn schema_defaults_are_the_config_defaults() {
        let defaults = defaults();
        for (field, property) in properties() {
            if matches!(field.as_str(), "pod_cidr" | "service_cidr") {
                assert!(property.get("default").is_none(), "{field} has a default");
                continue;
            }
            assert_eq!(
                property.get("default"),
                Some(&defaults[&field]),
                "the schema's default of {field} is not the Config's"
            );
        }
    }

    #[test]
    fn every_field_has_a_type_and_a_description() {
        for (field, property) in properties() {
            assert!(property.get("type").is_some(), "{field} has no type");
            let description = property["description"].as_str().unwrap_or_default();
            assert!(description.len() > 20, "{field} has no description");
        }
    }

    #[test]
    fn required_fields_and_no_others() {
        let schema = schema();
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["required"], json!(["pod_cidr", "service_cidr"]));
    }

    #[test]
    fn the_cidr_pattern_admits_ipv4_and_ipv6() {
        // A spot check of the loose pattern against what `parse` accepts,
        // without a regex crate: every accepted CIDR is made of its
        // characters.
        for cidr in [
            "10.244.0.0/16",
            "fd00:10:244::/56",
            "::/0",
            "::ffff:10.0.0.0/104",
        ] {
            let (address, prefix) = cidr.split_once('/').unwrap();
            assert!(
                address
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() || c == '.' || c == ':')
            );
            assert!(prefix.len() <= 3 && prefix.chars().all(|c| c.is_ascii_digit()));
            assert!(cidr.parse::<crate::config::Cidr>().is_ok(), "{cidr}");
        }
    }

    /// `schema.filled.json` as [`schema`] prints it.
    fn filled() -> String {
        let mut text = serde_json::to_string_pretty(&schema()).unwrap();
        text.push('\n');
        text
    }

    #[test]
    fn the_filled_schema_is_schema_json_with_the_defaults() {
        let want = filled();
        if want == FILLED {
            return;
        }
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/config/schema.filled.json");
        if std::env::var_os("PANDO_BLESS").is_some() {
            std::fs::write(path, &want).unwrap();
            return;
        }
        panic!(
            "{path} is not schema.json with the defaults of defaults.rs filled in; rewrite it \
             with `PANDO_BLESS=1 cargo test -p pando-adapter-kubernetes filled` and commit it"
        );
    }

    #[test]
    fn schema_json_is_json_and_writes_no_default() {
        let raw: Value = serde_json::from_str(SCHEMA).unwrap();
        for (field, property) in raw["properties"].as_object().unwrap() {
            assert!(
                property.get("default").is_none(),
                "{field}: defaults are defaults.rs's"
            );
        }
    }

    #[test]
    fn the_schemas_ranges_and_service_types_are_parses() {
        let p = properties();
        for field in ["edge_http_node_port", "edge_https_node_port"] {
            assert_eq!(
                p[field]["minimum"],
                json!(NODE_PORT_RANGE.start()),
                "{field}"
            );
            assert_eq!(p[field]["maximum"], json!(NODE_PORT_RANGE.end()), "{field}");
        }
        assert_eq!(
            p["edge_service_type"]["enum"],
            json!([EdgeServiceType::ALL[0], EdgeServiceType::ALL[1], null])
        );
        for (field, max) in [
            ("proxy_port", u64::from(u16::MAX)),
            ("api_qps", u32::MAX.into()),
            ("api_burst", u32::MAX.into()),
            ("edge_replicas", i32::MAX as u64),
            ("volume_size_bytes", i64::MAX as u64),
        ] {
            assert_eq!(p[field]["maximum"], json!(max), "{field}");
        }
    }
}
