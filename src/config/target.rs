//! Which account a target names: `--target`, `/probe?target=`, `backfill --target`.

/// Why a target names no account (`--target`, `/probe?target=`, `backfill --target`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// Several accounts, and no target to choose one.
    #[error("several accounts are configured: give --target NAME, one of {accounts}")]
    Missing {
        /// The accounts' names, comma-separated.
        accounts: String,
    },
    /// A target given where the one account is `[api]`.
    #[error("--target {0}: the one account is in [api]; leave --target out")]
    NotNeeded(String),
    /// A target that is no account's name (shown to 64 characters).
    #[error("unknown target `{target}`: one of {accounts}")]
    Unknown {
        /// The target, shortened.
        target: String,
        /// The accounts' names, comma-separated.
        accounts: String,
    },
}

/// The account a target names among `names` (in configuration order; `None` is the one
/// account of `[api]` or `--demo`); without a target, the one account of a single-account
/// exporter.
pub fn resolve(names: &[Option<&str>], target: Option<&str>) -> Result<usize, TargetError> {
    let accounts = || {
        names
            .iter()
            .flatten()
            .copied()
            .collect::<Vec<_>>()
            .join(", ")
    };
    let single = matches!(names, [None]);
    match (target, single) {
        (None, true) => Ok(0),
        (None, false) => Err(TargetError::Missing {
            accounts: accounts(),
        }),
        (Some(name), true) => Err(TargetError::NotNeeded(name.to_owned())),
        (Some(name), false) => {
            names
                .iter()
                .position(|n| *n == Some(name))
                .ok_or_else(|| TargetError::Unknown {
                    target: name.chars().take(64).collect(),
                    accounts: accounts(),
                })
        }
    }
}
