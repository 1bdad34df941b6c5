//! The test network: the address plan of the test cluster and what a test process can see of the
//! network namespace `scripts/cluster` runs it in (docs/testing.md, "The network").
//!
//! Every address of the cluster is in 198.18.0.0/15 (RFC 2544, set aside for network tests), and
//! the namespace routes nothing but loopback and that range, so a packet to any other address fails
//! at once with "network unreachable" instead of leaving this machine.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;

use serde::Deserialize;

/// The one range every cluster address comes from.
pub const TEST_RANGE: &str = "198.18.0.0/15";

/// The Service range (`--service-cluster-ip-range`), as `scripts/cluster` sets it.
pub const SERVICE_CIDR: &str = "198.19.0.0/17";

/// The `kubernetes` Service's address: the first of [`SERVICE_CIDR`], named by the API server's
/// serving certificate.
pub const KUBERNETES_SERVICE_IP: &str = "198.19.0.1";

/// The fake pod IPs KWOK hands out (its `--cidr`).
pub const KWOK_POD_CIDR: &str = "198.19.128.0/17";

/// The variable `scripts/cluster exec` sets to the namespace it runs its command in.
pub const NETNS_VAR: &str = "PANDO_TEST_NETNS";

/// How to run a test inside the namespace, for error messages.
pub const EXEC_HINT: &str = "run the tests with `scripts/test`, or one command as \
     `scripts/cluster exec -- cargo test …`: the test cluster lives in a network namespace of its own";

/// An IPv4 prefix, parsed from `a.b.c.d/len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Net {
    addr: u32,
    len: u8,
}

impl Ipv4Net {
    /// Parses `a.b.c.d/len` (or a bare address, as `/32`); `None` when it is neither.
    pub fn parse(text: &str) -> Option<Self> {
        let (addr, len) = match text.split_once('/') {
            Some((a, l)) => (a, l.parse::<u8>().ok()?),
            None => (text, 32),
        };
        let addr: Ipv4Addr = addr.parse().ok()?;
        (len <= 32).then_some(Self {
            addr: u32::from(addr),
            len,
        })
    }

    fn mask(len: u8) -> u32 {
        u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0)
    }

    /// True if every address of `other` is in `self`.
    pub fn covers(&self, other: &Ipv4Net) -> bool {
        other.len >= self.len
            && (other.addr & Self::mask(self.len)) == (self.addr & Self::mask(self.len))
    }

    /// True if `ip` is in `self`.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        self.covers(&Ipv4Net {
            addr: u32::from(ip),
            len: 32,
        })
    }
}

/// One route as `ip -j route show table all` prints it.
#[derive(Debug, Clone, Deserialize)]
pub struct Route {
    /// `unicast` when absent; `local`, `broadcast`, `unreachable`, `blackhole`, …
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// `default` or a prefix.
    pub dst: String,
    /// The interface, if any.
    #[serde(default)]
    pub dev: Option<String>,
    /// The routing table, when not `main`.
    #[serde(default)]
    pub table: Option<String>,
}

impl Route {
    /// Why this route may stay in the test namespace, or `None` if it reaches past the machine:
    /// it drops what it matches, it is loopback's, or its destination is in [`TEST_RANGE`].
    pub fn allowed_because(&self) -> Option<&'static str> {
        if matches!(
            self.kind.as_deref(),
            Some("unreachable" | "blackhole" | "prohibit")
        ) {
            return Some("drops what it matches");
        }
        if self.dev.as_deref() == Some("lo") {
            return Some("loopback");
        }
        let range = Ipv4Net::parse(TEST_RANGE)?;
        Ipv4Net::parse(&self.dst)
            .filter(|dst| range.covers(dst))
            .map(|_| "inside 198.18.0.0/15")
    }
}

