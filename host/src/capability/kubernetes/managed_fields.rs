//! `metadata.managedFields` left out of what the guest is handed, as
//! kubectl shows objects, unless the request asks for them.
//!
//! Server-side apply's field ownership is often a third or more of an
//! object's JSON (a Pod a controller, the scheduler and the kubelet all
//! wrote carries an entry of each), and a guest decodes JSON several times
//! slower than the host: every byte left out is one the guest neither
//! copies in nor parses. An adapter that needs them (to see who owns a
//! field) asks with the query parameter [`SHOW`]`=true` on the request,
//! which the host takes off before it sends it; such a read is never
//! answered by the watch-fed cache, whose objects carry none. A watch's
//! events always come without them (0.1.0's `watch-request` has no query);
//! a read of the object shows them.
//!
//! The body is not decoded into values: each object's members are read as
//! raw JSON text and copied through but for the one member, so the host
//! spends a scan of the body, not a parse and a re-encoding of everything
//! in it. A body without the name anywhere is not scanned at all.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// The query parameter with which a request asks for `managedFields`.
pub(crate) const SHOW: &str = "showManagedFields";

/// The member left out.
const MANAGED_FIELDS: &str = "managedFields";

/// Takes [`SHOW`] off `query`: whether it asked for `managedFields`
/// (`true`, as kubectl's flag; any other value does not).
pub(crate) fn take_show(query: &mut Vec<(String, String)>) -> bool {
    let mut show = false;
    query.retain(|(k, v)| {
        if k == SHOW {
            show |= v == "true";
            false
        } else {
            true
        }
    });
    show
}

/// `body` (an object, or a list of them in `items`) with each object's
/// `metadata.managedFields` left out; `None` when there were none, or the
/// body is not a JSON object (it goes to the guest as it came).
pub(crate) fn strip(body: &[u8]) -> Option<Vec<u8>> {
    memchr::memmem::find(body, b"\"managedFields\"")?;
    let text = std::str::from_utf8(body).ok()?;
    let mut out = Vec::with_capacity(body.len());
    object(text, true, &mut out).then_some(out)
}

/// Removes `managedFields` from a decoded object (a watch event's, which
/// the host has decoded already); whether it had them.
pub(crate) fn strip_value(object: &mut serde_json::Value) -> bool {
    object
        .get_mut("metadata")
        .and_then(serde_json::Value::as_object_mut)
        .is_some_and(|m| m.remove(MANAGED_FIELDS).is_some())
}

/// Writes the object `raw` into `out` without its `metadata.managedFields`
/// (and, for a `list`, each of its `items`'); whether anything was left out.
/// Not an object: written as it is.
fn object(raw: &str, list: bool, out: &mut Vec<u8>) -> bool {
    let Ok(Members(members)) = serde_json::from_str::<Members>(raw) else {
        out.extend_from_slice(raw.as_bytes());
        return false;
    };
    // Only a list's `items` are objects of the API; a custom resource may
    // have a member of that name that is anything.
    let list = list
        && members.iter().any(|(k, v)| {
            k == "kind" && serde_json::from_str::<&str>(v.get()).is_ok_and(|k| k.ends_with("List"))
        });
    let mut changed = false;
    out.push(b'{');
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_key(key, out);
        match key.as_ref() {
            "metadata" => changed |= metadata(value.get(), out),
            "items" if list => changed |= items(value.get(), out),
            _ => out.extend_from_slice(value.get().as_bytes()),
        }
    }
    out.push(b'}');
    changed
}

/// An object's metadata without `managedFields`.
fn metadata(raw: &str, out: &mut Vec<u8>) -> bool {
    let Ok(Members(members)) = serde_json::from_str::<Members>(raw) else {
        out.extend_from_slice(raw.as_bytes());
        return false;
    };
    let mut changed = false;
    let mut first = true;
    out.push(b'{');
    for (key, value) in &members {
        if key == MANAGED_FIELDS {
            changed = true;
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        write_key(key, out);
        out.extend_from_slice(value.get().as_bytes());
    }
    out.push(b'}');
    changed
}

/// A list's items, each without its `managedFields`.
fn items(raw: &str, out: &mut Vec<u8>) -> bool {
    let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(raw) else {
        out.extend_from_slice(raw.as_bytes());
        return false;
    };
    let mut changed = false;
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        changed |= object(item.get(), false, out);
    }
    out.push(b']');
    changed
}

/// A member's name, quoted and escaped as JSON, and its colon.
fn write_key(key: &str, out: &mut Vec<u8>) {
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, key);
    out.push(b':');
}

/// An object's members in their order, each value as its raw text.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Object;
        impl<'de> Visitor<'de> for Object {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some(Key(key)) = map.next_key()? {
                    members.push((key, map.next_value()?));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(Object)
    }
}

/// A member's name: borrowed from the text unless it had escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Name;
        impl<'de> Visitor<'de> for Name {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member's name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(Name)
    }
}

#[cfg(test)]
mod tests;
