//! The CLI's document decoding (`host/src/cli/input.rs`, compiled in
//! unchanged): plans, edge plans, trial requests, adapter configurations and
//! limits, as JSON, YAML or sniffed, into the host's types.
//!
//! The first byte picks the type and the file name (which picks the
//! syntax); the rest is the document. Properties:
//! - it never panics;
//! - an error is an input error that starts with the file's name, and names
//!   the field (`at workloads[0].ports[0].protocol: …`) whenever the
//!   document is well-formed but a value is wrong;
//! - a document that decodes reads back the same after it is written as
//!   JSON and as YAML (what `-o json`/`-o yaml` print can be fed back);
//! - a configuration always turns into the JSON `configure` receives.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use pando_fuzz::cli::failure::Failure;
use pando_fuzz::cli::input::parse_document;
use pando_host::Limits;
use pando_host::types::{BundlePlan, EdgePlan, TrialRequest};
use serde::Serialize;
use serde::de::DeserializeOwned;

const NAMES: [&str; 4] = ["doc.json", "doc.yaml", "doc", "-"];

/// Exact equality, for the host's types.
fn exact<T: PartialEq>(a: &T, b: &T) -> bool {
    a == b
}

/// Equality of configurations, floats within an ulp or two: serde_json
/// without its `float_roundtrip` feature (as the workspace builds it) reads
/// some long decimals one ulp off (docs/security.md, Findings).
fn close(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => x == y || ((x - y) / x).abs() <= 4.0 * f64::EPSILON,
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| close(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| close(v, w)))
        }
        _ => a == b,
    }
}

fn decode<T>(file: &str, text: &str, same: fn(&T, &T) -> bool) -> Option<T>
where
    T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug,
{
    let shown = if file == "-" { "<stdin>" } else { file };
    match parse_document::<T>(Path::new(file), text) {
        Ok(v) => {
            let json = serde_json::to_string(&v).expect("serializes as JSON");
            let back: T = parse_document(Path::new("again.json"), &json)
                .unwrap_or_else(|e| panic!("JSON does not read back: {:?}\n{json}", e.message()));
            assert!(same(&back, &v), "JSON round trip: {back:?} != {v:?}");
            let yaml = pando_host::yaml::to_string(&v).expect("serializes as YAML");
            let back: T = parse_document(Path::new("again.yaml"), &yaml)
                .unwrap_or_else(|e| panic!("YAML does not read back: {:?}\n{yaml}", e.message()));
            assert!(same(&back, &v), "YAML round trip: {back:?} != {v:?}");
            Some(v)
        }
        Err(Failure::Input(e)) => {
            let msg = format!("{e:#}");
            assert!(msg.starts_with(&format!("{shown}: ")), "{msg}");
            // A well-formed JSON object whose content is wrong gets the
            // field's path (`at workloads[0].ports[0].protocol`); only a
            // field missing at the root is reported without one.
            let json_object = matches!(
                serde_json::from_str::<serde_json::Value>(text),
                Ok(serde_json::Value::Object(_))
            );
            if json_object
                && file != "doc.yaml"
                && !msg.contains("missing field")
                && !msg.contains("duplicate field")
            {
                assert!(msg.starts_with(&format!("{shown}: at ")), "{msg}");
            }
            None
        }
        Err(other) => panic!("not an input error: {other:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let file = NAMES[usize::from(sel >> 4) % NAMES.len()];
    match sel % 5 {
        0 => {
            decode::<BundlePlan>(file, text, exact);
        }
        1 => {
            decode::<EdgePlan>(file, text, exact);
        }
        2 => {
            decode::<TrialRequest>(file, text, exact);
        }
        3 => {
            // `read_config`: any document, handed on as JSON.
            if let Some(v) = decode::<serde_json::Value>(file, text, close) {
                serde_json::to_string(&v).expect("a configuration serializes as JSON");
            }
        }
        _ => {
            decode::<Limits>(file, text, exact);
        }
    }
});
