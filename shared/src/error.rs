//! The domain error: what went wrong, independent of any surface. Each surface maps it onto
//! its own error shape and status code (see `web` for the JSON surfaces).

/// Result with the domain [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything a domain or store operation can fail with. Cloneable, so that the store can
/// remember a failed tenant open and answer it again without retrying.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The input is malformed or breaks a rule; the message says which and where.
    #[error("{0}")]
    BadRequest(String),
    /// The named record does not exist (for this tenant).
    #[error("{0}")]
    NotFound(String),
    /// The request conflicts with the current state (duplicate name, run already running...).
    #[error("{0}")]
    Conflict(String),
    /// A precondition on the state of another record does not hold.
    #[error("{0}")]
    PreconditionFailed(String),
    /// The storage backend cannot be reached right now; nothing was applied.
    #[error("{0}")]
    Unavailable(String),
    /// The storage backend could not confirm, before the write's deadline, whether a change
    /// was applied: it may or may not have been (see docs/storage.md, fencing).
    #[error("{0}")]
    OutcomeUnknown(String),
    /// The tenant's data was written by a newer deployment (a newer schema version) than this
    /// one: 503 until this function is deployed at that version. Unlike `Unavailable`, the
    /// message is shown to the client (it names both versions).
    #[error("{0}")]
    NewerSchema(String),
    /// A bug or an unexpected storage failure; details go to the log, never to the client.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// Shorthand for [`Error::BadRequest`].
    pub fn bad_request(msg: impl Into<String>) -> Self {
        Error::BadRequest(msg.into())
    }
    /// Shorthand for [`Error::NotFound`].
    pub fn not_found(msg: impl Into<String>) -> Self {
        Error::NotFound(msg.into())
    }
    /// Shorthand for [`Error::Conflict`].
    pub fn conflict(msg: impl Into<String>) -> Self {
        Error::Conflict(msg.into())
    }
}

/// How many characters of a client's value an error message quotes (see [`quoted`]).
pub const QUOTED_CHARS: usize = 100;

/// A client's value as an error message quotes it: in single quotes, cut after
/// [`QUOTED_CHARS`] characters with `…` and the full length, so that a message never echoes a
/// long input whole (a 1 MiB body field would otherwise come back as a 1 MiB message). Every
/// message that quotes client input goes through here.
pub fn quoted(value: &str) -> String {
    match value.char_indices().nth(QUOTED_CHARS) {
        None => format!("'{value}'"),
        Some((cut, _)) => format!(
            "'{}…' ({} characters)",
            &value[..cut],
            value.chars().count()
        ),
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        match e {
            rusqlite::Error::SqliteFailure(ref f, _)
                if f.code == rusqlite::ErrorCode::DatabaseBusy
                    || f.code == rusqlite::ErrorCode::DatabaseLocked =>
            {
                Error::Unavailable(format!("database busy: {e}"))
            }
            other => Error::Internal(other.to_string()),
        }
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Internal(format!("json: {e}"))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Internal(format!("io: {e}"))
    }
}
