//! Just enough tar for the snapshot case: write an archive of a few files,
//! and read the regular files out of what an adapter's snapshot wrote
//! (ustar, with GNU long names and pax headers, as GNU and busybox tar
//! write them). Small and self-contained rather than a dependency: the
//! suite only ever reads its own few files back.

use std::collections::BTreeMap;

const BLOCK: usize = 512;
/// tar's default record: 20 blocks.
const RECORD: usize = 20 * BLOCK;

/// An archive of `dirs` (created first) and `files`, each path relative
/// (`conformance/data.bin`) and at most 99 bytes long.
pub(crate) fn archive(dirs: &[&str], files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for dir in dirs {
        out.extend_from_slice(&header(&format!("{dir}/"), 0, b'5', 0o755));
    }
    for (name, data) in files {
        out.extend_from_slice(&header(name, data.len() as u64, b'0', 0o644));
        out.extend_from_slice(data);
        out.resize(out.len().next_multiple_of(BLOCK), 0);
    }
    out.resize(out.len() + 2 * BLOCK, 0);
    // Padded to whole records, as `tar -c` writes them: a tar reading
    // from a stream whose end it is never told (an exec's stdin often is
    // not closed) reads a record at a time and would wait for the rest.
    out.resize(out.len().next_multiple_of(RECORD), 0);
    out
}

fn octal(field: &mut [u8], value: u64) {
    let digits = field.len() - 1;
    let text = format!("{value:0digits$o}");
    field[..digits].copy_from_slice(&text.as_bytes()[text.len() - digits..]);
    field[digits] = 0;
}

fn header(name: &str, size: u64, kind: u8, mode: u64) -> [u8; BLOCK] {
    let mut h = [0u8; BLOCK];
    let n = name.len().min(99);
    h[..n].copy_from_slice(&name.as_bytes()[..n]);
    octal(&mut h[100..108], mode);
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], size);
    // A fixed time: 2024-01-01.
    octal(&mut h[136..148], 1_704_067_200);
    h[156] = kind;
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].fill(b' ');
    let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
    octal(&mut h[148..155], sum);
    h[155] = b' ';
    h
}

/// A number field: octal text, or base-256 when the high bit is set.
fn number(field: &[u8]) -> Option<u64> {
    if field.first().is_some_and(|b| b & 0x80 != 0) {
        let mut v: u64 = u64::from(field[0] & 0x7f);
        for &b in &field[1..] {
            v = v.checked_mul(256)?.checked_add(u64::from(b))?;
        }
        return Some(v);
    }
    let text: String = field
        .iter()
        .take_while(|&&b| b != 0)
        .map(|&b| b as char)
        .collect();
    let text = text.trim();
    if text.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(text, 8).ok()
}

fn text(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// `./a/b` and `/a/b` as `a/b`.
fn normalize(path: &str) -> String {
    let mut p = path;
    loop {
        if let Some(rest) = p.strip_prefix("./") {
            p = rest;
        } else if let Some(rest) = p.strip_prefix('/') {
            p = rest;
        } else {
            break;
        }
    }
    p.to_string()
}

/// The `path` of a pax extended header's records (`LEN path=VALUE\n`).
fn pax_path(data: &[u8]) -> Option<String> {
    let mut rest = data;
    let mut path = None;
    while !rest.is_empty() {
        let space = rest.iter().position(|&b| b == b' ')?;
        let len: usize = std::str::from_utf8(&rest[..space]).ok()?.parse().ok()?;
        if len <= space || len > rest.len() {
            return path;
        }
        let record = &rest[space + 1..len];
        let record = record.strip_suffix(b"\n").unwrap_or(record);
        if let Some(value) = record.strip_prefix(b"path=") {
            path = Some(String::from_utf8_lossy(value).into_owned());
        }
        rest = &rest[len..];
    }
    path
}

/// The regular files of an archive, by normalized path; an error naming
/// what is malformed.
pub(crate) fn files(archive: &[u8]) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut files = BTreeMap::new();
    let mut at = 0;
    let mut long_name: Option<String> = None;
    while at + BLOCK <= archive.len() {
        let h = &archive[at..at + BLOCK];
        if h.iter().all(|&b| b == 0) {
            return Ok(files);
        }
        let size = number(&h[124..136])
            .ok_or_else(|| format!("the entry at byte {at} has an unreadable size"))?;
        let size =
            usize::try_from(size).map_err(|_| format!("the entry at byte {at} is too large"))?;
        let start = at + BLOCK;
        let end = start
            .checked_add(size)
            .filter(|&e| e <= archive.len())
            .ok_or_else(|| format!("the entry at byte {at} runs past the end of the archive"))?;
        let data = &archive[start..end];
        let kind = h[156];
        match kind {
            b'L' => long_name = Some(text(data)),
            b'x' => long_name = pax_path(data).or(long_name),
            b'g' => {}
            b'0' | 0 | b'7' => {
                let name = match long_name.take() {
                    Some(n) => n,
                    None => {
                        let prefix = text(&h[345..500]);
                        let name = text(&h[..100]);
                        if &h[257..262] == b"ustar" && !prefix.is_empty() {
                            format!("{prefix}/{name}")
                        } else {
                            name
                        }
                    }
                };
                files.insert(normalize(&name), data.to_vec());
            }
            _ => long_name = None,
        }
        at = start + size.next_multiple_of(BLOCK);
    }
    // GNU tar and busybox end with zero blocks; an archive cut short at a
    // block boundary still lists what it holds.
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_archive_reads_back() {
        let data: Vec<u8> = (0..2000u32).map(|i| (i % 251) as u8).collect();
        let a = archive(
            &["d"],
            &[("d/data.bin", &data), ("d/hello.txt", b"hello\n")],
        );
        assert_eq!(a.len() % RECORD, 0);
        let files = files(&a).expect("it parses");
        assert_eq!(files.len(), 2);
        assert_eq!(files["d/data.bin"], data);
        assert_eq!(files["d/hello.txt"], b"hello\n");
    }

    #[test]
    fn long_names_prefixes_and_dots_are_read() {
        let mut a = Vec::new();
        let long = format!("./{}/f", "x".repeat(120));
        let mut h = header("././@LongLink", long.len() as u64 + 1, b'L', 0o644);
        a.extend_from_slice(&h);
        let mut name = long.clone().into_bytes();
        name.push(0);
        name.resize(BLOCK, 0);
        a.extend_from_slice(&name);
        a.extend_from_slice(&header("truncated", 2, b'0', 0o644));
        let mut body = b"ok".to_vec();
        body.resize(BLOCK, 0);
        a.extend_from_slice(&body);
        h = header("pax", 0, b'0', 0o644);
        a.extend_from_slice(&h);
        a.resize(a.len() + 2 * BLOCK, 0);
        let files = files(&a).expect("it parses");
        assert_eq!(files[&long[2..]], b"ok");
        assert_eq!(files["pax"], b"");
        assert_eq!(
            pax_path(b"20 path=a/very/long\n"),
            Some("a/very/long".into())
        );
    }

    #[test]
    fn a_truncated_archive_is_an_error() {
        let a = archive(&[], &[("f", &[1u8; 1000])]);
        assert!(files(&a[..BLOCK + 100]).is_err());
    }
}
