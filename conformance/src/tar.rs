//! The snapshot case's tar streams, on the `tar` crate: an archive of a few
//! files to restore, and the regular files read out of what an adapter's
//! snapshot wrote (ustar, GNU long names and pax headers, as GNU and
//! busybox tar write them).

use std::collections::BTreeMap;
use std::io::Read;

const BLOCK: usize = 512;
/// tar's default record: 20 blocks.
const RECORD: usize = 20 * BLOCK;
/// A fixed time, 2024-01-01, so an archive is the same bytes every run.
const MTIME: u64 = 1_704_067_200;

/// An archive of `dirs` (created first) and `files`, each path relative
/// (`conformance/data.bin`).
pub(crate) fn archive(dirs: &[&str], files: &[(&str, &[u8])]) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    let header = |kind: tar::EntryType, size: usize, mode: u32| {
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(kind);
        h.set_size(size as u64);
        h.set_mode(mode);
        h.set_mtime(MTIME);
        h
    };
    for dir in dirs {
        let mut h = header(tar::EntryType::Directory, 0, 0o755);
        builder.append_data(&mut h, format!("{dir}/"), std::io::empty())?;
    }
    for (name, data) in files {
        let mut h = header(tar::EntryType::Regular, data.len(), 0o644);
        builder.append_data(&mut h, name, *data)?;
    }
    let mut out = builder.into_inner()?;
    // Padded to whole records, as `tar -c` writes them: a tar reading
    // from a stream whose end it is never told (an exec's stdin often is
    // not closed) reads a record at a time and would wait for the rest.
    out.resize(out.len().next_multiple_of(RECORD), 0);
    Ok(out)
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

/// The regular files of an archive, by normalized path; an error naming
/// what is malformed, or an entry cut short.
pub(crate) fn files(archive: &[u8]) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut files = BTreeMap::new();
    let mut reader = tar::Archive::new(archive);
    let entries = reader.entries().map_err(|e| e.to_string())?;
    for (i, entry) in entries.enumerate() {
        let mut entry = entry.map_err(|e| format!("entry {i}: {e}"))?;
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_contiguous()) {
            continue;
        }
        let path = normalize(&String::from_utf8_lossy(&entry.path_bytes()));
        let size = entry.size();
        let mut data = Vec::new();
        entry
            .read_to_end(&mut data)
            .map_err(|e| format!("`{path}`: {e}"))?;
        if data.len() as u64 != size {
            return Err(format!(
                "`{path}` runs past the end of the archive: {} of its {size} bytes are there",
                data.len()
            ));
        }
        files.insert(path, data);
    }
    // GNU tar and busybox end with zero blocks; an archive cut short at an
    // entry's boundary still lists what it holds.
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
        )
        .expect("an archive");
        assert_eq!(a.len() % RECORD, 0);
        let files = files(&a).expect("it parses");
        assert_eq!(files.len(), 2);
        assert_eq!(files["d/data.bin"], data);
        assert_eq!(files["d/hello.txt"], b"hello\n");
    }

    #[test]
    fn long_names_pax_paths_and_dots_are_read() {
        // A GNU long name (the builder writes one past 100 bytes).
        let long = format!("./{}/f", "x".repeat(120));
        let mut a = archive(&[], &[(&long, b"ok")]).expect("an archive");
        let files_of_long = files(&a).expect("it parses");
        assert_eq!(files_of_long[&long[2..]], b"ok");

        // A pax header naming the next entry's path.
        let record = "20 path=a/very/long\n";
        let mut pax = tar::Header::new_ustar();
        pax.set_entry_type(tar::EntryType::XHeader);
        pax.set_size(record.len() as u64);
        let mut b = tar::Builder::new(Vec::new());
        b.append_data(&mut pax, "pax", record.as_bytes())
            .expect("pax header");
        let mut file = tar::Header::new_ustar();
        file.set_size(3);
        b.append_data(&mut file, "short", &b"yes"[..])
            .expect("file");
        a = b.into_inner().expect("an archive");
        let files = files(&a).expect("it parses");
        assert_eq!(files["a/very/long"], b"yes", "{:?}", files.keys());
    }

    #[test]
    fn a_truncated_archive_is_an_error() {
        let a = archive(&[], &[("f", &[1u8; 1000])]).expect("an archive");
        let err = files(&a[..BLOCK + 100]).expect_err("cut short");
        assert!(err.contains('f'), "{err}");
    }
}
