//! The server: accepting within the connection bound, reading one request, deciding, connecting,
//! answering, relaying, and draining on shutdown.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tracing::{debug, info, warn};

use crate::allow::{Allow, Decision, Host};
use crate::head::{self, Destination, HeadError, Request};
use crate::relay::{self, ResponseError};

/// How names are turned into addresses.
#[derive(Debug, Clone, Default)]
pub enum Resolver {
    /// The system's resolver (`/etc/hosts`, then the pod's DNS).
    #[default]
    System,
    /// Only these names, each to its addresses; any other name does not resolve. Tests use it
    /// so that no lookup leaves the machine.
    Fixed(HashMap<String, Vec<IpAddr>>),
}

impl Resolver {
    async fn resolve(&self, name: &str, port: u16) -> Result<Vec<SocketAddr>, Failure> {
        match self {
            Resolver::System => tokio::net::lookup_host((name, port))
                .await
                .map(Iterator::collect)
                .map_err(|e| Failure::BadGateway(format!("cannot resolve {name}: {e}"))),
            Resolver::Fixed(map) => Ok(map
                .get(name)
                .into_iter()
                .flatten()
                .map(|ip| SocketAddr::new(*ip, port))
                .collect()),
        }
    }
}

/// Everything the gateway is told.
#[derive(Debug, Clone)]
pub struct Config {
    /// What may be connected to.
    pub allow: Allow,
    /// Largest request head, request line and fields, in bytes.
    pub max_head_bytes: usize,
    /// How long a client may take to send its request head.
    pub head_timeout: Duration,
    /// How long resolving and connecting to the upstream may take.
    pub connect_timeout: Duration,
    /// How long a tunnel or a forwarded exchange may move nothing before it is closed.
    pub idle_timeout: Duration,
    /// Most client connections at once; beyond it a client gets 503.
    pub max_connections: usize,
    /// How long open connections may finish after shutdown begins.
    pub shutdown_grace: Duration,
    /// How names are resolved.
    pub resolver: Resolver,
}

impl Config {
    /// The command line's defaults with these rules.
    pub fn new(allow: Allow) -> Config {
        Config {
            allow,
            max_head_bytes: 16 * 1024,
            head_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            max_connections: 512,
            shutdown_grace: Duration::from_secs(10),
            resolver: Resolver::System,
        }
    }
}

/// Why a request gets an error answer instead of its upstream.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("{0}")]
    BadRequest(String),
    #[error("the request head is larger than {0} bytes or has more than 100 fields")]
    TooLarge(usize),
    #[error("{0}")]
    Forbidden(String),
    #[error("no complete request head within {0:?}")]
    HeadTimeout(Duration),
    #[error("{0}")]
    BadGateway(String),
    #[error("{0}")]
    GatewayTimeout(String),
}

impl Failure {
    fn status(&self) -> (u16, &'static str) {
        match self {
            Failure::BadRequest(_) => (400, "Bad Request"),
            Failure::Forbidden(_) => (403, "Forbidden"),
            Failure::HeadTimeout(_) => (408, "Request Timeout"),
            Failure::TooLarge(_) => (431, "Request Header Fields Too Large"),
            Failure::BadGateway(_) => (502, "Bad Gateway"),
            Failure::GatewayTimeout(_) => (504, "Gateway Timeout"),
        }
    }

    /// Refused by the gateway's rules or bounds, rather than failed on the way out.
    fn refused(&self) -> bool {
        !matches!(self, Failure::BadGateway(_) | Failure::GatewayTimeout(_))
    }
}

impl From<HeadError> for Failure {
    fn from(e: HeadError) -> Failure {
        match e {
            HeadError::TooLarge(n) => Failure::TooLarge(n),
            e => Failure::BadRequest(e.to_string()),
        }
    }
}

/// What a request is, as far as it is known, for its log line.
struct Seen {
    client: SocketAddr,
    method: String,
    dest: Option<Destination>,
}

impl Seen {
    fn host(&self) -> String {
        self.dest
            .as_ref()
            .map_or_else(|| "-".into(), |d| d.host.to_string())
    }

    fn port(&self) -> u16 {
        self.dest.as_ref().map_or(0, |d| d.port)
    }
}

/// Serves `listener` until `shutdown` completes, then lets open connections finish for the
/// grace period and cuts the rest.
pub async fn serve(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let config = Arc::new(config);
    let mut open = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            Some(_) = open.join_next(), if !open.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let peer = SocketAddr::new(peer.ip().to_canonical(), peer.port());
                    if open.len() >= config.max_connections {
                        busy(&stream, peer, config.max_connections);
                        continue;
                    }
                    open.spawn(connection(stream, peer, Arc::clone(&config)));
                }
                Err(e) => {
                    // Out of descriptors, most likely: back off rather than spin.
                    warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
    drop(listener);
    info!(open = open.len(), grace = ?config.shutdown_grace, "shutting down: no new connections");
    let drain = async { while open.join_next().await.is_some() {} };
    if tokio::time::timeout(config.shutdown_grace, drain)
        .await
        .is_err()
    {
        warn!(
            cut = open.len(),
            "shutdown grace over: cutting the remaining connections"
        );
        open.abort_all();
        while open.join_next().await.is_some() {}
    }
    info!("stopped");
    Ok(())
}

