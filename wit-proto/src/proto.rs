//! The `types` interface as a proto3 file.
//!
//! - A record is a message, its fields numbered in WIT order from 1.
//! - An enum is a proto enum whose 0 is `<NAME>_UNSPECIFIED`, never a WIT
//!   case: an unset enum is refused when read, not taken for the first case.
//! - A variant is a message with one `oneof case`; a case without a payload
//!   carries `Unit`.
//! - `option<T>` is `optional` for scalars and enums, and plain for messages
//!   (a message field has presence); `option<list<T>>` and a `list<T>`
//!   payload are a `<T>List` message (`repeated` can be neither).
//! - `u16` is `uint32`, range-checked when read.

use std::fmt::Write as _;

use heck::{ToShoutySnakeCase as _, ToSnakeCase as _, ToUpperCamelCase as _};

use crate::model::{Def, Model, Shape, Ty};

/// The proto package of a WIT package: `pando:runtime@0.1.0` →
/// `pando.runtime.v0_1`.
pub fn package(wit_package: &str) -> String {
    let (name, version) = wit_package
        .split_once('@')
        .unwrap_or((wit_package, "0.0.0"));
    let mut parts = version.split('.');
    let major = parts.next().unwrap_or("0");
    let minor = parts.next().unwrap_or("0");
    format!("{}.v{major}_{minor}", name.replace([':', '/'], "."))
}

/// The message name of a wrapper for `list<elem>`.
pub fn list_message(elem: &Ty) -> String {
    format!("{}List", scalar_or_message_name(elem))
}

fn scalar_or_message_name(t: &Ty) -> String {
    match t {
        Ty::Bool => "Bool".into(),
        Ty::U16 | Ty::U32 => "Uint32".into(),
        Ty::U64 => "Uint64".into(),
        Ty::S32 => "Int32".into(),
        Ty::String => "String".into(),
        Ty::Named(n) => n.to_upper_camel_case(),
        Ty::Option(_) | Ty::List(_) => unreachable!("the model has no list of these"),
    }
}

/// The proto scalar a WIT scalar is carried as (protoc-gen-go gives the Go
/// type of the same name); none for a named type, an option or a list.
pub fn scalar(t: &Ty) -> Option<&'static str> {
    Some(match t {
        Ty::Bool => "bool",
        Ty::U16 | Ty::U32 => "uint32",
        Ty::U64 => "uint64",
        Ty::S32 => "int32",
        Ty::String => "string",
        Ty::Named(_) | Ty::Option(_) | Ty::List(_) => return None,
    })
}

/// The proto type of a scalar, enum or message (not an option or list).
fn base(t: &Ty) -> String {
    match (scalar(t), t) {
        (Some(s), _) => s.into(),
        (None, Ty::Named(n)) => n.to_upper_camel_case(),
        (None, _) => unreachable!("handled by the caller"),
    }
}

/// A field's declaration without its number: `optional uint64 size_bytes`.
fn field(model: &Model, t: &Ty, name: &str) -> String {
    let name = name.to_snake_case();
    match t {
        Ty::Option(inner) => match inner.as_ref() {
            Ty::List(elem) => format!("{} {name}", list_message(elem)),
            Ty::Named(_) if !model.is_enum(inner) => format!("{} {name}", base(inner)),
            other => format!("optional {} {name}", base(other)),
        },
        Ty::List(elem) => format!("repeated {} {name}", base(elem)),
        other => format!("{} {name}", base(other)),
    }
}

fn comment(out: &mut String, indent: &str, docs: &Option<String>) {
    if let Some(d) = docs {
        for line in d.lines() {
            let line = line.trim_end();
            if line.is_empty() {
                let _ = writeln!(out, "{indent}//");
            } else {
                let _ = writeln!(out, "{indent}// {line}");
            }
        }
    }
}

/// The whole file. `go_package` is the Go import path of the generated
/// code.
pub fn file(model: &Model, go_package: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// Generated from the WIT of {} by `pando-wit-proto`; do not edit.\n\
         // The messages are the contract's types one for one (docs/go.md, \"The service\").\n\
         syntax = \"proto3\";\n\npackage {};\n\noption go_package = \"{go_package}\";\n",
        model.package,
        package(&model.wire_package)
    );
    out.push_str("// A variant case without a payload.\nmessage Unit {}\n");
    for elem in model.wrapped_lists() {
        let _ = writeln!(
            out,
            "\n// A list that can be absent, or a variant case's list.\nmessage {} {{\n  repeated {} items = 1;\n}}",
            list_message(&elem),
            base(&elem)
        );
    }
    for def in &model.defs {
        out.push('\n');
        def_(&mut out, model, def);
    }
    out
}

fn def_(out: &mut String, model: &Model, def: &Def) {
    let name = def.name.to_upper_camel_case();
    comment(out, "", &def.docs);
    match &def.shape {
        Shape::Record(fields) => {
            let _ = writeln!(out, "message {name} {{");
            for (i, f) in fields.iter().enumerate() {
                comment(out, "  ", &f.docs);
                let _ = writeln!(out, "  {} = {};", field(model, &f.ty, &f.name), i + 1);
            }
            out.push_str("}\n");
        }
        Shape::Enum(cases) => {
            let prefix = def.name.to_shouty_snake_case();
            let _ = writeln!(out, "enum {name} {{\n  {prefix}_UNSPECIFIED = 0;");
            for (i, c) in cases.iter().enumerate() {
                let _ = writeln!(out, "  {prefix}_{} = {};", c.to_shouty_snake_case(), i + 1);
            }
            out.push_str("}\n");
        }
        Shape::Variant(cases) => {
            let _ = writeln!(out, "message {name} {{\n  oneof case {{");
            for (i, c) in cases.iter().enumerate() {
                comment(out, "    ", &c.docs);
                let ty = match &c.payload {
                    None => "Unit".to_string(),
                    Some(Ty::List(elem)) => list_message(elem),
                    Some(t) => base(t),
                };
                let _ = writeln!(out, "    {ty} {} = {};", c.name.to_snake_case(), i + 1);
            }
            out.push_str("  }\n}\n");
        }
    }
}
