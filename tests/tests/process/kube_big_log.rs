//! A 64 MiB log streamed through the host with memory bounded. In the
//! process-owning binary, holding `memory::MEASURING`, so the resident-memory
//! reading is this test's own.

use pando_host::types::LogOptions;
use pando_tests::plans::wref;
use pando_tests::probe::{self, GRANTS};

/// The container KWOK serves the 64 MiB log for (`scripts/cluster`):
/// 65536 lines of 1024 bytes, line N starting `line NNNNNN `.
const BIG_LOG_CONTAINER: &str = "big-log";
const LINES: usize = 65536;
const LINE: usize = 1024;

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("resident pages");
    pages * 4096
}

#[tokio::test]
async fn a_64_mib_log_streams_with_bounded_memory() {
    let _measuring = pando_tests::memory::MEASURING.lock().await;
    let (a, _c) = probe::load(GRANTS).await;
    let ns = probe::app_namespace("biglog").await;
    probe::running_pod(&ns.name, "chatty", BIG_LOG_CONTAINER).await;
    let options = LogOptions::default();
    let mut log = a
        .logs(&probe::ctx(), &wref(&ns.name, "chatty"), &options)
        .await
        .expect("logs");

    let before = resident_bytes();
    let mut peak = before;
    let mut total = 0usize;
    let mut pending = Vec::new();
    let mut line_no = 0usize;
    while let Some(chunk) = log.next_chunk().await {
        let chunk = chunk.expect("the stream does not break");
        total += chunk.len();
        pending.extend_from_slice(&chunk);
        // Check every complete line as it passes, keeping nothing.
        while pending.len() >= LINE {
            let expected = format!("line {line_no:06} ");
            assert!(
                pending.starts_with(expected.as_bytes()),
                "line {line_no} is out of place"
            );
            assert_eq!(pending[LINE - 1], b'\n', "line {line_no} is {LINE} bytes");
            pending.drain(..LINE);
            line_no += 1;
        }
        peak = peak.max(resident_bytes());
    }
    assert_eq!(total, LINES * LINE, "every byte of the log arrived");
    assert_eq!(line_no, LINES);
    let growth = peak.saturating_sub(before);
    assert!(
        growth < 32 << 20,
        "streaming 64 MiB grew resident memory by {} MiB",
        growth >> 20
    );
    ns.delete().await.expect("cleanup");
}
