"""Stop, destroy, and what an app (and all of Pando's apps) use, as the
Rust adapter does them (adapter-kubernetes/src/lifecycle.rs)."""

from __future__ import annotations

from componentize_py_types import Err
from wit_world.imports import types

from . import capacity, errors, kube, names, objects, quantity, volumes


def stop(bundle: types.BundleRef) -> None:
    """Removes the app's running and pending pods and keeps everything
    else: Services, configuration, and any pod that already finished, whose
    log is how the last crash stays readable (R-150). Apply starts a
    stopped app again."""
    ns = names.app_namespace(bundle.id)
    # Only in the app's own namespace: never another's pods (`conflict`).
    if volumes.owned_namespace(ns, bundle.id) is None:
        return
    try:
        for pod in kube.list_items(kube.core(ns, "pods"), objects.managed_selector()):
            if not kube.is_exited(pod):
                kube.delete_opt(kube.core(ns, "pods", kube.name_of(pod)))
    except Err as e:
        raise errors.with_context(e, f"stopping the pods of namespace `{ns}`") from None


def _delete_managed(ns: str, resource: str) -> None:
    try:
        for item in kube.list_items(kube.core(ns, resource), objects.managed_selector()):
            kube.delete_opt(kube.core(ns, resource, kube.name_of(item)))
    except Err as e:
        raise errors.with_context(e, f"deleting the {resource} of `{ns}`") from None


def destroy(bundle: types.BundleRef, options: types.DestroyOptions) -> None:
    """Removes an app. With `keep_volumes` (R-204) its pods, Services,
    Secrets and ConfigMaps go and the namespace stays with its claims and
    default-deny policy (a claim lives in a namespace). Without, each claim
    goes with its data, then the namespace. An app already gone is not an
    error; a namespace not the app's own is `conflict`, and nothing goes."""
    ns = names.app_namespace(bundle.id)
    # A `pando-*` namespace not made for this app is `conflict`; nothing goes.
    if volumes.owned_namespace(ns, bundle.id) is None:
        return
    if options.keep_volumes:
        for resource in ("pods", "services", "secrets", "configmaps"):
            _delete_managed(ns, resource)
        return
    try:
        claims = kube.list_items(kube.core(ns, "persistentvolumeclaims"))
    except Err as e:
        raise errors.with_context(e, f"the claims of namespace `{ns}`") from None
    for claim in claims:
        volumes.destroy_claim(ns, kube.name_of(claim), claim)
    try:
        kube.delete_opt(kube.namespace_path(ns))
    except Err as e:
        raise errors.with_context(e, f"destroying namespace `{ns}`") from None


def usage(bundle: types.BundleRef) -> types.BundleUsage:
    """What an app reserves: each workload's pod's requests while it has
    not exited (no metrics API is read, so `used` is none), and its claims'
    storage. An app that does not exist uses nothing."""
    ns = names.app_namespace(bundle.id)
    try:
        # Inside a namespace the adapter reads through its own binding, and
        # one that does not exist has none: RBAC would answer 403, not 404.
        if kube.get_opt(kube.namespace_path(ns)) is None:
            return types.BundleUsage(workloads=[], volume_bytes=0)
        pods = kube.list_items(kube.core(ns, "pods"), objects.managed_selector())
        claims = kube.list_items(kube.core(ns, "persistentvolumeclaims"))
    except Err as e:
        raise errors.with_context(e, f"the usage of namespace `{ns}`") from None
    workloads = []
    for pod in pods:
        name = kube.labels_of(pod).get(objects.WORKLOAD_LABEL)
        if name is None or kube.is_exited(pod):
            continue
        workloads.append(
            types.WorkloadUsage(name=name, requested=capacity.pod_requests(pod), used=None)
        )
    volume_bytes = 0
    for claim in claims:
        requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
        volume_bytes += quantity.parse(str(requests.get("storage", "0")), 1) or 0
    return types.BundleUsage(workloads=workloads, volume_bytes=volume_bytes)


def in_use() -> types.InUseReport:
    """Everything Pando has on the cluster: the apps whose namespaces are
    labelled as Pando's, their claims, and what their running pods
    request."""
    try:
        namespaces = kube.list_items(kube.namespace_path(), objects.managed_selector())
    except Err as e:
        raise errors.with_context(e, "listing Pando's namespaces") from None
    report = types.InUseReport(
        bundles=[], volumes=[], requested=types.Resources(cpu_millis=0, memory_bytes=0)
    )
    for ns in namespaces:
        name = kube.name_of(ns)
        app_id = kube.labels_of(ns).get(objects.APP_LABEL)
        if not name or app_id is None or names.check_dns_label(app_id) is not None:
            continue
        if names.APP_NAMESPACE_PREFIX + app_id != name:
            continue
        report.bundles.append(app_id)
        report.volumes.extend(volumes.list_handles(app_id, name))
        try:
            pods = kube.list_items(kube.core(name, "pods"), objects.managed_selector())
        except Err as e:
            raise errors.with_context(e, f"the pods of `{name}`") from None
        for pod in pods:
            if not kube.is_exited(pod):
                r = capacity.pod_requests(pod)
                report.requested.cpu_millis += r.cpu_millis
                report.requested.memory_bytes += r.memory_bytes
    return report
