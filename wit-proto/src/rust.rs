//! Conversions between the host's types (`h::`, wasmtime's bindings of the
//! WIT) and prost's messages (`pb::`), as Rust source to `include!` in a
//! module that has `h`, `pb` and `Invalid` in scope.
//!
//! Host to wire is `From` and cannot fail. Wire to host is `TryFrom` with
//! `Invalid`: a message field that must be there and is not, an enum that is
//! unset or unknown, a oneof with no case, a `u16` out of range: each names
//! the message and field.

use std::fmt::Write as _;

use heck::{ToSnakeCase as _, ToUpperCamelCase as _};

use crate::model::{Def, Model, Shape, Ty};
use crate::proto::list_message;

fn camel(s: &str) -> String {
    s.to_upper_camel_case()
}

/// prost's name for a field or oneof member (a Rust keyword gets `r#`).
fn field_name(s: &str) -> String {
    let n = s.to_snake_case();
    match n.as_str() {
        "type" | "match" | "ref" | "mod" | "use" | "fn" | "in" | "loop" | "move" => {
            format!("r#{n}")
        }
        _ => n,
    }
}

/// `e` (a host value of type `t`) as its wire value where a message field
/// holds it (a message field is an `Option`).
fn to_pb(model: &Model, t: &Ty, e: &str) -> String {
    match t {
        Ty::Named(n) if model.is_enum(t) => format!("pb::{}::from({e}) as i32", camel(n)),
        Ty::Named(n) => format!("Some(pb::{}::from({e}))", camel(n)),
        other => to_pb_value(model, other, e),
    }
}

/// `e` as a wire value where it stands alone (an element, a payload).
fn to_pb_value(model: &Model, t: &Ty, e: &str) -> String {
    match t {
        Ty::Bool | Ty::U32 | Ty::U64 | Ty::S32 | Ty::String => e.to_string(),
        Ty::U16 => format!("u32::from({e})"),
        Ty::Named(n) if model.is_enum(t) => format!("pb::{}::from({e}) as i32", camel(n)),
        Ty::Named(n) => format!("pb::{}::from({e})", camel(n)),
        Ty::List(elem) => match elem.as_ref() {
            Ty::Bool | Ty::U32 | Ty::U64 | Ty::S32 | Ty::String => e.to_string(),
            elem => format!(
                "{e}.into_iter().map(|x| {}).collect()",
                to_pb_value(model, elem, "x")
            ),
        },
        Ty::Option(inner) => match inner.as_ref() {
            Ty::List(elem) => format!(
                "{e}.map(|l| pb::{} {{ items: {} }})",
                list_message(elem),
                to_pb_value(model, &Ty::List(elem.clone()), "l")
            ),
            Ty::Bool | Ty::U32 | Ty::U64 | Ty::S32 | Ty::String => e.to_string(),
            inner => format!("{e}.map(|x| {})", to_pb_value(model, inner, "x")),
        },
    }
}

/// `e` (a wire value of type `t` as a message field holds it) as the host's
/// value, inside a function returning `Result<_, Invalid>`; `at` names it.
fn from_pb(model: &Model, t: &Ty, e: &str, at: &str) -> String {
    match t {
        Ty::Named(n) if model.is_enum(t) => {
            format!(
                "enum_from::<pb::{}, h::{}>({e}, \"{at}\")?",
                camel(n),
                camel(n)
            )
        }
        Ty::Named(n) => format!(
            "h::{}::try_from({e}.ok_or_else(|| Invalid::missing(\"{at}\"))?)?",
            camel(n)
        ),
        other => from_pb_value(model, other, e, at),
    }
}

fn from_pb_value(model: &Model, t: &Ty, e: &str, at: &str) -> String {
    match t {
        Ty::Bool | Ty::U32 | Ty::U64 | Ty::S32 | Ty::String => e.to_string(),
        Ty::U16 => format!("u16_from({e}, \"{at}\")?"),
        Ty::Named(n) if model.is_enum(t) => {
            format!(
                "enum_from::<pb::{}, h::{}>({e}, \"{at}\")?",
                camel(n),
                camel(n)
            )
        }
        Ty::Named(n) => format!("h::{}::try_from({e})?", camel(n)),
        Ty::List(elem) => match elem.as_ref() {
            Ty::Bool | Ty::U32 | Ty::U64 | Ty::S32 | Ty::String => e.to_string(),
            elem => format!(
                "{e}.into_iter().map(|x| Ok::<_, Invalid>({})).collect::<Result<Vec<_>, Invalid>>()?",
                from_pb_value(model, elem, "x", at)
            ),
        },
        Ty::Option(inner) => match inner.as_ref() {
            Ty::List(elem) => format!(
                "match {e} {{ None => None, Some(l) => Some({}) }}",
                from_pb_value(model, &Ty::List(elem.clone()), "l.items", at)
            ),
            Ty::Bool | Ty::U32 | Ty::U64 | Ty::S32 | Ty::String => e.to_string(),
            inner => format!(
                "match {e} {{ None => None, Some(x) => Some({}) }}",
                from_pb_value(model, inner, "x", at)
            ),
        },
    }
}

