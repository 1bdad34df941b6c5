//! `pando-host new NAME`: a new adapter crate, written from the repository's
//! template adapter (`examples/template-adapter`, compiled into the binary),
//! ready for a plain `cargo build` and a conformance run: its own toolchain
//! pin, a `.cargo/config.toml` building for `wasm32-wasip2`, the SDK
//! dependency, grants, configuration, a plan and a README with the commands.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::failure::{Failure, Outcome};

mod templates;
pub use templates::Contract;
use templates::{RENAMES, Template};

/// The workspace's toolchain pin, whose channel the new crate gets.
const WORKSPACE_TOOLCHAIN: &str = include_str!("../../rust-toolchain.toml");

/// `new` flags.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The crate's name (lowercase letters, digits, `-` and `_`, starting
    /// with a letter): `my-adapter`.
    pub name: String,
    /// Where to write it (default: `./NAME`); must not exist, or be empty.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The contract it exports: `0.1` (WASI 0.2, `pando-adapter-sdk`) or
    /// `0.2` (WASI 0.3: `async` calls, `stream<u8>`, exec resize, a
    /// workload's `security`; `pando-adapter-sdk-v02`).
    #[arg(long, value_enum, default_value = "0.1", value_name = "VERSION")]
    pub contract: Contract,
}

/// Where the new crate gets its SDK line from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SdkSource {
    /// By path: the SDK line's directory (`guest-sdk/`, `guest-sdk-v02/`)
    /// of the checkout this `pando-host` was built from, which still
    /// exists.
    Path(PathBuf),
    /// By version, from the registry: `pando-host` was built elsewhere.
    Version(String),
}

/// The checkout a `pando-host` runs for, when it is not the one it was built
/// from: `scripts/pando-host` sets it to its own checkout, because the binary
/// it runs may come from its machine-wide cache, built in another clone.
pub const CHECKOUT_ENV: &str = "PANDO_CHECKOUT";

impl SdkSource {
    /// `contract`'s SDK line in the checkout named by [`CHECKOUT_ENV`],
    /// else in the one this binary was built from, when it is there; else
    /// this release's version.
    pub fn find(contract: Contract) -> SdkSource {
        let named = std::env::var_os(CHECKOUT_ENV).map(PathBuf::from);
        let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        Self::find_in(
            contract,
            named.iter().map(PathBuf::as_path).chain([built.as_path()]),
        )
    }

    /// `contract`'s SDK line in the first of `checkouts` that holds it,
    /// else this release's version.
    pub fn find_in<'a>(
        contract: Contract,
        checkouts: impl IntoIterator<Item = &'a Path>,
    ) -> SdkSource {
        let template = contract.template();
        let name = format!("name = \"{}\"", template.sdk_package);
        for checkout in checkouts {
            let sdk = checkout.join(template.sdk_dir);
            let is_sdk =
                std::fs::read_to_string(sdk.join("Cargo.toml")).is_ok_and(|t| t.contains(&name));
            if let (true, Ok(path)) = (is_sdk, sdk.canonicalize()) {
                return SdkSource::Path(path);
            }
        }
        SdkSource::Version(env!("CARGO_PKG_VERSION").to_string())
    }

    /// The dependency line of `Cargo.toml`. The 0.2 line goes by the 0.1
    /// line's name (`package = …`), so the template's code reads the same.
    fn dependency(&self, template: &Template) -> String {
        let package = match template.sdk_package {
            "pando-adapter-sdk" => String::new(),
            other => format!("package = \"{other}\", "),
        };
        match self {
            SdkSource::Path(p) => format!(
                "# By path: the SDK of the Pando checkout `pando-host new` ran from.\n\
                 pando-adapter-sdk = {{ {package}path = {} }}\n",
                toml_string(&p.to_string_lossy())
            ),
            SdkSource::Version(v) => format!(
                "# By version, from your registry. Without one that has it, point at a checkout\n\
                 # of Pando: pando-adapter-sdk = {{ {package}path = \"/path/to/pando/{}\" }}\n\
                 pando-adapter-sdk = {{ {package}version = \"{v}\" }}\n",
                template.sdk_dir
            ),
        }
    }
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Words Rust reserves, which cargo refuses as crate names; and the
/// crates every build links.
const RESERVED: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "const",
    "continue",
    "crate",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "fn",
    "for",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "match",
    "mod",
    "move",
    "mut",
    "pub",
    "ref",
    "return",
    "self",
    "Self",
    "static",
    "struct",
    "super",
    "trait",
    "true",
    "type",
    "unsafe",
    "use",
    "where",
    "while",
    "abstract",
    "become",
    "box",
    "do",
    "final",
    "macro",
    "override",
    "priv",
    "try",
    "typeof",
    "unsized",
    "virtual",
    "yield",
    "gen",
    "std",
    "core",
    "alloc",
    "proc_macro",
    "test",
];

