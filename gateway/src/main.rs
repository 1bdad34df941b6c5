//! `pando`: Pando's binary in the egress gateway image. Its one subcommand, `egress-gateway`,
//! is the command line the Kubernetes adapter gives the gateway's pod
//! (adapter-kubernetes/src/egress.rs); see the library's doc for what it lets through.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use pando_gateway::{Allow, Config, Rule};
use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};
use tracing::{info, warn};

#[derive(Parser)]
#[command(
    name = "pando",
    version,
    about = "Pando's binary in its container images"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// An HTTP(S) proxy that lets a restricted app out only to the allowed hosts and ports.
    EgressGateway(GatewayArgs),
}

#[derive(Parser)]
struct GatewayArgs {
    /// Where to listen: `:PORT` (every address), `PORT`, `ADDRESS:PORT` or `[ADDRESS]:PORT`.
    #[arg(long, value_parser = parse_listen)]
    listen: Listen,
    /// `HOST` (any port) or `HOST:PORT`; `*.example.com` is every subdomain of example.com, not
    /// example.com itself; an address is admitted only by a rule naming it. Repeat per rule.
    #[arg(long = "allow", value_name = "HOST[:PORT]")]
    allow: Vec<Rule>,
    /// Largest request head, in bytes; a larger one gets 431.
    #[arg(long, default_value_t = 16 * 1024)]
    max_head_bytes: usize,
    /// How long a client may take to send its request head (`30s`, `500ms`, `5m`).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    head_timeout: Duration,
    /// How long resolving and connecting to the destination may take; then 504.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    connect_timeout: Duration,
    /// How long a tunnel or a forwarded exchange may move nothing before it is closed.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    idle_timeout: Duration,
    /// Most client connections at once; beyond it a client gets 503.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: u32,
    /// After SIGTERM, how long open connections may finish before they are cut.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    shutdown_grace: Duration,
    /// How log lines are written to stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Json)]
    log_format: LogFormat,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    /// One JSON object per line.
    Json,
    /// Human-readable `key=value` lines.
    Text,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Listen {
    /// Every address, IPv6 and IPv4 where the pod has IPv6, IPv4 alone otherwise.
    Any(u16),
    At(SocketAddr),
}

fn parse_listen(text: &str) -> Result<Listen, String> {
    let port = |p: &str| {
        p.parse::<u16>()
            .map_err(|_| format!("`{p}` is not a port number"))
    };
    if let Some(p) = text.strip_prefix(':') {
        return port(p).map(Listen::Any);
    }
    if text.bytes().all(|b| b.is_ascii_digit()) {
        return port(text).map(Listen::Any);
    }
    text.parse::<SocketAddr>()
        .map(Listen::At)
        .map_err(|_| format!("`{text}` is neither `:PORT` nor `ADDRESS:PORT`"))
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration such as `30s`, `500ms` or `5m`"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" | "" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n.saturating_mul(60))),
        "h" => Ok(Duration::from_secs(n.saturating_mul(3600))),
        _ => Err(format!("`{text}`: the unit is one of ms, s, m, h")),
    }
}

async fn bind(listen: &Listen) -> Result<TcpListener> {
    match listen {
        Listen::At(addr) => TcpListener::bind(addr)
            .await
            .with_context(|| format!("listening on {addr}")),
        // `[::]` takes IPv4 too on Linux; a pod without IPv6 cannot bind it.
        Listen::Any(port) => match TcpListener::bind((Ipv6Addr::UNSPECIFIED, *port)).await {
            Ok(l) => Ok(l),
            Err(_) => TcpListener::bind((Ipv4Addr::UNSPECIFIED, *port))
                .await
                .with_context(|| format!("listening on port {port}")),
        },
    }
}

async fn egress_gateway(args: GatewayArgs) -> Result<()> {
    if args.max_head_bytes < 256 {
        bail!(
            "--max-head-bytes {} is too small for any request",
            args.max_head_bytes
        );
    }
    let listener = bind(&args.listen).await?;
    let rules: Vec<&str> = args.allow.iter().map(Rule::as_str).collect();
    if rules.is_empty() {
        warn!("no --allow rules: every request will be refused");
    }
    info!(listen = %listener.local_addr()?, allow = ?rules, "egress gateway listening");
    let mut config = Config::new(Allow::new(args.allow));
    config.max_head_bytes = args.max_head_bytes;
    config.head_timeout = args.head_timeout;
    config.connect_timeout = args.connect_timeout;
    config.idle_timeout = args.idle_timeout;
    config.max_connections = args.max_connections as usize;
    config.shutdown_grace = args.shutdown_grace;
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let shutdown = async move {
        tokio::select! {
            _ = term.recv() => info!(signal = "SIGTERM", "shutting down"),
            _ = tokio::signal::ctrl_c() => info!(signal = "SIGINT", "shutting down"),
        }
    };
    pando_gateway::serve(listener, config, shutdown)
        .await
        .context("serving")
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let Command::EgressGateway(args) = cli.command;
    let filter = tracing_subscriber::EnvFilter::try_from_env("PANDO_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match args.log_format {
        LogFormat::Json => logs.json().flatten_event(true).init(),
        LogFormat::Text => logs.init(),
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?
        .block_on(egress_gateway(args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses() {
        assert_eq!(parse_listen(":3128"), Ok(Listen::Any(3128)));
        assert_eq!(parse_listen("3128"), Ok(Listen::Any(3128)));
        assert_eq!(
            parse_listen("127.0.0.1:0"),
            Ok(Listen::At("127.0.0.1:0".parse().unwrap()))
        );
        assert!(parse_listen("[::1]:80").is_ok());
        assert!(parse_listen(":99999").is_err());
        assert!(parse_listen("localhost:80").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("5 s").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("1d").is_err());
    }

    #[test]
    fn the_adapters_command_line_parses() {
        let cli = Cli::try_parse_from([
            "/usr/local/bin/pando",
            "egress-gateway",
            "--listen",
            ":3128",
            "--allow",
            "api.example.com:443",
            "--allow",
            "*.example.com",
        ])
        .unwrap();
        let Command::EgressGateway(args) = cli.command;
        assert_eq!(args.listen, Listen::Any(3128));
        assert_eq!(args.allow.len(), 2);
        assert!(
            Cli::try_parse_from([
                "pando",
                "egress-gateway",
                "--listen",
                ":1",
                "--allow",
                "a.*.b"
            ])
            .is_err()
        );
    }
}
