//! This process's resident memory, from procfs.

use serde::{Deserialize, Serialize};

/// Resident memory of this process, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Resident {
    /// `VmRSS` of /proc/self/status.
    pub rss: u64,
    /// `Anonymous` of /proc/self/smaps_rollup: heap, stacks, the pooling
    /// allocator's linear memories and tables.
    pub anon: u64,
    /// `Rss` − `Anonymous`: file-backed pages (the binary, mapped
    /// precompiled code).
    pub file: u64,
    /// `Pss` of smaps_rollup: shared pages divided among their sharers.
    pub pss: u64,
}

impl Resident {
    /// Reads it now; zeros where procfs is not there.
    pub fn now() -> Resident {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
        let rss = field_kib(&status, "VmRSS:");
        let anon = field_kib(&rollup, "Anonymous:");
        let rollup_rss = field_kib(&rollup, "Rss:");
        Resident {
            rss,
            anon,
            file: rollup_rss.saturating_sub(anon),
            pss: field_kib(&rollup, "Pss:"),
        }
    }

    /// What grew from `before` to `self`, each field on its own (negative
    /// growth reads as zero).
    pub fn since(&self, before: &Resident) -> Resident {
        Resident {
            rss: self.rss.saturating_sub(before.rss),
            anon: self.anon.saturating_sub(before.anon),
            file: self.file.saturating_sub(before.file),
            pss: self.pss.saturating_sub(before.pss),
        }
    }
}

/// A `Name:   123 kB` line's value, in bytes.
fn field_kib(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .unwrap_or(0)
}

/// Bytes as MiB.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_kib_fields() {
        let text = "Rss:      2048 kB\nPss:   1024 kB\nAnonymous:   512 kB\n";
        assert_eq!(field_kib(text, "Rss:"), 2 << 20);
        assert_eq!(field_kib(text, "Anonymous:"), 512 << 10);
        assert_eq!(field_kib(text, "Missing:"), 0);
    }

    #[test]
    fn this_process_is_resident() {
        let r = Resident::now();
        assert!(r.rss > 0);
    }
}
