//! True-up charge type relations of an agreement service: list, read, create, delete.

use super::agreement_services::reference;
use super::{id_text, load_in_order, IdRef, RenderContext};
use rusqlite::{Connection, Transaction};
use serde::{Deserialize, Serialize};
use shared::query::{FieldKind as K, FieldSpec as F, ListSource};
use shared::{Error, Result};

/// Longest true-up charge type, in characters.
const MAX_TYPE_CHARS: usize = 255;

/// Filter and sort whitelist of relations.
pub static FIELDS: &[F] = &[
    F::new("id", "t.id", K::Integer).sortable(),
    F::new("true_up_charge_type", "t.true_up_charge_type", K::Text).sortable(),
    F::new("agreement_service.id", "t.agreement_service_id", K::Integer),
];

/// The relation list (scoped to one agreement service by [`SCOPE`]).
pub static SOURCE: ListSource = ListSource {
    noun: "true-up charge type relation",
    fields: FIELDS,
    named_filters: &[],
    from: "true_up_charge_type_relations t",
    id: "t.id",
};

/// The condition that scopes the list to one agreement service (`?` is its id).
pub const SCOPE: &str = "t.agreement_service_id = ?";

/// A relation as Surface B renders it.
#[derive(Debug, Serialize)]
pub struct Relation {
    id: String,
    true_up_charge_type: String,
    agreement_service: IdRef,
}

/// Loads relations by id, in the order given.
pub fn load(conn: &Connection, ids: &[i64], _: &RenderContext) -> Result<Vec<Relation>> {
    load_in_order(
        conn,
        "SELECT id, true_up_charge_type, agreement_service_id FROM true_up_charge_type_relations WHERE id",
        ids,
        |r| {
            let id: i64 = r.get("id")?;
            Ok((
                id,
                Relation {
                    id: id_text(id),
                    true_up_charge_type: r.get("true_up_charge_type")?,
                    agreement_service: reference(r.get("agreement_service_id")?),
                },
            ))
        },
    )
}

/// The body of a relation to create.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewRelation {
    /// The charge type.
    pub true_up_charge_type: String,
}

/// Whether agreement service `id` exists.
pub fn agreement_service_exists(conn: &Connection, id: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM agreement_services WHERE id = ?1")?
        .exists([id])?)
}

/// Whether relation `id` belongs to agreement service `parent`.
pub fn belongs(conn: &Connection, parent: i64, id: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM true_up_charge_type_relations WHERE id = ?1 AND agreement_service_id = ?2",
        )?
        .exists([id, parent])?)
}

/// Creates a relation: 404 for an unknown agreement service, 400 for an empty, overlong or
/// duplicate charge type.
pub fn create(tx: &Transaction<'_>, parent: i64, body: &NewRelation) -> Result<i64> {
    let charge_type = body.true_up_charge_type.trim();
    if charge_type.is_empty() || charge_type.chars().count() > MAX_TYPE_CHARS {
        return Err(Error::bad_request(format!(
            "true_up_charge_type must be 1 to {MAX_TYPE_CHARS} characters"
        )));
    }
    shared::domain::agreements::create_true_up_relation(tx, parent, charge_type).map_err(
        |e| match e {
            // The interface lists 400 and 404 for this endpoint; a duplicate is a bad request.
            Error::Conflict(m) => Error::BadRequest(m),
            other => other,
        },
    )
}

/// Deletes a relation of `parent`: 404 unless it exists there.
pub fn delete(tx: &Transaction<'_>, parent: i64, id: i64) -> Result<()> {
    if !agreement_service_exists(tx, parent)? {
        return Err(Error::not_found(format!(
            "agreement service {parent} does not exist"
        )));
    }
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
