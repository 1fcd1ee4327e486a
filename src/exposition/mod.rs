//! The two exposition formats and the metric families written in them.
//!
//! OpenMetrics 1.0 and Prometheus text 0.0.4 write the same sample lines for the metric types
//! used here (no timestamps, no exemplars, no `_created`); they differ in the family headers:
//! OpenMetrics names counters and info metrics without their `_total` / `_info` suffix and knows
//! the `info` and `stateset` types, 0.0.4 writes them as counters and gauges under the sample
//! name, and only OpenMetrics ends with `# EOF`. [`Rendered::assemble`] owns those differences
//! for the per-asset families, described once in [`assets`].
//!
//! `prometheus-client` is not used for the per-asset families: it has no stateset type and no
//! 0.0.4 encoder, and those bodies are written straight from the snapshot, once per poll. It
//! does hold the exporter's own families, whose 0.0.4 form [`openmetrics_to_text`] derives.

pub mod assets;
pub mod gzip;
pub mod openmetrics_to_text;
pub mod piece;

use bytes::Bytes;
use piece::{Packed, Piece};

/// An exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0, what Prometheus asks for first.
    OpenMetrics,
    /// Prometheus text 0.0.4, for curl, older scrapers and `promtool check metrics`.
    Text,
}

impl Format {
    /// Both formats, in the order of [`Format`]'s discriminants.
    pub const ALL: [Format; 2] = [Format::OpenMetrics, Format::Text];

    /// The exact `Content-Type` of a body in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
        }
    }

    /// Picks the format an `Accept` header prefers: OpenMetrics when it is asked for with a
    /// quality at least that of plain text, 0.0.4 otherwise (no header, `*/*`, `text/plain`).
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::Text;
        };
        let mut openmetrics = 0.0_f32;
        let mut text = 0.0_f32;
        for (media, quality) in weighted(accept) {
            match media.as_str() {
                "application/openmetrics-text" => openmetrics = openmetrics.max(quality),
                "text/plain" | "text/*" | "*/*" => text = text.max(quality),
                _ => {}
            }
        }
        if openmetrics > 0.0 && openmetrics >= text {
            Format::OpenMetrics
        } else {
            Format::Text
        }
    }
}

/// The items of an `Accept` or `Accept-Encoding` header, each lower-cased with its quality
/// (`q=`, 1 when not given): `text/plain;q=0.5, gzip` gives `("text/plain", 0.5)`, `("gzip", 1)`.
pub fn weighted(header: &str) -> impl Iterator<Item = (String, f32)> + '_ {
    header.split(',').map(|item| {
        let mut parts = item.split(';');
        let name = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let quality = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        (name, quality)
    })
}

/// The type of a metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    /// A value that goes up and down.
    Gauge,
    /// A monotonic count; the family name ends in `_total`.
    Counter,
    /// Constant 1 carrying labels; the family name ends in `_info`.
    Info,
    /// One series per state, 1 for the current state; the state label is named as the family.
    StateSet,
    /// Buckets, sum and count.
    Histogram,
}

/// A metric family: name as the samples carry it, help text, type.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// Sample name (`reputation_api_requests_total`, `reputation_asset_info`); for histograms
    /// the base name of `_bucket`, `_sum` and `_count`.
    pub name: &'static str,
    /// HELP text.
    pub help: &'static str,
    /// Type.
    pub metric_type: MetricType,
}

impl Family {
    /// The name in the `# TYPE` and `# HELP` lines of this format.
    fn header_name(&self, format: Format) -> &'static str {
        let suffix = match (format, self.metric_type) {
            (Format::OpenMetrics, MetricType::Counter) => "_total",
            (Format::OpenMetrics, MetricType::Info) => "_info",
            _ => "",
        };
        self.name.strip_suffix(suffix).unwrap_or(self.name)
    }

    fn type_name(&self, format: Format) -> &'static str {
        match (format, self.metric_type) {
            (_, MetricType::Gauge) => "gauge",
            (_, MetricType::Counter) => "counter",
            (_, MetricType::Histogram) => "histogram",
            (Format::OpenMetrics, MetricType::Info) => "info",
            (Format::OpenMetrics, MetricType::StateSet) => "stateset",
            (Format::Text, MetricType::Info | MetricType::StateSet) => "gauge",
        }
    }
}

