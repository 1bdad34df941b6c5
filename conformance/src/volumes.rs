//! Volumes: destroy keeps them by default and removes them when asked
//! a snapshot restores byte for byte, or both calls are
//! `unsupported` when snapshots are not declared.

use std::time::Duration;

use pando_host::CallError;
use pando_host::types::{DestroyOptions, ObservedBundle, VolumeHandle, WorkloadPhase};

use super::cases::{DESTROY_ALL, DESTROY_KEEP, SNAPSHOT};
use super::declared::Capability;
use super::fixture::{
    Check, Fixture, Notes, answered, bref, describe, ensure, fail, failed, noise, unproven,
};
use super::plans::{self, VOLUME};
use super::tar;

/// How long a snapshot of a volume that never became ready is given to
/// answer `unsupported` or `denied`.
const PROBE_LIMIT: Duration = Duration::from_secs(10);

/// The file the snapshot case writes, and its size.
const DATA_FILE: &str = "conformance/data.bin";
const DATA_BYTES: usize = 256 << 10;

pub(crate) async fn run(fx: &mut Fixture<'_>) {
    destroy(fx).await;
    snapshot(fx).await;
}

fn has_volume(seen: &ObservedBundle) -> bool {
    seen.volumes.iter().any(|v| v.name == VOLUME)
}

fn handle(app: &str) -> VolumeHandle {
    VolumeHandle {
        bundle: app.into(),
        name: VOLUME.into(),
        location: String::new(),
    }
}

async fn destroy(fx: &mut Fixture<'_>) {
    if !fx.wants_any(&[DESTROY_KEEP, DESTROY_ALL]) {
        return;
    }
    let app = fx.bundle_id("keep");
    // The workload need not run: a runtime may wait for the volume to be
    // provisioned before it starts anything.
    let plan = plans::with_volume(plans::plan(&app, vec![fx.server()]));
    let setup = fx
        .setup(async {
            fx.adapter
                .apply(&fx.ctx(), &plan)
                .await
                .map_err(|e| failed("apply of a plan with a volume", &e))?;
            fx.observe_until(&app, &format!("volume `{VOLUME}`"), has_volume)
                .await
        })
        .await;

    fx.case(&DESTROY_KEEP, async |fx, notes| {
        setup.get(notes)?;
        fx.adapter
            .destroy(&fx.ctx(), &bref(&app), DestroyOptions::default())
            .await
            .map_err(|e| failed("destroy with the default options", &e))?;
        fx.observe_until(&app, "the workloads gone and the volume kept", |seen| {
            has_volume(seen)
                && !seen
                    .workloads
                    .iter()
                    .any(|w| matches!(w.phase, WorkloadPhase::Running | WorkloadPhase::Pending))
        })
        .await?;
        let in_use = fx
            .adapter
            .in_use(&fx.ctx())
            .await
            .map_err(|e| failed("in-use", &e))?;
        ensure!(
            in_use
                .volumes
                .iter()
                .any(|v| v.bundle == app && v.name == VOLUME),
            "after destroy keeping volumes, in-use does not list volume `{app}/{VOLUME}`"
        );
        Ok(())
    })
    .await;

    fx.case(&DESTROY_ALL, async |fx, notes| {
        setup.get(notes)?;
        let options = DestroyOptions {
            keep_volumes: false,
        };
        fx.adapter
            .destroy(&fx.ctx(), &bref(&app), options)
            .await
            .map_err(|e| failed("destroy without keeping volumes", &e))?;
        let seen = fx
            .observe_until(&app, "the volume removed", |seen| !has_volume(seen))
            .await?;
        ensure!(
            seen.workloads.is_empty() || !seen.exists,
            "after destroy, workloads are still reported: {}",
            describe(&seen)
        );
        let in_use = fx
            .adapter
            .in_use(&fx.ctx())
            .await
            .map_err(|e| failed("in-use", &e))?;
        ensure!(
            !in_use
                .volumes
                .iter()
                .any(|v| v.bundle == app && v.name == VOLUME),
            "after destroy with its volumes, in-use still lists `{app}/{VOLUME}`"
        );
        Ok(())
    })
    .await;
    fx.cleanup(&app).await;
}

