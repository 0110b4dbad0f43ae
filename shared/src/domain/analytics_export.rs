//! SVS replication: copies the tenant's service and charge views to the analytics store as
//! JSON Lines objects.
//!
//! SVS data here is two views:
//! - `service_view`: one row per service (account, category, product, agreement, status,
//!   dates, its service resource identifiers);
//! - `charge_view`: one row per charge info record (type, account, date, exact amount,
//!   currency, category, invoice, service, product, parent, and its state per ledger).
//!
//! Each view is written as objects of at most `batch_size` rows under the tenant's storage as
//! `analytics/svs/<replication_id>/<view>/part-NNNNN.jsonl`. Where the objects go is an
//! [`AnalyticsSink`]: [`TenantFilesSink`] stores them beside the tenant's data through the
//! store, so they land in `<data_dir>/tenants/<tenant_id>/` locally and under
//! `<prefix>/tenants/<tenant_id>/` in the S3 bucket when deployed.

use crate::money::{from_sql_text, Number};
use crate::time::to_storage;
use crate::Result;
use rusqlite::Connection;
use serde::Serialize;
use std::collections::HashMap;

/// Smallest and largest accepted batch_size, and the default.
pub const BATCH_SIZE_RANGE: (i64, i64, i64) = (1, 10_000, 1000);

/// Where replicated objects are stored. Implementations map an error reaching their
/// storage to [`Error::Unavailable`] (503), so that a failed replication is retried.
pub trait AnalyticsSink: Send + Sync {
    /// Stores `body` under `key` (a `/`-separated relative key), replacing any object there.
    fn put(&self, key: &str, body: &[u8]) -> Result<()>;
}

/// Stores objects as files of one tenant through the store (local data dir or S3).
pub struct TenantFilesSink {
    store: crate::store::Store,
    tenant_id: String,
}

impl TenantFilesSink {
    /// A sink writing below the storage of `tenant_id`.
    pub fn new(store: crate::store::Store, tenant_id: impl Into<String>) -> TenantFilesSink {
        TenantFilesSink {
            store,
            tenant_id: tenant_id.into(),
        }
    }
}

impl AnalyticsSink for TenantFilesSink {
    fn put(&self, key: &str, body: &[u8]) -> Result<()> {
        self.store.put_tenant_file(&self.tenant_id, key, body)
    }
}

#[derive(Debug, Serialize)]
struct ServiceRow {
    service_id: i64,
    billing_account_id: i64,
    account_num: String,
    billing_account_category_id: Option<i64>,
    product_id: i64,
    product_name: String,
    agreement_id: Option<i64>,
    agreement_name: Option<String>,
    status: String,
    start_date: String,
    end_date: Option<String>,
    service_resource_identifiers: Vec<String>,
}

#[derive(Debug, Serialize)]
struct LedgerState {
    ledger_id: i64,
    state: String,
    gl_run_id: Option<i64>,
}

#[derive(Debug, Serialize)]
struct ChargeRow {
    charge_info_id: i64,
    charge_info_type: String,
    core_id: String,
    billing_account_num: String,
    charge_date: Option<String>,
    amount: Number,
    currency_code: Option<String>,
    charge_category: Option<String>,
    invoice_number: Option<String>,
    service_id: Option<i64>,
    product_id: Option<i64>,
    parent_id: Option<i64>,
    created_on: String,
    ledger_states: Vec<LedgerState>,
}

/// The SVS rows of a tenant, each already one JSON line.
pub struct SvsSnapshot {
    services: Vec<String>,
    charges: Vec<String>,
    /// The tenant's clock when the snapshot was read: the replication's time.
    taken_at: chrono::DateTime<chrono::Utc>,
}

