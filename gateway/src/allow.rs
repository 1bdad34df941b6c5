//! The `--allow` rules and how a request's destination is matched against them.
//!
//! A rule is `HOST` (any port) or `HOST:PORT`, where `HOST` is
//!
//! - a host name, matched exactly: `api.example.com`;
//! - `*.example.com`: every subdomain of `example.com` at any depth (`a.example.com`,
//!   `a.b.example.com`), **not** `example.com` itself — the Docker and Kubernetes reading of a
//!   leading `*.`; allow the apex with a rule of its own;
//! - `*`: every host name (the adapter passes it for an egress rule whose destination is `*`);
//! - an IP address, `203.0.113.5` or `[2001:db8::1]` (bare `2001:db8::1` means any port).
//!
//! Names are compared case-insensitively, and one trailing dot (`example.com.`) is ignored, on
//! both sides. A destination given as an IP address is admitted only by a rule naming that
//! address: no name rule, not even `*`, admits an address, or a rule for a name would be
//! side-stepped by connecting to whatever address the client likes. A destination whose last
//! label is numeric but which is not a dotted-quad address (`127.1`, `0x7f.0.0.1`) is malformed:
//! the C resolver would read it as an address.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// Longest host name DNS carries, in its text form without the trailing dot.
const MAX_NAME: usize = 253;
/// Longest DNS label.
const MAX_LABEL: usize = 63;

/// Why a rule or a destination is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The host part is neither a host name nor an IP address.
    #[error("`{0}` is neither a host name nor an IP address: {1}")]
    Host(String, &'static str),
    /// The port is not a number from 1 to 65535.
    #[error("port `{0}` is not a number from 1 to 65535")]
    Port(String),
    /// A wildcard other than a leading `*.` or a lone `*`.
    #[error("`{0}`: a wildcard may only be a whole leading label, as in `*.example.com`")]
    Wildcard(String),
}

/// A destination host, normalized: a lowercase name without its trailing dot, or an address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// A host name, to be resolved.
    Name(String),
    /// An IP address literal, connected to as it is.
    Ip(IpAddr),
}

impl Host {
    /// The host part of a request's authority: a name, a dotted-quad IPv4 address, or an IPv6
    /// address in brackets.
    pub fn parse(text: &str) -> Result<Host, ParseError> {
        if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            return inner
                .parse::<Ipv6Addr>()
                .map(|a| Host::Ip(IpAddr::V6(a).to_canonical()))
                .map_err(|_| ParseError::Host(text.into(), "not an IPv6 address in brackets"));
        }
        if let Ok(a) = text.parse::<Ipv4Addr>() {
            return Ok(Host::Ip(IpAddr::V4(a)));
        }
        name(text).map(Host::Name)
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Ip(IpAddr::V6(a)) => write!(f, "[{a}]"),
            Host::Ip(a) => write!(f, "{a}"),
        }
    }
}

/// A normalized host name: lowercase, one trailing dot dropped, labels of letters, digits, `-`
/// and `_` (some real names carry `_`, and it cannot be mistaken for anything else).
fn name(text: &str) -> Result<String, ParseError> {
    let bad = |why| ParseError::Host(text.into(), why);
    let lower = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
    if lower.is_empty() {
        return Err(bad("it is empty"));
    }
    if lower.len() > MAX_NAME {
        return Err(bad("it is longer than 253 characters"));
    }
    for label in lower.split('.') {
        if label.is_empty() {
            return Err(bad("it has an empty label"));
        }
        if label.len() > MAX_LABEL {
            return Err(bad("a label is longer than 63 characters"));
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(bad("only letters, digits, `-`, `_` and `.` are allowed"));
        }
    }
    let last = lower.rsplit('.').next().unwrap_or_default();
    if last.bytes().all(|b| b.is_ascii_digit()) || last.starts_with("0x") {
        return Err(bad(
            "its last label is numeric, so resolvers read it as an IP address; write the \
             address as four decimal numbers",
        ));
    }
    Ok(lower)
}

/// What a rule's host part admits.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// This name only.
    Exact(String),
    /// Names ending in this suffix, which starts with a dot: subdomains, not the apex.
    Subdomains(String),
    /// Every name, no address.
    AnyName,
    /// This address only.
    Ip(IpAddr),
}

/// One `--allow` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pattern: Pattern,
    port: Option<u16>,
    text: String,
}

impl Rule {
    fn admits_host(&self, host: &Host) -> bool {
        match (&self.pattern, host) {
            (Pattern::Exact(p), Host::Name(n)) => p == n,
            (Pattern::Subdomains(suffix), Host::Name(n)) => n.ends_with(suffix.as_str()),
            (Pattern::AnyName, Host::Name(_)) => true,
            (Pattern::Ip(p), Host::Ip(a)) => p == a,
            _ => false,
        }
    }

