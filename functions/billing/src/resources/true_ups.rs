//! The body of a true-up charge type relation to create (creating and deleting relations is
//! `shared::domain::agreements`).

use serde::Deserialize;

/// The body of `POST .../true-up-charge-type-relations`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NewTrueUpRelation)]
pub struct NewRelation {
    /// The charge type.
    #[schema(min_length = 1, max_length = 255)]
    pub true_up_charge_type: String,
}
