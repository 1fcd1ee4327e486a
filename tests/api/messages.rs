//! What an operator reads when the configuration points at the wrong place: each message names
//! what is wrong, the key that sets it (the account's own), and what to check.

use reputation_simulate::SimulatedApi;

use crate::helpers::{Options, spawn_accounts, spawn_app_with};

/// Retries that give up at once, so that a failing poll is logged within the test's wait.
fn quick(settings: &mut reputation_exporter::config::Settings) {
    settings.backoff.initial_delay = crate::helpers::duration("10ms");
    settings.backoff.max_delay = crate::helpers::duration("20ms");
    settings.backoff.max_elapsed = crate::helpers::duration("50ms");
}

#[tokio::test]
async fn a_base_url_with_the_api_path_is_named_with_the_url_requested_and_its_key() {
    let app = spawn_app_with(Options {
        configure: Box::new(|s| {
            quick(s);
            let base = s.api.base_url.clone().unwrap();
            s.api.base_url = Some(base.join("api/v1").unwrap());
        }),
        ..Options::default()
    })
    .await;
    let log = app.log_when("is probably wrong").await;
    let line = log
        .lines()
        .find(|l| l.contains("endpoint=ip-list") && l.contains("is probably wrong"))
        .expect("a line about ip-list");
    let url = line
        .split(' ')
        .find_map(|field| field.strip_prefix("url="))
        .expect("the URL requested");
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    assert!(url.ends_with("/api/v1/api/v1/ip-list"), "{line}");
    assert!(
        line.contains(
            "msg=\"the API has no such address: api.base_url is probably wrong (the API's \
             address alone, e.g. https://api.example.com, without /api/v1);"
        ),
        "{line}"
    );
}

#[tokio::test]
async fn a_rejected_token_of_a_named_account_names_that_accounts_keys() {
    let us = SimulatedApi::new(1, 0);
    us.set_token("the-right-token");
    let app = spawn_accounts(vec![("us", us, "a-wrong-token")], "200ms", |_| {}).await;
    let log = app.log_when("the token is rejected").await;
    assert!(
        log.contains(
            "the token is rejected: check accounts.us.token / accounts.us.token_file; it has \
             given no values yet"
        ),
        "{log}"
    );
    assert!(!log.contains("api.token"), "{log}");
}

#[tokio::test]
async fn https_to_a_plain_http_port_says_the_server_does_not_speak_tls_there() {
    let app = spawn_app_with(Options {
        configure: Box::new(|s| {
            quick(s);
            let mut base = s.api.base_url.clone().unwrap();
            base.set_scheme("https").unwrap();
            s.api.base_url = Some(base);
        }),
        ..Options::default()
    })
    .await;
    let log = app.log_when("does not speak TLS").await;
    assert!(
        log.contains(
            "the server does not speak TLS at this address (an https:// URL on a plain-HTTP \
             port?); check the scheme of api.base_url"
        ),
        "{log}"
    );
    assert!(!log.contains("InvalidContentType"), "{log}");
}

#[tokio::test]
async fn a_self_signed_api_certificate_is_said_to_be_untrusted() {
    let address = self_signed_server().await;
    let app = spawn_app_with(Options {
        configure: Box::new(move |s| {
            quick(s);
            s.api.base_url = Some(
                format!("https://localhost:{}", address.port())
                    .parse()
                    .unwrap(),
            );
        }),
        ..Options::default()
    })
    .await;
    let log = app.log_when("TLS certificate").await;
    assert!(
        log.contains(
            "the server's TLS certificate is not signed by an authority this system trusts"
        ),
        "{log}"
    );
}

/// A TLS server on 127.0.0.1 with a self-signed certificate for localhost, which completes no
/// handshake with a client that checks certificates; it serves until the test's runtime ends.
async fn self_signed_server() -> std::net::SocketAddr {
    let (acceptor, _) = reputation_testkit::self_signed_tls();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let _ = acceptor.accept(stream).await;
            });
        }
    });
    address
}

#[test]
fn an_invalid_web_config_file_stops_the_start_with_its_key_named() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("web-config-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("web.yml");
    std::fs::write(
        &file,
        "tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n",
    )
    .unwrap();
    let output = crate::helpers::exporter()
        .args(["--demo", "--config.check", "--web.config.file"])
        .arg(&file)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "accepted: {stdout}{stderr}");
    let said = format!("{stdout}{stderr}");
    assert!(
        said.contains("web.config_file") && said.contains("tls_server_config.cert_file"),
        "{said}"
    );
    assert!(said.contains("missing.crt"), "{said}");
}