    /// The rule as it was given on the command line.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn port(text: &str) -> Result<u16, ParseError> {
    match text.parse::<u16>() {
        Ok(p) if p != 0 && text.bytes().all(|b| b.is_ascii_digit()) => Ok(p),
        _ => Err(ParseError::Port(text.into())),
    }
}

impl FromStr for Rule {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Rule, ParseError> {
        let rule = |pattern, port| Rule {
            pattern,
            port,
            text: text.to_owned(),
        };
        if let Ok(a) = text.parse::<Ipv6Addr>() {
            return Ok(rule(Pattern::Ip(IpAddr::V6(a).to_canonical()), None));
        }
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            match rest.split_once(']') {
                Some((_, "")) => (text, None),
                Some((_, p)) => match p.strip_prefix(':') {
                    Some(p) => (&text[..text.len() - p.len() - 1], Some(port(p)?)),
                    None => return Err(ParseError::Host(text.into(), "text after `]`")),
                },
                None => return Err(ParseError::Host(text.into(), "`[` without `]`")),
            }
        } else {
            match text.rsplit_once(':') {
                Some((h, p)) => (h, Some(port(p)?)),
                None => (text, None),
            }
        };
        let pattern = if host == "*" {
            Pattern::AnyName
        } else if let Some(domain) = host.strip_prefix("*.") {
            if domain.contains('*') {
                return Err(ParseError::Wildcard(text.into()));
            }
            Pattern::Subdomains(format!(".{}", name(domain)?))
        } else if host.contains('*') {
            return Err(ParseError::Wildcard(text.into()));
        } else {
            match Host::parse(host)? {
                Host::Name(n) => Pattern::Exact(n),
                Host::Ip(a) => Pattern::Ip(a),
            }
        };
        Ok(rule(pattern, port))
    }
}

/// The outcome of checking a destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision<'a> {
    /// The first rule that admits it.
    Allowed(&'a Rule),
    /// Why not, in one line an operator can act on: it names the host and the `--allow` that
    /// would admit it.
    Refused(String),
}

/// The gateway's rules, in the order given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allow {
    rules: Vec<Rule>,
}

impl Allow {
    /// Rules as given on the command line.
    pub fn new(rules: Vec<Rule>) -> Allow {
        Allow { rules }
    }

