//! Test setup shared by the usage tests: a product sold to an account as an agreement service
//! carrying one SRID, through the domain functions the seed uses (no surface creates
//! services).

use serde_json::json;
use shared::domain::agreements;

/// Creates the agreement `<name> agreement` offering `product_id` and, under it, an agreement
/// service of that product for `account_id` from 2026-01-01 to 2026-07-01 (dates in the
/// test tenants' zone, America/Chicago) carrying `srid`.
pub(crate) fn sell_product(
    tx: &rusqlite::Transaction<'_>,
    name: &str,
    account_id: i64,
    product_id: i64,
    srid: &str,
) -> shared::Result<()> {
    let tz = shared::time::parse_tz("America/Chicago")
        .ok_or_else(|| shared::Error::Internal("time zone".into()))?;
    let agreement: agreements::NewAgreement = serde_json::from_value(
        json!({"name": format!("{name} agreement"), "product_ids": [product_id]}),
    )?;
    let agreement_id = agreements::create_agreement(tx, &agreement, tz)?;
    let service: agreements::NewService = serde_json::from_value(json!({
        "billing_account_id": account_id, "product_id": product_id, "agreement_id": agreement_id,
        "start_date": "2026-01-01", "end_date": "2026-07-01",
        "resources": [{"identifier": srid}]
    }))?;
    agreements::create_service(tx, &service, tz)?;
    Ok(())
}
