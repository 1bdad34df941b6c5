//! Reading one field of the configuration: its JSON value checked and
//! turned into its type, or refused naming the field. The sections of
//! `Config::parse` and the object-valued fields are made of these.

use std::fmt;

use pando_adapter_sdk::types::Error;
use serde_json::Value;

use crate::isolation::cidr::Cidr;

/// The range Kubernetes allocates node ports from by default.
pub const NODE_PORT_RANGE: std::ops::RangeInclusive<u16> = 30000..=32767;

/// A check of a name's form (one of [`crate::kit::names`]'s), answering why not.
pub(super) type NameCheck = fn(&str) -> Result<(), String>;

/// "configuration field `<field>`: <why>".
pub(super) fn invalid_field(field: &str, why: impl fmt::Display) -> Error {
    Error::Invalid(format!("configuration field `{field}`: {why}"))
}

/// A string field's value: `None` when absent, `null` or empty.
pub(super) fn string(field: &str, value: Option<Value>) -> Result<Option<String>, Error> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(invalid_field(field, format!("`{other}` is not a string"))),
    }
}

/// An integer field's value in `min..=max`: `None` when absent or `null`.
pub(super) fn integer(
    field: &str,
    value: Option<Value>,
    min: u64,
    max: u64,
) -> Result<Option<u64>, Error> {
    let value = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(value) => value,
    };
    let n = match &value {
        Value::Number(n) => n.as_u64(),
        _ => None,
    };
    match n {
        Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
        Some(_) => Err(invalid_field(
            field,
            format!("{value} is out of range: it must be from {min} to {max}"),
        )),
        None if value.is_number() => Err(invalid_field(
            field,
            format!("{value} is out of range: it must be a whole number from {min} to {max}"),
        )),
        None => Err(invalid_field(field, format!("`{value}` is not a number"))),
    }
}

/// Apply a name check, naming the field in its refusal.
pub(super) fn check(field: &str, value: &str, f: NameCheck) -> Result<(), Error> {
    f(value).map_err(|why| invalid_field(field, format!("`{value}` {why}")))
}

/// A CIDR field's value.
pub(super) fn cidr(field: &str, text: &str) -> Result<Cidr, Error> {
    text.parse::<Cidr>()
        .map_err(|why| invalid_field(field, format!("`{text}` is not a CIDR ({why})")))
}

/// A node port field's value, in [`NODE_PORT_RANGE`].
pub(super) fn node_port(field: &str, value: Option<Value>) -> Result<Option<u16>, Error> {
    Ok(integer(
        field,
        value,
        (*NODE_PORT_RANGE.start()).into(),
        (*NODE_PORT_RANGE.end()).into(),
    )?
    .map(|n| n as u16))
}

/// A boolean field: `None` when absent or `null`.
pub(super) fn boolean(field: &str, value: Option<Value>) -> Result<Option<bool>, Error> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(other) => Err(invalid_field(
            field,
            format!("`{other}` is not `true` or `false`"),
        )),
    }
}

/// An image reference, loosely: not blank, no whitespace or control
/// characters. The registry decides the rest when a node pulls it.
pub(super) fn check_image(image: &str) -> Result<(), String> {
    if image.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("is not an image reference: it contains whitespace".into());
    }
    if image.len() > 4096 {
        return Err("is not an image reference: it is longer than 4096 characters".into());
    }
    Ok(())
}

/// Sets `slot` to the string field's value when one is given, and checks
/// what `slot` then holds (its default too) with `f`.
pub(super) fn name(
    slot: &mut String,
    field: &str,
    value: Option<Value>,
    f: NameCheck,
) -> Result<(), Error> {
    if let Some(text) = string(field, value)? {
        *slot = text;
    }
    check(field, slot, f)
}

/// Sets `slot` to the string field's value when one is given, checked with
/// `f`; unset, it stays as it was (its default).
pub(super) fn optional_name(
    slot: &mut Option<String>,
    field: &str,
    value: Option<Value>,
    f: NameCheck,
) -> Result<(), Error> {
    if let Some(text) = string(field, value)? {
        check(field, &text, f)?;
        *slot = Some(text);
    }
    Ok(())
}

/// Sets `slot` to the integer field's value in `min..=max` when one is
/// given; unset, it stays as it was (its default).
pub(super) fn number<T: TryFrom<u64>>(
    slot: &mut T,
    field: &str,
    value: Option<Value>,
    min: u64,
    max: u64,
) -> Result<(), Error> {
    if let Some(n) = integer(field, value, min, max)?
        && let Ok(n) = T::try_from(n)
    {
        *slot = n;
    }
    Ok(())
}
