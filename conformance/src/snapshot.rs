//! `C-VOL-01`: a volume snapshot gives back, byte for byte,
//! what a workload wrote, and a restore replaces the volume's contents.
//!
//! Declared: a workload of the suite's writes this run's number onto its
//! volume and exits; the snapshot after it holds exactly that (S0). An
//! archive of the suite's is restored, and the next snapshot holds its
//! files and nothing of the workload's (the contract's `restore-volume`
//! replaces). S0 is restored, and the next snapshot is S0's files again,
//! the workload's bytes among them. An adapter whose snapshot is not the
//! volume, or whose restore writes nothing or merges, fails naming
//! `volume-snapshot`. Not declared: both calls answer `unsupported`.

use std::collections::BTreeMap;
use std::time::Duration;

use pando_host::CallError;
use pando_host::types::{ObservedBundle, VolumeHandle, WorkloadPhase};

use super::cases::SNAPSHOT;
use super::declared::{Capability, not_shown};
use super::fixture::{
    Check, Fixture, Notes, Stop, answered, bref, describe, ensure, fail, failed, noise, unproven,
};
use super::plans::{self, VOLUME, VOLUME_FILE, WRITER, wref};
use super::tar;

/// How long a snapshot of a volume that never became ready is given to
/// answer `unsupported` or `denied`.
const PROBE_LIMIT: Duration = Duration::from_secs(10);

/// The files of the suite's archive, and the size of the larger.
const DATA_FILE: &str = "conformance/data.bin";
const HELLO_FILE: &str = "conformance/hello.txt";
const DATA_BYTES: usize = 256 << 10;

/// A snapshot's regular files, by path relative to the volume's root.
type Files = BTreeMap<String, Vec<u8>>;

fn handle(app: &str) -> VolumeHandle {
    VolumeHandle {
        bundle: app.into(),
        name: VOLUME.into(),
        location: String::new(),
    }
}

