"""Observe: what exists of an app, as the Rust adapter reports it
(adapter-kubernetes/src/observe.rs). It never remediates: a pod that exited
is reported exited, and the reconciler decides.

Requests: the namespace (GET), then its pods, Services and claims (one LIST
each): 4, or 1 when the app has no namespace.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Dict, Optional

from componentize_py_types import Err
from wit_world.imports import types

from . import errors, kube, names, objects, quantity
from .kube import Json

_PHASES = {
    "Pending": types.WorkloadPhase.PENDING,
    "Running": types.WorkloadPhase.RUNNING,
    "Succeeded": types.WorkloadPhase.SUCCEEDED,
    "Failed": types.WorkloadPhase.FAILED,
}


def observe(bundle: types.BundleRef) -> types.ObservedBundle:
    """Reports the app's workloads and volumes as the cluster has them."""
    ns = names.app_namespace(bundle.id)
    observed = types.ObservedBundle(id=bundle.id, exists=False, workloads=[], volumes=[])
    try:
        if kube.get_opt(kube.namespace_path(ns)) is None:
            return observed
        selector = objects.managed_selector()
        pods = kube.list_items(kube.core(ns, "pods"), selector)
        services = kube.list_items(kube.core(ns, "services"), selector)
        claims = kube.list_items(kube.core(ns, "persistentvolumeclaims"))
    except Err as e:
        raise errors.with_context(e, f"observing namespace `{ns}`") from None
    observed.exists = True
    workloads: Dict[str, types.ObservedWorkload] = {}
    for svc in services:
        name = kube.labels_of(svc).get(objects.WORKLOAD_LABEL)
        if name is not None:
            workloads[name] = missing(name)
    for pod in pods:
        name = kube.labels_of(pod).get(objects.WORKLOAD_LABEL)
        if name is not None:
            workloads[name] = workload(name, pod)
    observed.workloads = [workloads[name] for name in sorted(workloads)]
    observed.volumes = [volume(c) for c in claims if kube.name_of(c)]
    return observed


def missing(name: str) -> types.ObservedWorkload:
    """A workload known from its Service, with no pod."""
    return types.ObservedWorkload(
        name=name,
        phase=types.WorkloadPhase.MISSING,
        digest=None,
        exit_code=None,
        reason="",
        started_at_ms=None,
        finished_at_ms=None,
    )


def ms(text: Any) -> Optional[int]:
    """An RFC 3339 time as milliseconds since the epoch; None when absent
    or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    value = round(moment.timestamp() * 1000)
    return value if value >= 0 else None


def running_digest(image_id: str) -> Optional[str]:
    """The digest in a container status's `imageID`: after the `@` of
    `repository@sha256:...`, or a bare `sha256:...`; None when the runtime
    has not said (empty, or neither)."""
    digest = image_id.rsplit("@", 1)[-1]
    algorithm, _, hexpart = digest.partition(":")
    plausible = (
        algorithm.isascii()
        and algorithm.isalnum()
        and len(hexpart) >= 32
        and all(c in "0123456789abcdefABCDEF" for c in hexpart)
    )
    return digest if plausible else None


def workload(name: str, pod: Json) -> types.ObservedWorkload:
    """A workload from its pod: phase, digest, and its container's state."""
    status = pod.get("status") or {}
    phase_text = status.get("phase")
    w = missing(name)
    w.phase = (
        types.WorkloadPhase.PENDING
        if phase_text is None
        else _PHASES.get(phase_text, types.WorkloadPhase.UNKNOWN)
    )
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    container: Json = {}
    for c in status.get("containerStatuses") or []:
        if c.get("name") == objects.CONTAINER_NAME:
            container = c
            break
    # What the runtime says the container runs; the plan's, as recorded,
    # until it says.
    w.digest = running_digest(container.get("imageID") or "") or annotations.get(
        objects.DIGEST_ANNOTATION
    )
    w.reason = status.get("reason") or ""
    state: Json = container.get("state") or {}
    running = state.get("running")
    if running is not None:
        w.started_at_ms = ms(running.get("startedAt"))
    done = state.get("terminated")
    if done is not None:
        w.exit_code = int(done.get("exitCode", 0))
        w.started_at_ms = ms(done.get("startedAt"))
        w.finished_at_ms = ms(done.get("finishedAt"))
        if done.get("reason") is not None:
            w.reason = done["reason"]
    waiting = state.get("waiting")
    if waiting is not None and waiting.get("reason") is not None:
        w.reason = waiting["reason"]
    return w


def volume(claim: Json) -> types.ObservedVolume:
    """A volume from its claim: ready when bound; its capacity once bound,
    its request before."""
    status = claim.get("status") or {}
    size_text = (status.get("capacity") or {}).get("storage")
    if size_text is None:
        requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
        size_text = requests.get("storage")
    return types.ObservedVolume(
        name=kube.name_of(claim),
        ready=status.get("phase") == "Bound",
        size_bytes=None if size_text is None else quantity.parse(str(size_text), 1),
    )
