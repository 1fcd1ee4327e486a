//! `serve` with the web configuration file: TLS, mutual TLS, basic auth, headers, the rate
//! limit, and reloading on change, in front of a router that knows nothing of them.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use exporter_web::{Sockets, WebConfigFile};
use reputation_testkit::eventually;
use tokio::sync::oneshot;
use tracing::instrument::WithSubscriber as _;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// What the router behind `serve` answers: a scrape, health, a landing page.
const METRICS: &str = "# TYPE up gauge\nup 1\n";

/// A server on 127.0.0.1 with the web configuration file given, and what it logged.
struct TestServer {
    address: SocketAddr,
    /// Every line this server logged; no other test's server writes here.
    log: Arc<Mutex<Vec<u8>>>,
    _shutdown: oneshot::Sender<()>,
}

impl TestServer {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    fn logs(&self) -> String {
        String::from_utf8_lossy(&self.log.lock().unwrap()).into_owned()
    }

    /// Waits until the log holds `text`; returns the log.
    async fn log_when(&self, text: &str) -> String {
        eventually(&format!("the log line {text:?}"), || async {
            self.logs().contains(text)
        })
        .await;
        self.logs()
    }
}

/// Appends what the server logs to a buffer of the test's.
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A certificate authority made for one test.
struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

/// A certificate and its private key, in PEM.
struct Issued {
    cert: String,
    key: String,
}

impl TestCa {
    fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().unwrap();
        let pem = params.self_signed(&key).unwrap().pem();
        TestCa {
            issuer: Issuer::new(params, key),
            pem,
        }
    }

    /// A server certificate for 127.0.0.1 and localhost.
    fn server(&self) -> Issued {
        self.issue(
            &["127.0.0.1", "localhost"],
            ExtendedKeyUsagePurpose::ServerAuth,
        )
    }

    /// A client certificate, as Prometheus would present.
    fn client(&self) -> Issued {
        self.client_named(&["prometheus"])
    }

    /// A client certificate with these subject alternative names.
    fn client_named(&self, names: &[&str]) -> Issued {
        self.issue(names, ExtendedKeyUsagePurpose::ClientAuth)
    }

    fn issue(&self, names: &[&str], usage: ExtendedKeyUsagePurpose) -> Issued {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Issued {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }
}

/// A directory of its own for one test's files, removed at the end.
struct Dir(PathBuf);

