"""A small JSON client over the host's `pando:runtime/kubernetes` import.

The host checks each request against the adapter's grants, applies the rate
budget and sends it with its own credentials; this module builds the paths
and bodies and turns answers into the contract's errors, as the Rust guest
SDK does (guest-sdk/src/kube/error.rs):

| answer | error |
|---|---|
| 404 | `not-found` |
| 409, 410 | `conflict` |
| 401, 403, a missing grant | `denied` |
| 400, 422, other 4xx, an invalid request, a body too large | `invalid` |
| 405 | `internal` (a bug of this adapter) |
| 429, 5xx, transport | `unavailable` |
| host timeout / cancelled | `timeout` / `cancelled` |
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

from componentize_py_types import Err
from wit_world.imports import kubernetes, log

from . import errors
from .objects import FIELD_MANAGER

Json = Dict[str, Any]
Query = Sequence[Tuple[str, str]]

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Gone",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def status_error(status: int, reason: str, message: str) -> Err[errors.Error]:
    """The contract's error for an error status of the API server."""
    text = f"the API server answered {status} {reason}: {message}"
    if status == 404:
        return errors.not_found(text)
    if status in (409, 410):
        return errors.conflict(text)
    if status in (401, 403):
        return errors.denied(text)
    if status == 405:
        return errors.internal(text)
    if status == 429 or 500 <= status <= 599:
        return errors.unavailable(text)
    if 400 <= status <= 499:
        return errors.invalid(text)
    return errors.internal(text)


def api_error(e: kubernetes.ApiError) -> Err[errors.Error]:
    """The contract's error for the host's refusal or failure to send."""
    if isinstance(e, kubernetes.ApiError_Denied):
        return errors.denied(e.value.message)
    if isinstance(e, kubernetes.ApiError_InvalidRequest):
        return errors.invalid(f"invalid Kubernetes request: {e.value}")
    if isinstance(e, kubernetes.ApiError_TooLarge):
        return errors.invalid(f"the request body is too large: {e.value}")
    if isinstance(e, kubernetes.ApiError_Transport):
        return errors.unavailable(f"the Kubernetes API server cannot be reached: {e.value}")
    if isinstance(e, kubernetes.ApiError_Rejected):
        s = e.value
        return status_error(s.code, s.reason or _REASONS.get(s.code, "Error"), s.message)
    if isinstance(e, kubernetes.ApiError_Timeout):
        return errors.timeout("the Kubernetes API server did not answer in time")
    if isinstance(e, kubernetes.ApiError_Cancelled):
        return errors.cancelled("the call was cancelled while waiting for the API server")
    return errors.internal(f"unknown Kubernetes import error: {e!r}")


class Answer:
    """An answer of the API server, whatever its status."""

    def __init__(self, response: kubernetes.Response) -> None:
        self.status: int = response.status
        self.body: bytes = bytes(response.body)

    @property
    def ok(self) -> bool:
        """A 2xx status."""
        return 200 <= self.status < 300

    def json(self) -> Json:
        """The body as JSON; `internal` when it is not."""
        try:
            value = json.loads(self.body)
        except ValueError as e:
            raise errors.internal(f"cannot decode the API server's answer: {e}") from None
        if not isinstance(value, dict):
            raise errors.internal("cannot decode the API server's answer: not a JSON object")
        return value

    def error(self) -> Err[errors.Error]:
        """The contract's error for this (non-2xx) answer, from its `Status`
        body when it is one."""
        reason = _REASONS.get(self.status, "Error")
        message = self.body[:512].decode("utf-8", "replace")
        try:
            status = json.loads(self.body)
            if isinstance(status, dict) and (status.get("message") or status.get("reason")):
                reason = status.get("reason") or reason
                message = status.get("message") or ""
        except ValueError:
            pass
        return status_error(self.status, reason, message)


_METHODS = {
    "GET": kubernetes.Method.GET,
    "POST": kubernetes.Method.POST,
    "PUT": kubernetes.Method.PUT,
    "PATCH": kubernetes.Method.PATCH,
    "DELETE": kubernetes.Method.DELETE,
}


