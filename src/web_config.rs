//! The web configuration file (`--web.config.file`), in the format of Prometheus'
//! exporter-toolkit: TLS and mutual TLS through rustls, basic auth with bcrypt hashes, and extra
//! response headers.
//!
//! The file and the files it names are watched: when one changes, the whole set is read and
//! validated again, so certificates rotate without a restart. A change that does not validate
//! keeps the last good configuration and logs why.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::http::{HeaderName, HeaderValue};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::version::{TLS12, TLS13};
use rustls::{
    DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig, SignatureScheme,
    SupportedProtocolVersion,
};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use serde::Deserialize;

use crate::config::FileStamp;

/// How often the files are checked for changes, at most.
pub const RECHECK: Duration = Duration::from_secs(1);

/// Headers the file may add, with the values allowed when only some are (exporter-toolkit's
/// list, kept the same so one file serves every exporter).
const EXTRA_HEADERS: [(&str, &[&str]); 5] = [
    ("Strict-Transport-Security", &[]),
    ("X-Content-Type-Options", &["nosniff"]),
    ("X-Frame-Options", &["deny", "sameorigin"]),
    ("X-XSS-Protection", &[]),
    ("Content-Security-Policy", &[]),
];

/// The file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FileSettings {
    tls_server_config: Option<TlsSettings>,
    http_server_config: Option<HttpSettings>,
    basic_auth_users: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct TlsSettings {
    cert_file: Option<String>,
    key_file: Option<String>,
    cert: Option<String>,
    key: Option<String>,
    client_auth_type: Option<String>,
    client_ca_file: Option<String>,
    client_ca: Option<String>,
    client_allowed_sans: Option<Vec<String>>,
    cipher_suites: Option<Vec<String>>,
    curve_preferences: Option<Vec<String>>,
    min_version: Option<String>,
    max_version: Option<String>,
    prefer_server_cipher_suites: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct HttpSettings {
    /// Accepted for compatibility; the exporter speaks HTTP/1.1 only.
    #[allow(dead_code)]
    http2: Option<bool>,
    headers: Option<BTreeMap<String, String>>,
}

/// One valid version of the file: what the server enforces.
pub struct Access {
    /// The TLS configuration, when the file turns TLS on.
    pub tls: Option<Arc<ServerConfig>>,
    /// User name -> bcrypt hash; empty when basic auth is off.
    users: BTreeMap<String, String>,
    /// Headers added to every response.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Passwords that matched their user's hash already, so bcrypt runs once per user and
    /// password, not once per request. Dropped with this version when the file changes.
    verified: Mutex<HashMap<String, Vec<u8>>>,
    /// See [`Access::decoy`].
    decoy: OnceLock<String>,
    /// The files this version was read from: the configuration file and those it names.
    files: Vec<PathBuf>,
}

impl Access {
    /// No TLS, no authentication, no extra headers.
    fn open() -> Access {
        Access {
            tls: None,
            users: BTreeMap::new(),
            headers: Vec::new(),
            verified: Mutex::new(HashMap::new()),
            decoy: OnceLock::new(),
            files: Vec::new(),
        }
    }

    /// Whether requests must carry basic auth credentials.
    pub fn requires_auth(&self) -> bool {
        !self.users.is_empty()
    }

    /// Whether this user and password matched before (compared in constant time).
    fn verified_before(&self, user: &str, password: &[u8]) -> bool {
        use subtle::ConstantTimeEq as _;
        let verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
        verified
            .get(user)
            .is_some_and(|known| bool::from(known.as_slice().ct_eq(password)))
    }

    /// A hash of a random password at the highest cost configured: what an unknown user is
    /// checked against.
    fn decoy(&self) -> &str {
        self.decoy.get_or_init(|| {
            let cost = self
                .users
                .values()
                .filter_map(|hash| hash.parse::<bcrypt::HashParts>().ok())
                .map(|parts| parts.get_cost())
                .max()
                .unwrap_or(bcrypt::DEFAULT_COST);
            let password = fastrand::u64(..).to_string();
            bcrypt::hash(password, cost).unwrap_or_default()
        })
    }

    /// Runs bcrypt for `user` and `password`. An unknown user costs one bcrypt too, so timing
    /// does not tell which users exist.
    fn check(&self, user: &str, password: &[u8]) -> bool {
        let Some(hash) = self.users.get(user) else {
            let _ = bcrypt::verify(password, self.decoy());
            return false;
        };
        let ok = bcrypt::verify(password, hash).unwrap_or(false);
        if ok {
            self.verified
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(user.to_owned(), password.to_vec());
        }
        ok
    }
}

impl fmt::Debug for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Access")
            .field("tls", &self.tls.is_some())
            .field("users", &self.users.len())
            .field("headers", &self.headers.len())
            .finish_non_exhaustive()
    }
}

