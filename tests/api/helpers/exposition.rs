//! Reading an exposition: one sample's value, whether the lists are up, and Python's reference
//! parsers (from the test kit).

/// Parses `body` with Python's reference parser for `format` (`openmetrics` or `text`).
pub fn reference_parse(body: &str, format: &str) -> serde_json::Value {
    reputation_testkit::reference_parse(body, format, env!("CARGO_TARGET_TMPDIR").as_ref())
}

/// The value of the one sample line that starts with `series` (name and labels), if any.
pub fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|line| {
        let value = line.strip_prefix(series)?.strip_prefix(' ')?;
        value.parse().ok()
    })
}

/// The value of the one sample line that starts with `series`; panics naming the series and
/// the body when there is none.
pub fn value(body: &str, series: &str) -> f64 {
    sample(body, series).unwrap_or_else(|| panic!("no sample {series} in\n{body}"))
}

/// Whether the body says that the last poll of both lists succeeded.
pub fn up(body: &str) -> bool {
    sample(body, "reputation_up") == Some(1.0)
}
