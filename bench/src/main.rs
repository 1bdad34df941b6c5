//! `pando-bench`: the benchmarks of issue 7. Each measures something
//! through Pando's adapter host and the same thing done natively, side by
//! side in one run, and reports medians, spreads and their ratio.
//!
//! ```text
//! pando-bench [--quick] [--only NAME]... [--max-apps N] [--out FILE.json]
//!             [--ratios FILE] [--compare-to docs/benchmarks.md]
//! pando-bench list
//! pando-bench child MODE ...        (the bench spawns itself for fresh processes)
//! ```
//!
//! `scripts/bench` builds what it needs and runs this. docs/benchmarks.md
//! says what each benchmark measures and what its native twin is.

mod audit;
mod benches;
mod child;
mod cpu;
mod env;
mod machine;
mod mem;
mod ratios;
mod report;
mod roundtrips;
mod stats;

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result, bail};
use clap::{Parser, Subcommand};
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::report::{Bench, Report};

/// Benchmarks of the adapter host against native twins.
#[derive(Parser, Debug)]
#[command(name = "pando-bench", version)]
struct Cli {
    /// The short run for CI: a handful of iterations each, the observe pass
    /// only at 100 apps with a 5-second window, the log at 16 MiB.
    #[arg(long, global = true)]
    quick: bool,
    /// Run only these benchmarks (repeat or separate with commas; see
    /// `list`).
    #[arg(long, value_delimiter = ',', global = true)]
    only: Vec<String>,
    /// The observe benchmark's largest N (100, 1000 or 10000; it also
    /// skips 10,000 on its own when making 1,000 apps was slow).
    #[arg(long, default_value_t = 10_000, global = true)]
    max_apps: usize,
    /// Also write the results as JSON here.
    #[arg(long, global = true)]
    out: Option<PathBuf>,
    /// Also write each row's ratio (host ÷ twin) here, one `bench/row =
    /// ratio` per line.
    #[arg(long, global = true)]
    ratios: Option<PathBuf>,
    /// Print the change of each ratio against those committed in this
    /// markdown file (docs/benchmarks.md's marked block for this binary's
    /// build: release, or dev when built as the tests are).
    #[arg(long, global = true)]
    compare_to: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Lists the benchmarks.
    List,
    /// A fresh process that measures one thing and prints it as JSON (the
    /// bench runs this itself).
    #[command(hide = true)]
    Child {
        #[command(subcommand)]
        mode: child::Mode,
    },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    init_tracing();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    match cli.command {
        Some(Command::List) => {
            for (name, what) in benches::ALL {
                println!("{name:10} {what}");
            }
            Ok(())
        }
        Some(Command::Child { mode }) => runtime.block_on(child::run(mode)),
        None => runtime.block_on(run_all(&cli)),
    }
}

/// Logs to stderr (`RUST_LOG`, default: the bench's progress and
/// warnings), and counts the host's audit events for the benchmarks that
/// report API requests. Both layers filter on their own, so the host's
/// `adapter_call` spans stay disabled unless a benchmark enables them.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,pando_bench=info"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_filter(filter);
    tracing_subscriber::registry()
        .with(fmt)
        .with(audit::layer())
        .init();
}

async fn run_all(cli: &Cli) -> Result<()> {
    let (quick, only, out) = (cli.quick, &cli.only, cli.out.as_deref());
    for name in only {
        if !benches::ALL.iter().any(|(n, _)| n == name) {
            bail!("no benchmark named `{name}` (see `pando-bench list`)");
        }
    }
    let started = Instant::now();
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let machine = machine::Machine::read();
    println!(
        "pando-bench{} ({} build): {}",
        if quick { " --quick" } else { "" },
        ratios::BUILD,
        machine.summary()
    );
    let mut report = Report {
        machine,
        quick,
        build: ratios::BUILD,
        started_unix,
        seconds: 0.0,
        benches: Vec::new(),
    };
    for (name, what) in benches::ALL {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            continue;
        }
        tracing::info!(bench = name, "running");
        let t = Instant::now();
        let mut bench = match benches::run(name, quick, cli.max_apps).await {
            Ok(b) => b,
            // One benchmark failing (the cluster hiccups) should not lose
            // the others: report it and go on.
            Err(e) => Bench::skipped(name, what, format!("failed: {e:#}")),
        };
        bench.seconds = t.elapsed().as_secs_f64();
        print!("{}", report::table(&bench));
        std::io::stdout().flush().ok();
        report.benches.push(bench);
    }
    report.seconds = started.elapsed().as_secs_f64();
    println!("\ntotal {:.1} s", report.seconds);
    if let Some(path) = out {
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))?;
        tracing::info!(path = %path.display(), "results written");
    }
    let now = ratios::of(&report);
    if let Some(path) = &cli.ratios {
        ratios::write(path, &now)?;
        tracing::info!(path = %path.display(), "ratios written");
    }
    if let Some(path) = &cli.compare_to {
        let md =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        print!(
            "{}",
            ratios::compare(&now, &ratios::committed(&md, ratios::BUILD))
        );
    }
    let failed: Vec<&str> = report
        .benches
        .iter()
        .filter(|b| {
            b.skipped
                .as_deref()
                .is_some_and(|s| s.starts_with("failed"))
        })
        .map(|b| b.name.as_str())
        .collect();
    if !failed.is_empty() {
        bail!("benchmarks failed: {}", failed.join(", "));
    }
    Ok(())
}
