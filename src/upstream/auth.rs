//! The bearer token: read from the configuration or a token file, checked, and followed when
//! the file changes (a rotated token needs no restart).

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::header::HeaderValue;

use crate::vocabulary::Secret;
use exporter_web::file_watch::{Change, Watched, stamps};

/// Why a token cannot be used. Messages never hold the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// The token file cannot be read.
    #[error("cannot read {path}: {reason}")]
    Unreadable {
        /// The file.
        path: String,
        /// The system's reason.
        reason: String,
    },
    /// Nothing but white space.
    #[error("is empty")]
    Empty,
    /// A control character, which cannot be sent in a header.
    #[error("holds a control character (a line break inside the token file?)")]
    ControlCharacter,
    /// Other characters a header cannot carry.
    #[error("holds characters that cannot be sent in a header")]
    NotAHeader,
}

/// Reads a token file, ignoring one trailing line break.
pub fn read_token_file(path: &Path) -> Result<String, TokenError> {
    let content = std::fs::read_to_string(path).map_err(|e| TokenError::Unreadable {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    let content = content.strip_suffix('\n').unwrap_or(&content);
    let content = content.strip_suffix('\r').unwrap_or(content);
    Ok(content.to_owned())
}

/// Refuses a token that cannot be sent: empty, or with control characters.
pub fn check_token(value: String) -> Result<Secret, TokenError> {
    if value.trim().is_empty() {
        return Err(TokenError::Empty);
    }
    if value.chars().any(|c| c.is_control()) {
        return Err(TokenError::ControlCharacter);
    }
    Ok(Secret::new(value))
}

/// What is wrong with the token file's permissions: readable by every user.
#[cfg(unix)]
pub fn token_file_mode_problem(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(path).ok()?.permissions().mode();
    mode_problem(path, mode)
}

/// What is wrong with the token file's permissions (nothing is checked off Unix).
#[cfg(not(unix))]
pub fn token_file_mode_problem(_: &Path) -> Option<String> {
    None
}

fn mode_problem(path: &Path, mode: u32) -> Option<String> {
    (mode & 0o004 != 0).then(|| {
        format!(
            "{} is readable by every user (mode {:o}); make it readable by the exporter's user \
             only, e.g. chmod o-r {}",
            path.display(),
            mode & 0o777,
            path.display()
        )
    })
}

/// `Bearer <token>`, marked sensitive so that no debug output of a request shows it.
fn bearer(token: &Secret) -> Result<HeaderValue, TokenError> {
    let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
        .map_err(|_| TokenError::NotAHeader)?;
    value.set_sensitive(true);
    Ok(value)
}

/// The `Authorization` header, following the token file: a changed file (time, size or inode)
/// is read again before the next request. A file that cannot be read or holds no valid token
/// keeps the previous token, with a warning.
#[derive(Debug)]
pub(super) struct Authorization {
    file: Option<PathBuf>,
    header: Watched<HeaderValue>,
}

impl Authorization {
    pub(super) fn new(token: &Secret, file: Option<PathBuf>) -> Result<Self, TokenError> {
        let files: Vec<PathBuf> = file.iter().cloned().collect();
        Ok(Authorization {
            header: Watched::new(bearer(token)?, stamps(&files), Duration::ZERO),
            file,
        })
    }

    /// The header to send now.
    pub(super) fn current(&self) -> HeaderValue {
        let Some(path) = &self.file else {
            return (*self.header.current()).clone();
        };
        let (header, change) = self.header.check(|_| {
            let token = check_token(read_token_file(path)?)?;
            Ok::<_, TokenError>((bearer(&token)?, vec![path.clone()]))
        });
        match change {
            Change::None => {}
            Change::Reloaded => {
                tracing::info!(file = %path.display(), "the token file changed: using the new token");
            }
            Change::Refused(error) => tracing::warn!(
                file = %path.display(),
                error = %error,
                "the token file changed but cannot be used; keeping the previous token"
            ),
        }
        (*header).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_file_readable_by_every_user_is_refused_with_the_remedy() {
        let path = Path::new("/etc/reputation-exporter/token");
        let problem = mode_problem(path, 0o100644).unwrap();
        assert!(problem.contains("mode 644"), "{problem}");
        assert!(
            problem.contains("chmod o-r /etc/reputation-exporter/token"),
            "{problem}"
        );
        assert_eq!(mode_problem(path, 0o100640), None);
        assert_eq!(mode_problem(path, 0o100600), None);
        assert_eq!(mode_problem(path, 0o100400), None);
    }

    #[test]
    fn a_token_with_a_line_break_or_only_blanks_is_refused() {
        assert_eq!(
            check_token("a\nb".into()),
            Err(TokenError::ControlCharacter)
        );
        assert_eq!(check_token("  ".into()), Err(TokenError::Empty));
        assert_eq!(check_token("t0k".into()).unwrap().expose(), "t0k");
    }
}
