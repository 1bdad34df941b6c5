//! `watch-bundles`: a change every 10 ms until cancelled.

use std::time::Duration;

use pando_adapter_sdk::time;
use pando_adapter_sdk::types::{
    BundleEvent, BundleSink, Error, ObservedWorkload, WatchEnd, WorkloadChange, WorkloadPhase,
};

pub fn watch(sink: &BundleSink) -> Result<WatchEnd, Error> {
    if sink.send(&BundleEvent::Watching).is_err() {
        return Ok(WatchEnd::Cancelled);
    }
    for i in 0u64.. {
        match time::sleep(Duration::from_millis(10)) {
            Ok(()) => {}
            Err(Error::Cancelled(_)) => return Ok(WatchEnd::Cancelled),
            Err(e) => return Err(e),
        }
        let event = BundleEvent::Changed(WorkloadChange {
            bundle: "b".into(),
            workload: ObservedWorkload {
                name: format!("w{i}"),
                phase: WorkloadPhase::Running,
                digest: None,
                exit_code: None,
                reason: String::new(),
                started_at_ms: None,
                finished_at_ms: None,
            },
            deleted: false,
        });
        if sink.send(&event).is_err() {
            // Core stopped listening: as good as cancelled.
            return Ok(WatchEnd::Cancelled);
        }
    }
    Ok(WatchEnd::Cancelled)
}
