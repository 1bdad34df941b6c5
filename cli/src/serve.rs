//! `serve`: loaded adapters served to a Go program on go-plugin's protocol
//! (docs/go.md). One adapter from the global flags, as every verb loads
//! it, or several from `--adapters FILE`, each under its own name, all in
//! one host (one engine, one compile cache), so that a Go core driving
//! several clusters or runtimes pays for one process.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::args::Global;
use crate::failure::{Failure, Outcome};
use crate::input;
use crate::session::{self, Source};

/// One adapter of an `--adapters` file. Relative paths are the file's
/// directory's.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    component: PathBuf,
    digest: Option<String>,
    grants: Option<PathBuf>,
    config: Option<PathBuf>,
    limits: Option<PathBuf>,
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
}

/// The adapters to serve: the global flags' one, or the `--adapters`
/// file's, by name. A name is what a call's `pando-adapter` header says.
pub fn sources(global: &Global, file: Option<&Path>) -> Outcome<BTreeMap<String, Source>> {
    let Some(file) = file else {
        // Named by its kind once loaded: an empty name stands for it.
        return Ok(BTreeMap::from([(String::new(), Source::of(global)?)]));
    };
    if global.adapter.is_some() {
        return Err(Failure::input(format!(
            "both --adapter and --adapters {} given: name the adapter in one place (a single \
             adapter in the file, or the flags without the file)",
            file.display()
        )));
    }
    let entries: BTreeMap<String, Entry> = input::read_document(file)?;
    if entries.is_empty() {
        return Err(Failure::input(format!(
            "{}: no adapters in it: give each as `NAME: {{component: FILE, …}}`",
            file.display()
        )));
    }
    let base = file.parent().unwrap_or(Path::new("."));
    let at = |p: PathBuf| if p.is_absolute() { p } else { base.join(p) };
    entries
        .into_iter()
        .map(|(name, e)| {
            check_name(file, &name)?;
            let source = Source {
                component: at(e.component),
                digest: e.digest,
                grants: e.grants.map(at),
                config: e.config.map(at),
                limits: e.limits.map(at),
                kubeconfig: e.kubeconfig.map(at),
                context: e.context,
            };
            Ok((name, source))
        })
        .collect()
}

/// A name goes into a gRPC header: printable ASCII, no spaces.
fn check_name(file: &Path, name: &str) -> Outcome<()> {
    let ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(Failure::input(format!(
            "{}: adapter name `{name}`: use letters, digits, `-`, `_` and `.` (it is sent as the \
             `pando-adapter` header)",
            file.display()
        )))
    }
}

/// Loads every source into one host, in name order; the first that fails
/// ends the verb with its words, naming it when there are several.
pub async fn load(
    global: &Global,
    sources: BTreeMap<String, Source>,
) -> Outcome<BTreeMap<String, pando_host::Adapter>> {
    let host = session::host(global)?;
    let several = sources.len() > 1;
    let mut loaded = BTreeMap::new();
    for (name, source) in sources {
        let adapter = match session::load_source(&host, &source).await {
            Ok(a) => a,
            Err(Failure::Input(e)) if several => {
                return Err(Failure::Input(e.context(format!("adapter `{name}`"))));
            }
            Err(e) => {
                if several {
                    // The load error's own words follow on the next line.
                    eprintln!("pando-host serve: adapter `{name}` failed to load");
                }
                return Err(e);
            }
        };
        let name = if name.is_empty() {
            adapter.kind_info().kind.clone()
        } else {
            name
        };
        loaded.insert(name, adapter);
    }
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    fn global(args: &[&str]) -> Global {
        let mut argv = vec!["pando-host"];
        argv.extend_from_slice(args);
        argv.push("serve");
        crate::args::Cli::parse_from(argv).global
    }

    fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("adapters.yaml");
        std::fs::write(&path, text).expect("write");
        (dir, path)
    }

    #[test]
    fn a_file_names_each_adapter_and_resolves_its_paths_beside_it() {
        let (dir, path) = file(
            "kube-a:\n  component: a.wasm\n  grants: g.yaml\n  kubeconfig: /abs/kc\n  \
             context: east\nprobe:\n  component: sub/p.wasm\n",
        );
        let s = sources(&global(&[]), Some(&path)).expect("parsed");
        assert_eq!(s.keys().collect::<Vec<_>>(), ["kube-a", "probe"]);
        let a = &s["kube-a"];
        assert_eq!(a.component, dir.path().join("a.wasm"));
        assert_eq!(a.grants, Some(dir.path().join("g.yaml")));
        assert_eq!(a.kubeconfig, Some(PathBuf::from("/abs/kc")));
        assert_eq!(a.context.as_deref(), Some("east"));
        assert_eq!(s["probe"].component, dir.path().join("sub/p.wasm"));
    }

    #[test]
    fn without_a_file_the_flags_name_one_adapter() {
        let s = sources(&global(&["--adapter", "x.wasm"]), None).expect("one");
        assert_eq!(s.len(), 1);
        assert_eq!(s[""].component, PathBuf::from("x.wasm"));
    }

    #[test]
    fn bad_files_are_refused_saying_what_to_change() {
        let refused = |text: &str, flags: &[&str]| {
            let (_dir, path) = file(text);
            match sources(&global(flags), Some(&path)) {
                Err(Failure::Input(m)) => format!("{m:#}"),
                other => panic!("expected an input error, got {other:?}"),
            }
        };
        let m = refused("a:\n  component: a.wasm\n", &["--adapter", "x.wasm"]);
        assert!(m.contains("both --adapter and --adapters"), "{m}");
        let m = refused("{}\n", &[]);
        assert!(m.contains("no adapters"), "{m}");
        let m = refused("a:\n  component: a.wasm\n  grant: g.yaml\n", &[]);
        assert!(m.contains("grant"), "{m}");
        let m = refused("a b:\n  component: a.wasm\n", &[]);
        assert!(m.contains("adapter name `a b`"), "{m}");
        let m = refused("a:\n  grants: g.yaml\n", &[]);
        assert!(m.contains("component"), "{m}");
    }
}