/// Whether `name` is a crate name `cargo` takes without a warning; the
/// reason and the fix when not.
pub fn check_name(name: &str) -> Result<(), String> {
    let fix = "use lowercase ASCII letters, digits, `-` and `_`, starting with a letter \
               (`my-adapter`)";
    let first = name.chars().next();
    let why = if name.is_empty() {
        "it is empty".to_string()
    } else if !first.is_some_and(|c| c.is_ascii_lowercase()) {
        "it does not start with a lowercase letter".to_string()
    } else if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '_'))
    {
        format!("it contains `{c}`")
    } else if name.len() > 64 {
        "it is longer than 64 characters".to_string()
    } else if RESERVED.contains(&name.replace('-', "_").as_str()) {
        "Rust reserves it".to_string()
    } else if name.starts_with("pando-adapter-sdk") || name.starts_with("pando_adapter_sdk") {
        "it is the SDK's own name".to_string()
    } else {
        return Ok(());
    };
    Err(format!("`{name}` is not a valid crate name: {why}; {fix}"))
}

/// `my-adapter` → `MyAdapter`, the adapter type's name.
fn type_name(name: &str) -> String {
    name.split(['-', '_'])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// `src/lib.rs` of the new crate.
pub fn lib_rs(name: &str, template: &Template) -> String {
    let ty = type_name(name);
    let mut src = format!(
        "//! `{name}`: a Pando runtime adapter of contract {}, written by `pando-host new`\n\
         //! from Pando's template adapter ({}). Make it yours:\n\
         //! docs/authoring.md walks through every method.\n//!\n",
        template.version, template.path
    );
    let mut body = template.lib.to_string();
    for (from, to) in RENAMES {
        body = body.replace(from, &to.replace("{Type}", &ty).replace("{name}", name));
    }
    src.push_str(&body);
    src
}

/// `rust-toolchain.toml`: the workspace's channel, with the component target.
pub fn toolchain() -> String {
    let channel = WORKSPACE_TOOLCHAIN
        .lines()
        .find_map(|l| l.trim().strip_prefix("channel"))
        .and_then(|rest| rest.split('"').nth(1))
        .unwrap_or("stable");
    format!(
        "# The toolchain Pando is built and tested with.\n\
         [toolchain]\n\
         channel = \"{channel}\"\n\
         targets = [\"wasm32-wasip2\"]\n\
         components = [\"rustfmt\", \"clippy\"]\n\
         profile = \"minimal\"\n"
    )
}

/// `.cargo/config.toml`: builds for `wasm32-wasip2` unless told otherwise.
pub const CARGO_CONFIG: &str = "\
# An adapter is a WebAssembly component: `cargo build` builds for wasm32-wasip2.
# (Linked for the host target instead, the cdylib fails with
# `rust-lld: ; expected, but got :`.) Native unit tests take the host's target:
#   cargo test --target \"$(rustc -vV | sed -n 's/^host: //p')\"
[build]
target = \"wasm32-wasip2\"
";

/// `Cargo.toml` of the new crate.
pub fn cargo_toml(name: &str, sdk: &SdkSource, template: &Template) -> String {
    format!(
        "[package]\n\
         name = \"{name}\"\n\
         version = \"0.1.0\"\n\
         edition = \"2024\"\n\
         publish = false\n\n\
         # A workspace of its own (leave this out if the crate joins yours).\n\
         [workspace]\n\n\
         [lib]\n\
         # A component is a `cdylib` built for `wasm32-wasip2`.\n\
         crate-type = [\"cdylib\"]\n\n\
         [dependencies]\n\
         {}\
         # Use the SDK's `kube::k8s_openapi` re-export rather than k8s-openapi itself.\n\
         serde = {{ version = \"1\", features = [\"derive\"] }}\n\
         serde_json = \"1\"\n\n\
         [profile.release]\n\
         opt-level = \"s\"\n",
        sdk.dependency(template)
    )
}

/// `Cargo.lock`: the template's, the versions Pando is tested with.
pub fn cargo_lock(name: &str, template: &Template) -> String {
    template.lock.replace(
        &format!("name = \"{}\"\n", template.package),
        &format!("name = \"{name}\"\n"),
    )
}

/// The README: what was written and the exact commands.
pub fn readme(name: &str, sdk: &SdkSource, template: &Template) -> String {
    let wasm = format!(
        "target/wasm32-wasip2/release/{}.wasm",
        name.replace('-', "_")
    );
    let (sdk_line, cluster, kubeconfig, image) = match sdk {
        SdkSource::Path(p) => {
            let root = p.parent().unwrap_or(p).display().to_string();
            (
                format!(
                    "`{}` comes **by path** from the Pando checkout this crate \
                     was made from: `{}`. Move the crate freely; keep that checkout, or change \
                     the path in `Cargo.toml`.",
                    template.sdk_package,
                    p.display()
                ),
                format!("{root}/scripts/cluster exec -- "),
                format!("{root}/target/test-cluster/admin.kubeconfig"),
                // The real node runs only the images it holds.
                " \\\n    --image pando.test/busybox:1",
            )
        }
        SdkSource::Version(v) => (
            format!(
                "`{}` comes **by version** (`{v}`) from your registry: \
                 `pando-host` was not run from a Pando checkout. Without a registry that has \
                 it, give its path in `Cargo.toml` (`/path/to/pando/{}`).",
                template.sdk_package, template.sdk_dir
            ),
            String::new(),
            "YOUR.kubeconfig".to_string(),
            "",
        ),
    };
    format!(
        "# {name}\n\n\
         A Pando runtime adapter of contract `pando:runtime@{version}`, written by `pando-host \
         new` from Pando's template adapter ({path}): each \
         app is a namespace `pando-<app>` with one bare pod (and one headless Service) per \
         workload and one PersistentVolumeClaim per volume. Pando's docs/authoring.md explains \
         every method of `src/lib.rs`.\n\n\
         {sdk_line}\n\n\
         | file | what it is |\n|---|---|\n\
         | `src/lib.rs` | the adapter: its methods |\n\
         | `src/objects.rs` | what it makes and reads, as pure functions, with their unit tests |\n\
         | `grants.yaml` | what it may reach in Kubernetes through the host (deny by default) |\n\
         | `config.yaml` | its configuration |\n\
         | `plan.yaml` | an app to apply: one workload serving HTTP |\n\
         | `rust-toolchain.toml` | the Rust toolchain Pando is tested with, with `wasm32-wasip2` |\n\
         | `.cargo/config.toml` | builds for `wasm32-wasip2` by default |\n\
         | `Cargo.lock` | the versions Pando's template is tested with |\n\n\
         ## Build\n\n\
         ```sh\n\
         cargo build --release\n\
         # → {wasm}\n\
         ```\n\n\
         Native unit tests: `cargo test --target \"$(rustc -vV | sed -n 's/^host: //p')\"`.\n\n\
         ## Check it\n\n\
         ```sh\n\
         pando-host inspect {wasm} --grants grants.yaml\n\
         {cluster}pando-host conformance {wasm} \\\n    \
         --grants grants.yaml --config config.yaml --kubeconfig {kubeconfig}{image}\n\
         ```\n\n\
         On Pando's test cluster (`scripts/cluster up` in the checkout) the commands run in its \
         network namespace, as above, with its admin kubeconfig: its `pando.kubeconfig` is the \
         Kubernetes adapter's least-privilege identity, which reaches inside a namespace only \
         through the RoleBinding that adapter makes there, and this one makes none. Against a \
         cluster of your own, leave out the `scripts/cluster exec --` and give your kubeconfig.\n\n\
         `config.yaml` names the test cluster's RuntimeClass `pando-real-node` (`runtime_class`, \
         granted in `grants.yaml` under `objects.pods`): it puts the pods on the cluster's real \
         node, which runs their containers, so the suite proves what the adapter declares by what \
         its workloads did. That node pulls nothing from outside: `--image pando.test/busybox:1` \
         is its own busybox. On another cluster remove `runtime_class` (or name a RuntimeClass \
         of that cluster's, and grant it) and leave out `--image`.\n\n\
         Exit 0: no case failed and every declared capability was proven; 3: a declared \
         capability could not be proven here. The summary counts passes, failures and skips; `--only \
         'C-APPLY-*'` reruns a few cases. A call the grants refuse fails `denied`, naming the \
         rule to add to `grants.yaml`; `--grants-report -` after a verb lists the rules used and \
         never used.\n",
        version = template.version,
        path = template.path,
    )
}

/// Runs `pando-host new`.
pub fn new(args: &NewArgs) -> Outcome {
    check_name(&args.name).map_err(Failure::input)?;
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    if let Ok(mut entries) = std::fs::read_dir(&dir) {
        if entries.next().is_some() {
            return Err(Failure::input(format!(
                "{} exists and is not empty: name another directory with `--dir`, or remove it",
                dir.display()
            )));
        }
    } else if dir.exists() {
        return Err(Failure::input(format!(
            "{} exists and is not a directory: name another with `--dir`",
            dir.display()
        )));
    }
    let template = args.contract.template();
    let sdk = SdkSource::find(args.contract);
    let files: [(&str, String); 11] = [
        ("Cargo.toml", cargo_toml(&args.name, &sdk, template)),
        ("Cargo.lock", cargo_lock(&args.name, template)),
        ("rust-toolchain.toml", toolchain()),
        (".cargo/config.toml", CARGO_CONFIG.to_string()),
        (".gitignore", "/target\n".to_string()),
        ("src/lib.rs", lib_rs(&args.name, template)),
        ("src/objects.rs", template.objects.to_string()),
        ("grants.yaml", template.grants.to_string()),
        ("config.yaml", template.config.to_string()),
        ("plan.yaml", template.plan.to_string()),
        ("README.md", readme(&args.name, &sdk, template)),
    ];
    for (path, text) in &files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Failure::other(&format!("creating {}", parent.display()), e))?;
        }
        std::fs::write(&path, text)
            .map_err(|e| Failure::other(&format!("writing {}", path.display()), e))?;
    }
    let how = match &sdk {
        SdkSource::Path(p) => format!("the SDK by path, {}", p.display()),
        SdkSource::Version(v) => format!("the SDK by version, {v}"),
    };
    println!(
        "created {} in {}, an adapter of pando:runtime@{} ({how})",
        args.name,
        dir.display(),
        template.version
    );
    println!(
        "next: cd {} && cargo build --release; see README.md",
        dir.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cargo_would_refuse_are_refused_naming_the_fix() {
        assert_eq!(check_name("my-adapter"), Ok(()));
        assert_eq!(check_name("a_2"), Ok(()));
        for (bad, why) in [
            ("", "it is empty"),
            ("2fast", "does not start with a lowercase letter"),
            ("My", "does not start with a lowercase letter"),
            ("my adapter", "contains ` `"),
            ("my.adapter", "contains `.`"),
            ("self", "Rust reserves it"),
            ("test", "Rust reserves it"),
        ] {
            let e = check_name(bad).expect_err(bad);
            assert!(
                e.contains(why) && e.contains("(`my-adapter`)"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn every_rename_finds_its_text_in_every_template() {
        for template in templates::all() {
            for (from, _) in RENAMES {
                assert!(
                    template.lib.contains(from),
                    "{}/src/lib.rs no longer contains `{from}`: update RENAMES in \
                     cli/src/new/templates.rs",
                    template.path
                );
            }
            let src = lib_rs("my-adapter", template);
            assert!(!src.contains("Template"), "a `Template` is left");
            assert!(src.contains("export_adapter!(MyAdapter);"));
            assert!(src.contains("kind: \"my-adapter\".into(),"));
            let lock = cargo_lock("my-adapter", template);
            assert!(lock.contains("name = \"my-adapter\""));
            assert!(!lock.contains("template-adapter"), "{}", template.path);
            assert!(lock.contains(&format!("name = \"{}\"", template.sdk_package)));
        }
    }

    #[test]
    fn the_sdk_is_the_first_named_checkouts_that_holds_one() {
        let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let sdk = built
            .join("guest-sdk")
            .canonicalize()
            .expect("this checkout's SDK");
        // A named directory without an SDK (a cached binary run for a clone that
        // was deleted) falls through to the checkout the binary was built from.
        let empty = std::env::temp_dir();
        assert_eq!(
            SdkSource::find_in(Contract::V0_1, [empty.as_path(), built.as_path()]),
            SdkSource::Path(sdk.clone())
        );
        assert_eq!(
            SdkSource::find_in(Contract::V0_1, [built.as_path()]),
            SdkSource::Path(sdk)
        );
        // The 0.2 line is its own directory of the same checkout.
        assert_eq!(
            SdkSource::find_in(Contract::V0_2, [built.as_path()]),
            SdkSource::Path(
                built
                    .join("guest-sdk-v02")
                    .canonicalize()
                    .expect("the 0.2 line")
            )
        );
        // A named checkout that holds one wins over the one it was built from.
        let clone = tempfile::tempdir().expect("a directory");
        std::fs::create_dir(clone.path().join("guest-sdk")).expect("guest-sdk/");
        std::fs::write(
            clone.path().join("guest-sdk/Cargo.toml"),
            "[package]\nname = \"pando-adapter-sdk\"\n",
        )
        .expect("its Cargo.toml");
        let theirs = clone.path().join("guest-sdk").canonicalize().expect("it");
        assert_eq!(
            SdkSource::find_in(Contract::V0_1, [clone.path(), built.as_path()]),
            SdkSource::Path(theirs)
        );
        assert_eq!(
            SdkSource::find_in(Contract::V0_1, [empty.as_path()]),
            SdkSource::Version(env!("CARGO_PKG_VERSION").to_string())
        );
    }

    #[test]
    fn the_toolchain_is_the_workspace_pin() {
        let channel = WORKSPACE_TOOLCHAIN
            .lines()
            .find(|l| l.starts_with("channel"))
            .expect("the workspace pins a channel");
        assert!(toolchain().contains(channel), "{}", toolchain());
        assert!(toolchain().contains("\"wasm32-wasip2\""));
    }

    #[test]
    fn the_dependencies_are_the_templates() {
        let manifests = [
            include_str!("../../examples/template-adapter/Cargo.toml"),
            include_str!("../../examples/template-adapter-v02/Cargo.toml"),
        ];
        for (manifest, template) in manifests.iter().zip(templates::all()) {
            let mine = cargo_toml("x", &SdkSource::Version("0.1.0".into()), template);
            assert_eq!(deps(manifest), deps(&mine), "{mine}");
            assert!(mine.contains(&format!(
                "pando-adapter-sdk = {{ {}version = \"0.1.0\" }}",
                match template.sdk_package {
                    "pando-adapter-sdk" => String::new(),
                    other => format!("package = \"{other}\", "),
                }
            )));
        }
        let template = templates::all()[0];
        let by_path = cargo_toml("x", &SdkSource::Path("/p/guest-sdk".into()), template);
        assert!(by_path.contains("pando-adapter-sdk = { path = \"/p/guest-sdk\" }"));
        assert!(
            readme("x", &SdkSource::Version("0.1.0".into()), template).contains("**by version**")
        );
        assert!(
            readme("x", &SdkSource::Path("/p/guest-sdk".into()), template)
                .contains("/p/scripts/cluster exec -- pando-host conformance")
        );
    }

    /// The dependency names of a manifest's `[dependencies]`.
    fn deps(manifest: &str) -> Vec<String> {
        manifest
            .split("[dependencies]")
            .nth(1)
            .and_then(|s| s.split("\n[").next())
            .map(|s| {
                s.lines()
                    .filter(|l| !l.starts_with('#') && l.contains('='))
                    .map(|l| l.split('=').next().unwrap_or_default().trim().to_string())
                    .collect()
            })
            .unwrap_or_default()
    }
}
