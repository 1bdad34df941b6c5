//! Checking a component before anything runs: is it wasm, is it a component,
//! which contract version and world does it target, and can every import be
//! satisfied within its grants.

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::bindings::Line;
use crate::capability::{self, Lending};
use crate::error::LoadError;
use crate::grants::Grants;

/// Contract versions this host serves, newest first. Each also serves the
/// versions semver-compatible with it ([`served_version`]).
pub const SERVED_VERSIONS: &[&str] = &["0.2.0", "0.1.0"];

/// The served version that serves a component built against `version`:
/// the same one, or one semver-compatible with it as the component model's
/// linker matches names (`0.1.3` by `0.1.0`, `1.4.0` by `1.0.0`; not `0.2.0`
/// by `0.1.0`, nor a pre-release but by its exact version). A newer patch
/// that uses an import this host lacks is refused when it is instantiated,
/// naming the import.
pub fn served_version(version: &str) -> Option<&'static str> {
    if let Some(exact) = SERVED_VERSIONS.iter().copied().find(|s| *s == version) {
        return Some(exact);
    }
    let wanted = semver::Version::parse(version).ok()?;
    if !wanted.pre.is_empty() {
        return None;
    }
    SERVED_VERSIONS.iter().copied().find(|s| {
        semver::Version::parse(s).is_ok_and(|served| {
            served.major == wanted.major && (served.major > 0 || served.minor == wanted.minor)
        })
    })
}

/// The contract's package.
const PACKAGE: &str = "pando:runtime";

/// Which world a component targets, read from what it really imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum World {
    /// The adapter exports and the generic imports.
    RuntimeAdapter,
    /// Adds the Kubernetes API import.
    KubernetesAdapter,
}

impl World {
    /// The world's WIT name.
    pub fn name(self) -> &'static str {
        match self {
            World::RuntimeAdapter => "runtime-adapter",
            World::KubernetesAdapter => "kubernetes-adapter",
        }
    }
}

/// What the checks learned of a component.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ComponentShape {
    /// The world it targets.
    pub world: World,
    /// The contract version it targets.
    pub version: String,
    /// Every import, by full name.
    pub imports: Vec<String>,
    /// Every export, by full name.
    pub exports: Vec<String>,
}

/// What the first bytes say the file is.
pub(crate) fn check_header(what: &str, bytes: &[u8]) -> Result<(), LoadError> {
    if bytes.len() < 8 || &bytes[0..4] != b"\0asm" {
        return Err(LoadError::NotWasm { what: what.into() });
    }
    if wasmparser::Parser::is_core_wasm(bytes) {
        return Err(LoadError::CoreModule { what: what.into() });
    }
    if !wasmparser::Parser::is_component(bytes) {
        return Err(LoadError::Malformed {
            what: what.into(),
            reason: format!(
                "unknown wasm layer or version (header bytes {:02x?}); this host reads components \
                 of the component-model binary format",
                &bytes[4..8]
            ),
        });
    }
    Ok(())
}

/// The version of `pando:runtime/adapter` a component exports, read from its
/// bytes before anything is compiled: it picks the engine that compiles it
/// (one per contract line, `runtime/engine.rs`). Only the outermost
/// component's exports are read; nested modules and components are skipped
/// over, not parsed. `None` when it exports no adapter interface or the bytes
/// do not parse this far (the compile that follows says why).
pub(crate) fn exported_version(bytes: &[u8]) -> Option<String> {
    use wasmparser::{Chunk, Parser, Payload};

    let mut parser = Parser::new(0);
    let mut data = bytes;
    loop {
        let Chunk::Parsed { consumed, payload } = parser.parse(data, true).ok()? else {
            return None;
        };
        data = data.get(consumed..)?;
        match payload {
            Payload::ModuleSection {
                unchecked_range, ..
            }
            | Payload::ComponentSection {
                unchecked_range, ..
            } => data = data.get(unchecked_range.len()..)?,
            Payload::CodeSectionStart { size, .. } => {
                parser.skip_section();
                data = data.get(usize::try_from(size).ok()?..)?;
            }
            Payload::ComponentExportSection(exports) => {
                for export in exports.into_iter().flatten() {
                    if let Some(n) = parse_name(export.name.name)
                        && n.package == PACKAGE
                        && n.interface == "adapter"
                    {
                        return n.version.map(str::to_string);
                    }
                }
            }
            Payload::End(_) => return None,
            _ => {}
        }
    }
}

/// The line whose engine compiles a component exporting `version` (the
/// 0.1 engine for a version no line serves: the check after the compile
/// refuses it, naming the versions served).
pub(crate) fn line_of(version: Option<&str>) -> Line {
    version
        .and_then(served_version)
        .and_then(Line::of)
        .unwrap_or(Line::V0_1)
}

/// A parsed `namespace:package/interface@version`.
struct ItemName<'a> {
    package: &'a str,
    interface: &'a str,
    version: Option<&'a str>,
}

fn parse_name(name: &str) -> Option<ItemName<'_>> {
    let (path, version) = match name.split_once('@') {
        Some((p, v)) => (p, Some(v)),
        None => (name, None),
    };
    let (package, interface) = path.split_once('/')?;
    Some(ItemName {
        package,
        interface,
        version,
    })
}

