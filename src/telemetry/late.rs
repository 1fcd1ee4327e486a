//! Gauges that have no sample until they are first set.

use std::sync::{Arc, Mutex};

use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// A gauge without a sample until it is first set (`reputation_system_ok` before the first
/// system-check answer, for instance), where a 0 would say something false.
#[derive(Debug)]
pub(super) struct Late<V>(Arc<Mutex<Option<V>>>);

impl<V> Default for Late<V> {
    fn default() -> Self {
        Late(Arc::new(Mutex::new(None)))
    }
}

impl<V> Clone for Late<V> {
    fn clone(&self) -> Self {
        Late(self.0.clone())
    }
}

impl<V: Copy> Late<V> {
    pub(super) fn set(&self, value: V) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(value);
    }
}

/// A 0 or 1 gauge value.
#[derive(Debug, Clone, Copy)]
pub(super) struct Flag(pub(super) bool);

/// A gauge value in seconds.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seconds(pub(super) f64);

impl<V> TypedMetric for Late<V> {
    const TYPE: MetricType = MetricType::Gauge;
}

impl<V: Copy + std::fmt::Debug + Send + Sync + 'static> EncodeMetric for Late<V>
where
    V: LateValue,
{
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        match *self.0.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(value) => value.encode(&mut encoder),
            None => Ok(()),
        }
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Gauge
    }
}

/// How a [`Late`] value is written.
pub(super) trait LateValue {
    fn encode(self, encoder: &mut MetricEncoder<'_>) -> Result<(), std::fmt::Error>;
}

impl LateValue for Flag {
    fn encode(self, encoder: &mut MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        encoder.encode_gauge(&i64::from(self.0))
    }
}

impl LateValue for Seconds {
    fn encode(self, encoder: &mut MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        encoder.encode_gauge(&self.0)
    }
}
