//! The Kubernetes adapter's volume snapshots and restores, against the test
//! cluster as the `pando` identity: a helper pod with the claim mounted
//! runs `tar`, its stream crosses the host.
//!
//! KWOK has no container runtime: it runs exec'd commands on this machine,
//! with `PANDO_HELPER_ROOT` standing in for the helper container's
//! filesystem (`scripts/cluster`), so a claim mounted at
//! `/pando-volumes/<ns>/<claim>` in the pod is the directory
//! `target/test-cluster/helper-root/pando-volumes/<ns>/<claim>` here. The
//! scripts that run are the adapter's own.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use pando_host::CallError;
use pando_host::types::{Error as AdapterError, VolumeHandle};
use pando_tests::cluster;
use pando_tests::files::tree;
use pando_tests::kubernetes_adapter::{self as ka, admin, cleanup, ctx, id, with_volume};
use pando_tests::plans::{bundle, plan};
use tokio::io::{AsyncRead, ReadBuf};

/// The directory that is the claim's contents on the test cluster.
fn volume_dir(ns: &str, claim: &str) -> PathBuf {
    cluster::state_dir()
        .join("helper-root/pando-volumes")
        .join(ns)
        .join(claim)
}

fn fill(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("sub/deeper")).expect("mkdir");
    std::fs::create_dir_all(dir.join("empty")).expect("mkdir");
    std::fs::write(dir.join("a.txt"), b"hello, volume\n").expect("write");
    // 3 MiB of bytes that are not all alike: many splice chunks.
    let big: Vec<u8> = (0u32..3 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(dir.join("sub/big.bin"), big).expect("write");
    std::fs::write(dir.join("sub/deeper/.hidden"), b"").expect("write");
}

/// A reader that yields `bytes` and then fails: a caller's stream breaking.
struct Breaking {
    bytes: Vec<u8>,
    at: usize,
}

impl AsyncRead for Breaking {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.at >= self.bytes.len() {
            return Poll::Ready(Err(std::io::Error::other("the source broke")));
        }
        let n = buf
            .remaining()
            .min(self.bytes.len() - self.at)
            .min(64 * 1024);
        let at = self.at;
        buf.put_slice(&self.bytes[at..at + n]);
        self.at += n;
        Poll::Ready(Ok(()))
    }
}

async fn snapshot(a: &pando_host::Adapter, h: &VolumeHandle, file: &Path) -> Vec<u8> {
    let out = tokio::fs::File::create(file)
        .await
        .expect("the snapshot file");
    let written = a
        .snapshot_volume(&ctx(), h, out)
        .await
        .expect("snapshot_volume");
    let bytes = std::fs::read(file).expect("reading the snapshot");
    assert_eq!(written, bytes.len() as u64);
    bytes
}

#[tokio::test]
async fn a_volume_snapshot_restores_byte_for_byte_and_a_bad_stream_loses_nothing() {
    let (a, _h) = ka::load().await;
    let app = id("k8s-snap");
    let ns = format!("pando-{app}");
    let pv = ka::bound_pv(&ns, "data").await;
    let p = with_volume(plan(&app, &["web"]), "data");
    a.apply(&ctx(), &p).await.expect("apply");
    ka::wait_volume_ready(&a, &app, "data").await;
    ka::wait_phase(&ns, "web", "Running").await;
    let dir = volume_dir(&ns, "data");
    fill(&dir);
    let original = tree(&dir);
    let h = VolumeHandle {
        bundle: app.clone(),
        name: "data".into(),
        // the claim is found by the app and the name, never by this.
        location: "somewhere/else".into(),
    };

    // Snapshot: a tar stream of exactly the volume's contents.
    let work = tempfile::tempdir().expect("a temp dir");
    let tar = snapshot(&a, &h, &work.path().join("snap.tar")).await;
    let unpacked = work.path().join("unpacked");
    std::fs::create_dir_all(&unpacked).expect("mkdir");
    let status = std::process::Command::new("tar")
        .arg("-xf")
        .arg(work.path().join("snap.tar"))
        .arg("-C")
        .arg(&unpacked)
        .status()
        .expect("running tar");
    assert!(status.success(), "the snapshot is a tar archive");
    assert_eq!(tree(&unpacked), original, "the snapshot holds the volume");
    let pods: Api<Pod> = Api::namespaced(admin().await, &ns);
    let helper = pods.get_opt("pando-snapshot-data").await.expect("get");
    assert!(
        helper.is_none_or(|p| p.metadata.deletion_timestamp.is_some()),
        "the helper pod goes at the end"
    );

    // A workload mounting the claim runs: restoring under it is refused.
    let refused = a
        .restore_volume(&ctx(), &h, std::io::Cursor::new(tar.clone()))
        .await;
    assert!(
        matches!(&refused, Err(CallError::Adapter(AdapterError::Conflict(m))) if m.contains("stop the app")),
        "{refused:?}"
    );
    a.stop(&ctx(), &bundle(&app)).await.expect("stop");

    // Right after stop, its pod may still be ending: restore waits for it (the contract in
    // wit/adapter.wit), so the next call is never an "in use" refusal, however fast it comes.
    // Change the volume, then restore: exactly the snapshot's contents.
    std::fs::remove_file(dir.join("a.txt")).expect("rm");
    std::fs::write(dir.join("new.txt"), b"written after the snapshot").expect("write");
    a.restore_volume(&ctx(), &h, std::io::Cursor::new(tar.clone()))
        .await
        .expect("restore_volume");
    assert_eq!(tree(&dir), original, "restored byte for byte");

    // Garbage is refused, and the volume is as it was.
    let garbage = a
        .restore_volume(&ctx(), &h, &b"this is not a tar archive"[..])
        .await;
    assert!(
        matches!(&garbage, Err(CallError::Adapter(AdapterError::Invalid(m))) if m.contains("unchanged")),
        "{garbage:?}"
    );
    assert_eq!(tree(&dir), original, "a bad archive changes nothing");

    // A stream that breaks half-way ends in an error, and changes nothing.
    let half = tar[..tar.len() / 2].to_vec();
    let broken = a
        .restore_volume(&ctx(), &h, Breaking { bytes: half, at: 0 })
        .await;
    assert!(broken.is_err(), "a broken stream is an error: {broken:?}");
    assert_eq!(tree(&dir), original, "a broken stream changes nothing");

    // A volume that does not exist.
    let missing = VolumeHandle {
        name: "nope".into(),
        ..h.clone()
    };
    let r = a.snapshot_volume(&ctx(), &missing, tokio::io::sink()).await;
    assert!(
        matches!(&r, Err(CallError::Adapter(AdapterError::NotFound(m))) if m.contains("nope")),
        "{r:?}"
    );

    remove_app(&a, &app, &pv).await;
}

