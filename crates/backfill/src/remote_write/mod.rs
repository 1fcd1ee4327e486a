//! `backfill --remote-write URL`: the history sent straight to a remote-write receiver
//! (Prometheus with `--web.enable-remote-write-receiver`, Mimir, Thanos Receive,
//! VictoriaMetrics, Grafana Cloud) as Prometheus remote-write 1.0: protobuf `WriteRequest`s,
//! snappy-compressed, one request at a time so that each series arrives in time order.
//!
//! Before anything is fetched, an empty request tells whether the receiver can be reached and
//! takes remote write at that address: a one-shot command's verdict, within seconds. Then
//! assets are added as their reports arrive; full requests go through a short queue to one
//! delivery task, which encodes, compresses and posts them, retrying 5xx, 429 and broken
//! connections with the exporter's backoff. Memory holds the queue, not the fleet.

mod batch;
pub mod proto;
mod receiver;
mod settings;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prost::Message as _;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::warn;

use super::history::History;
use super::series::{self, FAMILIES, Written};
use batch::{Batcher, LIMITS};
use proto::{Label, MetricMetadata, MetricType, Sample};
pub use receiver::{Receiver, ReceiverError, SendError};
use reputation_exporter::exposition::MetricType as Type;
use reputation_exporter::upstream::retry::RetryPolicy;
use reputation_exporter::vocabulary::Kind;
pub use settings::Settings;

/// Requests waiting for the delivery task: enough to keep it busy while reports arrive.
const QUEUE: usize = 4;

/// What the receiver took, for the summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sent {
    /// Requests the receiver accepted.
    pub requests: u64,
    /// Samples in them.
    pub samples: u64,
    /// Their bodies, compressed, in bytes.
    pub bytes: u64,
    /// Attempts that failed and were tried again.
    pub retries: u64,
}

/// What the receiver has taken so far: counted by the delivery as it goes, read by the progress
/// line meanwhile and by the summary at the end.
#[derive(Debug, Default)]
pub struct Taken {
    requests: AtomicU64,
    samples: AtomicU64,
    bytes: AtomicU64,
    retries: AtomicU64,
}

impl Taken {
    /// `12000 samples sent in 6 requests, 0 retries`.
    pub fn describe(&self) -> String {
        let sent = self.sent();
        format!(
            "{} samples sent in {} requests, {} retries",
            sent.samples, sent.requests, sent.retries
        )
    }

    /// Everything taken so far.
    pub fn sent(&self) -> Sent {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        Sent {
            requests: load(&self.requests),
            samples: load(&self.samples),
            bytes: load(&self.bytes),
            retries: load(&self.retries),
        }
    }

    /// One request accepted: its samples and its compressed size.
    fn accepted(&self, samples: u64, bytes: u64) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.samples.fetch_add(samples, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// One attempt that failed and is tried again.
    fn retried(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }
}

/// Why the history could not all be sent.
#[derive(Debug, thiserror::Error)]
pub enum RemoteWriteError {
    /// The receiver did not take the first, empty request: nothing was fetched or sent.
    #[error(
        "remote write to {url}: {error}.{advice} Nothing was fetched or sent.",
        advice = error.advice(url).map(|a| format!(" {a}")).unwrap_or_default()
    )]
    Unusable {
        /// The receiver's address, without credentials.
        url: String,
        /// Why.
        error: SendError,
    },
    /// The receiver took the first request, then stopped taking them.
    #[error(
        "remote write to {url} failed: {error}{advice}\n(the receiver had accepted {} samples in \
         {} requests before it)",
        sent.samples,
        sent.requests,
        advice = error.advice(url).map(|a| format!("\n{a}")).unwrap_or_default()
    )]
    Failed {
        /// The receiver's address, without credentials.
        url: String,
        /// The last failure.
        error: SendError,
        /// What had been accepted before it.
        sent: Sent,
    },
}

/// The history on its way to a receiver.
pub struct RemoteWrite {
    batcher: Batcher,
    labels: Vec<(String, String)>,
    written: Written,
    queue: mpsc::Sender<proto::WriteRequest>,
    delivery: JoinHandle<Result<Sent, RemoteWriteError>>,
    taken: Arc<Taken>,
}

impl RemoteWrite {
    /// Checks that `receiver` takes remote write, then starts delivering to it, each request
    /// retried by `retry`; every series carries `labels` besides its own.
    ///
    /// The check is one empty request with a one-shot command's policy: a receiver that cannot
    /// be reached, or that answers 404 or 405 (a wrong port or path), fails it at once; one
    /// that answers 5xx gets a short round of retries. Later requests, to a receiver that has
    /// answered, are retried as patiently as the daemon's.
    pub async fn start(
        receiver: Receiver,
        retry: RetryPolicy,
        labels: Vec<(String, String)>,
    ) -> Result<Self, RemoteWriteError> {
        let first = retry.once();
        first
            .retry(
                Instant::now() + first.max_elapsed,
                || receiver.probe(),
                |error: &SendError, delay: Duration| {
                    warn!(error = %error, delay = ?delay, "remote write: retrying the first request");
                },
            )
            .await
            .map_err(|error| RemoteWriteError::Unusable {
                url: receiver.shown().to_owned(),
                error,
            })?;
        let (queue, requests) = mpsc::channel(QUEUE);
        let taken = Arc::new(Taken::default());
        let delivery = tokio::spawn(deliver(receiver, retry, requests, taken.clone()));
        Ok(RemoteWrite {
            batcher: Batcher::new(LIMITS, metadata()),
            labels,
            written: Written::default(),
            queue,
            delivery,
            taken,
        })
    }

