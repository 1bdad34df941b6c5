"""Volumes, as the Rust adapter keeps them (adapter-kubernetes/src/volumes.rs):
a PersistentVolumeClaim per volume in the app's namespace, its
PersistentVolume patched to `Retain` once bound, so destroying the app keeps
the data unless the volumes are asked for too (R-204); and the namespace the
claims live in."""

from __future__ import annotations

import time
from typing import List, Optional

from componentize_py_types import Err
from wit_world.imports import types

from . import errors, kube, names, objects
from .config import Config
from .kube import Json


# The adapter's own binding in each namespace it makes, as the Rust adapter's
# (adapter-kubernetes/src/rbac.rs): cluster-wide its identity may only make
# namespaces and read (deploy/kubernetes/rbac.yaml); inside one it acts
# through this ClusterRole, bound to itself. Its defaults, not configurable
# here: the test cluster's user.
NAMESPACE_ROLE = "pando-adapter-namespace"
OWN_BINDING = "pando-adapter"
ADAPTER_USER = "pando"
# How long RBAC's cache may take to see a new binding.
BINDING_LAG_SECONDS = 2.0
# The memory limit a container without one gets (the cluster's admission
# policy refuses the adapter's pods without one), as the Rust adapter's
# `container_limits` default.
DEFAULT_MEMORY_LIMIT = str(1 << 30)


def _rbac(ns: str, resource: str, name: str = "") -> str:
    path = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/{resource}"
    return f"{path}/{name}" if name else path


def set_up_namespace(ns: str) -> None:
    """Binds NAMESPACE_ROLE to the adapter in `ns`, just made, waits until
    RBAC lets it read that binding back (at most BINDING_LAG_SECONDS), and
    makes the LimitRange that gives containers a default memory limit."""
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": OWN_BINDING, "labels": {objects.MANAGED_BY: objects.MANAGER}},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": NAMESPACE_ROLE,
        },
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": ADAPTER_USER}
        ],
    }
    query = [("fieldManager", kube.FIELD_MANAGER)]
    answer = kube.send("POST", _rbac(ns, "rolebindings"), query, binding)
    if not answer.ok and answer.status != 409:
        raise answer.error()
    # No sleep here: the host's rate limit (qps 5) spaces the reads out.
    start = time.monotonic()
    while True:
        answer = kube.send("GET", _rbac(ns, "rolebindings", OWN_BINDING))
        if answer.ok:
            break
        if answer.status != 403 or time.monotonic() - start >= BINDING_LAG_SECONDS:
            raise answer.error()
    limits = {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "pando-app", "labels": {objects.MANAGED_BY: objects.MANAGER}},
        "spec": {"limits": [{"type": "Container", "default": {"memory": DEFAULT_MEMORY_LIMIT}}]},
    }
    answer = kube.send("POST", kube.core(ns, "limitranges"), query, limits)
    if not answer.ok and answer.status != 409:
        raise answer.error()


def ensure_namespace(ns: str, app_id: str) -> None:
    """Makes the app's namespace when it is missing, with the adapter's own
    binding and a LimitRange in it (`set_up_namespace`). One that exists but
    is not Pando's is a conflict: Pando never takes over what it did not
    make."""
    try:
        existing = kube.get_opt(kube.namespace_path(ns))
        if existing is None:
            kube.create(kube.namespace_path(), objects.namespace(ns, app_id))
            set_up_namespace(ns)
            return
    except Err as e:
        raise errors.with_context(e, f"namespace `{ns}`") from None
    check_owned(existing, ns, app_id)
    if (existing.get("metadata") or {}).get("deletionTimestamp"):
        raise errors.unavailable(f"namespace `{ns}` is being deleted; apply again once it is gone")


def check_owned(existing: Json, ns: str, app_id: str) -> None:
    """`conflict` unless namespace `existing` carries Pando's label and app
    `app_id`'s: the edge's, the canary's and a trial's are Pando's too, and
    a call about an app writes or deletes only in that app's own."""
    labels = kube.labels_of(existing)
    if labels.get(objects.MANAGED_BY) != objects.MANAGER:
        raise errors.conflict(
            f"namespace `{ns}` exists and is not Pando's (no label "
            f"`{objects.MANAGED_BY}: {objects.MANAGER}`): rename the app, or remove the namespace"
        )
    app = labels.get(objects.APP_LABEL)
    if app != app_id:
        shown = "absent" if app is None else f"`{app}`"
        raise errors.conflict(
            f"namespace `{ns}` is Pando's but not app `{app_id}`'s (its label "
            f"`{objects.APP_LABEL}` is {shown}): Pando made it for something else, and nothing "
            "of it is touched; rename the app"
        )


