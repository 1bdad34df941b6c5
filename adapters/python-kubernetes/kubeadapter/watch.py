"""`watch-bundles` (O-52, R-148): one cluster-wide watch of Pando's app
pods, as the Rust adapter runs it (adapter-kubernetes/src/watch.rs): list,
send `watching`, then watch from the list's version and send every change;
a watch the server closes is reopened from the last version seen; a version
too old (410) returns `expired` for core to list again. It reports and
never acts.

No pollables (the component has none, see `waiting`): `next` blocks in the
host, which ends it with `failed(cancelled)` when core cancels the call.
"""

from __future__ import annotations

import json
from typing import Optional

from componentize_py_types import Err
from wit_world.imports import events, kubernetes, types

from . import errors, kube, names, objects, observe
from .kube import Json

# Pando's app pods, across namespaces.
SELECTOR = f"{objects.managed_selector()},{objects.APP_LABEL}"
# How many times in a row a broken watch (transport, throttling, 5xx) is
# reopened without an event in between before the watch gives up. The
# host's rate budget paces the reopening.
RESUME_TRIES = 20


def change(pod: Json, deleted: bool) -> Optional[types.WorkloadChange]:
    """The change a pod event reports, when the pod is a workload of an app
    in that app's namespace."""
    labels = kube.labels_of(pod)
    bundle = labels.get(objects.APP_LABEL)
    workload = labels.get(objects.WORKLOAD_LABEL)
    if bundle is None or workload is None or names.check_dns_label(bundle) is not None:
        return None
    if (pod.get("metadata") or {}).get("namespace") != names.APP_NAMESPACE_PREFIX + bundle:
        return None
    return types.WorkloadChange(
        bundle=bundle, workload=observe.workload(workload, pod), deleted=deleted
    )


def _resumable(error: kubernetes.ApiError) -> bool:
    if isinstance(error, kubernetes.ApiError_Transport):
        return True
    if isinstance(error, kubernetes.ApiError_Rejected):
        code = error.value.code
        return code in (401, 403, 429) or 500 <= code <= 599
    return False


def _send(sink: events.BundleSink, event: types.BundleEvent) -> bool:
    """Sends one event; False once core stopped listening."""
    try:
        sink.send(event)
        return True
    except Err:
        return False


def _failed(error: kubernetes.ApiError) -> types.WatchEnd:
    if isinstance(error, kubernetes.ApiError_Cancelled):
        return types.WatchEnd.CANCELLED
    if isinstance(error, kubernetes.ApiError_Rejected) and error.value.code == 410:
        return types.WatchEnd.EXPIRED
    raise errors.with_context(kube.api_error(error), "watching the apps' pods")


def watch_bundles(sink: events.BundleSink) -> types.WatchEnd:
    """Runs the watch until core cancels it or the version expires."""
    answer = kube.send("GET", "/api/v1/pods", [("labelSelector", SELECTOR)])
    if answer.status == 410:
        return types.WatchEnd.EXPIRED
    if not answer.ok:
        raise errors.with_context(answer.error(), "listing the apps' pods")
    version = str((answer.json().get("metadata") or {}).get("resourceVersion") or "")
    if not _send(sink, types.BundleEvent_Watching()):
        return types.WatchEnd.CANCELLED
    broken = 0
    while True:
        request = kubernetes.WatchRequest(
            path="/api/v1/pods",
            label_selector=SELECTOR,
            field_selector=None,
            resource_version=version or None,
            allow_bookmarks=True,
            timeout_seconds=None,
        )
        try:
            stream = kubernetes.watch(request)
        except Err as e:
            if _resumable(e.value) and broken < RESUME_TRIES:
                broken += 1
                continue
            return _failed(e.value)
        with stream:
            while True:
                try:
                    event = stream.next()
                except Err as e:
                    end = e.value
                    if isinstance(end, kubernetes.WatchEnd_Closed):
                        break
                    if isinstance(end, kubernetes.WatchEnd_Expired):
                        return types.WatchEnd.EXPIRED
                    if _resumable(end.value) and broken < RESUME_TRIES:
                        broken += 1
                        break
                    return _failed(end.value)
                broken = 0
                try:
                    pod = json.loads(event.object)
                except ValueError:
                    raise errors.internal("a watch event that is not JSON") from None
                version = str((pod.get("metadata") or {}).get("resourceVersion") or version)
                if event.event_type == kubernetes.EventType.BOOKMARK:
                    continue
                deleted = event.event_type == kubernetes.EventType.DELETED
                seen = change(pod, deleted)
                if seen is not None and not _send(sink, types.BundleEvent_Changed(seen)):
                    return types.WatchEnd.CANCELLED
