//! Capabilities mean what they say: a call whose capability is not
//! declared answers `unsupported`, and one that is declared answers
//! something else. Exec, run, logs and snapshots are checked the same way
//! by their own cases; these are the capabilities no other case uses.

use std::collections::BTreeSet;
use std::time::Duration;

use pando_host::types::{
    EgressPolicy, NetworkRules, Port, Protocol, RuntimeCapabilities, TrialRequest,
};

use super::cases::{EDGE, EGRESS, IMAGE_IMPORT, TRIAL};
use super::declared::{Capability, not_shown};
use super::fixture::{Check, Fixture, Notes, answered, fail};
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
        super::edge::edge(fx, &caps.clone()?, notes).await
    })
    .await;
    let trial_app = fx.bundle_id("trial");
    fx.case(&TRIAL, async |fx, notes| {
        trial(fx, &caps.clone()?, &trial_app, notes).await
    })
    .await;
    let egress_apps = super::egress::Apps {
        restricted: fx.bundle_id("egress"),
        open: fx.bundle_id("egress-open"),
    };
    fx.case(&EGRESS, async |fx, notes| {
        super::egress::egress(fx, &caps.clone()?, &egress_apps, notes).await
    })
    .await;
    for app in [trial_app, egress_apps.restricted, egress_apps.open] {
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

/// Declared: a short trial of the server workload reports exactly the
/// socket it listens on (not the port its spec declares), and reports writes exactly when write observation
/// is declared. Not declared: `unsupported`.
async fn trial(
    fx: &Fixture<'_>,
    caps: &RuntimeCapabilities,
    app: &str,
    notes: &mut Notes,
) -> Check {
    // It declares a port its command does not listen on, and not the one
    // it does: a trial that reports the spec's ports, not the sockets it
    // saw, fails.
    let mut workload = fx.server();
    workload.ports = vec![Port {
        name: Some("declared".into()),
        port: plans::DECLARED_ONLY_PORT,
        protocol: Protocol::Tcp,
    }];
    let request = TrialRequest {
        bundle: app.into(),
        workload,
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
    match (&result.writes, caps.write_observation) {
        (None, true) => {
            return Err(not_shown(
                Capability::WriteObservation,
                "a 3-second trial of `server`, whose command writes a file, reported no writes \
                 (`writes` is none)",
                fx.simulated(),
            ));
        }
        (Some(writes), false) => {
            return Err(fail(format!(
                "trial reported writes {writes:?} while write observation is not declared: \
                 core reads `writes` only where it is"
            )));
        }
        _ => {}
    }
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
         listens on ({}/tcp; its spec declares {}/tcp, on which nothing listens){}",
        plans::SERVER,
        ports(&reported),
        plans::PORT,
        plans::DECLARED_ONLY_PORT,
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
