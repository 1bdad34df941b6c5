//! A directory's contents, to compare a volume with its snapshot byte for byte.

use std::collections::BTreeMap;
use std::path::Path;

/// Every file and directory under `root`, relative, with its bytes (none for a directory).
pub fn tree(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("reading a directory") {
            let path = entry.expect("an entry").path();
            let rel = path
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                out.insert(rel, None);
                stack.push(path);
            } else {
                out.insert(rel, Some(std::fs::read(&path).expect("reading a file")));
            }
        }
    }
    out
}

/// Unpacks the tar archive `bytes` into a new directory under `work`; that directory.
pub fn untar(bytes: &[u8], work: &Path) -> std::path::PathBuf {
    let archive = work.join("snapshot.tar");
    std::fs::write(&archive, bytes).expect("writing the archive");
    let unpacked = work.join("unpacked");
    std::fs::create_dir_all(&unpacked).expect("mkdir");
    let status = std::process::Command::new("tar")
        .arg("-xf")
        .arg(&archive)
        .arg("-C")
        .arg(&unpacked)
        .status()
        .expect("running tar");
    assert!(status.success(), "the snapshot is a tar archive");
    unpacked
}
