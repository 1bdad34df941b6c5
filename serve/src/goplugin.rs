//! hashicorp/go-plugin's protocol, from the plugin's side, as its guide for
//! plugins not written in Go gives it: check the magic cookie, agree on the
//! application protocol version, listen on a unix socket only this user can
//! reach, print the handshake line, and serve gRPC with the health service
//! (`plugin` SERVING), the controller (`Shutdown`) and stdio beside ours
//! (the adapter service, and call channels for its unary calls);
//! stop when told to, on SIGTERM, or when the parent process is gone.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use futures::Stream;
use tokio::net::UnixListener;
use tokio::signal::unix::{SignalKind, signal};
use tokio_stream::wrappers::UnixListenerStream;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use crate::call::Adapters;
use crate::calls::CallChannels;
use crate::channel::Channels;
use crate::pb;
use crate::pb::plugin;
use crate::service::{AdapterService, MAX_MESSAGE};

/// The environment variable a go-plugin host sets to say it started us.
pub const MAGIC_COOKIE_KEY: &str = "PANDO_HOST_PLUGIN";
/// Its value (a constant shared with the Go module, `pandohost.Handshake`):
/// not a secret, a guard against running the binary by hand as a plugin.
pub const MAGIC_COOKIE_VALUE: &str = "9f6c0c5e-wasm-adapters-b1c8";
/// go-plugin's own protocol version.
pub const CORE_PROTOCOL_VERSION: u32 = 1;
/// The application protocol versions served: 1 is the contract 0.1 service
/// (`pando.runtime.v0_1.Adapter`).
pub const APP_PROTOCOL_VERSIONS: &[u32] = &[1];

