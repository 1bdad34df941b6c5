//! Capabilities mean what they say: a call whose capability is not
//! declared answers `unsupported`, and one that is declared answers
//! something else. Exec, run, logs and snapshots are checked the same way
//! by their own cases; these are the capabilities no other case uses.

use std::collections::BTreeSet;
use std::time::Duration;

use pando_host::types::{
    EdgePlan, EgressPolicy, EgressRule, NetworkRules, Protocol, ResourceRequirements, Resources,
    RuntimeCapabilities, TrialRequest,
};

use super::cases::{EDGE, EGRESS, IMAGE_IMPORT, TRIAL};
use super::declared::{Capability, not_shown};
use super::fixture::{Check, Fixture, Notes, answered, ensure, unmeasured_note};
use super::plans;

pub(crate) async fn run(fx: &mut Fixture<'_>) {
    if !fx.wants_any(&[IMAGE_IMPORT, EDGE, TRIAL, EGRESS]) {
        return;
    }
    let caps = fx.capabilities().await;
    fx.case(&IMAGE_IMPORT, async |fx, notes| {
        image_import(fx, &caps.clone()?, notes).await
    })
    .await;
    fx.case(&EDGE, async |fx, notes| {
        edge(fx, &caps.clone()?, notes).await
    })
    .await;
    let trial_app = fx.bundle_id("trial");
    fx.case(&TRIAL, async |fx, notes| {
        trial(fx, &caps.clone()?, &trial_app, notes).await
    })
    .await;
    let egress_app = fx.bundle_id("egress");
    fx.case(&EGRESS, async |fx, notes| {
        egress(fx, &caps.clone()?, &egress_app, notes).await
    })
    .await;
    for app in [trial_app, egress_app] {
        fx.cleanup(&app).await;
    }
}

/// Declared: an empty stream is not an image, which is `invalid`, not
/// `unsupported`. Not declared: `unsupported`, whatever the stream.
async fn image_import(fx: &Fixture<'_>, caps: &RuntimeCapabilities, notes: &mut Notes) -> Check {
    let ctx = fx.ctx();
    let call = fx.adapter.import_image(&ctx, tokio::io::empty());
    if caps.image_import {
        let what = "import-image of an empty stream";
        let r = fx
            .declared_answer(Capability::ImageImport, what, call)
            .await?;
        answered(what, r, false, &["invalid"])?;
    } else {
        answered(
            "import-image (image import is not declared)",
            call.await,
            false,
            &["unsupported"],
        )?;
        notes.not_declared(
            Capability::ImageImport,
            "import-image answered `unsupported` as required",
        );
    }
    Ok(())
}

/// Declared: the edges are listed and an unknown one is `not-found`. Not
/// declared: every edge call is `unsupported`. No edge is applied: the
/// edge is shared by the whole runtime.
async fn edge(fx: &Fixture<'_>, caps: &RuntimeCapabilities, notes: &mut Notes) -> Check {
    let ctx = fx.ctx();
    let name = fx.bundle_id("edge");
    if caps.edge {
        let edges = fx
            .declared(Capability::Edge, "edges", fx.adapter.edges(&ctx))
            .await?;
        ensure!(
            !edges.contains(&name),
            "edges lists `{name}`, which was never applied"
        );
        fx.declared(
            Capability::Edge,
            "edge-volumes",
            fx.adapter.edge_volumes(&ctx),
        )
        .await?;
        let what = "observe-edge of an unknown edge";
        let r = fx
            .declared_answer(Capability::Edge, what, fx.adapter.observe_edge(&ctx, &name))
            .await?;
        answered(what, r, false, &["not-found"])?;
        return Ok(());
    }
    let unsupported = ["unsupported"];
    let plan = EdgePlan {
        name: name.clone(),
        image: fx.options.image.clone(),
        command: vec![],
        args: vec![],
        env: vec![],
        replicas: None,
        http_port: 80,
        https_port: 443,
        resources: ResourceRequirements {
            requests: Resources {
                cpu_millis: 10,
                memory_bytes: 16 << 20,
            },
            limits: None,
        },
    };
    let what = |call: &str| format!("{call} (the edge is not declared)");
    let r = fx.adapter.apply_edge(&ctx, &plan).await;
    answered(&what("apply-edge"), r, false, &unsupported)?;
    let r = fx.adapter.observe_edge(&ctx, &name).await;
    answered(&what("observe-edge"), r, false, &unsupported)?;
    let r = fx.adapter.remove_edge(&ctx, &name).await;
    answered(&what("remove-edge"), r, false, &unsupported)?;
    let r = fx.adapter.edges(&ctx).await;
    answered(&what("edges"), r, false, &unsupported)?;
    let r = fx.adapter.edge_volumes(&ctx).await;
    answered(&what("edge-volumes"), r, false, &unsupported)?;
    notes.not_declared(
        Capability::Edge,
        "all five edge calls answered `unsupported` as required",
    );
    Ok(())
}

