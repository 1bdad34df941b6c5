//! The `pando-host` command line (its own crate, so that the library core
//! links carries no CLI dependencies): parse, load the adapter, make the call,
//! print the result, exit with a code that says how it went.
//!
//! Exit codes: 0 success; 1 the call failed; 2 usage or input error (a bad
//! flag, an unreadable or invalid file, a component that does not load);
//! `run` and `exec` exit with the command's own code; 130 after Ctrl-C.

pub mod args;
pub mod conformance;
pub mod failure;
pub mod grants_cmd;
pub mod grants_report;
pub mod input;
pub mod inspect;
pub mod metrics_http;
pub mod new;
pub mod output;
pub mod plan;
pub mod schema;
#[cfg(feature = "serve")]
pub mod serve;
pub mod session;
pub mod shell;
pub mod streams;
pub mod terminal;
pub mod verbs;

use std::process::ExitCode;

use clap::Parser;
use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;

use args::{Cli, Color, Format, Global, LogFormat, Verb, VolumeVerb};
use failure::{Failure, Outcome};
use session::Call;

/// Runs the command line; the process's exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.global.log_format, cli.global.color);
    let format = cli.global.output;
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return report(format, Failure::other("starting the async runtime", e)),
    };
    let result = runtime.block_on(dispatch(cli));
    // A read of stdin may still be blocked in a worker thread: do not wait
    // for it.
    runtime.shutdown_background();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => report(format, failure),
    }
}