/// A client over the connection bound: told so without a task of its own, since a fresh
/// socket's send buffer takes a short answer at once.
fn busy(stream: &TcpStream, client: SocketAddr, max: usize) {
    let reason =
        format!("the gateway has {max} connections open, its --max-connections; retry later");
    info!(decision = "refused", %client, status = 503, %reason, "request refused");
    let body = format!("{reason}\n");
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.try_write(answer.as_bytes());
}

async fn connection(stream: TcpStream, client: SocketAddr, config: Arc<Config>) {
    let _ = stream.set_nodelay(true);
    let (r, w) = stream.into_split();
    let mut r = BufReader::new(r);
    let mut w = w;
    let mut seen = Seen {
        client,
        method: String::new(),
        dest: None,
    };
    let raw = match tokio::time::timeout(
        config.head_timeout,
        head::read(&mut r, config.max_head_bytes),
    )
    .await
    {
        Ok(Ok(raw)) => raw,
        Ok(Err(HeadError::Closed)) => return,
        Ok(Err(HeadError::Io(e))) => {
            debug!(%client, error = %e, "reading the request head failed");
            return;
        }
        Ok(Err(e)) => return fail(&mut r, &mut w, &seen, e.into()).await,
        Err(_) => {
            return fail(
                &mut r,
                &mut w,
                &seen,
                Failure::HeadTimeout(config.head_timeout),
            )
            .await;
        }
    };
    let req = match head::parse_request(&raw, config.max_head_bytes) {
        Ok(req) => req,
        Err(e) => return fail(&mut r, &mut w, &seen, e.into()).await,
    };
    seen.method.clone_from(&req.method);
    let result = if req.method.eq_ignore_ascii_case("CONNECT") {
        connect(r, w, &req, &mut seen, &config).await
    } else {
        forward(r, w, &req, &mut seen, &config).await
    };
    if let Err((mut r, mut w, failure)) = result {
        fail(&mut r, &mut w, &seen, failure).await;
    }
}

type Halves = (BufReader<OwnedReadHalf>, OwnedWriteHalf);
type Refused = (BufReader<OwnedReadHalf>, OwnedWriteHalf, Failure);

/// Checks the destination against the rules.
fn decide<'a>(config: &'a Config, dest: &Destination) -> Result<&'a str, Failure> {
    match config.allow.check(&dest.host, dest.port) {
        Decision::Allowed(rule) => Ok(rule.as_str()),
        Decision::Refused(reason) => Err(Failure::Forbidden(reason)),
    }
}

/// Resolves and connects within the connect timeout, trying each address in turn.
async fn dial(config: &Config, dest: &Destination) -> Result<(TcpStream, SocketAddr), Failure> {
    let (host, port) = (&dest.host, dest.port);
    let attempt = async {
        let addrs = match host {
            Host::Ip(ip) => vec![SocketAddr::new(*ip, port)],
            Host::Name(name) => config.resolver.resolve(name, port).await?,
        };
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect(addr).await {
                Ok(s) => return Ok((s, addr)),
                Err(e) => last = Some((addr, e)),
            }
        }
        Err(Failure::BadGateway(match last {
            Some((addr, e)) => format!("cannot connect to {host}:{port} ({addr}): {e}"),
            None => format!("{host} resolves to no address"),
        }))
    };
    match tokio::time::timeout(config.connect_timeout, attempt).await {
        Ok(Ok((s, addr))) => {
            let _ = s.set_nodelay(true);
            Ok((s, addr))
        }
        Ok(Err(e)) => Err(e),
        Err(_) => Err(Failure::GatewayTimeout(format!(
            "connecting to {host}:{port} took longer than {:?}",
            config.connect_timeout
        ))),
    }
}

/// Decides and dials, handing the connection's halves back with the failure so that the client
/// can be told.
async fn admit(
    (r, w): Halves,
    seen: &mut Seen,
    config: &Config,
    dest: Result<Destination, Failure>,
) -> Result<(Halves, TcpStream, Destination), Refused> {
    let dest = match dest {
        Ok(d) => d,
        Err(e) => return Err((r, w, e)),
    };
    seen.dest = Some(dest.clone());
    let rule = match decide(config, &dest) {
        Ok(rule) => rule,
        Err(e) => return Err((r, w, e)),
    };
    match dial(config, &dest).await {
        Ok((up, addr)) => {
            info!(decision = "allowed", client = %seen.client, method = %seen.method,
                  host = %dest.host, port = dest.port, %rule, upstream = %addr, "request allowed");
            Ok(((r, w), up, dest))
        }
        Err(e) => Err((r, w, e)),
    }
}

