//! Cutting the history into bounded requests: at most [`Limits::samples`] samples and about
//! [`Limits::bytes`] of protobuf before compression each, series kept whole where they fit and
//! otherwise split in time order, so that requests sent one after another deliver every series'
//! samples in increasing time.

use prost::Message as _;
use prost::encoding::message;

use super::proto::{Label, MetricMetadata, Sample, TimeSeries, WriteRequest};

/// Bounds of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Limits {
    /// Samples per request: Prometheus' own `max_samples_per_send` default (2,000).
    pub samples: usize,
    /// Encoded size before compression; a single sample larger than this (labels of megabytes)
    /// still goes, alone.
    pub bytes: usize,
}

/// What a receiver takes: Prometheus' sending default, and a size far below every receiver's
/// limit on a request (Mimir's 100 MiB, VictoriaMetrics' 32 MiB).
pub(super) const LIMITS: Limits = Limits {
    samples: 2_000,
    bytes: 1 << 20,
};

/// Collects series into requests.
#[derive(Debug)]
pub(super) struct Batcher {
    limits: Limits,
    pending: WriteRequest,
    samples: usize,
    bytes: usize,
}

/// Key and length prefix of a series field (bounded, for a series under 2 MiB).
const SERIES_OVERHEAD: usize = 1 + 3;

impl Batcher {
    /// Starts the first request, which carries `metadata`.
    pub(super) fn new(limits: Limits, metadata: Vec<MetricMetadata>) -> Batcher {
        let pending = WriteRequest {
            timeseries: Vec::new(),
            metadata,
        };
        let bytes = pending.encoded_len();
        Batcher {
            limits,
            pending,
            samples: 0,
            bytes,
        }
    }

    /// Adds a series (labels sorted, `__name__` among them; samples in increasing time) and
    /// returns the requests it filled, in the order they must be sent.
    pub(super) fn push(&mut self, labels: &[Label], samples: &[Sample]) -> Vec<WriteRequest> {
        let mut full = Vec::new();
        let labels_len: usize = labels.iter().map(|l| message::encoded_len(1, l)).sum();
        let mut rest = samples;
        while !rest.is_empty() {
            let mut size = SERIES_OVERHEAD + labels_len;
            let mut take = 0;
            for sample in rest {
                let grown = size + message::encoded_len(2, sample);
                let fits = self.samples + take < self.limits.samples
                    && self.bytes + grown <= self.limits.bytes;
                // An empty request takes one sample whatever its size, so every sample goes.
                if !(fits || take == 0 && self.samples == 0) {
                    break;
                }
                size = grown;
                take += 1;
            }
            if take == 0 {
                full.push(self.take());
                continue;
            }
            let (now, later) = rest.split_at(take);
            self.pending.timeseries.push(TimeSeries {
                labels: labels.to_vec(),
                samples: now.to_vec(),
            });
            self.samples += take;
            self.bytes += size;
            rest = later;
        }
        full
    }

    /// The last request, unless it would be empty.
    pub(super) fn finish(mut self) -> Option<WriteRequest> {
        (self.samples > 0).then(|| self.take())
    }

    fn take(&mut self) -> WriteRequest {
        self.samples = 0;
        self.bytes = 0;
        std::mem::take(&mut self.pending)
    }
}

/// Samples in a request.
pub(super) fn samples(request: &WriteRequest) -> usize {
    request.timeseries.iter().map(|s| s.samples.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(asset: &str) -> Vec<Label> {
        [("__name__", "reputation_senderscore"), ("asset", asset)]
            .map(|(name, value)| Label {
                name: name.into(),
                value: value.into(),
            })
            .to_vec()
    }

    fn samples(from: i64, n: i64) -> Vec<Sample> {
        (from..from + n)
            .map(|i| Sample {
                value: i as f64,
                timestamp: i * 86_400_000,
            })
            .collect()
    }

    /// Every request's series, as (asset, first timestamp, count).
    fn shape(requests: &[WriteRequest]) -> Vec<Vec<(String, i64, usize)>> {
        requests
            .iter()
            .map(|r| {
                r.timeseries
                    .iter()
                    .map(|s| {
                        (
                            s.labels[1].value.clone(),
                            s.samples[0].timestamp / 86_400_000,
                            s.samples.len(),
                        )
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn series_fill_requests_up_to_the_sample_bound_and_split_in_time_order() {
        let limits = Limits {
            samples: 100,
            bytes: 1 << 20,
        };
        let mut batcher = Batcher::new(limits, Vec::new());
        let mut sent = Vec::new();
        sent.extend(batcher.push(&labels("a"), &samples(0, 60)));
        assert!(sent.is_empty(), "60 of 100: nothing full yet");
        sent.extend(batcher.push(&labels("b"), &samples(0, 60)));
        sent.extend(batcher.push(&labels("c"), &samples(1000, 250)));
        sent.extend(batcher.finish());
        assert_eq!(
            shape(&sent),
            [
                vec![("a".into(), 0, 60), ("b".into(), 0, 40)],
                vec![("b".into(), 40, 20), ("c".into(), 1000, 80)],
                vec![("c".into(), 1080, 100)],
                vec![("c".into(), 1180, 70)],
            ]
        );
        assert!(sent.iter().all(|r| super::samples(r) <= 100));
    }

    #[test]
    fn the_byte_bound_holds_and_an_oversized_sample_still_goes_alone() {
        let limits = Limits {
            samples: 10_000,
            bytes: 2_000,
        };
        let mut batcher = Batcher::new(limits, Vec::new());
        let mut sent = batcher.push(&labels("a"), &samples(0, 500));
        sent.extend(batcher.finish());
        assert!(sent.len() > 1);
        for request in &sent {
            assert!(request.encoded_len() <= 2_000, "{}", request.encoded_len());
        }
        let total: usize = sent.iter().map(super::samples).sum();
        assert_eq!(total, 500);

        let huge = vec![Label {
            name: "__name__".into(),
            value: "x".repeat(5_000),
        }];
        let mut batcher = Batcher::new(limits, Vec::new());
        let mut sent = batcher.push(&huge, &samples(0, 3));
        sent.extend(batcher.finish());
        assert_eq!(
            sent.iter().map(super::samples).collect::<Vec<_>>(),
            [1, 1, 1]
        );
    }

    #[test]
    fn metadata_rides_in_the_first_request_only_and_nothing_empty_is_sent() {
        let limits = Limits {
            samples: 10,
            bytes: 1 << 20,
        };
        let metadata = vec![MetricMetadata {
            r#type: super::super::proto::MetricType::Gauge as i32,
            metric_family_name: "reputation_senderscore".into(),
            help: "Sender Score".into(),
            unit: String::new(),
        }];
        let mut batcher = Batcher::new(limits, metadata.clone());
        let mut sent = batcher.push(&labels("a"), &samples(0, 25));
        sent.extend(batcher.finish());
        assert_eq!(sent.len(), 3);
        assert_eq!(sent[0].metadata, metadata);
        assert!(sent[1..].iter().all(|r| r.metadata.is_empty()));
        assert_eq!(Batcher::new(limits, Vec::new()).finish(), None);
    }
}
