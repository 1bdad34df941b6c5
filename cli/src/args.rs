//! The command line: clap types for every verb and the global flags.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Load, inspect and call Pando runtime adapters (WebAssembly components).
#[derive(Debug, Parser)]
#[command(name = "pando-host", version, about, long_about = None)]
pub struct Cli {
    /// The flags every verb takes.
    #[command(flatten)]
    pub global: Global,
    /// What to do.
    #[command(subcommand)]
    pub verb: Verb,
}

/// Flags every verb takes; they may come before or after the verb.
#[derive(Debug, Args)]
pub struct Global {
    /// The adapter component (a `.wasm` file) to load.
    #[arg(long, env = "PANDO_ADAPTER", global = true, value_name = "COMPONENT")]
    pub adapter: Option<PathBuf>,
    /// The SHA-256 the adapter component must have (hex, or `sha256:HEX`):
    /// a component whose bytes differ is refused before it is compiled.
    #[arg(
        long,
        env = "PANDO_ADAPTER_DIGEST",
        global = true,
        value_name = "SHA256"
    )]
    pub digest: Option<String>,
    /// The adapter's grants (YAML or JSON); none grants only the generic imports.
    #[arg(long, env = "PANDO_GRANTS", global = true, value_name = "FILE")]
    pub grants: Option<PathBuf>,
    /// The adapter's configuration (YAML or JSON), given to its `configure`.
    #[arg(long, env = "PANDO_CONFIG", global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The adapter's limits (YAML or JSON): any fields of the host's
    /// `Limits` (`memory_bytes`, `default_timeout` in milliseconds,
    /// `max_instances`, `max_long_running`, `hostcall_bytes`, …), the rest
    /// at their defaults; an unknown field is refused, naming it.
    #[arg(long, env = "PANDO_LIMITS", global = true, value_name = "FILE")]
    pub limits: Option<PathBuf>,
    /// The kubeconfig for the Kubernetes import. Without it, kubectl's
    /// search: `KUBECONFIG` (a list of files, merged), `~/.kube/config`,
    /// then the in-cluster service account.
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context).
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// The call's deadline: `90`, `90s`, `500ms`, `5m`, `1h` (default: the
    /// adapter's `default_timeout`, 60 s; none for `watch`, `logs -f`,
    /// `run`, `exec` and the volume streams, which end with their work or
    /// Ctrl-C).
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_timeout)]
    pub timeout: Option<Duration>,
    /// Output format.
    #[arg(short = 'o', long = "output", global = true, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// Where precompiled components are kept.
    #[arg(long, global = true, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Compile the component afresh and keep nothing on disk.
    #[arg(long, global = true)]
    pub no_cache: bool,
    /// After the verb, write which Kubernetes grants were used, which were
    /// never needed, and what was denied to FILE (`-`: stderr).
    #[arg(long, global = true, value_name = "FILE")]
    pub grants_report: Option<PathBuf>,
    /// The grants report's form (default: text to a terminal, JSON to a
    /// file or a pipe).
    #[arg(long, global = true, value_enum, value_name = "FORMAT")]
    pub grants_report_format: Option<crate::grants_report::ReportFormat>,
    /// After the verb, write the host's metrics (OpenMetrics text: calls,
    /// instances, denials, throttling, held bytes) to FILE (`-`: stderr).
    #[arg(long, global = true, value_name = "FILE")]
    pub metrics: Option<PathBuf>,
    /// While the verb runs, serve the host's metrics over HTTP at
    /// `http://ADDR/metrics` (e.g. `127.0.0.1:9464`; port 0 takes any, and
    /// the address is printed on stderr). For long-running verbs: `watch`,
    /// `logs --follow`, `exec`, `run`.
    #[arg(long, global = true, value_name = "ADDR")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Format of the host's own log lines on stderr (filtered by `RUST_LOG`,
    /// default `warn`).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Colour in the log lines: `auto` only when stderr is a terminal and
    /// `NO_COLOR` is unset.
    #[arg(long, global = true, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
}

/// When to colour what `pando-host` writes to a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    /// When stderr is a terminal and `NO_COLOR` is unset.
    Auto,
    /// Always, into pipes and files too.
    Always,
    /// Never.
    Never,
}

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Readable text: tables where they help, YAML otherwise.
    Text,
    /// JSON (one document; one line per event for `watch`).
    Json,
    /// YAML.
    Yaml,
    /// JUnit XML: only for `conformance`.
    Junit,
}