/// The web configuration file, watched: [`WebConfigFile::current`] is its last good version.
pub struct WebConfigFile {
    path: Option<PathBuf>,
    open: Arc<Access>,
    watched: Mutex<Watched>,
    /// One bcrypt check at a time: it is slow on purpose, and clients without credentials
    /// must not be able to take every core.
    bcrypt_turn: tokio::sync::Semaphore,
}

struct Watched {
    access: Arc<Access>,
    /// Each file of `access` and its stamp when it was read.
    stamps: Vec<(PathBuf, Option<FileStamp>)>,
    checked: Instant,
}

/// The stamps of `files`, taken from `known` (stamped before a read) where it has them.
fn stamp(
    files: &[PathBuf],
    known: &[(PathBuf, Option<FileStamp>)],
) -> Vec<(PathBuf, Option<FileStamp>)> {
    files
        .iter()
        .map(|file| {
            known
                .iter()
                .find(|(path, _)| path == file)
                .cloned()
                .unwrap_or_else(|| (file.clone(), FileStamp::of(file)))
        })
        .collect()
}

impl fmt::Debug for WebConfigFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebConfigFile")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl WebConfigFile {
    /// No file: plain HTTP, no authentication.
    pub fn none() -> Arc<WebConfigFile> {
        let open = Arc::new(Access::open());
        Arc::new(WebConfigFile {
            path: None,
            watched: Mutex::new(Watched {
                access: open.clone(),
                stamps: Vec::new(),
                checked: Instant::now(),
            }),
            open,
            bcrypt_turn: tokio::sync::Semaphore::new(1),
        })
    }

    /// Reads and validates the file at `path` and every file it names.
    pub fn load(path: &Path) -> Result<Arc<WebConfigFile>, String> {
        let before = stamp(&[path.to_owned()], &[]);
        let access = read(path)?;
        let stamps = stamp(&access.files, &before);
        Ok(Arc::new(WebConfigFile {
            path: Some(path.to_owned()),
            open: Arc::new(Access::open()),
            watched: Mutex::new(Watched {
                access: Arc::new(access),
                stamps,
                checked: Instant::now(),
            }),
            bcrypt_turn: tokio::sync::Semaphore::new(1),
        }))
    }

    /// Whether `user` and `password` are valid for `access`: at once for a pair that matched
    /// before, otherwise by bcrypt on a blocking thread.
    pub async fn verify(&self, access: &Arc<Access>, user: String, password: Vec<u8>) -> bool {
        if access.verified_before(&user, &password) {
            return true;
        }
        let Ok(_turn) = self.bcrypt_turn.acquire().await else {
            return false;
        };
        let access = access.clone();
        tokio::task::spawn_blocking(move || access.check(&user, &password))
            .await
            .unwrap_or(false)
    }

    /// The file's path, if there is one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The last good version of the file, read again first if one of its files changed (checked
    /// at most once a second).
    pub fn current(&self) -> Arc<Access> {
        let Some(path) = &self.path else {
            return self.open.clone();
        };
        let mut watched = self.watched.lock().unwrap_or_else(|e| e.into_inner());
        if watched.checked.elapsed() < RECHECK {
            return watched.access.clone();
        }
        watched.checked = Instant::now();
        let before = stamp(&watched.access.files, &[]);
        if before == watched.stamps {
            return watched.access.clone();
        }
        match read(path) {
            Ok(access) if access.tls.is_some() != watched.access.tls.is_some() => {
                tracing::warn!(
                    file = %path.display(),
                    "the web configuration file changed between TLS and plain HTTP, which needs \
                     a restart; keeping the last good configuration"
                );
                watched.stamps = before;
            }
            Ok(access) => {
                tracing::info!(file = %path.display(), "web configuration file reloaded");
                watched.stamps = stamp(&access.files, &before);
                watched.access = Arc::new(access);
            }
            Err(error) => {
                tracing::warn!(
                    file = %path.display(),
                    error = %error,
                    "the web configuration file changed but is invalid; keeping the last good \
                     configuration"
                );
                watched.stamps = before;
            }
        }
        watched.access.clone()
    }
}