def owned_namespace(ns: str, app_id: str) -> Optional[Json]:
    """Namespace `ns` of app `app_id` when it exists and is the app's own;
    `conflict` when it exists and is not (`check_owned`)."""
    try:
        existing = kube.get_opt(kube.namespace_path(ns))
    except Err as e:
        raise errors.with_context(e, f"namespace `{ns}`") from None
    if existing is not None:
        check_owned(existing, ns, app_id)
    return existing


def _pv_path(name: str) -> str:
    return f"/api/v1/persistentvolumes/{name}"


def set_reclaim_policy(claim: Json, policy: str) -> None:
    """Sets the reclaim policy of a bound claim's volume to `policy` when it
    is not so already (a GET, and a PATCH only when needed)."""
    pv = (claim.get("spec") or {}).get("volumeName") or ""
    if not pv:
        return
    try:
        existing = kube.get_opt(_pv_path(pv))
        if existing is None:
            return
        current = (existing.get("spec") or {}).get("persistentVolumeReclaimPolicy")
        if current != policy:
            kube.merge_patch(_pv_path(pv), {"spec": {"persistentVolumeReclaimPolicy": policy}})
    except Err as e:
        raise errors.with_context(e, f"PersistentVolume `{pv}`") from None


def ensure_claims(ns: str, desired: List[Json]) -> None:
    """Creates the plan's missing claims and retains the bound ones'
    volumes. A claim is never replaced (its spec is immutable, and it holds
    data); claims the plan no longer has are kept: a volume goes only by
    `destroy-volume` or `destroy` without `keep-volumes` (R-204)."""
    existing = kube.list_items(kube.core(ns, "persistentvolumeclaims"))
    have = {kube.name_of(c) for c in existing}
    for claim in existing:
        set_reclaim_policy(claim, "Retain")
    for claim in desired:
        if kube.name_of(claim) not in have:
            kube.create(kube.core(ns, "persistentvolumeclaims"), claim)


def handle(app_id: str, ns: str, name: str) -> types.VolumeHandle:
    """The handle of volume `name` of app `app_id`."""
    return types.VolumeHandle(bundle=app_id, name=name, location=f"{ns}/{name}")


def create_volume(config: Config, request: types.VolumeRequest) -> types.VolumeHandle:
    """A claim in the app's namespace, which is made as apply makes it when
    missing. A claim that exists already is the volume."""
    ns = names.app_namespace(request.bundle)
    claim = objects.claim(config, request.bundle, request.name, request.size_bytes)
    ensure_namespace(ns, request.bundle)
    answer = kube.send(
        "POST",
        kube.core(ns, "persistentvolumeclaims"),
        [("fieldManager", objects.FIELD_MANAGER)],
        claim,
    )
    if not answer.ok and answer.status != 409:
        raise errors.with_context(answer.error(), f"claim `{ns}/{request.name}`")
    return handle(request.bundle, ns, request.name)


def destroy_claim(ns: str, name: str, claim: Optional[Json] = None) -> None:
    """Deletes a claim and its data: the volume's reclaim policy goes back
    to `Delete` first, since deleting a retained volume's claim would leave
    the disk behind it. A claim already gone is not an error."""
    path = kube.core(ns, "persistentvolumeclaims", name)
    try:
        if claim is None:
            claim = kube.get_opt(path)
            if claim is None:
                return
        set_reclaim_policy(claim, "Delete")
        kube.delete_opt(path)
    except Err as e:
        raise errors.with_context(e, f"claim `{ns}/{name}`") from None


def destroy_volume(volume: types.VolumeHandle) -> None:
    """`destroy-volume`: the volume's claim and its data."""
    ns = names.app_namespace(volume.bundle)
    # No namespace, no binding of the adapter's in it (RBAC would answer 403,
    # not 404): no claim either. Another's is `conflict`.
    if owned_namespace(ns, volume.bundle) is None:
        return
    destroy_claim(ns, objects.claim_name(volume.name))


def list_handles(app_id: str, ns: str) -> List[types.VolumeHandle]:
    """The claims of namespace `ns`, as handles."""
    try:
        claims = kube.list_items(kube.core(ns, "persistentvolumeclaims"))
    except Err as e:
        raise errors.with_context(e, f"the claims of namespace `{ns}`") from None
    return [handle(app_id, ns, kube.name_of(c)) for c in claims if kube.name_of(c)]
