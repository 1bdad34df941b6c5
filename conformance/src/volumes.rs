//! Volumes: destroy keeps them by default and removes them when asked
//! the snapshot case is [`super::snapshot`].

use pando_host::types::{DestroyOptions, ObservedBundle, WorkloadPhase};

use super::cases::{DESTROY_ALL, DESTROY_KEEP};
use super::fixture::{Fixture, bref, describe, ensure, failed};
use super::plans::{self, VOLUME};

pub(crate) async fn run(fx: &mut Fixture<'_>) {
    destroy(fx).await;
    super::snapshot::snapshot(fx).await;
}

fn has_volume(seen: &ObservedBundle) -> bool {
    seen.volumes.iter().any(|v| v.name == VOLUME)
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
