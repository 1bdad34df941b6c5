"""The Kubernetes objects an app is made of, built from a plan and the
configuration: the shapes, labels and spec hash of the Rust adapter's
(adapter-kubernetes/src/objects.rs), for the subset this adapter makes
(namespace, default-deny NetworkPolicy, headless Service, bare pod, pull
Secret). Pure functions: no host calls.

Every object carries `app.kubernetes.io/managed-by: pando` and
`pando.dev/app: <id>`, so either adapter finds (and deletes) the other's,
and a `pando.dev/spec-hash` annotation of what was asked for. The hash is
the Rust adapter's own (FNV-1a, 64 bits, over the object's compact JSON
with sorted keys, as serde_json writes it), so an app applied by one
adapter is satisfied for the other: apply compares that hash rather than
the object the API server returns, whose defaulted fields would never
equal the plan's (O-41).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from wit_world.imports import types

from . import cidr, errors, exclusions, names
from .config import Config

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "pando"
APP_LABEL = "pando.dev/app"
WORKLOAD_LABEL = "pando.dev/workload"
VOLUME_LABEL = "pando.dev/volume"
HELPER_LABEL = "pando.dev/helper"
DIGEST_ANNOTATION = "pando.dev/digest"
HASH_ANNOTATION = "pando.dev/spec-hash"
PANDO_SERVER_LABEL = ("app.kubernetes.io/name", "pando")
POLICY_NAME = "pando-default-deny"
PULL_SECRET_NAME = "pando-pull"
CONTAINER_NAME = "workload"
FIELD_MANAGER = "pando"

Json = Dict[str, Any]

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x00000100000001B3
_MASK64 = (1 << 64) - 1


def app_labels(app_id: str) -> Json:
    """The labels every object of app `app_id` carries."""
    return {MANAGED_BY: MANAGER, APP_LABEL: app_id}


def workload_labels(app_id: str, workload: str) -> Json:
    """The labels of a workload's pod, which its Service selects."""
    return {MANAGED_BY: MANAGER, APP_LABEL: app_id, WORKLOAD_LABEL: workload}


def managed_selector() -> str:
    """The label selector of the objects Pando made."""
    return f"{MANAGED_BY}={MANAGER}"


def canonical_json(value: Any) -> str:
    """The object's JSON as serde_json's `Value::to_string` writes it:
    compact, keys sorted, non-ASCII unescaped."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def spec_hash(value: Any) -> str:
    """FNV-1a, 64 bits, in hex: a stable hash telling whether a desired
    object changed (not a security boundary)."""
    h = _FNV_OFFSET
    for b in canonical_json(value).encode("utf-8"):
        h ^= b
        h = (h * _FNV_PRIME) & _MASK64
    return f"{h:016x}"


def with_hash(obj: Json) -> Json:
    """Puts the hash of `obj`, as it is now, into its annotations."""
    h = spec_hash(obj)
    obj["metadata"].setdefault("annotations", {})[HASH_ANNOTATION] = h
    return obj


def stored_hash(obj: Json) -> Any:
    """The hash an existing (or desired) object carries, or None."""
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(HASH_ANNOTATION)


def namespace(name: str, app_id: str) -> Json:
    """The app's namespace, labelled as Pando's."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": app_labels(app_id)},
    }


def _egress(config: Config, plan: types.BundlePlan) -> List[Json]:
    own: Json = {"podSelector": {}}
    egress: List[Json] = [exclusions.dns_rule(config), {"to": [own]}]
    policy = plan.network.egress
    if isinstance(policy, types.EgressPolicy_None_):
        return egress
    if isinstance(policy, types.EgressPolicy_Open):
        egress.append({"to": exclusions.outside(config)})
        return egress
    # Restricted: CIDR destinations only.
    for rule in policy.value:
        try:
            destination = cidr.parse(rule.destination)
        except cidr.CidrError:
            why = _check_host(rule.destination)
            if why is not None:
                raise errors.invalid(
                    f"egress destination `{rule.destination}` of app `{plan.id}` {why}"
                ) from None
            raise errors.unsupported(
                f"egress destination `{rule.destination}` of app `{plan.id}` is a host name: "
                "restricting egress to names needs the egress gateway (R-186, R-187), which "
                "this adapter does not run; use a CIDR, or open egress"
            ) from None
        ports = [
            entry
            for p in rule.ports
            for entry in ({"protocol": "TCP", "port": p}, {"protocol": "UDP", "port": p})
        ]
        # Clipped as `open` is: never into the cluster.
        try:
            peer = exclusions.clip(config, destination)
        except ValueError as why:
            raise errors.invalid(
                f"egress destination `{rule.destination}` of app `{plan.id}` {why}"
            ) from None
        entry: Json = {"to": [peer]}
        if ports:
            entry["ports"] = ports
        egress.append(entry)
    return egress


def _check_host(host: str) -> Optional[str]:
    """Why `host` is not a host name (`api.example.com`, `*.example.com`),
    or None."""
    what = "is neither a CIDR nor a host name"
    if not host or len(host) > 253:
        return what
    for i, label in enumerate(host.split(".")):
        if i == 0 and label == "*":
            continue
        why = names.check_dns_label(label.lower())
        if why is not None:
            return f"{what}: label `{label}` {why}"
    return None