/// Log lines on stderr, filtered by `RUST_LOG` (default `warn`), coloured
/// as `--color` says.
fn init_logging(format: LogFormat, color: Color) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    // A span's close is the one event a call makes by itself (`adapter_call`
    // with its method, outcome and duration): shown at `info`.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        // Colour by default only for a terminal: escape codes in a pipe or
        // a file are noise to every reader but a terminal.
        .with_ansi(shell::colour(color))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Prints a failure on stderr (one JSON line with `-o json`, else a line
/// of text), so stdout holds only the verb's output; its exit code.
fn report(format: Format, failure: Failure) -> ExitCode {
    if let Some(message) = failure.message() {
        if format == Format::Json {
            let doc = serde_json::json!({
                "error": { "kind": failure.kind(), "message": message }
            });
            eprintln!("{doc}");
        } else {
            eprintln!("error: {message}");
        }
    }
    ExitCode::from(failure.exit_code())
}

async fn dispatch(cli: Cli) -> Outcome {
    let Cli { global, verb } = cli;
    let loads_none = matches!(
        verb,
        Verb::Conformance(_)
            | Verb::Completions { .. }
            | Verb::Grants(_)
            | Verb::New(_)
            | Verb::Inspect { .. }
            | Verb::Schema { .. }
    );
    if let (Some(addr), true) = (global.metrics_listen, loads_none) {
        return Err(Failure::input(format!(
            "--metrics-listen {addr}: this verb runs no loaded adapter to serve the metrics of; \
             use it with a verb that calls one (`watch`, `logs -f`, `exec`, `run`, …)"
        )));
    }
    if let Verb::Conformance(args) = &verb {
        return conformance::conformance(&global, args).await;
    }
    if global.output == Format::Junit {
        return Err(Failure::input(
            "`-o junit` is only for `conformance`; use text, json or yaml",
        ));
    }
    if let Verb::Completions { shell } = &verb {
        return shell::completions(*shell);
    }
    if let Verb::Schema { document } = &verb {
        return schema::print(*document);
    }
    if let Verb::Grants(g) = &verb {
        return grants_cmd::run(&global, g).await;
    }
    if let Verb::New(args) = &verb {
        return new::new(args);
    }
    if let Verb::Inspect { component } = &verb {
        return inspect::inspect(&global, component).await;
    }
    if let Verb::Serve { adapters } = &verb {
        return serve(&global, adapters.as_deref()).await;
    }
    let adapter = session::load(&global).await?;
    // Held to the end of the verb: dropped, it stops serving.
    let _endpoint = match global.metrics_listen {
        Some(addr) => {
            let endpoint = metrics_http::serve(addr, adapter.clone()).await?;
            eprintln!("serving metrics on http://{}/metrics", endpoint.addr());
            Some(endpoint)
        }
        None => None,
    };
    // Installed after loading: until then Ctrl-C ends the process as usual.
    let cancel = CancellationToken::new();
    session::cancel_on_interrupt(cancel.clone());
    let call = Call {
        adapter,
        format: global.output,
        timeout: global.timeout,
        cancel,
    };
    let result = run_verb(&call, &verb).await;
    if let Some(path) = &global.grants_report {
        let format = global
            .grants_report_format
            .unwrap_or_else(|| grants_report::default_format(path));
        write_grants_report(&call.adapter, path, format)?;
    }
    if let Some(path) = &global.metrics {
        write_out("the metrics", path, call.adapter.metrics())?;
    }
    match result {
        Err(Failure::Call(e)) if call.cancel.is_cancelled() && e.kind() == "cancelled" => {
            eprintln!("cancelled");
            Err(Failure::Exit(streams::EXIT_INTERRUPTED))
        }
        other => other,
    }
}

/// `serve`: the plugin host's environment checked first (a run by hand
/// fails at once, saying what the verb is for), then the adapter loaded as
/// every verb loads it, then served until the plugin host stops it. A load
/// that fails prints the host's words on stderr, where the Go side reads
/// them into its error.
#[cfg(feature = "serve")]
async fn serve(global: &Global, file: Option<&std::path::Path>) -> Outcome {
    let version = pando_serve::preflight().map_err(|e| Failure::input(e.to_string()))?;
    let sources = serve::sources(global, file)?;
    let adapters = pando_serve::Adapters::new(serve::load(global, sources).await?);
    pando_serve::serve(adapters, version)
        .await
        .map_err(|e| Failure::other("pando-host serve", e))
}

/// `serve` in a build without it (the fuzz crate's).
#[cfg(not(feature = "serve"))]
async fn serve(_: &Global, _: Option<&std::path::Path>) -> Outcome {
    Err(Failure::input(
        "this pando-host was built without the `serve` feature (cargo's default): rebuild it \
         with `--features serve`",
    ))
}

/// `text` to `path`, or to stderr for `-` (stdout is the verb's).
fn write_out(what: &str, path: &std::path::Path, text: String) -> Outcome {
    if path.as_os_str() == "-" {
        eprint!("{text}");
        return Ok(());
    }
    std::fs::write(path, text)
        .map_err(|e| Failure::input(format!("writing {what} to {}: {e}", path.display())))
}

/// The grant usage report, after the verb ran (whatever its outcome).
fn write_grants_report(
    adapter: &pando_host::Adapter,
    path: &std::path::Path,
    format: grants_report::ReportFormat,
) -> Outcome {
    let Some(report) = adapter.grant_report() else {
        eprintln!("note: no grants report: the adapter has no Kubernetes grants");
        return Ok(());
    };
    let text = grants_report::render(&report, format)
        .map_err(|e| Failure::input(format!("rendering the grants report: {e}")))?;
    write_out("the grants report", path, text)?;
    Ok(())
}

async fn run_verb(call: &Call, verb: &Verb) -> Outcome {
    match verb {
        Verb::Inspect { .. } => Err(Failure::input("inspect takes no adapter")),
        Verb::New(_) => Err(Failure::input("new takes no adapter")),
        Verb::Apply { plan } => verbs::apply(call, plan).await,
        Verb::Observe { app } => verbs::observe(call, app).await,
        Verb::Stop { app } => verbs::stop(call, app).await,
        Verb::Destroy { app, volumes } => verbs::destroy(call, app, *volumes).await,
        Verb::Logs(a) => streams::logs(call, a).await,
        Verb::Exec(a) => streams::exec(call, a).await,
        Verb::Run(a) => streams::run(call, a).await,
        Verb::Upstream {
            app,
            workload,
            port,
        } => verbs::upstream(call, app, workload, *port).await,
        Verb::Capacity => verbs::capacity(call).await,
        Verb::LargestFit { app } => verbs::largest_fit(call, app).await,
        Verb::InUse => verbs::in_use(call).await,
        Verb::Usage { app } => verbs::usage(call, app).await,
        Verb::Health => verbs::health(call).await,
        Verb::Capabilities => verbs::capabilities(call).await,
        Verb::Watch => streams::watch(call).await,
        Verb::Volume(v) => match v {
            VolumeVerb::Create { app, name, size } => {
                verbs::volume_create(call, app, name, *size).await
            }
            VolumeVerb::Snapshot { app, name, file } => {
                streams::snapshot(call, app, name, file).await
            }
            VolumeVerb::Restore { app, name, file } => {
                streams::restore(call, app, name, file).await
            }
            VolumeVerb::Destroy { app, name } => verbs::volume_destroy(call, app, name).await,
        },
        Verb::Edge(e) => verbs::edge(call, e).await,
        Verb::Trial { request } => verbs::trial(call, request).await,
        Verb::HasImage { image } => verbs::has_image(call, image).await,
        Verb::Conformance(_) => Err(Failure::input("conformance loads the adapter itself")),
        Verb::Serve { .. } => Err(Failure::input("serve loads the adapter itself")),
        Verb::Grants(_) | Verb::Completions { .. } | Verb::Schema { .. } => {
            Err(Failure::input("this verb takes no adapter"))
        }
    }
}
