"""The JSON Schema (draft 2020-12) of the configuration `configure` takes,
reported by `info()`. `config.parse` is what checks a document; this
describes the same fields, defaults and requirements."""

from __future__ import annotations

import json
from typing import Any, Dict

from . import config

CIDR_PATTERN = r"^[0-9A-Fa-f.:]+/[0-9]{1,3}$"


def schema() -> Dict[str, Any]:
    """The schema, as a JSON value."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Pando's Python Kubernetes adapter configuration",
        "description": "How this adapter runs apps on a Kubernetes cluster. "
        "The cluster's credentials are the host's (its kubeconfig and grants), not this "
        "adapter's. The fields are those of the Kubernetes adapter that this one uses.",
        "type": "object",
        "additionalProperties": False,
        "required": ["pod_cidr", "service_cidr"],
        "properties": {
            "pando_namespace": {
                "type": ["string", "null"],
                "description": "Where Pando's server pods run. An app's namespace admits "
                "connections from pods here labelled `app.kubernetes.io/name: pando`, and "
                "nothing else from outside itself (R-023). A DNS label.",
                "default": config.DEFAULT_PANDO_NAMESPACE,
                "maxLength": 63,
            },
            "cluster_domain": {
                "type": ["string", "null"],
                "description": "The cluster's DNS domain: a workload is reached at "
                "`<workload>.pando-<app>.svc.<cluster_domain>` (R-023). A DNS subdomain.",
                "default": config.DEFAULT_CLUSTER_DOMAIN,
                "maxLength": 253,
            },
            "pod_cidr": {
                "type": ["string", "array"],
                "description": "The cluster's pod address ranges: a CIDR (IPv4 or IPv6), or a "
                "list of them, one of each family on a dual-stack cluster. An app may open "
                "connections out of the cluster, never into these ranges (R-025).",
                "pattern": CIDR_PATTERN,
                "items": {"type": "string", "pattern": CIDR_PATTERN},
                "minItems": 1,
                "examples": ["10.244.0.0/16", ["10.244.0.0/16", "fd00:10:244::/56"]],
            },
            "service_cidr": {
                "type": ["string", "array"],
                "description": "The cluster's Service address ranges: a CIDR (IPv4 or IPv6), or "
                "a list of them. An app may open connections out of the cluster, never into them.",
                "pattern": CIDR_PATTERN,
                "items": {"type": "string", "pattern": CIDR_PATTERN},
                "minItems": 1,
                "examples": ["10.96.0.0/12", ["10.96.0.0/12", "fd00:10:96::/112"]],
            },
            "node_cidrs": {
                "type": ["string", "array", "null"],
                "description": "The nodes' addresses (the kubelet's port, NodePorts), kept out "
                "of every app's egress as the pod and Service ranges are. Unset, none.",
                "default": [],
                "pattern": CIDR_PATTERN,
                "items": {"type": "string", "pattern": CIDR_PATTERN},
            },
            "exclude_metadata_address": {
                "type": ["boolean", "null"],
                "description": "Whether the cloud metadata address, 169.254.169.254, is kept "
                "out of every app's egress.",
                "default": True,
            },
            "dns_egress": {
                "type": ["object", "null"],
                "description": "Where every app's policy lets it send DNS queries: pods by "
                "`namespace_selector` (default `kube-system`) and `pod_selector`, and `cidrs`, "
                "on `port` (53) over UDP and TCP.",
                "default": {
                    "namespace_selector": {"kubernetes.io/metadata.name": "kube-system"},
                    "pod_selector": {},
                    "cidrs": [],
                    "port": 53,
                },
                "additionalProperties": False,
            },
            "api_server_cidr": {
                "type": ["string", "null"],
                "description": "The API server's address, as a CIDR, excluded from open egress "
                "as the cluster's ranges are. Unset when it is not needed.",
                "default": None,
                "pattern": CIDR_PATTERN,
                "examples": ["172.18.0.2/32"],
            },
            "storage_class": {
                "type": ["string", "null"],
                "description": "The StorageClass volumes are made with; unset is the "
                "cluster's default class.",
                "default": None,
                "maxLength": 253,
            },
            "volume_size_bytes": {
                "type": ["integer", "null"],
                "description": "A volume's size in bytes when its request names none.",
                "default": config.DEFAULT_VOLUME_SIZE_BYTES,
                "minimum": 1,
                "maximum": config.MAX_VOLUME_SIZE_BYTES,
            },
            "runtime_class": {
                "type": ["string", "null"],
                "description": "The RuntimeClass app pods run under, which decides the "
                "isolation class reported (R-114, R-115): a gVisor (`runsc`) or Kata (`kata`, "
                "`kata-*`) handler is `sandboxed`, anything else, or unset, `shared-kernel`. "
                "It must exist in the cluster.",
                "default": None,
                "maxLength": 253,
            },
            "node_selector": {
                "type": ["string", "null"],
                "description": "Limits app pods to nodes with these labels, as "
                "`key=value,key=value`. Empty is every node.",
                "default": "",
                "examples": ["pando.dev/pool=apps"],
            },
        },
    }


def schema_text() -> str:
    """The schema as the JSON document `kind-info.config-schema` carries."""
    return json.dumps(schema(), indent=2)
