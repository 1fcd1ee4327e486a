//! The metrics of the process rather than of an account: build information, and the standard
//! `process_*` metrics where the platform offers them (Linux `/proc`), read on each scrape (at
//! most once a second).

use std::sync::atomic::AtomicU64;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric as _};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

/// `{version, revision, rustc}` of `reputation_exporter_build_info`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
    revision: &'static str,
    rustc: &'static str,
}

/// The metrics of the exporter process rather than of an account: build information and the
/// standard `process_*` metrics. With one account they follow its metrics on `/metrics`; with
/// several, they are all `/metrics` serves.
#[derive(Debug)]
pub struct ProcessMetrics {
    registry: Registry,
    /// `reputation_exporter_config_last_reload_successful`.
    reload_ok: Gauge,
    /// `reputation_exporter_config_last_reload_success_timestamp_seconds`.
    reload_time: Gauge<f64, AtomicU64>,
}

impl Default for ProcessMetrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        registry.register(
            "reputation_exporter_build",
            "Version, git revision and compiler of the running exporter",
            Info::new(BuildLabels {
                version: env!("CARGO_PKG_VERSION"),
                revision: env!("BUILD_GIT_REVISION"),
                rustc: env!("BUILD_RUSTC_VERSION"),
            }),
        );
        let reload_ok = Gauge::default();
        let reload_time = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "reputation_exporter_config_last_reload_successful",
            "1 when the last reload (or the start) applied the configuration, 0 when it was \
             refused",
            reload_ok.clone(),
        );
        registry.register(
            "reputation_exporter_config_last_reload_success_timestamp_seconds",
            "Unix time the running configuration was applied",
            reload_time.clone(),
        );
        registry.register_collector(Box::new(ProcessCollector));
        ProcessMetrics {
            registry,
            reload_ok,
            reload_time,
        }
    }
}

impl ProcessMetrics {
    /// Whether the last configuration was applied, and when the running one was (Unix time).
    pub fn config_state(&self) -> (bool, f64) {
        (self.reload_ok.get() == 1, self.reload_time.get())
    }

    /// Records whether a configuration (at the start, or by a reload) was applied.
    pub fn config_applied(&self, applied: bool) {
        self.reload_ok.set(i64::from(applied));
        if applied {
            self.reload_time.set(crate::health::unix_now());
        }
    }

    /// Appends the families in OpenMetrics text, without `# EOF`.
    pub fn encode(&self, out: &mut String) {
        let _ = prometheus_client::encoding::text::encode_registry(out, &self.registry);
    }
}

/// Writes the process metrics of the running exporter.
#[derive(Debug)]
pub(super) struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        #[cfg(target_os = "linux")]
        if let Some(p) = cached() {
            let cpu = ConstCounter::new(p.cpu_seconds);
            cpu.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds.",
                None,
                MetricType::Counter,
            )?)?;
            let gauges = [
                (
                    "process_resident_memory_bytes",
                    "Resident memory size in bytes.",
                    Some(p.resident_bytes),
                ),
                (
                    "process_virtual_memory_bytes",
                    "Virtual memory size in bytes.",
                    Some(p.virtual_bytes),
                ),
                (
                    "process_start_time_seconds",
                    "Start time of the process since unix epoch in seconds.",
                    Some(p.start_time),
                ),
                (
                    "process_open_fds",
                    "Number of open file descriptors.",
                    p.open_fds,
                ),
                (
                    "process_max_fds",
                    "Maximum number of open file descriptors.",
                    p.max_fds,
                ),
            ];
            for (name, help, value) in gauges {
                if let Some(value) = value {
                    let gauge = ConstGauge::new(value);
                    gauge.encode(encoder.encode_descriptor(
                        name,
                        help,
                        None,
                        MetricType::Gauge,
                    )?)?;
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = &mut encoder;
        Ok(())
    }
}

/// Clock ticks per second of the times in `/proc/self/stat` (USER_HZ, fixed at 100).
const TICKS_PER_SECOND: f64 = 100.0;

/// How long one reading of `/proc` is reused. Reading it costs more than the rest of a
/// scrape's live part; within a second the values barely move, and no scrape interval is
/// shorter.
const READING_TTL: std::time::Duration = std::time::Duration::from_secs(1);

/// The last reading and when it was taken.
#[cfg(target_os = "linux")]
fn cached() -> Option<Process> {
    use std::sync::Mutex;
    use std::time::Instant;
    static LAST: Mutex<Option<(Instant, Process)>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    match &*last {
        Some((at, reading)) if at.elapsed() < READING_TTL => Some(reading.clone()),
        _ => {
            let reading = read()?;
            *last = Some((Instant::now(), reading.clone()));
            Some(reading)
        }
    }
}

#[derive(Debug, Clone)]
struct Process {
    cpu_seconds: f64,
    resident_bytes: f64,
    virtual_bytes: f64,
    start_time: f64,
    open_fds: Option<f64>,
    max_fds: Option<f64>,
}

#[cfg(target_os = "linux")]
fn read() -> Option<Process> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(") ")?.1.split(' ').collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<f64>().ok();
    let cpu_seconds = (field(14)? + field(15)?) / TICKS_PER_SECOND;
    let start_ticks = field(22)?;
    let virtual_bytes = field(23)?;
    static BOOT_TIME: std::sync::OnceLock<Option<f64>> = std::sync::OnceLock::new();
    let boot_time = (*BOOT_TIME.get_or_init(|| {
        std::fs::read_to_string("/proc/stat")
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix("btime ")?.trim().parse::<f64>().ok())
    }))?;
    let resident_bytes = std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| {
            let kb = l.strip_prefix("VmRSS:")?.trim().strip_suffix("kB")?;
            kb.trim().parse::<f64>().ok()
        })?
        * 1024.0;
    let open_fds = std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|d| d.count() as f64);
    let max_fds = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
            line.split_whitespace().nth(3)?.parse::<f64>().ok()
        });
    Some(Process {
        cpu_seconds,
        resident_bytes,
        virtual_bytes,
        start_time: boot_time + start_ticks / TICKS_PER_SECOND,
        open_fds,
        max_fds,
    })
}