def send(
    method: str,
    path: str,
    query: Query = (),
    body: Optional[Json] = None,
    content_type: Optional[kubernetes.ContentType] = None,
) -> Answer:
    """Sends one request; an answer of any status, or the error for a
    request the host refused or could not send."""
    if log.enabled(log.Level.DEBUG):
        log.log(log.Level.DEBUG, "kubernetes request", [("method", method), ("path", path)])
    request = kubernetes.Request(
        method=_METHODS[method],
        path=path,
        query=list(query),
        body=None if body is None else json.dumps(body).encode("utf-8"),
        content_type=content_type,
    )
    try:
        return Answer(kubernetes.send(request))
    except Err as e:
        raise api_error(e.value) from None


def _checked(answer: Answer) -> Answer:
    if not answer.ok:
        raise answer.error()
    return answer


def get_opt(path: str) -> Optional[Json]:
    """The object at `path`, or None when it does not exist."""
    answer = send("GET", path)
    if answer.status == 404:
        return None
    return _checked(answer).json()


def list_items(
    path: str,
    label_selector: Optional[str] = None,
    field_selector: Optional[str] = None,
    limit: Optional[int] = None,
) -> List[Json]:
    """The items of the collection at `path`, all pages (of `limit` items
    each when given)."""
    items: List[Json] = []
    token = ""
    while True:
        query: List[Tuple[str, str]] = []
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        if limit:
            query.append(("limit", str(limit)))
        if token:
            query.append(("continue", token))
        page = _checked(send("GET", path, query)).json()
        items.extend(page.get("items") or [])
        token = (page.get("metadata") or {}).get("continue") or ""
        if not token:
            return items


def create(path: str, obj: Json) -> Json:
    """Creates `obj` in the collection at `path`."""
    return _checked(send("POST", path, [("fieldManager", FIELD_MANAGER)], obj)).json()


def replace(path: str, obj: Json) -> Answer:
    """Replaces the object at `path` with `obj` (an answer of any status:
    the caller decides what a 404 means)."""
    return send("PUT", path, [("fieldManager", FIELD_MANAGER)], obj)


def replace_checked(path: str, obj: Json) -> Json:
    """Replaces the object at `path`; any error status is an error."""
    return _checked(replace(path, obj)).json()


def merge_patch(path: str, patch: Json) -> Json:
    """A JSON merge patch of the object at `path`."""
    answer = send("PATCH", path, [], patch, kubernetes.ContentType.MERGE_PATCH)
    return _checked(answer).json()


def delete_opt(path: str, grace_period_seconds: Optional[int] = None) -> bool:
    """Deletes the object at `path`, its dependents in the background;
    False when it was already gone."""
    query = [("propagationPolicy", "Background")]
    if grace_period_seconds is not None:
        query.append(("gracePeriodSeconds", str(grace_period_seconds)))
    answer = send("DELETE", path, query)
    if answer.status == 404:
        return False
    _checked(answer)
    return True


def core(namespace: str, resource: str, name: str = "") -> str:
    """The path of a core (`v1`) collection or object in `namespace`."""
    path = f"/api/v1/namespaces/{namespace}/{resource}"
    return f"{path}/{name}" if name else path


def networking(namespace: str, resource: str, name: str = "") -> str:
    """The path of a `networking.k8s.io/v1` collection or object."""
    path = f"/apis/networking.k8s.io/v1/namespaces/{namespace}/{resource}"
    return f"{path}/{name}" if name else path


def namespace_path(name: str = "") -> str:
    """The path of the namespaces, or of one."""
    return f"/api/v1/namespaces/{name}" if name else "/api/v1/namespaces"


def is_exited(pod: Json) -> bool:
    """Whether a pod has exited: it will never run again (R-151)."""
    return ((pod.get("status") or {}).get("phase")) in ("Succeeded", "Failed")


def name_of(obj: Json) -> str:
    """An object's name."""
    return (obj.get("metadata") or {}).get("name") or ""


def labels_of(obj: Json) -> Dict[str, str]:
    """An object's labels."""
    return (obj.get("metadata") or {}).get("labels") or {}
