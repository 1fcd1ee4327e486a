//! `tls_server_config`: certificates, client authentication, versions, cipher suites and
//! curves, built into a rustls server configuration with Go's names for every value.

use std::path::{Path, PathBuf};
use std::sync::Arc;

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

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct TlsSettings {
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

impl TlsSettings {
    /// Whether any TLS setting is given (exporter-toolkit's rule for turning TLS on).
    pub(super) fn is_enabled(&self) -> bool {
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

pub(super) fn tls_config(
    tls: TlsSettings,
    dir: &Path,
    files: &mut Vec<PathBuf>,
) -> Result<ServerConfig, String> {
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
    match &tls.client_allowed_sans {
        Some(_) if client_auth != ClientAuth::RequireAndVerify => {
            return Err(
                "tls_server_config.client_allowed_sans: needs client_auth_type \
                        RequireAndVerifyClientCert (otherwise a client without a verified \
                        certificate would not be checked against the list)"
                    .into(),
            );
        }
        Some(sans) if sans.is_empty() => {
            return Err(
                "tls_server_config.client_allowed_sans: lists no SAN, which would \
                        refuse every client; list the allowed ones or leave the key out"
                    .into(),
            );
        }
        _ => {}
    }
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
            let verified = builder
                .build()
                .map_err(|e| format!("tls_server_config.{}: {e}", ca.name))?;
            match tls.client_allowed_sans {
                Some(allowed) => Arc::new(AllowedSans { verified, allowed }),
                None => verified,
            }
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

pub(super) fn versions(
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
pub(super) fn cipher_suites(
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

pub(super) fn curves(
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

/// `client_allowed_sans`: a client certificate the CA check accepts is accepted only when one of
/// its subject alternative names (DNS name, IP address, e-mail address or URI, written as Go
/// writes them) is exactly one of the list, as exporter-toolkit checks it. A refused client
/// fails the handshake.
#[derive(Debug)]
struct AllowedSans {
    verified: Arc<dyn ClientCertVerifier>,
    allowed: Vec<String>,
}

/// The subject alternative names of a DER certificate, as strings.
pub(super) fn subject_alternative_names(der: &[u8]) -> Result<Vec<String>, String> {
    use x509_parser::extensions::GeneralName;
    let (_, certificate) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| format!("the client certificate cannot be read: {e}"))?;
    let extension = certificate
        .subject_alternative_name()
        .map_err(|e| format!("the client certificate's SAN extension cannot be read: {e}"))?;
    let Some(extension) = extension else {
        return Ok(Vec::new());
    };
    Ok(extension
        .value
        .general_names
        .iter()
        .filter_map(|name| match name {
            GeneralName::DNSName(text) | GeneralName::RFC822Name(text) | GeneralName::URI(text) => {
                Some((*text).to_owned())
            }
            GeneralName::IPAddress(bytes) => match bytes.len() {
                4 => <[u8; 4]>::try_from(*bytes)
                    .ok()
                    .map(|octets| std::net::Ipv4Addr::from(octets).to_string()),
                16 => <[u8; 16]>::try_from(*bytes)
                    .ok()
                    .map(|octets| std::net::Ipv6Addr::from(octets).to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect())
}

impl ClientCertVerifier for AllowedSans {
    fn offer_client_auth(&self) -> bool {
        self.verified.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.verified.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.verified.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self
            .verified
            .verify_client_cert(end_entity, intermediates, now)?;
        let refused = |message: String| {
            rustls::Error::InvalidCertificate(rustls::CertificateError::Other(rustls::OtherError(
                Arc::new(std::io::Error::other(message)),
            )))
        };
        let names = subject_alternative_names(end_entity).map_err(refused)?;
        if names.iter().any(|name| self.allowed.contains(name)) {
            Ok(verified)
        } else {
            Err(refused(format!(
                "the client certificate has none of client_allowed_sans; its SANs: [{}]",
                names.join(", ")
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.verified.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.verified.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.verified.supported_verify_schemes()
    }
}