/// Why serving could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Not started by a go-plugin host.
    #[error(
        "this is a plugin for a Go program that loads it through hashicorp/go-plugin \
         (docs/go.md); it was not started by one ({MAGIC_COOKIE_KEY} is not set to the \
         handshake's value). To load an adapter from Go, use the pandohost package"
    )]
    NotAPluginHost,
    /// The host offers no application protocol version we serve.
    #[error(
        "the plugin host speaks application protocol versions {offered}; this pando-host serves \
         {served:?}: use a pandohost Go module and a pando-host of the same release"
    )]
    NoCommonVersion {
        /// What PLUGIN_PROTOCOL_VERSIONS offered.
        offered: String,
        /// What this build serves.
        served: &'static [u32],
    },
    /// The host asked for automatic mutual TLS.
    #[error(
        "the plugin host asked for go-plugin's AutoMTLS (PLUGIN_CLIENT_CERT is set), which \
         pando-host serve does not offer: its socket is reachable by this user only (mode 0600 \
         in a 0700 directory). Leave AutoMTLS off in the plugin.ClientConfig"
    )]
    AutoMtls,
    /// The socket could not be made.
    #[error("making the plugin socket in {dir}: {source}")]
    Socket {
        /// Where.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `PLUGIN_UNIX_SOCKET_GROUP` names no group.
    #[error("PLUGIN_UNIX_SOCKET_GROUP is `{0}`, which is no group id or name in /etc/group")]
    Group(String),
    /// Writing the handshake failed.
    #[error("writing the handshake line to stdout: {0}")]
    Handshake(std::io::Error),
    /// The gRPC server failed.
    #[error("serving gRPC: {0}")]
    Serve(#[from] tonic::transport::Error),
}

/// What a plugin host's environment asks, checked before anything is
/// loaded: started by a go-plugin host, no AutoMTLS, a version both speak.
/// The application protocol version to serve.
pub fn preflight() -> Result<u32, ServeError> {
    if std::env::var(MAGIC_COOKIE_KEY).ok().as_deref() != Some(MAGIC_COOKIE_VALUE) {
        return Err(ServeError::NotAPluginHost);
    }
    if std::env::var_os("PLUGIN_CLIENT_CERT").is_some_and(|v| !v.is_empty()) {
        return Err(ServeError::AutoMtls);
    }
    negotiate(std::env::var("PLUGIN_PROTOCOL_VERSIONS").ok().as_deref())
}

/// Serves `adapters` with application protocol `version` (from
/// [`preflight`]) until the host says stop, sends SIGTERM, or exits.
pub async fn serve(adapters: Adapters, version: u32) -> Result<(), ServeError> {
    let parent = std::env::var_os("PLUGIN_UNIX_SOCKET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = private_dir(&parent).map_err(|source| ServeError::Socket {
        dir: parent.clone(),
        source,
    })?;
    let _cleanup = RemoveOnDrop(dir.clone());
    let path = dir.join("plugin.sock");
    let listener = UnixListener::bind(&path).map_err(|source| ServeError::Socket {
        dir: dir.clone(),
        source,
    })?;
    let mode = match std::env::var("PLUGIN_UNIX_SOCKET_GROUP") {
        Ok(group) if !group.is_empty() => {
            let gid = gid(&group).ok_or(ServeError::Group(group))?;
            let chown = |p: &Path| std::os::unix::fs::chown(p, None, Some(gid));
            chown(&dir)
                .and_then(|()| chown(&path))
                .and_then(|()| {
                    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750))
                })
                .map_err(|source| ServeError::Socket {
                    dir: dir.clone(),
                    source,
                })?;
            0o660
        }
        _ => 0o600,
    };
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).map_err(|source| {
        ServeError::Socket {
            dir: dir.clone(),
            source,
        }
    })?;

    let stop = CancellationToken::new();
    watch_for_stop(stop.clone());

    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_service_status("plugin", tonic_health::ServingStatus::Serving)
        .await;
    tracing::info!(
        socket = %path.display(),
        adapters = ?adapters.names(),
        version,
        "serving on go-plugin's protocol"
    );
    let line = format!(
        "{CORE_PROTOCOL_VERSION}|{version}|unix|{}|grpc\n",
        path.display()
    );
    {
        let mut out = std::io::stdout().lock();
        out.write_all(line.as_bytes())
            .and_then(|()| out.flush())
            .map_err(ServeError::Handshake)?;
    }

    let channels = Channels::in_dir(dir.clone());
    let adapter = pb::adapter_server::AdapterServer::new(
        AdapterService::new(adapters).with_channels(channels.clone()),
    )
    .max_decoding_message_size(MAX_MESSAGE)
    .max_encoding_message_size(MAX_MESSAGE);
    tonic::transport::Server::builder()
        .add_service(health_service)
        .add_service(plugin::grpc_controller_server::GrpcControllerServer::new(
            Controller { stop: stop.clone() },
        ))
        .add_service(plugin::grpc_stdio_server::GrpcStdioServer::new(Stdio {
            stop: stop.clone(),
        }))
        .add_service(adapter.clone())
        .add_service(pb::calls::call_channels_server::CallChannelsServer::new(
            CallChannels::new(adapter, channels, stop.clone()),
        ))
        .serve_with_incoming_shutdown(UnixListenerStream::new(listener), stop.cancelled_owned())
        .await?;
    tracing::info!("stopped serving");
    Ok(())
}

/// The highest version both sides speak; a host that offers none is
/// served version 1 (go-plugin's default).
pub fn negotiate(offered: Option<&str>) -> Result<u32, ServeError> {
    let Some(offered) = offered.filter(|s| !s.trim().is_empty()) else {
        return Ok(APP_PROTOCOL_VERSIONS[0]);
    };
    offered
        .split(',')
        .filter_map(|v| v.trim().parse::<u32>().ok())
        .filter(|v| APP_PROTOCOL_VERSIONS.contains(v))
        .max()
        .ok_or_else(|| ServeError::NoCommonVersion {
            offered: offered.to_string(),
            served: APP_PROTOCOL_VERSIONS,
        })
}

