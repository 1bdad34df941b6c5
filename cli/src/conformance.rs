//! `conformance COMPONENT`: the conformance suite
//! ([`pando_conformance`]) against a component, loaded with the
//! global `--grants`, `--config`, `--kubeconfig` and `--context`.
//!
//! Text prints each case's line as it ends, then a summary; JSON, YAML
//! and JUnit print the report at the end. Exit 0 when no case failed and
//! every declared capability was proven, 1 when a case failed,
//! [`EXIT_UNPROVEN`] (3) when none failed but a declared capability could
//! not be proven, 2 for a usage error or an adapter that does not load.

use std::sync::Arc;

use pando_conformance::{self as conformance, CaseResult, Options, Target, Verdict};
use pando_host::LoadOptions;

use super::args::{ConformanceArgs, Format, Global};
use super::failure::{EXIT_CALL, Failure, Outcome};
use super::{input, output, session};

/// Exit status of a run where no case failed but a declared capability
/// could not be proven (an `UNPROVEN` case): told apart from 0, so a CI
/// gate does not read it as proven, and from 1, since nothing failed.
pub const EXIT_UNPROVEN: u8 = 3;

/// Runs the suite and prints its report.
pub async fn conformance(global: &Global, args: &ConformanceArgs) -> Outcome {
    let config = match &global.config {
        Some(file) => input::read_config(file)?,
        None => "{}".to_string(),
    };
    let grants = session::grants(global)?;
    let client = session::kubernetes(
        &grants,
        global.kubeconfig.as_deref(),
        global.context.as_deref(),
    )
    .await?;
    let target = Target {
        host: session::host(global)?,
        component: args.component.clone(),
        load: LoadOptions {
            grants,
            config,
            limits: session::limits(global)?,
            kubernetes: client,
            expected_digest: global.digest.clone(),
            ..LoadOptions::default()
        },
    };
    if global.grants_report.is_some() {
        // The suite loads the adapter several times; one report would
        // mix them.
        eprintln!("note: conformance writes no grants report");
    }
    let options = options(global, args)?;
    let report = conformance::run(&target, &options)
        .await
        .map_err(|e| match e {
            conformance::Error::Load(e) => Failure::Load(e),
        })?;
    let rendered = match global.output {
        // The lines were printed as the cases ended.
        Format::Text => format!("{}\n", report.summary()),
        Format::Json => output::json(&report)?,
        Format::Yaml => output::yaml(&report)?,
        Format::Junit => report.to_junit(),
    };
    output::write_stdout(&rendered)?;
    match report.verdict() {
        Verdict::Proven => Ok(()),
        Verdict::Unproven => Err(Failure::Exit(EXIT_UNPROVEN)),
        Verdict::Failed => Err(Failure::Exit(EXIT_CALL)),
    }
}

/// The suite's options from the flags.
fn options(global: &Global, args: &ConformanceArgs) -> Outcome<Options> {
    let mut options = Options {
        only: args
            .only
            .iter()
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect(),
        ..Options::default()
    };
    if let Some(rewrites) = &args.rewrites {
        options.rewrites = rewrites
            .iter()
            .map(|r| r.trim().to_string())
            .filter(|r| !r.is_empty())
            .collect();
    }
    if let Some(image) = &args.image {
        options.image = image.clone();
    }
    if let Some(settle) = args.settle {
        options.settle_timeout = settle;
    }
    if let Some(limit) = global.timeout {
        options.case_timeout = limit;
    }
    if global.output == Format::Text {
        options.progress = Some(Arc::new(print_case));
    }
    if let Some(why) = &args.simulated {
        options.environment = Some(Arc::new(Simulated(why.trim().to_string())));
    }
    // clap requires both egress flags or neither.
    if let (Some(allowed), Some(denied)) = (&args.egress_allowed, &args.egress_denied) {
        let probe = conformance::EgressProbe::new(allowed, denied)
            .map_err(|e| Failure::input(format!("--egress-allowed/--egress-denied: {e}")))?;
        options.egress_probe = Some(probe);
    }
    if let Some(address) = &args.edge_address {
        conformance::check_host_port(address)
            .map_err(|e| Failure::input(format!("--edge-address: {e}")))?;
        options.edge_probe = Some(address.clone());
    }
    Ok(options)
}

/// The runtime `--simulated` declares simulated, and why; it does nothing
/// for the suite (no workload ended, no storage provided from outside).
struct Simulated(String);

impl conformance::Environment for Simulated {
    fn simulated(&self) -> Option<String> {
        Some(format!("--simulated: {}", self.0))
    }
}

/// A case's line and notes, as soon as it ends.
fn print_case(case: &CaseResult) {
    let mut text = case.line();
    text.push('\n');
    for note in &case.notes {
        text.push_str("    note: ");
        text.push_str(note);
        text.push('\n');
    }
    // A closed stdout is reported once, at the end.
    let _ = output::write_stdout(&text);
}