/// The conversions of every type of the model.
pub fn conversions(model: &Model) -> String {
    let mut out = String::from(
        "// Generated from the contract's WIT by `pando-wit-proto` at build time; do not edit.\n",
    );
    for def in &model.defs {
        def_(&mut out, model, def);
    }
    out
}

fn def_(out: &mut String, model: &Model, def: &Def) {
    let name = camel(&def.name);
    match &def.shape {
        Shape::Record(fields) => {
            let _ = writeln!(
                out,
                "impl From<h::{name}> for pb::{name} {{\n    fn from(v: h::{name}) -> Self {{\n        pb::{name} {{"
            );
            for f in fields {
                let fname = field_name(&f.name);
                let _ = writeln!(
                    out,
                    "            {fname}: {},",
                    to_pb(model, &f.ty, &format!("v.{fname}"))
                );
            }
            out.push_str("        }\n    }\n}\n");
            let _ = writeln!(
                out,
                "impl TryFrom<pb::{name}> for h::{name} {{\n    type Error = Invalid;\n    \
                 fn try_from(m: pb::{name}) -> Result<Self, Invalid> {{\n        Ok(h::{name} {{"
            );
            for f in fields {
                let fname = field_name(&f.name);
                let at = format!("{name}.{}", f.name.to_snake_case());
                let value = match &f.ty {
                    // A record a later contract added: absent from an older
                    // peer's message, and then its default.
                    Ty::Named(n) if f.added && !model.is_enum(&f.ty) => format!(
                        "match m.{fname} {{ None => Default::default(), Some(x) => h::{}::try_from(x)? }}",
                        camel(n)
                    ),
                    t => from_pb(model, t, &format!("m.{fname}"), &at),
                };
                let _ = writeln!(out, "            {fname}: {value},");
            }
            out.push_str("        })\n    }\n}\n");
        }
        Shape::Enum(cases) => {
            let _ = writeln!(
                out,
                "impl From<h::{name}> for pb::{name} {{\n    fn from(v: h::{name}) -> Self {{\n        match v {{"
            );
            for c in cases {
                let _ = writeln!(
                    out,
                    "            h::{name}::{0} => pb::{name}::{0},",
                    camel(c)
                );
            }
            out.push_str("        }\n    }\n}\n");
            let _ = writeln!(
                out,
                "impl TryFrom<pb::{name}> for h::{name} {{\n    type Error = Invalid;\n    \
                 fn try_from(v: pb::{name}) -> Result<Self, Invalid> {{\n        match v {{"
            );
            for c in cases {
                let _ = writeln!(
                    out,
                    "            pb::{name}::{0} => Ok(h::{name}::{0}),",
                    camel(c)
                );
            }
            let _ = writeln!(
                out,
                "            pb::{name}::Unspecified => Err(Invalid::unset(\"{name}\")),\n        }}\n    }}\n}}"
            );
        }
        Shape::Variant(cases) => {
            let module = def.name.to_snake_case();
            let _ = writeln!(
                out,
                "impl From<h::{name}> for pb::{name} {{\n    fn from(v: h::{name}) -> Self {{\n        \
                 let case = match v {{"
            );
            for c in cases {
                let cn = camel(&c.name);
                match &c.payload {
                    None => {
                        let _ = writeln!(
                            out,
                            "            h::{name}::{cn} => pb::{module}::Case::{cn}(pb::Unit {{}}),"
                        );
                    }
                    Some(Ty::List(elem)) => {
                        let _ = writeln!(
                            out,
                            "            h::{name}::{cn}(p) => pb::{module}::Case::{cn}(pb::{} {{ items: {} }}),",
                            list_message(elem),
                            to_pb_value(model, &Ty::List(elem.clone()), "p")
                        );
                    }
                    Some(t) => {
                        let _ = writeln!(
                            out,
                            "            h::{name}::{cn}(p) => pb::{module}::Case::{cn}({}),",
                            to_pb_value(model, t, "p")
                        );
                    }
                }
            }
            let _ = writeln!(
                out,
                "        }};\n        pb::{name} {{ case: Some(case) }}\n    }}\n}}"
            );
            let _ = writeln!(
                out,
                "impl TryFrom<pb::{name}> for h::{name} {{\n    type Error = Invalid;\n    \
                 fn try_from(m: pb::{name}) -> Result<Self, Invalid> {{\n        \
                 Ok(match m.case.ok_or_else(|| Invalid::unset(\"{name}\"))? {{"
            );
            for c in cases {
                let cn = camel(&c.name);
                let at = format!("{name}.{}", c.name.to_snake_case());
                match &c.payload {
                    None => {
                        let _ = writeln!(
                            out,
                            "            pb::{module}::Case::{cn}(_) => h::{name}::{cn},"
                        );
                    }
                    Some(Ty::List(elem)) => {
                        let _ = writeln!(
                            out,
                            "            pb::{module}::Case::{cn}(p) => h::{name}::{cn}({}),",
                            from_pb_value(model, &Ty::List(elem.clone()), "p.items", &at)
                        );
                    }
                    Some(t) => {
                        let _ = writeln!(
                            out,
                            "            pb::{module}::Case::{cn}(p) => h::{name}::{cn}({}),",
                            from_pb_value(model, t, "p", &at)
                        );
                    }
                }
            }
            out.push_str("        })\n    }\n}\n");
        }
    }
}
