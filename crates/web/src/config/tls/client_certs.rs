//! What a client must show: `client_auth_type`, the client CA and `client_allowed_sans`, as
//! rustls client certificate verifiers.

use std::sync::Arc;

use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};
use rustls_pki_types::{CertificateDer, UnixTime};

use super::{Pem, certificates};
use crate::config::WebConfigError;

/// What a client must show, as `client_auth_type` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ClientAuth {
    None,
    Request,
    RequireAny,
    VerifyIfGiven,
    RequireAndVerify,
}

impl ClientAuth {
    pub(super) fn parse(text: &str) -> Result<ClientAuth, WebConfigError> {
        Ok(match text {
            "" | "NoClientCert" => ClientAuth::None,
            "RequestClientCert" => ClientAuth::Request,
            "RequireAnyClientCert" | "RequireClientCert" => ClientAuth::RequireAny,
            "VerifyClientCertIfGiven" => ClientAuth::VerifyIfGiven,
            "RequireAndVerifyClientCert" => ClientAuth::RequireAndVerify,
            other => {
                return Err(WebConfigError::invalid(
                    "tls_server_config.client_auth_type",
                    format!(
                        "`{other}` is not one of NoClientCert, RequestClientCert, \
                         RequireAnyClientCert, VerifyClientCertIfGiven, \
                         RequireAndVerifyClientCert"
                    ),
                ));
            }
        })
    }

    /// Its name in the file.
    fn name(self) -> &'static str {
        match self {
            ClientAuth::None => "NoClientCert",
            ClientAuth::Request => "RequestClientCert",
            ClientAuth::RequireAny => "RequireAnyClientCert",
            ClientAuth::VerifyIfGiven => "VerifyClientCertIfGiven",
            ClientAuth::RequireAndVerify => "RequireAndVerifyClientCert",
        }
    }
}

/// The verifier of what `client_auth` asks of clients: signed by `client_ca` where it is
/// checked, with one of `allowed_sans` where they are listed.
pub(super) fn verifier(
    client_auth: ClientAuth,
    client_ca: Option<Pem>,
    allowed_sans: Option<Vec<String>>,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, WebConfigError> {
    Ok(match (client_auth, client_ca) {
        (ClientAuth::None, Some(_)) => {
            return Err(WebConfigError::invalid(
                "tls_server_config",
                "a client CA is configured but client_auth_type is NoClientCert; set it to \
                 RequireAndVerifyClientCert",
            ));
        }
        (ClientAuth::None, None) => Arc::new(rustls::server::NoClientAuth),
        (ClientAuth::Request | ClientAuth::RequireAny, _) => Arc::new(AnyClientCert {
            mandatory: client_auth == ClientAuth::RequireAny,
            algorithms: provider.signature_verification_algorithms,
        }),
        (ClientAuth::VerifyIfGiven | ClientAuth::RequireAndVerify, None) => {
            return Err(WebConfigError::invalid(
                "tls_server_config",
                format!(
                    "client_auth_type {} needs client_ca_file or client_ca",
                    client_auth.name()
                ),
            ));
        }
        (ClientAuth::VerifyIfGiven | ClientAuth::RequireAndVerify, Some(ca)) => {
            let mut roots = RootCertStore::empty();
            for cert in certificates(&ca)? {
                roots.add(cert).map_err(|e| ca.invalid(e.to_string()))?;
            }
            let builder =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone());
            let builder = if client_auth == ClientAuth::VerifyIfGiven {
                builder.allow_unauthenticated()
            } else {
                builder
            };
            let verified = builder.build().map_err(|e| ca.invalid(e.to_string()))?;
            match allowed_sans {
                Some(allowed) => Arc::new(AllowedSans { verified, allowed }),
                None => verified,
            }
        }
    })
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

/// Why a client certificate's subject alternative names cannot be read.
#[derive(Debug, thiserror::Error)]
pub(in crate::config) enum SanError {
    /// The certificate is not DER X.509.
    #[error("the client certificate cannot be read: {0}")]
    Certificate(String),
    /// Its SAN extension is malformed.
    #[error("the client certificate's SAN extension cannot be read: {0}")]
    Extension(String),
}

/// The subject alternative names of a DER certificate, as strings.
pub(in crate::config) fn subject_alternative_names(der: &[u8]) -> Result<Vec<String>, SanError> {
    use x509_parser::extensions::GeneralName;
    let (_, certificate) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| SanError::Certificate(e.to_string()))?;
    let extension = certificate
        .subject_alternative_name()
        .map_err(|e| SanError::Extension(e.to_string()))?;
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
        let names = subject_alternative_names(end_entity).map_err(|e| refused(e.to_string()))?;
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
