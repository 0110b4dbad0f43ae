//! Each shipped document describes exactly the (method, path) set its routers serve, is what
//! the code builds (each surface crate's `openapi` module), is served as-is without
//! credentials, and names its security schemes and the `{code, message}` error shape.

use e2e::openapi::{fill, operations, Document, DOCUMENTS, METHODS};
use e2e::TestServer;
use reqwest::Method;
use serde_json::Value;
use std::collections::BTreeSet;

/// The documents built in code (from the operations and the Rust types of their bodies), in
/// 3.1 and in their 3.0.3 rendering, are the committed files, so a review sees what a change of a type does to the document.
/// `OPENAPI_WRITE=1 cargo test -p e2e --test openapi committed` rewrites the files.
#[test]
fn the_committed_documents_are_what_the_code_builds() {
    let built = [
        ("billing.json", billing::openapi::DOCUMENT.text()),
        ("revenue.json", revenue::openapi::DOCUMENT.text()),
        ("admin.json", admin::openapi::DOCUMENT.text()),
        ("billing-3.0.json", billing::openapi::DOCUMENT.text_30()),
        ("revenue-3.0.json", revenue::openapi::DOCUMENT.text_30()),
        ("admin-3.0.json", admin::openapi::DOCUMENT.text_30()),
    ];
    for (file, text) in built {
        let path = e2e::openapi::workspace_root()
            .join("docs/openapi")
            .join(file);
        if std::env::var_os("OPENAPI_WRITE").is_some() {
            std::fs::write(&path, text).expect("write the document");
            continue;
        }
        let committed = std::fs::read_to_string(&path).expect("committed document");
        assert!(
            committed == text,
            "docs/openapi/{file} differs from what the code builds: run OPENAPI_WRITE=1 cargo test -p e2e --test openapi committed"
        );
    }
}

/// Whether an answer is the unknown-route fallback (404 "no such resource") or the
/// wrong-method one (405), i.e. no route took the request.
async fn unrouted(r: reqwest::Response) -> Option<String> {
    let status = r.status().as_u16();
    let body = r.text().await.unwrap_or_default();
    (status == 405 || (status == 404 && body.contains("no such resource")))
        .then(|| format!("{status} {body}"))
}

async fn check_routes(s: &TestServer, doc: &Document) {
    let json = doc.json();
    let ops = operations(&json);
    let paths: BTreeSet<&String> = ops.iter().map(|(_, p)| p).collect();
    // As many paths as the route table declares (each once however many base paths it is
    // mounted under)...
    assert_eq!(
        paths.len(),
        doc.declared_routes(),
        "{}: documented paths vs the paths of its route table",
        doc.file
    );
    // ...and on each documented path, under every server base path, exactly the documented
    // methods are routed (unknown ids and missing credentials reach a handler or its
    // extractor, never the fallbacks).
    let served: Vec<(String, &String)> = doc
        .bases()
        .into_iter()
        .flat_map(|base| paths.iter().map(move |p| (base.clone(), *p)))
        .collect();
    for (base, path) in served {
        let url = s.url(&format!("{base}{}", fill(path, "1")));
        for method in METHODS {
            let m: Method = method.to_uppercase().parse().expect("method");
            let r = s
                .client
                .request(m.clone(), &url)
                .send()
                .await
                .expect("request");
            let documented = ops.contains(&(m.to_string(), path.clone()));
            match unrouted(r).await {
                Some(answer) if documented => {
                    panic!("{m} {base}{path} is documented, not served: {answer}")
                }
                None if !documented => panic!("{m} {base}{path} is served, not documented"),
                _ => {}
            }
        }
    }
}

#[tokio::test]
async fn documents_and_routers_describe_the_same_operations() {
    let s = TestServer::start().await;
    for doc in &DOCUMENTS {
        check_routes(&s, doc).await;
    }
    let counts: Vec<usize> = DOCUMENTS
        .iter()
        .map(|d| operations(&d.json()).len())
        .collect();
    println!(
        "operations: billing {}, revenue {}, admin {}",
        counts[0], counts[1], counts[2]
    );
    assert!(
        counts[0] >= 26 && counts[1] >= 31 && counts[2] >= 7,
        "{counts:?}"
    );
}

