"""The adapter's configuration: the subset of the Rust Kubernetes adapter's
settings that this adapter uses, with the same names, defaults and checks
(adapter-kubernetes/src/config/mod.rs), so one document configures both
for what they share.

`parse` reads the JSON `configure` receives. A field that is absent, `null`
or (for a string) empty takes its default. Every refusal is `invalid`,
naming the field: "configuration field `pod_cidr`: `10.0.0.0/33` is not a
CIDR (…)". A field this adapter does not read is refused too, saying so:
silently ignoring a setting would let an operator believe it applies.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Tuple

from . import cidr, errors, names

DEFAULT_PANDO_NAMESPACE = "pando-system"
DEFAULT_CLUSTER_DOMAIN = "cluster.local"
DEFAULT_VOLUME_SIZE_BYTES = 1 << 30
MAX_VOLUME_SIZE_BYTES = (1 << 63) - 1

# The fields this adapter reads, in the order the schema lists them.
FIELDS = (
    "pando_namespace",
    "cluster_domain",
    "pod_cidr",
    "service_cidr",
    "node_cidrs",
    "exclude_metadata_address",
    "dns_egress",
    "api_server_cidr",
    "storage_class",
    "volume_size_bytes",
    "runtime_class",
    "node_selector",
)

# Settings of the Rust Kubernetes adapter for features this one does not
# have; named in the refusal so an operator knows why.
NOT_HERE = {
    "pando_service": "the edge",
    "proxy_port": "the edge",
    "edge_namespace": "the edge",
    "edge_replicas": "the edge",
    "edge_service_type": "the edge",
    "edge_http_node_port": "the edge",
    "edge_https_node_port": "the edge",
    "service_account": "the app RoleBinding",
    "app_role": "the app RoleBinding",
    "egress_gateway_image": "restricted egress to DNS names",
    "helper_image": "trials and volume snapshots",
    "api_qps": "its own rate limit (the host's grants set the rate)",
    "api_burst": "its own rate limit (the host's grants set the rate)",
}


# The link-local address clouds serve instance metadata on; excluded from
# every egress rule unless `exclude_metadata_address` is false.
METADATA_ADDRESS = "169.254.169.254/32"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class DnsEgress:
    """`dns_egress`: where every app's policy lets it send DNS queries."""

    namespace_selector: Tuple[Tuple[str, str], ...] = ((NAMESPACE_NAME_LABEL, "kube-system"),)
    pod_selector: Tuple[Tuple[str, str], ...] = ()
    cidrs: Tuple[cidr.Cidr, ...] = ()
    port: int = 53


@dataclass(frozen=True)
class Config:
    """The configuration, validated, with every default filled in."""

    pod_cidrs: Tuple[cidr.Cidr, ...]
    service_cidrs: Tuple[cidr.Cidr, ...]
    node_cidrs: Tuple[cidr.Cidr, ...] = ()
    exclude_metadata_address: bool = True
    dns_egress: DnsEgress = field(default_factory=DnsEgress)
    pando_namespace: str = DEFAULT_PANDO_NAMESPACE
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN
    api_server_cidr: Optional[cidr.Cidr] = None
    storage_class: Optional[str] = None
    volume_size_bytes: int = DEFAULT_VOLUME_SIZE_BYTES
    runtime_class: Optional[str] = None
    node_selector: Dict[str, str] = field(default_factory=dict)


def invalid_field(name: str, why: str) -> Exception:
    """"configuration field `<name>`: <why>"."""
    return errors.invalid(f"configuration field `{name}`: {why}")


def _string(name: str, value: Any) -> Optional[str]:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise invalid_field(name, f"`{json.dumps(value)}` is not a string")
    return value


def _integer(name: str, value: Any, least: int, most: int) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise invalid_field(name, f"`{json.dumps(value)}` is not a number")
    if isinstance(value, float) and not value.is_integer():
        raise invalid_field(
            name, f"{value} is out of range: it must be a whole number from {least} to {most}"
        )
    number = int(value)
    if not least <= number <= most:
        raise invalid_field(name, f"{value} is out of range: it must be from {least} to {most}")
    return number


def _check(name: str, value: str, check: Callable[[str], Optional[str]]) -> None:
    why = check(value)
    if why is not None:
        raise invalid_field(name, f"`{value}` {why}")


def _cidr(name: str, text: str) -> cidr.Cidr:
    try:
        return cidr.parse(text)
    except cidr.CidrError as why:
        raise invalid_field(name, f"`{text}` is not a CIDR ({why})") from None


def _cidr_list(name: str, value: Any, example: Optional[str]) -> Tuple[cidr.Cidr, ...]:
    """One CIDR or a list of them (dual stack); `example` makes it required."""
    if value is None or value == "":
        items: list = []
    elif isinstance(value, list):
        items = value
    else:
        items = [value]
    out = []
    for i, item in enumerate(items):
        text = _string(name, item)
        if text is None:
            raise invalid_field(name, f"entry {i} is empty: give a CIDR such as `10.244.0.0/16`")
        out.append(_cidr(name, text))
    if not out and example is not None:
        raise invalid_field(
            name,
            f"is required: the cluster's address range, as a CIDR such as `{example}`, or a "
            "list of them (one of each family on a dual-stack cluster); the API does not "
            "report it reliably",
        )
    return tuple(out)


