//! Byte channels: a bulk stream's bytes on a unix socket of their own, beside
//! the gRPC call that asked for it, as go-plugin's broker gives a plugin
//! extra connections. gRPC carries the call and its status; the bytes skip
//! HTTP/2's 16 KiB frames (grpc-go's fixed reading size) and protobuf, which
//! cost a volume snapshot a fifth more CPU per MiB on both sides of the hop.
//!
//! The client makes the socket: it listens at `NAME.sock` in this server's
//! own socket directory and names it in the `pando-channel` request header;
//! the server connects. Only a process of this server's user can make a
//! socket there (the directory is 0700, or 0750 for a group that may use
//! the gRPC socket but not add to it), so a request cannot send the server
//! to any other socket on the machine. A client that cannot listen there
//! leaves the header out and gets `Chunk`s as before.
//!
//! Order on the socket, which the client relies on: the server writes the
//! stream's bytes, shuts its side, and only then ends the gRPC call with its
//! status — so a call that ended well has every byte in the socket already,
//! and end-of-file on the socket is never taken for success without that
//! status. The other way (a restore, an image), the client's end of the
//! socket counts only after it says on the gRPC stream that the bytes are
//! whole (`streams::reader`).

use std::path::PathBuf;

use tokio::net::UnixStream;
use tonic::metadata::MetadataMap;
use tonic::{Code, Status};

use crate::status;

/// The request header naming the client's socket for this call's bytes.
pub const CHANNEL_HEADER: &str = "pando-channel";

/// The longest socket name taken: a unix socket's path is at most 107 bytes
/// and the directory takes some of it.
const MAX_NAME: usize = 32;

/// Where clients make byte channels: this server's socket directory, or
/// none (a server that takes only `Chunk`s).
#[derive(Debug, Clone, Default)]
pub struct Channels {
    dir: Option<PathBuf>,
}

impl Channels {
    /// Channels made in `dir`, the private directory of the gRPC socket.
    pub fn in_dir(dir: PathBuf) -> Self {
        Channels { dir: Some(dir) }
    }

    /// The channel a request asks for, connected; `None` when it asks for
    /// none (its bytes go as `Chunk`s).
    pub async fn open(&self, meta: &MetadataMap) -> Result<Option<UnixStream>, Status> {
        let Some(value) = meta.get(CHANNEL_HEADER) else {
            return Ok(None);
        };
        let name = value
            .to_str()
            .ok()
            .filter(|n| valid_name(n))
            .ok_or_else(|| {
                status::host(
                    Code::InvalidArgument,
                    "bad-channel",
                    format!(
                        "the `{CHANNEL_HEADER}` header must be a socket's name of 1 to {MAX_NAME} \
                         letters, digits, `-` or `_` (the client listens at NAME.sock in the \
                         server's socket directory)"
                    ),
                )
            })?;
        let Some(dir) = &self.dir else {
            return Err(status::host(
                Code::FailedPrecondition,
                "bad-channel",
                format!(
                    "this server takes no byte channels: leave the `{CHANNEL_HEADER}` header out \
                     and read the bytes as Chunk messages"
                ),
            ));
        };
        let path = dir.join(format!("{name}.sock"));
        UnixStream::connect(&path).await.map(Some).map_err(|e| {
            status::host(
                Code::FailedPrecondition,
                "bad-channel",
                format!(
                    "connecting to the byte channel {}: {e}; the client listens there before it \
                     calls",
                    path.display()
                ),
            )
        })
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(v: &str) -> MetadataMap {
        let mut m = MetadataMap::new();
        m.insert(CHANNEL_HEADER, v.parse().expect("ascii"));
        m
    }

    #[tokio::test]
    async fn a_request_without_the_header_asks_for_no_channel() {
        let opened = Channels::default().open(&MetadataMap::new()).await;
        assert!(matches!(opened, Ok(None)));
    }

    #[tokio::test]
    async fn a_name_that_could_leave_the_directory_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let channels = Channels::in_dir(dir.path().to_path_buf());
        for bad in ["../x", "a/b", "", ".", &"a".repeat(MAX_NAME + 1)] {
            let e = channels.open(&header(bad)).await.expect_err(bad);
            assert_eq!(e.code(), Code::InvalidArgument, "{bad}");
            assert!(e.message().contains(CHANNEL_HEADER), "{}", e.message());
        }
    }

    #[tokio::test]
    async fn a_server_without_a_directory_says_to_read_chunks() {
        let e = Channels::default()
            .open(&header("abc"))
            .await
            .expect_err("no dir");
        assert_eq!(e.code(), Code::FailedPrecondition);
        assert!(e.message().contains("Chunk"), "{}", e.message());
    }

    #[tokio::test]
    async fn the_server_connects_to_the_socket_the_client_named() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let dir = tempfile::tempdir().expect("tempdir");
        let listener =
            tokio::net::UnixListener::bind(dir.path().join("c0ffee.sock")).expect("bind");
        let channels = Channels::in_dir(dir.path().to_path_buf());
        let mut server_side = channels
            .open(&header("c0ffee"))
            .await
            .expect("connects")
            .expect("a channel");
        let (mut client_side, _) = listener.accept().await.expect("accept");
        server_side.write_all(b"bytes").await.expect("write");
        server_side.shutdown().await.expect("shutdown");
        let mut got = Vec::new();
        client_side.read_to_end(&mut got).await.expect("read");
        assert_eq!(got, b"bytes");

        let missing = channels.open(&header("nobody")).await.expect_err("none");
        assert_eq!(missing.code(), Code::FailedPrecondition);
        assert!(
            missing.message().contains("nobody.sock"),
            "{}",
            missing.message()
        );
    }
}