/// Removes app `app`, its PersistentVolume `pv` and the directories that stood in for its
/// volumes.
async fn remove_app(a: &pando_host::Adapter, app: &str, pv: &str) {
    cleanup(a, app).await;
    ka::delete_pv(pv).await;
    let _ = std::fs::remove_dir_all(
        cluster::state_dir()
            .join("helper-root/pando-volumes")
            .join(format!("pando-{app}")),
    );
}

/// One cut: what it is, the state it leaves on the volume, and the contents a recovery must
/// find whole.
type Cut = (
    &'static str,
    fn(&Path),
    &'static [(&'static str, &'static str)],
);

/// Writes `files` (path, contents) under `dir`, making directories as needed.
fn put(dir: &Path, files: &[(&str, &str)]) {
    for (path, contents) in files {
        let file = dir.join(path);
        std::fs::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
        std::fs::write(file, contents).expect("write");
    }
}

#[tokio::test]
async fn a_restore_swap_cut_anywhere_leaves_the_old_contents_or_the_new_whole() {
    let (a, _h) = ka::load().await;
    let app = id("k8s-cut");
    let ns = format!("pando-{app}");
    let pv = ka::bound_pv(&ns, "data").await;
    a.apply(&ctx(), &with_volume(plan(&app, &["web"]), "data"))
        .await
        .expect("apply");
    ka::wait_volume_ready(&a, &app, "data").await;
    a.stop(&ctx(), &bundle(&app)).await.expect("stop");
    let dir = volume_dir(&ns, "data");
    let h = VolumeHandle {
        bundle: app.clone(),
        name: "data".into(),
        location: String::new(),
    };
    const OLD: &[(&str, &str)] = &[("a.txt", "old a"), ("sub/b.txt", "old b")];
    const NEW: &[(&str, &str)] = &[("n.txt", "new n"), ("newdir/m.txt", "new m")];
    let whole = |files: &[(&str, &str)]| {
        let scratch = tempfile::tempdir().expect("a temp dir");
        put(scratch.path(), files);
        tree(scratch.path())
    };
    // Each state a swap (or its undo) cut at that point leaves; then the next restore (here
    // one whose stream is not an archive, so only its recovery and clean-up change anything).
    let cuts: [Cut; 3] = [
        (
            "after the new were all in and the staging directory gone, removing the old",
            |v| {
                put(v, &[("n.txt", "new n"), ("newdir/m.txt", "new m")]);
                put(&v.join(".pando-old"), &[("sub/b.txt", "old b")]);
            },
            NEW,
        ),
        (
            "half-way through moving the new in",
            |v| {
                put(v, &[("n.txt", "new n")]);
                put(&v.join(".pando-restore"), &[("newdir/m.txt", "new m")]);
                put(
                    &v.join(".pando-old"),
                    &[("a.txt", "old a"), ("sub/b.txt", "old b")],
                );
            },
            OLD,
        ),
        (
            "half-way through moving the old back (an earlier recovery cut)",
            |v| {
                put(v, &[("a.txt", "old a")]);
                put(&v.join(".pando-undo"), &[("sub/b.txt", "old b")]);
                put(&v.join(".pando-restore"), &[("newdir/m.txt", "new m")]);
            },
            OLD,
        ),
    ];
    for (cut, leave, want) in cuts {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        leave(&dir);
        let r = a.restore_volume(&ctx(), &h, &b"not an archive"[..]).await;
        assert!(
            matches!(&r, Err(CallError::Adapter(AdapterError::Invalid(_)))),
            "{cut}: {r:?}"
        );
        assert_eq!(
            tree(&dir),
            whole(want),
            "cut {cut}: the volume holds one whole set of contents"
        );
    }
    remove_app(&a, &app, &pv).await;
}