/// Reads and validates one version of the file.
fn read(path: &Path) -> Result<Access, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let settings: FileSettings = if text.trim().is_empty() {
        FileSettings::default()
    } else {
        // The first line says where and what; the rest is a source snippet.
        serde_saphyr::from_str(&text).map_err(|e| {
            let message = e.to_string();
            let first = message.lines().next().unwrap_or_default();
            first.strip_prefix("error: ").unwrap_or(first).to_owned()
        })?
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut files = vec![path.to_owned()];
    let tls = match settings.tls_server_config {
        Some(tls) if tls.is_enabled() => Some(Arc::new(tls_config(tls, dir, &mut files)?)),
        _ => None,
    };
    let users = settings.basic_auth_users.unwrap_or_default();
    for (user, hash) in &users {
        hash.parse::<bcrypt::HashParts>().map_err(|e| {
            format!("basic_auth_users.{user}: not a bcrypt hash ({e}); make one with `htpasswd -nBC 10 \"\" | tr -d ':\\n'`")
        })?;
    }
    let headers = headers(
        settings
            .http_server_config
            .and_then(|h| h.headers)
            .unwrap_or_default(),
    )?;
    Ok(Access {
        tls,
        users,
        headers,
        verified: Mutex::new(HashMap::new()),
        decoy: OnceLock::new(),
        files,
    })
}

fn headers(configured: BTreeMap<String, String>) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    let mut headers = Vec::with_capacity(configured.len());
    for (name, value) in configured {
        let key = format!("http_server_config.headers.{name}");
        let Some((_, allowed)) = EXTRA_HEADERS
            .iter()
            .find(|(known, _)| known.eq_ignore_ascii_case(&name))
        else {
            let names: Vec<_> = EXTRA_HEADERS.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "{key}: this header cannot be configured; one of {}",
                names.join(", ")
            ));
        };
        if !allowed.is_empty() && !allowed.contains(&value.as_str()) {
            return Err(format!(
                "{key}: `{value}` is not allowed; one of {}",
                allowed.join(", ")
            ));
        }
        let header_name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("{key}: not a valid header name"))?;
        let header_value = HeaderValue::from_str(&value)
            .map_err(|_| format!("{key}: `{value}` cannot be sent in a header"))?;
        headers.push((header_name, header_value));
    }
    Ok(headers)
}

impl TlsSettings {
    /// Whether any TLS setting is given (exporter-toolkit's rule for turning TLS on).
    fn is_enabled(&self) -> bool {
        [
            &self.cert_file,
            &self.cert,
            &self.key_file,
            &self.key,
            &self.client_ca_file,
            &self.client_ca,
            &self.client_auth_type,
        ]
        .iter()
        .any(|v| v.as_deref().is_some_and(|v| !v.is_empty()))
    }
}

/// What a client must show, as `client_auth_type` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientAuth {
    None,
    Request,
    RequireAny,
    VerifyIfGiven,
    RequireAndVerify,
}

impl ClientAuth {
    fn parse(text: &str) -> Result<ClientAuth, String> {
        Ok(match text {
            "" | "NoClientCert" => ClientAuth::None,
            "RequestClientCert" => ClientAuth::Request,
            "RequireAnyClientCert" | "RequireClientCert" => ClientAuth::RequireAny,
            "VerifyClientCertIfGiven" => ClientAuth::VerifyIfGiven,
            "RequireAndVerifyClientCert" => ClientAuth::RequireAndVerify,
            other => {
                return Err(format!(
                    "tls_server_config.client_auth_type: `{other}` is not one of NoClientCert, \
                     RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, \
                     RequireAndVerifyClientCert"
                ));
            }
        })
    }
}

