//! IP address ranges, as the configuration's `pod_cidr`, `service_cidr`
//! and `api_server_cidr` give them, and as NetworkPolicies take them.

use std::fmt;
use std::net::IpAddr;

use serde::{Serialize, Serializer};

/// An IP address range: an IPv4 or IPv6 address and a prefix length.
///
/// Parsed from `address/prefix`; the address is kept masked to the prefix,
/// so `10.1.2.3/8` is `10.0.0.0/8` (as Go's `net.ParseCIDR` reads it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    address: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// The network address (host bits zero).
    pub fn address(&self) -> IpAddr {
        self.address
    }

    /// The prefix length: at most 32 for IPv4, 128 for IPv6.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Whether `ip` is inside the range.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.address, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = mask32(self.prefix);
                u32::from(ip) & mask == u32::from(net)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = mask128(self.prefix);
                u128::from(ip) & mask == u128::from(net)
            }
            _ => false,
        }
    }

    /// Whether every address of `other` is inside this range (the same
    /// family, a prefix at least as long, and its network inside). Two
    /// ranges either nest or are disjoint, so `!a.covers(b) && !b.covers(a)`
    /// means they share no address.
    pub fn covers(&self, other: &Cidr) -> bool {
        other.prefix >= self.prefix && self.contains(other.address)
    }

    /// Whether it is an IPv4 range.
    pub fn is_ipv4(&self) -> bool {
        self.address.is_ipv4()
    }

    /// The whole of a family: `0.0.0.0/0` or `::/0`.
    pub fn everything(v4: bool) -> Cidr {
        let address = if v4 {
            IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
        } else {
            IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
        };
        Cidr { address, prefix: 0 }
    }
}

fn mask32(prefix: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)
}

fn mask128(prefix: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0)
}

impl std::str::FromStr for Cidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Cidr, String> {
        let (address, prefix) = text
            .split_once('/')
            .ok_or("an address and a prefix length are separated by `/`")?;
        let address: IpAddr = address
            .parse()
            .map_err(|_| format!("`{address}` is not an IPv4 or IPv6 address"))?;
        let max = if address.is_ipv4() { 32 } else { 128 };
        let canonical = !prefix.is_empty()
            && prefix.len() <= 3
            && prefix.bytes().all(|b| b.is_ascii_digit())
            && (prefix == "0" || !prefix.starts_with('0'));
        let prefix = match prefix.parse::<u8>() {
            Ok(p) if canonical && p <= max => p,
            _ => {
                return Err(format!(
                    "the prefix length must be a number from 0 to {max}"
                ));
            }
        };
        let address = match address {
            IpAddr::V4(a) => IpAddr::V4((u32::from(a) & mask32(prefix)).into()),
            IpAddr::V6(a) => IpAddr::V6((u128::from(a) & mask128(prefix)).into()),
        };
        Ok(Cidr { address, prefix })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix)
    }
}

impl Serialize for Cidr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(text: &str) -> Cidr {
        text.parse().unwrap()
    }

    #[test]
    fn r025_ranges_nest_or_are_disjoint() {
        assert!(c("0.0.0.0/0").covers(&c("10.244.0.0/16")));
        assert!(c("10.0.0.0/8").covers(&c("10.244.0.0/16")));
        assert!(c("10.244.0.0/16").covers(&c("10.244.0.0/16")));
        assert!(!c("10.244.0.0/16").covers(&c("10.0.0.0/8")));
        assert!(!c("10.244.0.0/16").covers(&c("10.96.0.0/12")));
        assert!(
            !c("0.0.0.0/0").covers(&c("fd00::/8")),
            "families never nest"
        );
        assert!(c("::/0").covers(&c("fd00:10:244::/56")));
        assert_eq!(Cidr::everything(true), c("0.0.0.0/0"));
        assert_eq!(Cidr::everything(false), c("::/0"));
    }
}