/// Writes the sample lines of several families, the same bytes for both formats: one buffer
/// per family, closed into a piece whenever it passes [`SampleWriter::CHUNK`], so a large body
/// never moves to grow and never holds more than one chunk's spare room per family. Once
/// [`SampleWriter::pack`] is called, closed pieces are packed.
#[derive(Debug, Default)]
pub struct SampleWriter {
    families: Vec<FamilySamples>,
    packing: bool,
    written: usize,
}

/// One family's samples: closed pieces, then the buffer being written.
#[derive(Debug, Default)]
struct FamilySamples {
    closed: Vec<Piece>,
    open: Vec<u8>,
}

impl FamilySamples {
    fn close(&mut self, packing: bool) {
        let mut open = std::mem::take(&mut self.open);
        if open.is_empty() {
            return;
        }
        let piece = if packing {
            Piece::Packed(Packed::new(&open))
        } else {
            // The spare room would be held as long as the snapshot is.
            open.shrink_to_fit();
            Piece::Plain(Bytes::from(open))
        };
        self.closed.push(piece);
    }
}

impl SampleWriter {
    /// Bytes after which a family's buffer is closed into a piece.
    pub const CHUNK: usize = 256 << 10;

    /// A writer with `n` families open, written to by index ([`SampleWriter::sample_in`]).
    pub fn with_families(n: usize) -> Self {
        SampleWriter {
            families: (0..n).map(|_| FamilySamples::default()).collect(),
            ..SampleWriter::default()
        }
    }

    /// Opens the next family.
    pub fn family(&mut self) {
        self.families.push(FamilySamples::default());
    }

    /// How many families are open.
    pub fn open_families(&self) -> usize {
        self.families.len()
    }

    /// Bytes of sample lines written so far.
    pub fn written(&self) -> usize {
        self.written
    }

    /// Packs the pieces closed so far and every piece closed from now on.
    pub fn pack(&mut self) {
        self.packing = true;
        for family in &mut self.families {
            for piece in &mut family.closed {
                if let Piece::Plain(lines) = piece {
                    *piece = Piece::Packed(Packed::new(lines));
                }
            }
        }
    }

    /// Writes one sample line of the last family opened (opening one if none is).
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        if self.families.is_empty() {
            self.family();
        }
        self.sample_in(self.families.len() - 1, name, labels, value);
    }

    /// Writes one sample line of family `family`, in the order the families were opened.
    pub fn sample_in(&mut self, family: usize, name: &str, labels: &[(&str, &str)], value: f64) {
        let samples = &mut self.families[family];
        let before = samples.open.len();
        write_sample(&mut samples.open, name, labels, value);
        self.written += samples.open.len() - before;
        if samples.open.len() >= Self::CHUNK {
            samples.close(self.packing);
        }
    }

    /// The samples of each family as pieces, in the order the families were opened.
    pub fn finish(self) -> Vec<Vec<Piece>> {
        let packing = self.packing;
        self.families
            .into_iter()
            .map(|mut samples| {
                samples.close(packing);
                samples.closed
            })
            .collect()
    }
}

/// Families rendered in both formats, as pieces shared between them.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    chunks: [Vec<Piece>; 2],
}

impl Rendered {
    /// The families in order, each opened by its headers in each format and followed by its
    /// sample chunks (shared, not copied).
    pub fn assemble<'a>(families: impl IntoIterator<Item = (&'a Family, Vec<Piece>)>) -> Self {
        let families: Vec<_> = families.into_iter().collect();
        let mut chunks: [Vec<Piece>; 2] = Default::default();
        for format in Format::ALL {
            let mut headers = Vec::with_capacity(families.len() * 256);
            let mut ends = Vec::with_capacity(families.len());
            for (family, _) in &families {
                write_header(&mut headers, format, family);
                ends.push(headers.len());
            }
            let headers = Bytes::from(headers);
            let out = &mut chunks[format as usize];
            let mut start = 0;
            for ((_, samples), end) in families.iter().zip(ends) {
                out.push(Piece::Plain(headers.slice(start..end)));
                out.extend(samples.iter().filter(|s| !s.is_empty()).cloned());
                start = end;
            }
        }
        Rendered { chunks }
    }

    /// The pieces of one format, in order.
    pub fn chunks(&self, format: Format) -> &[Piece] {
        &self.chunks[format as usize]
    }

    /// Length in bytes of one format.
    pub fn len(&self, format: Format) -> usize {
        self.chunks(format).iter().map(Piece::len).sum()
    }

    /// Whether nothing was rendered.
    pub fn is_empty(&self) -> bool {
        self.chunks.iter().all(Vec::is_empty)
    }

    /// One format as one buffer (for tests, `--once` and the benchmarks).
    pub fn to_vec(&self, format: Format) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len(format));
        for piece in self.chunks(format) {
            out.extend_from_slice(&piece.lines());
        }
        out
    }
}

