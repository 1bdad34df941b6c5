//! What every verb but `inspect` starts from: the host, the loaded adapter,
//! and the call's context (its deadline, and Ctrl-C as its cancellation).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pando_host::limits::Limits;
use pando_host::{Adapter, CallContext, Grants, Host, LoadOptions, LoadProgress, ProgressHook};
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use super::args::Global;
use super::failure::{Failure, Outcome};
use super::input;

/// Builds the host with the cache flags.
pub fn host(global: &Global) -> Outcome<Host> {
    let mut builder = Host::builder();
    if let Some(dir) = &global.cache_dir {
        builder = builder.cache_dir(dir);
    }
    if global.no_cache {
        builder = builder.no_cache();
    }
    Ok(builder.build()?)
}

/// The grants named by `--grants`, or none.
pub fn grants(global: &Global) -> Outcome<Grants> {
    grants_at(global.grants.as_deref())
}

fn grants_at(path: Option<&Path>) -> Outcome<Grants> {
    match path {
        Some(path) => Ok(Grants::from_path(path)?),
        None => Ok(Grants::none()),
    }
}

/// The client the Kubernetes import sends with: `--kubeconfig` (and
/// `--context`), else the usual inference (`KUBECONFIG`, `~/.kube/config`,
/// the in-cluster service account). Only built when the grants allow the
/// Kubernetes API at all.
pub async fn kubernetes(
    grants: &Grants,
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Outcome<Option<kube::Client>> {
    if grants.kubernetes.is_none() {
        return Ok(None);
    }
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    let config = match kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| Failure::input(format!("kubeconfig {}: {e}", path.display())))?;
            kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|e| Failure::input(format!("kubeconfig {}: {e}", path.display())))?
        }
        None if context.is_some() => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|e| Failure::input(format!("kubeconfig context: {e}")))?,
        None => kube::Config::infer().await.map_err(|e| {
            Failure::input(format!(
                "the grants allow the Kubernetes API but no cluster was found ({e}); \
                 pass --kubeconfig FILE"
            ))
        })?,
    };
    let client = kube::Client::try_from(config)
        .map_err(|e| Failure::input(format!("building the Kubernetes client: {e}")))?;
    Ok(Some(client))
}

/// The limits named by `--limits`, or the defaults.
pub fn limits(global: &Global) -> Outcome<Limits> {
    limits_at(global.limits.as_deref())
}

fn limits_at(path: Option<&Path>) -> Outcome<Limits> {
    match path {
        Some(path) => input::read_document(path),
        None => Ok(Limits::default()),
    }
}

/// Where an adapter comes from and what it is given: the component and
/// the files and flags every verb loads it with.
#[derive(Debug, Clone, Default)]
pub struct Source {
    /// The component (a `.wasm` file).
    pub component: PathBuf,
    /// The SHA-256 it must have.
    pub digest: Option<String>,
    /// Its grants file.
    pub grants: Option<PathBuf>,
    /// Its configuration file.
    pub config: Option<PathBuf>,
    /// Its limits file.
    pub limits: Option<PathBuf>,
    /// The kubeconfig of its Kubernetes import.
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context.
    pub context: Option<String>,
}

impl Source {
    /// The adapter the global flags name (`--adapter`, `--grants`, …).
    pub fn of(global: &Global) -> Outcome<Source> {
        let component = global.adapter.clone().ok_or_else(|| {
            Failure::input("no adapter given: pass --adapter COMPONENT or set PANDO_ADAPTER")
        })?;
        Ok(Source {
            component,
            digest: global.digest.clone(),
            grants: global.grants.clone(),
            config: global.config.clone(),
            limits: global.limits.clone(),
            kubeconfig: global.kubeconfig.clone(),
            context: global.context.clone(),
        })
    }
}

/// Loads the adapter named by `--adapter` with the grants, configuration,
/// limits and Kubernetes flags.
pub async fn load(global: &Global) -> Outcome<Adapter> {
    let source = Source::of(global)?;
    load_source(&host(global)?, &source).await
}

