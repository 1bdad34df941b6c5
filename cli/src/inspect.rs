//! `inspect`: check a component and show who it is.

use std::path::Path;

use pando_host::adapter::Inspection;
use pando_host::types::Category;
use pando_host::{CacheOutcome, World};
use serde::Serialize;

use super::args::Global;
use super::failure::Outcome;
use super::output::{self, Field};
use super::session;

/// What `inspect` prints: one flat object.
#[derive(Debug, Serialize)]
struct Report<'a> {
    kind: &'a str,
    category: Category,
    description: &'a str,
    world: World,
    version: &'a str,
    imports: &'a [String],
    exports: &'a [String],
    /// The schema parsed, so JSON and YAML output nest it; kept as a string
    /// if the adapter's schema is not JSON.
    config_schema: serde_json::Value,
    digest: &'a str,
    cache: CacheOutcome,
}

/// Loads, checks and describes `component` without configuring it.
pub async fn inspect(global: &Global, component: &Path) -> Outcome {
    let host = session::host(global)?;
    // With --grants, check the imports as a load would; without, describe.
    let grants = match &global.grants {
        Some(_) => Some(session::grants(global)?),
        None => None,
    };
    let inspection = host.inspect_file(component, grants.as_ref()).await?;
    let report = report(&inspection);
    output::print(global.output, &report, text)
}

fn report(i: &Inspection) -> Report<'_> {
    Report {
        kind: &i.info.kind,
        category: i.info.category,
        description: &i.info.description,
        world: i.shape.world,
        version: &i.shape.version,
        imports: &i.shape.imports,
        exports: &i.shape.exports,
        config_schema: serde_json::from_str(&i.info.config_schema)
            .unwrap_or_else(|_| serde_json::Value::String(i.info.config_schema.clone())),
        digest: &i.digest,
        cache: i.cache,
    }
}

fn category(c: Category) -> &'static str {
    match c {
        Category::SingleHost => "single-host",
        Category::Cluster => "cluster",
        Category::Platform => "platform",
    }
}

fn cache(c: CacheOutcome) -> &'static str {
    match c {
        CacheOutcome::Hit => "hit",
        CacheOutcome::Compiled => "compiled",
        CacheOutcome::Uncached => "uncached",
        CacheOutcome::Shared => "shared",
    }
}

fn text(r: &Report<'_>) -> String {
    let schema = serde_json::to_string_pretty(&r.config_schema)
        .unwrap_or_else(|_| r.config_schema.to_string());
    output::aligned(&[
        ("kind", Field::One(r.kind.into())),
        ("category", Field::One(category(r.category).into())),
        ("description", Field::One(r.description.into())),
        ("world", Field::One(r.world.name().into())),
        ("version", Field::One(r.version.into())),
        ("imports", Field::Many(r.imports.to_vec())),
        ("exports", Field::Many(r.exports.to_vec())),
        (
            "config_schema",
            Field::Many(schema.lines().map(str::to_string).collect()),
        ),
        ("digest", Field::One(r.digest.into())),
        ("cache", Field::One(cache(r.cache).into())),
    ])
}