/// How the host's log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Check a component and show who it is, without configuring it.
    Inspect {
        /// The component file.
        component: PathBuf,
    },
    /// Write a new adapter crate from the template, ready for `cargo build`
    /// and `conformance`.
    New(crate::new::NewArgs),
    /// Converge an app toward a plan (a BundlePlan in YAML or JSON; `-` reads stdin).
    Apply {
        /// The plan file.
        plan: PathBuf,
    },
    /// Report what exists for an app.
    Observe {
        /// The app's id.
        app: String,
    },
    /// Stop an app's running workloads, keeping everything else.
    Stop {
        /// The app's id.
        app: String,
    },
    /// Remove an app; its volumes are kept unless `--volumes` is given.
    Destroy {
        /// The app's id.
        app: String,
        /// Delete the app's volumes and their data too.
        #[arg(long)]
        volumes: bool,
    },
    /// Stream a workload's log to stdout.
    Logs(LogsArgs),
    /// Open an interactive session in a workload.
    Exec(ExecArgs),
    /// Run a command to completion in a workload; exits with its exit code.
    Run(RunArgs),
    /// Where Pando's proxy reaches a workload's port.
    Upstream {
        /// The app's id.
        app: String,
        /// The workload's name.
        workload: String,
        /// The port.
        port: u16,
    },
    /// What the runtime can hold for Pando.
    Capacity,
    /// The roomiest node for one app.
    LargestFit {
        /// The app's id.
        app: String,
    },
    /// What Pando has on the runtime.
    InUse,
    /// What an app uses.
    Usage {
        /// The app's id.
        app: String,
    },
    /// Whether the runtime can be used now.
    Health,
    /// What the adapter can do.
    Capabilities,
    /// Print workload changes, one per line, until Ctrl-C.
    Watch,
    /// Serve the adapter to a Go program on hashicorp/go-plugin's protocol
    /// (started by its plugin client, not by hand; docs/go.md).
    Serve {
        /// Serve several adapters, each under its name, from one process:
        /// a YAML or JSON file of `NAME: {component, digest, grants, config,
        /// limits, kubeconfig, context}` (paths relative to the file), in
        /// place of `--adapter` and its flags.
        #[arg(long, value_name = "FILE")]
        adapters: Option<PathBuf>,
    },
    /// Volumes: create, snapshot, restore, destroy.
    #[command(subcommand)]
    Volume(VolumeVerb),
    /// The edge: Pando's public entry point.
    #[command(subcommand)]
    Edge(EdgeVerb),
    /// Run a workload once, watched (a TrialRequest in YAML or JSON).
    Trial {
        /// The request file.
        request: PathBuf,
    },
    /// Whether an image can run without importing it.
    HasImage {
        /// The image reference.
        image: String,
    },
    /// Run the conformance suite against an adapter component: one line
    /// per case; exit 1 when any case fails.
    Conformance(ConformanceArgs),
    /// The grants beside the cluster's RBAC: `rbac` prints the RBAC they
    /// need, `check` asks the cluster what the identity may really do.
    #[command(subcommand)]
    Grants(crate::grants_cmd::GrantsVerb),
    /// Print a shell's completion script for `pando-host` (bash, zsh, fish,
    /// elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the JSON Schema of a document `pando-host` reads (grants,
    /// plan, trial, limits), for an editor; `schemas/` holds the same.
    Schema {
        /// The document.
        document: crate::schema::Document,
    },
}

/// `conformance` flags (with the global `--grants`, `--config`,
/// `--kubeconfig`, `--context`; `--timeout` is the longest one case may
/// take).
#[derive(Debug, Args)]
pub struct ConformanceArgs {
    /// The component file.
    pub component: PathBuf,
    /// Only the cases whose id matches (`*` matches anything: `C-APPLY-*`);
    /// repeatable, or comma-separated.
    #[arg(long, value_name = "PATTERN", value_delimiter = ',')]
    pub only: Vec<String>,
    /// What a satisfied apply with pull credentials may still write, as
    /// grants spell resources (default: `secrets`, the pull Secret, O-41);
    /// comma-separated, empty for nothing.
    #[arg(long, value_name = "RESOURCES", value_delimiter = ',')]
    pub rewrites: Option<Vec<String>>,
    /// The image of the test workloads (needs busybox's `sh`, `httpd`,
    /// `wget`, `timeout`; default busybox:1.36).
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// How long to wait for the runtime to settle (a workload to run or
    /// exit, a deletion), in seconds (default 30; the summary line says
    /// how long this runtime took at most).
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout)]
    pub settle: Option<Duration>,
    /// Declares the runtime simulated (its workloads run no commands, as
    /// KWOK's nodes), and why: what only a running workload can show is
    /// then reported unproven or skipped with this reason, not failed.
    #[arg(long, value_name = "REASON")]
    pub simulated: Option<String>,
    /// A plain-HTTP listener outside the runtime that C-CAP-04's restricted
    /// workload's egress rule names, and must reach (`HOST:PORT`; with
    /// `--egress-denied`). Local test cluster: `allowed.outside.test:80`.
    #[arg(long, value_name = "HOST:PORT", requires = "egress_denied")]
    pub egress_allowed: Option<String>,
    /// A plain-HTTP listener outside the runtime that its rule does not
    /// name, which the restricted workload must not reach and an open one
    /// does (`HOST:PORT`; with `--egress-allowed`). Local test cluster:
    /// `denied.outside.test:80`.
    #[arg(long, value_name = "HOST:PORT", requires = "egress_allowed")]
    pub egress_denied: Option<String>,
    /// Where the edge's HTTP port is reached from here (`HOST:PORT`):
    /// C-CAP-02 sends a request through the edge it applies. Local test
    /// cluster with examples/kubernetes-config.yaml: `198.18.0.1:30080`.
    #[arg(long, value_name = "HOST:PORT")]
    pub edge_address: Option<String>,
}

