//! How an app is kept apart: the isolation class a RuntimeClass gives its
//! pods, here; where it may connect out to ([`egress`],
//! ), never into the cluster's ranges ([`exclusions`]).
//!
//! The isolation class is a pure function of the RuntimeClass's handler (the CRI runtime handler,
//! `spec.handler`), so it is tested without a cluster; the adapter reads the
//! configured RuntimeClass and passes its handler here.

use pando_adapter_sdk::types::IsolationClass;

pub(crate) mod cidr;
pub mod egress;
pub mod exclusions;

/// The isolation class of pods run by the CRI handler `handler`:
///
/// - `runsc`, gVisor's user-space kernel: `sandboxed`;
/// - `kata`, or `kata-*` (`kata-qemu`, `kata-clh`, `kata-fc` …), Kata
///   Containers' micro-VMs: `sandboxed`;
/// - anything else (`runc`, `crun`, a handler this adapter does not know):
///   `shared-kernel`. An unknown handler is never reported as
///   stronger than it is shown to be.
///
/// A Kata micro-VM is a VM per pod, but the contract's `virtual-machine`
/// means a full VM per workload; the reference reports Kata as `sandboxed`,
/// and so does this.
pub fn for_handler(handler: &str) -> IsolationClass {
    match handler {
        // gVisor's handler is `runsc`; GKE Sandbox names it `gvisor`.
        "runsc" | "gvisor" => IsolationClass::Sandboxed,
        "kata" => IsolationClass::Sandboxed,
        _ if handler.starts_with("kata-") => IsolationClass::Sandboxed,
        _ => IsolationClass::SharedKernel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r115_gvisor_runsc_is_sandboxed() {
        assert_eq!(for_handler("runsc"), IsolationClass::Sandboxed);
        assert_eq!(for_handler("gvisor"), IsolationClass::Sandboxed);
    }

    #[test]
    fn r115_kata_is_sandboxed() {
        for handler in ["kata", "kata-qemu", "kata-clh", "kata-fc", "kata-qemu-snp"] {
            assert_eq!(for_handler(handler), IsolationClass::Sandboxed, "{handler}");
        }
    }

    #[test]
    fn r114_other_handlers_share_the_kernel() {
        for handler in ["", "runc", "crun", "youki", "kata_qemu", "katana", "Kata"] {
            assert_eq!(
                for_handler(handler),
                IsolationClass::SharedKernel,
                "{handler}"
            );
        }
    }
}
