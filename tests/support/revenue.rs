//! Helpers shared by the Surface C tests: a client bound to one tenant's API key, and
//! direct inserts of rated usage (what Surface B's posting stores) for the chain tests.

use crate::{Refusal, TestServer, TestTenant};
use reqwest::{Method, Response};
use rust_decimal::Decimal;
use serde_json::Value;
use std::collections::BTreeMap;

/// A Surface C client for one tenant.
pub struct Rev<'a> {
    /// The server.
    pub s: &'a TestServer,
    /// The tenant.
    pub t: TestTenant,
}

impl<'a> Rev<'a> {
    /// Starts a tenant with `seed` and binds a client to it.
    pub async fn new(s: &'a TestServer, name: &str, seed: &str) -> Rev<'a> {
        let t = s.create_tenant(name, seed).await;
        Rev { s, t }
    }

    /// Sends `method /revenue/3{path}` with an optional JSON body.
    pub async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Response {
        let mut req = self
            .s
            .client
            .request(method, self.s.url(&format!("/revenue/3{path}")))
            .header("X-Api-Key", &self.t.api_key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        req.send().await.expect("request")
    }

    /// GET, asserting 200, answering the JSON.
    pub async fn get_ok(&self, path: &str) -> Value {
        let r = self.call(Method::GET, path, None).await;
        assert_eq!(r.status(), 200, "GET {path}");
        r.json().await.expect("json")
    }

    /// A paged GET: the JSON array and the three paging headers.
    pub async fn paged(&self, path: &str) -> (Vec<Value>, i64, i64, i64) {
        let r = self.call(Method::GET, path, None).await;
        assert_eq!(r.status(), 200, "GET {path}");
        let h = |name: &str| -> i64 {
            r.headers()
                .get(name)
                .unwrap_or_else(|| panic!("{name} header on {path}"))
                .to_str()
                .expect("ascii")
                .parse()
                .expect("integer")
        };
        let (total, elements, pages) = (
            h("X-Total-Count"),
            h("X-Elements-Count"),
            h("X-Total-Pages"),
        );
        let items: Vec<Value> = r.json().await.expect("json array");
        assert_eq!(items.len() as i64, elements, "X-Elements-Count of {path}");
        (items, total, elements, pages)
    }

    /// Sends and asserts the status, answering the JSON body (Null when empty).
    pub async fn expect(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        status: u16,
    ) -> Value {
        let r = self.call(method.clone(), path, body).await;
        let got = r.status().as_u16();
        let text = r.text().await.expect("body");
        assert_eq!(got, status, "{method} {path}: {text}");
        if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).expect("JSON body")
        }
    }

    /// Sends and asserts a `{code, message}` error with `status`; answers the message.
    pub async fn error(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        status: u16,
    ) -> String {
        let r = self.call(method.clone(), path, body).await;
        let (got, _code, message) = crate::error_body(r).await;
        assert_eq!(got, status, "{method} {path}: {message}");
        message
    }

    /// Starts a ledger run (`POST /glruns`, 201) and answers it.
    pub async fn gl_run(&self, body: Value) -> Value {
        self.expect(Method::POST, "/glruns", Some(body), 201).await
    }

    /// Starts a collector run (`POST /collector-runs`, 201) and answers it.
    pub async fn collect(&self, body: Value) -> Value {
        self.expect(Method::POST, "/collector-runs", Some(body), 201)
            .await
    }

    /// Collects every source from `from` (a MANUAL collector run) and posts it all in one
    /// run of ledger 1 up to `to`, both COMPLETE; answers the nets of its journal entries
    /// ([`Rev::journal_nets`]).
    pub async fn post_everything(&self, from: &str, to: &str) -> BTreeMap<String, Decimal> {
        let run = self
            .collect(serde_json::json!({"type": "MANUAL", "collector_operations":
                ["INSERT_USAGE", "INSERT_INVOICES", "INSERT_PAYMENTS", "INSERT_ADJUSTMENTS"],
                "data_fetch_from_date": from}))
            .await;
        assert_eq!(run["status"], "COMPLETE", "{run}");
        let gl = self
            .gl_run(serde_json::json!({"ledger_id": 1, "run_to_date": to}))
            .await;
        assert_eq!(gl["status"], "COMPLETE", "{gl}");
        self.journal_nets(&gl).await
    }

    /// Net of every account a ledger run's journal entries touch (debit +, credit -), by
    /// account; checks each entry moves a positive amount between two accounts.
    pub async fn journal_nets(&self, run: &Value) -> BTreeMap<String, Decimal> {
        let mut nets: BTreeMap<String, Decimal> = BTreeMap::new();
        for page in 1.. {
            let (entries, total, _, _) = self
                .paged(&format!(
                    "/glruns/{}/journal-entries?page_size=50&page_number={page}",
                    run["id"]
                ))
                .await;
            for e in &entries {
                let x: Decimal = e["amount"]
                    .to_string()
                    .trim_matches('"')
                    .parse()
                    .expect("decimal");
                assert!(x > Decimal::ZERO, "amounts are positive: {e}");
                let debit = e["debit_account"].as_str().expect("debit").to_string();
                let credit = e["credit_account"].as_str().expect("credit").to_string();
                assert_ne!(debit, credit, "{e}");
                *nets.entry(debit).or_default() += x;
                *nets.entry(credit).or_default() -= x;
            }
            if page * 50 >= total {
                break;
            }
        }
        nets
    }

