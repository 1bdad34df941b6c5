"""The names this adapter gives things in the cluster, and Kubernetes' rules
for names and labels: the same as the Rust adapter's
(adapter-kubernetes/src/names.rs), so both find the same objects.

- An app's namespace is `pando-<app id>` (`app_namespace`).
- A workload's headless Service (and its pod) is named as the workload.
- The proxy reaches a workload at `<workload>.pando-<app>.svc.<cluster
  domain>` (`upstream`, R-023).

Everything here is computed from its arguments: no host calls. The
`check_*` functions return `None` when the value is fine, else the words
that follow the value in a message ("`Pando` is not a DNS label: …").
"""

from __future__ import annotations

from typing import Optional

from wit_world.imports import types

from . import errors

APP_NAMESPACE_PREFIX = "pando-"
MAX_LABEL = 63
MAX_SUBDOMAIN = 253
MAX_APP_ID = MAX_LABEL - len(APP_NAMESPACE_PREFIX)

_LOWER_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_LABEL_CHARS = _LOWER_ALNUM | {"-"}
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_QUALIFIED_CHARS = _ALNUM | {"-", "_", "."}


def check_dns_label(name: str) -> Optional[str]:
    """An RFC 1123 DNS label: 1-63 lowercase letters, digits and `-`,
    starting and ending with a letter or digit. Namespaces are named so."""
    what = "is not a DNS label"
    if not name:
        return f"{what}: it is empty"
    if len(name) > MAX_LABEL:
        return f"{what}: it is longer than {MAX_LABEL} characters"
    if name[0] not in _LOWER_ALNUM or name[-1] not in _LOWER_ALNUM:
        return f"{what}: it must start and end with a lowercase letter or a digit"
    if any(c not in _LABEL_CHARS for c in name):
        return f"{what}: only lowercase letters, digits and `-` are allowed"
    return None


def check_dns1035_label(name: str) -> Optional[str]:
    """A DNS label that starts with a letter. Services are named so."""
    why = check_dns_label(name)
    if why is not None:
        return why
    if not ("a" <= name[0] <= "z"):
        return "is not a DNS-1035 label: it must start with a lowercase letter"
    return None


def check_dns_subdomain(name: str) -> Optional[str]:
    """An RFC 1123 DNS subdomain: at most 253 characters, DNS labels joined
    by `.`."""
    if not name:
        return "is not a DNS subdomain: it is empty"
    if len(name) > MAX_SUBDOMAIN:
        return f"is not a DNS subdomain: it is longer than {MAX_SUBDOMAIN} characters"
    for label in name.split("."):
        why = check_dns_label(label)
        if why is not None:
            return f"is not a DNS subdomain: `{label}` {why}"
    return None


def _check_qualified_name_part(part: str) -> Optional[str]:
    if not part:
        return "is empty"
    if len(part) > MAX_LABEL:
        return f"is longer than {MAX_LABEL} characters"
    if part[0] not in _ALNUM or part[-1] not in _ALNUM:
        return "must start and end with a letter or a digit"
    if any(c not in _QUALIFIED_CHARS for c in part):
        return "may hold only letters, digits, `-`, `_` and `.`"
    return None


def check_label_key(key: str) -> Optional[str]:
    """A label key: `[prefix/]name`, the prefix a DNS subdomain."""
    prefix, sep, name = key.partition("/")
    if not sep:
        prefix, name = "", key
    else:
        why = check_dns_subdomain(prefix)
        if why is not None:
            return f"has a prefix that {why}"
    why = _check_qualified_name_part(name)
    if why is not None:
        return f"is not a label key: its name {why}"
    return None


def check_label_value(value: str) -> Optional[str]:
    """A label value: empty, or at most 63 letters, digits, `-`, `_` and
    `.`, starting and ending with a letter or digit."""
    if not value:
        return None
    why = _check_qualified_name_part(value)
    if why is not None:
        return f"is not a label value: it {why}"
    return None


# App ids whose namespace is one Pando makes for itself (the edge's, the
# NetworkPolicy canary's, Pando's server's; trials' are `pando-trial-<hex>`),
# as the Rust adapter reserves them (adapter-kubernetes/src/names.rs).
RESERVED_APP_IDS = ("edge", "canary", "system", "trial")
RESERVED_APP_ID_PREFIX = "trial-"


def check_app_id(app_id: str) -> None:
    """An app id: a DNS label short enough that `pando-<id>` is one too, and
    not one of `RESERVED_APP_IDS`."""
    why = check_dns_label(app_id)
    if why is not None:
        raise errors.invalid(f"app id `{app_id}` {why}")
    if app_id in RESERVED_APP_IDS or app_id.startswith(RESERVED_APP_ID_PREFIX):
        raise errors.invalid(
            f"app id `{app_id}` is reserved: its namespace `{APP_NAMESPACE_PREFIX}{app_id}` is "
            "one Pando makes for itself (the edge, the NetworkPolicy canary, Pando's server, "
            "trials); rename the app"
        )
    if len(app_id) > MAX_APP_ID:
        raise errors.invalid(
            f"app id `{app_id}` is too long: its namespace `{APP_NAMESPACE_PREFIX}{app_id}` "
            f"would be longer than {MAX_LABEL} characters (an app id has at most {MAX_APP_ID})"
        )


def app_namespace(app_id: str) -> str:
    """An app's namespace, `pando-<app id>`."""
    check_app_id(app_id)
    return APP_NAMESPACE_PREFIX + app_id


def service_name(workload: str) -> str:
    """A workload's Service (and pod) name: the workload's own name, which
    must be a DNS-1035 label."""
    why = check_dns1035_label(workload)
    if why is not None:
        raise errors.invalid(f"workload name `{workload}` {why}")
    return workload


def upstream(cluster_domain: str, workload: types.WorkloadRef, port: int) -> types.UpstreamAddress:
    """Where Pando's proxy reaches a workload's port (R-023): its Service's
    name in the cluster's DNS. Computed, never looked up."""
    check_app_id(workload.bundle)
    service = service_name(workload.workload)
    if port == 0:
        raise errors.invalid(
            f"port 0 of workload `{workload.workload}` of app `{workload.bundle}` is not a port"
        )
    host = f"{service}.{APP_NAMESPACE_PREFIX}{workload.bundle}.svc.{cluster_domain}"
    return types.UpstreamAddress(host=host, port=port)


def workload_selector(workload: types.WorkloadRef) -> str:
    """The label selector of one workload's pods."""
    why = check_label_value(workload.workload)
    if why is not None:
        raise errors.invalid(f"workload name `{workload.workload}` {why}")
    why = check_label_value(workload.bundle)
    if why is not None:
        raise errors.invalid(f"app id `{workload.bundle}` {why}")
    return f"pando.dev/app={workload.bundle},pando.dev/workload={workload.workload}"


def describe(workload: types.WorkloadRef) -> str:
    """`workload `web` of app `shop``, for messages."""
    return f"workload `{workload.workload}` of app `{workload.bundle}`"