/// The case.
pub(crate) async fn snapshot(fx: &mut Fixture<'_>) {
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

/// The workload's bytes in S0; the archive restored in their place; S0
/// restored, and its files back.
async fn round_trip(fx: &Fixture<'_>, app: &str, notes: &mut Notes) -> Check {
    let volume = handle(app);
    mounted(fx, app, &volume, notes).await?;
    written(fx, app).await?;
    stopped(fx, app).await?;

    // S0: what the workload wrote, and only a snapshot of its volume holds it.
    let (s0, workloads) = take_snapshot(fx, &volume, "after the workload wrote").await?;
    let expected = format!("{}\n", fx.nonces.file.value());
    match workloads.get(VOLUME_FILE) {
        Some(got) if *got == expected.as_bytes() => {}
        got => {
            let said = format!(
                "the snapshot of volume `{VOLUME}` after workload `{WRITER}` wrote `{VOLUME_FILE}` \
                 ({expected:?}, this run's number) and exited {}; it holds: {}",
                match got {
                    Some(got) => format!("has it as {:?}", String::from_utf8_lossy(got)),
                    None => "does not hold it".into(),
                },
                listing(&workloads)
            );
            return Err(lie(fx, said));
        }
    }

    // The suite's archive, in place of the workload's bytes.
    let data = noise(DATA_BYTES);
    let archive = tar::archive(
        &["conformance"],
        &[(DATA_FILE, &data), (HELLO_FILE, b"hello\n")],
    )
    .map_err(|e| fail(format!("making the archive to restore: {e}")))?;
    let what = "restore-volume of a tar archive";
    let ctx = fx.ctx();
    let call = fx
        .adapter
        .restore_volume(&ctx, &volume, std::io::Cursor::new(archive));
    fx.declared(Capability::VolumeSnapshot, what, call).await?;
    let (first, restored) = take_snapshot(fx, &volume, "after a restore").await?;
    let Some(got) = restored.get(DATA_FILE) else {
        let said = format!(
            "the snapshot after a restore of an archive holding `{DATA_FILE}` does not hold it; \
             it holds: {}",
            listing(&restored)
        );
        return Err(lie(fx, said));
    };
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
    ensure!(
        restored.keys().eq([DATA_FILE, HELLO_FILE]),
        "restore-volume must replace the volume's contents, but the snapshot after restoring an \
         archive of {DATA_FILE} and {HELLO_FILE} holds: {}",
        listing(&restored)
    );

    // S0 again: the workload's bytes come back.
    fx.adapter
        .restore_volume(&fx.ctx(), &volume, std::io::Cursor::new(s0.clone()))
        .await
        .map_err(|e| failed("restore-volume of the adapter's own snapshot", &e))?;
    let (second, again) = take_snapshot(fx, &volume, "after restoring the first").await?;
    if again != workloads {
        let said = format!(
            "restoring the snapshot that held what workload `{WRITER}` wrote did not bring it \
             back: it held {}, the snapshot after restoring it holds {}",
            listing(&workloads),
            listing(&again)
        );
        return Err(lie(fx, said));
    }
    notes.push(format!(
        "the workload's `{VOLUME_FILE}` came back after a restore; snapshots of {}, {} and {} \
         bytes",
        s0.len(),
        first.len(),
        second.len()
    ));
    Ok(())
}

/// A snapshot that does not show what the case requires.
fn lie(fx: &Fixture<'_>, said: String) -> Stop {
    not_shown(Capability::VolumeSnapshot, &said, fx.simulated())
}

/// A snapshot's files, as words: each path and its size.
fn listing(files: &Files) -> String {
    if files.is_empty() {
        return "no files".into();
    }
    files
        .iter()
        .map(|(path, bytes)| format!("{path} ({} bytes)", bytes.len()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The app applied, its workload writing to the volume (a runtime may
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
    let writer = plans::writer(&fx.options.image, &fx.nonces);
    let plan = plans::with_volume(plans::plan(app, vec![writer]));
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

/// The writer exited 0, having written its file (the environment, if any,
/// is told to end it as its command would). One that exits otherwise could
/// not write to its volume: the adapter mounted it read-only, or not at
/// all. One never seen exiting fails, unless the runtime is declared
/// simulated.
async fn written(fx: &Fixture<'_>, app: &str) -> Check {
    if let Some(env) = &fx.options.environment {
        env.finish_workload(&wref(app, WRITER), 0)
            .await
            .map_err(|e| fail(format!("the environment could not finish `{WRITER}`: {e}")))?;
    }
    let exited = |seen: &ObservedBundle| {
        seen.workloads.iter().any(|w| {
            w.name == WRITER && matches!(w.phase, WorkloadPhase::Succeeded | WorkloadPhase::Failed)
        })
    };
    let seen = match fx.observe_within(app, exited).await? {
        Ok(seen) => seen,
        Err(last) => {
            let what = format!(
                "observe did not report `{WRITER}` (which writes `{VOLUME_FILE}` onto its volume \
                 and exits) exited within {} s; it last said: {}",
                fx.options.settle_timeout.as_secs(),
                describe(&last)
            );
            return Err(match fx.simulated() {
                Some(why) => unproven(format!(
                    "volume-snapshot: declared; {what}; the runner declares this runtime \
                     simulated: {why}"
                )),
                None => fail(what),
            });
        }
    };
    let writer = seen.workloads.iter().find(|w| w.name == WRITER);
    ensure!(
        writer.is_some_and(|w| w.phase == WorkloadPhase::Succeeded && w.exit_code == Some(0)),
        "`{WRITER}` could not write `{VOLUME_FILE}` onto volume `{VOLUME}`, mounted read-write at \
         {}: {}",
        plans::VOLUME_PATH,
        describe(&seen)
    );
    Ok(())
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

/// A snapshot (`when`, for messages): its bytes and its regular files.
async fn take_snapshot(
    fx: &Fixture<'_>,
    volume: &VolumeHandle,
    when: &str,
) -> Check<(Vec<u8>, Files)> {
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
    let written = r.map_err(|e| failed(&format!("snapshot-volume {when}"), &e))?;
    let bytes = bytes.map_err(|e| fail(format!("reading the snapshot {when} failed: {e}")))?;
    ensure!(
        written == bytes.len() as u64,
        "snapshot-volume {when} reported {written} bytes but {} arrived",
        bytes.len()
    );
    let files = tar::files(&bytes)
        .map_err(|e| fail(format!("the snapshot {when} is not a tar stream: {e}")))?;
    Ok((bytes, files))
}