/// A new directory only this user can enter, under `parent`.
fn private_dir(parent: &Path) -> std::io::Result<PathBuf> {
    let pid = std::process::id();
    for attempt in 0..100u32 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = parent.join(format!("pando-host-{pid}-{nanos:08x}{attempt}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(
        "no free directory name after 100 tries",
    ))
}

/// A numeric gid, or a group's name looked up in /etc/group.
fn gid(group: &str) -> Option<u32> {
    if let Ok(n) = group.parse() {
        return Some(n);
    }
    let groups = std::fs::read_to_string("/etc/group").ok()?;
    groups.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next()? == group).then_some(())?;
        f.nth(1)?.parse().ok()
    })
}

struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.0) {
            tracing::warn!(dir = %self.0.display(), error = %e, "removing the plugin socket's directory");
        }
    }
}

/// SIGTERM stops; SIGINT is ignored (the host forwards a terminal's Ctrl-C
/// to its plugins, then stops them itself once its own work is done, as
/// go-plugin's Go plugins do); the parent going away stops.
fn watch_for_stop(stop: CancellationToken) {
    let parent = std::os::unix::process::parent_id();
    tokio::spawn(async move {
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            tracing::warn!("cannot watch for signals; stopping only when told to");
            return;
        };
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        loop {
            tokio::select! {
                _ = term.recv() => {
                    tracing::info!("SIGTERM: stopping");
                    break;
                }
                _ = int.recv() => tracing::debug!("SIGINT ignored: the plugin host stops us"),
                _ = tick.tick() => {
                    if std::os::unix::process::parent_id() != parent {
                        tracing::warn!("the plugin host is gone: stopping");
                        break;
                    }
                }
                () = stop.cancelled() => return,
            }
        }
        stop.cancel();
    });
}

struct Controller {
    stop: CancellationToken,
}

#[tonic::async_trait]
impl plugin::grpc_controller_server::GrpcController for Controller {
    async fn shutdown(&self, _: Request<plugin::Empty>) -> Result<Response<plugin::Empty>, Status> {
        tracing::info!("the plugin host asked us to stop");
        // After the answer has gone out.
        let stop = self.stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            stop.cancel();
        });
        Ok(Response::new(plugin::Empty {}))
    }
}

struct Stdio {
    stop: CancellationToken,
}

type StdioStream = Pin<Box<dyn Stream<Item = Result<plugin::StdioData, Status>> + Send>>;

#[tonic::async_trait]
impl plugin::grpc_stdio_server::GrpcStdio for Stdio {
    type StreamStdioStream = StdioStream;

    /// Nothing: our stdout carries only the handshake and our logs go to
    /// stderr, which go-plugin reads itself. The stream stays open until we
    /// stop, as the client expects of a plugin that has nothing to say.
    async fn stream_stdio(
        &self,
        _: Request<()>,
    ) -> Result<Response<Self::StreamStdioStream>, Status> {
        let stop = self.stop.clone();
        let s = futures::stream::once(async move {
            stop.cancelled().await;
            Err(Status::unavailable("the plugin is stopping"))
        });
        Ok(Response::new(Box::pin(s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_common_version_is_chosen_and_none_is_refused() {
        assert_eq!(negotiate(None).ok(), Some(1));
        assert_eq!(negotiate(Some("")).ok(), Some(1));
        assert_eq!(negotiate(Some("1")).ok(), Some(1));
        assert_eq!(negotiate(Some("3, 1")).ok(), Some(1));
        let err = negotiate(Some("2,3"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("2,3") && err.contains("[1]"), "{err}");
    }

    #[test]
    fn a_private_directory_is_for_this_user_only() {
        let parent = std::env::temp_dir();
        let dir = private_dir(&parent).expect("a directory");
        let mode = std::fs::metadata(&dir)
            .expect("metadata")
            .permissions()
            .mode()
            & 0o777;
        std::fs::remove_dir(&dir).expect("removed");
        assert_eq!(mode, 0o700);
    }
}
