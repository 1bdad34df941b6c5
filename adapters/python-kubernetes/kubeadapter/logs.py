"""`logs`: a workload's newest pod's log, a finished pod included, so the
crash that sent an app to failed stays readable (`stop` keeps it, R-150).

Two requests: the workload's pods (LIST by label), then the log. The
host's stream is returned as it is: its bytes never enter the adapter.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from componentize_py_types import Err
from wit_world.imports import kubernetes, types, wasi_io_streams

from . import errors, kube, names, objects
from .kube import Json


def _created(pod: Json) -> Tuple[str, str]:
    # RFC 3339 times of one form (`2026-01-02T03:04:05Z`) sort as text;
    # a pod without one sorts first. The name breaks ties.
    meta = pod.get("metadata") or {}
    return (meta.get("creationTimestamp") or "", meta.get("name") or "")


def newest(pods: List[Json]) -> Optional[Json]:
    """The newest pod by creation time, whatever its phase."""
    return max(pods, key=_created) if pods else None


def logs(workload: types.WorkloadRef, options: types.LogOptions) -> wasi_io_streams.InputStream:
    """The log of the workload's newest pod; `not-found` naming the
    workload when it has no pod."""
    ns = names.app_namespace(workload.bundle)
    selector = names.workload_selector(workload)
    try:
        pods = kube.list_items(kube.core(ns, "pods"), selector)
    except Err as e:
        raise errors.with_context(e, f"listing the pods of {names.describe(workload)}") from None
    pod = newest(pods)
    if pod is None:
        raise errors.not_found(
            f"{names.describe(workload)} has no pod, so no log: it was never started, "
            "or was removed"
        )
    name = kube.name_of(pod)
    request = kubernetes.LogRequest(
        namespace=ns,
        pod=name,
        container=objects.CONTAINER_NAME,
        follow=options.follow,
        previous=False,
        tail_lines=options.tail_lines,
        since_seconds=options.since_seconds,
        timestamps=options.timestamps,
        limit_bytes=options.limit_bytes,
    )
    try:
        return kubernetes.logs(request)
    except Err as e:
        raise errors.with_context(kube.api_error(e.value), f"the log of pod `{ns}/{name}`") from None
