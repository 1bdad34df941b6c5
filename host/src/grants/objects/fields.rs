//! Reading an object's fields for the object rules: `null` is absent, and
//! a field of the wrong type is a violation (the API server would refuse
//! the body anyway, and the rules must never read a value differently from
//! it).

use serde_json::{Map, Value};

/// One field, by key; `null` reads as absent.
pub(crate) fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// A field by a dotted run of keys (`["spec", "template", "spec"]`).
pub(crate) fn dig<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().try_fold(v, |v, k| get(v, k))
}

/// A boolean field; absent is `false`. `Err` names what is wrong.
pub(crate) fn flag(v: &Value, key: &str) -> Result<bool, String> {
    match get(v, key) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(format!("is not a boolean ({})", shown_value(other))),
    }
}

/// A boolean field, absent as `None`.
pub(crate) fn opt_flag(v: &Value, key: &str) -> Result<Option<bool>, String> {
    match get(v, key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(format!("is not a boolean ({})", shown_value(other))),
    }
}

/// A string field; absent as `None`.
pub(crate) fn string<'a>(v: &'a Value, key: &str) -> Result<Option<&'a str>, String> {
    match get(v, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!("is not a string ({})", shown_value(other))),
    }
}

/// An integer field; absent as `None`.
pub(crate) fn integer(v: &Value, key: &str) -> Result<Option<i64>, String> {
    match get(v, key) {
        None => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .map(Some)
            .ok_or_else(|| format!("is not an integer ({n})")),
        Some(other) => Err(format!("is not an integer ({})", shown_value(other))),
    }
}

/// A list field; absent is empty.
pub(crate) fn list<'a>(v: &'a Value, key: &str) -> Result<&'a [Value], String> {
    match get(v, key) {
        None => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(other) => Err(format!("is not a list ({})", shown_value(other))),
    }
}

/// An object field; absent as `None`.
pub(crate) fn object<'a>(
    v: &'a Value,
    key: &str,
) -> Result<Option<&'a Map<String, Value>>, String> {
    match get(v, key) {
        None => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(other) => Err(format!("is not an object ({})", shown_value(other))),
    }
}

/// A value for a message: escaped and clipped, so a body cannot forge or
/// flood log lines.
pub(crate) fn shown_value(v: &Value) -> String {
    shown(&v.to_string())
}

/// Text from a body for a message, escaped and clipped to 120 characters.
pub(crate) fn shown(s: &str) -> String {
    let mut out: String = s.chars().take(120).flat_map(char::escape_debug).collect();
    if s.chars().count() > 120 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_is_absent_and_wrong_types_are_named() {
        let v = json!({"a": null, "b": true, "c": "x", "d": 3, "e": [1], "f": {}});
        assert_eq!(flag(&v, "a"), Ok(false));
        assert_eq!(flag(&v, "b"), Ok(true));
        assert!(flag(&v, "c").unwrap_err().contains("not a boolean"));
        assert_eq!(string(&v, "c"), Ok(Some("x")));
        assert_eq!(integer(&v, "d"), Ok(Some(3)));
        assert!(integer(&v, "c").is_err());
        assert_eq!(list(&v, "a").map(<[Value]>::len), Ok(0));
        assert_eq!(list(&v, "e").map(<[Value]>::len), Ok(1));
        assert!(object(&v, "f").unwrap().is_some());
        assert!(dig(&v, &["f", "g"]).is_none());
        assert!(shown(&"x".repeat(500)).ends_with('…'));
        assert!(!shown("a\nb").contains('\n'));
    }
}