/// Each row of a route table (Surface B's, usage events included, Surface C's and the admin
/// API's) is in the shipped document under the same method and path, and the live router
/// serves it under each base path: the request reaches the row's handler or its extractor (here a
/// 401 for want of credentials, a 200 for the documents), never the unknown-route or
/// wrong-method fallback. Both are built from the table, so a row whose handler is bound to
/// another method, or a document built from anything but the table, fails here.
#[tokio::test]
async fn every_row_of_the_route_tables_is_documented_and_served() {
    let s = TestServer::start().await;
    // Each table: its document, the base paths it is mounted under, its (method, path) rows.
    type Table<'a> = (&'a Document, &'a [&'a str], Vec<(&'a str, &'a str)>);
    let tables: [Table; 3] = [
        (
            &DOCUMENTS[0],
            &[shared::web::BILLING_PREFIX],
            billing::routes::table()
                .iter()
                .map(|r| (r.verb.as_str(), r.path))
                .collect(),
        ),
        (
            &DOCUMENTS[1],
            &shared::web::REVENUE_PREFIXES,
            revenue::routes::table()
                .iter()
                .map(|r| (r.verb.as_str(), r.path))
                .collect(),
        ),
        (
            &DOCUMENTS[2],
            &[shared::web::ADMIN_PREFIX],
            admin::routes::table()
                .iter()
                .map(|r| (r.verb.as_str(), r.path))
                .collect(),
        ),
    ];
    for (doc, prefixes, rows) in tables {
        let documented = operations(&doc.json());
        // The document's paths are below the first server's base path (Surface C's) or
        // absolute (Surface B's and the admin API's, whose server is `/`).
        let doc_prefix = if doc.bases()[0].is_empty() {
            prefixes[0]
        } else {
            ""
        };
        let rows_set: BTreeSet<(String, String)> = rows
            .iter()
            .map(|(verb, path)| (verb.to_string(), format!("{doc_prefix}{path}")))
            .collect();
        assert_eq!(
            rows_set, documented,
            "{}: the route table's rows and the document's operations",
            doc.file
        );
        for (verb, path) in &rows {
            for prefix in prefixes {
                let url = s.url(&format!("{prefix}{}", fill(path, "1")));
                let method: Method = verb.parse().expect("method");
                let r = s
                    .client
                    .request(method, &url)
                    .send()
                    .await
                    .expect("request");
                if let Some(answer) = unrouted(r).await {
                    panic!("{verb} {prefix}{path} is a row of the table, not served: {answer}");
                }
            }
        }
    }
}

#[tokio::test]
async fn documents_are_served_without_credentials_as_shipped() {
    let s = TestServer::start().await;
    for doc in &DOCUMENTS {
        // Under every base path of its servers, the same document.
        for base in doc.bases().iter().skip(1) {
            let alias = format!("{base}{}", doc.own_path());
            let r = s.client.get(s.url(&alias)).send().await.expect("request");
            assert_eq!(r.status(), 200, "{alias}");
            assert_eq!(r.text().await.expect("body"), doc.text(), "{alias}");
        }
        let r = s
            .client
            .get(s.url(doc.served_at))
            .send()
            .await
            .expect("request");
        assert_eq!(r.status(), 200, "{}", doc.served_at);
        assert_eq!(
            r.headers()["content-type"],
            "application/json",
            "{}",
            doc.served_at
        );
        let served = r.text().await.expect("body");
        assert_eq!(
            served,
            doc.text(),
            "{} serves docs/openapi/{}",
            doc.served_at,
            doc.file
        );
        let json: Value = serde_json::from_str(&served).expect("JSON");
        assert_eq!(json["openapi"], "3.1.0");
        // The document's own operation says it needs no credentials.
        assert_eq!(
            json["paths"][doc.own_path()]["get"]["security"],
            serde_json::json!([])
        );
    }
}

#[test]
fn security_schemes_ids_and_the_error_shape_are_as_the_spec_types_them() {
    let [b, c, a] = DOCUMENTS.map(|d| d.json());
    let scheme = |doc: &Value, name: &str| doc["components"]["securitySchemes"][name].clone();
    assert_eq!(scheme(&b, "ApiKey")["name"], "X-Api-Key");
    assert_eq!(scheme(&b, "Bearer")["scheme"], "bearer");
    assert_eq!(scheme(&b, "Bearer")["bearerFormat"], "JWT");
    assert_eq!(scheme(&c, "ApiKey")["name"], "X-Api-Key");
    assert_eq!(scheme(&a, "AdminKey")["name"], "X-Admin-Key");
    for doc in [&b, &c, &a] {
        let error = &doc["components"]["schemas"]["Error"];
        assert_eq!(error["required"], serde_json::json!(["code", "message"]));
        // Every failure status of every operation answers that shape.
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for (method, op) in item.as_object().expect("item") {
                for (status, response) in op["responses"].as_object().expect("responses") {
                    if status.starts_with('4') || status.starts_with('5') || status == "default" {
                        let schema = &response["content"]["application/json"]["schema"]["$ref"];
                        assert_eq!(
                            schema, "#/components/schemas/Error",
                            "{method} {path} {status}"
                        );
                    }
                }
            }
        }
    }
    // Ids: strings in B, int64 in C; amounts are numbers (the wire's JSON numbers) in the
    // decimal format, so that a generator can keep them exact.
    let b_schemas = &b["components"]["schemas"];
    assert_eq!(b_schemas["Agreement"]["properties"]["id"]["type"], "string");
    let total = &b_schemas["RatedEvent"]["properties"]["total_charge"];
    assert_eq!(total["type"], "number");
    assert_eq!(total["format"], "decimal");
    let c_schemas = &c["components"]["schemas"];
    assert_eq!(c_schemas["Ledger"]["properties"]["id"]["format"], "int64");
    let ledger = &c["paths"]["/ledgers/{id}"]["get"]["parameters"][0];
    assert_eq!(ledger["schema"]["format"], "int64");
    // Paging and ETag headers.
    let b_list = &b["paths"]["/billing/2/agreements"]["get"]["responses"]["200"]["headers"];
    for h in ["ETag", "X-total-count", "X-element-count", "X-total-pages"] {
        assert!(b_list.get(h).is_some(), "{h}");
    }
    let c_list = &c["paths"]["/ledgers"]["get"]["responses"]["200"]["headers"];
    for h in ["X-Total-Count", "X-Elements-Count", "X-Total-Pages"] {
        assert!(c_list.get(h).is_some(), "{h}");
    }
}

