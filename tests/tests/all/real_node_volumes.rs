//! on the real node, with real volumes: a claim of StorageClass `pando-local`
//! binds to a PersistentVolume that rancher's local-path-provisioner makes, a directory on the
//! node; the bytes an app writes are the bytes on the node's disk, in the snapshot, and after a
//! restore; the provisioner reclaims the volume once the adapter hands it back. On KWOK a test
//! stands in for the volume with a directory of its own and a PersistentVolume it made itself.

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::Api;
use pando_host::types::{DestroyOptions, VolumeHandle};
use pando_host::{Adapter, CallContext, Host};
use pando_tests::files::{tree, untar};
use pando_tests::kubernetes_adapter::{self as ka, admin, cleanup, ctx, id, with_volume};
use pando_tests::plans::{bundle, plan};
use pando_tests::real_node::{self as node, BUSYBOX};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

/// The adapter on the real node, its claims of the node's StorageClass.
async fn load() -> (Adapter, Host) {
    let mut config: Value = serde_json::from_str(node::ADAPTER_CONFIG).expect("config");
    config["storage_class"] = json!("pando-local");
    node::load_adapter_with(&config.to_string()).await
}

fn volume_plan(app: &str) -> pando_host::types::BundlePlan {
    let mut p = with_volume(plan(app, &["web"]), "data");
    p.workloads[0].image = BUSYBOX.into();
    // Ends on SIGTERM, so that a stop does not wait out the grace period.
    p.workloads[0].command = vec![
        "sh".into(),
        "-c".into(),
        "trap 'exit 0' TERM; sleep 2147483647 & wait".into(),
    ];
    p
}

/// The node directory behind the claim's PersistentVolume, and the PV's name.
async fn volume_on_the_node(ns: &str) -> (String, PathBuf) {
    let admin = admin().await;
    let claim = Api::<PersistentVolumeClaim>::namespaced(admin.clone(), ns)
        .get("data")
        .await
        .expect("the claim");
    let pv_name = claim
        .spec
        .and_then(|s| s.volume_name)
        .expect("the claim is bound to a volume");
    let pv = Api::<PersistentVolume>::all(admin)
        .get(&pv_name)
        .await
        .expect("its PersistentVolume");
    assert_eq!(
        pv.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("pv.kubernetes.io/provisioned-by"))
            .map(String::as_str),
        Some("rancher.io/local-path"),
        "made by the node's provisioner, not by the test"
    );
    let spec = pv.spec.expect("a spec");
    let path = spec
        .host_path
        .map(|h| h.path)
        .or(spec.local.map(|l| l.path))
        .expect("a volume on the node's disk");
    (pv_name, PathBuf::from(path))
}

async fn reclaim_policy(pv: &str) -> Option<String> {
    Api::<PersistentVolume>::all(admin().await)
        .get_opt(pv)
        .await
        .expect("pv")
        .and_then(|p| p.spec)
        .and_then(|s| s.persistent_volume_reclaim_policy)
}

const WRITE: &str = "mkdir -p /data/sub/deeper /data/empty && printf 'hello, volume\\n' > /data/a.txt \
     && head -c 3145728 /dev/urandom > /data/sub/big.bin && : > /data/sub/deeper/.hidden \
     && sync && echo WRITTEN";