/// Reads the component's type and checks it against what this host serves
/// and, when given, what the grants allow (`inspect` describes a component
/// without grants: it says what the component imports, it does not run it).
pub(crate) fn check_shape(
    what: &str,
    engine: &Engine,
    component: &Component,
    grants: Option<&Grants>,
) -> Result<ComponentShape, LoadError> {
    let ty = component.component_type();
    let imports: Vec<String> = ty.imports(engine).map(|(n, _)| n.to_string()).collect();
    let exports: Vec<String> = ty.exports(engine).map(|(n, _)| n.to_string()).collect();

    let adapter_export = exports
        .iter()
        .find_map(|e| parse_name(e).filter(|n| n.package == PACKAGE && n.interface == "adapter"));
    let Some(adapter) = adapter_export else {
        return Err(LoadError::NotAnAdapter {
            what: what.into(),
            exports: if exports.is_empty() {
                "nothing".into()
            } else {
                exports.join(", ")
            },
        });
    };
    let version = adapter.version.unwrap_or("").to_string();
    let Some(served) = served_version(&version) else {
        return Err(LoadError::UnsupportedVersion {
            what: what.into(),
            found: if version.is_empty() {
                "an unversioned package".into()
            } else {
                version
            },
            served: SERVED_VERSIONS.join(", "),
        });
    };

    let mut world = World::RuntimeAdapter;
    for import in &imports {
        let reason = match classify_import(import, served, grants) {
            Import::Lent(capability) => {
                if capability == KUBERNETES {
                    world = World::KubernetesAdapter;
                }
                continue;
            }
            Import::Refused(why) => why,
        };
        return Err(LoadError::Import {
            what: what.into(),
            import: import.clone(),
            reason,
        });
    }
    Ok(ComponentShape {
        world,
        version,
        imports,
        exports,
    })
}

/// The capability whose import makes an adapter of the
/// `kubernetes-adapter` world.
const KUBERNETES: &str = "kubernetes";

