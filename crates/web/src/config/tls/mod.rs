//! `tls_server_config`: certificates, client authentication, versions, cipher suites and
//! curves, built into a rustls server configuration with Go's names for every value.
//!
//! This module reads the settings and the PEM they name and puts the configuration together;
//! [`go_names`] maps Go's names of versions, suites and curves to rustls', and
//! [`client_certs`] checks what clients show.

mod client_certs;
mod go_names;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;

use super::WebConfigError;
use client_certs::ClientAuth;
#[cfg(test)]
pub(super) use client_certs::subject_alternative_names;
#[cfg(test)]
pub(super) use go_names::{cipher_suites, curves, versions};

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

pub(super) fn tls_config(
    tls: TlsSettings,
    dir: &Path,
    files: &mut Vec<PathBuf>,
) -> Result<ServerConfig, WebConfigError> {
    let certs = pem_source("cert", tls.cert_file, tls.cert, dir, files)?.ok_or_else(|| {
        WebConfigError::invalid("tls_server_config", "one of cert_file and cert is required")
    })?;
    let key = pem_source("key", tls.key_file, tls.key, dir, files)?.ok_or_else(|| {
        WebConfigError::invalid("tls_server_config", "one of key_file and key is required")
    })?;
    let chain = certificates(&certs)?;
    let key = PrivateKeyDer::from_pem_slice(&key.bytes)
        .map_err(|e| key.invalid(format!("no usable private key in it ({e})")))?;
    let client_auth = ClientAuth::parse(tls.client_auth_type.as_deref().unwrap_or(""))?;
    match &tls.client_allowed_sans {
        Some(_) if client_auth != ClientAuth::RequireAndVerify => {
            return Err(WebConfigError::invalid(
                "tls_server_config.client_allowed_sans",
                "needs client_auth_type RequireAndVerifyClientCert (otherwise a client without \
                 a verified certificate would not be checked against the list)",
            ));
        }
        Some(sans) if sans.is_empty() => {
            return Err(WebConfigError::invalid(
                "tls_server_config.client_allowed_sans",
                "lists no SAN, which would refuse every client; list the allowed ones or leave \
                 the key out",
            ));
        }
        _ => {}
    }
    let client_ca = pem_source("client_ca", tls.client_ca_file, tls.client_ca, dir, files)?;

    let mut provider = rustls::crypto::ring::default_provider();
    if let Some(names) = &tls.cipher_suites {
        provider.cipher_suites = go_names::cipher_suites(&provider, names)?;
    }
    if let Some(names) = &tls.curve_preferences {
        provider.kx_groups = go_names::curves(&provider, names)?;
    }
    let provider = Arc::new(provider);
    let versions = go_names::versions(tls.min_version.as_deref(), tls.max_version.as_deref())?;

    let verifier =
        client_certs::verifier(client_auth, client_ca, tls.client_allowed_sans, &provider)?;

    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| WebConfigError::invalid("tls_server_config", e.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| {
            WebConfigError::invalid(
                "tls_server_config",
                format!("the certificate and key cannot be used together: {e}"),
            )
        })?;
    config.ignore_client_order = tls.prefer_server_cipher_suites.unwrap_or(true);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// PEM text from a file or inline, with the key name for messages.
pub(super) struct Pem {
    /// The key it came from (`client_ca_file`), for messages.
    name: String,
    bytes: Vec<u8>,
}

impl Pem {
    /// The key this PEM came from is wrong: `reason`.
    pub(super) fn invalid(&self, reason: impl Into<String>) -> WebConfigError {
        WebConfigError::invalid(format!("tls_server_config.{}", self.name), reason)
    }
}

/// Reads `<name>_file` (relative to the configuration file's directory) or takes `<name>`
/// inline; the file wins, as in exporter-toolkit.
fn pem_source(
    name: &str,
    file: Option<String>,
    inline: Option<String>,
    dir: &Path,
    files: &mut Vec<PathBuf>,
) -> Result<Option<Pem>, WebConfigError> {
    match (
        file.filter(|f| !f.is_empty()),
        inline.filter(|i| !i.is_empty()),
    ) {
        (Some(file), _) => {
            let path = dir.join(&file);
            let bytes = std::fs::read(&path).map_err(|e| {
                WebConfigError::invalid(
                    format!("tls_server_config.{name}_file"),
                    format!("cannot read {}: {e}", path.display()),
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

pub(super) fn certificates(pem: &Pem) -> Result<Vec<CertificateDer<'static>>, WebConfigError> {
    let certs = CertificateDer::pem_slice_iter(&pem.bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem.invalid(format!("not PEM certificates ({e})")))?;
    if certs.is_empty() {
        return Err(pem.invalid("holds no PEM certificate"));
    }
    Ok(certs)
}