#[tokio::test]
async fn r204_r206_a_real_volume_is_snapshotted_restored_and_found_again_then_reclaimed() {
    let admin = admin().await;
    node::require(&admin).await;
    let (a, _h) = load().await;
    let app = id("node-vol");
    let ns = format!("pando-{app}");
    let p = volume_plan(&app);
    a.apply(&ctx(), &p).await.expect("apply");
    ka::wait_volume_ready(&a, &app, "data").await;
    ka::wait_phase(&ns, "web", "Running").await;
    let (pv, dir) = volume_on_the_node(&ns).await;

    // once bound, the volume is retained.
    a.apply(&ctx(), &p).await.expect("apply once bound");
    assert_eq!(
        reclaim_policy(&pv).await.as_deref(),
        Some("Retain"),
        "R-204"
    );

    // What the app writes in its container is what is on the node's disk.
    let out = node::sh(&admin, &ns, "web", WRITE).await;
    assert_eq!(out.trim(), "WRITTEN", "{out}");
    let original = tree(&dir);
    assert_eq!(
        original.get("a.txt"),
        Some(&Some(b"hello, volume\n".to_vec())),
        "the app's bytes are on the node, in {}",
        dir.display()
    );

    // the snapshot, through the helper pod, whose mount is read-only. The caller's end is
    // not read until the helper has been tried: the stream stalls, the helper waits.
    let handle = VolumeHandle {
        bundle: app.clone(),
        name: "data".into(),
        location: format!("{ns}/data"),
    };
    let (mut reader, writer) = tokio::io::duplex(64 * 1024);
    let snap = {
        let a = a.clone();
        let handle = handle.clone();
        tokio::spawn(async move {
            let ctx = CallContext::default().with_timeout(Duration::from_secs(120));
            a.snapshot_volume(&ctx, &handle, writer).await
        })
    };
    let helper = "pando-snapshot-data";
    let pods = Api::<Pod>::namespaced(admin.clone(), &ns);
    let deadline = tokio::time::Instant::now() + node::WAIT;
    while pods
        .get_opt(helper)
        .await
        .expect("pod")
        .and_then(|p| p.status)
        .and_then(|s| s.phase)
        .as_deref()
        != Some("Running")
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no snapshot helper ran"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let tried = node::sh(
        &admin,
        &ns,
        helper,
        &format!("touch /pando-volumes/{ns}/data/x 2>&1 && echo WROTE || echo REFUSED"),
    )
    .await;
    assert!(
        tried.contains("Read-only file system") && tried.trim_end().ends_with("REFUSED"),
        "the snapshot helper cannot write to the volume: {tried}"
    );
    let mut tar = Vec::new();
    reader.read_to_end(&mut tar).await.expect("the snapshot");
    let written = snap.await.expect("join").expect("snapshot_volume");
    assert_eq!(written, tar.len() as u64);
    let work = tempfile::tempdir().expect("a temp dir");
    assert_eq!(
        tree(&untar(&tar, work.path())),
        original,
        "the snapshot holds exactly the volume's bytes"
    );

    // Restore in place, once the app is stopped: byte for byte.
    a.stop(&ctx(), &bundle(&app)).await.expect("stop");
    std::fs::remove_file(dir.join("a.txt")).expect("rm");
    std::fs::write(dir.join("new.txt"), b"written after the snapshot").expect("write");
    a.restore_volume(&ctx(), &handle, std::io::Cursor::new(tar))
        .await
        .expect("restore_volume");
    assert_eq!(tree(&dir), original, "restored byte for byte");

    // The app destroyed with its volumes kept, and made again from the same spec, finds its data.
    a.destroy(&ctx(), &bundle(&app), DestroyOptions { keep_volumes: true })
        .await
        .expect("destroy, keeping volumes");
    a.apply(&ctx(), &p).await.expect("apply again");
    ka::wait_phase(&ns, "web", "Running").await;
    let found = node::sh(
        &admin,
        &ns,
        "web",
        "cat /data/a.txt; md5sum /data/sub/big.bin",
    )
    .await;
    let big = std::fs::read(dir.join("sub/big.bin")).expect("the node's copy");
    let md5 = std::process::Command::new("md5sum")
        .arg(dir.join("sub/big.bin"))
        .output()
        .expect("md5sum");
    let md5 = String::from_utf8_lossy(&md5.stdout);
    assert_eq!(big.len(), 3 << 20);
    assert!(
        found.starts_with("hello, volume\n")
            && found.contains(md5.split_whitespace().next().unwrap_or("?")),
        "the recreated app reads the restored bytes: {found}"
    );

    // handed back, the volume goes to Delete and the provisioner reclaims it: the PV and
    // its directory on the node are gone.
    a.destroy_volume(&ctx(), &handle)
        .await
        .expect("destroy_volume");
    cleanup(&a, &app).await;
    let deadline = tokio::time::Instant::now() + node::WAIT;
    loop {
        let pv_left = Api::<PersistentVolume>::all(admin.clone())
            .get_opt(&pv)
            .await
            .expect("pv");
        if pv_left.is_none() && !dir.exists() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the provisioner did not reclaim {pv} ({}): {:?}",
            dir.display(),
            pv_left
                .and_then(|p| p.spec)
                .and_then(|s| s.persistent_volume_reclaim_policy)
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
