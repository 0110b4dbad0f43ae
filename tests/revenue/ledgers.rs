//! Surface C: AR ledgers, accounting calendars, period open/close history, paging and the
//! error statuses of those endpoints.

use e2e::revenue::Rev;
use e2e::{body_refusals, get_refusals, TestServer};
use reqwest::Method;
use serde_json::{json, Value};

fn ledger_body(name: &str) -> Value {
    json!({
        "name": name,
        "description": "test ledger",
        "convert_currency": "GL",
        "conversion_currency": "SEK",
        "chart_of_account_id": 2,
        "rule_set_id": 1,
        "run_mode_actuals_id": 1,
        "conversion_rate_set_id": "RATES-1",
        "currency_exchange_version": "v7",
        "billing_account_category_ids": [2, 1],
        "expected_customer_lifetime": 12,
        "create_zero_amount_entries": true
    })
}

#[tokio::test]
async fn ledger_create_read_update_delete() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;

    let created = c
        .expect(Method::POST, "/ledgers", Some(ledger_body("Nordic")), 201)
        .await;
    let id = created["id"].as_i64().expect("int64 id");
    assert_eq!(created["status"], "ACTIVE");
    assert_eq!(created["conversion_currency"], "SEK");
    assert_eq!(created["billing_account_category_ids"], json!([1, 2]));
    assert_eq!(created["calendar"]["type"], "CALENDAR");
    assert_eq!(created["calendar"]["years"], json!([]));
    assert_eq!(created["valid"], false, "no year yet");
    assert!(
        created.get("chart_of_account_name").is_none(),
        "names only in lists"
    );

    let read = c.get_ok(&format!("/ledgers/{id}")).await;
    assert_eq!(read, created);

    // update: present fields replace, absent ones stay
    let updated = c
        .expect(
            Method::PUT,
            &format!("/ledgers/{id}"),
            Some(json!({"id": id, "name": "Nordic 2", "status": "INACTIVE", "billing_account_category_ids": [3]})),
            200,
        )
        .await;
    assert_eq!(updated["name"], "Nordic 2");
    assert_eq!(updated["status"], "INACTIVE");
    assert_eq!(updated["billing_account_category_ids"], json!([3]));
    assert_eq!(updated["conversion_currency"], "SEK");

    // validation: enums, currency, references, id mismatch
    let ledger = format!("/ledgers/{id}");
    let bodies = vec![
        (json!({"status": "PAUSED"}), 400),
        (json!({"convert_currency": "SOME"}), 400),
        (json!({"conversion_currency": "XXX"}), 400),
        (json!({"id": id + 1}), 400),
        (json!({"chart_of_account_id": 99}), 404),
        (json!({"billing_account_category_ids": [42]}), 404),
        (json!({"name": "US Ledger"}), 409),
    ];
    c.assert_refused(&body_refusals(Method::PUT, &ledger, bodies))
        .await;
    // a new ledger with one field wrong: (field, value, status)
    let bodies = [
        ("conversion_currency", json!("ABC"), 400),
        ("rule_set_id", json!(77), 404),
        ("id", json!("seven"), 400),
    ]
    .into_iter()
    .map(|(field, value, status)| {
        let mut bad = ledger_body("Other");
        bad[field] = value;
        (bad, status)
    })
    .collect();
    c.assert_refused(&body_refusals(Method::POST, "/ledgers", bodies))
        .await;
    // 409: a ledger name in use
    let taken = Some(ledger_body("US Ledger"));
    c.assert_refused(&[(Method::POST, "/ledgers", taken, 409, "US Ledger")])
        .await;

    // delete
    let gone = c
        .expect(Method::DELETE, &format!("/ledgers/{id}"), None, 200)
        .await;
    assert_eq!(gone, Value::Null);
    c.assert_refused(&[
        (Method::GET, &ledger, None, 404, ""),
        (Method::DELETE, &ledger, None, 404, ""),
        (Method::GET, "/ledgers/abc", None, 400, ""),
    ])
    .await;

    // tenants are isolated: another tenant's key does not see this tenant's ledgers
    let other = Rev::new(&s, "other", "empty").await;
    other.error(Method::GET, "/ledgers/1", None, 404).await;
    assert_eq!(other.paged("/ledgers").await.1, 0);

    // Surface C auth
    let r = s
        .client
        .get(s.url("/revenue/3/ledgers"))
        .send()
        .await
        .unwrap();
    let (status, _, message) = e2e::error_body(r).await;
    assert_eq!((status, message.as_str()), (401, "Authentication failed."));
}

