//! Who the adapter is and what it says it can do: `info`, `capabilities`,
//! `health-check`.

use super::cases::{CAPABILITIES, HEALTH, INFO};
use super::fixture::{Check, Fixture, ensure, fail, failed, skip, unmeasured_note};
use pando_host::CallError;
use pando_host::types::Error as AdapterError;

pub(crate) async fn run(fx: &mut Fixture<'_>) {
    fx.case(&INFO, async |fx, _| info(fx)).await;

    // Read even when C-INFO-02 is not selected: other cases are chosen by
    // them.
    let first = fx.adapter.capabilities(&fx.ctx()).await;
    fx.set_capabilities(first.as_ref().map(|c| *c).map_err(|e| e.to_string()));
    fx.case(&CAPABILITIES, async |fx, notes| {
        let first = first.map_err(|e| failed("capabilities", &e))?;
        let again = fx
            .adapter
            .capabilities(&fx.ctx())
            .await
            .map_err(|e| failed("capabilities, asked again", &e))?;
        ensure!(
            first == again,
            "capabilities changed between two calls: {first:?}, then {again:?}"
        );
        ensure!(
            !first.write_observation || first.trial,
            "write observation is declared without trial, the only call that reports writes"
        );
        notes.push(format!("declared: {first:?}"));
        Ok(())
    })
    .await;

    // Health is a verdict on the cluster as much as on the adapter, and the
    // suite cannot tell a truthful `unavailable` from a broken check. So it
    // is a skip only where the runner declared beforehand that this runtime
    // cannot be found healthy (`Environment::health_unknowable`: a simulated
    // cluster without a pod network); anywhere else it fails, as any other
    // error does.
    let unknowable = fx
        .options
        .environment
        .as_ref()
        .and_then(|env| env.health_unknowable());
    fx.case(&HEALTH, async |fx, notes| {
        let (verdict, sent) = fx.measured(fx.adapter.health_check(&fx.ctx())).await;
        match verdict {
            Ok(()) => {
                // A healthy verdict that asked the runtime nothing says
                // nothing of it (an `Ok(())` that was never a check).
                match sent {
                    Some(sent) => {
                        ensure!(
                            sent.total() > 0,
                            "health-check answered healthy without a single request to the \
                             runtime: a verdict on the runtime must look at it"
                        );
                        notes.push(format!("the health check sent: {sent}"));
                    }
                    None => notes.push(unmeasured_note()),
                }
                // What a pass shows, and what it cannot: the suite cannot
                // break the runtime to see the check fail.
                notes.push(
                    "only a healthy verdict was seen: whether the check fails, and says why, \
                     on a runtime that cannot be used shows only on a broken one, which the \
                     suite does not make",
                );
                Ok(())
            }
            Err(CallError::Adapter(AdapterError::Unavailable(why))) => match unknowable {
                Some(declared) => Err(skip(format!(
                    "the runner says this runtime cannot be found healthy ({declared}), and \
                     the adapter agrees: {why}"
                ))),
                None => Err(fail(format!(
                    "health-check says the runtime cannot be used: {why}"
                ))),
            },
            Err(e) => Err(failed("health-check", &e)),
        }
    })
    .await;
}

fn info(fx: &Fixture<'_>) -> Check {
    let info = fx.adapter.kind_info();
    ensure!(
        !info.kind.is_empty() && !info.kind.contains(char::is_whitespace),
        "the kind `{}` is not one word",
        info.kind
    );
    ensure!(
        !info.description.trim().is_empty(),
        "the description is empty"
    );
    let schema: serde_json::Value = serde_json::from_str(&info.config_schema)
        .map_err(|e| fail(format!("the configuration schema is not JSON: {e}")))?;
    ensure!(
        schema.is_object(),
        "the configuration schema is not a JSON Schema object: {schema}"
    );
    ensure!(
        pando_host::served_version(&fx.adapter.shape().version).is_some(),
        "the contract version {} is not one this host serves",
        fx.adapter.shape().version
    );
    Ok(())
}
