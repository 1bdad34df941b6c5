//! Where a run happened: cores, CPU model, memory, kernel, compiler, and
//! what else was running.

use std::process::Command;

use serde::Serialize;

/// The machine a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// `nproc`: the cores this process may use.
    pub nproc: usize,
    /// `model name` of /proc/cpuinfo.
    pub cpu: String,
    /// `MemTotal` of /proc/meminfo, in GiB.
    pub memory_gib: f64,
    /// `uname -sr`.
    pub kernel: String,
    /// `rustc --version` (the toolchain of `rust-toolchain.toml`).
    pub rustc: String,
    /// The 1-minute load average when the run started.
    pub load_at_start: f64,
    /// Share of all cores busy (not idle or waiting for I/O) over the
    /// second before the run started, from /proc/stat.
    pub cpu_busy_at_start: f64,
    /// Other busy processes when the run started (compilers, tests), which
    /// share the cores with the benchmarks.
    pub busy_at_start: Vec<String>,
}

impl Machine {
    /// Reads the machine now.
    pub fn read() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_gib = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map(|kib| kib / (1024.0 * 1024.0))
            .unwrap_or(0.0);
        let load_at_start = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| l.split_whitespace().next()?.parse().ok())
            .unwrap_or(0.0);
        Machine {
            nproc: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            cpu,
            memory_gib,
            kernel: output("uname", &["-sr"]),
            rustc: output("rustc", &["--version"]),
            load_at_start,
            cpu_busy_at_start: cpu_busy(std::time::Duration::from_secs(1)),
            busy_at_start: busy_processes(),
        }
    }

    /// One line for the head of the tables.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} cores ({}), {:.1} GiB, {}, {}; at start: load {:.2}, cores {:.0}% busy",
            self.nproc,
            self.cpu,
            self.memory_gib,
            self.kernel,
            self.rustc,
            self.load_at_start,
            self.cpu_busy_at_start * 100.0
        );
        if !self.busy_at_start.is_empty() {
            s.push_str(&format!(
                "; also running: {}",
                self.busy_at_start.join(", ")
            ));
        }
        s
    }
}

/// The busy share of all cores over `window`: 1 − (idle + iowait) / total
/// jiffies of the `cpu` line of /proc/stat.
pub fn cpu_busy(window: std::time::Duration) -> f64 {
    let Some((t0, i0)) = crate::cpu::machine_jiffies() else {
        return 0.0;
    };
    std::thread::sleep(window);
    let Some((t1, i1)) = crate::cpu::machine_jiffies() else {
        return 0.0;
    };
    let total = t1.saturating_sub(t0);
    if total == 0 {
        return 0.0;
    }
    1.0 - i1.saturating_sub(i0) as f64 / total as f64
}

fn output(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// Names of processes other than this one using more than 20% of a core
/// (as `ps` averages it over their life: a rough hint, enough to see a
/// compiler or a test run sharing the machine).
fn busy_processes() -> Vec<String> {
    let me = std::process::id().to_string();
    let out = output("ps", &["-eo", "pid=,pcpu=,comm="]);
    let mut busy: Vec<String> = out
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (pid, cpu, comm) = (f.next()?, f.next()?, f.next()?);
            let cpu: f64 = cpu.parse().ok()?;
            (pid != me && cpu > 20.0).then(|| format!("{comm} ({cpu:.0}%)"))
        })
        .collect();
    busy.sort();
    busy.dedup();
    busy
}
