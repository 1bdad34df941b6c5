//! The deterministic bytes `logs` and `snapshot-volume` produce.

use pando_adapter_sdk::error::invalid;
use pando_adapter_sdk::types::{Error, VolumeHandle};

/// The most a `bytes-<N>` name may ask for.
pub const MAX_BYTES: usize = 16 * 1024 * 1024;

/// N bytes of the pattern: byte i is `i % 251` (a prime, so the pattern does
/// not line up with any power-of-two chunking).
pub fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

/// `Some(N)` for a name `bytes-<N>`; `invalid` when N is not a number or is
/// over [`MAX_BYTES`]; `None` for any other name.
pub fn bytes_len(name: &str) -> Result<Option<usize>, Error> {
    let Some(n) = name.strip_prefix("bytes-") else {
        return Ok(None);
    };
    match n.parse::<usize>() {
        Ok(n) if n <= MAX_BYTES => Ok(Some(n)),
        Ok(n) => Err(invalid(format!(
            "`{name}` asks for {n} bytes; at most {MAX_BYTES}"
        ))),
        Err(_) => Err(invalid(format!(
            "`{name}`: `bytes-` must be followed by a byte count"
        ))),
    }
}

/// What `snapshot-volume` writes for `volume`.
pub fn snapshot_bytes(volume: &VolumeHandle) -> Result<Vec<u8>, Error> {
    Ok(match bytes_len(&volume.name)? {
        Some(n) => pattern(n),
        None => format!("snapshot of {}/{}\n", volume.bundle, volume.name).into_bytes(),
    })
}

/// The first offset where `a` and `b` differ (a shorter one differs where it
/// ends); `None` when equal.
pub fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(offset) => Some(offset),
        None if a.len() != b.len() => Some(a.len().min(b.len())),
        None => None,
    }
}