    /// Sends every refusal of `cases` and checks its status, its `{code, message}` shape, the
    /// code that goes with the status and its message; a failure names the case.
    pub async fn assert_refused(&self, cases: &[Refusal<'_>]) {
        for (method, path, body, status, needle) in cases {
            let r = self.call(method.clone(), path, body.clone()).await;
            let case = format!("{method} {path} {}", body.clone().unwrap_or_default());
            let (got, code, message) = crate::error_body(r).await;
            crate::check_refusal(&case, (got, &code, &message), *status, needle);
        }
    }

    /// Checks the `X-Total-Count` of each `(path, total)` (a paged GET each).
    pub async fn assert_totals(&self, cases: &[(&str, i64)]) {
        for (path, total) in cases {
            assert_eq!(self.paged(path).await.1, *total, "X-Total-Count of {path}");
        }
    }

    /// Inserts a rated usage event with its charges, as Surface B's posting stores them;
    /// `account` None leaves it without a billing account. Answers the event id and the
    /// charge ids.
    pub fn insert_usage(
        &self,
        srid: &str,
        account: Option<i64>,
        start_time: &str,
        charges: &[(&str, i64)],
        voided: bool,
    ) -> (i64, Vec<i64>) {
        let db = self.s.state.store.tenant_db(&self.t.id).expect("tenant db");
        let srid = srid.to_string();
        let start = start_time.to_string();
        let charges: Vec<(String, i64)> =
            charges.iter().map(|(a, c)| (a.to_string(), *c)).collect();
        db.write_blocking(move |tx| {
            let resource: Option<i64> = tx
                .query_row(
                    "SELECT id FROM service_resources WHERE identifier = ?1",
                    [&srid],
                    |r| r.get(0),
                )
                .ok();
            let sum = charges
                .iter()
                .filter_map(|(a, _)| shared::money::parse_decimal(a))
                .reduce(|x, y| x + y)
                .map(shared::money::canonical)
                .unwrap_or_else(|| "0".to_string());
            tx.execute(
                "INSERT INTO usage_events (request_id, service_resource_identifier,
                   service_resource_id, billing_account_id, start_time, end_time, usage_uom,
                   usage_amount, total_charge, voided, created_at)
                 VALUES ('test-request', ?1, ?2, ?3, ?4, ?4, 'HOUR', '1', ?5, ?6, ?4)",
                (&srid, resource, account, &start, &sum, voided),
            )?;
            let event = tx.last_insert_rowid();
            let mut ids = Vec::new();
            for (amount, category) in &charges {
                tx.execute(
                    "INSERT INTO usage_event_charges (usage_event_id, usage_rule_id,
                       charge_category_id, charge, usage_uom, usage_amount)
                     VALUES (?1, 1, ?2, ?3, 'HOUR', '1')",
                    (event, category, amount),
                )?;
                ids.push(tx.last_insert_rowid());
            }
            Ok((event, ids))
        })
        .expect("insert usage")
    }
}

/// The created_on of a charge info, as the API renders it.
pub fn text(v: &Value, key: &str) -> String {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} in {v}"))
        .to_string()
}

/// The net of the accounts of `nets` whose name starts with `prefix` ("4": every revenue
/// account).
pub fn net(nets: &BTreeMap<String, Decimal>, prefix: &str) -> Decimal {
    nets.iter()
        .filter(|(k, _)| k.starts_with(prefix))
        .map(|(_, v)| *v)
        .sum()
}

/// `document` (a fixture document, a JSON object) with books to post to: one chart of
/// accounts, rule set and actuals run mode, and one ACTIVE ledger "Books" (id 1, UTC, over
/// billing account category 1, no zero-amount entries) with a calendar year of generated
/// periods for each of `years`. The fixture parts the books tests share.
pub fn with_books(mut document: Value, years: &[i32]) -> Value {
    let calendar_years: Vec<Value> = years
        .iter()
        .map(|y| {
            serde_json::json!({"ledger_id": 1, "generate_periods": true, "name": format!("FY{y}"),
                "start_date": format!("{y}-01-01"), "end_date": format!("{y}-12-31")})
        })
        .collect();
    let books = serde_json::json!({
        "charts_of_accounts": [{"id": 1, "name": "Chart"}],
        "rule_sets": [{"id": 1, "name": "Rules"}],
        "run_modes": [{"id": 1, "name": "Actuals", "run_type": "ACTUALS"}],
        "ledgers": [{"id": 1, "name": "Books", "status": "ACTIVE", "convert_currency": "NONE",
            "chart_of_account_id": 1, "rule_set_id": 1, "run_mode_actuals_id": 1,
            "billing_account_category_ids": [1], "create_zero_amount_entries": false,
            "timezone_name": "UTC"}],
        "calendar_years": calendar_years,
    });
    if let (Some(document), Value::Object(books)) = (document.as_object_mut(), books) {
        document.extend(books);
    }
    document
}
