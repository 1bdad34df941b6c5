"""Waiting for the cluster the Kubernetes way.

Rather than polling on a timer, the adapter waits with a watch
(`kubernetes.watch`) of the one object it waits for: `next` blocks in the
host, which ends it when the call is cancelled or past its deadline, and the
API server says the moment the object changes.
"""

from __future__ import annotations

import json
from typing import Any, List

from componentize_py_types import Err
from wit_world.imports import kubernetes

from . import errors, kube

# Resources of `wasi:io` the host passed in (streams, the bundle sink) that
# this adapter does not use. They are kept referenced until the instance
# goes (the host discards it after every call that passes a stream, and runs
# a watch on an instance of its own), which is how an earlier build, whose
# WASI functions all trapped, had to treat them; harmless now.
_KEPT: List[Any] = []


def keep(*resources: Any) -> None:
    """Keeps resources the host passed for the call from being dropped."""
    _KEPT.extend(resources)


def pod_gone(ns: str, name: str, timeout_seconds: int) -> bool:
    """Waits until pod `name` of `ns` is gone, at most about
    `timeout_seconds`; whether it is. One GET, then one watch of that pod
    from the version read (the server closes it after the timeout)."""
    pod = kube.get_opt(kube.core(ns, "pods", name))
    if pod is None:
        return True
    version = (pod.get("metadata") or {}).get("resourceVersion")
    request = kubernetes.WatchRequest(
        path=kube.core(ns, "pods"),
        label_selector=None,
        field_selector=f"metadata.name={name}",
        resource_version=version,
        allow_bookmarks=False,
        timeout_seconds=timeout_seconds,
    )
    try:
        stream = kubernetes.watch(request)
    except Err as e:
        raise kube.api_error(e.value) from None
    with stream:
        while True:
            try:
                event = stream.next()
            except Err as e:
                end = e.value
                if isinstance(end, kubernetes.WatchEnd_Failed):
                    raise kube.api_error(end.value) from None
                # Closed (the timeout) or expired: look once more.
                return kube.get_opt(kube.core(ns, "pods", name)) is None
            if event.event_type == kubernetes.EventType.DELETED:
                return True
            if event.event_type == kubernetes.EventType.BOOKMARK:
                continue
            try:
                obj = json.loads(event.object)
            except ValueError:
                raise errors.internal("a watch event that is not JSON") from None
            if (obj.get("metadata") or {}).get("name") != name:
                continue
