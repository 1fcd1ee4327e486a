//! The receiver as the flags describe it: its address, headers and credentials, checked
//! before anything is fetched or sent.
//!
//! The receiver's credentials live in these settings and the client built from them only, and
//! the API's token in the API's client only: neither ever reaches the other's server, and no
//! message shows either.

use std::path::Path;
use std::time::Duration;

use reqwest::Url;
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};

use crate::FlagError;
use crate::cli::RemoteWriteArgs;
use reputation_exporter::upstream::auth::{check_token, read_token_file};
use reputation_exporter::vocabulary::parse_duration;

/// Headers the exporter sets itself, or that only the credential flags may set: as
/// Prometheus' `remote_write.headers` reserves them.
const RESERVED: [&str; 14] = [
    "authorization",
    "host",
    "content-encoding",
    "content-length",
    "content-type",
    "user-agent",
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "www-authenticate",
    "accept-encoding",
    "x-prometheus-remote-write-version",
    "x-prometheus-scrape-timeout-seconds",
];

/// The receiver as the flags describe it, checked.
#[derive(Debug, Clone)]
pub struct Settings {
    pub(super) url: Url,
    /// The URL as messages show it: without the query.
    pub(super) shown: String,
    pub(super) headers: HeaderMap,
    /// The CAs of `--remote-write.ca-file`, instead of the system's.
    pub(super) roots: Option<Vec<reqwest::Certificate>>,
    pub(super) timeout: Duration,
}

impl Settings {
    /// The receiver `--remote-write` names, with its options; `None` without the flag.
    pub fn from_args(args: &RemoteWriteArgs) -> Result<Option<Settings>, FlagError> {
        let Some(url) = &args.url else {
            return Ok(None);
        };
        let url =
            Url::parse(url).map_err(|e| FlagError::new(format!("--remote-write {url}"), e))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(FlagError::new(
                format!("--remote-write {url}"),
                format!("the scheme must be http or https, not {}", url.scheme()),
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(FlagError::new(
                "--remote-write",
                "the URL holds credentials; give them with --remote-write.basic-auth-username \
                 and --remote-write.basic-auth-password-file (a URL is shown in messages, a \
                 password file never is)",
            ));
        }
        let mut shown = url.clone();
        shown.set_query(None);
        let shown = shown.to_string();
        let mut headers = HeaderMap::new();
        for text in &args.headers {
            let (name, value) = header(text)?;
            headers.append(name, value);
        }
        if let Some(file) = &args.bearer_token_file {
            let token = secret(file, "--remote-write.bearer-token-file")?;
            headers.insert(
                header::AUTHORIZATION,
                sensitive(
                    &format!("Bearer {token}"),
                    "--remote-write.bearer-token-file",
                )?,
            );
        }
        if let Some(user) = &args.basic_auth_username {
            if user.contains(':') {
                return Err(FlagError::new(
                    format!("--remote-write.basic-auth-username {user}"),
                    "a user name cannot hold `:`",
                ));
            }
            let file = args.basic_auth_password_file.as_deref().ok_or_else(|| {
                FlagError::new(
                    "--remote-write.basic-auth-username",
                    "needs --remote-write.basic-auth-password-file",
                )
            })?;
            let password = secret(file, "--remote-write.basic-auth-password-file")?;
            use base64::Engine as _;
            let encoded =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            headers.insert(
                header::AUTHORIZATION,
                sensitive(
                    &format!("Basic {encoded}"),
                    "--remote-write.basic-auth-password-file",
                )?,
            );
        }
        let roots = args
            .ca_file
            .as_deref()
            .map(|file| {
                let pem = std::fs::read(file).map_err(|e| {
                    FlagError::new(
                        "--remote-write.ca-file",
                        format!("cannot read {}: {e}", file.display()),
                    )
                })?;
                match reqwest::Certificate::from_pem_bundle(&pem) {
                    Ok(certs) if !certs.is_empty() => Ok(certs),
                    _ => Err(FlagError::new(
                        "--remote-write.ca-file",
                        format!("{} holds no PEM certificate", file.display()),
                    )),
                }
            })
            .transpose()?;
        let timeout = parse_duration(&args.timeout)
            .map_err(|e| FlagError::new("--remote-write.timeout", e))?;
        if timeout.is_zero() {
            return Err(FlagError::new(
                "--remote-write.timeout",
                "must be longer than 0s",
            ));
        }
        Ok(Some(Settings {
            url,
            shown,
            headers,
            roots,
            timeout,
        }))
    }
}

/// `--remote-write.header 'NAME: VALUE'`, checked.
fn header(text: &str) -> Result<(HeaderName, HeaderValue), FlagError> {
    let (name, value) = text.split_once(':').ok_or_else(|| {
        FlagError::new(
            format!("--remote-write.header {text}"),
            "write it as 'NAME: VALUE', e.g. 'X-Scope-OrgID: mail'",
        )
    })?;
    let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
        FlagError::new(
            "--remote-write.header",
            format!("`{}` is not a header name", name.trim()),
        )
    })?;
    if RESERVED.contains(&name.as_str()) {
        return Err(FlagError::new(
            "--remote-write.header",
            format!(
                "{name} is set by the exporter itself{}",
                if name == header::AUTHORIZATION {
                    "; give credentials with --remote-write.bearer-token-file or \
                 --remote-write.basic-auth-username"
                } else {
                    ""
                }
            ),
        ));
    }
    let value = sensitive(value.trim(), &format!("--remote-write.header {name}"))?;
    Ok((name, value))
}