#[tokio::test]
async fn ledger_list_filters_names_and_paging() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;

    let (items, total, elements, pages) = c.paged("/ledgers").await;
    assert_eq!((total, elements, pages), (3, 3, 1));
    let us = &items[0];
    assert_eq!(us["chart_of_account_name"], "US GAAP chart");
    assert_eq!(us["rule_set_name"], "Standard revenue rules");
    assert_eq!(us["accounting_calendar_name"], "US Ledger");
    assert_eq!(us["valid"], true);

    for (query, expected) in [
        ("id=2", vec!["EU Ledger"]),
        ("name=Legacy%20Ledger", vec!["Legacy Ledger"]),
        ("status=ACTIVE", vec!["US Ledger", "EU Ledger"]),
        ("status=INACTIVE", vec!["Legacy Ledger"]),
        ("convert_currency=GL", vec!["EU Ledger"]),
        ("conversion_currency=EUR", vec!["EU Ledger"]),
        ("chart_of_account_id=1", vec!["US Ledger", "Legacy Ledger"]),
        ("rule_set_id=2", vec!["EU Ledger"]),
        ("rule_set_id=1&status=ACTIVE", vec!["US Ledger"]),
    ] {
        let (items, total, _, _) = c.paged(&format!("/ledgers?{query}")).await;
        let names: Vec<&str> = items.iter().map(|l| l["name"].as_str().unwrap()).collect();
        assert_eq!(names, expected, "{query}");
        assert_eq!(total, expected.len() as i64);
    }
    c.assert_refused(&get_refusals(&[
        ("/ledgers?status=GONE", 400),
        ("/ledgers?convert_currency=ALL", 400),
        ("/ledgers?conversion_currency=EURO", 400),
        ("/ledgers?id=x", 400),
        ("/ledgers?page_size=0", 400),
        ("/ledgers?page_size=51", 400),
        ("/ledgers?page_number=0", 400),
        ("/ledgers?page_number=-1", 400),
        ("/ledgers?page_size=abc", 400),
    ]))
    .await;

    // paging: defaults and headers
    let (items, total, elements, pages) = c.paged("/ledgers?page_size=2").await;
    assert_eq!((total, elements, pages), (3, 2, 2));
    assert_eq!(items[0]["id"], 1);
    let (items, _, elements, _) = c.paged("/ledgers?page_size=2&page_number=2").await;
    assert_eq!((elements, items[0]["id"].as_i64()), (1, Some(3)));
    let (_, total, elements, pages) = c.paged("/ledgers?page_size=50&page_number=9").await;
    assert_eq!((total, elements, pages), (3, 0, 1));
}

fn year(name: &str, start: &str, end: &str) -> Value {
    json!({"name": name, "start_date": start, "end_date": end})
}