    /// The rules.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Whether `host:port` may be connected to, and by which rule.
    pub fn check(&self, host: &Host, port: u16) -> Decision<'_> {
        let mut other_ports = Vec::new();
        for rule in &self.rules {
            if !rule.admits_host(host) {
                continue;
            }
            match rule.port {
                None => return Decision::Allowed(rule),
                Some(p) if p == port => return Decision::Allowed(rule),
                Some(p) => other_ports.push(p),
            }
        }
        let fix = format!("`--allow {host}:{port}` would admit it");
        Decision::Refused(if !other_ports.is_empty() {
            other_ports.sort_unstable();
            other_ports.dedup();
            let list: Vec<String> = other_ports.iter().map(u16::to_string).collect();
            format!(
                "{host} is allowed on port {} only, not {port}; {fix}",
                list.join(", ")
            )
        } else if let Host::Ip(_) = host {
            format!(
                "{host} is an IP address and no rule names it (name rules never admit an \
                 address); {fix}"
            )
        } else {
            format!("{host} is not an allowed host; {fix}")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow(rules: &[&str]) -> Allow {
        Allow::new(rules.iter().map(|r| r.parse().unwrap()).collect())
    }

    fn admits(a: &Allow, host: &str, port: u16) -> bool {
        matches!(
            a.check(&Host::parse(host).unwrap(), port),
            Decision::Allowed(_)
        )
    }

    #[test]
    fn an_exact_name_admits_itself_on_its_port_only() {
        let a = allow(&["api.example.com:443"]);
        assert!(admits(&a, "api.example.com", 443));
        assert!(!admits(&a, "api.example.com", 80));
        assert!(!admits(&a, "example.com", 443));
        assert!(!admits(&a, "x.api.example.com", 443));
        assert!(!admits(&a, "api.example.com.evil.test", 443));
        assert!(!admits(&a, "evilapi.example.com", 443));
    }

    #[test]
    fn a_name_without_a_port_admits_every_port() {
        let a = allow(&["api.example.com"]);
        assert!(admits(&a, "api.example.com", 1));
        assert!(admits(&a, "api.example.com", 65535));
    }

    #[test]
    fn a_wildcard_admits_subdomains_at_any_depth_but_not_the_apex() {
        let a = allow(&["*.example.com:443"]);
        assert!(admits(&a, "a.example.com", 443));
        assert!(admits(&a, "a.b.example.com", 443));
        assert!(!admits(&a, "example.com", 443));
        assert!(!admits(&a, "badexample.com", 443));
        assert!(!admits(&a, "a.example.com", 80));
        assert!(!admits(&a, "a.example.com.evil.test", 443));
    }

    #[test]
    fn a_lone_star_admits_every_name_and_no_address() {
        let a = allow(&["*:443"]);
        assert!(admits(&a, "anything.test", 443));
        assert!(!admits(&a, "anything.test", 80));
        assert!(!admits(&a, "203.0.113.5", 443));
        assert!(!admits(&a, "[2001:db8::1]", 443));
    }

    #[test]
    fn names_compare_case_insensitively_and_without_a_trailing_dot() {
        let a = allow(&["API.Example.COM.:443", "*.Svc.Example.com"]);
        assert!(admits(&a, "api.example.com", 443));
        assert!(admits(&a, "Api.EXAMPLE.com.", 443));
        assert!(admits(&a, "X.SVC.example.COM.", 8080));
    }

    #[test]
    fn an_address_is_admitted_only_by_a_rule_naming_it() {
        let a = allow(&["localhost:443", "*.example.com"]);
        assert!(!admits(&a, "127.0.0.1", 443));
        let a = allow(&["203.0.113.5:443", "[2001:db8::1]:443", "2001:db8::2"]);
        assert!(admits(&a, "203.0.113.5", 443));
        assert!(!admits(&a, "203.0.113.5", 80));
        assert!(admits(&a, "[2001:db8::1]", 443));
        assert!(admits(&a, "[2001:db8::2]", 22));
        // The same address spelled as IPv4-mapped IPv6 is the same address.
        assert!(admits(&a, "[::ffff:203.0.113.5]", 443));
        assert!(!admits(&a, "203.0.113.6", 443));
    }

    #[test]
    fn numeric_names_the_resolver_would_read_as_addresses_are_malformed() {
        for h in ["127.1", "0x7f.0.0.1", "2130706433", "a.b.0x10"] {
            assert!(Host::parse(h).is_err(), "{h}");
        }
        assert!(Host::parse("1password.com").is_ok());
    }

    #[test]
    fn malformed_destinations_are_refused_by_the_parser() {
        for h in [
            "",
            ".",
            "a..b",
            "exa mple.com",
            "a/b",
            "[::1",
            "[nonsense]",
            "[fe80::1%eth0]",
        ] {
            assert!(Host::parse(h).is_err(), "{h:?}");
        }
        assert!(Host::parse(&"a".repeat(64)).is_err());
        assert!(Host::parse(&format!("{}.com", "a.".repeat(130))).is_err());
    }

    #[test]
    fn malformed_rules_are_refused() {
        for r in [
            "api.example.com:0",
            "api.example.com:65536",
            "api.example.com:",
            "api.example.com:+1",
            "a.*.example.com",
            "*.*.example.com",
            "*example.com",
            "[2001:db8::1]443",
            "",
        ] {
            assert!(r.parse::<Rule>().is_err(), "{r:?}");
        }
    }

    #[test]
    fn a_refusal_names_the_host_and_the_rule_that_would_admit_it() {
        let a = allow(&["api.example.com:443", "api.example.com:8443"]);
        let Decision::Refused(why) = a.check(&Host::parse("api.example.com").unwrap(), 80) else {
            panic!("admitted");
        };
        assert!(why.contains("port 443, 8443 only, not 80"), "{why}");
        assert!(why.contains("`--allow api.example.com:80`"), "{why}");
        let Decision::Refused(why) = a.check(&Host::parse("evil.test").unwrap(), 443) else {
            panic!("admitted");
        };
        assert!(why.contains("evil.test is not an allowed host"), "{why}");
        let Decision::Refused(why) = a.check(&Host::parse("[2001:db8::9]").unwrap(), 443) else {
            panic!("admitted");
        };
        assert!(why.contains("`--allow [2001:db8::9]:443`"), "{why}");
    }

    #[test]
    fn the_first_admitting_rule_is_named() {
        let a = allow(&["*.example.com:443", "api.example.com"]);
        let Decision::Allowed(rule) = a.check(&Host::parse("api.example.com").unwrap(), 443) else {
            panic!("refused");
        };
        assert_eq!(rule.as_str(), "*.example.com:443");
    }
}