#[derive(Debug, PartialEq, Eq)]
enum Import {
    /// Lent, by this capability (`""` for WASI and type-only interfaces).
    Lent(&'static str),
    /// Never lent; why.
    Refused(String),
}

fn classify_import(name: &str, contract_version: &str, grants: Option<&Grants>) -> Import {
    let Some(item) = parse_name(name) else {
        return Import::Refused(
            "which is not an interface this host knows (a bare function import); \
             adapters import only WASI and pando:runtime interfaces"
                .into(),
        );
    };
    match item.package {
        // Inert without authority: no preopened directories, no environment,
        // no stdin; stdout is discarded and stderr goes to the host's log.
        "wasi:io" | "wasi:clocks" | "wasi:random" | "wasi:cli" | "wasi:filesystem" => {
            Import::Lent("")
        }
        // Lent without a network: every socket is refused (`access-denied`)
        // and names never resolve. Language runtimes built on wasi-libc
        // (CPython for componentize-py, TinyGo, …) import these whether or
        // not the adapter opens a socket; refusing them would refuse every
        // such adapter, while lending them inert gives nothing away.
        "wasi:sockets" => Import::Lent(""),
        "wasi:http" => Import::Refused(
            "which this host does not lend: adapters have no network of their own and reach \
             their runtime only through the host's imports (pando:runtime/kubernetes); \
             remove the HTTP use from the adapter"
                .into(),
        ),
        PACKAGE => {
            // Any version the same served version serves: the linker
            // matches them as it matches the export.
            if item.version.and_then(served_version) != Some(contract_version) {
                return Import::Refused(format!(
                    "but its adapter export is served as pando:runtime@{contract_version}; build \
                     the whole adapter against one version of the pando:runtime package"
                ));
            }
            let line = Line::of(contract_version).unwrap_or(Line::V0_1);
            match capability::lending(item.interface, line, grants) {
                Lending::Lent(capability) => Import::Lent(capability),
                Lending::TypesOnly => Import::Lent(""),
                Lending::NotGranted(why) => Import::Refused(why),
                Lending::NotServed(why) => Import::Refused(why.to_string()),
                Lending::Unknown => Import::Refused(format!(
                    "but pando:runtime@{contract_version} has no importable interface `{}`",
                    item.interface
                )),
            }
        }
        other => Import::Refused(format!(
            "from package `{other}`, which this host does not provide; adapters import only \
             WASI (io, clocks, random, cli, filesystem) and pando:runtime interfaces"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_classification() {
        assert!(matches!(
            check_header("x", b"hello world"),
            Err(LoadError::NotWasm { .. })
        ));
        assert!(matches!(
            check_header("x", b"\0asm\x01\0\0\0"),
            Err(LoadError::CoreModule { .. })
        ));
        assert!(check_header("x", b"\0asm\x0d\0\x01\0").is_ok());
        assert!(matches!(
            check_header("x", b"\0asm\x7f\0\x09\0"),
            Err(LoadError::Malformed { .. })
        ));
    }

    #[test]
    fn imports_are_classified_by_the_capability_that_lends_them() {
        let lent = |name| classify_import(name, "0.1.0", None);
        assert_eq!(lent("wasi:io/streams@0.2.4"), Import::Lent(""));
        assert_eq!(lent("pando:runtime/log@0.1.0"), Import::Lent("log"));
        assert_eq!(lent("pando:runtime/types@0.1.0"), Import::Lent(""));
        assert_eq!(
            lent("pando:runtime/kubernetes@0.1.0"),
            Import::Lent(KUBERNETES)
        );
        assert!(matches!(
            lent("pando:runtime/log@0.2.0"),
            Import::Refused(_)
        ));
        assert!(matches!(
            lent("pando:runtime/sockets@0.1.0"),
            Import::Refused(why) if why.contains("no importable interface `sockets`")
        ));
        assert_eq!(lent("wasi:sockets/tcp@0.2.0"), Import::Lent(""));
        assert!(matches!(
            lent("wasi:http/outgoing-handler@0.2.0"),
            Import::Refused(_)
        ));
        assert!(matches!(lent("acme:evil/backdoor"), Import::Refused(_)));
        assert!(matches!(lent("f"), Import::Refused(_)));
    }

    #[test]
    fn compatible_versions_are_served_as_the_linker_matches_them() {
        assert_eq!(served_version("0.1.0"), Some("0.1.0"));
        assert_eq!(served_version("0.1.7"), Some("0.1.0"), "a newer patch");
        assert_eq!(served_version("0.2.0"), Some("0.2.0"));
        assert_eq!(served_version("0.2.3"), Some("0.2.0"), "a newer patch");
        assert_eq!(served_version("0.3.0"), None, "0.x minors are breaking");
        assert_eq!(served_version("1.0.0"), None);
        assert_eq!(
            served_version("0.1.1-rc.1"),
            None,
            "a pre-release only as itself"
        );
        assert_eq!(served_version(""), None);
        assert_eq!(served_version("0.1"), None, "not a version");
    }

    #[test]
    fn a_0_2_adapter_is_lent_log_call_kubernetes_and_wasi_0_3_clocks_and_nothing_0_2_dropped() {
        let lent = |name| classify_import(name, "0.2.0", None);
        assert_eq!(lent("pando:runtime/log@0.2.0"), Import::Lent("log"));
        assert_eq!(lent("pando:runtime/call@0.2.0"), Import::Lent("call"));
        assert_eq!(lent("pando:runtime/types@0.2.0"), Import::Lent(""));
        assert_eq!(lent("wasi:clocks/monotonic-clock@0.3.0"), Import::Lent(""));
        assert!(matches!(
            lent("pando:runtime/events@0.2.0"),
            Import::Refused(why) if why.contains("stream<bundle-event>")
        ));
        assert!(matches!(
            lent("pando:runtime/streams@0.2.0"),
            Import::Refused(why) if why.contains("stream<u8>")
        ));
        // Lent to 0.2.0 as to 0.1.0: where the grants allow it.
        assert_eq!(
            lent("pando:runtime/kubernetes@0.2.0"),
            Import::Lent("kubernetes")
        );
        assert!(matches!(
            classify_import("pando:runtime/kubernetes@0.2.0", "0.2.0", Some(&Grants::default())),
            Import::Refused(why) if why.contains("no `kubernetes` section")
        ));
        assert!(matches!(
            lent("pando:runtime/log@0.1.0"),
            Import::Refused(why) if why.contains("one version of the pando:runtime package")
        ));
    }

    #[test]
    fn the_exported_version_picks_the_line_and_an_unserved_one_the_0_1_engine() {
        assert_eq!(line_of(Some("0.1.0")), Line::V0_1);
        assert_eq!(line_of(Some("0.1.9")), Line::V0_1);
        assert_eq!(line_of(Some("0.2.0")), Line::V0_2);
        assert_eq!(
            line_of(Some("0.9.0")),
            Line::V0_1,
            "refused after the compile"
        );
        assert_eq!(line_of(None), Line::V0_1);
        assert_eq!(exported_version(b"\0asm\x0d\0\x01\0"), None, "no exports");
        assert_eq!(exported_version(b"not wasm"), None);
    }

    #[test]
    fn an_import_of_a_compatible_version_is_lent() {
        assert_eq!(
            classify_import("pando:runtime/log@0.1.4", "0.1.0", None),
            Import::Lent("log")
        );
        assert!(matches!(
            classify_import("pando:runtime/log@0.2.0", "0.1.0", None),
            Import::Refused(why) if why.contains("one version of the pando:runtime package")
        ));
    }

    #[test]
    fn the_kubernetes_capability_refuses_grants_without_its_section() {
        let none = Grants::default();
        assert!(none.kubernetes.is_none());
        assert!(matches!(
            classify_import("pando:runtime/kubernetes@0.1.0", "0.1.0", Some(&none)),
            Import::Refused(why) if why.contains("no `kubernetes` section")
        ));
        assert_eq!(
            classify_import("pando:runtime/log@0.1.0", "0.1.0", Some(&none)),
            Import::Lent("log")
        );
    }
}
