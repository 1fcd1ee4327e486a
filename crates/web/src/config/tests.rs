//! The web configuration file: schema, TLS, basic auth and headers, read from files made here.

use rustls::version::{TLS12, TLS13};

use super::tls::{cipher_suites, curves, subject_alternative_names, versions};
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
        read(&path).map_err(|e| e.to_string())
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
    let error = versions(Some("TLS10"), None).unwrap_err().to_string();
    assert!(
        error.contains("min_version: TLS10 is not supported"),
        "{error}"
    );
    let error = versions(Some("TLS13"), Some("TLS12"))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("min_version is above max_version"),
        "{error}"
    );
    assert!(
        versions(Some("SSL3"), None)
            .unwrap_err()
            .to_string()
            .contains("`SSL3`")
    );
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
    let error = cipher_suites(&provider, &["TLS_RSA_WITH_AES_128_CBC_SHA".to_owned()])
        .unwrap_err()
        .to_string();
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
        error.starts_with(
            "tls_server_config.client_allowed_sans: needs client_auth_type \
             RequireAndVerifyClientCert"
        ),
        "{error}"
    );
    let verified = "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n";
    let error = with(&format!("{verified}  client_allowed_sans: []\n")).unwrap_err();
    assert!(
        error.starts_with("tls_server_config.client_allowed_sans: lists no SAN"),
        "{error}"
    );
    assert!(with(&format!("{verified}  client_allowed_sans: [prometheus]\n")).is_ok());
    let error = with(
        "  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca.crt\n  \
         client_allowed_sans: [prometheus]\n",
    )
    .unwrap_err();
    assert!(error.contains("needs client_auth_type"), "{error}");
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
    let error = files.read("rate_limits:\n  burst: 1\n").unwrap_err();
    assert!(
        error.contains("line 1") && error.contains("rate_limits"),
        "{error}"
    );
    assert!(!error.contains('\n'), "one line: {error}");
}

#[test]
fn subject_alternative_names_are_read_as_go_writes_them() {
    use rcgen::{CertificateParams, KeyPair, SanType};
    let mut params = CertificateParams::new(vec!["prometheus.example".to_owned()]).unwrap();
    params.subject_alt_names.extend([
        SanType::IpAddress("10.0.0.9".parse().unwrap()),
        SanType::IpAddress("2001:db8:0:0:0:0:0:1".parse().unwrap()),
        SanType::Rfc822Name("ops@example.com".try_into().unwrap()),
        SanType::URI("spiffe://example.org/prometheus".try_into().unwrap()),
    ]);
    let key = KeyPair::generate().unwrap();
    let certificate = params.self_signed(&key).unwrap();
    assert_eq!(
        subject_alternative_names(certificate.der()).unwrap(),
        [
            "prometheus.example",
            "10.0.0.9",
            "2001:db8::1",
            "ops@example.com",
            "spiffe://example.org/prometheus"
        ]
    );
    let plain = CertificateParams::new(Vec::<String>::new()).unwrap();
    let none = plain.self_signed(&key).unwrap();
    assert_eq!(
        subject_alternative_names(none.der()).unwrap(),
        [] as [&str; 0]
    );
    let error = subject_alternative_names(b"not DER")
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("the client certificate cannot be read"),
        "{error}"
    );
}
