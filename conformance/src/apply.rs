//! Apply and observe on one running app: apply converges, observe changes
//! nothing, a satisfied plan writes nothing (O-41) but what the adapter
//! declares it rewrites; with the app running, capacity, exec and run.

use pando_host::types::{BundlePlan, ObservedBundle, WorkloadPhase};

use super::cases::{
    CAPACITY, CONVERGE, EXEC, EXEC_RESIZE, OBSERVE, REAPPLY, REWRITES, RUN, cases_for,
};
use super::fixture::{Check, Fixture, Notes, bref, describe, ensure, failed, unmeasured_note};
use super::plans::{self, SERVER};
use super::{capacity, sessions};

pub(crate) async fn run(fx: &mut Fixture<'_>) {
    let group = [
        CONVERGE,
        OBSERVE,
        REAPPLY,
        CAPACITY,
        EXEC,
        EXEC_RESIZE,
        RUN,
        REWRITES,
    ];
    if !fx.wants_any(&group) {
        return;
    }
    let caps = fx.capabilities().await;
    let app = fx.bundle_id("apply");
    let plan = plans::plan(&app, vec![fx.server()]);

    let setup = fx.setup(converge(fx, &plan)).await;
    // The set-up is this case: its time is the set-up's.
    fx.record(
        &CONVERGE,
        setup.result().as_ref().map(|_| ()).map_err(Clone::clone),
        setup.took(),
        Notes::default(),
    );

    fx.case(&OBSERVE, async |fx, notes| {
        setup.get(notes)?;
        observe(fx, &app, notes).await
    })
    .await;
    fx.case(&REAPPLY, async |fx, notes| {
        let before = setup.get(notes)?;
        reapply(fx, &plan, before, notes).await
    })
    .await;
    fx.case(&CAPACITY, async |fx, notes| {
        setup.get(notes)?;
        capacity::check(fx, &app, notes).await
    })
    .await;
    fx.case(&EXEC, async |fx, notes| {
        let caps = caps.clone()?;
        if caps.exec {
            setup.get(notes)?;
        }
        sessions::exec(fx, &app, caps.exec, notes).await
    })
    .await;
    // Contract 0.2.0's resize, where exec is declared: 0.1.0 cannot resize
    // a session while its program runs.
    let resizes = cases_for(&fx.adapter.shape().version).contains(&EXEC_RESIZE)
        && caps.as_ref().is_ok_and(|c| c.exec);
    if resizes {
        fx.case(&EXEC_RESIZE, async |fx, notes| {
            setup.get(notes)?;
            sessions::resize(fx, &app, notes).await
        })
        .await;
    }
    fx.case(&RUN, async |fx, notes| {
        let caps = caps.clone()?;
        if caps.run {
            setup.get(notes)?;
        }
        sessions::run(fx, &app, caps.run, notes).await
    })
    .await;
    // Last: it changes the plan.
    fx.case(&REWRITES, async |fx, notes| {
        setup.get(notes)?;
        rewrites(fx, &plan, notes).await
    })
    .await;
    fx.cleanup(&app).await;
}

/// Whether `workload` is reported running.
pub(crate) fn running(seen: &ObservedBundle, workload: &str) -> bool {
    seen.exists
        && seen
            .workloads
            .iter()
            .any(|w| w.name == workload && w.phase == WorkloadPhase::Running)
}

/// Applies `plan` and waits until observe reports every workload running;
/// that report.
pub(crate) async fn converge(fx: &Fixture<'_>, plan: &BundlePlan) -> Check<ObservedBundle> {
    let handle = fx
        .adapter
        .apply(&fx.ctx(), plan)
        .await
        .map_err(|e| failed(&format!("apply of `{}`", plan.id), &e))?;
    ensure!(
        handle.id == plan.id,
        "apply of `{}` answered a handle for `{}`",
        plan.id,
        handle.id
    );
    ensure!(
        !handle.location.is_empty(),
        "apply answered a handle with no location"
    );
    let names: Vec<&str> = plan.workloads.iter().map(|w| w.name.as_str()).collect();
    fx.observe_until(&plan.id, "every workload running", |seen| {
        names.iter().all(|n| running(seen, n))
    })
    .await
}

