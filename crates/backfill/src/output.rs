//! The backfill file: OpenMetrics text for `promtool tsdb create-blocks-from openmetrics`.
//!
//! Each family's samples go to a scratch file of their own as assets arrive, so families never
//! interleave and memory does not grow with the fleet; `finish` joins them under their headers,
//! ends with `# EOF`, and renames the result into place, so a broken run never leaves a half file
//! under the final name.

use std::fs::File;
use std::io::{self, BufWriter, Write as _};
use std::path::{Path, PathBuf};

use super::history::History;
use super::series::{self, FAMILIES, Written};
use reputation_exporter::exposition::{Format, write_header, write_sample_at};
use reputation_exporter::vocabulary::Kind;

/// The file being written.
pub(crate) struct Output {
    path: PathBuf,
    scratch: [PathBuf; 3],
    families: [BufWriter<File>; 3],
    labels: Vec<(String, String)>,
    written: Written,
    finished: bool,
}

impl Output {
    /// Starts a backfill file at `path` whose series carry `labels` besides their own.
    pub(crate) fn create(path: &Path, labels: Vec<(String, String)>) -> io::Result<Output> {
        let scratch = ["senderscore", "blacklistings", "blacklist_listed"]
            .map(|part| hidden_beside(path, part));
        let families = [
            BufWriter::new(File::create(&scratch[0])?),
            BufWriter::new(File::create(&scratch[1])?),
            BufWriter::new(File::create(&scratch[2])?),
        ];
        Ok(Output {
            path: path.to_owned(),
            scratch,
            families,
            labels,
            written: Written::default(),
            finished: false,
        })
    }

    /// Appends one asset's series.
    pub(crate) fn write(&mut self, kind: Kind, asset: &str, history: &History) -> io::Result<()> {
        let mut buffers: [Vec<u8>; 3] = Default::default();
        for series in history.series() {
            let name = FAMILIES[series.family].family.name;
            let labels = series::labels(&self.labels, kind, asset, &series);
            for (at, value) in series.samples {
                write_sample_at(
                    &mut buffers[series.family],
                    name,
                    &labels,
                    *value,
                    Some(*at),
                );
            }
        }
        for (family, buffer) in self.families.iter_mut().zip(&buffers) {
            family.write_all(buffer)?;
        }
        self.written.add(history);
        Ok(())
    }

    /// Joins the families under their headers, ends the file with `# EOF` and moves it into
    /// place.
    pub(crate) fn finish(mut self) -> io::Result<Written> {
        for family in &mut self.families {
            family.flush()?;
        }
        let joined = hidden_beside(&self.path, "partial");
        let mut out = BufWriter::new(File::create(&joined)?);
        for (family, scratch) in FAMILIES.iter().zip(&self.scratch) {
            let mut header = Vec::new();
            write_header(&mut header, Format::OpenMetrics, &family.family);
            out.write_all(&header)?;
            io::copy(&mut File::open(scratch)?, &mut out)?;
        }
        out.write_all(b"# EOF\n")?;
        let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.sync_all()?;
        std::fs::rename(&joined, &self.path)?;
        self.finished = true;
        Ok(self.written)
    }
}

impl Drop for Output {
    /// Removes the scratch files, and the joined file when the run did not finish.
    fn drop(&mut self) {
        for scratch in &self.scratch {
            let _ = std::fs::remove_file(scratch);
        }
        if !self.finished {
            let _ = std::fs::remove_file(hidden_beside(&self.path, "partial"));
        }
    }
}

/// `.NAME.PART.PID` in the directory of `path`: on the same file system, so the final rename
/// is atomic.
fn hidden_beside(path: &Path, part: &str) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "backfill".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{part}.{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn families_come_whole_in_order_with_timestamps_and_eof_last() {
        let dir = std::env::temp_dir().join(format!("rexp-backfill-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("history.om");
        let labels = vec![("job".to_owned(), "reputation".to_owned())];
        let mut output = Output::create(&path, labels).unwrap();
        let history = |score: f64| History {
            senderscore: vec![(100, score), (200, score + 1.0)],
            blacklistings: vec![(100, 0.0)],
            listed: BTreeMap::from([("SBL".to_owned(), vec![(150, 1.0)])]),
            skipped: crate::Skipped::default(),
        };
        output.write(Kind::Ip, "192.0.2.1", &history(80.0)).unwrap();
        output
            .write(Kind::Domain, "a\"b.example", &history(60.0))
            .unwrap();
        assert!(
            !path.exists(),
            "nothing under the final name before the end"
        );
        let written = output.finish().unwrap();
        assert_eq!(written.samples, [4, 2, 2]);
        assert_eq!(written.span, Some((100, 200)));
        let text = std::fs::read_to_string(&path).unwrap();
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            samples,
            [
                r#"reputation_senderscore{job="reputation",kind="ip",asset="192.0.2.1"} 80 100"#,
                r#"reputation_senderscore{job="reputation",kind="ip",asset="192.0.2.1"} 81 200"#,
                r#"reputation_senderscore{job="reputation",kind="domain",asset="a\"b.example"} 60 100"#,
                r#"reputation_senderscore{job="reputation",kind="domain",asset="a\"b.example"} 61 200"#,
                r#"reputation_blacklistings{job="reputation",kind="ip",asset="192.0.2.1"} 0 100"#,
                r#"reputation_blacklistings{job="reputation",kind="domain",asset="a\"b.example"} 0 100"#,
                r#"reputation_blacklist_listed{job="reputation",kind="ip",asset="192.0.2.1",blacklist="SBL"} 1 150"#,
                r#"reputation_blacklist_listed{job="reputation",kind="domain",asset="a\"b.example",blacklist="SBL"} 1 150"#,
            ]
        );
        let types: Vec<&str> = text.lines().filter(|l| l.starts_with("# TYPE")).collect();
        assert_eq!(
            types,
            [
                "# TYPE reputation_senderscore gauge",
                "# TYPE reputation_blacklistings gauge",
                "# TYPE reputation_blacklist_listed gauge"
            ]
        );
        assert!(text.ends_with("# EOF\n"));
        let leftovers: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "scratch files removed");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