/// Every route of this process's network namespace, IPv4 and IPv6, in every table.
pub fn routes() -> Result<Vec<Route>, String> {
    let mut all = Vec::new();
    for family in ["-4", "-6"] {
        let out = Command::new("ip")
            .args(["-j", family, "route", "show", "table", "all"])
            .output()
            .map_err(|e| format!("running `ip -j {family} route show table all`: {e} (scripts/setup installs iproute2)"))?;
        if !out.status.success() {
            return Err(format!(
                "`ip -j {family} route show table all` failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        if text.trim().is_empty() {
            continue;
        }
        let routes: Vec<Route> = serde_json::from_str(&text)
            .map_err(|e| format!("reading `ip -j {family} route` output: {e}: {text}"))?;
        all.extend(routes);
    }
    Ok(all)
}

/// The namespace `scripts/cluster exec` entered, from [`NETNS_VAR`].
pub fn netns_path() -> Result<PathBuf, String> {
    std::env::var_os(NETNS_VAR)
        .map(PathBuf::from)
        .ok_or_else(|| format!("{NETNS_VAR} is not set: {EXEC_HINT}"))
}

/// The inode of a namespace file: two files name the same namespace exactly when these agree.
pub fn namespace_inode(path: &std::path::Path) -> Result<u64, String> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .map(|m| m.ino())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Checks that this process runs in the test cluster's namespace and that the namespace routes
/// nothing off this machine; the error lists what is wrong. A test calls this before it opens any
/// connection to an address that is not loopback's.
pub fn check_isolated() -> Result<(), String> {
    let netns = netns_path()?;
    let here = namespace_inode(std::path::Path::new("/proc/self/ns/net"))?;
    let cluster = namespace_inode(&netns)?;
    if here != cluster {
        return Err(format!(
            "this process is not in the namespace {} ({NETNS_VAR}): {EXEC_HINT}",
            netns.display()
        ));
    }
    let off: Vec<String> = routes()?
        .into_iter()
        .filter(|r| r.allowed_because().is_none())
        .map(|r| format!("{r:?}"))
        .collect();
    if off.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "routes that reach past loopback and {TEST_RANGE}: {}",
            off.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(kind: Option<&str>, dst: &str, dev: Option<&str>) -> Route {
        Route {
            kind: kind.map(str::to_string),
            dst: dst.to_string(),
            dev: dev.map(str::to_string),
            table: None,
        }
    }

    #[test]
    fn a_prefix_covers_what_lies_inside_it_only() {
        let range = Ipv4Net::parse(TEST_RANGE).expect("range");
        for inside in [
            SERVICE_CIDR,
            KWOK_POD_CIDR,
            "198.18.0.0/24",
            KUBERNETES_SERVICE_IP,
        ] {
            assert!(
                range.covers(&Ipv4Net::parse(inside).expect("prefix")),
                "{inside}"
            );
        }
        // Data for the arithmetic only: no connection is opened.
        for outside in ["198.16.0.0/14", "198.20.0.1", "0.0.0.0/0", "192.0.2.1"] {
            assert!(
                !range.covers(&Ipv4Net::parse(outside).expect("prefix")),
                "{outside}"
            );
        }
        assert!(Ipv4Net::parse("198.18.0.0/33").is_none());
        assert!(Ipv4Net::parse("default").is_none());
    }

    #[test]
    fn only_loopback_dropping_and_test_range_routes_are_allowed() {
        assert!(
            route(Some("local"), "127.0.0.0/8", Some("lo"))
                .allowed_because()
                .is_some()
        );
        assert!(
            route(Some("unreachable"), "default", None)
                .allowed_because()
                .is_some()
        );
        assert!(
            route(None, "198.18.0.0/24", Some("cni0"))
                .allowed_because()
                .is_some()
        );
        assert!(
            route(None, "default", Some("eth0"))
                .allowed_because()
                .is_none()
        );
        assert!(
            route(None, "192.0.2.0/24", Some("eth0"))
                .allowed_because()
                .is_none()
        );
        assert!(
            route(None, "198.16.0.0/14", Some("cni0"))
                .allowed_because()
                .is_none()
        );
        assert!(
            route(None, "fd00::/64", Some("eth0"))
                .allowed_because()
                .is_none()
        );
    }
}
