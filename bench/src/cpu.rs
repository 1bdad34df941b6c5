//! CPU time this process has used, in nanoseconds, so a benchmark can say
//! how much of a call's wall time was the host's own work and how much was
//! waiting (for the API server, for a wake-up).

/// CPU time of all this process's threads so far, in nanoseconds
/// (`CLOCK_PROCESS_CPUTIME_ID`). The kernel keeps the time of threads that
/// have exited in it, so it never goes back when a thread ends between two
/// readings — the runtime's blocking threads end after ten idle seconds,
/// which a sum over /proc/self/task/*/schedstat did not survive.
pub fn process_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    u64::try_from(t.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(t.tv_nsec).unwrap_or(0))
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

    fn burn() {
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
    }

    /// The quick bench's `versions` died on `process_ns() - before` when a
    /// runtime thread ended between the two readings.
    #[test]
    fn cpu_time_keeps_what_an_ended_thread_used() {
        let (worked, wait) = std::sync::mpsc::channel();
        let (go, ended) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            burn();
            let _ = worked.send(());
            let _ = ended.recv();
        });
        wait.recv().ok();
        let before = super::process_ns();
        drop(go);
        thread.join().ok();
        assert!(super::process_ns() >= before);
    }
}
