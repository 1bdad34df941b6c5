//! CPU time this process has used, in nanoseconds, so a benchmark can say
//! how much of a call's wall time was the host's own work and how much was
//! waiting (for the API server, for a wake-up).

/// CPU time of all this process's threads so far: the sum of the first
/// field (time on a CPU, ns) of /proc/self/task/*/schedstat. Threads that
/// have exited are not counted, which the bench's threads never do while
/// it measures. Zero without procfs.
pub fn process_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| {
            let path = t.ok()?.path().join("schedstat");
            let text = std::fs::read_to_string(path).ok()?;
            text.split_whitespace().next()?.parse::<u64>().ok()
        })
        .sum()
}

/// The `cpu` line of /proc/stat: all cores' jiffies (USER_HZ) so far, and
/// those of them idle or waiting for I/O. Guest time is left out of the
/// total: the kernel counts it in user time already.
pub fn machine_jiffies() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|x| x.parse().ok())
        .collect();
    let idle = v.get(3)? + v.get(4).copied().unwrap_or(0);
    Some((v.iter().sum(), idle))
}

/// CPU time the whole machine has been busy so far (all cores; every
/// process: the cluster's, the plugin's, this one's), in nanoseconds
/// (USER_HZ = 100). For a benchmark whose work spans processes. Zero
/// without procfs.
pub fn machine_busy_ns() -> u64 {
    machine_jiffies().map_or(0, |(total, idle)| {
        total.saturating_sub(idle).saturating_mul(10_000_000)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_time_grows_with_work() {
        let before = super::process_ns();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        assert!(super::process_ns() > before);
    }
}
