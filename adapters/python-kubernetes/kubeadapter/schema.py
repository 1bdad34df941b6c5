"""The JSON Schema (draft 2020-12) of the configuration `configure` takes,
reported by `info()`. `config.parse` is what checks a document; this
describes the same fields, defaults and requirements.

A field's schema is the Kubernetes adapter's own, from the one file both
adapters read: adapter-kubernetes/src/config/schema.json, which the build
(scripts/build-python-adapter) puts on this adapter's Python path as
`SHARED_FILE`. So a field the two share is described once, and a change
there reaches both. This module keeps the fields this adapter reads
(`config.FIELDS`), fills in the defaults `config.parse` applies, and says
where a field means something else here (`HERE`).

The file is read when this module is imported, which componentize-py does
at build time: the component carries the schema and opens no file at run
time. A build without the file fails, naming it.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from typing import Any, Dict

from . import config

SHARED_FILE = "pando_kubernetes_config_schema.json"

TITLE = "Pando's Python Kubernetes adapter configuration"
DESCRIPTION = (
    "How this adapter runs apps on a Kubernetes cluster. The cluster's credentials are the "
    "host's (its kubeconfig and grants), not this adapter's. The fields are those of the "
    "Kubernetes adapter that this one uses. A field that is absent, null, or an empty string "
    "takes its default."
)

# The defaults `config.parse` fills in, as JSON (the Rust adapter writes
# its own in adapter-kubernetes/src/config/defaults.rs; a test holds the
# two equal for every field they share).
DEFAULTS: Dict[str, Any] = {
    "pando_namespace": config.DEFAULT_PANDO_NAMESPACE,
    "cluster_domain": config.DEFAULT_CLUSTER_DOMAIN,
    "node_cidrs": [],
    "exclude_metadata_address": True,
    "dns_egress": {
        "namespace_selector": {config.NAMESPACE_NAME_LABEL: "kube-system"},
        "pod_selector": {},
        "cidrs": [],
        "port": 53,
    },
    "api_server_cidr": None,
    "storage_class": None,
    "volume_size_bytes": config.DEFAULT_VOLUME_SIZE_BYTES,
    "runtime_class": None,
    "node_selector": "",
}

# Where a field means something else here than in the Kubernetes adapter:
# the keys replaced in its shared schema.
HERE: Dict[str, Dict[str, Any]] = {
    # The Rust adapter lets its edge reach the API server through an
    # excluded range; this adapter has no edge, so the address is only
    # kept out of every app's egress.
    "api_server_cidr": {
        "description": "The API server's address, as a CIDR, kept out of every app's "
        "egress as the cluster's ranges are. Unset when it is not needed.",
    },
}


def _shared() -> Dict[str, Any]:
    for entry in sys.path:
        path = os.path.join(entry or ".", SHARED_FILE)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                return json.load(f)
    raise RuntimeError(
        f"{SHARED_FILE} is on no Python path entry: build the adapter with "
        "scripts/build-python-adapter, which puts adapter-kubernetes/src/config/schema.json there"
    )


def _build(shared: Dict[str, Any]) -> Dict[str, Any]:
    properties: Dict[str, Any] = {}
    for name in config.FIELDS:
        if name not in shared.get("properties", {}):
            raise RuntimeError(
                f"configuration field `{name}` is read here but not in {SHARED_FILE}: "
                "add it to adapter-kubernetes/src/config/schema.json or stop reading it"
            )
        prop = copy.deepcopy(shared["properties"][name])
        prop.update(copy.deepcopy(HERE.get(name, {})))
        if name in DEFAULTS:
            prop["default"] = copy.deepcopy(DEFAULTS[name])
        properties[name] = prop
    return {
        "$schema": shared["$schema"],
        "title": TITLE,
        "description": DESCRIPTION,
        "type": "object",
        "additionalProperties": False,
        "required": [r for r in shared["required"] if r in config.FIELDS],
        "properties": properties,
    }


_SCHEMA = _build(_shared())


def schema() -> Dict[str, Any]:
    """The schema, as a JSON value."""
    return copy.deepcopy(_SCHEMA)


def schema_text() -> str:
    """The schema as the JSON document `kind-info.config-schema` carries."""
    return json.dumps(_SCHEMA, indent=2)
