"""The contract's `error` cases (`wit/types.wit`), as componentize-py raises
them: a function whose WIT result is `result<T, error>` returns `T` or
raises `componentize_py_types.Err(<case>)`.

Every message is for an operator: it names what is wrong and, where there
is one, the fix.
"""

from __future__ import annotations

from componentize_py_types import Err
from wit_world.imports import types

Error = types.Error


def invalid(message: str) -> Err[Error]:
    """The input (a plan, the configuration, a reference) is malformed."""
    return Err(types.Error_Invalid(message))


def not_found(message: str) -> Err[Error]:
    """The bundle or workload named does not exist."""
    return Err(types.Error_NotFound(message))


def conflict(message: str) -> Err[Error]:
    """The cluster holds something that contradicts the request."""
    return Err(types.Error_Conflict(message))


def unsupported(message: str) -> Err[Error]:
    """This adapter does not offer the call or the feature."""
    return Err(types.Error_Unsupported(message))


def unavailable(message: str) -> Err[Error]:
    """The cluster cannot be reached or is not ready."""
    return Err(types.Error_Unavailable(message))


def denied(message: str) -> Err[Error]:
    """A host grant, or the cluster's own authorization, refused."""
    return Err(types.Error_Denied(message))


def timeout(message: str) -> Err[Error]:
    """The call's deadline passed."""
    return Err(types.Error_Timeout(message))


def cancelled(message: str) -> Err[Error]:
    """Core cancelled the call."""
    return Err(types.Error_Cancelled(message))


def internal(message: str) -> Err[Error]:
    """A fault in this adapter: for its author."""
    return Err(types.Error_Internal(message))


def kind(err: Err[Error]) -> str:
    """The WIT case name of an error (`invalid`, `not-found` …)."""
    names = {
        types.Error_Invalid: "invalid",
        types.Error_NotFound: "not-found",
        types.Error_Conflict: "conflict",
        types.Error_Unsupported: "unsupported",
        types.Error_Unavailable: "unavailable",
        types.Error_Denied: "denied",
        types.Error_Timeout: "timeout",
        types.Error_Cancelled: "cancelled",
        types.Error_CommandFailed: "command-failed",
        types.Error_Internal: "internal",
    }
    return names.get(type(err.value), "internal")


def with_context(err: Err[Error], context: str) -> Err[Error]:
    """The same case, its message prefixed with `context: `."""
    value = err.value
    if isinstance(value, types.Error_CommandFailed) or not isinstance(value.value, str):
        return err
    return Err(type(value)(f"{context}: {value.value}"))
