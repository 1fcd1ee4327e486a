//! Test support shared by the workspace's test suites, never shipped: the one wait of the tests
//! ([`until`], [`eventually`]), Python's reference exposition parsers ([`reference_parse`]) and
//! a TLS server certificate ([`self_signed_tls`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Longest wait for anything a program under test should do by itself.
pub const DEADLINE: Duration = Duration::from_secs(15);

/// Tries `attempt` (it may await: a request, a handshake) until it gives a value; panics
/// after [`DEADLINE`] with what its last failure saw. The one wait of the tests: no test sleeps
/// for a fixed time instead. On a paused clock the deadline is the clock's.
pub async fn until<T, F: Future<Output = Result<T, String>>>(
    what: &str,
    attempt: impl Fn() -> F,
) -> T {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let seen = match attempt().await {
            Ok(value) => return value,
            Err(seen) => seen,
        };
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}; {seen}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `attempt` answers true; see [`until`].
pub async fn eventually<F: Future<Output = bool>>(what: &str, attempt: impl Fn() -> F) {
    until(what, || async {
        if attempt().await {
            Ok(())
        } else {
            Err("it never did".to_owned())
        }
    })
    .await;
}

/// A Python with the reference `prometheus_client` parsers: the system one when it has them,
/// otherwise a virtual environment made once in `scratch` (the first caller's).
fn python_with_parsers(scratch: &Path) -> PathBuf {
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
            let venv = scratch.join("python-parsers");
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

/// Parses `body` with Python's reference parser for `format` (`openmetrics` or `text`), as JSON;
/// panics with the parser's complaint when it refuses it. `scratch` is where a virtual
/// environment for the parsers may be made (a test's `CARGO_TARGET_TMPDIR`).
pub fn reference_parse(body: &str, format: &str, scratch: &Path) -> serde_json::Value {
    use std::io::Write as _;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/parse_exposition.py");
    let mut child = Command::new(python_with_parsers(scratch))
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

/// A TLS acceptor with a self-signed certificate for `localhost`, and that certificate (PEM): the
/// CA a client must be given to trust it.
pub fn self_signed_tls() -> (tokio_rustls::TlsAcceptor, String) {
    let issued = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let key =
        rustls_pki_types::PrivateKeyDer::try_from(issued.signing_key.serialize_der()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![issued.cert.der().clone()], key)
    .unwrap();
    (
        tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        issued.cert.pem(),
    )
}