async fn snapshot(fx: &mut Fixture<'_>) {
    if !fx.wants(&SNAPSHOT) {
        return;
    }
    let caps = fx.capabilities().await;
    let app = fx.bundle_id("vol");
    fx.case(&SNAPSHOT, async |fx, notes| {
        let caps = caps.clone()?;
        if !caps.volume_snapshot {
            // Not declared: both calls refuse, for any volume.
            let r = fx
                .adapter
                .snapshot_volume(&fx.ctx(), &handle(&app), tokio::io::sink())
                .await;
            answered(
                "snapshot-volume (snapshots are not declared)",
                r,
                false,
                &["unsupported"],
            )?;
            let r = fx
                .adapter
                .restore_volume(&fx.ctx(), &handle(&app), tokio::io::empty())
                .await;
            answered(
                "restore-volume (snapshots are not declared)",
                r,
                false,
                &["unsupported"],
            )?;
            notes.not_declared(
                Capability::VolumeSnapshot,
                "snapshot-volume and restore-volume answered `unsupported` as required",
            );
            return Ok(());
        }
        round_trip(fx, &app, notes).await
    })
    .await;
    fx.cleanup(&app).await;
    if let Some(env) = &fx.options.environment {
        env.release_volume(&handle(&app)).await;
    }
}

/// Restore an archive of known bytes, snapshot, compare; restore that
/// snapshot, snapshot again, compare.
async fn round_trip(fx: &Fixture<'_>, app: &str, notes: &mut Notes) -> Check {
    let volume = handle(app);
    mounted(fx, app, &volume, notes).await?;
    stopped(fx, app).await?;
    let data = noise(DATA_BYTES);
    let archive = tar::archive(
        &["conformance"],
        &[(DATA_FILE, &data), ("conformance/hello.txt", b"hello\n")],
    )
    .map_err(|e| fail(format!("making the archive to restore: {e}")))?;
    let what = "restore-volume of a tar archive";
    let ctx = fx.ctx();
    let call = fx
        .adapter
        .restore_volume(&ctx, &volume, std::io::Cursor::new(archive));
    fx.declared(Capability::VolumeSnapshot, what, call).await?;
    let first = take_snapshot(fx, &volume).await?;
    let files =
        tar::files(&first).map_err(|e| fail(format!("the snapshot is not a tar stream: {e}")))?;
    let got = files.get(DATA_FILE).ok_or_else(|| {
        fail(format!(
            "the snapshot after a restore does not hold `{DATA_FILE}`; it holds: {:?}",
            files.keys().collect::<Vec<_>>()
        ))
    })?;
    ensure!(
        *got == data,
        "`{DATA_FILE}` came back {} bytes, differing from the {} restored{}",
        got.len(),
        data.len(),
        got.iter()
            .zip(&data)
            .position(|(a, b)| a != b)
            .map(|i| format!(" first at byte {i}"))
            .unwrap_or_default()
    );

    fx.adapter
        .restore_volume(&fx.ctx(), &volume, std::io::Cursor::new(first.clone()))
        .await
        .map_err(|e| failed("restore-volume of the adapter's own snapshot", &e))?;
    let second = take_snapshot(fx, &volume).await?;
    let again = tar::files(&second)
        .map_err(|e| fail(format!("the second snapshot is not a tar stream: {e}")))?;
    ensure!(
        again == files,
        "restoring a snapshot and taking another changed the files: {:?} then {:?}",
        files.keys().collect::<Vec<_>>(),
        again.keys().collect::<Vec<_>>()
    );
    notes.push(format!(
        "snapshots of {} and {} bytes",
        first.len(),
        second.len()
    ));
    Ok(())
}

