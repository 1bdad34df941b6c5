//! The contract's `types` interface read from its WIT into the few shapes
//! the protobuf mapping knows. Anything else (flags, tuples, results,
//! resources, nested options) is refused by name, so a contract version that
//! adds one fails here rather than producing a message that means something
//! else.

use std::path::Path;

use anyhow::{Context as _, Result, anyhow, bail};
use wit_parser::{Resolve, Type, TypeDefKind};

/// A type a field or a payload has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ty {
    /// `bool`.
    Bool,
    /// `u16`: a `uint32` on the wire, range-checked when read.
    U16,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
    /// `s32`.
    S32,
    /// `string`.
    String,
    /// A record, variant or enum of the interface, by its WIT name.
    Named(String),
    /// `option<T>`; never of an option.
    Option(Box<Ty>),
    /// `list<T>`; never of an option or a list.
    List(Box<Ty>),
}

/// What a named type is.
#[derive(Debug, Clone)]
pub enum Shape {
    /// Fields in their WIT order.
    Record(Vec<Field>),
    /// Cases in their WIT order, each with at most one payload.
    Variant(Vec<Case>),
    /// Case names in their WIT order.
    Enum(Vec<String>),
}

/// A record's field.
#[derive(Debug, Clone)]
pub struct Field {
    /// Its WIT (kebab-case) name.
    pub name: String,
    /// Its type.
    pub ty: Ty,
    /// Its doc comment.
    pub docs: Option<String>,
    /// Added to its record by a later contract than the wire's first
    /// ([`Model::wire`]): a message from a peer of the first contract lacks
    /// it, which reads as the field's default, not as a missing field.
    pub added: bool,
}

/// A variant's case.
#[derive(Debug, Clone)]
pub struct Case {
    /// Its WIT name.
    pub name: String,
    /// Its payload, if it has one.
    pub payload: Option<Ty>,
    /// Its doc comment.
    pub docs: Option<String>,
}

/// A named type of the interface.
#[derive(Debug, Clone)]
pub struct Def {
    /// Its WIT (kebab-case) name.
    pub name: String,
    /// What it is.
    pub shape: Shape,
    /// Its doc comment.
    pub docs: Option<String>,
}

/// The `types` interface of one contract version.
#[derive(Debug, Clone)]
pub struct Model {
    /// The WIT package, `pando:runtime@0.1.0`.
    pub package: String,
    /// The WIT package whose version names the proto package
    /// (`pando.runtime.v0_1`): the package itself, or for [`Model::wire`]
    /// the first contract the wire served, whose messages it extends.
    pub wire_package: String,
    /// Every named type, in declaration order.
    pub defs: Vec<Def>,
}

/// Where the contract's versions live under the repository's `wit/`.
pub const FIRST_CONTRACT: &str = "wit";
/// The newest contract's WIT, which the wire's messages follow.
pub const NEWEST_CONTRACT: &str = "wit/v0.2";

impl Model {
    /// The wire's messages: the newest contract's `types` (core's one
    /// vocabulary: the host's public types are its), in the proto package
    /// of the first contract, which they extend. A later contract adds
    /// fields at a record's end and new records, so every message of the
    /// first keeps its field numbers (`tests/contract_versions.rs` holds
    /// that). `root` is the repository's.
    pub fn wire(root: &Path) -> Result<Model> {
        let first = Model::load(&root.join(FIRST_CONTRACT), "types")?;
        let mut newest = Model::load(&root.join(NEWEST_CONTRACT), "types")?;
        for def in &mut newest.defs {
            let (Shape::Record(fields), Some(Shape::Record(old))) =
                (&mut def.shape, first.def(&def.name).map(|d| &d.shape))
            else {
                continue;
            };
            for f in fields {
                f.added = !old.iter().any(|o| o.name == f.name);
            }
        }
        newest.wire_package = first.package;
        Ok(newest)
    }

