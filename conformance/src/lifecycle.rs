//! A workload that finishes: its log stays readable, and stop
//! keeps it while it stops the one still running.

use pando_host::types::{LogOptions, ObservedBundle, RuntimeCapabilities, WorkloadPhase};

use super::cases::{LOGS, STOP};
use super::declared::{Capability, not_shown};
use super::fixture::{
    Check, Fixture, Notes, Setup, Stop, answered, bref, describe, ensure, fail, failed, skip,
    unproven,
};
use super::plans::{self, FINISH_CODE, FINISHER, SERVER, wref};

/// The most of a log that is read.
const MAX_LOG: usize = 16 << 20;

/// What the group's set-up found: both workloads started; with logs
/// declared, whether the running `server`'s log could be read (its size);
/// and whether `finisher` exited as its command does.
struct Life {
    server_log: Option<Check<usize>>,
    finished: Check<ObservedBundle>,
}

pub(crate) async fn run(fx: &mut Fixture<'_>) {
    if !fx.wants_any(&[LOGS, STOP]) {
        return;
    }
    let caps = fx.capabilities().await;
    let logs = caps.as_ref().is_ok_and(|c| c.logs);
    let app = fx.bundle_id("life");
    let setup = fx.setup(life(fx, &app, logs)).await;

    fx.case(&LOGS, async |fx, notes| {
        case_logs(fx, notes, &caps, &setup, &app).await
    })
    .await;
    fx.case(&STOP, async |fx, notes| {
        case_stop(fx, notes, &caps, &setup, &app).await
    })
    .await;
    fx.cleanup(&app).await;
}

/// R-150, logs: the finished workload's log is read (and the running
/// server's), and holds the line its command printed with this run's
/// nonce; or `unsupported` where logs are not declared.
async fn case_logs(
    fx: &Fixture<'_>,
    notes: &mut Notes,
    caps: &Check<RuntimeCapabilities>,
    setup: &Setup<Life>,
    app: &str,
) -> Check {
    let caps = caps.clone()?;
    if !caps.logs {
        let r = fx
            .adapter
            .logs(&fx.ctx(), &wref(app, FINISHER), &LogOptions::default())
            .await;
        answered("logs (logs are not declared)", r, false, &["unsupported"])?;
        notes.not_declared(Capability::Logs, "answered `unsupported` as required");
        return Ok(());
    }
    let life = setup.get(notes)?;
    // The declaration is held to even where no workload finishes.
    let server_bytes = match &life.server_log {
        Some(read) => read.clone()?,
        None => 0,
    };
    if let Err(why) = &life.finished {
        // `logs` is declared: what this runtime could not show is the
        // declaration unproven, not a skip.
        return Err(half_checked(
            why,
            &format!(
                "logs: declared; the running `{SERVER}`'s log was read ({server_bytes} bytes), \
                 but not a finished workload's"
            ),
            unproven,
        ));
    }
    let log = read_log(fx, app).await?;
    // Proven by what the workload printed: a line holding a number this run
    // chose, which only running the command makes.
    let line = fx.nonces.finish_line();
    let text = String::from_utf8_lossy(&log);
    if holds_line(&text, &line) {
        return Ok(());
    }
    let said = format!(
        "the log of the finished workload `{FINISHER}` does not hold the line its command \
         printed ({line:?}, a number this run chose); it holds {} bytes{}",
        log.len(),
        excerpt(&text)
    );
    Err(not_shown(Capability::Logs, &said, fx.simulated()))
}

/// Whether `log` has `line` as one of its lines (a runtime may end lines
/// with `\r\n`).
fn holds_line(log: &str, line: &str) -> bool {
    log.lines().any(|l| l.trim_end() == line)
}

/// The start of a log, for a message: `: "…"`, or nothing when empty.
fn excerpt(text: &str) -> String {
    const SHOWN: usize = 200;
    if text.is_empty() {
        return String::new();
    }
    let cut: String = text.chars().take(SHOWN).collect();
    let more = if text.chars().count() > SHOWN {
        "…"
    } else {
        ""
    };
    format!(": {cut:?}{more}")
}

/// R-150, stop: the running workload stops, the finished one is kept as
/// it was, its log unchanged.
async fn case_stop(
    fx: &Fixture<'_>,
    notes: &mut Notes,
    caps: &Check<RuntimeCapabilities>,
    setup: &Setup<Life>,
    app: &str,
) -> Check {
    let caps = caps.clone()?;
    let life = setup.get(notes)?;
    let before = match (&life.finished, caps.logs) {
        (Ok(_), true) => Some(read_log(fx, app).await?),
        _ => None,
    };
    if !caps.logs {
        notes.push("logs are not declared: the finished workload's log was not compared");
    }
    fx.adapter
        .stop(&fx.ctx(), &bref(app))
        .await
        .map_err(|e| failed("stop", &e))?;
    let seen = fx
        .observe_until(app, &format!("`{SERVER}` stopped"), |seen| {
            !seen.workloads.iter().any(|w| {
                w.name == SERVER
                    && matches!(w.phase, WorkloadPhase::Running | WorkloadPhase::Pending)
            })
        })
        .await?;
    if let Err(why) = &life.finished {
        return Err(half_checked(
            why,
            &format!("stop stopped `{SERVER}`, but kept no finished workload to check"),
            skip,
        ));
    }
    ensure!(
        seen.exists && finished_as_planned(&seen),
        "after stop, the finished workload `{FINISHER}` is no longer reported as it was \
         (failed, exit {FINISH_CODE}): {}",
        describe(&seen)
    );
    if let Some(before) = before {
        let after = read_log(fx, app).await?;
        ensure!(
            after == before,
            "after stop, the log of `{FINISHER}` changed: {} bytes before, {} after",
            before.len(),
            after.len()
        );
    }
    Ok(())
}

