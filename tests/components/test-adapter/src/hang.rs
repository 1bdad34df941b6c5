//! Calls that never end and streams that never yield.

use std::time::Duration;

use pando_adapter_sdk::io;
use pando_adapter_sdk::time;
use pando_adapter_sdk::types::InputStream;

/// Never return, ignoring cancellation and the deadline: sleep and sleep
/// again, whatever the sleep says. Only the host ends it.
pub fn forever() -> ! {
    loop {
        let _ = time::sleep(Duration::from_millis(50));
    }
}

/// A stream that never yields a byte and never ends while the instance
/// lives: the reading end of a pipe whose writing end is kept (leaked into
/// the instance's resource table) and never written.
pub fn open_stream() -> InputStream {
    let (writer, reader) = io::pipe(1024);
    std::mem::forget(writer);
    reader
}
