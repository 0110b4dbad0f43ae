//! Which bill batches a billing account belongs to: a bill batch with a billing account
//! category bills the accounts of that category, so an account created with (or moved into)
//! a category joins that category's ACTIVE bill batches. Batches it already belongs to keep
//! it; batches without a category are filled explicitly.
//!
//! This module is the one writer of `bill_batch_accounts`: an explicit add (Surface B) and a
//! bill run recording whom it billed call [`add_account`].

use crate::domain::status::BillBatchStatus;
use crate::Result;
use rusqlite::Transaction;

/// Adds billing account `account_id` to bill batch `bill_batch_id` (idempotent; both exist).
pub fn add_account(tx: &Transaction<'_>, bill_batch_id: i64, account_id: i64) -> Result<()> {
    tx.prepare_cached(
        "INSERT OR IGNORE INTO bill_batch_accounts (bill_batch_id, billing_account_id) VALUES (?1, ?2)",
    )?
    .execute([bill_batch_id, account_id])?;
    Ok(())
}

/// Adds billing account `account_id` to every ACTIVE bill batch of its category (idempotent)
/// and answers how many batches it newly joined.
pub fn join_category_bill_batches(tx: &Transaction<'_>, account_id: i64) -> Result<usize> {
    Ok(tx.execute(
        "INSERT OR IGNORE INTO bill_batch_accounts (bill_batch_id, billing_account_id) \
         SELECT b.id, a.id FROM billing_accounts a \
         JOIN bill_batches b ON b.billing_account_category_id = a.billing_account_category_id \
         WHERE a.id = ?1 AND b.status = ?2",
        rusqlite::params![account_id, BillBatchStatus::Active],
    )?)
}
