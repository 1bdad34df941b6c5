"""Pando's Python Kubernetes adapter: the `kubernetes-adapter` world of
`pando:runtime@0.1.0` (wit/worlds.wit), built with componentize-py.

A small but real adapter, a faithful subset of the Rust Kubernetes adapter
(adapter-kubernetes/): the same namespace (`pando-<app>`), default-deny
NetworkPolicy (R-023, R-025), headless Services, bare pods with
`restartPolicy: Never` (R-151), retained claims (R-204), labels and spec
hashes, so either adapter observes, stops and destroys what the other made.
Not here: exec, run, trial, snapshots, the edge, egress to host names (the
egress gateway). It reaches the cluster only through the host's `pando:runtime/kubernetes`
import, within the grants of deploy/grants/kubernetes.yaml (or the narrower
adapters/python-kubernetes/grants.yaml).

componentize-py requires every export of the world: what this adapter does
not offer answers the typed `unsupported` error, and `capabilities` says so
in advance (R-254).

The module keeps nothing between calls but its configuration (the host may
drop an instance between any two calls); the cluster holds the state.
"""

from __future__ import annotations

import traceback
from functools import wraps
from typing import Any, Callable, List, Optional, TypeVar

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import adapter as adapter_exports
from wit_world.imports import events, types, wasi_io_streams

from kubeadapter import apply as apply_mod
from kubeadapter import capacity as capacity_mod
from kubeadapter import config as config_mod
from kubeadapter import errors, kube, lifecycle, logs as logs_mod, names, observe as observe_mod
from kubeadapter import schema, volumes, waiting, watch

KIND = "kubernetes-py"
DESCRIPTION = (
    "Runs each app in its own namespace of a Kubernetes cluster, as bare pods behind headless "
    "Services, isolated by a default-deny NetworkPolicy (written in Python)."
)

# The configuration `configure` accepted: the only state kept between calls.
_config: Optional[config_mod.Config] = None

T = TypeVar("T")


def _configured() -> config_mod.Config:
    if _config is None:
        raise errors.internal("the adapter was called before `configure`: a host bug")
    return _config


def _where(e: BaseException) -> str:
    """Where an exception was raised: its innermost frames as `file:line
    (function)`. Read from the frames alone: `traceback`'s formatting reads
    source files, and this component has no files."""
    frames = [
        f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{line} ({frame.f_code.co_name})"
        for frame, line in traceback.walk_tb(e.__traceback__)
    ]
    return " < ".join(reversed(frames[-3:])) or "unknown"


def boundary(method: Callable[..., T]) -> Callable[..., T]:
    """An export's body: the contract's errors (`Err`) pass as they are;
    any other exception is `internal`, naming where it was raised for the
    adapter's author, rather than a trap that would cost the instance."""

    @wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return method(*args, **kwargs)
        except Err:
            raise
        except Exception as e:  # noqa: BLE001 - the boundary of every export
            raise errors.internal(
                f"`{method.__name__}` failed in the Python adapter: {type(e).__name__}: {e} "
                f"(at {_where(e)})"
            ) from None

    return wrapper


def _unsupported(call: str, why: str = "") -> Err[errors.Error]:
    reason = f": {why}" if why else ""
    return errors.unsupported(
        f"this adapter (kind `{KIND}`) does not offer `{call}`{reason}; "
        "use the Kubernetes adapter for it"
    )


def isolation_for_handler(handler: str) -> types.IsolationClass:
    """The isolation class of pods run by a RuntimeClass handler (R-114,
    R-115): gVisor and Kata are `sandboxed`, anything else shares the
    kernel (an unknown handler is never reported stronger than shown)."""
    if handler in ("runsc", "gvisor", "kata") or handler.startswith("kata-"):
        return types.IsolationClass.SANDBOXED
    return types.IsolationClass.SHARED_KERNEL


def _runtime_class(config: config_mod.Config) -> Optional[kube.Json]:
    """The configured RuntimeClass; `unavailable` naming the setting when it
    does not exist (pods asking for it would never start)."""
    if config.runtime_class is None:
        return None
    name = config.runtime_class
    try:
        found = kube.get_opt(f"/apis/node.k8s.io/v1/runtimeclasses/{name}")
    except Err as e:
        raise errors.with_context(e, f"reading RuntimeClass `{name}`") from None
    if found is None:
        raise errors.unavailable(
            f"RuntimeClass `{name}` (configuration field `runtime_class`) does not exist in the "
            "cluster: create it, or unset `runtime_class`"
        )
    return found