#[tokio::test]
async fn calendar_generation_rules_at_their_edges() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let l = c
        .expect(Method::POST, "/ledgers", Some(ledger_body("Cal")), 201)
        .await;
    let id = l["id"].as_i64().unwrap();
    let gen = format!("/ledgers/{id}/calendar/years?generate-periods=true");

    // start must be the first of a month; end must be one or two years after the start:
    // not 11, 13 or 18 months, not a day off
    let bodies = [
        ("2027-01-02", "2028-01-01"),
        ("2027-01-01", "2027-11-30"),
        ("2027-01-01", "2028-01-31"),
        ("2027-01-01", "2028-06-30"),
        ("2027-01-01", "2028-01-01"),
        ("2027-01-01", "2027-12-30"),
        ("2027-01-01", "2029-01-01"),
    ]
    .into_iter()
    .map(|(start, end)| (year("Y", start, end), 400))
    .collect();
    c.assert_refused(&body_refusals(Method::POST, &gen, bodies))
        .await;

    // exactly one year: 12 monthly periods with quarters
    let l = c
        .expect(
            Method::POST,
            &gen,
            Some(year("FY27", "2027-01-01", "2027-12-31")),
            200,
        )
        .await;
    let y = &l["calendar"]["years"][0];
    let periods = y["accounting-periods"].as_array().unwrap();
    assert_eq!(periods.len(), 12);
    for (i, field, value) in [
        (0, "name", "2027-01"),
        (0, "start_date", "2027-01-01"),
        (1, "end_date", "2027-02-28"),
        (11, "end_date", "2027-12-31"),
    ] {
        assert_eq!(periods[i][field], value, "period {i} {field}");
    }
    let quarters: Vec<i64> = periods
        .iter()
        .map(|p| p["quarter"].as_i64().unwrap())
        .collect();
    assert_eq!(quarters, vec![1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]);
    assert_eq!(y["complete"], true);
    assert_eq!(y["open"], true);
    let (cal, yid) = (
        l["calendar"]["id"].as_i64().unwrap(),
        y["id"].as_i64().unwrap(),
    );
    assert_eq!(y["path"], json!([cal, yid]));
    assert_eq!(periods[0]["path"], json!([cal, yid, periods[0]["id"]]));
    assert_eq!(periods[0]["parent_id"], yid);
    assert_eq!(l["valid"], true);

    // exactly two years, starting mid-year across a leap day: 24 periods
    let l = c
        .expect(
            Method::POST,
            &gen,
            Some(year("FY28-29", "2028-02-01", "2030-01-31")),
            200,
        )
        .await;
    let y = &l["calendar"]["years"][1];
    let periods = y["accounting-periods"].as_array().unwrap();
    assert_eq!(periods.len(), 24);
    assert_eq!(periods[0]["end_date"], "2028-02-29");
    assert_eq!(
        periods[12]["quarter"], 1,
        "quarters restart in the second year"
    );
    // the calendar spans both years; 2028-01 is a gap, so it is not complete
    assert_eq!(l["calendar"]["start_date"], "2027-01-01");
    assert_eq!(l["calendar"]["end_date"], "2030-01-31");
    assert_eq!(l["calendar"]["complete"], false);

    // a year overlapping another: 409; unknown ledger: 404; a bad flag: 400
    let unknown = "/ledgers/999/calendar/years?generate-periods=true";
    let maybe = format!("/ledgers/{id}/calendar/years?generate-periods=maybe");
    let (dup, x) = (
        year("Dup", "2027-06-01", "2028-05-31"),
        year("X", "2031-01-01", "2031-12-31"),
    );
    c.assert_refused(&[
        (Method::POST, &gen, Some(dup), 409, ""),
        (Method::POST, unknown, Some(x.clone()), 404, ""),
        (Method::POST, &maybe, Some(x), 400, ""),
    ])
    .await;
}

