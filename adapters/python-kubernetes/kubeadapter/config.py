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

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional

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


@dataclass(frozen=True)
class Config:
    """The configuration, validated, with every default filled in."""

    pod_cidr: cidr.Cidr
    service_cidr: cidr.Cidr
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


def _required_cidr(name: str, value: Any, example: str) -> cidr.Cidr:
    text = _string(name, value)
    if text is None:
        raise invalid_field(
            name,
            f"is required: the cluster's address range, as a CIDR such as `{example}` "
            "(the API does not report it reliably)",
        )
    return _cidr(name, text)


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

    pod_cidr = _required_cidr("pod_cidr", raw.get("pod_cidr"), "10.244.0.0/16")
    service_cidr = _required_cidr("service_cidr", raw.get("service_cidr"), "10.96.0.0/12")
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
        pod_cidr=pod_cidr,
        service_cidr=service_cidr,
        pando_namespace=pando_namespace,
        cluster_domain=cluster_domain,
        api_server_cidr=api_server_cidr,
        storage_class=storage_class,
        volume_size_bytes=volume_size_bytes or DEFAULT_VOLUME_SIZE_BYTES,
        runtime_class=runtime_class,
        node_selector=node_selector,
    )
