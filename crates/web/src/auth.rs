//! The rate limit, basic auth and the extra response headers of the web configuration file, on
//! every path.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::config::{Access, WebConfigFile};

/// The rate limit, then basic auth (exporter-toolkit's order: a flood of requests without
/// credentials costs no bcrypt), and the extra response headers on every answer.
pub(super) async fn guard(
    State(web): State<Arc<WebConfigFile>>,
    request: Request,
    next: Next,
) -> Response {
    let access = web.current();
    let mut response = if let Err(wait) = web.admit(&access) {
        let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, seconds.to_string())],
            "Too Many Requests\n",
        )
            .into_response()
    } else if !access.requires_auth() || authenticated(&web, &access, request.headers()).await {
        next.run(request).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Basic")],
            "Unauthorized\n",
        )
            .into_response()
    };
    for (name, value) in &access.headers {
        response.headers_mut().insert(name.clone(), value.clone());
    }
    response
}

/// Whether `headers` carry basic auth credentials `access` accepts.
async fn authenticated(web: &WebConfigFile, access: &Arc<Access>, headers: &HeaderMap) -> bool {
    match basic_credentials(headers) {
        Some((user, password)) => web.verify(access, user, password).await,
        None => false,
    }
}

/// User and password of an `Authorization: Basic` header.
fn basic_credentials(headers: &HeaderMap) -> Option<(String, Vec<u8>)> {
    use base64::Engine as _;
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    let (scheme, encoded) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"basic ") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim_ascii())
        .ok()?;
    let colon = decoded.iter().position(|&b| b == b':')?;
    let user = String::from_utf8(decoded[..colon].to_vec()).ok()?;
    Some((user, decoded[colon + 1..].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_are_read_from_the_authorization_header() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, value.parse().unwrap());
            basic_credentials(&headers)
        };
        // "prom:pa:ss" -- the password may hold a colon.
        assert_eq!(
            with("Basic cHJvbTpwYTpzcw=="),
            Some(("prom".to_owned(), b"pa:ss".to_vec()))
        );
        assert_eq!(
            with("basic cHJvbTpwYTpzcw=="),
            Some(("prom".to_owned(), b"pa:ss".to_vec()))
        );
        assert_eq!(with("Bearer cHJvbTpwYTpzcw=="), None);
        assert_eq!(with("Basic !!!"), None);
        // "nocolon"
        assert_eq!(with("Basic bm9jb2xvbg=="), None);
        assert_eq!(basic_credentials(&HeaderMap::new()), None);
    }
}