/// A header value no debug output shows.
fn sensitive(text: &str, flag: &str) -> Result<HeaderValue, FlagError> {
    let mut value = HeaderValue::from_str(text)
        .map_err(|_| FlagError::new(flag, "holds characters that cannot be sent in a header"))?;
    value.set_sensitive(true);
    Ok(value)
}

/// A secret from a file: one trailing line break ignored, empty or control characters refused.
fn secret(file: &Path, flag: &str) -> Result<String, FlagError> {
    let text = read_token_file(file).map_err(|e| FlagError::new(flag, e))?;
    check_token(text)
        .map(|secret| secret.expose().to_owned())
        .map_err(|e| FlagError::new(flag, format!("the secret in {} {e}", file.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(url: &str) -> RemoteWriteArgs {
        RemoteWriteArgs {
            url: Some(url.to_owned()),
            timeout: "30s".into(),
            ..RemoteWriteArgs::default()
        }
    }

    #[test]
    fn headers_are_checked_and_reserved_ones_refused() {
        let mut given = args("http://127.0.0.1:9090/api/v1/write");
        given.headers = vec!["X-Scope-OrgID: team-mail".into()];
        let settings = Settings::from_args(&given).unwrap().unwrap();
        assert_eq!(settings.headers["x-scope-orgid"], "team-mail");
        assert!(settings.headers["x-scope-orgid"].is_sensitive());
        for (bad, says) in [
            ("X-Scope-OrgID", "write it as 'NAME: VALUE'"),
            (
                "Authorization: Bearer x",
                "--remote-write.bearer-token-file",
            ),
            ("Content-Encoding: gzip", "set by the exporter itself"),
            ("Bad Name: x", "is not a header name"),
        ] {
            given.headers = vec![bad.into()];
            let error = Settings::from_args(&given).unwrap_err().to_string();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn a_url_with_credentials_or_another_scheme_is_refused_without_showing_them() {
        let error = Settings::from_args(&args("http://me:hunter2@127.0.0.1/api/v1/write"))
            .unwrap_err()
            .to_string();
        assert!(!error.contains("hunter2"), "{error}");
        assert!(
            error.contains("--remote-write.basic-auth-username"),
            "{error}"
        );
        let error = Settings::from_args(&args("ftp://127.0.0.1/"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("http or https"), "{error}");
        assert!(
            Settings::from_args(&RemoteWriteArgs::default())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn credential_files_become_an_authorization_header_no_debug_output_shows() {
        let dir = std::env::temp_dir().join(format!("rexp-rw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let token = dir.join("token");
        std::fs::write(&token, "s3cret-rw\n").unwrap();
        let mut given = args("https://mimir.example/api/v1/push");
        given.bearer_token_file = Some(token.clone());
        let settings = Settings::from_args(&given).unwrap().unwrap();
        assert_eq!(settings.headers[header::AUTHORIZATION], "Bearer s3cret-rw");
        assert!(!format!("{settings:?}").contains("s3cret"));

        let mut given = args("https://mimir.example/api/v1/push");
        given.basic_auth_username = Some("mail".into());
        given.basic_auth_password_file = Some(token.clone());
        let settings = Settings::from_args(&given).unwrap().unwrap();
        // base64("mail:s3cret-rw")
        assert_eq!(
            settings.headers[header::AUTHORIZATION],
            "Basic bWFpbDpzM2NyZXQtcnc="
        );

        std::fs::write(&token, "\n").unwrap();
        let error = Settings::from_args(&given).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "--remote-write.basic-auth-password-file: the secret in {} is empty",
                token.display()
            )
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
