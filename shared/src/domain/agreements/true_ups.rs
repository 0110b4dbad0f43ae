//! True-up charge type relations of an agreement service: the charge types whose usage
//! counts towards the service's minimum. A pair exists at most once.

use super::check_text;
use crate::domain::{insert, require};
use crate::query::list::MAX_NESTED;
use crate::{Error, Result};
use rusqlite::Transaction;

/// Relates a true-up charge type to an agreement service; a pair that exists is a conflict.
pub fn create_true_up_relation(
    tx: &Transaction<'_>,
    agreement_service_id: i64,
    charge_type: &str,
) -> Result<i64> {
    require(
        tx,
        "agreement_services",
        "agreement service",
        agreement_service_id,
    )?;
    if charge_type.trim().is_empty() {
        return Err(Error::bad_request("true_up_charge_type must not be empty"));
    }
    let exists = tx
        .prepare_cached(
            "SELECT 1 FROM true_up_charge_type_relations WHERE agreement_service_id = ?1 AND true_up_charge_type = ?2",
        )?
        .exists(rusqlite::params![agreement_service_id, charge_type])?;
    if exists {
        return Err(Error::conflict(format!(
            "agreement service {agreement_service_id} already has true-up charge type '{charge_type}'"
        )));
    }
    insert(
        tx,
        "true_up_charge_type_relations",
        &[
            ("agreement_service_id", &agreement_service_id),
            ("true_up_charge_type", &charge_type),
        ],
    )
}

/// Adds a true-up charge type (trimmed) to agreement service `parent`: 400 for an empty or
/// overlong type, 404 for an unknown agreement service, a conflict for a duplicate.
pub fn add_true_up_charge_type(
    tx: &Transaction<'_>,
    parent: i64,
    charge_type: &str,
) -> Result<i64> {
    let charge_type = charge_type.trim();
    check_text("true_up_charge_type", charge_type)?;
    create_true_up_relation(tx, parent, charge_type)
}

/// Deletes relation `id` of agreement service `parent`: 404 unless both exist together.
pub fn delete_true_up_relation(tx: &Transaction<'_>, parent: i64, id: i64) -> Result<()> {
    require(tx, "agreement_services", "agreement service", parent)?;
    let removed = tx.execute(
        "DELETE FROM true_up_charge_type_relations WHERE id = ?1 AND agreement_service_id = ?2",
        [id, parent],
    )?;
    if removed == 0 {
        return Err(Error::not_found(format!(
            "true-up charge type relation {id} does not exist for agreement service {parent}"
        )));
    }
    Ok(())
}

/// Makes the agreement service's true-up charge types exactly `types` (at most
/// [`MAX_NESTED`], each 1 to [`super::MAX_TEXT_CHARS`] characters; duplicates collapse).
pub fn replace_true_up_charge_types(tx: &Transaction<'_>, id: i64, types: &[String]) -> Result<()> {
    if types.len() > MAX_NESTED {
        return Err(Error::bad_request(format!(
            "true_up_charge_types: at most {MAX_NESTED} values are allowed"
        )));
    }
    for t in types {
        check_text("true_up_charge_types", t)?;
    }
    let existing: Vec<String> = tx
        .prepare_cached(
            "SELECT true_up_charge_type FROM true_up_charge_type_relations WHERE agreement_service_id = ?1",
        )?
        .query_map([id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for old in existing.iter().filter(|o| !types.contains(o)) {
        tx.execute(
            "DELETE FROM true_up_charge_type_relations WHERE agreement_service_id = ?1 AND true_up_charge_type = ?2",
            rusqlite::params![id, old],
        )?;
    }
    let mut added: Vec<&String> = Vec::new();
    for t in types {
        if !existing.contains(t) && !added.contains(&t) {
            create_true_up_relation(tx, id, t)?;
            added.push(t);
        }
    }
    Ok(())
}