fn tls_config(
    tls: TlsSettings,
    dir: &Path,
    files: &mut Vec<PathBuf>,
) -> Result<ServerConfig, String> {
    if tls.client_allowed_sans.is_some() {
        return Err(
            "tls_server_config.client_allowed_sans is not supported; restrict clients \
                    with a dedicated client_ca_file instead"
                .into(),
        );
    }
    let certs = pem_source("cert", tls.cert_file, tls.cert, dir, files)?
        .ok_or("tls_server_config: one of cert_file and cert is required")?;
    let key = pem_source("key", tls.key_file, tls.key, dir, files)?
        .ok_or("tls_server_config: one of key_file and key is required")?;
    let chain = certificates(&certs)?;
    let key = PrivateKeyDer::from_pem_slice(&key.bytes).map_err(|e| {
        format!(
            "tls_server_config.{}: no usable private key in it ({e})",
            key.name
        )
    })?;
    let client_auth = ClientAuth::parse(tls.client_auth_type.as_deref().unwrap_or(""))?;
    let client_ca = pem_source("client_ca", tls.client_ca_file, tls.client_ca, dir, files)?;

    let mut provider = rustls::crypto::ring::default_provider();
    if let Some(names) = &tls.cipher_suites {
        provider.cipher_suites = cipher_suites(&provider, names)?;
    }
    if let Some(names) = &tls.curve_preferences {
        provider.kx_groups = curves(&provider, names)?;
    }
    let provider = Arc::new(provider);
    let versions = versions(tls.min_version.as_deref(), tls.max_version.as_deref())?;

    let verifier: Arc<dyn ClientCertVerifier> = match (client_auth, client_ca) {
        (ClientAuth::None, Some(_)) => {
            return Err(
                "tls_server_config: a client CA is configured but client_auth_type is \
                        NoClientCert; set it to RequireAndVerifyClientCert"
                    .into(),
            );
        }
        (ClientAuth::None, None) => Arc::new(rustls::server::NoClientAuth),
        (ClientAuth::Request | ClientAuth::RequireAny, _) => Arc::new(AnyClientCert {
            mandatory: client_auth == ClientAuth::RequireAny,
            algorithms: provider.signature_verification_algorithms,
        }),
        (ClientAuth::VerifyIfGiven | ClientAuth::RequireAndVerify, None) => {
            return Err(format!(
                "tls_server_config: client_auth_type {} needs client_ca_file or client_ca",
                tls.client_auth_type.unwrap_or_default()
            ));
        }
        (ClientAuth::VerifyIfGiven | ClientAuth::RequireAndVerify, Some(ca)) => {
            let mut roots = RootCertStore::empty();
            for cert in certificates(&ca)? {
                roots
                    .add(cert)
                    .map_err(|e| format!("tls_server_config.{}: {e}", ca.name))?;
            }
            let builder =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone());
            let builder = if client_auth == ClientAuth::VerifyIfGiven {
                builder.allow_unauthenticated()
            } else {
                builder
            };
            builder
                .build()
                .map_err(|e| format!("tls_server_config.{}: {e}", ca.name))?
        }
    };

    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| format!("tls_server_config: {e}"))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| {
            format!("tls_server_config: the certificate and key cannot be used together: {e}")
        })?;
    config.ignore_client_order = tls.prefer_server_cipher_suites.unwrap_or(true);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// PEM text from a file or inline, with the key name for messages.
struct Pem {
    name: String,
    bytes: Vec<u8>,
}

/// Reads `<name>_file` (relative to the configuration file's directory) or takes `<name>`
/// inline; the file wins, as in exporter-toolkit.
fn pem_source(
    name: &str,
    file: Option<String>,
    inline: Option<String>,
    dir: &Path,
    files: &mut Vec<PathBuf>,
) -> Result<Option<Pem>, String> {
    match (
        file.filter(|f| !f.is_empty()),
        inline.filter(|i| !i.is_empty()),
    ) {
        (Some(file), _) => {
            let path = dir.join(&file);
            let bytes = std::fs::read(&path).map_err(|e| {
                format!(
                    "tls_server_config.{name}_file: cannot read {}: {e}",
                    path.display()
                )
            })?;
            files.push(path);
            Ok(Some(Pem {
                name: format!("{name}_file"),
                bytes,
            }))
        }
        (None, Some(text)) => Ok(Some(Pem {
            name: name.to_owned(),
            bytes: text.into_bytes(),
        })),
        (None, None) => Ok(None),
    }
}

