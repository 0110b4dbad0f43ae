//! Products (the catalogue) as records (`super::records`); read by Surface A's
//! `products`. Reads only: `domain::catalog` writes the table.

use crate::query::{FieldKind as K, FieldSpec as F, ListSource};

/// The product records.
pub static RECORDS: ListSource = ListSource {
    noun: "product",
    fields: &[
        F::new("id", "t.id", K::Integer),
        F::new("name", "t.name", K::Text),
        F::new("sku", "t.sku", K::Text),
        F::new(
            "external_product_number",
            "t.external_product_number",
            K::Text,
        ),
    ],
    named_filters: &["name", "sku"],
    from: "products t",
    id: "t.id",
};