def network_policy(config: Config, plan: types.BundlePlan) -> Json:
    """The default-deny policy (R-023, R-025): in, only Pando's server pods
    and the app's own; out, cluster DNS, the app, and what the plan's
    egress allows."""
    own: Json = {"podSelector": {}}
    pando = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": config.pando_namespace}},
        "podSelector": {"matchLabels": {PANDO_SERVER_LABEL[0]: PANDO_SERVER_LABEL[1]}},
    }
    return with_hash(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": POLICY_NAME, "labels": app_labels(plan.id)},
            "spec": {
                "podSelector": {},
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": [own, pando]}],
                "egress": _egress(config, plan),
            },
        }
    )


def pull_secret(app_id: str, credentials: List[types.RegistryCredential]) -> Json:
    """The pull Secret (`kubernetes.io/dockerconfigjson`)."""
    auths = {c.registry: {"username": c.username, "password": c.password} for c in credentials}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": PULL_SECRET_NAME, "labels": app_labels(app_id)},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": canonical_json({"auths": auths})},
    }


def _protocol(p: Any) -> str:
    # `types.Protocol` (the WIT enum `protocol`) shadows `typing.Protocol`
    # in the generated module, which confuses type checkers: compare names.
    return "UDP" if p.name == "UDP" else "TCP"


def service(app_id: str, w: types.WorkloadSpec) -> Json:
    """A workload's headless Service (`clusterIP: None`): its name resolves
    to the pod inside the cluster, and nothing outside reaches it (R-026)."""
    name = names.service_name(w.name)
    ports = [
        {
            "name": f"{_protocol(p.protocol).lower()}-{p.port}",
            "port": p.port,
            "targetPort": p.port,
            "protocol": _protocol(p.protocol),
        }
        for p in w.ports
    ]
    return with_hash(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "labels": workload_labels(app_id, w.name)},
            "spec": {
                "clusterIP": "None",
                "selector": workload_labels(app_id, w.name),
                "ports": ports,
            },
        }
    )


def digest_of(w: types.WorkloadSpec) -> str:
    """What the digest annotation records: the digest, or the image."""
    return w.digest if w.digest is not None else w.image


def _image_ref(w: types.WorkloadSpec) -> str:
    if w.digest is not None and "@" not in w.image:
        return f"{w.image}@{w.digest}"
    return w.image


def _resources(cpu_millis: int, memory_bytes: int) -> Json:
    return {"cpu": f"{cpu_millis}m", "memory": str(memory_bytes)}


def claim_name(volume: str) -> str:
    """A volume's claim name: the volume's own, a DNS label."""
    why = names.check_dns_label(volume)
    if why is not None:
        raise errors.invalid(f"volume name `{volume}` {why}")
    return volume


def pod(config: Config, plan: types.BundlePlan, w: types.WorkloadSpec) -> Json:
    """A workload's bare pod (R-151): `restartPolicy: Never`, no owner, no
    service-account token, no host ports or host network (R-026)."""
    name = names.service_name(w.name)
    volumes = {v.name for v in plan.volumes}
    mounts: List[Json] = []
    pod_volumes: List[Json] = []
    for i, m in enumerate(w.mounts):
        if m.volume not in volumes:
            raise errors.invalid(
                f"workload `{w.name}` mounts volume `{m.volume}`, which plan `{plan.id}` "
                "does not have"
            )
        vname = f"v{i}"
        mounts.append({"name": vname, "mountPath": m.path, "readOnly": m.read_only})
        pod_volumes.append(
            {
                "name": vname,
                "persistentVolumeClaim": {
                    "claimName": claim_name(m.volume),
                    "readOnly": m.read_only,
                },
            }
        )
    r = w.resources
    resources: Json = {"requests": _resources(r.requests.cpu_millis, r.requests.memory_bytes)}
    if r.limits is not None:
        resources["limits"] = _resources(r.limits.cpu_millis, r.limits.memory_bytes)
    container: Json = {
        "name": CONTAINER_NAME,
        "image": _image_ref(w),
        "env": [{"name": e.name, "value": e.value} for e in w.env],
        "ports": [{"containerPort": p.port, "protocol": _protocol(p.protocol)} for p in w.ports],
        "resources": resources,
        "volumeMounts": mounts,
        # As the Rust adapter's app pods: baseline, no setuid gains, the
        # runtime's default seccomp profile (below).
        "securityContext": {"allowPrivilegeEscalation": False},
    }
    if w.command:
        container["command"] = list(w.command)
    if w.args:
        container["args"] = list(w.args)
    spec: Json = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
        "volumes": pod_volumes,
    }
    if plan.pull_credentials:
        spec["imagePullSecrets"] = [{"name": PULL_SECRET_NAME}]
    if config.runtime_class is not None:
        spec["runtimeClassName"] = config.runtime_class
    if config.node_selector:
        spec["nodeSelector"] = dict(config.node_selector)
    return with_hash(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "labels": workload_labels(plan.id, w.name),
                "annotations": {DIGEST_ANNOTATION: digest_of(w)},
            },
            "spec": spec,
        }
    )


def claim(config: Config, app_id: str, name: str, size: Optional[int]) -> Json:
    """A volume's claim: `ReadWriteOnce`, the configured class, the plan's
    size or the configured default. No spec hash: a claim is never
    replaced (its spec is immutable, and it holds data)."""
    name = claim_name(name)
    labels = app_labels(app_id)
    labels[VOLUME_LABEL] = name
    spec: Json = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {
            "requests": {"storage": str(size if size is not None else config.volume_size_bytes)}
        },
    }
    if config.storage_class is not None:
        spec["storageClassName"] = config.storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    }