/// Every `enum` in `v` (at any depth), with the JSON pointer of the schema that holds it.
fn enums<'a>(v: &'a Value, at: String, out: &mut Vec<(String, &'a Value)>) {
    match v {
        Value::Object(map) => {
            if map.get("enum").is_some_and(Value::is_array) {
                out.push((at.clone(), v));
            }
            for (k, child) in map {
                enums(child, format!("{at}/{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                enums(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// What generated clients need of an enum: openapi-python-client names a member after its
/// upper-cased value (two values differing only in case are one name: "Duplicate key"), and
/// of a schema typed `[X, "null"]` with null among its `enum` values it makes three classes
/// (`...Type1`, `...Type2Type1`, `...Type3Type1`). So: no case-duplicate values, and a
/// nullable enum is `anyOf` the enum and `{"type": "null"}`, its `type` never admitting null.
#[test]
fn enums_have_no_case_duplicates_and_nullable_ones_are_any_of_null() {
    let mut problems = Vec::new();
    let mut counted = 0;
    for doc in &DOCUMENTS {
        let json = doc.json();
        let mut found = Vec::new();
        enums(&json, String::new(), &mut found);
        counted += found.len();
        for (at, schema) in found {
            let values = schema["enum"].as_array().expect("enum array");
            let mut seen = BTreeSet::new();
            for v in values.iter().filter_map(Value::as_str) {
                if !seen.insert(v.to_uppercase()) {
                    problems.push(format!(
                        "{}#{at}: {v:?} repeats a value up to case",
                        doc.file
                    ));
                }
            }
            let nullable = match &schema["type"] {
                Value::Array(types) => types.iter().any(|t| t == "null"),
                t => t == "null",
            };
            if nullable || values.contains(&Value::Null) {
                problems.push(format!(
                    "{}#{at}: a nullable enum: write it as anyOf the enum and null",
                    doc.file
                ));
            }
        }
    }
    println!("{counted} enums walked");
    assert!(counted > 20, "{counted} enums: the walk found too few");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The documents spell `omit_total_count` one way (`TRUE` / `FALSE`, as the spec writes it);
/// the servers take any case, so a client that lower-cases booleans still gets its answer.
#[tokio::test]
async fn omit_total_count_is_documented_once_and_taken_in_any_case() {
    let [b, c, _] = DOCUMENTS.map(|d| d.json());
    for (doc, path) in [(&b, "/billing/2/agreements"), (&c, "/ledgers")] {
        let params = doc["paths"][path]["get"]["parameters"]
            .as_array()
            .expect("parameters");
        let omit = params
            .iter()
            .find(|p| p["name"] == "omit_total_count")
            .expect("omit_total_count");
        assert_eq!(omit["schema"]["enum"], serde_json::json!(["TRUE", "FALSE"]));
    }
    let s = TestServer::start().await;
    let tenant = s.create_tenant("omit-total", "demo").await;
    for list in ["/billing/2/agreements", "/revenue/3/ledgers"] {
        for (value, omitted) in [
            ("TRUE", true),
            ("true", true),
            ("True", true),
            ("FALSE", false),
            ("false", false),
        ] {
            let path = format!("{list}?omit_total_count={value}");
            let r = s.get_with_key(&path, &tenant.api_key).await;
            assert_eq!(r.status(), 200, "{path}");
            assert_eq!(
                r.headers().get("x-total-count").is_none(),
                omitted,
                "{path}"
            );
        }
    }
}
