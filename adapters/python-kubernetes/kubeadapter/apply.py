"""Apply: converge an app's namespace toward its plan.

Idempotent, as the Rust adapter's (adapter-kubernetes/src/apply.rs): each
object is compared with what exists by its spec hash, so a satisfied plan
writes nothing but the pull Secret, and nothing at all without credentials
(O-41). A pod is recreated only when its hash (the digest included) differs
or it has exited (R-151: nothing but apply starts a workload again).
Workloads the plan no longer has are deleted: a plan is the whole app.

Requests for a satisfied plan of N workloads and V bound volumes: the
namespace (GET), the policy (GET), the claims (LIST, plus a GET of the PV
per bound claim), the Services (LIST), the pods (LIST): 5 + V reads, and 1
write (PUT of the pull Secret) only when the plan has credentials.
"""

from __future__ import annotations

from typing import Callable, Dict, List

from componentize_py_types import Err
from wit_world.imports import types

from . import errors, kube, names, objects, volumes, waiting
from .config import Config
from .kube import Json

# How long apply waits for a replaced pod to be gone before creating its
# successor under the same name.
POD_GONE_WAIT_SECONDS = 30


def apply(config: Config, plan: types.BundlePlan) -> types.BundleHandle:
    """Converges the app's namespace toward `plan` (see the module doc)."""
    ns = names.app_namespace(plan.id)
    # Build everything before writing anything: a plan refused (an unknown
    # volume, a name egress rule, R-186) leaves the cluster as it was.
    policy = objects.network_policy(config, plan)
    services: Dict[str, Json] = {}
    pods: Dict[str, Json] = {}
    for w in plan.workloads:
        if w.name in services:
            raise errors.invalid(f"plan `{plan.id}` names workload `{w.name}` twice")
        services[w.name] = objects.service(plan.id, w)
        pods[w.name] = objects.pod(config, plan, w)
    claims: Dict[str, Json] = {}
    for v in plan.volumes:
        if v.name in claims:
            raise errors.invalid(f"plan `{plan.id}` names volume `{v.name}` twice")
        claims[v.name] = objects.claim(config, plan.id, v.name, v.size_bytes)

    volumes.ensure_namespace(ns, plan.id)
    _in_context(f"the NetworkPolicy of namespace `{ns}`", lambda: _ensure_policy(ns, policy))
    _in_context(f"the pull Secret of namespace `{ns}`", lambda: _ensure_pull_secret(ns, plan))
    _in_context(
        f"the claims of namespace `{ns}`",
        lambda: volumes.ensure_claims(ns, list(claims.values())),
    )
    _in_context(f"the Services of namespace `{ns}`", lambda: _ensure_services(ns, services))
    _in_context(f"the pods of namespace `{ns}`", lambda: _ensure_pods(ns, pods))
    return types.BundleHandle(id=plan.id, location=f"namespace/{ns}")


def _in_context(context: str, step: Callable[[], None]) -> None:
    try:
        step()
    except Err as e:
        raise errors.with_context(e, context) from None


def _ensure_policy(ns: str, desired: Json) -> None:
    path = kube.networking(ns, "networkpolicies", objects.POLICY_NAME)
    existing = kube.get_opt(path)
    if existing is None:
        kube.create(kube.networking(ns, "networkpolicies"), desired)
    elif objects.stored_hash(existing) != objects.stored_hash(desired):
        desired["metadata"]["resourceVersion"] = existing["metadata"].get("resourceVersion")
        kube.replace_checked(path, desired)


def _ensure_pull_secret(ns: str, plan: types.BundlePlan) -> None:
    """Writes the pull Secret on every call when the plan has credentials
    (a registry password can expire, O-41). Without credentials nothing is
    written; a Secret an earlier plan made stays, unused, until destroy."""
    if not plan.pull_credentials:
        return
    secret = objects.pull_secret(plan.id, plan.pull_credentials)
    # PUT first: the Secret usually exists. Without a resourceVersion it is
    # an unconditional overwrite, which is what a rewrite is.
    answer = kube.replace(kube.core(ns, "secrets", objects.PULL_SECRET_NAME), secret)
    if answer.status == 404:
        kube.create(kube.core(ns, "secrets"), secret)
    elif not answer.ok:
        raise answer.error()


def _ensure_services(ns: str, desired: Dict[str, Json]) -> None:
    """Creates or recreates each workload's Service, deletes those of
    workloads the plan no longer has."""
    desired = dict(desired)
    for svc in kube.list_items(kube.core(ns, "services"), objects.managed_selector()):
        name = kube.name_of(svc)
        want = desired.pop(name, None)
        if want is None:
            kube.delete_opt(kube.core(ns, "services", name))
        elif objects.stored_hash(svc) != objects.stored_hash(want):
            # A Service's clusterIP cannot change in place: delete, create.
            kube.delete_opt(kube.core(ns, "services", name))
            kube.create(kube.core(ns, "services"), want)
    for want in desired.values():
        kube.create(kube.core(ns, "services"), want)


def _ensure_pods(ns: str, desired: Dict[str, Json]) -> None:
    """Keeps each workload's pod when it matches and still runs; replaces it
    when its hash differs or it exited; deletes pods of workloads the plan
    no longer has."""
    desired = dict(desired)
    replaced: List[str] = []
    # The Kubernetes adapter's helper pods (volume snapshots) are Pando's but
    # no part of the plan: they are left be.
    selector = f"{objects.managed_selector()},!{objects.HELPER_LABEL}"
    for pod in kube.list_items(kube.core(ns, "pods"), selector):
        name = kube.name_of(pod)
        want = desired.get(name)
        keep = (
            want is not None
            and objects.stored_hash(pod) == objects.stored_hash(want)
            and not kube.is_exited(pod)
            and not (pod.get("metadata") or {}).get("deletionTimestamp")
        )
        if keep:
            del desired[name]
            continue
        # An exited pod runs nothing: it goes at once. A running one gets
        # its grace period.
        kube.delete_opt(kube.core(ns, "pods", name), 0 if kube.is_exited(pod) else None)
        if want is not None:
            replaced.append(name)
    for name in replaced:
        _wait_gone(ns, name)
    for want in desired.values():
        kube.create(kube.core(ns, "pods"), want)


def _wait_gone(ns: str, name: str) -> None:
    """Waits until pod `name` is gone, so its successor can take the name."""
    if not waiting.pod_gone(ns, name, POD_GONE_WAIT_SECONDS):
        raise errors.conflict(
            f"pod `{name}` is still terminating after {POD_GONE_WAIT_SECONDS} s; "
            "apply again once it is gone"
        )
