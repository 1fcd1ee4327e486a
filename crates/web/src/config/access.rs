//! One valid version of the web configuration file, and basic auth against it: bcrypt hashes,
//! a cache of matched passwords, and a decoy hash for unknown users.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use axum::http::{HeaderName, HeaderValue};
use rustls::ServerConfig;

/// One valid version of the file: what the server enforces.
pub struct Access {
    /// The TLS configuration, when the file turns TLS on.
    pub tls: Option<Arc<ServerConfig>>,
    /// User name -> bcrypt hash; empty when basic auth is off.
    pub(super) users: BTreeMap<String, String>,
    /// Headers added to every response.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Requests allowed at once and over time; none when the file sets no `rate_limit`.
    pub rate_limit: Option<super::RateLimit>,
    /// Passwords that matched their user's hash already, so bcrypt runs once per user and
    /// password, not once per request. Dropped with this version when the file changes.
    pub(super) verified: Mutex<HashMap<String, Vec<u8>>>,
    /// See [`Access::decoy`].
    pub(super) decoy: OnceLock<String>,
    /// The files this version was read from: the configuration file and those it names.
    pub(super) files: Vec<PathBuf>,
}

impl Access {
    /// No TLS, no authentication, no extra headers.
    pub(super) fn open() -> Access {
        Access {
            tls: None,
            users: BTreeMap::new(),
            headers: Vec::new(),
            rate_limit: None,
            verified: Mutex::new(HashMap::new()),
            decoy: OnceLock::new(),
            files: Vec::new(),
        }
    }

    /// Whether requests must carry basic auth credentials.
    pub fn requires_auth(&self) -> bool {
        !self.users.is_empty()
    }

    /// Whether this user and password matched before (compared in constant time).
    pub(super) fn verified_before(&self, user: &str, password: &[u8]) -> bool {
        use subtle::ConstantTimeEq as _;
        let verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
        verified
            .get(user)
            .is_some_and(|known| bool::from(known.as_slice().ct_eq(password)))
    }

    /// A hash of a random password at the highest cost configured: what an unknown user is
    /// checked against.
    fn decoy(&self) -> &str {
        self.decoy.get_or_init(|| {
            let cost = self
                .users
                .values()
                .filter_map(|hash| hash.parse::<bcrypt::HashParts>().ok())
                .map(|parts| parts.get_cost())
                .max()
                .unwrap_or(bcrypt::DEFAULT_COST);
            let password = fastrand::u64(..).to_string();
            bcrypt::hash(password, cost).unwrap_or_default()
        })
    }

    /// Runs bcrypt for `user` and `password`. An unknown user costs one bcrypt too, so timing
    /// does not tell which users exist.
    pub(super) fn check(&self, user: &str, password: &[u8]) -> bool {
        let Some(hash) = self.users.get(user) else {
            let _ = bcrypt::verify(password, self.decoy());
            return false;
        };
        let ok = bcrypt::verify(password, hash).unwrap_or(false);
        if ok {
            self.verified
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(user.to_owned(), password.to_vec());
        }
        ok
    }
}

impl fmt::Debug for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Access")
            .field("tls", &self.tls.is_some())
            .field("users", &self.users.len())
            .field("headers", &self.headers.len())
            .finish_non_exhaustive()
    }
}
