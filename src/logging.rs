//! Log output: real logfmt (`ts=... level=info msg="..." key=value`) or one JSON object a line,
//! at the configured level.

use std::fmt::{self, Write as _};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;

/// Line format of the logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// `key=value` pairs with `ts`, `level` and `msg`, values quoted and escaped where needed:
    /// what Loki's `| logfmt`, `hl` and `lnav` read, and what the Prometheus tools write.
    Logfmt,
    /// One JSON object a line.
    Json,
}

/// The subscriber that writes every event at `level` or above to `writer` in `format`.
pub fn subscriber<W>(
    level: tracing::Level,
    format: LogFormat,
    writer: W,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let writer = Unfailing(writer);
    match format {
        LogFormat::Logfmt => Box::new(
            tracing_subscriber::fmt()
                .event_format(Logfmt)
                .fmt_fields(Logfmt)
                .with_max_level(level)
                .with_writer(writer)
                .finish(),
        ),
        LogFormat::Json => Box::new(
            tracing_subscriber::fmt()
                .json()
                .flatten_event(true)
                .with_current_span(true)
                .with_span_list(false)
                .with_target(false)
                .with_max_level(level)
                .with_writer(writer)
                .finish(),
        ),
    }
}

/// Writes an event as one logfmt line: `ts`, `level`, `msg`, the fields of the spans it is in
/// (`account=eu`), outermost first, then the event's own fields in order.
struct Logfmt;

impl<S, N> FormatEvent<S, N> for Logfmt
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        context: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = event.metadata().level().as_str().to_ascii_lowercase();
        let mut fields = Fields::default();
        event.record(&mut fields);
        write!(
            writer,
            "ts={:.3} level={level} msg=",
            jiff::Timestamp::now()
        )?;
        write_value(&mut writer, &fields.message)?;
        for span in context
            .event_scope()
            .into_iter()
            .flat_map(|s| s.from_root())
        {
            if let Some(recorded) = span.extensions().get::<FormattedFields<N>>() {
                writer.write_str(recorded)?;
            }
        }
        writer.write_str(&fields.rest)?;
        writer.write_char('\n')
    }
}

/// A span's fields as ` key=value` pairs, kept with the span for its events' lines.
impl<'writer> FormatFields<'writer> for Logfmt {
    fn format_fields<R: RecordFields>(
        &self,
        mut writer: Writer<'writer>,
        fields: R,
    ) -> fmt::Result {
        let mut recorded = Fields::default();
        fields.record(&mut recorded);
        writer.write_str(&recorded.rest)
    }
}

/// The message and the other fields of an event, the latter already as ` key=value` pairs.
#[derive(Default)]
struct Fields {
    message: String,
    rest: String,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_owned();
        } else {
            let _ = write!(self.rest, " {}=", field.name());
            let _ = write_value(&mut self.rest, value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.record_str(field, &format!("{value:?}"));
    }
}

/// A logfmt value: bare when it is a plain word, otherwise quoted with `\`, `"` and control
/// characters escaped.
fn write_value(out: &mut impl fmt::Write, value: &str) -> fmt::Result {
    let plain = !value.is_empty()
        && value
            .chars()
            .all(|c| !c.is_whitespace() && !c.is_control() && !matches!(c, '"' | '=' | '\\'));
    if plain {
        return out.write_str(value);
    }
    out.write_char('"')?;
    for c in value.chars() {
        match c {
            '"' => out.write_str("\\\"")?,
            '\\' => out.write_str("\\\\")?,
            '\n' => out.write_str("\\n")?,
            '\r' => out.write_str("\\r")?,
            '\t' => out.write_str("\\t")?,
            c if c.is_control() => write!(out, "\\u{{{:04x}}}", u32::from(c))?,
            c => out.write_char(c)?,
        }
    }
    out.write_char('"')
}

/// A writer whose failures are dropped: a closed stderr must not turn a log line into an
/// error report, which would itself go to that stderr (and panic there).
struct Unfailing<W>(W);

impl<'w, W: MakeWriter<'w>> MakeWriter<'w> for Unfailing<W> {
    type Writer = Unfailing<W::Writer>;

    fn make_writer(&'w self) -> Self::Writer {
        Unfailing(self.0.make_writer())
    }
}

impl<W: std::io::Write> std::io::Write for Unfailing<W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        Ok(self.0.write(data).unwrap_or(data.len()))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = self.0.flush();
        Ok(())
    }
}

/// Installs the global subscriber writing to stderr; call once, before anything logs.
pub fn init(level: tracing::Level, format: LogFormat) {
    // Only fails when a subscriber is already installed, which then keeps logging.
    let _ = tracing::subscriber::set_global_default(subscriber(level, format, std::io::stderr));
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(data);
            Ok(data.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn lines(format: LogFormat) -> String {
        let buffer = Buffer::default();
        let sink = buffer.clone();
        let subscriber = subscriber(tracing::Level::INFO, format, move || sink.clone());
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(address = "127.0.0.1:9525", "listening");
            tracing::warn!(error = "a \"quoted\" reason", "poll failed");
            tracing::debug!("not at info");
            tracing::info_span!("account", account = "eu west")
                .in_scope(|| tracing::warn!(endpoint = "ip-list", "gave up"));
        });
        String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn logfmt_lines_carry_ts_level_and_msg_with_values_quoted_where_needed() {
        let text = lines(LogFormat::Logfmt);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("ts=20"), "{}", lines[0]);
        assert!(
            lines[0].ends_with(" level=info msg=listening address=127.0.0.1:9525"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].ends_with(r#" level=warn msg="poll failed" error="a \"quoted\" reason""#),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].ends_with(r#" level=warn msg="gave up" account="eu west" endpoint=ip-list"#),
            "{}",
            lines[2]
        );
    }

    #[test]
    fn json_lines_are_objects_with_level_and_message() {
        let text = lines(LogFormat::Json);
        for line in text.lines() {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(
                value["level"].is_string() && value["message"].is_string(),
                "{line}"
            );
        }
        assert_eq!(text.lines().count(), 3);
        let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["span"]["account"], "eu west", "{last}");
        assert_eq!(last["endpoint"], "ip-list", "{last}");
    }
}
