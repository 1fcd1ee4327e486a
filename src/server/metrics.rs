//! `/metrics`: the snapshot's cached per-asset body, then the exporter's own families encoded
//! live, in the negotiated format, gzip-compressed when the client allows it.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use super::AppState;
use super::body::Chunks;
use crate::exposition::{Format, text};
use crate::snapshot::Snapshot;
use crate::telemetry::Telemetry;

/// The live part of a scrape: the exporter's own metrics (and `# EOF` for OpenMetrics), which
/// follows the snapshot's cached per-asset body.
pub fn live(telemetry: &Telemetry, format: Format) -> Vec<u8> {
    let mut openmetrics = String::with_capacity(8 * 1024);
    telemetry.encode(&mut openmetrics);
    match format {
        Format::OpenMetrics => {
            let mut live = openmetrics.into_bytes();
            live.extend_from_slice(b"# EOF\n");
            live
        }
        Format::Text => {
            let mut live = Vec::with_capacity(openmetrics.len() + 1024);
            text::from_openmetrics(&openmetrics, &mut live);
            live
        }
    }
}

/// The whole exposition in one format, as one buffer.
pub fn render(snapshot: &Snapshot, telemetry: &Telemetry, format: Format) -> Vec<u8> {
    let mut body = snapshot.rendered.to_vec(format);
    body.extend_from_slice(&live(telemetry, format));
    body
}

/// Whether an `Accept-Encoding` header allows gzip (`gzip`, `x-gzip` or `*` with q > 0).
fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    accept_encoding.is_some_and(|value| {
        value.split(',').any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let refused = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .any(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0));
            matches!(name.as_str(), "gzip" | "x-gzip" | "*") && !refused
        })
    })
}

pub(super) async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = Format::negotiate(accept);
    let gzip = accepts_gzip(
        headers
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok()),
    );
    let snapshot = state.snapshots.borrow().clone();
    let live = live(&state.telemetry, format);
    let content_type = (header::CONTENT_TYPE, format.content_type());
    // The body depends on both headers: a cache must key on both.
    let vary = (header::VARY, "Accept, Accept-Encoding");
    if !gzip {
        let mut chunks = snapshot.body(format).to_vec();
        chunks.push(Bytes::from(live));
        return ([content_type, vary], Body::new(Chunks::new(chunks))).into_response();
    }
    // Compressing a large head takes a while the first time: off the async threads.
    let prefix = if snapshot.has_gzip(format) {
        snapshot.gzip(format).clone()
    } else {
        let snapshot = snapshot.clone();
        match crate::task::spawn_blocking(move || snapshot.gzip(format).clone()).await {
            Ok(prefix) => prefix,
            Err(_) => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        }
    };
    let chunks = prefix.finish(&live).to_vec();
    (
        [content_type, vary, (header::CONTENT_ENCODING, "gzip")],
        Body::new(Chunks::new(chunks)),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_chosen_only_when_the_client_allows_it() {
        assert!(accepts_gzip(Some("gzip")));
        assert!(accepts_gzip(Some("deflate, gzip;q=0.5")));
        assert!(accepts_gzip(Some("*")));
        assert!(!accepts_gzip(Some("gzip;q=0")));
        assert!(!accepts_gzip(Some("identity")));
        assert!(!accepts_gzip(None));
    }
}
