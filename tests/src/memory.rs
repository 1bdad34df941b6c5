//! The test process's resident memory, for tests that bound what a hostile
//! adapter costs the host.

use std::io::Write;

/// Held by every test that measures this process's memory or descriptors
/// (`tests/tests/process/`): they run one at a time, so one's allocations
/// never count in another's peak.
pub static MEASURING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A field of `/proc/self/status`, in bytes (`VmRSS`, `VmHWM`).
pub fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unreadable {line:?}"));
    kib * 1024
}

/// The resident size now.
pub fn rss() -> u64 {
    status_bytes("VmRSS")
}

/// The peak resident size since the last [`reset_peak`].
pub fn peak() -> u64 {
    status_bytes("VmHWM")
}

/// Resets the peak resident size (`VmHWM`) to the current one; false when
/// the kernel does not let us.
pub fn reset_peak() -> bool {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/self/clear_refs")
        .and_then(|mut f| f.write_all(b"5"))
        .is_ok()
}

/// Open file descriptors of the process.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Bytes as MiB, for messages.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}
