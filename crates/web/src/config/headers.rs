//! The response headers the file may add (`http_server_config.headers`): exporter-toolkit's
//! allow-list, kept the same so one file serves every exporter.

use std::collections::BTreeMap;

use axum::http::{HeaderName, HeaderValue};

use super::WebConfigError;

/// Headers the file may add, with the values allowed when only some are (exporter-toolkit's
/// list, kept the same so one file serves every exporter).
const EXTRA_HEADERS: [(&str, &[&str]); 5] = [
    ("Strict-Transport-Security", &[]),
    ("X-Content-Type-Options", &["nosniff"]),
    ("X-Frame-Options", &["deny", "sameorigin"]),
    ("X-XSS-Protection", &[]),
    ("Content-Security-Policy", &[]),
];

pub(super) fn headers(
    configured: BTreeMap<String, String>,
) -> Result<Vec<(HeaderName, HeaderValue)>, WebConfigError> {
    let mut headers = Vec::with_capacity(configured.len());
    for (name, value) in configured {
        let key = format!("http_server_config.headers.{name}");
        let Some((_, allowed)) = EXTRA_HEADERS
            .iter()
            .find(|(known, _)| known.eq_ignore_ascii_case(&name))
        else {
            let names: Vec<_> = EXTRA_HEADERS.iter().map(|(n, _)| *n).collect();
            return Err(WebConfigError::invalid(
                key,
                format!(
                    "this header cannot be configured; one of {}",
                    names.join(", ")
                ),
            ));
        };
        if !allowed.is_empty() && !allowed.contains(&value.as_str()) {
            return Err(WebConfigError::invalid(
                key,
                format!("`{value}` is not allowed; one of {}", allowed.join(", ")),
            ));
        }
        let header_name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| WebConfigError::invalid(&key, "not a valid header name"))?;
        let header_value = HeaderValue::from_str(&value).map_err(|_| {
            WebConfigError::invalid(&key, format!("`{value}` cannot be sent in a header"))
        })?;
        headers.push((header_name, header_value));
    }
    Ok(headers)
}