def _labels(name: str, value: Any) -> Tuple[Tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise invalid_field(name, f"`{json.dumps(value)}` is not an object of labels")
    out = []
    for key, v in value.items():
        if not isinstance(v, str):
            raise invalid_field(name, f"the value of label `{key}` is not a string")
        why = names.check_label_key(key)
        if why is not None:
            raise invalid_field(name, f"label key `{key}` {why}")
        why = names.check_label_value(v)
        if why is not None:
            raise invalid_field(name, f"label value `{v}` {why}")
        out.append((key, v))
    return tuple(sorted(out))


def _dns_egress(value: Any) -> DnsEgress:
    name = "dns_egress"
    if value is None:
        return DnsEgress()
    if not isinstance(value, dict):
        raise invalid_field(name, f"`{json.dumps(value)}` is not an object")
    dns = DnsEgress()
    fields: Dict[str, Any] = {}
    for key, v in value.items():
        at = f"{name}.{key}"
        if key in ("namespace_selector", "pod_selector"):
            fields[key] = _labels(at, v)
        elif key == "cidrs":
            fields[key] = _cidr_list(at, v, None)
        elif key == "port":
            port = _integer(at, v, 1, 65535)
            if port is not None:
                fields[key] = port
        else:
            raise invalid_field(
                name, f"unknown key `{key}`: use namespace_selector, pod_selector, cidrs, port"
            )
    dns = dataclasses.replace(dns, **fields)
    if not dns.namespace_selector and not dns.cidrs:
        raise invalid_field(
            name,
            "names no DNS server: give a `namespace_selector` (the default is namespace "
            "`kube-system`) or `cidrs`",
        )
    if not dns.namespace_selector and dns.pod_selector:
        raise invalid_field(
            name,
            "`pod_selector` needs a `namespace_selector`: pods are selected in the namespaces "
            "it names",
        )
    return dns


def parse_node_selector(text: str) -> Dict[str, str]:
    """`key=value,key=value`: keys and values as Kubernetes labels allow,
    spaces around them ignored, each key once. Raises `ValueError` saying
    why."""
    labels: Dict[str, str] = {}
    if not text.strip():
        return labels
    for entry in text.split(","):
        key, sep, value = entry.partition("=")
        if not sep:
            raise ValueError(f"`{entry.strip()}` is not `key=value`")
        key, value = key.strip(), value.strip()
        why = names.check_label_key(key)
        if why is not None:
            raise ValueError(f"label key `{key}` {why}")
        why = names.check_label_value(value)
        if why is not None:
            raise ValueError(f"label value `{value}` {why}")
        if key in labels:
            raise ValueError(f"label key `{key}` appears twice")
        labels[key] = value
    return labels


def parse(text: str) -> Config:
    """Parse and validate the JSON configuration. Empty text is `{}`, which
    fails for want of `pod_cidr`."""
    try:
        raw = json.loads(text if text.strip() else "{}")
    except ValueError as e:
        raise errors.invalid(f"configuration: it is not JSON ({e})") from None
    if not isinstance(raw, dict):
        raise errors.invalid("configuration: it must be a JSON object of settings")
    for name in raw:
        if name in FIELDS:
            continue
        if name in NOT_HERE:
            raise invalid_field(
                name,
                f"is a setting of the Kubernetes adapter for {NOT_HERE[name]}, which this "
                "adapter does not have: remove it, or use the Kubernetes adapter",
            )
        raise invalid_field(
            name, f"is not a setting of this adapter; it reads {', '.join(FIELDS)}"
        )

    pando_namespace = _string("pando_namespace", raw.get("pando_namespace"))
    pando_namespace = pando_namespace or DEFAULT_PANDO_NAMESPACE
    _check("pando_namespace", pando_namespace, names.check_dns_label)

    cluster_domain = _string("cluster_domain", raw.get("cluster_domain"))
    cluster_domain = cluster_domain or DEFAULT_CLUSTER_DOMAIN
    _check("cluster_domain", cluster_domain, names.check_dns_subdomain)

    pod_cidrs = _cidr_list("pod_cidr", raw.get("pod_cidr"), "10.244.0.0/16")
    service_cidrs = _cidr_list("service_cidr", raw.get("service_cidr"), "10.96.0.0/12")
    node_cidrs = _cidr_list("node_cidrs", raw.get("node_cidrs"), None)
    exclude = raw.get("exclude_metadata_address")
    if exclude is not None and not isinstance(exclude, bool):
        raise invalid_field(
            "exclude_metadata_address", f"`{json.dumps(exclude)}` is not `true` or `false`"
        )
    dns_egress = _dns_egress(raw.get("dns_egress"))
    api_server_text = _string("api_server_cidr", raw.get("api_server_cidr"))
    api_server_cidr = None if api_server_text is None else _cidr("api_server_cidr", api_server_text)

    storage_class = _string("storage_class", raw.get("storage_class"))
    if storage_class is not None:
        _check("storage_class", storage_class, names.check_dns_subdomain)

    volume_size_bytes = _integer(
        "volume_size_bytes", raw.get("volume_size_bytes"), 1, MAX_VOLUME_SIZE_BYTES
    )

    runtime_class = _string("runtime_class", raw.get("runtime_class"))
    if runtime_class is not None:
        _check("runtime_class", runtime_class, names.check_dns_subdomain)

    selector_text = _string("node_selector", raw.get("node_selector"))
    node_selector: Dict[str, str] = {}
    if selector_text is not None:
        try:
            node_selector = parse_node_selector(selector_text)
        except ValueError as why:
            raise invalid_field(
                "node_selector", f"`{selector_text}` is not a selector: {why}"
            ) from None

    return Config(
        pod_cidrs=pod_cidrs,
        service_cidrs=service_cidrs,
        node_cidrs=node_cidrs,
        exclude_metadata_address=True if exclude is None else exclude,
        dns_egress=dns_egress,
        pando_namespace=pando_namespace,
        cluster_domain=cluster_domain,
        api_server_cidr=api_server_cidr,
        storage_class=storage_class,
        volume_size_bytes=volume_size_bytes or DEFAULT_VOLUME_SIZE_BYTES,
        runtime_class=runtime_class,
        node_selector=node_selector,
    )