#[tokio::test]
async fn calendar_given_periods_are_validated() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let l = c
        .expect(Method::POST, "/ledgers", Some(ledger_body("Given")), 201)
        .await;
    let path = format!("/ledgers/{}/calendar/years", l["id"]);
    let with = |periods: Value| {
        let mut y = year("FY31", "2031-01-01", "2031-12-31");
        y["accounting-periods"] = periods;
        y
    };
    let h1 =
        json!({"name": "H1", "quarter": 1, "start_date": "2031-01-01", "end_date": "2031-06-30"});
    let h2 = json!({"name": "H2", "quarter": 3, "start_date": "2031-07-01", "end_date": "2031-12-31", "open": false});
    let mut bodies: Vec<(Value, u16)> = [
        json!([{"name": "early", "start_date": "2030-12-01", "end_date": "2031-01-31"}]),
        json!([{"name": "late", "start_date": "2031-12-01", "end_date": "2032-01-31"}]),
        json!([h2.clone(), h1.clone()]),
        json!([h1.clone(), {"name": "overlap", "start_date": "2031-06-30", "end_date": "2031-12-31"}]),
        json!([{"name": "backwards", "start_date": "2031-03-01", "end_date": "2031-02-01"}]),
        json!([{"name": "q5", "quarter": 5, "start_date": "2031-01-01", "end_date": "2031-02-01"}]),
        json!([{"name": "bad date", "start_date": "2031-02-30", "end_date": "2031-03-01"}]),
    ]
    .into_iter()
    .map(|bad| (with(bad), 400))
    .collect();
    bodies.push((year("Back", "2031-12-31", "2031-01-01"), 400));
    c.assert_refused(&body_refusals(Method::POST, &path, bodies))
        .await;

    // in order, inside, not overlapping; a gap makes it incomplete
    let l = c
        .expect(Method::POST, &path, Some(with(json!([h1.clone(), {"name": "Q4", "start_date": "2031-10-01", "end_date": "2031-12-31"}]))), 200)
        .await;
    assert_eq!(l["calendar"]["years"][0]["complete"], false);
    // a date-time is accepted as its calendar day
    let mut y = year("FY32", "2032-01-01T00:00:00Z", "2032-12-31T00:00:00Z");
    y["accounting-periods"] = json!([{"name": "all", "start_date": "2032-01-01", "end_date": "2032-12-31", "open": false}]);
    let l = c.expect(Method::POST, &path, Some(y), 200).await;
    let y = &l["calendar"]["years"][1];
    assert_eq!(
        (y["complete"].as_bool(), y["open"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(y["accounting-periods"][0]["open"], false);
    // The ledger named no zone, so it keeps the tenant's.
    assert_eq!(y["time_zone"], "America/Chicago");
}

#[tokio::test]
async fn year_read_update_delete() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    // ledger 2 (EU) has FY2026 with four quarterly periods, Q1 and Q2 closed
    let l = c.get_ok("/ledgers/2").await;
    let y = &l["calendar"]["years"][0];
    let yid = y["id"].as_i64().unwrap();
    let year_path = format!("/ledgers/2/calendar/years/{yid}");
    let read = c.get_ok(&year_path).await;
    assert_eq!(&read, y);
    assert_eq!(read["type"], "YEAR");
    assert_eq!(read["time_zone"], "Europe/Berlin");
    let of_ledger_1 = format!("/ledgers/1/calendar/years/{yid}");
    let refusals = [
        ("/ledgers/2/calendar/years/99999", 404),
        (&of_ledger_1, 404),
    ];
    c.assert_refused(&get_refusals(&refusals)).await;

    // rename without periods: the periods stay
    let l = c
        .expect(Method::PUT, &year_path, Some(json!({"name": "FY26", "description": "renamed", "start_date": "2026-01-01", "end_date": "2026-12-31"})), 200)
        .await;
    let y = &l["calendar"]["years"][0];
    assert_eq!(
        (y["name"].as_str(), y["description"].as_str()),
        (Some("FY26"), Some("renamed"))
    );
    assert_eq!(y["accounting-periods"].as_array().unwrap().len(), 4);
    // shrinking the dates past the periods needs the periods too
    c.error(
        Method::PUT,
        &year_path,
        Some(json!({"name": "FY26", "start_date": "2026-01-01", "end_date": "2026-06-30"})),
        400,
    )
    .await;

    // replace the periods: keep Q1 (by id, its history stays), replace the rest by two halves
    let q1 = y["accounting-periods"][0]["id"].as_i64().unwrap();
    let body = json!({"name": "FY26", "start_date": "2026-01-01", "end_date": "2026-12-31", "accounting-periods": [
        {"id": q1, "name": "2026-Q1", "quarter": 1, "start_date": "2026-01-01", "end_date": "2026-03-31", "open": true},
        {"name": "2026-rest", "start_date": "2026-04-01", "end_date": "2026-12-31"}
    ]});
    let l = c.expect(Method::PUT, &year_path, Some(body), 200).await;
    let periods = l["calendar"]["years"][0]["accounting-periods"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(periods.len(), 2);
    assert_eq!(periods[0]["id"], q1);
    assert_eq!(periods[0]["open"], true);
    assert_eq!(l["calendar"]["years"][0]["complete"], true);
    let (hist, total, _, _) = c
        .paged(&format!("{year_path}/accounting-periods/{q1}/history"))
        .await;
    assert_eq!(total, 2, "created closed, reopened by the update: {hist:?}");

    // a period id of another year is refused
    let body = json!({"name": "FY26", "start_date": "2026-01-01", "end_date": "2026-12-31",
        "accounting-periods": [{"id": 1, "name": "x", "start_date": "2026-01-01", "end_date": "2026-12-31"}]});
    c.error(Method::PUT, &year_path, Some(body), 400).await;
    // overlapping another year of the ledger: 409 (ledger 1 has FY2025 and FY2026)
    let l1 = c.get_ok("/ledgers/1").await;
    let fy25 = l1["calendar"]["years"][0]["id"].as_i64().unwrap();
    c.error(
        Method::PUT,
        &format!("/ledgers/1/calendar/years/{fy25}"),
        Some(json!({"name": "FY2025", "start_date": "2025-01-01", "end_date": "2026-01-31"})),
        409,
    )
    .await;

    // delete
    let l = c.expect(Method::DELETE, &year_path, None, 200).await;
    assert_eq!(l["calendar"]["years"], json!([]));
    assert_eq!(l["valid"], false);
    c.error(Method::DELETE, &year_path, None, 404).await;
}

#[tokio::test]
async fn open_close_with_history() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let l = c.get_ok("/ledgers/1").await;
    let y = &l["calendar"]["years"][1];
    let (yid, pid) = (
        y["id"].as_i64().unwrap(),
        y["accounting-periods"][2]["id"].as_i64().unwrap(),
    );
    let base = format!("/ledgers/1/calendar/years/{yid}/accounting-periods/{pid}");

    let (hist, total, _, _) = c.paged(&format!("{base}/history")).await;
    assert_eq!(total, 1);
    assert_eq!(hist[0]["open"], true);
    assert!(hist[0]["end_date"].is_null());

    let l = c
        .expect(Method::PUT, &format!("{base}/close"), None, 200)
        .await;
    let p = &l["calendar"]["years"][1]["accounting-periods"][2];
    assert_eq!(
        (p["id"].as_i64(), p["open"].as_bool()),
        (Some(pid), Some(false))
    );
    let l = c
        .expect(Method::PUT, &format!("{base}/open"), None, 200)
        .await;
    assert_eq!(
        l["calendar"]["years"][1]["accounting-periods"][2]["open"],
        true
    );
    c.expect(Method::PUT, &format!("{base}/close"), None, 200)
        .await;

    let (hist, total, _, pages) = c.paged(&format!("{base}/history")).await;
    assert_eq!((total, pages), (4, 1));
    let states: Vec<bool> = hist.iter().map(|h| h["open"].as_bool().unwrap()).collect();
    assert_eq!(states, vec![true, false, true, false]);
    for pair in hist.windows(2) {
        assert_eq!(
            pair[0]["end_date"], pair[1]["start_date"],
            "spans follow each other"
        );
    }
    assert!(hist[3]["end_date"].is_null());
    let (page2, total, elements, pages) = c
        .paged(&format!("{base}/history?page_size=3&page_number=2"))
        .await;
    assert_eq!((total, elements, pages), (4, 1, 2));
    assert_eq!(page2[0]["id"], hist[3]["id"]);
    // the period must belong to that year and ledger
    let other_year = l["calendar"]["years"][0]["id"].as_i64().unwrap();
    let wrong_year =
        format!("/ledgers/1/calendar/years/{other_year}/accounting-periods/{pid}/open");
    let wrong_ledger = format!("/ledgers/2/calendar/years/{yid}/accounting-periods/{pid}/open");
    let unknown = format!("/ledgers/1/calendar/years/{yid}/accounting-periods/999999/history");
    c.assert_refused(&[
        (
            Method::GET,
            &format!("{base}/history?page_size=51"),
            None,
            400,
            "",
        ),
        (Method::PUT, &wrong_year, None, 404, ""),
        (Method::PUT, &wrong_ledger, None, 404, ""),
        (Method::GET, &unknown, None, 404, ""),
    ])
    .await;
}

#[tokio::test]
async fn text_fields_have_a_maximum_length() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let mut long_name = ledger_body(&"N".repeat(256));
    let mut long_description = ledger_body("Described");
    long_description["description"] = json!("d".repeat(4001));
    c.assert_refused(&[
        (
            Method::POST,
            "/ledgers",
            Some(long_name.clone()),
            400,
            "name must be at most 255 characters",
        ),
        (
            Method::POST,
            "/ledgers",
            Some(long_description.clone()),
            400,
            "description must be at most 4000 characters",
        ),
    ])
    .await;
    long_name["name"] = json!("N".repeat(255));
    long_description["description"] = json!("d".repeat(4000));
    let created = c
        .expect(Method::POST, "/ledgers", Some(long_name), 201)
        .await;
    c.expect(Method::POST, "/ledgers", Some(long_description), 201)
        .await;
    let ledger = format!("/ledgers/{}", created["id"]);
    let cases = vec![
        (json!({"description": "x".repeat(4001)}), 400),
        (json!({"currency_exchange_version": "v".repeat(256)}), 400),
    ];
    c.assert_refused(&body_refusals(Method::PUT, &ledger, cases))
        .await;
    let years = format!("{ledger}/calendar/years");
    let year =
        json!({"name": "Y".repeat(256), "start_date": "2026-01-01", "end_date": "2026-12-31"});
    c.assert_refused(&[(
        Method::POST,
        &years,
        Some(year),
        400,
        "name must be at most 255",
    )])
    .await;
}

