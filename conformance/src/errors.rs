//! Every error is one of the typed ones: invalid input is `invalid`, names
//! that do not exist get `not-found` (or a no-op where the call is
//! idempotent), and nothing is a trap or a host error. A refused plan
//! writes nothing; an app that does not exist is observed as such.

use pando_host::types::{
    BundlePlan, ExecRequest, LogOptions, RunRequest, RuntimeCapabilities, VolumeHandle,
    VolumeMount, VolumeRequest,
};

use std::future::Future;

use pando_host::CallError;

use super::cases::{INVALID, OBSERVE_MISSING, REFUSED, UNKNOWN};
use super::declared::Capability;
use super::fixture::{Check, Fixture, answered, bref, ensure, failed, unmeasured_note};
use super::plans::{self, FINISHER, SERVER, VOLUME, wref};

pub(crate) async fn run(fx: &mut Fixture<'_>) {
    if !fx.wants_any(&[INVALID, UNKNOWN, REFUSED, OBSERVE_MISSING]) {
        return;
    }
    let caps = fx.capabilities().await;
    let bad = fx.bundle_id("bad");
    let none = fx.bundle_id("none");

    fx.case(&INVALID, async |fx, _| {
        for (what, plan) in bad_plans(fx, &bad) {
            let r = fx.adapter.apply(&fx.ctx(), &plan).await;
            answered(&format!("apply of {what}"), r, false, &["invalid"])?;
        }
        let request = VolumeRequest {
            bundle: bad.clone(),
            name: "Not_A_Volume!".into(),
            size_bytes: None,
        };
        let r = fx.adapter.create_volume(&fx.ctx(), &request).await;
        answered(
            "create-volume with a name that is not a DNS label",
            r,
            false,
            &["invalid"],
        )?;
        Ok(())
    })
    .await;

    fx.case(&REFUSED, async |fx, notes| {
        for (what, plan) in bad_plans(fx, &bad) {
            let (r, sent) = fx.measured(fx.adapter.apply(&fx.ctx(), &plan)).await;
            ensure!(r.is_err(), "apply of {what} was accepted");
            match sent {
                Some(sent) => ensure!(
                    sent.writes() == 0,
                    "apply of {what} was refused ({}) but wrote: {}",
                    r.err().map(|e| e.kind()).unwrap_or_default(),
                    sent.only_writes()
                ),
                None => {
                    notes.push(unmeasured_note());
                    break;
                }
            }
        }
        Ok(())
    })
    .await;

    fx.case(&OBSERVE_MISSING, async |fx, notes| {
        let (seen, sent) = fx
            .measured(fx.adapter.observe(&fx.ctx(), &bref(&none)))
            .await;
        let seen = seen.map_err(|e| failed("observe of an app that does not exist", &e))?;
        ensure!(
            !seen.exists && seen.workloads.is_empty() && seen.volumes.is_empty(),
            "observe of an app that was never applied reports {}",
            super::fixture::describe(&seen)
        );
        ensure!(
            seen.id == none,
            "observe answered for app `{}`, not `{none}`",
            seen.id
        );
        match sent {
            Some(sent) => ensure!(sent.writes() == 0, "observe wrote: {}", sent.only_writes()),
            None => notes.push(unmeasured_note()),
        }
        Ok(())
    })
    .await;

    fx.case(&UNKNOWN, async |fx, _| {
        let caps = caps.clone()?;
        unknown(fx, &none, &caps).await
    })
    .await;

    fx.cleanup(&bad).await;
}

/// Plans no adapter can run, each with what is wrong with it.
fn bad_plans(fx: &Fixture<'_>, id: &str) -> Vec<(&'static str, BundlePlan)> {
    let one = || plans::plan(id, vec![fx.server()]);
    let mut bad_id = one();
    bad_id.id = "Not_An_App!".into();
    let mut bad_name = one();
    bad_name.workloads[0].name = "Not_A_Workload!".into();
    let mut twice = one();
    twice.workloads.push(fx.server());
    let mut ghost = plans::plan(id, vec![fx.server(), fx.finisher()]);
    ghost.workloads[1].mounts.push(VolumeMount {
        volume: "ghost".into(),
        path: "/ghost".into(),
        read_only: false,
    });
    vec![
        ("a plan whose id is not a DNS label", bad_id),
        (
            "a plan with a workload name that is not a DNS label",
            bad_name,
        ),
        ("a plan naming a workload twice", twice),
        ("a plan mounting a volume it does not have", ghost),
    ]
}

