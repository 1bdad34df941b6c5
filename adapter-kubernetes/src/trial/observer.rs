//! The trial's observer (R-097): a container of `helper_image` beside the
//! workload, in its network namespace, that the adapter execs into to read
//! the kernel's socket tables, so that the ports the workload listens on
//! are seen without any help from its image.

use std::collections::BTreeSet;
use std::time::Duration;

use pando_adapter_sdk::kube::Api;
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::Pod;
use pando_adapter_sdk::types::Error;
use pando_adapter_sdk::{ExecSession, io};
use serde_json::{Value, json};

use crate::config::Config;
use crate::kit::security;
use crate::sessions::exec;

/// The observer container.
pub const OBSERVER: &str = "pando-observer";
/// Prints the socket tables the observer can read, each after a `# name`
/// line.
const OBSERVE_SCRIPT: &str = r##"r="${PANDO_HELPER_ROOT:-}"
for f in tcp tcp6 udp udp6; do
  if [ -r "$r/proc/net/$f" ]; then echo "# $f"; cat "$r/proc/net/$f"; fi
done
"##;

/// The observer container, sleeping for the trial's `lifetime` until
/// exec'd into.
pub fn container(config: &Config, lifetime: Duration) -> Value {
    json!({
        "name": OBSERVER,
        "image": config.helper_image,
        "command": ["sh", "-c", format!("exec sleep {}", lifetime.as_secs())],
        "resources": { "requests": { "cpu": "10m", "memory": "16Mi" },
                       "limits": { "memory": "64Mi" } },
        // Pod Security `restricted` for the observer itself; the pod's seccomp profile is
        // set by the app's pod already (security::pod_context).
        "securityContext": security::restricted_context(security::HELPER_UID),
    })
}

/// The observer's socket tables, as text.
pub fn read_sockets(ns: &str, pod: &str) -> Result<String, Error> {
    let params = pando_adapter_sdk::kube::ExecParams {
        container: Some(OBSERVER.into()),
        command: vec!["sh".into(), "-c".into(), OBSERVE_SCRIPT.into()],
        stdin: false,
        tty: false,
    };
    let mut session = Api::<Pod>::namespaced(ns)
        .exec(pod, &params)
        .map_err(Error::from)?;
    let out = ExecSession::stdout(&mut session);
    let err = ExecSession::stderr(&mut session);
    // The tables are small (a line per socket); stderr is read after, and
    // the host buffers what little it holds meanwhile.
    let bytes = match &out {
        Some(out) => io::read_to_end(out, 4 << 20)?,
        None => Vec::new(),
    };
    exec::pump(None, err.as_ref(), None)?;
    drop((out, err));
    ExecSession::wait(&mut session)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The ports listening on a non-loopback address in `/proc/net` socket
/// tables, each table after a `# tcp|tcp6|udp|udp6` line: `(port, udp)`.
/// TCP sockets in state `0A` (LISTEN); UDP sockets bound to a port with no
/// peer (state `07`).
pub fn parse_sockets(text: &str) -> BTreeSet<(u16, bool)> {
    let mut found = BTreeSet::new();
    let mut table = "";
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("# ") {
            table = name.trim();
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        // `sl local_address rem_address st …`; the header line says `sl`.
        if fields.len() < 4 || !fields[0].ends_with(':') {
            continue;
        }
        let udp = table.starts_with("udp");
        let wanted_state = if udp { "07" } else { "0A" };
        if fields[3] != wanted_state {
            continue;
        }
        let Some((addr, port)) = fields[1].split_once(':') else {
            continue;
        };
        if udp && !fields[2].trim_start_matches('0').starts_with(':') {
            // A connected UDP socket talks to a peer; it is not a server.
            continue;
        }
        let Ok(port) = u16::from_str_radix(port, 16) else {
            continue;
        };
        if port == 0 || is_loopback(addr) {
            continue;
        }
        found.insert((port, udp));
    }
    found
}

/// Whether a `/proc/net` address (hex, in the kernel's byte order) is a
/// loopback one: 127.0.0.0/8, `::1`, or `::ffff:127.x.y.z`.
fn is_loopback(addr: &str) -> bool {
    match addr.len() {
        // IPv4: four bytes, little-endian on the machines Kubernetes runs
        // on, so the first octet is the last byte.
        8 => addr.ends_with("7F"),
        32 => {
            let a = addr.to_ascii_uppercase();
            a == "00000000000000000000000001000000"
                || (a.starts_with("0000000000000000FFFF0000") && a.ends_with("7F"))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real tables, as a 6.x kernel prints them (trimmed to the columns that
    // matter, which are the first four).
    const TABLES: &str = "# tcp
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
   1: 0100007F:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1
   2: 0A00000A:1F90 0B00000A:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 3 1
# tcp6
  sl  local_address                         remote_address                        st tx_queue
   0: 00000000000000000000000000000000:01BB 00000000000000000000000000000000:0000 0A 00000000
   1: 00000000000000000000000001000000:1F91 00000000000000000000000000000000:0000 0A 00000000
# udp
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  5: 00000000:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4 2
  6: 0A00000A:A1B2 08080808:0035 01 00000000:00000000 00:00000000 00000000     0        0 5 2
";

    #[test]
    fn r097_listening_sockets_are_read_from_proc_net() {
        let found = parse_sockets(TABLES);
        let expected: BTreeSet<(u16, bool)> = [(8080, false), (443, false), (53, true)]
            .into_iter()
            .collect();
        assert_eq!(
            found, expected,
            "loopback, connected and established sockets are left out"
        );
    }

    #[test]
    fn loopback_addresses_in_both_families() {
        assert!(is_loopback("0100007F"));
        assert!(is_loopback("0200007F"));
        assert!(!is_loopback("0A00000A"));
        assert!(is_loopback("00000000000000000000000001000000"));
        assert!(is_loopback("0000000000000000FFFF00000100007F"));
        assert!(!is_loopback("00000000000000000000000000000000"));
    }
}