impl Dir {
    fn new(test: &str) -> Dir {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("web-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes `name` atomically (a new file renamed over the old), as secret mounts do.
    fn write(&self, name: &str, content: &str) -> PathBuf {
        let path = self.path(name);
        let temporary = self.path(&format!(".{name}.new"));
        std::fs::write(&temporary, content).unwrap();
        std::fs::rename(&temporary, &path).unwrap();
        path
    }

    /// Writes the server's certificate and key, and `config` as `web.yml`.
    fn serve(&self, server: &Issued, config: &str) -> PathBuf {
        self.write("server.crt", &server.cert);
        self.write("server.key", &server.key);
        self.write("web.yml", config)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const TLS: &str = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n";

async fn spawn_with_web_config(file: &Path) -> TestServer {
    // The plain HTTP clients of the tests use the process' default provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let web = WebConfigFile::load(file).unwrap();
    let sockets = Sockets::bind(&["127.0.0.1:0".parse().unwrap()])
        .await
        .unwrap();
    let address = sockets.addresses().unwrap()[0];
    let log = Arc::new(Mutex::new(Vec::new()));
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || Captured(writer.clone()))
        .with_ansi(false)
        .finish();
    let router = Router::new()
        .route("/", get(|| async { "A landing page.\n" }))
        .route("/metrics", get(|| async { METRICS }))
        .route("/-/healthy", get(|| async { "Healthy.\n" }));
    let (shutdown, stop) = oneshot::channel::<()>();
    let stop = async move {
        let _ = stop.await;
    };
    tokio::spawn(exporter_web::serve(router, web, sockets, stop, 1024).with_subscriber(subscriber));
    TestServer {
        address,
        log,
        _shutdown: shutdown,
    }
}

/// An HTTPS client trusting `ca` only, presenting `identity` when given. It keeps no idle
/// connections, so every request makes a new handshake.
fn https_client(ca: &TestCa, identity: Option<&Issued>) -> reqwest::Client {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.pem.as_bytes()).unwrap())
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match identity {
        Some(issued) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(issued.cert.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(issued.key.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    reqwest::Client::builder()
        .tls_backend_preconfigured(config)
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

fn https(app: &TestServer, path: &str) -> String {
    format!("https://127.0.0.1:{}{path}", app.address.port())
}

#[tokio::test]
async fn metrics_are_served_over_tls_with_a_certificate_from_the_configured_files() {
    let dir = Dir::new("tls");
    let ca = TestCa::new("test CA");
    let app = spawn_with_web_config(&dir.serve(&ca.server(), TLS)).await;
    let client = https_client(&ca, None);

    let response = client.get(https(&app, "/metrics")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.version(), reqwest::Version::HTTP_11);
    assert_eq!(response.text().await.unwrap(), METRICS);

    // Plain HTTP on the TLS port gets no metrics.
    let plain = reqwest::Client::new().get(app.url("/metrics")).send().await;
    assert!(
        plain.is_err() || plain.unwrap().status() == 400,
        "plain HTTP must not be answered with metrics on a TLS port"
    );
    // A client that does not trust the exporter's CA refuses the handshake.
    let stranger = https_client(&TestCa::new("another CA"), None);
    assert!(stranger.get(https(&app, "/metrics")).send().await.is_err());
}

#[tokio::test]
async fn mutual_tls_refuses_a_client_without_a_certificate_from_the_client_ca() {
    let dir = Dir::new("mtls");
    let ca = TestCa::new("server CA");
    let clients = TestCa::new("client CA");
    dir.write("clients.crt", &clients.pem);
    let config = format!(
        "{TLS}  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: clients.crt\n"
    );
    let app = spawn_with_web_config(&dir.serve(&ca.server(), &config)).await;

    let trusted = https_client(&ca, Some(&clients.client()));
    let response = trusted.get(https(&app, "/-/healthy")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "Healthy.\n");

    let anonymous = https_client(&ca, None);
    let refused = anonymous.get(https(&app, "/-/healthy")).send().await;
    assert!(
        refused.is_err(),
        "a client without a certificate got {refused:?}"
    );

    let outsider = https_client(&ca, Some(&TestCa::new("unknown CA").client()));
    let refused = outsider.get(https(&app, "/-/healthy")).send().await;
    assert!(
        refused.is_err(),
        "a certificate from another CA got {refused:?}"
    );
}

#[tokio::test]
async fn client_allowed_sans_refuses_a_verified_client_whose_certificate_names_none_of_them() {
    let dir = Dir::new("allowed-sans");
    let ca = TestCa::new("server CA");
    let clients = TestCa::new("client CA");
    dir.write("clients.crt", &clients.pem);
    let config = format!(
        "{TLS}  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: clients.crt\n  \
         client_allowed_sans: [prometheus-0.monitoring.svc, 10.0.0.9]\n"
    );
    let app = spawn_with_web_config(&dir.serve(&ca.server(), &config)).await;

    // Both certificates come from the client CA; only the SANs differ.
    for names in [
        &["prometheus-0.monitoring.svc"][..],
        &["other.example", "10.0.0.9"][..],
    ] {
        let allowed = https_client(&ca, Some(&clients.client_named(names)));
        let response = allowed.get(https(&app, "/-/healthy")).send().await;
        let status = response.map(|r| r.status().as_u16());
        assert_eq!(status.ok(), Some(200), "{names:?} is allowed");
    }
    let intruder = https_client(&ca, Some(&clients.client_named(&["grafana.example"])));
    let refused = intruder.get(https(&app, "/-/healthy")).send().await;
    assert!(
        refused.is_err(),
        "a certificate without an allowed SAN got {refused:?}"
    );
    eventually("the refusal logged with the SANs found", || async {
        app.logs().contains(
            "the client certificate has none of client_allowed_sans; its SANs: [grafana.example]",
        )
    })
    .await;
}

#[tokio::test]
async fn basic_auth_answers_401_without_valid_credentials_and_200_with_them() {
    let dir = Dir::new("basic-auth");
    let hash = bcrypt::hash("s3cret-Pa55", 4).unwrap();
    let config = format!(
        "basic_auth_users:\n  prometheus: {hash}\nhttp_server_config:\n  headers:\n    \
         X-Frame-Options: deny\n"
    );
    let app = spawn_with_web_config(&dir.write("web.yml", &config)).await;
    let http = reqwest::Client::new();

    let anonymous = http.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    assert_eq!(anonymous.headers()["www-authenticate"], "Basic");
    assert_eq!(anonymous.headers()["x-frame-options"], "deny");

    for (user, password) in [("prometheus", "wrong"), ("nobody", "s3cret-Pa55")] {
        let refused = http
            .get(app.url("/metrics"))
            .basic_auth(user, Some(password))
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 401, "{user}:{password} was let in");
    }

    // Twice: the second answer comes from the verified-credentials cache.
    for _ in 0..2 {
        let allowed = http
            .get(app.url("/metrics"))
            .basic_auth("prometheus", Some("s3cret-Pa55"))
            .send()
            .await
            .unwrap();
        assert_eq!(allowed.status(), 200);
        assert_eq!(allowed.headers()["x-frame-options"], "deny");
        assert_eq!(allowed.text().await.unwrap(), METRICS);
    }
    // Every path is protected, not only the metrics.
    let landing = http.get(app.url("/")).send().await.unwrap();
    assert_eq!(landing.status(), 401);

    assert!(
        !app.logs().contains("s3cret-Pa55"),
        "a password reached the logs"
    );
}

#[tokio::test]
async fn rate_limit_answers_429_beyond_the_burst_before_basic_auth_and_follows_the_file() {
    let dir = Dir::new("rate-limit");
    let hash = bcrypt::hash("s3cret-Pa55", 4).unwrap();
    let limited = |burst: u32| {
        format!(
            "basic_auth_users:\n  prometheus: {hash}\nhttp_server_config:\n  headers:\n    \
             X-Frame-Options: deny\nrate_limit:\n  interval: 1h\n  burst: {burst}\n"
        )
    };
    let app = spawn_with_web_config(&dir.write("web.yml", &limited(3))).await;
    let http = reqwest::Client::new();
    let get = |credentials: bool| {
        let request = http.get(app.url("/metrics"));
        let request = match credentials {
            true => request.basic_auth("prometheus", Some("s3cret-Pa55")),
            false => request,
        };
        async move { request.send().await.unwrap() }
    };

    // A burst of six: the first three are answered as the credentials deserve (a request
    // without them takes a token too), the rest get 429 whatever they carry.
    let mut statuses = Vec::new();
    for credentials in [true, false, true, true, false, true] {
        statuses.push(get(credentials).await.status().as_u16());
    }
    assert_eq!(statuses, [200, 401, 200, 429, 429, 429]);
    let refused = get(true).await;
    assert_eq!(refused.status(), 429);
    assert_eq!(
        refused.headers()["retry-after"],
        "3600",
        "one token an hour"
    );
    assert_eq!(refused.headers()["x-frame-options"], "deny");
    assert!(refused.headers().get("www-authenticate").is_none());
    assert_eq!(refused.text().await.unwrap(), "Too Many Requests\n");

    // A changed limit applies without a restart, with a full bucket.
    dir.write("web.yml", &limited(2));
    eventually("the new limit's burst", || async {
        get(true).await.status() == 200
    })
    .await;
    assert_eq!(get(true).await.status(), 200);
    assert_eq!(get(true).await.status(), 429);
    assert_eq!(get(true).await.status(), 429);
}

#[tokio::test]
async fn a_rotated_certificate_serves_the_next_connection_without_a_restart() {
    let dir = Dir::new("rotation");
    let old_ca = TestCa::new("old CA");
    let app = spawn_with_web_config(&dir.serve(&old_ca.server(), TLS)).await;
    let trusts_old = https_client(&old_ca, None);
    let response = trusts_old
        .get(https(&app, "/-/healthy"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    let new_ca = TestCa::new("new CA");
    let renewed = new_ca.server();
    dir.write("server.crt", &renewed.cert);
    dir.write("server.key", &renewed.key);

    let trusts_new = https_client(&new_ca, None);
    eventually("a handshake with the renewed certificate", || async {
        trusts_new
            .get(https(&app, "/-/healthy"))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200)
    })
    .await;
    assert!(
        trusts_old
            .get(https(&app, "/-/healthy"))
            .send()
            .await
            .is_err(),
        "the old certificate is still served"
    );
    app.log_when("web configuration file reloaded").await;
}

#[tokio::test]
async fn an_invalid_change_keeps_the_last_good_configuration_and_says_why() {
    let dir = Dir::new("invalid-change");
    let first = bcrypt::hash("first-password", 4).unwrap();
    let file = dir.write("web.yml", &format!("basic_auth_users:\n  prom: {first}\n"));
    let app = spawn_with_web_config(&file).await;
    let http = reqwest::Client::new();
    let status = |password: &'static str| {
        let request = http
            .get(app.url("/-/healthy"))
            .basic_auth("prom", Some(password));
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(status("first-password").await, 200);

    let second = bcrypt::hash("second-password", 4).unwrap();
    dir.write("web.yml", &format!("basic_auth_users:\n  prom: {second}\n"));
    eventually("the second password to be accepted", || async {
        status("second-password").await == 200
    })
    .await;
    assert_eq!(status("first-password").await, 401);

    dir.write("web.yml", "basic_auth_users:\n  prom: not-a-bcrypt-hash\n");
    let logs = app
        .log_when("basic_auth_users.prom: not a bcrypt hash")
        .await;
    assert!(logs.contains("keeping the last good configuration"));
    assert_eq!(status("second-password").await, 200);
    assert_eq!(status("first-password").await, 401);
}

#[test]
fn the_example_web_config_file_is_valid() {
    let dir = Dir::new("example");
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/web-config.yml"
    ))
    .unwrap();
    let file = dir.serve(&TestCa::new("example CA").server(), &example);
    let web = WebConfigFile::load(&file).unwrap();
    let access = web.current();
    assert!(access.tls.is_some());
    assert!(!access.requires_auth());
    let names: Vec<_> = access.headers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["strict-transport-security", "x-content-type-options"]
    );
    assert!(access.rate_limit.is_none());

    // The commented mutual TLS, allowed SANs and rate limit lines are valid as written.
    let clients = TestCa::new("client CA");
    dir.write("prometheus-ca.crt", &clients.pem);
    let mut uncommented = 0;
    let with_options: String = example
        .lines()
        .map(|line| {
            let option = [
                "  # client_",
                "# rate_limit:",
                "#   interval:",
                "#   burst:",
            ]
            .iter()
            .any(|start| line.starts_with(start));
            uncommented += usize::from(option);
            match option {
                true => format!("{}\n", line.replacen("# ", "", 1)),
                false => format!("{line}\n"),
            }
        })
        .collect();
    assert_eq!(uncommented, 6, "{with_options}");
    let file = dir.write("web.yml", &with_options);
    let web = WebConfigFile::load(&file).unwrap();
    assert!(web.current().rate_limit.is_some());
}
