//! `/metrics`: the snapshot's cached per-asset body (of one shard with `?shard=I`), then the
//! exporter's own families encoded live, in the negotiated format, gzip-compressed when the
//! client allows it.

use axum::body::Body;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use super::Shared;
use super::body::Chunks;
use crate::exposition::piece::Piece;
use crate::exposition::{Format, gzip};
use crate::snapshot::{Snapshot, live};

/// The format an `Accept` header prefers, and whether `Accept-Encoding` allows gzip.
fn negotiate(headers: &HeaderMap) -> (Format, bool) {
    let value = |name| {
        headers
            .get(name)
            .and_then(|v: &header::HeaderValue| v.to_str().ok())
    };
    (
        Format::negotiate(value(header::ACCEPT)),
        gzip::accepted(value(header::ACCEPT_ENCODING)),
    )
}

/// The query of `/metrics`.
#[derive(Debug, serde::Deserialize)]
pub(super) struct ShardQuery {
    shard: Option<String>,
}

/// The shard `shard` asks for among the snapshot's: `None` without the parameter; the 400
/// answer for anything but a number below `metrics.shards`.
fn requested_shard(
    shard: Option<&str>,
    snapshot: &Snapshot,
) -> Result<Option<usize>, Box<Response>> {
    let Some(text) = shard else {
        return Ok(None);
    };
    let shards = snapshot.shards();
    match text.parse::<usize>() {
        Ok(shard) if shard < shards => Ok(Some(shard)),
        _ => {
            let shown: String = text.chars().take(32).collect();
            Err(Box::new(bad_request(format!(
                "`?shard={shown}` names no shard of this exporter: give a number from 0 to {} \
                 (metrics.shards = {shards}), or no shard for every series",
                shards - 1
            ))))
        }
    }
}

/// `/metrics`: with one account, its metrics and the process metrics (the per-asset series
/// of one shard with `?shard=I`); with several, the process metrics only (each account is on
/// `/probe?target=NAME`).
pub(super) async fn metrics(
    State(state): State<Shared>,
    Query(query): Query<ShardQuery>,
    headers: HeaderMap,
) -> Response {
    let (format, gzip) = negotiate(&headers);
    match state.accounts().single() {
        Some(one) => {
            let snapshot = one.latest.current();
            let shard = match requested_shard(query.shard.as_deref(), &snapshot) {
                Ok(shard) => shard,
                Err(answer) => return *answer,
            };
            let live = live(
                Some(one.served(&snapshot, shard)),
                Some(&state.process),
                format,
            );
            respond(Some(snapshot), shard, live, format, gzip).await
        }
        None => {
            let live = live(None, Some(&state.process), format);
            respond(None, None, live, format, gzip).await
        }
    }
}

/// The query of `/probe`.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Probe {
    target: Option<String>,
    shard: Option<String>,
}

/// `/probe?target=NAME`: one account's per-asset and API metrics, named and labelled exactly
/// as the single-account `/metrics`; 400 with a reason for a missing or unknown target.
pub(super) async fn probe(
    State(state): State<Shared>,
    Query(probe): Query<Probe>,
    headers: HeaderMap,
) -> Response {
    let accounts = state.accounts();
    if accounts.single().is_some() {
        return bad_request(
            "this exporter has one account, served on /metrics; /probe?target=NAME serves the \
             accounts of [accounts.NAME]"
                .into(),
        );
    }
    let Some(target) = probe.target.filter(|t| !t.is_empty()) else {
        return bad_request(format!(
            "missing target: /probe?target=NAME, NAME one of {}",
            accounts.names()
        ));
    };
    let account = match super::account_named(&accounts, &target) {
        Ok(account) => account,
        Err(answer) => return answer.into_response(),
    };
    let (format, gzip) = negotiate(&headers);
    let snapshot = account.latest.current();
    let shard = match requested_shard(probe.shard.as_deref(), &snapshot) {
        Ok(shard) => shard,
        Err(answer) => return *answer,
    };
    let live = live(Some(account.served(&snapshot, shard)), None, format);
    respond(Some(snapshot), shard, live, format, gzip).await
}

fn bad_request(reason: String) -> Response {
    (StatusCode::BAD_REQUEST, format!("{reason}\n")).into_response()
}

/// The snapshot's cached body (of shard `shard`, or whole) when there is one, followed by
/// `live`, in `format`, gzipped when `gzip`.
async fn respond(
    snapshot: Option<Arc<Snapshot>>,
    shard: Option<usize>,
    live: Vec<u8>,
    format: Format,
    gzip: bool,
) -> Response {
    let content_type = (header::CONTENT_TYPE, format.content_type());
    // The body depends on both headers: a cache must key on both.
    let vary = (header::VARY, "Accept, Accept-Encoding");
    let snapshot = snapshot.unwrap_or_default();
    if !gzip {
        let mut chunks = snapshot.rendered(shard).chunks(format).to_vec();
        chunks.push(Piece::Plain(Bytes::from(live)));
        return ([content_type, vary], Body::new(Chunks::new(chunks))).into_response();
    }
    // Compressing a large head takes a while the first time: off the async threads.
    let prefix = if snapshot.has_gzip_of(shard, format) {
        snapshot.gzip_of(shard, format).clone()
    } else {
        let snapshot = snapshot.clone();
        match exporter_web::task::spawn_blocking(move || snapshot.gzip_of(shard, format).clone())
            .await
        {
            Ok(prefix) => prefix,
            Err(_) => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        }
    };
    let chunks = prefix.finish(&live).into_iter().map(Piece::Plain).collect();
    (
        [content_type, vary, (header::CONTENT_ENCODING, "gzip")],
        Body::new(Chunks::new(chunks)),
    )
        .into_response()
}
