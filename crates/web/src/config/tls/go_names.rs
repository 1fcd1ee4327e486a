//! Go's names (the web configuration file's) of TLS versions, cipher suites and curves, mapped
//! to what rustls offers.

use rustls::SupportedProtocolVersion;
use rustls::crypto::CryptoProvider;
use rustls::version::{TLS12, TLS13};

use crate::config::WebConfigError;

pub(in crate::config) fn versions(
    min: Option<&str>,
    max: Option<&str>,
) -> Result<Vec<&'static SupportedProtocolVersion>, WebConfigError> {
    let rank = |key: &str, text: &str| -> Result<u8, WebConfigError> {
        match text {
            "TLS12" => Ok(2),
            "TLS13" => Ok(3),
            "TLS10" | "TLS11" => Err(WebConfigError::invalid(
                format!("tls_server_config.{key}"),
                format!("{text} is not supported (rustls speaks TLS12 and TLS13)"),
            )),
            other => Err(WebConfigError::invalid(
                format!("tls_server_config.{key}"),
                format!("`{other}` is not one of TLS12, TLS13"),
            )),
        }
    };
    let min = min.map_or(Ok(2), |v| rank("min_version", v))?;
    let max = max.map_or(Ok(3), |v| rank("max_version", v))?;
    if min > max {
        return Err(WebConfigError::invalid(
            "tls_server_config",
            "min_version is above max_version",
        ));
    }
    Ok([(2, &TLS12), (3, &TLS13)]
        .into_iter()
        .filter(|(rank, _)| (min..=max).contains(rank))
        .map(|(_, version)| version)
        .collect())
}

/// TLS 1.2 suites in the listed order; TLS 1.3 suites are always on (as in Go, whose names the
/// file uses).
pub(in crate::config) fn cipher_suites(
    provider: &CryptoProvider,
    names: &[String],
) -> Result<Vec<rustls::SupportedCipherSuite>, WebConfigError> {
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
                WebConfigError::invalid(
                    "tls_server_config.cipher_suites",
                    format!(
                        "`{name}` is not supported; the TLS 1.2 suites are {}",
                        known.join(", ")
                    ),
                )
            })?;
        if !chosen.iter().any(|s| s.suite() == suite.suite()) {
            chosen.push(**suite);
        }
    }
    Ok(chosen)
}

pub(in crate::config) fn curves(
    provider: &CryptoProvider,
    names: &[String],
) -> Result<Vec<&'static dyn rustls::crypto::SupportedKxGroup>, WebConfigError> {
    use rustls::NamedGroup;
    let mut chosen = Vec::new();
    for name in names {
        let group = match name.as_str() {
            "X25519" => NamedGroup::X25519,
            "CurveP256" => NamedGroup::secp256r1,
            "CurveP384" => NamedGroup::secp384r1,
            other => {
                return Err(WebConfigError::invalid(
                    "tls_server_config.curve_preferences",
                    format!("`{other}` is not supported; one of X25519, CurveP256, CurveP384"),
                ));
            }
        };
        if let Some(kx) = provider.kx_groups.iter().find(|kx| kx.name() == group) {
            chosen.push(*kx);
        }
    }
    Ok(chosen)
}