/// A call naming something unknown, gated by `cap`: declared, one of
/// `kinds` (`unsupported` or `denied` fails, naming the declaration); not
/// declared, `unsupported`.
async fn gated<T>(
    fx: &Fixture<'_>,
    caps: &RuntimeCapabilities,
    cap: Capability,
    what: &str,
    call: impl Future<Output = Result<T, CallError>>,
    kinds: &[&str],
) -> Check {
    if !cap.declared_in(caps) {
        let what = format!("{what} ({} is not declared)", cap.name());
        answered(&what, call.await, false, &["unsupported"])?;
        return Ok(());
    }
    let r = fx.declared_answer(cap, what, call).await?;
    answered(what, r, false, kinds)?;
    Ok(())
}

/// Calls naming an app, workloads, a volume and an edge that do not exist.
async fn unknown(fx: &Fixture<'_>, none: &str, caps: &RuntimeCapabilities) -> Check {
    let ctx = fx.ctx();
    let app = bref(none);

    let r = fx.adapter.stop(&ctx, &app).await;
    answered("stop of an unknown app", r, true, &["not-found"])?;
    let r = fx.adapter.destroy(&ctx, &app, Default::default()).await;
    answered("destroy of an unknown app", r, true, &["not-found"])?;
    let r = fx.adapter.usage(&ctx, &app).await;
    answered("usage of an unknown app", r, true, &["not-found"])?;
    let r = fx.adapter.largest_fit_for(&ctx, none).await;
    answered("largest-fit-for an unknown app", r, true, &["not-found"])?;

    let ghost = wref(none, SERVER);
    let options = LogOptions::default();
    let call = fx.adapter.logs(&ctx, &ghost, &options);
    let what = "logs of an unknown workload";
    gated(fx, caps, Capability::Logs, what, call, &["not-found"]).await?;
    let exec = ExecRequest {
        command: vec!["true".into()],
        stdin: false,
        tty: false,
        size: None,
    };
    let call = fx.adapter.exec(&ctx, &ghost, &exec);
    let what = "exec in an unknown workload";
    // `not-found`, not `unavailable`: the workload does not exist, and
    // core retries `unavailable` as if it were only not running yet.
    gated(fx, caps, Capability::Exec, what, call, &["not-found"]).await?;
    let run = RunRequest {
        command: vec!["true".into()],
        env: vec![],
    };
    let finisher = wref(none, FINISHER);
    let call = fx.adapter.run(&ctx, &finisher, &run, tokio::io::sink());
    let what = "run in an unknown workload";
    gated(fx, caps, Capability::Run, what, call, &["not-found"]).await?;

    let volume = VolumeHandle {
        bundle: none.into(),
        name: VOLUME.into(),
        location: String::new(),
    };
    let r = fx.adapter.destroy_volume(&ctx, &volume).await;
    answered(
        "destroy-volume of an unknown volume",
        r,
        true,
        &["not-found"],
    )?;
    let snapshots = Capability::VolumeSnapshot;
    let call = fx.adapter.snapshot_volume(&ctx, &volume, tokio::io::sink());
    let what = "snapshot-volume of an unknown volume";
    gated(fx, caps, snapshots, what, call, &["not-found"]).await?;
    let call = fx.adapter.restore_volume(&ctx, &volume, tokio::io::empty());
    let what = "restore-volume of an unknown volume";
    gated(fx, caps, snapshots, what, call, &["not-found"]).await?;
    // Only reads: removing an unknown edge could remove what the runtime
    // shares between edges.
    let call = fx.adapter.observe_edge(&ctx, none);
    let what = "observe-edge of an unknown edge";
    gated(fx, caps, Capability::Edge, what, call, &["not-found"]).await?;
    Ok(())
}
