//! The engine's security floor: the oldest wasmtime and wasmtime-wasi this
//! project accepts, as recorded in docs/security.md ("The engine"). A test
//! reads both lock files (the workspace's and the fuzz crate's) and fails when
//! either holds an older version, so a `cargo update` or a merge that moves
//! the engine back past a fixed advisory is caught before it lands.

/// The crate names and the oldest versions recorded as patched.
///
/// wasmtime 50.0.2 has the fixes of 49.0.1–50.0.1 and the 50.0.2 patch;
/// wasmtime-wasi's newest release the registry serves is 50.0.1, which
/// builds on wasmtime `^50.0.1`. Raise a floor when docs/security.md records
/// a newer patched release in use; never lower one.
const PATCHED: &[(&str, &str)] = &[
    ("wasmtime", "50.0.2"),
    ("wasmtime-wasi", "50.0.1"),
    ("wasmtime-wasi-io", "50.0.1"),
];

mod tests {
    use super::PATCHED;
    use std::path::Path;

    /// Every `[[package]]` of a lock file with that name, as (name, version).
    fn locked<'a>(lock: &'a str, name: &str) -> Vec<&'a str> {
        let mut found = Vec::new();
        let mut lines = lock.lines();
        while let Some(line) = lines.next() {
            if line.trim() == format!("name = \"{name}\"")
                && let Some(version) = lines
                    .next()
                    .and_then(|v| v.trim().strip_prefix("version = \""))
                    .and_then(|v| v.strip_suffix('"'))
            {
                found.push(version);
            }
        }
        found
    }

    fn check(lock_path: &Path) {
        let lock = std::fs::read_to_string(lock_path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", lock_path.display()));
        for (name, floor) in PATCHED {
            let floor = semver::Version::parse(floor).expect("a floor is a version");
            let versions = locked(&lock, name);
            assert!(
                !versions.is_empty(),
                "{} holds no {name}: the floor in host/src/runtime/patched.rs names a crate the host no longer uses; update it with docs/security.md",
                lock_path.display()
            );
            for v in versions {
                let v = semver::Version::parse(v).expect("Cargo.lock holds semver versions");
                assert!(
                    v >= floor,
                    "{} holds {name} {v}, older than {floor}, the oldest recorded as patched \
                     (docs/security.md, \"The engine\"): run `cargo update -p {name}` to {floor} or newer",
                    lock_path.display()
                );
            }
        }
    }

    #[test]
    fn the_workspace_locks_a_patched_engine() {
        check(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock"));
    }

    #[test]
    fn the_fuzz_crate_locks_a_patched_engine() {
        check(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/Cargo.lock"));
    }

    #[test]
    fn an_older_engine_is_found() {
        let lock = "[[package]]\nname = \"wasmtime\"\nversion = \"48.0.8\"\n";
        assert_eq!(locked(lock, "wasmtime"), ["48.0.8"]);
        let v = semver::Version::parse(locked(lock, "wasmtime")[0]).unwrap();
        assert!(v < semver::Version::parse(PATCHED[0].1).unwrap());
    }
}