/// `logs` flags.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The app's id.
    pub app: String,
    /// The workload's name.
    pub workload: String,
    /// Keep the stream open and print new output as it comes.
    #[arg(short, long)]
    pub follow: bool,
    /// Only the last N lines.
    #[arg(long, value_name = "N")]
    pub tail: Option<u64>,
    /// Only output newer than this many seconds.
    #[arg(long, value_name = "SECS")]
    pub since: Option<u64>,
    /// Prefix every line with its RFC 3339 time.
    #[arg(long)]
    pub timestamps: bool,
    /// Stop after this many bytes.
    #[arg(long, value_name = "N")]
    pub limit_bytes: Option<u64>,
}

/// `exec` flags.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The app's id.
    pub app: String,
    /// The workload's name.
    pub workload: String,
    /// Allocate a terminal (stdout and stderr are then one stream).
    #[arg(short, long)]
    pub tty: bool,
    /// Copy our stdin to the process's stdin.
    #[arg(short, long)]
    pub interactive: bool,
    /// The program and its arguments (after `--`).
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `run` flags.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The app's id.
    pub app: String,
    /// The workload's name.
    pub workload: String,
    /// An environment variable for this command, `NAME=VALUE` (repeatable).
    #[arg(short, long = "env", value_name = "NAME=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,
    /// The program and its arguments (after `--`).
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `volume` verbs.
#[derive(Debug, Subcommand)]
pub enum VolumeVerb {
    /// Make a volume for an app.
    Create {
        /// The app's id.
        app: String,
        /// The volume's name.
        name: String,
        /// Its size in bytes (suffixes Ki, Mi, Gi, Ti allowed); default: the adapter's.
        #[arg(long, value_name = "BYTES", value_parser = parse_size)]
        size: Option<u64>,
    },
    /// Write a volume's contents (a tar stream) to a file or stdout.
    Snapshot {
        /// The app's id.
        app: String,
        /// The volume's name.
        name: String,
        /// Where to write; `-` (the default) is stdout.
        #[arg(short, long, value_name = "FILE", default_value = "-")]
        file: PathBuf,
    },
    /// Replace a volume's contents with a tar stream from a file or stdin.
    Restore {
        /// The app's id.
        app: String,
        /// The volume's name.
        name: String,
        /// Where to read; `-` (the default) is stdin.
        #[arg(short, long, value_name = "FILE", default_value = "-")]
        file: PathBuf,
    },
    /// Delete a volume and its data.
    Destroy {
        /// The app's id.
        app: String,
        /// The volume's name.
        name: String,
    },
}

/// `edge` verbs.
#[derive(Debug, Subcommand)]
pub enum EdgeVerb {
    /// Create or update the edge from a plan (an EdgePlan in YAML or JSON).
    Apply {
        /// The plan file.
        plan: PathBuf,
    },
    /// Whether an edge serves.
    Observe {
        /// The edge's name.
        name: String,
    },
    /// Remove an edge and everything made for it.
    Remove {
        /// The edge's name.
        name: String,
    },
    /// The edges that exist.
    List,
}

/// A duration: a number with an optional unit, `ms`, `s` (the default),
/// `m` or `h`, as kubectl's `--request-timeout` reads them.
pub fn parse_timeout(s: &str) -> Result<Duration, String> {
    let form = "write a number with an optional unit: `90`, `90s`, `500ms`, `5m`, `1h`";
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "m" => 60.0,
        "h" => 3600.0,
        other => return Err(format!("`{s}`: unknown unit `{other}`; {form}")),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{s}` is not a duration; {form}"))?;
    let secs = value * scale;
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("the timeout must be positive, not `{s}`"));
    }
    Duration::try_from_secs_f64(secs).map_err(|e| format!("`{s}`: {e}"))
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
        _ => Err(format!("`{s}` is not NAME=VALUE")),
    }
}

/// A size in bytes, with an optional binary suffix (`Ki`, `Mi`, `Gi`, `Ti`).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, shift) = [("Ki", 10), ("Mi", 20), ("Gi", 30), ("Ti", 40)]
        .iter()
        .find_map(|(suffix, shift)| t.strip_suffix(suffix).map(|d| (d, *shift)))
        .unwrap_or((t, 0));
    let n: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a size in bytes (e.g. 1073741824 or 1Gi)"))?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("`{s}` is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_size("1Gi"), Ok(1 << 30));
        assert_eq!(parse_size("512"), Ok(512));
        assert!(parse_size("1GB").is_err());
    }
}
