//! Pando's egress gateway: an HTTP(S) proxy that lets a restricted app out of the cluster
//! only to the host names and ports its egress rules name.
//!
//! NetworkPolicy speaks addresses, so an app whose egress rules name hosts gets this gateway in
//! its namespace (adapter-kubernetes/src/egress.rs). The adapter runs it as
//! `pando egress-gateway --listen :3128 --allow HOST[:PORT]…`: one `--allow` per rule and port,
//! `HOST` a host name, `*.example.com` or `*`; the adapter sends CIDRs, which NetworkPolicy can
//! express, to the policy instead, but a bare IPv4 address reaches the gateway as a "name"
//! ([`allow`] has the matching rules).
//!
//! - `CONNECT host:port` (HTTPS, or any TCP) is tunnelled; a plain request with an absolute
//!   `http://` target (or a path and `Host`) is forwarded in origin form with `Connection: close`.
//!   Each client connection carries one request: a second request on it is never read, so none
//!   escapes the check.
//! - Refused: 403 with a one-line reason naming the host and the `--allow` that would admit it.
//!   Malformed 400, a head over the limit 431, a slow head 408, over the connection bound 503,
//!   upstream unreachable 502, connect timeout 504.
//! - One structured log line per decision on stderr (`decision` = `allowed`, `refused` or
//!   `failed`, with `client`, `host`, `port` and the `reason` or the `rule`).
//!
//! **What the gateway does not stop.** It checks names, and connects wherever an allowed name
//! resolves. Where an allowed name resolves into the cluster (a pod, a Service, the API server),
//! the packet layer stops it: the gateway pod's NetworkPolicy lets it out only to addresses
//! outside the cluster's ranges, on the allowed ports. An address literal as the destination is
//! refused unless a rule names that very address. Loopback is the pod's own, where only the
//! gateway listens.

pub mod allow;
pub mod head;
pub mod proxy;
pub mod relay;

pub use allow::{Allow, Host, Rule};
pub use proxy::{Config, Resolver, serve};
