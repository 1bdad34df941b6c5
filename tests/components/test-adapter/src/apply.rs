//! `apply`: a normal plan, or one of the misbehaviours its id asks for.

use std::hint::black_box;
use std::time::Duration;

use pando_adapter_sdk::error::invalid;
use pando_adapter_sdk::types::{BundleHandle, BundlePlan, Error, InputStream, StreamError};
use pando_adapter_sdk::{info, io, time, warn};

pub fn apply(plan: BundlePlan, greeting: Option<&str>) -> Result<BundleHandle, Error> {
    info!(
        bundle = plan.id,
        workloads = plan.workloads.len(),
        greeting = greeting.unwrap_or(""),
        "test adapter applying {}",
        plan.id
    );
    match plan.id.as_str() {
        "loop" => spin(),
        "bomb" => bomb(),
        "panic" => panic!("test adapter asked to panic"),
        "stack" => {
            let depth = recurse(0);
            // Never reached: the recursion has no end.
            Err(invalid(format!("recursion ended at {depth}")))
        }
        "ignore-cancel" => ignore_cancel(),
        // A 200 MiB return value: the location alone.
        "huge-return" => Ok(BundleHandle {
            location: "x".repeat(200 << 20),
            id: plan.id,
        }),
        "log-flood" => log_flood(u64::MAX).map(|()| handle(plan.id)),
        id => {
            // Tries the network the host lends without authority: the
            // answer names what became of it, and should be a refusal.
            if let Some(addr) = id.strip_prefix("connect-") {
                let outcome = match std::net::TcpStream::connect(addr) {
                    Ok(_) => "connected".to_owned(),
                    Err(e) => format!("refused: {:?}", e.kind()),
                };
                let resolved = match std::net::ToSocketAddrs::to_socket_addrs("localhost:80") {
                    Ok(_) => "resolved".to_owned(),
                    Err(e) => format!("not resolved: {:?}", e.kind()),
                };
                return Ok(BundleHandle {
                    location: format!("{outcome}; {resolved}"),
                    id: plan.id,
                });
            }
            if let Some(n) = id.strip_prefix("log-flood-") {
                let n: u64 = n
                    .parse()
                    .map_err(|_| invalid(format!("plan id `{id}`: log-flood-<lines>")))?;
                return log_flood(n).map(|()| handle(plan.id));
            }
            if let Some(rest) = id.strip_prefix("from-bytes-") {
                return hold_streams(rest, false).map(|location| BundleHandle {
                    location,
                    id: plan.id,
                });
            }
            if let Some(rest) = id.strip_prefix("keep-from-bytes-") {
                return hold_streams(rest, true).map(|location| BundleHandle {
                    location,
                    id: plan.id,
                });
            }
            if let Some(n) = id.strip_prefix("pipes-") {
                let n: usize = n
                    .parse()
                    .map_err(|_| invalid(format!("plan id `{id}`: pipes-<count>")))?;
                return Ok(BundleHandle {
                    location: hold_pipes(n),
                    id: plan.id,
                });
            }
            if let Some(ms) = id.strip_prefix("sleep-") {
                let ms: u64 = ms
                    .parse()
                    .map_err(|_| invalid(format!("plan id `{id}`: sleep-<milliseconds>")))?;
                time::sleep(Duration::from_millis(ms))?;
                return Ok(handle(plan.id));
            }
            if let Some(bad) = plan.workloads.iter().find(|w| !is_dns_label(&w.name)) {
                return Err(invalid(format!(
                    "workload name `{}` is not a DNS label (lowercase letters, digits and `-`, \
                     at most 63, starting and ending with a letter or digit)",
                    bad.name
                )));
            }
            Ok(handle(plan.id))
        }
    }
}

fn handle(id: String) -> BundleHandle {
    BundleHandle {
        location: format!("test/{id}"),
        id,
    }
}

fn is_dns_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    let inner = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.first().is_some_and(inner)
        && bytes.last().is_some_and(inner)
        && bytes.iter().all(|b| inner(b) || *b == b'-')
}

