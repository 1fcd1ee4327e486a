//! TLS for the HTTP clients (the API's and the remote-write receiver's): rustls' provider, and
//! the common handshake failures in words that say what to check.

/// The TLS failure behind `error`: the error itself, or the inner error of an io::Error (which
/// `source` skips), however deeply io::Errors wrap it.
pub fn tls_error<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(tls) = error.downcast_ref::<rustls::Error>() {
        return Some(tls);
    }
    let inner: &(dyn std::error::Error + 'static) =
        error.downcast_ref::<std::io::Error>()?.get_ref()?;
    tls_error(inner)
}

/// The common TLS failures in words that say what to check; `None` for the others, which keep
/// the TLS library's own words.
pub fn tls_in_words(error: &rustls::Error, base_url: &str) -> Option<String> {
    use rustls::{CertificateError, InvalidMessage};
    Some(match error {
        rustls::Error::InvalidMessage(InvalidMessage::InvalidContentType) => format!(
            "the server does not speak TLS at this address (an https:// URL on a plain-HTTP \
             port?); check the scheme of {base_url}"
        ),
        rustls::Error::InvalidCertificate(certificate) => match certificate {
            CertificateError::UnknownIssuer => "the server's TLS certificate is not signed by \
                 an authority this system trusts (self-signed, or a private CA missing from the \
                 system's trust store)"
                .to_owned(),
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                format!(
                    "the server's TLS certificate is not valid for this host name; check the \
                     host in {base_url}"
                )
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                "the server's TLS certificate has expired".to_owned()
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "the server's TLS certificate is not valid yet (is this machine's clock right?)"
                    .to_owned()
            }
            _ => return None,
        },
        _ => return None,
    })
}

/// Installs ring as rustls' provider: reqwest is built without a default one (ring instead of
/// aws-lc, lighter to build). Installing it twice is harmless.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_tls_failures_say_what_to_check() {
        use rustls::{CertificateError, InvalidMessage};
        let words = |e| tls_in_words(&e, "accounts.us.base_url");
        assert_eq!(
            words(rustls::Error::InvalidMessage(
                InvalidMessage::InvalidContentType
            ))
            .unwrap(),
            "the server does not speak TLS at this address (an https:// URL on a plain-HTTP \
             port?); check the scheme of accounts.us.base_url"
        );
        assert_eq!(
            words(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName
            ))
            .unwrap(),
            "the server's TLS certificate is not valid for this host name; check the host in \
             accounts.us.base_url"
        );
        assert_eq!(
            words(rustls::Error::InvalidCertificate(CertificateError::Expired)).unwrap(),
            "the server's TLS certificate has expired"
        );
        assert!(
            words(rustls::Error::InvalidCertificate(
                CertificateError::UnknownIssuer
            ))
            .unwrap()
            .starts_with("the server's TLS certificate is not signed by an authority")
        );
        assert_eq!(words(rustls::Error::DecryptError), None);
    }
}
