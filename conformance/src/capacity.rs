//! Capacity with an app running: the numbers agree with
//! each other and with what the app asked for, and reading them writes
//! nothing. Only relations that hold whatever else the runtime runs are
//! checked: other apps may come and go meanwhile.

use super::fixture::{Check, Fixture, Notes, bref, ensure, failed, unmeasured_note};
use super::plans::{SERVER, server_requests};

pub(crate) async fn check(fx: &Fixture<'_>, app: &str, notes: &mut Notes) -> Check {
    let ctx = fx.ctx();
    let (answers, sent) = fx
        .measured(async {
            (
                fx.adapter.capacity(&ctx).await,
                fx.adapter.in_use(&ctx).await,
                fx.adapter.usage(&ctx, &bref(app)).await,
                fx.adapter.largest_fit_for(&ctx, app).await,
            )
        })
        .await;
    let (capacity, in_use, usage, fit) = answers;
    let capacity = capacity.map_err(|e| failed("capacity", &e))?;
    let in_use = in_use.map_err(|e| failed("in-use", &e))?;
    let usage = usage.map_err(|e| failed("usage", &e))?;
    let fit = fit.map_err(|e| failed("largest-fit-for", &e))?;
    let asked = server_requests();

    ensure!(
        (capacity.nodes == 0) == capacity.largest_fit.is_none(),
        "capacity reports {} eligible node(s) but largest fit {:?}",
        capacity.nodes,
        capacity.largest_fit
    );
    if let Some(largest) = &capacity.largest_fit {
        ensure!(
            largest.free.cpu_millis <= capacity.total.cpu_millis
                && largest.free.memory_bytes <= capacity.total.memory_bytes,
            "the largest fit ({:?} on {}) is more than the total ({:?})",
            largest.free,
            largest.node,
            capacity.total
        );
        ensure!(
            fit.is_some(),
            "largest-fit-for the app is none while capacity has a largest fit"
        );
    }
    let workload = usage.workloads.iter().find(|w| w.name == SERVER);
    ensure!(
        workload.is_some_and(|w| w.requested == asked),
        "usage of the app does not report `{SERVER}` requesting what its plan asks ({asked:?}): {:?}",
        usage.workloads
    );
    ensure!(
        usage.volume_bytes == 0,
        "usage reports {} bytes of volumes for an app that has none",
        usage.volume_bytes
    );
    ensure!(
        in_use.bundles.iter().any(|b| b == app),
        "in-use does not list the running app `{app}`"
    );
    ensure!(
        in_use.requested.cpu_millis >= asked.cpu_millis
            && in_use.requested.memory_bytes >= asked.memory_bytes,
        "in-use requests {:?}, less than the running app alone ({asked:?})",
        in_use.requested
    );
    match sent {
        Some(sent) => ensure!(
            sent.writes() == 0,
            "reading capacity and usage wrote: {}",
            sent.only_writes()
        ),
        None => notes.push(unmeasured_note()),
    }
    Ok(())
}