/// The app applied with the volume mounted by a workload (a runtime may
/// bind storage only for a workload that uses it), and the volume ready.
/// Snapshots are declared, so a volume never reported ready fails, naming
/// `observe`; only on a runtime the environment declares simulated is it
/// the declaration unproven.
async fn mounted(fx: &Fixture<'_>, app: &str, volume: &VolumeHandle, notes: &mut Notes) -> Check {
    if let Some(env) = &fx.options.environment {
        env.prepare_volume(volume)
            .await
            .map_err(|e| fail(format!("the environment could not provide the volume: {e}")))?;
    }
    let plan = plans::with_volume(plans::plan(app, vec![fx.server()]));
    fx.adapter
        .apply(&fx.ctx(), &plan)
        .await
        .map_err(|e| failed("apply of a plan with a volume", &e))?;
    let ready = |seen: &ObservedBundle| seen.volumes.iter().any(|v| v.name == VOLUME && v.ready);
    let Err(last) = fx.observe_within(app, ready).await? else {
        return Ok(());
    };
    // The call is held to the declaration even for a volume that cannot be
    // written: `unsupported` and `denied` come before any work on the
    // runtime; an adapter still waiting for the volume after PROBE_LIMIT
    // is not judged on it (the Kubernetes adapter's helper pod waits for
    // the claim until its deadline).
    let what = "snapshot-volume of a volume not yet ready";
    let ctx = fx.ctx().with_timeout(PROBE_LIMIT);
    let call = fx.adapter.snapshot_volume(&ctx, volume, tokio::io::sink());
    let answer = fx
        .declared_answer(Capability::VolumeSnapshot, what, call)
        .await?;
    if let Err(e @ CallError::DeadlineExceeded { .. }) = answer {
        notes.push(format!(
            "{what} did not answer within {} s ({}): only an `unsupported` or `denied` \
             answer would have failed it",
            PROBE_LIMIT.as_secs(),
            e.kind()
        ));
    }
    let never = format!(
        "observe did not report volume `{VOLUME}` ready within {} s, so it cannot be written; \
         it last said: {}",
        fx.options.settle_timeout.as_secs(),
        describe(&last)
    );
    Err(match fx.simulated() {
        Some(why) => unproven(format!(
            "volume-snapshot: declared; {never}; the runner declares this runtime simulated: \
             {why}"
        )),
        None => fail(format!(
            "{never}. Snapshots are declared: the runtime must provision the volume (on the \
             test cluster, the real node with `storage_class: pando-local`), or the runner must \
             declare it simulated and provide storage (docs/conformance.md, `Environment`)"
        )),
    })
}

/// The app stopped and seen stopped.
async fn stopped(fx: &Fixture<'_>, app: &str) -> Check {
    // Restored as core restores: with the app stopped, so nothing writes
    // to the volume meanwhile (an adapter may refuse otherwise).
    fx.adapter
        .stop(&fx.ctx(), &bref(app))
        .await
        .map_err(|e| failed("stop before restoring", &e))?;
    fx.observe_until(app, "the app stopped", |seen| {
        !seen
            .workloads
            .iter()
            .any(|w| matches!(w.phase, WorkloadPhase::Running | WorkloadPhase::Pending))
    })
    .await
    .map(|_| ())
}

async fn take_snapshot(fx: &Fixture<'_>, volume: &VolumeHandle) -> Check<Vec<u8>> {
    let (writer, mut reader) = tokio::io::duplex(1 << 16);
    let collect = async {
        let mut out = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut reader, &mut out)
            .await
            .map(|_| out)
    };
    let ctx = fx.ctx();
    let before = fx.refusals();
    let (r, bytes) = tokio::join!(fx.adapter.snapshot_volume(&ctx, volume, writer), collect);
    fx.held_to(Capability::VolumeSnapshot, "snapshot-volume", before, &r)?;
    let written = r.map_err(|e| failed("snapshot-volume", &e))?;
    let bytes = bytes.map_err(|e| fail(format!("reading the snapshot failed: {e}")))?;
    ensure!(
        written == bytes.len() as u64,
        "snapshot-volume reported {written} bytes but {} arrived",
        bytes.len()
    );
    Ok(bytes)
}