/// Spin in pure wasm, no host call: only the host's epoch backstop ends it.
fn spin() -> ! {
    let mut n = 0u64;
    loop {
        n = black_box(n.wrapping_add(1));
    }
}

/// Allocate 1 MiB at a time, write to every page, keep it all: the host's
/// memory limit ends it (an allocation failure aborts, a trap).
fn bomb() -> ! {
    const CHUNK: usize = 1024 * 1024;
    const PAGE: usize = 4096;
    let mut kept: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut chunk = vec![0u8; CHUNK];
        for i in (0..CHUNK).step_by(PAGE) {
            chunk[i] = black_box(1);
        }
        kept.push(black_box(chunk));
    }
}

/// Recurse without bound on the wasm stack itself (the engine's stack
/// limit), not Rust's shadow stack in linear memory: every value stays in
/// wasm locals, and the call goes through a function pointer the optimizer
/// cannot see through, so it is neither inlined nor turned into a loop.
#[inline(never)]
fn recurse(depth: u64) -> u64 {
    let next: fn(u64) -> u64 = black_box(recurse);
    next(depth.wrapping_add(1))
        .wrapping_mul(31)
        .wrapping_add(depth)
}

/// Loop on a cheap host import and ignore what it says: the host's backstop,
/// not cooperation, must end it.
fn ignore_cancel() -> ! {
    loop {
        black_box(time::is_cancelled());
    }
}

/// Log `lines` lines through `pando:runtime/log` and as many to stderr, as
/// fast as it can, ignoring cancellation (`u64::MAX`: until the host stops
/// it).
fn log_flood(lines: u64) -> Result<(), Error> {
    for i in 0..lines {
        warn!(line = i, "test adapter flooding the log: line {i}");
        eprintln!("test adapter flooding stderr: line {i}");
    }
    Ok(())
}

/// `<n>-<bytes>`: `n` streams made with `from-bytes` of `bytes` bytes each,
/// all held at once, then one byte read from each. Dropped on return, or
/// leaked into the instance's table when `keep`. Reports
/// `ok=<n> failed=<n> error=<the first failure>`.
fn hold_streams(arg: &str, keep: bool) -> Result<String, Error> {
    let parsed = arg
        .split_once('-')
        .and_then(|(n, b)| Some((n.parse::<usize>().ok()?, b.parse::<usize>().ok()?)));
    let Some((n, bytes)) = parsed else {
        return Err(invalid(format!("`{arg}`: from-bytes-<count>-<bytes>")));
    };
    let chunk = vec![b'a'; bytes];
    let held: Vec<InputStream> = (0..n).map(|_| io::from_bytes(&chunk)).collect();
    drop(chunk);
    let (mut ok, mut failed, mut first) = (0, 0, String::new());
    for stream in &held {
        match stream.read(1) {
            Ok(_) | Err(StreamError::Closed) => ok += 1,
            Err(StreamError::LastOperationFailed(e)) => {
                failed += 1;
                if first.is_empty() {
                    first = e.to_debug_string();
                }
            }
        }
    }
    if keep {
        std::mem::forget(held);
    }
    Ok(format!("ok={ok} failed={failed} error={first}"))
}

/// `n` pipes of 1 MiB, all held at once; reports as [`hold_streams`] does,
/// from whether each output end takes a write.
fn hold_pipes(n: usize) -> String {
    let held: Vec<_> = (0..n).map(|_| io::pipe(1 << 20)).collect();
    let (mut ok, mut failed, mut first) = (0, 0, String::new());
    for (out, _inp) in &held {
        match out.check_write() {
            Ok(_) => ok += 1,
            Err(StreamError::LastOperationFailed(e)) => {
                failed += 1;
                if first.is_empty() {
                    first = e.to_debug_string();
                }
            }
            Err(StreamError::Closed) => failed += 1,
        }
    }
    format!("ok={ok} failed={failed} error={first}")
}