/// Writes the `# HELP` and `# TYPE` lines of a family in one format.
pub fn write_header(out: &mut Vec<u8>, format: Format, family: &Family) {
    let name = family.header_name(format);
    out.extend_from_slice(b"# HELP ");
    out.extend_from_slice(name.as_bytes());
    out.push(b' ');
    for c in family.help.chars() {
        match c {
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '"' if format == Format::OpenMetrics => out.extend_from_slice(b"\\\""),
            c => {
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.extend_from_slice(b"\n# TYPE ");
    out.extend_from_slice(name.as_bytes());
    out.push(b' ');
    out.extend_from_slice(family.type_name(format).as_bytes());
    out.push(b'\n');
}

/// Writes one sample line, the same in both formats: `name{labels} value`.
fn write_sample(out: &mut Vec<u8>, name: &str, labels: &[(&str, &str)], value: f64) {
    write_sample_at(out, name, labels, value, None);
}

/// Writes one sample line, with a timestamp in seconds when `at` is given (for backfill; the
/// live exposition carries none): `name{labels} value [at]`.
pub fn write_sample_at(
    out: &mut Vec<u8>,
    name: &str,
    labels: &[(&str, &str)],
    value: f64,
    at: Option<i64>,
) {
    out.extend_from_slice(name.as_bytes());
    if !labels.is_empty() {
        out.push(b'{');
        for (i, (key, value)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(b"=\"");
            escape_label_value(out, value);
            out.push(b'"');
        }
        out.push(b'}');
    }
    out.push(b' ');
    write_value(out, value);
    if let Some(at) = at {
        out.push(b' ');
        out.extend_from_slice(itoa::Buffer::new().format(at).as_bytes());
    }
    out.push(b'\n');
}

/// Escapes `\`, `"` and line feed, the three characters both formats escape in label values.
fn escape_label_value(out: &mut Vec<u8>, value: &str) {
    let bytes = value.as_bytes();
    if !bytes.iter().any(|b| matches!(b, b'\\' | b'"' | b'\n')) {
        out.extend_from_slice(bytes);
        return;
    }
    for &b in bytes {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b => out.push(b),
        }
    }
}

/// Writes a sample value: integers without a fraction, other numbers in their shortest
/// round-trip form (`ryu`), and the special values as both formats spell them.
fn write_value(out: &mut Vec<u8>, value: f64) {
    if value.is_nan() {
        out.extend_from_slice(b"NaN");
    } else if value.is_infinite() {
        out.extend_from_slice(if value > 0.0 { b"+Inf" } else { b"-Inf" });
    } else if value.fract() == 0.0 && value.abs() < 1e15 {
        out.extend_from_slice(itoa::Buffer::new().format(value as i64).as_bytes());
    } else {
        out.extend_from_slice(ryu::Buffer::new().format_finite(value).as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COUNTER: Family = Family {
        name: "x_requests_total",
        help: "Requests \"made\" \\ counted.",
        metric_type: MetricType::Counter,
    };
    const INFO: Family = Family {
        name: "x_build_info",
        help: "Build.",
        metric_type: MetricType::Info,
    };

    fn render(format: Format, families: &[Family]) -> String {
        let mut out = Vec::new();
        for family in families {
            write_header(&mut out, format, family);
        }
        if format == Format::OpenMetrics {
            out.extend_from_slice(b"# EOF\n");
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn openmetrics_headers_drop_the_total_and_info_suffixes_and_end_with_eof() {
        assert_eq!(
            render(Format::OpenMetrics, &[COUNTER, INFO]),
            "# HELP x_requests Requests \\\"made\\\" \\\\ counted.\n# TYPE x_requests counter\n\
             # HELP x_build Build.\n# TYPE x_build info\n# EOF\n"
        );
    }

    #[test]
    fn text_headers_keep_the_sample_name_and_write_info_as_gauge() {
        assert_eq!(
            render(Format::Text, &[COUNTER, INFO]),
            "# HELP x_requests_total Requests \"made\" \\\\ counted.\n\
             # TYPE x_requests_total counter\n\
             # HELP x_build_info Build.\n# TYPE x_build_info gauge\n"
        );
    }

    #[test]
    fn label_values_are_escaped_and_values_written_exactly() {
        let mut out = Vec::new();
        write_sample(&mut out, "m", &[("a", "q\"b\\n\né")], 1.5);
        for value in [42.0, f64::INFINITY, -0.25, 1e21, 1.5e-7] {
            write_sample(&mut out, "m", &[], value);
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "m{a=\"q\\\"b\\\\n\\né\"} 1.5\nm 42\nm +Inf\nm -0.25\nm 1e21\nm 1.5e-7\n"
        );
    }

    #[test]
    fn assembled_families_give_each_format_its_headers_around_the_same_samples() {
        let mut first = SampleWriter::default();
        first.family();
        first.sample("x_requests_total", &[("code", "200")], 3.0);
        first.family();
        first.family();
        let mut second = SampleWriter::default();
        second.family();
        second.family();
        second.family();
        second.sample("x_requests_total", &[], 1.0);
        let [first, second] = [first.finish(), second.finish()];
        let families = [&COUNTER, &INFO, &COUNTER];
        let rendered = Rendered::assemble(
            families
                .into_iter()
                .enumerate()
                .map(|(i, family)| (family, [first[i].clone(), second[i].clone()].concat())),
        );
        let text = String::from_utf8(rendered.to_vec(Format::Text)).unwrap();
        let om = String::from_utf8(rendered.to_vec(Format::OpenMetrics)).unwrap();
        let mut expected_text = Vec::new();
        let mut expected_om = Vec::new();
        for (format, out) in [
            (Format::Text, &mut expected_text),
            (Format::OpenMetrics, &mut expected_om),
        ] {
            write_header(out, format, &COUNTER);
            write_sample(out, "x_requests_total", &[("code", "200")], 3.0);
            write_header(out, format, &INFO);
            write_header(out, format, &COUNTER);
            write_sample(out, "x_requests_total", &[], 1.0);
        }
        assert_eq!(text, String::from_utf8(expected_text).unwrap());
        assert_eq!(om, String::from_utf8(expected_om).unwrap());
        assert_eq!(rendered.len(Format::Text), text.len());
        // Samples are stored once: both formats' sample chunks point at the same bytes.
        assert_eq!(
            rendered.chunks(Format::Text)[1].lines().as_ptr(),
            rendered.chunks(Format::OpenMetrics)[1].lines().as_ptr()
        );
    }

    fn joined(pieces: &[Piece]) -> Vec<u8> {
        pieces.iter().flat_map(|piece| piece.lines()).collect()
    }

    #[test]
    fn a_large_family_is_closed_into_pieces_of_whole_lines_packed_once_asked() {
        for pack_after in [None, Some(0), Some(30_000)] {
            let mut writer = SampleWriter::with_families(2);
            let mut expected = Vec::new();
            for i in 0..100_000 {
                if pack_after == Some(i) {
                    writer.pack();
                }
                let asset = format!("192.0.{}.{}", i / 256, i % 256);
                writer.sample_in(1, "x_score", &[("asset", &asset)], f64::from(i));
                write_sample(&mut expected, "x_score", &[("asset", &asset)], f64::from(i));
            }
            writer.sample_in(0, "x_other", &[], 1.0);
            assert_eq!(writer.written(), expected.len() + "x_other 1\n".len());
            let families = writer.finish();
            assert_eq!(joined(&families[0]), b"x_other 1\n");
            let pieces = &families[1];
            assert!(
                expected.len() > 2 * SampleWriter::CHUNK,
                "the test spans pieces"
            );
            assert_eq!(pieces.len(), expected.len().div_ceil(SampleWriter::CHUNK));
            for piece in pieces {
                assert!(
                    piece.lines().ends_with(b"\n"),
                    "a piece ends with its last line"
                );
                assert!(piece.len() < SampleWriter::CHUNK + 64);
                let packed = matches!(piece, Piece::Packed(_));
                assert_eq!(packed, pack_after.is_some(), "{pack_after:?}");
            }
            assert_eq!(joined(pieces), expected);
        }
    }

    #[test]
    fn negotiation_follows_the_accept_header() {
        let prometheus = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,\
             application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;q=0.4,\
             text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
        assert_eq!(Format::negotiate(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(Format::negotiate(None), Format::Text);
        assert_eq!(Format::negotiate(Some("*/*")), Format::Text);
        assert_eq!(
            Format::negotiate(Some("text/plain;q=0.9, application/openmetrics-text;q=0.5")),
            Format::Text
        );
        assert_eq!(
            Format::negotiate(Some("application/openmetrics-text; version=1.0.0")),
            Format::OpenMetrics
        );
        assert_eq!(
            Format::negotiate(Some("application/openmetrics-text;q=0")),
            Format::Text
        );
    }
}