fn certificates(pem: &Pem) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(&pem.bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("tls_server_config.{}: not PEM certificates ({e})", pem.name))?;
    if certs.is_empty() {
        return Err(format!(
            "tls_server_config.{}: holds no PEM certificate",
            pem.name
        ));
    }
    Ok(certs)
}

fn versions(
    min: Option<&str>,
    max: Option<&str>,
) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    let rank = |key: &str, text: &str| -> Result<u8, String> {
        match text {
            "TLS12" => Ok(2),
            "TLS13" => Ok(3),
            "TLS10" | "TLS11" => Err(format!(
                "tls_server_config.{key}: {text} is not supported (rustls speaks TLS12 and TLS13)"
            )),
            other => Err(format!(
                "tls_server_config.{key}: `{other}` is not one of TLS12, TLS13"
            )),
        }
    };
    let min = min.map_or(Ok(2), |v| rank("min_version", v))?;
    let max = max.map_or(Ok(3), |v| rank("max_version", v))?;
    if min > max {
        return Err("tls_server_config: min_version is above max_version".into());
    }
    Ok([(2, &TLS12), (3, &TLS13)]
        .into_iter()
        .filter(|(rank, _)| (min..=max).contains(rank))
        .map(|(_, version)| version)
        .collect())
}

/// TLS 1.2 suites in the listed order; TLS 1.3 suites are always on (as in Go, whose names the
/// file uses).
fn cipher_suites(
    provider: &CryptoProvider,
    names: &[String],
) -> Result<Vec<rustls::SupportedCipherSuite>, String> {
    const TLS13_NAMES: [&str; 3] = [
        "TLS_AES_128_GCM_SHA256",
        "TLS_AES_256_GCM_SHA384",
        "TLS_CHACHA20_POLY1305_SHA256",
    ];
    let tls12: Vec<_> = provider
        .cipher_suites
        .iter()
        .filter(|s| s.version() == &TLS12)
        .collect();
    let mut chosen: Vec<rustls::SupportedCipherSuite> = provider
        .cipher_suites
        .iter()
        .filter(|s| s.version() == &TLS13)
        .copied()
        .collect();
    for name in names {
        if TLS13_NAMES.contains(&name.as_str()) {
            continue;
        }
        // Go also knows the ChaCha20 suites without the `_SHA256` suffix.
        let full = if name.ends_with("CHACHA20_POLY1305") {
            format!("{name}_SHA256")
        } else {
            name.clone()
        };
        let suite = tls12
            .iter()
            .find(|s| format!("{:?}", s.suite()) == full)
            .ok_or_else(|| {
                let known: Vec<_> = tls12.iter().map(|s| format!("{:?}", s.suite())).collect();
                format!(
                    "tls_server_config.cipher_suites: `{name}` is not supported; the TLS 1.2 \
                     suites are {}",
                    known.join(", ")
                )
            })?;
        if !chosen.iter().any(|s| s.suite() == suite.suite()) {
            chosen.push(**suite);
        }
    }
    Ok(chosen)
}

fn curves(
    provider: &CryptoProvider,
    names: &[String],
) -> Result<Vec<&'static dyn rustls::crypto::SupportedKxGroup>, String> {
    use rustls::NamedGroup;
    let mut chosen = Vec::new();
    for name in names {
        let group = match name.as_str() {
            "X25519" => NamedGroup::X25519,
            "CurveP256" => NamedGroup::secp256r1,
            "CurveP384" => NamedGroup::secp384r1,
            other => {
                return Err(format!(
                    "tls_server_config.curve_preferences: `{other}` is not supported; one of \
                     X25519, CurveP256, CurveP384"
                ));
            }
        };
        if let Some(kx) = provider.kx_groups.iter().find(|kx| kx.name() == group) {
            chosen.push(*kx);
        }
    }
    Ok(chosen)
}

