//! The `securityContext`s of the pods the adapter makes (docs/kubernetes-adapter.md,
//! "Pod Security"): `restricted` for its own containers, `baseline` and two
//! rules of `restricted` for an app's, and the volume helper's exception.

use serde_json::{Value, json};

/// The user and group the adapter's own busybox pods (the volume helper, the
/// canary, the trial's observer) run as: `nobody`, numeric so that the
/// kubelet can check `runAsNonRoot` whatever the image says.
pub const HELPER_UID: u64 = 65534;

/// A container `securityContext` that meets Pod Security `restricted` for
/// the adapter's own containers: not root (`uid`, numeric), no privilege
/// escalation, every capability dropped, the runtime's default seccomp
/// profile. No host namespace or path is ever set beside it.
pub fn restricted_context(uid: u64) -> Value {
    json!({
        "runAsNonRoot": true,
        "runAsUser": uid,
        "runAsGroup": uid,
        "allowPrivilegeEscalation": false,
        "capabilities": { "drop": ["ALL"] },
        "seccompProfile": { "type": "RuntimeDefault" },
    })
}

/// The volume helper's container `securityContext` (snapshots and restores): root, with
/// only what handling files of any owner takes — reading and writing them past their modes,
/// keeping their owners and modes as tar restores them — no privilege escalation, the
/// runtime's default seccomp profile. Pod Security `baseline`, not `restricted`: a volume
/// holds files of whatever user the app wrote them as, and a helper as `nobody` can neither
/// read one only its owner may read nor remove the old contents a restore replaces (it
/// failed half-way through the swap, on the real node).
pub fn volume_helper_context() -> Value {
    json!({
        "runAsUser": 0,
        "runAsGroup": 0,
        "allowPrivilegeEscalation": false,
        "capabilities": { "drop": ["ALL"], "add": ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID"] },
        "seccompProfile": { "type": "RuntimeDefault" },
    })
}

/// The pod `securityContext` of every pod the adapter makes: the runtime's
/// default seccomp profile (`restricted` asks it of each pod; `baseline`
/// would allow `Unconfined`, which app pods never get either).
pub fn pod_context() -> Value {
    json!({ "seccompProfile": { "type": "RuntimeDefault" } })
}
