//! Reading an exposition: one sample's value, whether the lists are up, and Python's reference
//! parsers.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The value of the one sample line that starts with `series` (name and labels), if any.
pub fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|line| {
        let value = line.strip_prefix(series)?.strip_prefix(' ')?;
        value.parse().ok()
    })
}

/// The value of the one sample line that starts with `series`; panics naming the series and
/// the body when there is none.
pub fn value(body: &str, series: &str) -> f64 {
    sample(body, series).unwrap_or_else(|| panic!("no sample {series} in\n{body}"))
}

/// Whether the body says that the last poll of both lists succeeded.
pub fn up(body: &str) -> bool {
    sample(body, "reputation_up") == Some(1.0)
}

/// A Python with the reference `prometheus_client` parsers: the system one when it has them,
/// otherwise a virtual environment made once under the target directory.
pub fn python_with_parsers() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let has_parsers = |python: &PathBuf| {
                Command::new(python)
                    .args(["-c", "import prometheus_client.openmetrics.parser"])
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            };
            let system = PathBuf::from("python3");
            if has_parsers(&system) {
                return system;
            }
            let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("python-parsers");
            let python = venv.join("bin/python3");
            if !has_parsers(&python) {
                let made = Command::new("python3")
                    .args(["-m", "venv"])
                    .arg(&venv)
                    .status()
                    .expect("python3 is needed for the reference parsers");
                assert!(made.success(), "python3 -m venv failed");
                let installed = Command::new(&python)
                    .args([
                        "-m",
                        "pip",
                        "install",
                        "--quiet",
                        "--disable-pip-version-check",
                        "prometheus_client==0.26.0",
                    ])
                    .status()
                    .expect("pip runs");
                assert!(
                    installed.success(),
                    "installing prometheus_client from PyPI failed"
                );
            }
            python
        })
        .clone()
}

/// Parses `body` with Python's reference parser for `format` (`openmetrics` or `text`).
pub fn reference_parse(body: &str, format: &str) -> serde_json::Value {
    use std::io::Write as _;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support/parse_exposition.py"
    );
    let mut child = Command::new(python_with_parsers())
        .arg(script)
        .arg(format)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the {format} parser refused the exposition: {}\n{body}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}