/// `RequestClientCert` and `RequireAnyClientCert`: a client certificate is asked for (and
/// required by the second) and its signature checked, but it need not chain to a known CA.
#[derive(Debug)]
struct AnyClientCert {
    mandatory: bool,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for AnyClientCert {
    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory with a self-signed server certificate and key in it.
    struct Files(PathBuf);

    impl Files {
        fn new(name: &str) -> Files {
            let dir = std::env::temp_dir().join(format!(
                "reputation-exporter-web-{name}-{}",
                std::process::id()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let issued = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
            std::fs::write(dir.join("server.crt"), issued.cert.pem()).unwrap();
            std::fs::write(dir.join("server.key"), issued.signing_key.serialize_pem()).unwrap();
            std::fs::write(dir.join("ca.crt"), issued.cert.pem()).unwrap();
            Files(dir)
        }

        /// Reads `config` as the web configuration file of this directory.
        fn read(&self, config: &str) -> Result<Access, String> {
            let path = self.0.join("web.yml");
            std::fs::write(&path, config).unwrap();
            read(&path)
        }
    }

    impl Drop for Files {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const TLS: &str = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n";

    #[test]
    fn an_empty_file_serves_plain_http_without_authentication() {
        let files = Files::new("empty");
        let access = files.read("").unwrap();
        assert!(access.tls.is_none());
        assert!(!access.requires_auth());
        assert!(access.headers.is_empty());
        assert_eq!(access.files, vec![files.0.join("web.yml")]);
    }

    #[test]
    fn certificate_paths_are_relative_to_the_file_and_watched() {
        let files = Files::new("relative");
        let access = files.read(TLS).unwrap();
        let tls = access.tls.expect("TLS is on");
        assert!(
            tls.ignore_client_order,
            "prefer_server_cipher_suites defaults to true"
        );
        assert_eq!(tls.alpn_protocols, vec![b"http/1.1".to_vec()]);
        assert_eq!(
            access.files,
            vec![
                files.0.join("web.yml"),
                files.0.join("server.crt"),
                files.0.join("server.key")
            ]
        );
    }

    #[test]
    fn inline_certificate_and_key_are_accepted() {
        let files = Files::new("inline");
        let indent = |pem: String| pem.replace('\n', "\n    ");
        let cert = std::fs::read_to_string(files.0.join("server.crt")).unwrap();
        let key = std::fs::read_to_string(files.0.join("server.key")).unwrap();
        let config = format!(
            "tls_server_config:\n  cert: |\n    {}\n  key: |\n    {}\n",
            indent(cert),
            indent(key)
        );
        assert!(files.read(&config).unwrap().tls.is_some());
    }

    #[test]
    fn tls_versions_outside_rustls_are_refused_by_name() {
        assert_eq!(versions(None, None).unwrap(), vec![&TLS12, &TLS13]);
        assert_eq!(versions(Some("TLS13"), None).unwrap(), vec![&TLS13]);
        assert_eq!(versions(None, Some("TLS12")).unwrap(), vec![&TLS12]);
        let error = versions(Some("TLS10"), None).unwrap_err();
        assert!(
            error.contains("min_version: TLS10 is not supported"),
            "{error}"
        );
        let error = versions(Some("TLS13"), Some("TLS12")).unwrap_err();
        assert!(
            error.contains("min_version is above max_version"),
            "{error}"
        );
        assert!(versions(Some("SSL3"), None).unwrap_err().contains("`SSL3`"));
    }

    #[test]
    fn cipher_suites_keep_tls13_and_the_listed_tls12_suites_in_order() {
        let provider = rustls::crypto::ring::default_provider();
        let names = [
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305".to_owned(),
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256".to_owned(),
            "TLS_AES_128_GCM_SHA256".to_owned(),
        ];
        let chosen: Vec<String> = cipher_suites(&provider, &names)
            .unwrap()
            .iter()
            .filter(|s| s.version() == &TLS12)
            .map(|s| format!("{:?}", s.suite()))
            .collect();
        assert_eq!(
            chosen,
            [
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
            ]
        );
        let error =
            cipher_suites(&provider, &["TLS_RSA_WITH_AES_128_CBC_SHA".to_owned()]).unwrap_err();
        assert!(
            error.contains("`TLS_RSA_WITH_AES_128_CBC_SHA` is not supported"),
            "{error}"
        );
    }

    #[test]
    fn curves_map_from_go_names_and_unknown_ones_are_refused() {
        let provider = rustls::crypto::ring::default_provider();
        let chosen = curves(&provider, &["CurveP256".to_owned(), "X25519".to_owned()]).unwrap();
        let names: Vec<_> = chosen.iter().map(|kx| kx.name()).collect();
        assert_eq!(
            names,
            [rustls::NamedGroup::secp256r1, rustls::NamedGroup::X25519]
        );
        assert!(curves(&provider, &["CurveP521".to_owned()]).is_err());
    }

    #[test]
    fn client_certificate_rules_follow_exporter_toolkit() {
        let files = Files::new("client-auth");
        let with = |extra: &str| files.read(&format!("{TLS}{extra}"));
        let error = with("  client_ca_file: ca.crt\n").unwrap_err();
        assert!(
            error.contains("client_auth_type is NoClientCert"),
            "{error}"
        );
        let error = with("  client_auth_type: RequireAndVerifyClientCert\n").unwrap_err();
        assert!(
            error.contains("needs client_ca_file or client_ca"),
            "{error}"
        );
        let error = with("  client_auth_type: Sometimes\n").unwrap_err();
        assert!(error.contains("`Sometimes` is not one of"), "{error}");
        let error = with("  client_allowed_sans: [prometheus]\n").unwrap_err();
        assert!(
            error.contains("client_allowed_sans is not supported"),
            "{error}"
        );
        for kind in ["RequestClientCert", "RequireAnyClientCert"] {
            assert!(
                with(&format!("  client_auth_type: {kind}\n")).is_ok(),
                "{kind}"
            );
        }
        for kind in ["VerifyClientCertIfGiven", "RequireAndVerifyClientCert"] {
            let access = with(&format!(
                "  client_auth_type: {kind}\n  client_ca_file: ca.crt\n"
            ))
            .unwrap();
            assert!(access.files.contains(&files.0.join("ca.crt")), "{kind}");
        }
    }

    #[test]
    fn a_key_that_does_not_match_the_certificate_is_refused() {
        let files = Files::new("mismatch");
        let other = rcgen::generate_simple_self_signed(vec!["other".into()]).unwrap();
        std::fs::write(files.0.join("other.key"), other.signing_key.serialize_pem()).unwrap();
        let error = files
            .read("tls_server_config:\n  cert_file: server.crt\n  key_file: other.key\n")
            .unwrap_err();
        assert!(error.contains("cannot be used together"), "{error}");
        let error = files
            .read("tls_server_config:\n  cert_file: server.crt\n")
            .unwrap_err();
        assert!(
            error.contains("one of key_file and key is required"),
            "{error}"
        );
    }

    #[test]
    fn only_the_security_headers_exporter_toolkit_allows_can_be_added() {
        let files = Files::new("headers");
        let access = files
            .read("http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n    Strict-Transport-Security: max-age=31536000\n")
            .unwrap();
        let headers: Vec<_> = access
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.to_str().unwrap()))
            .collect();
        assert_eq!(
            headers,
            [
                ("strict-transport-security", "max-age=31536000"),
                ("x-content-type-options", "nosniff")
            ]
        );
        let error = files
            .read("http_server_config:\n  headers:\n    Server: mine\n")
            .unwrap_err();
        assert!(
            error.contains("headers.Server: this header cannot be configured"),
            "{error}"
        );
        let error = files
            .read("http_server_config:\n  headers:\n    X-Frame-Options: allow\n")
            .unwrap_err();
        assert!(
            error.contains("`allow` is not allowed; one of deny, sameorigin"),
            "{error}"
        );
    }

    #[test]
    fn basic_auth_checks_bcrypt_hashes_and_remembers_a_match() {
        let files = Files::new("users");
        let hash = bcrypt::hash("right", 4).unwrap();
        let access = files
            .read(&format!("basic_auth_users:\n  alice: {hash}\n"))
            .unwrap();
        assert!(access.requires_auth());
        assert!(!access.verified_before("alice", b"right"));
        assert!(!access.check("alice", b"wrong"));
        assert!(!access.check("bob", b"right"));
        assert!(access.check("alice", b"right"));
        assert!(access.verified_before("alice", b"right"));
        assert!(!access.verified_before("alice", b"righ"));
        let error = files
            .read("basic_auth_users:\n  alice: plaintext\n")
            .unwrap_err();
        assert!(
            error.contains("basic_auth_users.alice: not a bcrypt hash"),
            "{error}"
        );
    }

    #[test]
    fn unknown_keys_are_refused_with_their_line() {
        let files = Files::new("unknown");
        let error = files.read("rate_limit:\n  burst: 1\n").unwrap_err();
        assert!(
            error.contains("line 1") && error.contains("rate_limit"),
            "{error}"
        );
        assert!(!error.contains('\n'), "one line: {error}");
    }
}
