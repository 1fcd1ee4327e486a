//! Each test exporter's log, in a buffer of its own.

use std::sync::{Arc, Mutex};

use reputation_exporter::logging::{self, LogFormat};

pub type Subscriber = Box<dyn tracing::Subscriber + Send + Sync>;

/// A subscriber of every level, in `format` (the test default when none), writing only to the
/// returned buffer.
pub fn capture(format: Option<LogFormat>) -> (Subscriber, Arc<Mutex<Vec<u8>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = log.clone();
    let writer = move || Sink(sink.clone());
    let subscriber = match format {
        Some(format) => logging::subscriber(tracing::Level::TRACE, format, writer),
        None => Box::new(
            tracing_subscriber::fmt()
                .with_max_level(tracing::Level::TRACE)
                .with_ansi(false)
                .with_thread_names(true)
                .with_writer(writer)
                .finish(),
        ),
    };
    (subscriber, log)
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