    /// What the receiver has taken so far, updated as it goes.
    pub fn taken(&self) -> Arc<Taken> {
        self.taken.clone()
    }

    /// Adds one asset's series; waits while the queue is full.
    pub async fn write(
        &mut self,
        kind: Kind,
        asset: &str,
        history: &History,
    ) -> Result<(), RemoteWriteError> {
        for series in history.series() {
            let name = FAMILIES[series.family].family.name;
            let mut labels: Vec<Label> = series::labels(&self.labels, kind, asset, &series)
                .into_iter()
                .chain([("__name__", name)])
                .map(|(name, value)| Label {
                    name: name.to_owned(),
                    value: value.to_owned(),
                })
                .collect();
            labels.sort_unstable_by(|a, b| a.name.cmp(&b.name));
            let samples: Vec<Sample> = series
                .samples
                .iter()
                .map(|&(at, value)| Sample {
                    value,
                    timestamp: at.saturating_mul(1000),
                })
                .collect();
            for request in self.batcher.push(&labels, &samples) {
                if self.queue.send(request).await.is_err() {
                    return Err(self.failure().await);
                }
            }
        }
        self.written.add(history);
        Ok(())
    }

    /// Sends what is left and waits until the receiver has taken everything.
    pub async fn finish(self) -> Result<(Written, Sent), RemoteWriteError> {
        let RemoteWrite {
            batcher,
            queue,
            delivery,
            written,
            ..
        } = self;
        if let Some(last) = batcher.finish() {
            // A closed queue means the delivery failed; its result says how.
            let _ = queue.send(last).await;
        }
        drop(queue);
        let sent = delivery
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?;
        Ok((written, sent))
    }

    /// The delivery's error, once it has stopped.
    async fn failure(&mut self) -> RemoteWriteError {
        match (&mut self.delivery).await {
            Ok(Err(error)) => error,
            Ok(Ok(_)) => unreachable!("the delivery stops early only on an error"),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
}

/// Type and help of the three families, as the file's `# TYPE` and `# HELP` lines say them.
fn metadata() -> Vec<MetricMetadata> {
    FAMILIES
        .iter()
        .map(|family| MetricMetadata {
            r#type: match family.family.metric_type {
                Type::Gauge => MetricType::Gauge,
                Type::Counter => MetricType::Counter,
                Type::Info => MetricType::Info,
                Type::StateSet => MetricType::Stateset,
                Type::Histogram => MetricType::Histogram,
            } as i32,
            metric_family_name: family.family.name.to_owned(),
            help: family.family.help.to_owned(),
            unit: String::new(),
        })
        .collect()
}

/// Posts the queued requests in order until the queue closes; stops at the first request the
/// receiver will not take.
async fn deliver(
    receiver: Receiver,
    retry: RetryPolicy,
    mut requests: mpsc::Receiver<proto::WriteRequest>,
    taken: Arc<Taken>,
) -> Result<Sent, RemoteWriteError> {
    let failed = |error| RemoteWriteError::Failed {
        url: receiver.shown().to_owned(),
        error,
        sent: taken.sent(),
    };
    while let Some(request) = requests.recv().await {
        let samples = batch::samples(&request) as u64;
        let body = snap::raw::Encoder::new()
            .compress_vec(&request.encode_to_vec())
            .map(bytes::Bytes::from)
            .map_err(|e| failed(SendError::Encode(e.to_string())))?;
        drop(request);
        let deadline = Instant::now() + retry.max_elapsed;
        retry
            .retry(
                deadline,
                || receiver.post(body.clone()),
                |error: &SendError, delay: Duration| {
                    taken.retried();
                    warn!(error = %error, delay = ?delay, "remote write: retrying a request");
                },
            )
            .await
            .map_err(failed)?;
        taken.accepted(samples, body.len() as u64);
    }
    Ok(taken.sent())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_line_says_what_the_receiver_has_taken() {
        let taken = Taken::default();
        assert_eq!(taken.describe(), "0 samples sent in 0 requests, 0 retries");
        for _ in 0..6 {
            taken.accepted(2_000, 6_000);
        }
        taken.retried();
        assert_eq!(
            taken.describe(),
            "12000 samples sent in 6 requests, 1 retries"
        );
    }

    #[test]
    fn the_families_metadata_says_gauge_and_the_help_of_the_live_series() {
        let metadata = metadata();
        let names: Vec<&str> = metadata
            .iter()
            .map(|m| m.metric_family_name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "reputation_senderscore",
                "reputation_blacklistings",
                "reputation_blacklist_listed"
            ]
        );
        assert!(
            metadata
                .iter()
                .all(|m| m.r#type == MetricType::Gauge as i32)
        );
        assert_eq!(metadata[0].help, FAMILIES[0].family.help);
    }
}
