//! The compilation cache: precompiled components on disk, keyed by the
//! component's digest and the engine's settings, written and read only by
//! the host.
//!
//! Deserializing precompiled code is unsafe for bytes the host did not write
//! (they are machine code), so the cache refuses a directory that others can
//! write to, and writes each artifact atomically with owner-only permissions.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Where precompiled components are kept.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: PathBuf,
}

/// How a component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheOutcome {
    /// Loaded from the cache.
    Hit,
    /// Compiled, and written to the cache.
    Compiled,
    /// Compiled; there is no cache (or it could not be used).
    Uncached,
    /// Neither compiled nor read: an adapter loaded from the same bytes in
    /// this host is alive, and its code is shared (`runtime/code.rs`).
    Shared,
}

impl CompileCache {
    /// A cache in `dir`, created (owner-only) if missing.
    pub fn new(dir: impl Into<PathBuf>) -> std::io::Result<Self> {
        let dir = dir.into();
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder.create(&dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            let meta = fs::metadata(&dir)?;
            // We only ever load machine code from a directory that nobody
            // but us can write: first ours, then closed to others.
            let uid = current_uid();
            if uid != u32::MAX && meta.uid() != uid {
                return Err(std::io::Error::other(format!(
                    "compile cache {} is owned by uid {}, not by this user ({uid}); \
                     choose a cache directory of your own (--cache-dir)",
                    dir.display(),
                    meta.uid()
                )));
            }
            if meta.permissions().mode() & 0o022 != 0 {
                fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))?;
            }
        }
        Ok(CompileCache { dir })
    }

    /// The default location: `$PANDO_HOST_CACHE`, else
    /// `$XDG_CACHE_HOME/pando-host`, else `~/.cache/pando-host`.
    pub fn default_dir() -> Option<PathBuf> {
        if let Some(d) = std::env::var_os("PANDO_HOST_CACHE") {
            return Some(PathBuf::from(d));
        }
        if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
            return Some(PathBuf::from(d).join("pando-host"));
        }
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("pando-host"))
    }

    /// The cache's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_for(&self, engine: &Engine, digest: &str) -> PathBuf {
        // SHA-256 rather than DefaultHasher, whose output may change between
        // Rust releases and would then miss every cached artifact.
        let mut h = ShaHasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut h);
        // wasmtime's version and the engine's settings are in the
        // compatibility hash; the host's version keeps artifacts of
        // different host releases apart for clean-up.
        env!("CARGO_PKG_VERSION").hash(&mut h);
        self.dir.join(format!("{digest}-{:016x}.cwasm", h.finish()))
    }

    /// The component for these bytes: from the cache when present, else
    /// compiled and stored; `before_compile` is called when it compiles.
    pub(crate) fn load(
        &self,
        engine: &Engine,
        digest: &str,
        bytes: &[u8],
        before_compile: impl FnOnce(),
    ) -> wasmtime::Result<(Component, CacheOutcome)> {
        let path = self.path_for(engine, digest);
        if path.is_file() {
            // SAFETY: the file is in a directory only this user can write,
            // named by the digest of the component and the engine's
            // compatibility hash, and was written by `store` below from
            // `Engine::precompile_component`. wasmtime checks the header and
            // engine compatibility again on load.
            match unsafe { Component::deserialize_file(engine, &path) } {
                Ok(c) => return Ok((c, CacheOutcome::Hit)),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e,
                        "discarding an unusable precompiled component");
                    let _ = fs::remove_file(&path);
                }
            }
        }
        before_compile();
        let compiled = engine.precompile_component(bytes)?;
        let outcome = match self.store(&path, &compiled) {
            Ok(()) => CacheOutcome::Compiled,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e,
                    "could not write the compile cache; continuing without it");
                CacheOutcome::Uncached
            }
        };
        // SAFETY: `compiled` was produced just now by this engine.
        let component = unsafe { Component::deserialize(engine, &compiled)? };
        Ok((component, outcome))
    }

    /// The digest of the component file at `file` when a load of it was
    /// remembered ([`CompileCache::remember_file`]) and the file has not
    /// changed since by its identity: device, inode, size and modification
    /// time to the nanosecond. That is what lets a cached load skip reading
    /// and hashing the file. It is safe because the cache is trusted with
    /// machine code already: the worst a file rewritten in place with its
    /// old size and a restored mtime gets is the code of the file that was
    /// there when it was remembered, under that file's digest. A caller that
    /// pins a digest is never answered from here.
    pub(crate) fn known_file(&self, file: &Path) -> Option<String> {
        let digest = fs::read_to_string(self.file_key(file)?).ok()?;
        let digest = digest.trim();
        (digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| digest.to_string())
    }

    /// Remembers that the file at `file`, as it is now, has `digest`.
    pub(crate) fn remember_file(&self, file: &Path, digest: &str) {
        let Some(key) = self.file_key(file) else {
            return;
        };
        let stored = key
            .parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| self.store(&key, digest.as_bytes()));
        if let Err(e) = stored {
            tracing::debug!(file = %file.display(), error = %e, "could not remember the file's digest");
        }
    }

    /// The component for `digest` if its precompiled artifact is cached.
    pub(crate) fn load_known(&self, engine: &Engine, digest: &str) -> Option<Component> {
        let path = self.path_for(engine, digest);
        // SAFETY: as in `load`: written by this host, in a directory only
        // this user can write, named by digest and engine compatibility.
        unsafe { Component::deserialize_file(engine, &path) }.ok()
    }

    /// Where a file's remembered digest is kept: named by the hash of its
    /// canonical path and identity, so any change of either misses.
    fn file_key(&self, file: &Path) -> Option<PathBuf> {
        let canonical = fs::canonicalize(file).ok()?;
        let meta = fs::metadata(&canonical).ok()?;
        let mut h = Sha256::new();
        h.update(canonical.as_os_str().as_encoded_bytes());
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            for n in [meta.dev(), meta.ino(), meta.size()] {
                h.update(n.to_le_bytes());
            }
            h.update(meta.mtime().to_le_bytes());
            h.update(meta.mtime_nsec().to_le_bytes());
        }
        #[cfg(not(unix))]
        {
            h.update(meta.len().to_le_bytes());
            let mtime = meta
                .modified()
                .ok()?
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?;
            h.update(mtime.as_nanos().to_le_bytes());
        }
        Some(self.dir.join("files").join(hex::encode(h.finalize())))
    }

    fn store(&self, path: &Path, compiled: &[u8]) -> std::io::Result<()> {
        let (tmp, mut file) = tempfile_in(&self.dir)?;
        let written = file
            .write_all(compiled)
            .and_then(|()| file.sync_all())
            .and_then(|()| fs::rename(&tmp, path));
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written
    }
}

/// A `Hasher` over SHA-256, stable across toolchains.
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        let digest = self.0.clone().finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_be_bytes(first)
    }
}

/// The hex SHA-256 of a component.
pub fn digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn tempfile_in(dir: &Path) -> std::io::Result<(PathBuf, fs::File)> {
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    for attempt in 0..16u32 {
        let name = format!(".tmp-{}-{attempt}-{}", std::process::id(), nanos());
        let path = dir.join(name);
        match opts.open(&path) {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(
        "could not create a temporary file in the cache",
    ))
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

#[cfg(unix)]
fn current_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    // `/proc/self` belongs to the process's effective uid; this avoids a libc
    // dependency for one call. Without procfs the ownership check is
    // skipped (u32::MAX); the permission check still applies.
    fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(u32::MAX)
}
