//! Progress on stderr while the reports arrive: a bar redrawn in place on a terminal, a line
//! every few seconds otherwise (a log file, CI).

use std::io::{IsTerminal as _, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How often the bar is redrawn on a terminal.
const REDRAW: Duration = Duration::from_millis(200);
/// How often a progress line is written elsewhere.
const LINE_EVERY: Duration = Duration::from_secs(5);
/// Width of the bar, in characters.
const WIDTH: usize = 30;

/// More to say on each line, after the assets.
pub(crate) type Detail = Box<dyn Fn() -> String + Send>;

/// Counts the assets done and shows it until dropped.
pub(crate) struct Progress {
    done: Arc<AtomicUsize>,
    ticker: tokio::task::JoinSet<()>,
    terminal: bool,
}

impl Progress {
    /// Starts showing progress towards `total` assets, and `detail` after it.
    pub(crate) fn start(total: usize, detail: Option<Detail>) -> Progress {
        let done = Arc::new(AtomicUsize::new(0));
        let terminal = std::io::stderr().is_terminal();
        let counted = done.clone();
        let mut ticker = tokio::task::JoinSet::new();
        exporter_web::task::spawn_into(&mut ticker, async move {
            let started = Instant::now();
            let mut ticks = tokio::time::interval(if terminal { REDRAW } else { LINE_EVERY });
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let mut line = describe(counted.load(Ordering::Relaxed), total, started.elapsed());
                if let Some(detail) = &detail {
                    line.push_str("; ");
                    line.push_str(&detail());
                }
                let mut stderr = std::io::stderr().lock();
                let _ = if terminal {
                    write!(stderr, "\r{line}\x1b[K")
                } else {
                    writeln!(stderr, "backfill: {line}")
                };
            }
        });
        Progress {
            done,
            ticker,
            terminal,
        }
    }

    /// One more asset done, written or skipped.
    pub(crate) fn advance(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.ticker.abort_all();
        if self.terminal {
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// `[#####.....] 123/1000 assets, 45.2/s, 19 s left`.
fn describe(done: usize, total: usize, elapsed: Duration) -> String {
    let filled = (done * WIDTH)
        .checked_div(total)
        .unwrap_or(WIDTH)
        .min(WIDTH);
    let rate = done as f64 / elapsed.as_secs_f64().max(0.001);
    let left = if done == 0 || rate <= 0.0 {
        "time left unknown".to_owned()
    } else {
        format!("{:.0} s left", total.saturating_sub(done) as f64 / rate)
    };
    format!(
        "[{}{}] {done}/{total} assets, {rate:.1}/s, {left}",
        "#".repeat(filled),
        ".".repeat(WIDTH - filled)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_shows_done_total_rate_and_time_left() {
        assert_eq!(
            describe(25, 100, Duration::from_secs(5)),
            "[#######.......................] 25/100 assets, 5.0/s, 15 s left"
        );
        assert_eq!(
            describe(0, 10, Duration::from_secs(1)),
            "[..............................] 0/10 assets, 0.0/s, time left unknown"
        );
    }
}