/// A case that checked what it could, stopped by `why` (the finisher not
/// exiting on a simulated runtime): `short` (a skip, or for a declared
/// capability unproven) saying what was checked and why not the rest; a
/// failure stays a failure.
fn half_checked(why: &Stop, checked: &str, short: fn(String) -> Stop) -> Stop {
    match why {
        Stop::Skip(why) | Stop::Unproven(why) => short(format!("{checked}: {why}")),
        Stop::Fail(why) => fail(format!("its set-up failed: {why}")),
    }
}

/// The finisher's whole log.
async fn read_log(fx: &Fixture<'_>, app: &str) -> Check<Vec<u8>> {
    read_whole_log(fx, app, FINISHER, "the finished workload").await
}

/// A workload's whole log, not followed; logs are declared.
async fn read_whole_log(
    fx: &Fixture<'_>,
    app: &str,
    workload: &str,
    which: &str,
) -> Check<Vec<u8>> {
    let what = format!("logs of {which} `{workload}`");
    let (ctx, workload_ref, options) = (fx.ctx(), wref(app, workload), LogOptions::default());
    let call = fx.adapter.logs(&ctx, &workload_ref, &options);
    let mut stream = fx.declared(Capability::Logs, &what, call).await?;
    match tokio::time::timeout(fx.options.settle_timeout, stream.read_to_end(MAX_LOG)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) => Err(fail(format!("reading the log of `{workload}` failed: {e}"))),
        Err(_) => Err(fail(format!(
            "the log of `{workload}` did not end within {} s (it was not followed)",
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

/// Applies the server and the finisher and waits until both started;
/// with logs declared, reads the running server's log; then waits until
/// the finisher has exited ([`finished`]). Only the first part failing
/// fails the set-up.
async fn life(fx: &Fixture<'_>, app: &str, logs: bool) -> Check<Life> {
    let seen = started(fx, app).await?;
    let server_log = if logs {
        let read = read_whole_log(fx, app, SERVER, "the running workload").await;
        Some(read.map(|log| log.len()))
    } else {
        None
    };
    let finished = finished(fx, app, seen).await;
    Ok(Life {
        server_log,
        finished,
    })
}

/// Applies the server and the finisher, and waits until the server runs
/// and the finisher started.
async fn started(fx: &Fixture<'_>, app: &str) -> Check<ObservedBundle> {
    let plan = plans::plan(app, vec![fx.server(), fx.finisher()]);
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
    Ok(seen)
}

/// Waits until the finisher has exited (the environment, if any, is told
/// to make it exit once it runs). A finisher never reported exited fails,
/// naming `observe`, unless the environment declared the runtime simulated
/// ([`crate::Environment::simulated`]): then it is a skip naming that
/// reason, since a simulator without a hook that ends the workload never
/// ends it. An `observe` error always fails.
async fn finished(fx: &Fixture<'_>, app: &str, seen: ObservedBundle) -> Check<ObservedBundle> {
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
    let settle = fx.options.settle_timeout.as_secs();
    let seen = match fx.observe_within(app, exited).await? {
        Ok(seen) => seen,
        Err(last) => {
            let what = format!(
                "observe did not report `{FINISHER}` (`sh -c 'echo …; exit {FINISH_CODE}'`) \
                 exited within {settle} s; it last said: {}",
                describe(&last)
            );
            return Err(match fx.simulated() {
                Some(why) => skip(format!(
                    "{what}; the runner declares this runtime simulated: {why}"
                )),
                None => fail(format!(
                    "{what}. A runtime that runs the workloads' commands ends it by itself; one \
                     that does not must be declared simulated by the runner \
                     (docs/conformance.md, `Environment`)"
                )),
            });
        }
    };
    ensure!(
        finished_as_planned(&seen),
        "`{FINISHER}` exited {FINISH_CODE} but is reported otherwise: {}",
        describe(&seen)
    );
    Ok(seen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plans::{Nonces, finisher};

    #[test]
    fn a_log_proves_the_finisher_ran_only_with_the_line_its_command_printed() {
        let nonces = Nonces::random();
        let line = nonces.finish_line();
        // What the real node's workload printed.
        assert!(holds_line(&format!("{line}\n"), &line));
        assert!(holds_line(&format!("starting\r\n{line}\r\n"), &line));
        // Liars and simulators: a fixed line, the command echoed back, another run's number.
        assert!(!holds_line("conformance: finished\n", &line));
        assert!(!holds_line("kwok: the same log for every pod\n", &line));
        let script = &finisher("busybox", &nonces).command[2];
        assert!(!holds_line(&format!("{script}\n"), &line), "{script}");
        assert!(!holds_line(&format!("{line}0\n"), &line));
        assert!(!holds_line("", &line));
    }
}