    /// Reads `interface` of the package in the WIT directory `dir` (its
    /// `deps/` alongside). A record with a `stream` or `future` field is a
    /// transport shape of the async contract (a `byte-stream`, an
    /// `exec-session`), which the wire carries as its own streams: left
    /// out.
    pub fn load(dir: &Path, interface: &str) -> Result<Model> {
        let mut resolve = Resolve::default();
        let (pkg, _) = resolve
            .push_dir(dir)
            .with_context(|| format!("reading the WIT package in {}", dir.display()))?;
        let package = resolve.packages[pkg].name.to_string();
        let iface = resolve.packages[pkg]
            .interfaces
            .get(interface)
            .copied()
            .ok_or_else(|| anyhow!("{package} has no interface `{interface}`"))?;
        let mut defs = Vec::new();
        for (name, id) in &resolve.interfaces[iface].types {
            let def = &resolve.types[*id];
            if let TypeDefKind::Record(r) = &def.kind
                && r.fields.iter().any(|f| is_transport(&resolve, &f.ty))
            {
                continue;
            }
            let shape = match &def.kind {
                TypeDefKind::Record(r) => Shape::Record(
                    r.fields
                        .iter()
                        .map(|f| {
                            Ok(Field {
                                name: f.name.clone(),
                                ty: ty(&resolve, &f.ty, &format!("{name}.{}", f.name))?,
                                docs: f.docs.contents.clone(),
                                added: false,
                            })
                        })
                        .collect::<Result<_>>()?,
                ),
                TypeDefKind::Variant(v) => Shape::Variant(
                    v.cases
                        .iter()
                        .map(|c| {
                            let where_ = format!("{name}.{}", c.name);
                            let payload =
                                c.ty.as_ref()
                                    .map(|t| ty(&resolve, t, &where_))
                                    .transpose()?;
                            if let Some(Ty::Option(_)) = payload {
                                bail!("`{where_}`: an optional payload has no oneof form");
                            }
                            Ok(Case {
                                name: c.name.clone(),
                                payload,
                                docs: c.docs.contents.clone(),
                            })
                        })
                        .collect::<Result<_>>()?,
                ),
                TypeDefKind::Enum(e) => {
                    Shape::Enum(e.cases.iter().map(|c| c.name.clone()).collect())
                }
                other => bail!(
                    "`{name}` in {package}/{interface} is a {}, which the protobuf mapping does not \
                     know: add it to wit-proto's model and its emitters",
                    other.as_str()
                ),
            };
            defs.push(Def {
                name: name.clone(),
                shape,
                docs: def.docs.contents.clone(),
            });
        }
        Ok(Model {
            wire_package: package.clone(),
            package,
            defs,
        })
    }

    /// The named type `name`.
    pub fn def(&self, name: &str) -> Option<&Def> {
        self.defs.iter().find(|d| d.name == name)
    }

    /// Whether `ty` is an enum of this interface (a scalar on the wire).
    pub fn is_enum(&self, ty: &Ty) -> bool {
        matches!(ty, Ty::Named(n) if matches!(self.def(n).map(|d| &d.shape), Some(Shape::Enum(_))))
    }

    /// The element types that appear as `option<list<T>>` or as a variant's
    /// `list<T>` payload: each needs a wrapper message (`repeated` cannot be
    /// optional or a oneof member). In first-use order, without repeats.
    pub fn wrapped_lists(&self) -> Vec<Ty> {
        self.lists_wrapped(true)
    }

    /// The element types of the lists wrapped because a record field is an
    /// `option<list<T>>` (the ones a conversion function is written for;
    /// a variant's list payload is converted where the variant is).
    pub fn optional_lists(&self) -> Vec<Ty> {
        self.lists_wrapped(false)
    }

    fn lists_wrapped(&self, with_payloads: bool) -> Vec<Ty> {
        let mut out: Vec<Ty> = Vec::new();
        let mut add = |t: &Ty| {
            if !out.contains(t) {
                out.push(t.clone());
            }
        };
        for d in &self.defs {
            match &d.shape {
                Shape::Record(fields) => {
                    for f in fields {
                        if let Ty::Option(inner) = &f.ty
                            && let Ty::List(elem) = inner.as_ref()
                        {
                            add(elem);
                        }
                    }
                }
                Shape::Variant(cases) if with_payloads => {
                    for c in cases {
                        if let Some(Ty::List(elem)) = &c.payload {
                            add(elem);
                        }
                    }
                }
                Shape::Variant(_) | Shape::Enum(_) => {}
            }
        }
        out
    }
}

/// Whether `t` is a `stream` or a `future`, or an option of one.
fn is_transport(resolve: &Resolve, t: &Type) -> bool {
    let Type::Id(id) = t else {
        return false;
    };
    match &resolve.types[*id].kind {
        TypeDefKind::Stream(_) | TypeDefKind::Future(_) => true,
        TypeDefKind::Option(inner) | TypeDefKind::Type(inner) => is_transport(resolve, inner),
        _ => false,
    }
}

fn ty(resolve: &Resolve, t: &Type, at: &str) -> Result<Ty> {
    Ok(match t {
        Type::Bool => Ty::Bool,
        Type::U16 => Ty::U16,
        Type::U32 => Ty::U32,
        Type::U64 => Ty::U64,
        Type::S32 => Ty::S32,
        Type::String => Ty::String,
        Type::Id(id) => {
            let def = &resolve.types[*id];
            match &def.kind {
                TypeDefKind::Option(inner) => match ty(resolve, inner, at)? {
                    Ty::Option(_) => bail!("`{at}`: an option of an option has no protobuf form"),
                    inner => Ty::Option(Box::new(inner)),
                },
                TypeDefKind::List(inner) => match ty(resolve, inner, at)? {
                    t @ (Ty::Option(_) | Ty::List(_)) => {
                        bail!("`{at}`: a list of {t:?} has no protobuf form here")
                    }
                    inner => Ty::List(Box::new(inner)),
                },
                // A `use`d name: the type it names.
                TypeDefKind::Type(t) => ty(resolve, t, at)?,
                TypeDefKind::Record(_) | TypeDefKind::Variant(_) | TypeDefKind::Enum(_) => {
                    Ty::Named(
                        def.name
                            .clone()
                            .ok_or_else(|| anyhow!("`{at}`: an anonymous record"))?,
                    )
                }
                other => bail!("`{at}`: a {} has no protobuf form here", other.as_str()),
            }
        }
        other => bail!("`{at}`: {other:?} has no protobuf form here"),
    })
}