/// Observe twice: the same report, and no writes.
async fn observe(fx: &Fixture<'_>, app: &str, notes: &mut Notes) -> Check {
    let (first, sent) = fx.measured(fx.adapter.observe(&fx.ctx(), &bref(app))).await;
    let first = first.map_err(|e| failed("observe", &e))?;
    let (second, sent_again) = fx.measured(fx.adapter.observe(&fx.ctx(), &bref(app))).await;
    let second = second.map_err(|e| failed("observe, again", &e))?;
    ensure!(
        running(&first, SERVER),
        "observe no longer reports `{SERVER}` running: {}",
        describe(&first)
    );
    ensure!(
        first == second,
        "two observes of an unchanged app differ: {} / {}",
        describe(&first),
        describe(&second)
    );
    match (sent, sent_again) {
        (Some(a), Some(b)) => {
            ensure!(
                a.writes() == 0 && b.writes() == 0,
                "observe wrote: {} / {}",
                a.only_writes(),
                b.only_writes()
            );
            notes.push(format!("one observe sent: {a}"));
        }
        _ => notes.push(unmeasured_note()),
    }
    Ok(())
}

/// Apply the plan again: nothing written, nothing restarted.
async fn reapply(
    fx: &Fixture<'_>,
    plan: &BundlePlan,
    before: &ObservedBundle,
    notes: &mut Notes,
) -> Check {
    let (r, sent) = fx.measured(fx.adapter.apply(&fx.ctx(), plan)).await;
    r.map_err(|e| failed("apply of the same plan again", &e))?;
    match sent {
        Some(sent) => {
            ensure!(
                sent.writes() == 0,
                "apply of a satisfied plan without credentials wrote: {}",
                sent.only_writes()
            );
            notes.push(format!("a satisfied apply sent: {sent}"));
        }
        None => notes.push(unmeasured_note()),
    }
    let after = fx
        .adapter
        .observe(&fx.ctx(), &bref(&plan.id))
        .await
        .map_err(|e| failed("observe after applying again", &e))?;
    let started = |seen: &ObservedBundle| {
        seen.workloads
            .iter()
            .find(|w| w.name == SERVER)
            .and_then(|w| w.started_at_ms)
    };
    ensure!(
        running(&after, SERVER) && started(&after) == started(before),
        "applying the same plan again restarted `{SERVER}`: before {}, after {}",
        describe(before),
        describe(&after)
    );
    Ok(())
}

/// With pull credentials: converge, apply again, and see only the
/// declared rewrites written.
async fn rewrites(fx: &Fixture<'_>, plan: &BundlePlan, notes: &mut Notes) -> Check {
    let mut plan = plan.clone();
    plan.revision = "2".into();
    plan.pull_credentials = plans::credentials();
    converge(fx, &plan).await?;
    let (r, sent) = fx.measured(fx.adapter.apply(&fx.ctx(), &plan)).await;
    r.map_err(|e| failed("apply of the same plan with credentials again", &e))?;
    let Some(sent) = sent else {
        notes.push(unmeasured_note());
        return Ok(());
    };
    let declared = &fx.options.rewrites;
    let undeclared: Vec<String> = sent
        .only_writes()
        .iter()
        .filter(|(k, _)| !declared.contains(&k.resource))
        .map(|(k, n)| format!("{k} ×{n}"))
        .collect();
    ensure!(
        undeclared.is_empty(),
        "a satisfied apply with credentials wrote what is not declared as rewritten ({}): {}",
        if declared.is_empty() {
            "nothing is".to_string()
        } else {
            declared.join(", ")
        },
        undeclared.join(", ")
    );
    notes.push(format!(
        "a satisfied apply with credentials wrote: {}",
        sent.only_writes()
    ));
    Ok(())
}
