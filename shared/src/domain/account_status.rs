//! Billing account status commands (suspend, resume, deactivate) and the transitions they
//! allow. A command from a status it does not start from is refused with a conflict that
//! names the current status and the ones the command accepts.

use crate::{Error, Result};
use rusqlite::{OptionalExtension, Transaction};

/// A status command on a billing account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusCommand {
    /// Stop service for a while: ACTIVE or COLLECTION -> SUSPENDED.
    Suspend,
    /// Restore service: SUSPENDED or COLLECTION -> ACTIVE.
    Resume,
    /// End the account: any status but DEACTIVATED, FINAL_BILL or CLOSED -> DEACTIVATED.
    Deactivate,
}

impl StatusCommand {
    /// The command's name as it appears in paths.
    pub fn name(self) -> &'static str {
        match self {
            StatusCommand::Suspend => "suspend",
            StatusCommand::Resume => "resume",
            StatusCommand::Deactivate => "deactivate",
        }
    }

    /// Statuses the command starts from.
    pub fn allowed_from(self) -> &'static [&'static str] {
        match self {
            StatusCommand::Suspend => &["ACTIVE", "COLLECTION"],
            StatusCommand::Resume => &["SUSPENDED", "COLLECTION"],
            StatusCommand::Deactivate => &["ACTIVE", "SUSPENDED", "PENDING", "COLLECTION"],
        }
    }

    /// The status the command leads to.
    pub fn target(self) -> &'static str {
        match self {
            StatusCommand::Suspend => "SUSPENDED",
            StatusCommand::Resume => "ACTIVE",
            StatusCommand::Deactivate => "DEACTIVATED",
        }
    }
}

/// The current status of billing account `account_id` (404 when it does not exist).
pub fn status_of(conn: &rusqlite::Connection, account_id: i64) -> Result<String> {
    conn.query_row(
        "SELECT status FROM billing_accounts WHERE id = ?1",
        [account_id],
        |r| r.get(0),
    )
    .optional()?
    .ok_or_else(|| Error::not_found(format!("billing account {account_id} does not exist")))
}

/// Runs `command` on billing account `account_id` at the stored instant `at` and answers the
/// new status. 404 for an unknown account, 409 for a transition the command does not allow.
/// Deactivation also sets the account's end date when it has none.
pub fn change_status(
    tx: &Transaction<'_>,
    account_id: i64,
    command: StatusCommand,
    at: &str,
) -> Result<&'static str> {
    let current = status_of(tx, account_id)?;
    if !command.allowed_from().contains(&current.as_str()) {
        return Err(Error::conflict(format!(
            "cannot {} billing account {account_id}: its status is {current}; {} applies only to {}",
            command.name(),
            command.name(),
            command.allowed_from().join(", ")
        )));
    }
    tx.execute(
        "UPDATE billing_accounts SET status = ?1 WHERE id = ?2",
        rusqlite::params![command.target(), account_id],
    )?;
    if command == StatusCommand::Deactivate {
        tx.execute(
            "UPDATE billing_accounts SET end_date = ?1 WHERE id = ?2 AND end_date IS NULL",
            rusqlite::params![at, account_id],
        )?;
    }
    Ok(command.target())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_leaves_its_own_target_status() {
        for c in [
            StatusCommand::Suspend,
            StatusCommand::Resume,
            StatusCommand::Deactivate,
        ] {
            assert!(!c.allowed_from().contains(&c.target()), "{c:?}");
        }
    }
}
