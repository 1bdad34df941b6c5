//! A workload that finishes: its log stays readable, and stop
//! keeps it while it stops the one still running.

use std::time::Instant;

use pando_host::types::{LogOptions, ObservedBundle, WorkloadPhase};

use super::cases::{LOGS, STOP};
use super::fixture::{
    Check, Fixture, after_setup, answered, bref, describe, ensure, fail, failed, skip,
};
use super::plans::{self, FINISH_CODE, FINISH_LINE, FINISHER, SERVER, wref};

/// The most of a log that is read.
const MAX_LOG: usize = 16 << 20;

pub(crate) async fn run(fx: &mut Fixture<'_>) {
    if !fx.wants_any(&[LOGS, STOP]) {
        return;
    }
    let caps = fx.capabilities().await;
    let app = fx.bundle_id("life");
    let started = Instant::now();
    let setup = fx.bounded(finished(fx, &app)).await;
    let setup_took = started.elapsed();

    fx.case(&LOGS, async |fx, notes| {
        let caps = caps.clone()?;
        if !caps.logs {
            let r = fx
                .adapter
                .logs(&fx.ctx(), &wref(&app, FINISHER), &all())
                .await;
            answered("logs (logs are not declared)", r, false, &["unsupported"])?;
            return Ok(());
        }
        after_setup(&setup)?;
        let log = read_log(fx, &app).await?;
        ensure!(
            !log.is_empty(),
            "the log of the finished workload `{FINISHER}` is empty"
        );
        if !String::from_utf8_lossy(&log).contains(FINISH_LINE) {
            notes.push(format!(
                "the log does not hold the line the command printed ({FINISH_LINE:?}): \
                 expected only of a runtime that simulates workloads"
            ));
        }
        notes.push(format!(
            "set-up (a workload finishing) took {:.1}s",
            setup_took.as_secs_f64()
        ));
        Ok(())
    })
    .await;

    fx.case(&STOP, async |fx, _| {
        let caps = caps.clone()?;
        after_setup(&setup)?;
        let before = if caps.logs {
            Some(read_log(fx, &app).await?)
        } else {
            None
        };
        fx.adapter
            .stop(&fx.ctx(), &bref(&app))
            .await
            .map_err(|e| failed("stop", &e))?;
        let seen = fx
            .observe_until(&app, &format!("`{SERVER}` stopped"), |seen| {
                !seen.workloads.iter().any(|w| {
                    w.name == SERVER
                        && matches!(w.phase, WorkloadPhase::Running | WorkloadPhase::Pending)
                })
            })
            .await?;
        ensure!(
            seen.exists && finished_as_planned(&seen),
            "after stop, the finished workload `{FINISHER}` is no longer reported as it was \
             (failed, exit {FINISH_CODE}): {}",
            describe(&seen)
        );
        if let Some(before) = before {
            let after = read_log(fx, &app).await?;
            ensure!(
                after == before,
                "after stop, the log of `{FINISHER}` changed: {} bytes before, {} after",
                before.len(),
                after.len()
            );
        }
        Ok(())
    })
    .await;
    fx.cleanup(&app).await;
}

/// Options reading a whole log, not following it.
fn all() -> LogOptions {
    LogOptions {
        follow: false,
        tail_lines: None,
        since_seconds: None,
        timestamps: false,
        limit_bytes: None,
    }
}

/// The finisher's whole log.
async fn read_log(fx: &Fixture<'_>, app: &str) -> Check<Vec<u8>> {
    let mut stream = fx
        .adapter
        .logs(&fx.ctx(), &wref(app, FINISHER), &all())
        .await
        .map_err(|e| failed(&format!("logs of the finished workload `{FINISHER}`"), &e))?;
    match tokio::time::timeout(fx.options.settle_timeout, stream.read_to_end(MAX_LOG)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) => Err(fail(format!("reading the log of `{FINISHER}` failed: {e}"))),
        Err(_) => Err(fail(format!(
            "the log of the finished `{FINISHER}` did not end within {} s (it was not followed)",
            fx.options.settle_timeout.as_secs()
        ))),
    }
}

/// Whether the finisher is reported failed with its command's exit code.
fn finished_as_planned(seen: &ObservedBundle) -> bool {
    seen.workloads.iter().any(|w| {
        w.name == FINISHER && w.phase == WorkloadPhase::Failed && w.exit_code == Some(FINISH_CODE)
    })
}

/// Applies the server and the finisher, and waits until the finisher has
/// exited (the environment, if any, is told to make it exit once it
/// runs). A finisher that never exits is a skip: the runtime may not run
/// commands at all (a simulator without an environment).
async fn finished(fx: &Fixture<'_>, app: &str) -> Check<ObservedBundle> {
    let image = &fx.options.image;
    let plan = plans::plan(app, vec![plans::server(image), plans::finisher(image)]);
    // Both started: the finisher may exit before it is ever seen running.
    fx.adapter
        .apply(&fx.ctx(), &plan)
        .await
        .map_err(|e| failed("apply", &e))?;
    let seen = fx
        .observe_until(
            app,
            &format!("`{SERVER}` running and `{FINISHER}` started"),
            |seen| {
                let phase = |name: &str| {
                    seen.workloads
                        .iter()
                        .find(|w| w.name == name)
                        .map(|w| w.phase)
                };
                phase(SERVER) == Some(WorkloadPhase::Running)
                    && matches!(
                        phase(FINISHER),
                        Some(
                            WorkloadPhase::Running
                                | WorkloadPhase::Succeeded
                                | WorkloadPhase::Failed
                        )
                    )
            },
        )
        .await?;
    if let Some(env) = &fx.options.environment
        && !finished_as_planned(&seen)
    {
        env.finish_workload(&wref(app, FINISHER), FINISH_CODE)
            .await
            .map_err(|e| {
                fail(format!(
                    "the environment could not finish `{FINISHER}`: {e}"
                ))
            })?;
    }
    let exited = |seen: &ObservedBundle| {
        seen.workloads.iter().any(|w| {
            w.name == FINISHER
                && matches!(w.phase, WorkloadPhase::Succeeded | WorkloadPhase::Failed)
        })
    };
    let seen = match fx
        .observe_until(app, &format!("`{FINISHER}` exited"), exited)
        .await
    {
        Ok(seen) => seen,
        Err(_) => {
            return Err(skip(format!(
                "`{FINISHER}` (`sh -c 'echo …; exit {FINISH_CODE}'`) did not exit within {} s: \
                 this runtime does not seem to run commands (a simulator needs an environment \
                 that ends it; see docs/conformance.md)",
                fx.options.settle_timeout.as_secs()
            )));
        }
    };
    ensure!(
        finished_as_planned(&seen),
        "`{FINISHER}` exited {FINISH_CODE} but is reported otherwise: {}",
        describe(&seen)
    );
    Ok(seen)
}
