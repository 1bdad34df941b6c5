//! The compile cache: a component is compiled once; a fresh process loads it
//! from the cache.

use pando_host::{CacheOutcome, Host, LoadOptions};
use pando_tests::components;

const CHILD_ENV: &str = "PANDO_TEST_CACHE_DIR";

async fn load_with_cache(dir: &std::path::Path) -> CacheOutcome {
    let host = Host::builder().cache_dir(dir).build().expect("host builds");
    let adapter = host
        .load_file(&components::test_adapter(), LoadOptions::default())
        .await
        .expect("test adapter loads");
    adapter.cache_outcome()
}

#[tokio::test]
async fn first_load_compiles_and_second_hits() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(load_with_cache(dir.path()).await, CacheOutcome::Compiled);
    assert_eq!(load_with_cache(dir.path()).await, CacheOutcome::Hit);
}

#[tokio::test]
async fn a_fresh_process_loads_from_the_cache() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(load_with_cache(dir.path()).await, CacheOutcome::Compiled);
    // Run the child test below in a new process of this test binary.
    let exe = std::env::current_exe().expect("current exe");
    // The test's name within its binary: this module's path, less the
    // binary's own name.
    let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
    let child = format!("{module}::child_loads_from_cache");
    let out = std::process::Command::new(exe)
        .args(["--exact", &child, "--ignored", "--nocapture"])
        .env(CHILD_ENV, dir.path())
        .output()
        .expect("child runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
#[ignore = "run in a fresh process by a_fresh_process_loads_from_the_cache"]
async fn child_loads_from_cache() {
    let dir = std::env::var_os(CHILD_ENV).expect("run by a_fresh_process_loads_from_the_cache");
    assert_eq!(load_with_cache(dir.as_ref()).await, CacheOutcome::Hit);
}

#[tokio::test]
async fn a_corrupt_cache_entry_is_recompiled() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(load_with_cache(dir.path()).await, CacheOutcome::Compiled);
    for entry in std::fs::read_dir(dir.path()).expect("read cache") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "cwasm") {
            std::fs::write(&path, b"garbage").expect("corrupt the entry");
        }
    }
    assert_eq!(load_with_cache(dir.path()).await, CacheOutcome::Compiled);
    assert_eq!(load_with_cache(dir.path()).await, CacheOutcome::Hit);
}
