//! The messages of Prometheus remote-write 1.0 that a writer sends, as `prompb/remote.proto`
//! and `prompb/types.proto` define them (field numbers and types as there; the fields a
//! writer of float samples leaves empty are left out, which protobuf allows).

/// `prometheus.WriteRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    /// Field 1: the series and their samples.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
    /// Field 3: type and help of the families.
    #[prost(message, repeated, tag = "3")]
    pub metadata: Vec<MetricMetadata>,
}

/// `prometheus.TimeSeries`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Field 1: the labels, `__name__` among them, sorted by name.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// Field 2: the samples, in increasing time.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Label {
    /// Field 1.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Field 2.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Sample {
    /// Field 1.
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Field 2: milliseconds since the Unix epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// `prometheus.MetricMetadata`.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct MetricMetadata {
    /// Field 1: the family's type.
    #[prost(enumeration = "MetricType", tag = "1")]
    pub r#type: i32,
    /// Field 2.
    #[prost(string, tag = "2")]
    pub metric_family_name: String,
    /// Field 4.
    #[prost(string, tag = "4")]
    pub help: String,
    /// Field 5.
    #[prost(string, tag = "5")]
    pub unit: String,
}

/// `prometheus.MetricMetadata.MetricType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum MetricType {
    /// 0.
    Unknown = 0,
    /// 1.
    Counter = 1,
    /// 2.
    Gauge = 2,
    /// 4.
    Histogram = 4,
    /// 6.
    Info = 6,
    /// 7.
    Stateset = 7,
}
