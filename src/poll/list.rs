//! Fetching one list: its body decoded as it arrives, each asset handed to a sink, with the
//! refusal rule at its end; its skipped items logged and counted.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::warn;

use crate::disk::{Disk, ListFile};
use crate::model::{AssetDecoder, AssetSink, DecodedAssets};
use crate::telemetry::Telemetry;
use crate::upstream::dto::{DecodeError, Rejected};
use crate::upstream::{BodyDecoder, Client, FetchError};
use crate::vocabulary::{Endpoint, Kind, Unrecognized};

/// One list, by [`Client::call_streaming`], each asset handed to a sink from `sink` (a new one
/// for each attempt) as soon as it is decoded, with the refusal rule: a list whose unusable
/// items outnumber its usable ones fails like a bad body (its rejected items counted in
/// `reputation_unrecognized_values_total`). The poller renders lists so, and keeps each body
/// on `disk` as it arrives (to commit once the list is taken); `backfill` keeps the assets.
pub async fn fetch_list<S: AssetSink>(
    client: &Client,
    telemetry: &Arc<Telemetry>,
    list: ListRead<'_>,
    sink: impl Fn() -> S,
    deadline: Instant,
    on_retry: impl FnMut(&FetchError, Duration),
) -> Result<(DecodedAssets<S>, Option<ListFile>), FetchError> {
    let ListRead {
        kind,
        max_labels,
        disk,
    } = list;
    let endpoint = Endpoint::list(kind);
    let decoder = || ListBody {
        assets: AssetDecoder::new(kind, max_labels, sink()),
        telemetry: telemetry.clone(),
        file: disk.and_then(|disk| disk.list_file(kind)),
    };
    client
        .call_streaming(endpoint, endpoint.path(), deadline, decoder, on_retry)
        .await
}

/// Which list [`fetch_list`] fetches, how its items are read, and where its body is kept.
#[derive(Debug, Clone, Copy)]
pub struct ListRead<'d> {
    /// Which list.
    pub kind: Kind,
    /// Host names (and tags) kept per asset.
    pub max_labels: usize,
    /// The state store its body is written to as it arrives, when there is one.
    pub disk: Option<&'d Arc<Disk>>,
}

/// A list's body decoded as it arrives, with the refusal rule at its end, and written to the
/// state store as it is.
struct ListBody<S> {
    assets: AssetDecoder<S>,
    telemetry: Arc<Telemetry>,
    file: Option<ListFile>,
}

impl<S: AssetSink> BodyDecoder for ListBody<S> {
    type Output = (DecodedAssets<S>, Option<ListFile>);
    const HEAVY: bool = AssetDecoder::<S>::HEAVY;

    fn feed(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        if let Some(file) = &mut self.file {
            file.write(chunk);
        }
        self.assets.feed(chunk)
    }

    fn finish(self) -> Result<Self::Output, DecodeError> {
        let decoded = self.assets.finish()?;
        match decoded.refusal() {
            None => Ok((decoded, self.file)),
            Some(refused) => {
                // Counted here: a refused list never reaches its caller.
                self.telemetry
                    .unrecognized(rejected_counts(&decoded.rejected));
                Err(refused)
            }
        }
    }
}

/// Logs the skipped items of a list (the first few one by one, then how many) and counts them
/// by field.
pub(super) fn log_rejected(endpoint: Endpoint, rejected: &Rejected) -> Vec<Unrecognized> {
    for error in &rejected.first {
        warn!(
            endpoint = endpoint.label(),
            path = %error.path,
            error = %error.message,
            "skipped an invalid item of the list"
        );
    }
    if rejected.count > rejected.first.len() {
        warn!(
            endpoint = endpoint.label(),
            skipped = rejected.count,
            "skipped invalid items of the list (only the first few are logged)"
        );
    }
    rejected_counts(rejected)
}

/// The skipped items of a list as counts of `reputation_unrecognized_values_total{field}`.
fn rejected_counts(rejected: &Rejected) -> Vec<Unrecognized> {
    rejected
        .by_field
        .iter()
        .map(|(field, count)| Unrecognized {
            field: *field,
            value: "an invalid list item".into(),
            count: *count,
        })
        .collect()
}