/// Reads both views from one consistent snapshot.
pub fn read_svs(conn: &Connection) -> Result<SvsSnapshot> {
    let mut srids =
        conn.prepare("SELECT identifier FROM service_resources WHERE service_id = ?1 ORDER BY id")?;
    let mut stmt = conn.prepare(
        "SELECT s.id, a.id, a.account_num, a.billing_account_category_id, p.id, p.name,
                g.id, g.name, s.status, s.start_date, s.end_date
         FROM services s JOIN billing_accounts a ON a.id = s.billing_account_id
         JOIN products p ON p.id = s.product_id
         LEFT JOIN agreement_services ags ON ags.id =
              (SELECT MIN(x.id) FROM agreement_services x WHERE x.service_id = s.id)
         LEFT JOIN agreements g ON g.id = ags.agreement_id
         ORDER BY s.id",
    )?;
    let rows = stmt
        .query_map([], |r| {
            Ok(ServiceRow {
                service_id: r.get(0)?,
                billing_account_id: r.get(1)?,
                account_num: r.get(2)?,
                billing_account_category_id: r.get(3)?,
                product_id: r.get(4)?,
                product_name: r.get(5)?,
                agreement_id: r.get(6)?,
                agreement_name: r.get(7)?,
                status: r.get(8)?,
                start_date: r.get(9)?,
                end_date: r.get(10)?,
                service_resource_identifiers: Vec::new(),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut services = Vec::with_capacity(rows.len());
    for mut s in rows {
        s.service_resource_identifiers = srids
            .query_map([s.service_id], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        services.push(serde_json::to_string(&s)?);
    }
    // All states in one pass, grouped by record (one lookup per record would scan them all).
    let mut states: HashMap<i64, Vec<LedgerState>> = HashMap::new();
    let mut stmt = conn.prepare(
        "SELECT charge_info_id, ledger_id, state, gl_run_id FROM charge_info_states
         ORDER BY charge_info_id, ledger_id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        states.entry(r.get(0)?).or_default().push(LedgerState {
            ledger_id: r.get(1)?,
            state: r.get(2)?,
            gl_run_id: r.get(3)?,
        });
    }
    drop(rows);
    let mut stmt = conn.prepare(
        "SELECT id, charge_info_type, core_id, billing_account_num, charge_date, amount,
                currency_code, charge_category, invoice_number, service_id, product_id,
                parent_id, created_on
         FROM charge_infos ORDER BY id",
    )?;
    let rows = stmt
        .query_map([], |r| {
            Ok(ChargeRow {
                charge_info_id: r.get(0)?,
                charge_info_type: r.get(1)?,
                core_id: r.get(2)?,
                billing_account_num: r.get(3)?,
                charge_date: r.get(4)?,
                amount: Number(from_sql_text(r.get_ref(5)?).unwrap_or_default()),
                currency_code: r.get(6)?,
                charge_category: r.get(7)?,
                invoice_number: r.get(8)?,
                service_id: r.get(9)?,
                product_id: r.get(10)?,
                parent_id: r.get(11)?,
                created_on: r.get(12)?,
                ledger_states: Vec::new(),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut charges = Vec::with_capacity(rows.len());
    for mut c in rows {
        c.ledger_states = states.remove(&c.charge_info_id).unwrap_or_default();
        charges.push(serde_json::to_string(&c)?);
    }
    Ok(SvsSnapshot {
        services,
        charges,
        taken_at: crate::time::now_for(conn)?,
    })
}

/// What one view's replication wrote.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = ReplicationView)]
pub struct ViewSummary {
    /// `service_view` or `charge_view`.
    pub name: String,
    /// Rows written.
    pub rows: usize,
    /// Object keys written, in order.
    pub objects: Vec<String>,
}

/// The answer of `POST /replication/svs`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ReplicationSummary {
    /// Identifies this replication; also the folder of its objects.
    pub replication_id: String,
    /// COMPLETE (a failure answers an error instead and leaves partial objects that the
    /// next replication does not reuse).
    pub status: String,
    /// Rows per object at most.
    pub batch_size: i64,
    /// The key prefix of every object written.
    pub prefix: String,
    /// Per view.
    pub views: Vec<ViewSummary>,
    /// Rows written in all.
    pub total_rows: usize,
    /// Objects written in all.
    pub total_objects: usize,
    /// When the snapshot was taken.
    #[schema(format = DateTime)]
    pub replicated_at: String,
}

/// Writes `snapshot` through `sink` in objects of at most `batch_size` rows.
pub fn write_svs(
    sink: &dyn AnalyticsSink,
    snapshot: &SvsSnapshot,
    batch_size: i64,
) -> Result<ReplicationSummary> {
    let now = snapshot.taken_at;
    let replication_id = format!(
        "{}-{}",
        now.format("%Y%m%dT%H%M%S%3fZ"),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let prefix = format!("analytics/svs/{replication_id}/");
    let size = usize::try_from(batch_size.max(1)).unwrap_or(1);
    let mut views = Vec::new();
    for (name, rows) in [
        ("service_view", &snapshot.services),
        ("charge_view", &snapshot.charges),
    ] {
        let mut objects = Vec::new();
        for (i, chunk) in rows.chunks(size).enumerate() {
            let key = format!("{prefix}{name}/part-{:05}.jsonl", i + 1);
            let mut body = chunk.join("\n");
            body.push('\n');
            sink.put(&key, body.as_bytes())?;
            objects.push(key);
        }
        views.push(ViewSummary {
            name: name.to_string(),
            rows: rows.len(),
            objects,
        });
    }
    Ok(ReplicationSummary {
        replication_id,
        status: "COMPLETE".into(),
        batch_size,
        total_rows: views.iter().map(|v| v.rows).sum(),
        total_objects: views.iter().map(|v| v.objects.len()).sum(),
        views,
        prefix,
        replicated_at: to_storage(now),
    })
}