async fn connect(
    r: BufReader<OwnedReadHalf>,
    w: OwnedWriteHalf,
    req: &Request,
    seen: &mut Seen,
    config: &Config,
) -> Result<(), Refused> {
    let dest = head::authority(&req.target, None).map_err(Failure::from);
    let ((r, mut w), up, _) = admit((r, w), seen, config, dest).await?;
    let established = b"HTTP/1.1 200 Connection Established\r\n\r\n";
    if w.write_all(established).await.is_err() {
        return Ok(());
    }
    let (ur, uw) = up.into_split();
    // `r` may already hold what the client sent after its head (a TLS hello, say): the tunnel
    // reads it first.
    match relay::tunnel(r, w, ur, uw, config.idle_timeout).await {
        Ok(moved) => info!(client = %seen.client, host = %seen.host(), port = seen.port(),
                           up = moved.up, down = moved.down, idle_timeout = moved.idled,
                           "tunnel closed"),
        Err(e) => info!(client = %seen.client, host = %seen.host(), port = seen.port(),
                        error = %e, "tunnel cut"),
    }
    Ok(())
}

async fn forward(
    r: BufReader<OwnedReadHalf>,
    w: OwnedWriteHalf,
    req: &Request,
    seen: &mut Seen,
    config: &Config,
) -> Result<(), Refused> {
    let target = head::forward_target(req).map_err(Failure::from);
    let (dest, path) = match target {
        Ok((d, p)) => (Ok(d), p),
        Err(e) => (Err(e), String::new()),
    };
    // The framing is checked before connecting: a request that could smuggle another is refused
    // without costing the upstream a connection.
    let framing = match relay::framing(req) {
        Ok(f) => f,
        Err(e) => {
            seen.dest = dest.ok();
            return Err((r, w, e.into()));
        }
    };
    let ((mut r, mut w), up, dest) = admit((r, w), seen, config, dest).await?;
    let (ur, mut uw) = up.into_split();
    let idle = config.idle_timeout;
    let head = relay::upstream_head(req, &dest, &path);
    if uw.write_all(&head).await.is_err() {
        return Err((
            r,
            w,
            Failure::BadGateway(format!("{} closed the connection", dest.host)),
        ));
    }
    // In a block of its own: both futures borrow the halves, which a failure hands back.
    let outcome = {
        let response = relay::relay_response(BufReader::new(ur), &mut w, idle);
        tokio::pin!(response);
        // Ends only if the body breaks; the response is what ends the exchange, and the
        // upstream needs no half-close, since the framing tells it where the request ends.
        let body = async {
            match relay::copy_body(&mut r, &mut uw, framing, idle).await {
                Ok(()) => std::future::pending::<io::Error>().await,
                Err(e) => e,
            }
        };
        tokio::select! {
            done = &mut response => done,
            e = body => Err(ResponseError::Cut(e)),
        }
    };
    match outcome {
        Ok(bytes) => {
            debug!(client = %seen.client, host = %dest.host, port = dest.port, bytes, "response relayed")
        }
        Err(ResponseError::NoResponse(why)) => return Err((r, w, Failure::BadGateway(why))),
        Err(ResponseError::Timeout(t)) => {
            let why = format!("{} sent no response within {t:?}", dest.host);
            return Err((r, w, Failure::GatewayTimeout(why)));
        }
        Err(ResponseError::Cut(e)) => {
            info!(client = %seen.client, host = %dest.host, port = dest.port, error = %e, "exchange cut")
        }
    }
    Ok(())
}

/// Logs the failure as the request's decision, answers it, and closes gently: what the client
/// is still sending is read and dropped for a moment, so that closing with unread bytes does not
/// reset the connection before the client has read the answer.
async fn fail(
    r: &mut BufReader<OwnedReadHalf>,
    w: &mut OwnedWriteHalf,
    seen: &Seen,
    failure: Failure,
) {
    let (code, phrase) = failure.status();
    let reason = failure.to_string();
    let (host, port) = (seen.host(), seen.port());
    if failure.refused() {
        info!(decision = "refused", client = %seen.client, method = %seen.method, %host, port,
              status = code, %reason, "request refused");
    } else {
        warn!(decision = "failed", client = %seen.client, method = %seen.method, %host, port,
              status = code, %reason, "request failed");
    }
    let body = format!("{reason}\n");
    let answer = format!(
        "HTTP/1.1 {code} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let linger = Duration::from_secs(1);
    if tokio::time::timeout(linger, w.write_all(answer.as_bytes()))
        .await
        .is_err()
    {
        return;
    }
    let _ = w.shutdown().await;
    let _ = tokio::time::timeout(linger, async {
        let mut sink = [0u8; 4096];
        let mut total = 0usize;
        while total < 1 << 20 {
            match r.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    })
    .await;
}