/// Declared: a short trial of the server workload reports exactly the
/// socket it listens on, and reports writes exactly when write observation
/// is declared. Not declared: `unsupported`.
async fn trial(
    fx: &Fixture<'_>,
    caps: &RuntimeCapabilities,
    app: &str,
    notes: &mut Notes,
) -> Check {
    let request = TrialRequest {
        bundle: app.into(),
        workload: fx.server(),
        network: NetworkRules {
            egress: EgressPolicy::None,
        },
        pull_credentials: vec![],
        duration_ms: 3000,
    };
    // The trial watches for its duration; the rest is the runtime's.
    let ctx = fx
        .ctx()
        .with_timeout(Duration::from_millis(request.duration_ms) + fx.options.settle_timeout);
    let call = fx.adapter.trial(&ctx, &request);
    if !caps.trial {
        answered(
            "trial (trial is not declared)",
            call.await,
            false,
            &["unsupported"],
        )?;
        notes.not_declared(Capability::Trial, "answered `unsupported` as required");
        return Ok(());
    }
    let result = fx
        .declared(Capability::Trial, "a 3-second trial of `server`", call)
        .await?;
    ensure!(
        result.writes.is_some() == caps.write_observation,
        "trial reported writes {:?} while write observation is {}declared",
        result.writes,
        if caps.write_observation { "" } else { "not " }
    );
    // what it reports is what the workload did. `server` listens on
    // exactly one socket, TCP `PORT` (busybox httpd), for as long as it runs.
    let reported: BTreeSet<(u16, &str)> = result
        .listening
        .iter()
        .map(|l| (l.port, protocol(l.protocol)))
        .collect();
    let expected: BTreeSet<(u16, &str)> = [(plans::PORT, "tcp")].into();
    if reported == expected {
        return Ok(());
    }
    let said = format!(
        "the trial of `{}` reported listening on [{}], not exactly the one socket its command \
         listens on ({}/tcp){}",
        plans::SERVER,
        ports(&reported),
        plans::PORT,
        match result.exit_code {
            Some(code) => format!("; it reported the workload exited {code}, which it does not"),
            None => String::new(),
        }
    );
    Err(not_shown(Capability::Trial, &said, fx.simulated()))
}

/// A protocol as sockets are written: `tcp`.
fn protocol(p: Protocol) -> &'static str {
    match p {
        Protocol::Tcp => "tcp",
        Protocol::Udp => "udp",
    }
}

/// Sockets as `8080/tcp, 53/udp`.
fn ports(sockets: &BTreeSet<(u16, &str)>) -> String {
    sockets
        .iter()
        .map(|(port, protocol)| format!("{port}/{protocol}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An egress rule naming a DNS name can be enforced only by an adapter
/// that declares egress restriction. Not declared: the plan is
/// `unsupported` and nothing is written. Declared: it applies.
async fn egress(
    fx: &Fixture<'_>,
    caps: &RuntimeCapabilities,
    app: &str,
    notes: &mut Notes,
) -> Check {
    let mut plan = plans::plan(app, vec![fx.server()]);
    plan.network.egress = EgressPolicy::Restricted(vec![EgressRule {
        destination: "api.conformance.invalid".into(),
        ports: vec![443],
    }]);
    let before = fx.refusals();
    let (r, sent) = fx.measured(fx.adapter.apply(&fx.ctx(), &plan)).await;
    if caps.egress_restriction {
        let what = "apply of a plan with egress restricted to a DNS name";
        fx.held_to(Capability::EgressRestriction, what, before, &r)?;
        r.map_err(|e| super::fixture::failed(what, &e))?;
        return Ok(());
    }
    answered(
        "apply of a plan with egress restricted to a DNS name (egress restriction is not declared)",
        r,
        false,
        &["unsupported"],
    )?;
    match sent {
        Some(sent) => ensure!(
            sent.writes() == 0,
            "the refused plan wrote: {}",
            sent.only_writes()
        ),
        None => notes.push(unmeasured_note()),
    }
    notes.not_declared(
        Capability::EgressRestriction,
        "the restricted plan answered `unsupported` as required and wrote nothing",
    );
    Ok(())
}
