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

/// A copy of the test adapter in `dir`, to change under the cache.
fn copy_of_test_adapter(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("adapter.wasm");
    std::fs::copy(components::test_adapter(), &path).expect("copy the test adapter");
    path
}

async fn load_from(
    cache: &std::path::Path,
    file: &std::path::Path,
    options: LoadOptions,
) -> Result<pando_host::Adapter, pando_host::LoadError> {
    let host = Host::builder()
        .cache_dir(cache)
        .build()
        .expect("host builds");
    host.load_file(file, options).await
}

#[tokio::test]
async fn a_file_seen_unchanged_is_neither_read_nor_hashed_again() {
    let (cache, files) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    let file = copy_of_test_adapter(files.path());
    let first = load_from(cache.path(), &file, LoadOptions::default())
        .await
        .expect("loads");
    assert_eq!(first.cache_outcome(), CacheOutcome::Compiled);
    let digest = first.digest().to_string();

    // Garbage of the same size written over it, its mtime put back: by its
    // identity the file is unchanged, so a load that read or hashed it
    // would fail, and one from the cache loads what was remembered.
    let mtime = std::fs::metadata(&file)
        .and_then(|m| m.modified())
        .expect("mtime");
    let size = std::fs::metadata(&file).expect("meta").len() as usize;
    std::fs::write(&file, vec![0u8; size]).expect("overwrite");
    std::fs::File::options()
        .write(true)
        .open(&file)
        .and_then(|f| f.set_modified(mtime))
        .expect("restore the mtime");
    let again = load_from(cache.path(), &file, LoadOptions::default())
        .await
        .expect("loaded from the cache without reading the file");
    assert_eq!(again.cache_outcome(), CacheOutcome::Hit);
    assert_eq!(
        again.digest(),
        digest,
        "under the digest it was remembered by"
    );

    // Any change of its identity (here the mtime) and the file is read.
    std::fs::File::options()
        .write(true)
        .open(&file)
        .and_then(|f| f.set_modified(mtime + std::time::Duration::from_secs(1)))
        .expect("touch");
    let err = load_from(cache.path(), &file, LoadOptions::default())
        .await
        .expect_err("the garbage is read now, and refused");
    assert!(
        matches!(err, pando_host::LoadError::NotWasm { .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_pinned_digest_is_checked_against_the_bytes_even_when_the_file_is_known() {
    let (cache, files) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    let file = copy_of_test_adapter(files.path());
    let first = load_from(cache.path(), &file, LoadOptions::default())
        .await
        .expect("loads");
    let digest = first.digest().to_string();
    let pinned = LoadOptions {
        expected_digest: Some(format!("sha256:{digest}")),
        ..LoadOptions::default()
    };
    let ok = load_from(cache.path(), &file, pinned)
        .await
        .expect("the pinned digest matches");
    assert_eq!(ok.digest(), digest);
    let wrong = LoadOptions {
        expected_digest: Some("0".repeat(64)),
        ..LoadOptions::default()
    };
    let err = load_from(cache.path(), &file, wrong)
        .await
        .expect_err("a pinned digest that differs is refused");
    assert!(
        matches!(err, pando_host::LoadError::DigestMismatch { .. }),
        "{err:?}"
    );
}

/// The test adapter loaded in `host` from `file` under `name`, with its
/// own configuration.
async fn load_named(
    host: &Host,
    file: &std::path::Path,
    name: &str,
    config: &str,
) -> pando_host::Adapter {
    let options = LoadOptions {
        name: Some(name.into()),
        config: config.into(),
        ..LoadOptions::default()
    };
    host.load_file(file, options)
        .await
        .unwrap_or_else(|e| panic!("{name} loads: {e}"))
}

#[tokio::test]
async fn loads_of_the_same_bytes_in_one_host_share_code_while_one_is_alive() {
    let (cache, files) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    let file = copy_of_test_adapter(files.path());
    let host = Host::builder()
        .cache_dir(cache.path())
        .build()
        .expect("host builds");
    let cx = pando_host::CallContext::default().with_timeout(std::time::Duration::from_secs(20));

    let plain = load_named(&host, &file, "plain", "{}").await;
    assert_eq!(plain.cache_outcome(), CacheOutcome::Compiled);
    let claiming = load_named(
        &host,
        &file,
        "claiming",
        r#"{"misbehave":"claim-image-import"}"#,
    )
    .await;
    assert_eq!(
        claiming.cache_outcome(),
        CacheOutcome::Shared,
        "a second load of the same bytes takes the live code"
    );
    // The same bytes by another way in (`load_bytes`) share it too.
    let bytes = std::fs::read(&file).expect("read the copy");
    let third = host
        .load_bytes("third", &bytes, LoadOptions::default())
        .await
        .expect("loads from bytes");
    assert_eq!(third.cache_outcome(), CacheOutcome::Shared);

    // Shared code, separate adapters: each answers with its own
    // configuration.
    let caps = |a: &pando_host::Adapter| {
        let (a, cx) = (a.clone(), cx.clone());
        async move { a.capabilities(&cx).await.expect("capabilities") }
    };
    assert!(!caps(&plain).await.image_import);
    assert!(caps(&claiming).await.image_import);
    assert!(!caps(&third).await.image_import);

    // A pinned digest is still checked when live code has that digest.
    let pinned = host
        .load_bytes(
            "pinned",
            &bytes,
            LoadOptions {
                expected_digest: Some(format!("sha256:{}", "0".repeat(64))),
                ..LoadOptions::default()
            },
        )
        .await;
    assert!(
        matches!(pinned, Err(pando_host::LoadError::DigestMismatch { .. })),
        "a wrong pin is refused even with the code loaded: {:?}",
        pinned.map(|a| a.name().to_string())
    );

    // Once no adapter uses the code it is gone: the next load reads the
    // compile cache again.
    drop((plain, claiming, third));
    let again = load_named(&host, &file, "again", "{}").await;
    assert_eq!(again.cache_outcome(), CacheOutcome::Hit);
}
