"""`capacity` (R-243) and `largest-fit-for` (R-242): what the eligible
nodes can hold, from one list of nodes and one list of pods (2 requests,
whatever the size of the cluster), counted as the Rust adapter counts
(adapter-kubernetes/src/capacity.rs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

from componentize_py_types import Err
from wit_world.imports import types

from . import errors, kube, names, objects, quantity
from .kube import Json


@dataclass
class NodeRoom:
    """An eligible node and what it can hold."""

    name: str
    cpu_millis: int
    memory_bytes: int


@dataclass
class PodLoad:
    """An unfinished pod bound to a node, what it requests, and the app it
    is a workload of, when it is one of Pando's app pods."""

    node: str
    requested: types.Resources
    bundle: Optional[str]


def _quantities(values: Json) -> types.Resources:
    return types.Resources(
        cpu_millis=quantity.parse(str(values.get("cpu", "0")), 1000) or 0,
        memory_bytes=quantity.parse(str(values.get("memory", "0")), 1) or 0,
    )


def pod_requests(pod: Json) -> types.Resources:
    """A pod's requests as the scheduler counts them: the larger of its
    containers' sum and any one init container, plus its overhead."""
    spec = pod.get("spec") or {}
    total = types.Resources(cpu_millis=0, memory_bytes=0)
    for c in spec.get("containers") or []:
        r = _quantities(((c.get("resources") or {}).get("requests")) or {})
        total.cpu_millis += r.cpu_millis
        total.memory_bytes += r.memory_bytes
    for c in spec.get("initContainers") or []:
        r = _quantities(((c.get("resources") or {}).get("requests")) or {})
        total.cpu_millis = max(total.cpu_millis, r.cpu_millis)
        total.memory_bytes = max(total.memory_bytes, r.memory_bytes)
    overhead = spec.get("overhead")
    if overhead:
        r = _quantities(overhead)
        total.cpu_millis += r.cpu_millis
        total.memory_bytes += r.memory_bytes
    return total


# Pods a page of the cluster-wide pod list holds, as the Rust adapter reads it.
PAGE = 500


def _tolerates(toleration: Json, taint: Json) -> bool:
    """Whether `toleration` tolerates `taint`, as the scheduler matches them."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if (toleration.get("operator") or "Equal") == "Exists":
        return not key or key == taint.get("key")
    return key == taint.get("key") and toleration.get("value") == taint.get("value")


def eligible(node: Json, selector: Dict[str, str], runtime_class: Optional[Json] = None) -> bool:
    """Whether app pods may run on the node: Ready, schedulable, carrying
    the configured `node_selector` labels and the RuntimeClass's, and with
    every NoSchedule or NoExecute taint tolerated by the class's
    tolerations (app pods carry no others)."""
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    schedulable = (node.get("spec") or {}).get("unschedulable") is not True
    labels = kube.labels_of(node)
    scheduling = (runtime_class or {}).get("scheduling") or {}
    wanted = dict(selector)
    wanted.update(scheduling.get("nodeSelector") or {})
    tolerations = scheduling.get("tolerations") or []
    taints = [
        t
        for t in (node.get("spec") or {}).get("taints") or []
        if t.get("effect") in ("NoSchedule", "NoExecute")
    ]
    tolerated = all(any(_tolerates(tol, t) for tol in tolerations) for t in taints)
    return (
        ready
        and schedulable
        and tolerated
        and all(labels.get(k) == v for k, v in wanted.items())
    )


def node_room(
    node: Json, selector: Dict[str, str], runtime_class: Optional[Json] = None
) -> Optional[NodeRoom]:
    """A node's allocatable CPU and memory, when it is eligible."""
    if not eligible(node, selector, runtime_class) or not kube.name_of(node):
        return None
    allocatable = (node.get("status") or {}).get("allocatable")
    if allocatable is None:
        return None
    r = _quantities(allocatable)
    return NodeRoom(name=kube.name_of(node), cpu_millis=r.cpu_millis, memory_bytes=r.memory_bytes)


def bundle_of(pod: Json) -> Optional[str]:
    """The app a pod is a workload of: Pando's label, the app label, and
    the app's own namespace. Anything else is not the planner's."""
    labels = kube.labels_of(pod)
    if labels.get(objects.MANAGED_BY) != objects.MANAGER:
        return None
    app_id = labels.get(objects.APP_LABEL)
    ns = (pod.get("metadata") or {}).get("namespace")
    if app_id is None or names.check_dns_label(app_id) is not None:
        return None
    return app_id if ns == names.APP_NAMESPACE_PREFIX + app_id else None


def pod_load(pod: Json) -> Optional[PodLoad]:
    """A pod's load, when it is bound to a node and not finished."""
    node = (pod.get("spec") or {}).get("nodeName")
    if kube.is_exited(pod) or not node:
        return None
    return PodLoad(node=node, requested=pod_requests(pod), bundle=bundle_of(pod))


