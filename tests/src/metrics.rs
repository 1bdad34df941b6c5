//! An adapter's metrics, as a test reads them.

use pando_host::Adapter;

/// The adapter's value of the metric `name` (its series labelled with the
/// adapter's name), from the OpenMetrics text its host writes. Panics
/// naming the metric and showing the text when there is none.
pub fn metric(a: &Adapter, name: &str) -> f64 {
    let metric = format!("{name}{{");
    let who = format!("adapter=\"{}\"", a.name());
    let text = a.metrics();
    text.lines()
        .filter(|l| l.starts_with(&metric) && l.contains(&who))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {metric} for {who} in:\n{text}"))
}
