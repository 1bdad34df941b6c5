//! The verbs that are one call in, one value out.

use std::path::Path;

use pando_host::types::{
    BundlePlan, BundleRef, DestroyOptions, EdgePlan, TrialRequest, VolumeHandle, VolumeRequest,
    WorkloadRef,
};
use serde::Serialize;

use super::args::{EdgeVerb, Format};
use super::failure::Outcome;
use super::input;
use super::output::{self, Field};
use super::plan;
use super::session::Call;

fn bundle(app: &str) -> BundleRef {
    BundleRef { id: app.into() }
}

/// A handle for a volume named by its app and name: that identity finds it
/// again, so the runtime's location is left empty.
pub fn volume_handle(app: &str, name: &str) -> VolumeHandle {
    VolumeHandle {
        bundle: app.into(),
        name: name.into(),
        location: String::new(),
    }
}

/// What a verb that returns nothing prints: `{"ok": true}` in JSON and YAML,
/// a sentence in text.
fn done(format: Format, sentence: &str) -> Outcome {
    #[derive(Serialize)]
    struct Done {
        ok: bool,
    }
    output::print(format, &Done { ok: true }, |_| format!("{sentence}\n"))
}

/// `apply PLAN`.
pub async fn apply(call: &Call, plan: &Path) -> Outcome {
    let plan: BundlePlan = input::read_normalized(plan, plan::normalize_plan)?;
    let handle = call.adapter.apply(&call.ctx(), &plan).await?;
    output::print(call.format, &handle, |h| {
        format!("applied {} (at {})\n", h.id, h.location)
    })
}

/// `observe APP`.
pub async fn observe(call: &Call, app: &str) -> Outcome {
    let observed = call.adapter.observe(&call.ctx(), &bundle(app)).await?;
    output::print(call.format, &observed, output::observed)
}

/// `stop APP`.
pub async fn stop(call: &Call, app: &str) -> Outcome {
    call.adapter.stop(&call.ctx(), &bundle(app)).await?;
    done(call.format, &format!("stopped {app}"))
}

/// `destroy APP [--volumes]`.
pub async fn destroy(call: &Call, app: &str, volumes: bool) -> Outcome {
    let options = DestroyOptions {
        keep_volumes: !volumes,
    };
    call.adapter
        .destroy(&call.ctx(), &bundle(app), options)
        .await?;
    let what = if volumes {
        format!("destroyed {app} and its volumes")
    } else {
        format!("destroyed {app} (volumes kept)")
    };
    done(call.format, &what)
}

/// `upstream APP WORKLOAD PORT`.
pub async fn upstream(call: &Call, app: &str, workload: &str, port: u16) -> Outcome {
    let wref = WorkloadRef {
        bundle: app.into(),
        workload: workload.into(),
    };
    let up = call.adapter.upstream(&call.ctx(), &wref, port).await?;
    output::print(call.format, &up, |u| format!("{}:{}\n", u.host, u.port))
}

/// `capacity`.
pub async fn capacity(call: &Call) -> Outcome {
    let report = call.adapter.capacity(&call.ctx()).await?;
    output::print(call.format, &report, output::capacity)
}

/// `largest-fit APP`.
pub async fn largest_fit(call: &Call, app: &str) -> Outcome {
    let fit = call.adapter.largest_fit_for(&call.ctx(), app).await?;
    output::print(call.format, &fit, |f| match f {
        Some(f) => format!("{} ({})\n", f.node, output::resources(&f.free)),
        None => "no eligible node\n".into(),
    })
}

/// `in-use`.
pub async fn in_use(call: &Call) -> Outcome {
    let report = call.adapter.in_use(&call.ctx()).await?;
    output::print(call.format, &report, |r| {
        let volumes = r
            .volumes
            .iter()
            .map(|v| format!("{}/{} ({})", v.bundle, v.name, v.location))
            .collect();
        output::aligned(&[
            ("apps", Field::Many(r.bundles.clone())),
            ("volumes", Field::Many(volumes)),
            ("requested", Field::One(output::resources(&r.requested))),
        ])
    })
}

/// `usage APP`.
pub async fn usage(call: &Call, app: &str) -> Outcome {
    let usage = call.adapter.usage(&call.ctx(), &bundle(app)).await?;
    output::print(call.format, &usage, |u| {
        let mut rows = vec![vec![
            "WORKLOAD".to_string(),
            "REQUESTED".into(),
            "USED".into(),
        ]];
        for w in &u.workloads {
            rows.push(vec![
                w.name.clone(),
                output::resources(&w.requested),
                w.used
                    .as_ref()
                    .map_or_else(|| "-".into(), output::resources),
            ]);
        }
        let workloads = if u.workloads.is_empty() {
            "no workloads\n".to_string()
        } else {
            output::table(&rows)
        };
        format!("{workloads}volumes: {}\n", output::bytes(u.volume_bytes))
    })
}

/// `health`.
pub async fn health(call: &Call) -> Outcome {
    call.adapter.health_check(&call.ctx()).await?;
    done(call.format, "healthy")
}

/// `capabilities`.
pub async fn capabilities(call: &Call) -> Outcome {
    let caps = call.adapter.capabilities(&call.ctx()).await?;
    output::print_plain(call.format, &caps)
}

/// `volume create APP NAME [--size BYTES]`.
pub async fn volume_create(call: &Call, app: &str, name: &str, size: Option<u64>) -> Outcome {
    let request = VolumeRequest {
        bundle: app.into(),
        name: name.into(),
        size_bytes: size,
    };
    let handle = call.adapter.create_volume(&call.ctx(), &request).await?;
    output::print(call.format, &handle, |h| {
        format!(
            "created volume {}/{} (at {})\n",
            h.bundle, h.name, h.location
        )
    })
}

/// `volume destroy APP NAME`.
pub async fn volume_destroy(call: &Call, app: &str, name: &str) -> Outcome {
    call.adapter
        .destroy_volume(&call.ctx(), &volume_handle(app, name))
        .await?;
    done(call.format, &format!("destroyed volume {app}/{name}"))
}

/// `edge …`.
pub async fn edge(call: &Call, verb: &EdgeVerb) -> Outcome {
    let ctx = call.ctx();
    match verb {
        EdgeVerb::Apply { plan } => {
            let plan: EdgePlan = input::read_normalized(plan, |_| {})?;
            call.adapter.apply_edge(&ctx, &plan).await?;
            done(call.format, &format!("applied edge {}", plan.name))
        }
        EdgeVerb::Observe { name } => {
            let state = call.adapter.observe_edge(&ctx, name).await?;
            output::print(call.format, &state, output::edge)
        }
        EdgeVerb::Remove { name } => {
            call.adapter.remove_edge(&ctx, name).await?;
            done(call.format, &format!("removed edge {name}"))
        }
        EdgeVerb::List => {
            let edges = call.adapter.edges(&ctx).await?;
            output::print(call.format, &edges, |e| {
                e.iter().map(|n| format!("{n}\n")).collect::<String>()
            })
        }
    }
}

/// `trial REQUEST_FILE`.
pub async fn trial(call: &Call, request: &Path) -> Outcome {
    let request: TrialRequest = input::read_normalized(request, plan::normalize_trial)?;
    let result = call.adapter.trial(&call.ctx(), &request).await?;
    output::print_plain(call.format, &result)
}

/// `has-image IMAGE`.
pub async fn has_image(call: &Call, image: &str) -> Outcome {
    let has = call.adapter.has_image(&call.ctx(), image).await?;
    output::print(call.format, &has, |h| format!("{h}\n"))
}