def read(
    selector: Dict[str, str], runtime_class: Optional[Json] = None
) -> Tuple[List[NodeRoom], List[PodLoad]]:
    """The eligible nodes (for app pods under `runtime_class`, when given)
    and every unfinished pod's load, the pods a page at a time."""
    try:
        nodes = kube.list_items("/api/v1/nodes")
    except Err as e:
        raise errors.with_context(e, "listing the nodes") from None
    try:
        # Finished pods hold nothing; the server leaves them out.
        pods = kube.list_items(
            "/api/v1/pods",
            field_selector="status.phase!=Succeeded,status.phase!=Failed",
            limit=PAGE,
        )
    except Err as e:
        raise errors.with_context(e, "listing the cluster's pods") from None
    rooms = [r for r in (node_room(n, selector, runtime_class) for n in nodes) if r is not None]
    loads = [load for load in (pod_load(p) for p in pods) if load is not None]
    return rooms, loads


def _by_node(pods: List[PodLoad], counts: Callable[[PodLoad], bool]) -> Dict[str, List[int]]:
    used: Dict[str, List[int]] = {}
    for p in pods:
        if counts(p):
            u = used.setdefault(p.node, [0, 0])
            u[0] += p.requested.cpu_millis
            u[1] += p.requested.memory_bytes
    return used


def _ask(nodes: List[NodeRoom], pods: List[PodLoad], bundle: Optional[str]) -> Tuple[int, int]:
    """The shape a fit is ranked for, as the Rust adapter's `ask_of`: the
    requests of the app being placed (its pods now), else the largest
    node's allocatable, so that no one resource is ranked first."""
    cpu = memory = 0
    for p in pods:
        if bundle is not None and p.bundle == bundle:
            cpu += p.requested.cpu_millis
            memory += p.requested.memory_bytes
    if cpu > 0 or memory > 0:
        return cpu, memory
    return (
        max((n.cpu_millis for n in nodes), default=0),
        max((n.memory_bytes for n in nodes), default=0),
    )


def _copies(free: types.Resources, ask: Tuple[int, int]) -> float:
    """How many times `ask` fits in `free`, the scarcer resource deciding."""
    shares = [f / a for f, a in ((free.cpu_millis, ask[0]), (free.memory_bytes, ask[1])) if a > 0]
    return min(shares) if shares else 0.0


def overhead_of(runtime_class: Optional[Json]) -> Tuple[int, int]:
    """What each app pod asks beyond its containers: the RuntimeClass's
    `overhead.podFixed` (CPU millicores, bytes), as the Rust adapter's
    `Scheduling::overhead`."""
    fixed = ((runtime_class or {}).get("overhead") or {}).get("podFixed") or {}
    r = _quantities(fixed)
    return r.cpu_millis, r.memory_bytes


def _roomiest(
    nodes: List[NodeRoom],
    pods: List[PodLoad],
    ask: Tuple[int, int],
    reserve: Tuple[int, int],
    counts: Callable[[PodLoad], bool],
) -> Optional[types.Fit]:
    """The node with the most room once the pods `counts` selects are
    taken off, ranked by how many times `ask` fits there (not CPU first);
    ties go to more CPU, then more memory, then the first name."""
    used = _by_node(pods, counts)
    best: Optional[Tuple[float, types.Fit]] = None
    for node in sorted(nodes, key=lambda n: n.name):
        u = used.get(node.name, [0, 0])
        free = types.Resources(
            cpu_millis=max(node.cpu_millis - u[0] - reserve[0], 0),
            memory_bytes=max(node.memory_bytes - u[1] - reserve[1], 0),
        )
        score = _copies(free, ask)
        if best is None or (score, free.cpu_millis, free.memory_bytes) > (
            best[0],
            best[1].free.cpu_millis,
            best[1].free.memory_bytes,
        ):
            best = (score, types.Fit(node=node.name, free=free))
    return best[1] if best is not None else None


def report(
    nodes: List[NodeRoom], pods: List[PodLoad], overhead: Tuple[int, int] = (0, 0)
) -> types.CapacityReport:
    """R-243: `total` is what the eligible nodes hold less what pods that
    are not Pando's apps request there; `largest_fit` counts every pod,
    Pando's too (R-242)."""
    others = _by_node(pods, lambda p: p.bundle is None)
    cpu = memory = 0
    for node in nodes:
        u = others.get(node.name, [0, 0])
        cpu += max(node.cpu_millis - u[0], 0)
        memory += max(node.memory_bytes - u[1], 0)
    return types.CapacityReport(
        total=types.Resources(cpu_millis=cpu, memory_bytes=memory),
        largest_fit=_roomiest(nodes, pods, _ask(nodes, pods, None), overhead, lambda p: True),
        nodes=len(nodes),
    )


def largest_fit_for(
    nodes: List[NodeRoom],
    pods: List[PodLoad],
    bundle: str,
    overhead: Tuple[int, int] = (0, 0),
) -> Optional[types.Fit]:
    """R-242: every pod counted but the app's own, since a redeploy
    replaces them; None when no node is eligible."""
    own = max(sum(1 for p in pods if p.bundle == bundle), 1)
    reserve = (overhead[0] * own, overhead[1] * own)
    return _roomiest(nodes, pods, _ask(nodes, pods, bundle), reserve, lambda p: p.bundle != bundle)
