"""The Python Kubernetes adapter's logic: a faithful subset of the Rust
Kubernetes adapter (adapter-kubernetes/) for apps of one workload.

Modules:

- `errors`: the contract's `error` cases, raised as `Err`;
- `config`: the configuration, its defaults and checks; `schema`: its JSON
  Schema;
- `names`: namespace, Service and upstream names, Kubernetes name rules;
- `cidr`: address ranges;
- `objects`: the objects an app is made of, and their spec hash;
- `kube`: a small JSON client over the host's `kubernetes.send`;
- `waiting`: waiting for the cluster by a watch (no clock of its own), and
  keeping the host's streams from being dropped;
- `apply`, `volumes`, `observe`, `lifecycle` (stop, destroy, usage,
  in-use), `capacity`, `logs`, `watch` (the bundle watch);
- `quantity`: Kubernetes quantities read back as base units.
"""