/// Loads the adapter `source` describes into `host`.
pub async fn load_source(host: &Host, source: &Source) -> Outcome<Adapter> {
    let config = match &source.config {
        Some(file) => input::read_config(file)?,
        None => "{}".to_string(),
    };
    let grants = grants_at(source.grants.as_deref())?;
    let limits = limits_at(source.limits.as_deref())?;
    let client = kubernetes(
        &grants,
        source.kubeconfig.as_deref(),
        source.context.as_deref(),
    )
    .await?;
    let options = LoadOptions {
        grants,
        config,
        limits,
        kubernetes: client,
        expected_digest: source.digest.clone(),
        progress: compile_progress(),
        ..LoadOptions::default()
    };
    Ok(host.load_file(&source.component, options).await?)
}
/// On a terminal, a line while a first load compiles (seconds on a small
/// machine) and one when it is done, as cargo and docker show progress
/// there; nothing into pipes and logs, whose readers parse stderr.
fn compile_progress() -> Option<ProgressHook> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    Some(Arc::new(|event: &LoadProgress| match event {
        LoadProgress::Compiling { what, bytes } => eprintln!(
            "compiling {what} ({:.1} MB) for this machine; later loads use the compile cache",
            *bytes as f64 / 1e6
        ),
        LoadProgress::Compiled {
            elapsed, cached, ..
        } => eprintln!(
            "compiled in {:.1} s{}",
            elapsed.as_secs_f64(),
            if *cached {
                ""
            } else {
                " (not cached: every load compiles)"
            }
        ),
        _ => {}
    }))
}

/// A call's context: `--timeout` or the adapter's default, cancelled by
/// Ctrl-C.
pub fn call_context(timeout: Option<Duration>, cancel: &CancellationToken) -> CallContext {
    let ctx = CallContext::new(cancel.clone());
    match timeout {
        Some(t) => ctx.with_timeout(t),
        None => ctx,
    }
}

/// A long-running call's context (a watch, a followed log, a session):
/// `--timeout` if given, else no deadline.
pub fn long_context(timeout: Option<Duration>, cancel: &CancellationToken) -> CallContext {
    let ctx = CallContext::new(cancel.clone());
    match timeout {
        Some(t) => ctx.with_timeout(t),
        None => ctx.without_deadline(),
    }
}

/// Cancels `token` on the first Ctrl-C; a second one ends the process
/// (exit 130).
///
/// The handler is installed before this returns, not when the spawned task
/// is first polled: a verb that goes on without yielding (an `exec -t -i`
/// that puts the terminal in raw mode) could otherwise take an interrupt
/// under the default action, which kills the process with the terminal raw.
pub fn cancel_on_interrupt(token: CancellationToken) {
    let mut interrupts = match signal(SignalKind::interrupt()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "Ctrl-C cannot cancel calls: installing its handler failed");
            return;
        }
    };
    tokio::spawn(async move {
        if interrupts.recv().await.is_none() {
            return;
        }
        eprintln!("interrupted: cancelling the call (Ctrl-C again to quit now)");
        token.cancel();
        if interrupts.recv().await.is_some() {
            // `exit` runs no destructors: an `exec -t -i` terminal is put back here.
            crate::terminal::restore();
            std::process::exit(130);
        }
    });
}

/// A loaded adapter and what its calls run with.
pub struct Call {
    /// The adapter.
    pub adapter: Adapter,
    /// How results are printed.
    pub format: super::args::Format,
    /// `--timeout`.
    pub timeout: Option<Duration>,
    /// Cancelled by Ctrl-C.
    pub cancel: CancellationToken,
}

impl Call {
    /// An ordinary call's context.
    pub fn ctx(&self) -> CallContext {
        call_context(self.timeout, &self.cancel)
    }

    /// A long-running call's context.
    pub fn long_ctx(&self) -> CallContext {
        long_context(self.timeout, &self.cancel)
    }
}
