//! The body of a bill batch to create, turned into the domain's `NewBillBatch` (its rules
//! are `shared::domain::bill_batches`).

use serde::Deserialize;
use shared::domain::bill_batches::NewBillBatch;

/// The body of `POST /bill-batches`: the fields the interface lists.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = NewBillBatch)]
pub struct CreateBody {
    #[schema(schema_with = shared::domain::enum_schemas::bill_batch_type)]
    bill_batch_type: String,
    description: Option<String>,
    #[schema(format = DateTime)]
    invoice_date: Option<String>,
    #[serde(default)]
    auto_approve: bool,
    #[schema(format = DateTime)]
    invoice_due_date: Option<String>,
    #[schema(min_length = 1, max_length = 255)]
    name: String,
    #[serde(default)]
    use_payment_term: bool,
}

impl CreateBody {
    /// The bill batch to create (status ACTIVE, currency USD, no accounts).
    pub fn into_new(self) -> NewBillBatch {
        NewBillBatch {
            id: None,
            bill_batch_type: self.bill_batch_type,
            name: self.name,
            description: self.description,
            end_date: None,
            auto_approve: self.auto_approve,
            use_payment_term: self.use_payment_term,
            internal_render: false,
            currency_code: None,
            status: None,
            billing_account_category_id: None,
            invoice_date: self.invoice_date,
            invoice_due_date: self.invoice_due_date,
            billing_account_ids: Vec::new(),
        }
    }
}
