//! The Rust client (clients/rust: progenitor's client of the OpenAPI 3.0.3 documents, built
//! when the crate builds) against the real server: the calls a team makes first, through
//! the generated methods and types only, amounts as exact decimals.

use e2e::{TestServer, ADMIN_KEY};
use sandbox_client::{admin, billing, revenue, with_header, Decimal};
use serde_json::value::RawValue;

/// A generated value as JSON (the generated types derive no PartialEq: they compare as what
/// they send).
fn json<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).expect("a generated type serializes")
}

/// `v`'s JSON read back as `U`: a GET answer turned into its PUT body, as a client does.
fn convert<T: serde::Serialize, U: serde::de::DeserializeOwned>(v: &T) -> U {
    let text = serde_json::to_string(v).expect("serialize");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_client_makes_a_teams_first_calls() {
    use billing::types as bt;
    use revenue::types as rt;
    let s = TestServer::start().await;
    let tenant = s.create_tenant("rust-client", "demo").await;
    let http = with_header("X-Api-Key", &tenant.api_key).expect("client");
    let b = billing::Client::new_with_client(&s.base, http.clone());

    // A filtered list, whole and page by page.
    let all = b
        .list_agreement_services()
        .status(bt::ListAgreementServicesStatus::Active)
        .filter("agreement_period GT '0'")
        .sort("id")
        .page_size(50)
        .send()
        .await
        .expect("list agreement services");
    let total: usize = all.headers()["x-total-count"]
        .to_str()
        .expect("header")
        .parse()
        .expect("a count");
    let services = all.into_inner();
    assert!(services.len() >= 3, "{} ACTIVE services", services.len());
    assert_eq!(total, services.len());
    let mut paged = Vec::new();
    for page in 1.. {
        let got = b
            .list_agreement_services()
            .status(bt::ListAgreementServicesStatus::Active)
            .filter("agreement_period GT '0'")
            .sort("id")
            .page_size(2)
            .page_number(page)
            .send()
            .await
            .expect("a page")
            .into_inner();
        if got.is_empty() {
            break;
        }
        assert!(got.len() <= 2);
        paged.extend(got.into_iter().map(|s| s.id));
        assert!(page < 100, "paging does not end");
    }
    let ids: Vec<String> = services.iter().map(|s| s.id.clone()).collect();
    assert_eq!(paged, ids, "pages of 2 vs one page of 50");
    println!("ok: filtered list, {total} services, in pages of 2 too");

    // GET -> PUT round trip of each service, one with nulls among them.
    for svc in &services {
        let got = b
            .get_agreement_service()
            .id(&svc.id)
            .send()
            .await
            .expect("get")
            .into_inner();
        let body: bt::AgreementServicePatch = convert(&got);
        let after = b
            .update_agreement_service()
            .id(&svc.id)
            .body(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("put back service {}: {e}", svc.id))
            .into_inner();
        assert_eq!(json(&after), json(&got), "service {}", svc.id);
    }
    assert!(services
        .iter()
        .any(|s| s.minimum_amount_currency_code.is_none()));
    println!(
        "ok: GET then PUT back {} services unchanged",
        services.len()
    );

    // A usage bulk post, one event rated and one erred; the amount keeps its 20 digits.
    let srid = services[0]
        .service_resource_identifier
        .clone()
        .expect("the first demo service has a resource identifier");
    let amount: Decimal = "90.123456789012345678".parse().expect("a decimal");
    let event = |srid: &str, reference: &str, amount: Decimal| {
        bt::UsageEvent::builder()
            .start_time("2026-02-01")
            .service_resource_identifier(srid)
            .usage_uom(bt::UsageEventUsageUom::Minute)
            .usage_amount(amount)
            .reference_id(Some(reference.parse().expect("a reference id")))
    };
    let one: Decimal = "1".parse().expect("a decimal");
    let outcome = b
        .post_usage_events()
        .body(
            bt::BulkRequest::builder()
                .mode(bt::BulkRequestMode::OverwriteOnExisting)
                .usage_events(vec![
                    event(&srid, "rust-good", amount).try_into().expect("event"),
                    event("no-such-srid", "rust-erred", one)
                        .try_into()
                        .expect("event"),
                ]),
        )
        .send()
        .await
        .expect("post usage events")
        .into_inner();
    assert_eq!(outcome.rated_events.len(), 1, "{}", json(&outcome));
    assert_eq!(outcome.erred_events.len(), 1, "{}", json(&outcome));
    assert_eq!(
        outcome.erred_events[0].code,
        bt::ErredEventCode::UnknownServiceResource
    );
    let rated = &outcome.rated_events[0];
    assert_eq!(rated.usage_amount, amount, "the amount as posted");
    // The same event read back by the client and as raw text: the same digits.
    let id = rated.id.clone().expect("a rated event's id");
    let read = b
        .get_usage_event()
        .id(&id)
        .send()
        .await
        .expect("get the event")
        .into_inner();
    #[derive(serde::Deserialize)]
    struct Raw {
        usage_amount: Box<RawValue>,
        total_charge: Box<RawValue>,
    }
    let raw: Raw = serde_json::from_str(
        &s.get_with_key(&format!("/billing/2/usage-events/{id}"), &tenant.api_key)
            .await
            .text()
            .await
            .expect("body"),
    )
    .expect("the event");
    assert_eq!(read.usage_amount.to_string(), raw.usage_amount.get());
    assert_eq!(read.total_charge.to_string(), raw.total_charge.get());
    assert_eq!(raw.usage_amount.get(), "90.123456789012345678");
    println!(
        "ok: usage bulk post (1 rated, total {}; 1 erred)",
        read.total_charge
    );

    // Surface C: GET -> PUT round trip of every ledger, a collector run and a ledger run.
    let c = revenue::Client::new_with_client(&format!("{}/revenue/3", s.base), http);
    let ledgers = c
        .list_ledgers()
        .status(rt::ListLedgersStatus::Active)
        .send()
        .await
        .expect("list ledgers")
        .into_inner();
    assert!(!ledgers.is_empty(), "no ledger");
    for item in &ledgers {
        let ledger = c
            .get_ledger()
            .id(item.id)
            .send()
            .await
            .expect("get ledger")
            .into_inner();
        let body: rt::LedgerFields = convert(&ledger);
        let after = c
            .update_ledger()
            .id(item.id)
            .body(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("put back ledger {}: {e}", item.id))
            .into_inner();
        assert_eq!(json(&after), json(&ledger), "ledger {}", item.id);
    }
    println!("ok: GET then PUT back {} ledgers unchanged", ledgers.len());
    let run = c
        .start_collector_run()
        .body(
            rt::NewCollectorRun::builder()
                .type_(rt::NewCollectorRunType::Manual)
                .collector_operations(Vec::new()),
        )
        .send()
        .await
        .expect("collector run");
    assert_eq!(run.status().as_u16(), 201);
    let gl = c
        .start_gl_run()
        .body(
            rt::NewGlRun::builder()
                .ledger_id(ledgers[0].id)
                .run_to_date("2026-12-01"),
        )
        .send()
        .await
        .expect("ledger run");
    assert_eq!(gl.status().as_u16(), 201);
    println!(
        "ok: collector run {} and ledger run {} ({} errors)",
        run.id, gl.id, gl.num_errors
    );

    // The admin API: the tenant's clock.
    let a = admin::Client::new_with_client(
        &s.base,
        with_header("X-Admin-Key", ADMIN_KEY).expect("client"),
    );
    let clock = a
        .get_clock()
        .id(&tenant.id)
        .send()
        .await
        .expect("clock")
        .into_inner();
    println!("ok: the tenant's clock ({})", json(&clock));
}
