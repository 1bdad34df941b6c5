//! What every verb but `inspect` starts from: the host, the loaded adapter,
//! and the call's context (its deadline, and Ctrl-C as its cancellation).

use std::path::{Path, PathBuf};
use std::time::Duration;

use pando_host::imports::kubernetes::KubeContext;
use pando_host::{Adapter, CallContext, Grants, Host, LoadOptions};
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
    match &global.grants {
        Some(path) => Ok(Grants::from_path(path)?),
        None => Ok(Grants::none()),
    }
}

/// The Kubernetes import's wiring for `--kubeconfig` and `--context`.
///
/// The host's Kubernetes import is not implemented yet ([`KubeContext`] is a
/// placeholder), so this says so on stderr when either flag is given and
/// wires nothing. Replace this function when the import lands.
pub fn kubernetes(kubeconfig: Option<&Path>, context: Option<&str>) -> Option<KubeContext> {
    if kubeconfig.is_some() || context.is_some() {
        eprintln!(
            "note: --kubeconfig/--context (or KUBECONFIG) given, but the Kubernetes import is not \
             available in this build of pando-host yet; the adapter's Kubernetes calls will fail"
        );
    }
    None
}

/// Loads the adapter named by `--adapter` with the grants, configuration
/// and Kubernetes flags.
pub async fn load(global: &Global) -> Outcome<Adapter> {
    let path: &PathBuf = global.adapter.as_ref().ok_or_else(|| {
        Failure::input("no adapter given: pass --adapter COMPONENT or set PANDO_ADAPTER")
    })?;
    let config = match &global.config {
        Some(file) => input::read_config(file)?,
        None => "{}".to_string(),
    };
    let options = LoadOptions {
        grants: grants(global)?,
        config,
        kubernetes: kubernetes(global.kubeconfig.as_deref(), global.context.as_deref()),
        ..LoadOptions::default()
    };
    let host = host(global)?;
    Ok(host.load_file(path, options).await?)
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
pub fn cancel_on_interrupt(token: CancellationToken) {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        eprintln!("interrupted: cancelling the call (Ctrl-C again to quit now)");
        token.cancel();
        if tokio::signal::ctrl_c().await.is_ok() {
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
