//! True-up charge type relations of an agreement service as Surface B lists and renders
//! them; creating and deleting them is `crate::domain::agreements`.

use super::agreement_services::reference;
use super::{id_text, load_in_order, IdRef, List, Parent, RenderContext};
use crate::query::{FieldKind as K, FieldSpec as F, ListSource};
use crate::Result;
use rusqlite::Connection;
use serde::Serialize;

/// Filter and sort whitelist of relations.
pub static FIELDS: &[F] = &[
    F::new("id", "t.id", K::Integer).sortable(),
    F::new("true_up_charge_type", "t.true_up_charge_type", K::Text).sortable(),
    F::new("agreement_service.id", "t.agreement_service_id", K::Integer),
];

/// The relation list (scoped to one agreement service by [`BY_AGREEMENT_SERVICE`]).
pub static SOURCE: ListSource = ListSource {
    noun: "true-up charge type relation",
    fields: FIELDS,
    named_filters: &[],
    from: "true_up_charge_type_relations t",
    id: "t.id",
};

/// The relation list as Surface B serves it.
pub const LIST: List<Relation> = List::plain(&SOURCE, load);

/// The relations of one agreement service (over [`SOURCE`]'s alias `t`).
pub const BY_AGREEMENT_SERVICE: Parent = Parent {
    table: "agreement_services",
    noun: "agreement service",
    condition: "t.agreement_service_id = ?",
};

/// A relation as Surface B renders it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = TrueUpRelation)]
pub struct Relation {
    #[schema(schema_with = crate::json_schema::identifier)]
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
