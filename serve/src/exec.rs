//! An exec session over one bidirectional stream: the client's first
//! message opens it, then stdin flows in; stdout and stderr flow out as
//! they come, and the exit code is the last message.

use bytes::Bytes;
use pando_host::streams::{ByteSink, ByteStream};
use pando_host::types as h;
use pando_host::{Adapter, CallContext};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, Streaming};

use crate::convert::Invalid;
use crate::pb;
use crate::pb::exec_client_message::Part as In;
use crate::pb::exec_server_message::Part as OutPart;
use crate::service::Out;
use crate::status;
use crate::streams::send_pieces;

/// Opens the session the first message asks for and streams it.
pub async fn session(
    adapter: Adapter,
    ctx: CallContext,
    mut incoming: Streaming<pb::ExecClientMessage>,
) -> Result<Out<pb::ExecServerMessage>, Status> {
    let start = match incoming.message().await?.and_then(|m| m.part) {
        Some(In::Start(s)) => s,
        _ => {
            return Err(status::invalid(Invalid(
                "Exec's first message must be `start`, naming the workload and the request".into(),
            )));
        }
    };
    let workload: h::WorkloadRef = h::WorkloadRef::try_from(
        start
            .workload
            .ok_or_else(|| status::invalid(Invalid::missing("ExecStart.workload")))?,
    )
    .map_err(status::invalid)?;
    let request: h::ExecRequest = h::ExecRequest::try_from(
        start
            .request
            .ok_or_else(|| status::invalid(Invalid::missing("ExecStart.request")))?,
    )
    .map_err(status::invalid)?;

    let mut session = adapter
        .exec(&ctx, &workload, &request)
        .await
        .map_err(status::from_call)?;
    let stdin = if request.stdin {
        session.stdin().await.map_err(status::from_call)?
    } else {
        None
    };
    let stdout = session.stdout().await.map_err(status::from_call)?;
    let stderr = session.stderr().await.map_err(status::from_call)?;

    let (tx, rx) = mpsc::channel(8);
    let token = ctx.cancel_token().clone();
    let outs: Vec<_> = [
        stdout.map(|s| tokio::spawn(pump(s, tx.clone(), OutPart::Stdout))),
        stderr.map(|s| tokio::spawn(pump(s, tx.clone(), OutPart::Stderr))),
    ]
    .into_iter()
    .flatten()
    .collect();
    let stdin_task = tokio::spawn(feed(incoming, stdin));
    tokio::spawn(async move {
        let wait = session.wait(&ctx);
        tokio::pin!(wait);
        // A client gone cancels the session; the adapter still ends it.
        let waited = tokio::select! {
            w = &mut wait => w,
            _ = tx.closed() => {
                token.cancel();
                wait.await
            }
        };
        // The process is gone: stdin not yet sent goes nowhere.
        stdin_task.abort();
        for out in outs {
            let _ = out.await;
        }
        let last = match waited {
            Ok(code) => Ok(pb::ExecServerMessage {
                part: Some(OutPart::ExitCode(code)),
            }),
            Err(e) => Err(status::from_call(e)),
        };
        let _ = tx.send(last).await;
    });
    Ok(Box::pin(ReceiverStream::new(rx)))
}

async fn pump(
    mut stream: ByteStream,
    tx: mpsc::Sender<Result<pb::ExecServerMessage, Status>>,
    part: fn(Vec<u8>) -> OutPart,
) {
    while let Some(next) = stream.next_chunk().await {
        let bytes = match next {
            Ok(bytes) => bytes,
            // As a log stream's failure is: the client learns the output
            // broke rather than seeing it end early with an exit code.
            Err(e) => {
                let failed = Status::unavailable(format!("the session's output failed: {e}"));
                let _ = tx.send(Err(failed)).await;
                return;
            }
        };
        let wrap = |data: Bytes| pb::ExecServerMessage {
            part: Some(part(data.to_vec())),
        };
        if !send_pieces(&tx, &bytes, wrap).await {
            return;
        }
    }
}

async fn feed(mut incoming: Streaming<pb::ExecClientMessage>, mut sink: Option<ByteSink>) {
    loop {
        let part = match incoming.message().await {
            Ok(Some(m)) => m.part,
            // The client closed its side (or went away): stdin ends.
            Ok(None) | Err(_) => break,
        };
        match part {
            Some(In::Stdin(bytes)) => {
                let Some(s) = sink.as_mut() else {
                    tracing::warn!("stdin sent to an exec session opened without it; dropped");
                    continue;
                };
                if let Err(e) = s.write_all(&bytes).await {
                    tracing::debug!(error = %e, "the session's stdin is closed");
                    sink = None;
                }
            }
            Some(In::CloseStdin(_)) => break,
            Some(In::Start(_)) | None => {
                tracing::warn!("an exec message after the first that is not stdin; ignored");
            }
        }
    }
    if let Some(s) = sink
        && let Err(e) = s.close().await
    {
        tracing::debug!(error = %e, "closing the session's stdin");
    }
}