/// The spec's Limits section: `omit_total_count=TRUE` (any case, as Surface B reads it)
/// leaves out X-Total-Count and X-Total-Pages; X-Elements-Count (also sent as the Limits
/// section's `x-element-count`) and the items stay.
#[tokio::test]
async fn omit_total_count_leaves_out_the_total_headers() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    let (items, total, _, _) = c.paged("/ledgers?page_size=1").await;
    assert!(total >= 1);
    for path in [
        "/ledgers?page_size=1&omit_total_count=TRUE",
        "/ledgers?page_size=1&omit_total_count=true",
        "/collector-runs?omit_total_count=True",
        "/ledgers/chargeinfos?omit_total_count=TRUE",
    ] {
        let r = c.call(Method::GET, path, None).await;
        assert_eq!(r.status(), 200, "{path}");
        let h = r.headers();
        assert!(h.get("X-Total-Count").is_none(), "{path}");
        assert!(h.get("X-Total-Pages").is_none(), "{path}");
        let elements: usize = h["X-Elements-Count"].to_str().unwrap().parse().unwrap();
        // The spec's Limits section spells it x-element-count: both are sent, equal.
        assert_eq!(h["x-element-count"], h["X-Elements-Count"], "{path}");
        let got: Vec<Value> = r.json().await.unwrap();
        assert_eq!(got.len(), elements, "{path}");
    }
    let r = c
        .call(
            Method::GET,
            "/ledgers?page_size=1&omit_total_count=TRUE",
            None,
        )
        .await;
    assert_eq!(r.json::<Vec<Value>>().await.unwrap(), items);
    let (_, again, _, pages) = c.paged("/ledgers?page_size=1&omit_total_count=false").await;
    assert_eq!((again, pages), (total, total));
    let message = c
        .error(Method::GET, "/ledgers?omit_total_count=maybe", None, 400)
        .await;
    assert!(message.contains("omit_total_count"), "{message}");
}

/// A path with one trailing slash is the same resource as without it, query string kept.
#[tokio::test]
async fn a_trailing_slash_serves_the_same_resource() {
    let s = TestServer::start().await;
    let c = Rev::new(&s, "acme", "demo").await;
    for (slashed, plain) in [
        ("/ledgers/?page_size=1", "/ledgers?page_size=1"),
        ("/ledgers/1/", "/ledgers/1"),
    ] {
        let got = c.expect(Method::GET, slashed, None, 200).await;
        assert_eq!(got, c.get_ok(plain).await, "{slashed}");
    }
    c.error(Method::GET, "/no-such-thing/", None, 404).await;
}