class Adapter(exports.Adapter):
    """The exports of `pando:runtime/adapter@0.1.0`."""

    def info(self) -> types.KindInfo:
        return types.KindInfo(
            kind=KIND,
            category=types.Category.CLUSTER,
            description=DESCRIPTION,
            config_schema=schema.schema_text(),
        )

    @boundary
    def configure(self, config: str) -> None:
        global _config
        _config = config_mod.parse(config)

    @boundary
    def capabilities(self) -> types.RuntimeCapabilities:
        rc = _runtime_class(_configured())
        handler = str(rc.get("handler") or "") if rc is not None else ""
        return types.RuntimeCapabilities(
            isolation=isolation_for_handler(handler)
            if rc is not None
            else types.IsolationClass.SHARED_KERNEL,
            exec=False,
            run=False,
            logs=True,
            trial=False,
            write_observation=False,
            egress_restriction=False,
            image_import=False,
            volume_snapshot=False,
            edge=False,
        )

    @boundary
    def health_check(self) -> None:
        answer = kube.send("GET", "/readyz")
        if not answer.ok:
            message = answer.body[:512].decode("utf-8", "replace").strip()
            raise errors.unavailable(
                f"the Kubernetes API server is not ready (GET /readyz answered "
                f"{answer.status}): {message}"
            )
        _runtime_class(_configured())

    @boundary
    def capacity(self) -> types.CapacityReport:
        runtime_class = _runtime_class(_configured())
        nodes, pods = capacity_mod.read(_configured().node_selector, runtime_class)
        return capacity_mod.report(nodes, pods, capacity_mod.overhead_of(runtime_class))

    @boundary
    def largest_fit_for(self, bundle: str) -> Optional[types.Fit]:
        runtime_class = _runtime_class(_configured())
        nodes, pods = capacity_mod.read(_configured().node_selector, runtime_class)
        return capacity_mod.largest_fit_for(
            nodes, pods, bundle, capacity_mod.overhead_of(runtime_class)
        )

    @boundary
    def in_use(self) -> types.InUseReport:
        return lifecycle.in_use()

    @boundary
    def apply(self, plan: types.BundlePlan) -> types.BundleHandle:
        return apply_mod.apply(_configured(), plan)

    @boundary
    def observe(self, bundle: types.BundleRef) -> types.ObservedBundle:
        return observe_mod.observe(bundle)

    @boundary
    def stop(self, bundle: types.BundleRef) -> None:
        lifecycle.stop(bundle)

    @boundary
    def destroy(self, bundle: types.BundleRef, options: types.DestroyOptions) -> None:
        lifecycle.destroy(bundle, options)

    @boundary
    def usage(self, bundle: types.BundleRef) -> types.BundleUsage:
        return lifecycle.usage(bundle)

    @boundary
    def create_volume(self, request: types.VolumeRequest) -> types.VolumeHandle:
        return volumes.create_volume(_configured(), request)

    @boundary
    def destroy_volume(self, volume: types.VolumeHandle) -> None:
        volumes.destroy_volume(volume)

    @boundary
    def snapshot_volume(
        self, volume: types.VolumeHandle, into: wasi_io_streams.OutputStream
    ) -> None:
        waiting.keep(into)
        raise _unsupported("snapshot-volume", "it takes no snapshots")

    @boundary
    def restore_volume(
        self, volume: types.VolumeHandle, from_: wasi_io_streams.InputStream
    ) -> None:
        waiting.keep(from_)
        raise _unsupported("restore-volume", "it takes no snapshots")

    @boundary
    def has_image(self, image: str) -> bool:
        # Every node pulls from a registry, which is where images stay.
        return True

    @boundary
    def import_image(self, from_: wasi_io_streams.InputStream) -> str:
        waiting.keep(from_)
        raise _unsupported("import-image", "every node pulls from a registry")

    @boundary
    def logs(
        self, workload: types.WorkloadRef, options: types.LogOptions
    ) -> wasi_io_streams.InputStream:
        return logs_mod.logs(workload, options)

    @boundary
    def exec(
        self, workload: types.WorkloadRef, request: types.ExecRequest
    ) -> adapter_exports.ExecSession:
        raise _unsupported("exec")

    @boundary
    def run(
        self,
        workload: types.WorkloadRef,
        request: types.RunRequest,
        stdout: wasi_io_streams.OutputStream,
    ) -> None:
        waiting.keep(stdout)
        raise _unsupported("run")

    @boundary
    def trial(self, request: types.TrialRequest) -> types.TrialResult:
        raise _unsupported("trial")

    @boundary
    def upstream(self, workload: types.WorkloadRef, port: int) -> types.UpstreamAddress:
        return names.upstream(_configured().cluster_domain, workload, port)

    @boundary
    def watch_bundles(self, sink: events.BundleSink) -> types.WatchEnd:
        return watch.watch_bundles(sink)

    @boundary
    def apply_edge(self, plan: types.EdgePlan) -> None:
        raise _unsupported("apply-edge", "it runs no edge")

    @boundary
    def observe_edge(self, name: str) -> types.EdgeState:
        raise _unsupported("observe-edge", "it runs no edge")

    @boundary
    def remove_edge(self, name: str) -> None:
        raise _unsupported("remove-edge", "it runs no edge")

    @boundary
    def edges(self) -> List[str]:
        raise _unsupported("edges", "it runs no edge")

    @boundary
    def edge_volumes(self) -> List[types.VolumeHandle]:
        raise _unsupported("edge-volumes", "it runs no edge")
