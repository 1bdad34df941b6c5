"""What no app's egress reaches (R-025: an app opens connections out of the
cluster, "never into these"), and where it reaches DNS, as the Rust adapter
decides them (adapter-kubernetes/src/exclusions.rs): every `ipBlock`, `open`
and `restricted` alike, gets each excluded range inside it as an `except`;
a rule inside an excluded range is refused; a family with no configured pod
range is not the cluster's (no `open` block of it, its rules refused)."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from . import cidr
from .config import METADATA_ADDRESS, Config

Json = Dict[str, Any]


def excluded(config: Config) -> List[Tuple[cidr.Cidr, str]]:
    """Every range the configuration keeps apps out of, with what it is."""
    out = [(c, "the pod range (`pod_cidr`)") for c in config.pod_cidrs]
    out += [(c, "the Service range (`service_cidr`)") for c in config.service_cidrs]
    out += [(c, "the nodes' addresses (`node_cidrs`)") for c in config.node_cidrs]
    if config.api_server_cidr is not None:
        out.append((config.api_server_cidr, "the API server (`api_server_cidr`)"))
    if config.exclude_metadata_address:
        out.append(
            (
                cidr.parse(METADATA_ADDRESS),
                "the cloud metadata address (`exclude_metadata_address`)",
            )
        )
    return out


def _family_configured(config: Config, v4: bool) -> bool:
    return any(c.is_ipv4 == v4 for c in config.pod_cidrs)


def clip(config: Config, block: cidr.Cidr) -> Json:
    """`block` as a policy peer, every excluded range inside it an `except`;
    raises ValueError saying why when it lies inside one or is of a family
    the configuration does not name."""
    family = "IPv4" if block.is_ipv4 else "IPv6"
    if not _family_configured(config, block.is_ipv4):
        raise ValueError(
            f"is {family}, and no {family} pod range is configured (`pod_cidr`), so it could "
            f"not be kept out of the cluster: list the cluster's {family} ranges in `pod_cidr` "
            "and `service_cidr`, or leave the rule out"
        )
    except_: List[str] = []
    for range_, what in excluded(config):
        if range_.covers(block):
            raise ValueError(
                f"lies inside {what} `{range_}`: an app opens connections out of the cluster, "
                "never into it (R-025); remove the rule, or name an address outside the cluster"
            )
        if block.covers(range_) and str(range_) not in except_:
            except_.append(str(range_))
    if except_:
        return {"ipBlock": {"cidr": str(block), "except": except_}}
    return {"ipBlock": {"cidr": str(block)}}


def outside(config: Config) -> List[Json]:
    """Anywhere but the cluster: each family the cluster uses, less every
    excluded range."""
    out = []
    for v4 in (True, False):
        if not _family_configured(config, v4):
            continue
        try:
            out.append(clip(config, cidr.everything(v4)))
        except ValueError:
            # Only a configured range of prefix 0 swallows the family: left out.
            continue
    return out


def dns_rule(config: Config) -> Json:
    """The egress entry to the cluster's DNS (`dns_egress`)."""
    dns = config.dns_egress
    to: List[Json] = []
    if dns.namespace_selector:
        peer: Json = {"namespaceSelector": {"matchLabels": dict(dns.namespace_selector)}}
        if dns.pod_selector:
            peer["podSelector"] = {"matchLabels": dict(dns.pod_selector)}
        to.append(peer)
    to.extend({"ipBlock": {"cidr": str(c)}} for c in dns.cidrs)
    return {
        "to": to,
        "ports": [{"protocol": "UDP", "port": dns.port}, {"protocol": "TCP", "port": dns.port}],
    }
