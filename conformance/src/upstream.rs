//! `upstream`: computed, never looked up.

use super::cases::UPSTREAM;
use super::fixture::{Fixture, ensure, failed, unmeasured_note};
use super::plans::{PORT, SERVER, wref};

/// How many times it is asked: enough to see an answer that varies.
const ASKED: usize = 5;

pub(crate) async fn run(fx: &mut Fixture<'_>) {
    fx.case(&UPSTREAM, async |fx, notes| {
        // An app that was never applied: an upstream that needs nothing
        // from the runtime answers for it all the same.
        let workload = wref(&fx.bundle_id("up"), SERVER);
        let (answers, sent) = fx
            .measured(async {
                let mut answers = Vec::with_capacity(ASKED);
                for _ in 0..ASKED {
                    answers.push(fx.adapter.upstream(&fx.ctx(), &workload, PORT).await);
                }
                answers
            })
            .await;
        let mut seen = Vec::with_capacity(ASKED);
        for a in answers {
            seen.push(a.map_err(|e| failed("upstream", &e))?);
        }
        let first = &seen[0];
        ensure!(
            !first.host.is_empty() && first.port != 0,
            "upstream answered an address nothing can reach: `{}:{}`",
            first.host,
            first.port
        );
        ensure!(
            seen.iter().all(|a| a == first),
            "upstream answered differently for the same workload and port: {seen:?}"
        );
        match sent {
            Some(sent) => ensure!(
                sent.is_empty(),
                "upstream sent {} API request(s): {sent}",
                sent.total()
            ),
            None => notes.push(unmeasured_note()),
        }
        let other = fx
            .adapter
            .upstream(&fx.ctx(), &workload, PORT + 1)
            .await
            .map_err(|e| failed("upstream of another port", &e))?;
        ensure!(
            other != *first,
            "upstream answers `{}:{}` for two different ports",
            first.host,
            first.port
        );
        Ok(())
    })
    .await;
}
