//! The OpenAPI 3.1 documents of Surfaces B, C and the admin API are built in code: each
//! surface crate lists its operations (its `openapi` module) and names the Rust types of their
//! bodies; the schemas are derived from those types (utoipa's `ToSchema`, with
//! `crate::json_schema` for what a Rust type cannot say), so a member added to a type is in the
//! document. This module holds what the surfaces' documents share: the assembly of paths and
//! components, parameters, error answers, the document's own operation, the rendering (the
//! committed docs/openapi/*.json are this rendering) and serving, in 3.1 and in the 3.0.3
//! translation of the same document ([`oas30`]) for generators that read 3.0 only.
//!
//! Invariants: every schema an operation names is in `components.schemas` (registered with
//! the type, with everything it refers to); two types never claim one schema name; an
//! operation is declared once per (path, method).

use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};
use std::sync::OnceLock;
use utoipa::ToSchema;

pub mod oas30;

/// A schema of a document: registers a Rust type's schema (`Builder::schema::<T>`) or
/// writes one, answering its `$ref` (or the schema itself). The route tables' rows hold
/// these.
pub type Schema = fn(&mut Builder) -> Value;

/// A document under construction: its paths and the schemas its operations name.
#[derive(Default)]
pub struct Builder {
    paths: Map<String, Value>,
    schemas: Map<String, Value>,
}

impl Builder {
    /// An empty document.
    pub fn new() -> Self {
        Self::default()
    }

    /// A `$ref` to `T`'s schema, registering it and every schema it refers to.
    pub fn schema<T: ToSchema>(&mut self) -> Value {
        let name = T::name().into_owned();
        let mut all = vec![(name.clone(), T::schema())];
        T::schemas(&mut all);
        for (name, schema) in all {
            self.add_schema(&name, schema_value(schema));
        }
        reference(&name)
    }

    /// A `$ref` to a schema written here (not derived from one type), registering it.
    pub fn named(&mut self, name: &str, schema: Value) -> Value {
        self.add_schema(name, schema);
        reference(name)
    }

    /// A schema registered before, to derive a variant of it.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.schemas.get(name)
    }

    /// A schema registered before, to adjust it.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        self.schemas.get_mut(name)
    }

    fn add_schema(&mut self, name: &str, schema: Value) {
        match self.schemas.get(name) {
            Some(known) => assert_eq!(known, &schema, "two schemas named {name}"),
            None => {
                self.schemas.insert(name.to_string(), schema);
            }
        }
    }

    /// Declares `method` (lower case) on `path`.
    pub fn operation(&mut self, path: &str, method: &str, op: Value) {
        let item = self
            .paths
            .entry(path.to_string())
            .or_insert_with(|| json!({}));
        #[allow(
            clippy::expect_used,
            reason = "a path item is only ever inserted, just above, as an object"
        )]
        let item = item.as_object_mut().expect("a path item is an object");
        assert!(
            item.insert(method.to_string(), op).is_none(),
            "{method} {path} declared twice"
        );
    }

    /// The document: `head` (openapi, info, servers, security) with the paths, the schemas
    /// and `security_schemes`.
    pub fn finish(self, mut head: Value, security_schemes: Value) -> Value {
        let mut refs = Vec::new();
        references(&Value::Object(self.paths.clone()), &mut refs);
        references(&Value::Object(self.schemas.clone()), &mut refs);
        for name in refs {
            assert!(
                self.schemas.contains_key(&name),
                "{name} is named, not registered"
            );
        }
        head["paths"] = Value::Object(self.paths);
        head["components"] = json!({
            "schemas": Value::Object(self.schemas),
            "securitySchemes": security_schemes,
        });
        head
    }
}

/// One operation as it is put together: its errors are described by the surface's `describe`.
pub struct Op {
    op: Value,
    describe: fn(u16) -> &'static str,
}

impl Op {
    /// An operation of `tag` without answers yet.
    pub fn new(tag: &str, id: &str, summary: &str, describe: fn(u16) -> &'static str) -> Self {
        let op = json!({ "operationId": id, "summary": summary, "tags": [tag], "responses": {} });
        Op { op, describe }
    }
    /// Its success answer, "Done", with a JSON body of `schema` if any.
    pub fn answer(self, status: u16, schema: Option<Value>) -> Self {
        self.answer_described(status, "Done", schema)
    }
    /// Its success answer described in words.
    pub fn answer_described(mut self, status: u16, text: &str, schema: Option<Value>) -> Self {
        let mut ok = json!({ "description": text });
        if let Some(schema) = schema {
            ok["content"] = json_content(schema);
        }
        self.op["responses"][status.to_string()] = ok;
        self
    }
    /// An answer written out (`304`, `default`, ...).
    pub fn response(mut self, code: &str, response: Value) -> Self {
        self.op["responses"][code] = response;
        self
    }
    /// Headers of an answer declared before.
    pub fn headers(mut self, status: u16, headers: Value) -> Self {
        self.op["responses"][status.to_string()]["headers"] = headers;
        self
    }
    /// Its parameters, in order (none: the member is left out).
    pub fn params<'a>(mut self, params: impl IntoIterator<Item = &'a Value>) -> Self {
        let list: Vec<Value> = params.into_iter().cloned().collect();
        if !list.is_empty() {
            self.op["parameters"] = Value::Array(list);
        }
        self
    }
    /// Its JSON request body.
    pub fn body(mut self, schema: Value, required: bool) -> Self {
        self.op["requestBody"] = json!({ "required": required, "content": json_content(schema) });
        self
    }
    /// An example request body (on the media type, not in the schema: as a schema keyword it
    /// made schemathesis' coverage phase fail inside hypothesis on 50-item arrays).
    pub fn example(mut self, example: Value) -> Self {
        self.op["requestBody"]["content"]["application/json"]["example"] = example;
        self
    }
    /// Its error answers, each the `{code, message}` error `error`.
    pub fn errors(mut self, statuses: &[u16], error: &Value) -> Self {
        for (code, answer) in error_responses(statuses, self.describe, error) {
            self.op["responses"][code] = answer;
        }
        self
    }
    /// The operation.
    pub fn build(self) -> Value {
        self.op
    }
}

/// What the Idempotency-Key header promises on a tenant surface's write.
pub const TENANT_KEY_TEXT: &str = "Optional: makes a retry of this write safe. The same key with the same request (method, path, query, body) within 24 hours of the tenant clock replays the first answer (with Idempotent-Replayed: true) instead of running again; 409 while the first is in flight or when it was applied without a recorded answer (its outcome was unknown); 422 with a different request. At most 10,000 keys per tenant are kept.";

/// Every write (POST, PUT, PATCH, DELETE) of a tenant surface takes the Idempotency-Key
/// header (`web::idempotency`): named, with the answers it may add, on each write of `doc`.
pub fn with_idempotency(doc: &mut Value, error: &Value) {
    with_idempotency_on(doc, error, TENANT_KEY_TEXT, |_, _| true);
}

/// The Idempotency-Key header, described by `text`, on the writes of `doc` for which
/// `keyed(path, method)` holds (the admin API keys only the writes whose key is stored with
/// them, see docs/storage.md).
#[allow(
    clippy::expect_used,
    reason = "`doc` is a document from `Builder::finish`: paths, path items and responses are objects"
)]
pub fn with_idempotency_on(
    doc: &mut Value,
    error: &Value,
    text: &str,
    keyed: impl Fn(&str, &str) -> bool,
) {
    let key = param(
        "Idempotency-Key",
        "header",
        json!({ "type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$" }),
        Some(text),
    );
    let describe = |status: u16| {
        match status {
        400 => "The request or its Idempotency-Key is malformed",
        409 => "Conflict, or a request with this Idempotency-Key is in progress or was applied without a recorded answer",
        _ => "The Idempotency-Key was used with a different request",
    }
    };
    let replayed = json!({
        "description": "true: this is the recorded answer of an earlier request with the same Idempotency-Key",
        "schema": { "type": "string", "enum": ["true"] },
    });
    let paths = doc["paths"].as_object_mut().expect("paths");
    for (path, item) in paths.iter_mut() {
        for (method, op) in item.as_object_mut().expect("path item") {
            if !matches!(method.as_str(), "post" | "put" | "patch" | "delete")
                || !keyed(path, method)
            {
                continue;
            }
            match op["parameters"].as_array_mut() {
                Some(params) => params.push(key.clone()),
                None => op["parameters"] = json!([key.clone()]),
            }
            let responses = op["responses"].as_object_mut().expect("responses");
            for status in [400u16, 409, 422] {
                if !responses.contains_key(&status.to_string()) {
                    responses.extend(error_responses(&[status], describe, error));
                }
            }
            for (code, response) in responses.iter_mut() {
                if code.starts_with('2') {
                    response["headers"]["Idempotent-Replayed"] = replayed.clone();
                }
            }
        }
    }
}

/// The schema names `v` refers to.
fn references(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                out.push(r.trim_start_matches("#/components/schemas/").to_string());
            }
            map.values().for_each(|child| references(child, out));
        }
        Value::Array(items) => items.iter().for_each(|child| references(child, out)),
        _ => {}
    }
}

/// A schema (utoipa's types, which serialize to JSON objects) as JSON.
#[allow(
    clippy::expect_used,
    reason = "utoipa's schema types are structs and string-keyed maps: serializing one to a Value cannot fail"
)]
pub fn schema_value(schema: impl serde::Serialize) -> Value {
    serde_json::to_value(schema).expect("a schema serializes to JSON")
}

/// `{"$ref": "#/components/schemas/<name>"}`.
pub fn reference(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// `{"application/json": {"schema": schema}}`.
pub fn json_content(schema: Value) -> Value {
    json!({ "application/json": { "schema": schema } })
}

/// `{"type": "array", "items": items}`.
pub fn array(items: Value) -> Value {
    json!({ "type": "array", "items": items })
}

/// A parameter `in` path, query or header; path parameters are required.
pub fn param(name: &str, r#in: &str, schema: Value, description: Option<&str>) -> Value {
    let mut p = json!({ "name": name, "in": r#in, "schema": schema });
    if r#in == "path" {
        p["required"] = json!(true);
    }
    if let Some(d) = description {
        p["description"] = json!(d);
    }
    p
}

/// `{"type": "string"}`.
pub fn string() -> Value {
    json!({ "type": "string" })
}

/// `omit_total_count`: one spelling documented (an enum whose values differ only in case is
/// one member twice to a generated client); the servers take any case.
pub fn omit_total_count() -> Value {
    json!({ "type": "string", "enum": ["TRUE", "FALSE"], "description": "TRUE or FALSE; any case is accepted." })
}

/// The header a 503 carries.
pub fn retry_after() -> Value {
    json!({ "Retry-After": {
        "description": "Seconds to wait: sent when the process sheds the request (its concurrency limit) or cut it off (its request timeout)",
        "schema": { "type": "integer", "minimum": 0 },
    }})
}

/// The answers of `statuses`, each the `{code, message}` error (`error`, a `$ref`), described
/// by `describe`; a 503 names Retry-After.
pub fn error_responses(
    statuses: &[u16],
    describe: impl Fn(u16) -> &'static str,
    error: &Value,
) -> Map<String, Value> {
    statuses
        .iter()
        .map(|&s| {
            let mut r =
                json!({ "description": describe(s), "content": json_content(error.clone()) });
            if s == 503 {
                r["headers"] = retry_after();
            }
            (s.to_string(), r)
        })
        .collect()
}

/// One of the two renderings a surface serves of its document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rendering {
    /// `openapi.json`: OpenAPI 3.1, the document as built.
    V31,
    /// `openapi-3.0.json`: its OpenAPI 3.0.3 translation ([`oas30`]).
    V30,
}

impl Rendering {
    /// Both, in the order the documents list them.
    pub const ALL: [Rendering; 2] = [Rendering::V31, Rendering::V30];

    /// The file name it is served under (below the surface's base path).
    pub fn file(self) -> &'static str {
        match self {
            Rendering::V31 => "openapi.json",
            Rendering::V30 => "openapi-3.0.json",
        }
    }
}

/// The operation `GET <base>/<rendering's file>` of a document of `tag` (its operation id
/// `<tag>OpenApi` or `<tag>OpenApi30`), served without credentials.
pub fn document_operation(tag: &str, rendering: Rendering) -> Value {
    let (id, summary) = match rendering {
        Rendering::V31 => ("OpenApi", "This OpenAPI document (3.1)"),
        Rendering::V30 => (
            "OpenApi30",
            "This document in OpenAPI 3.0.3, for generators that read 3.0 only (progenitor): the same operations and schemas, nullable written as `nullable: true`",
        ),
    };
    json!({
        "operationId": format!("{tag}{id}"),
        "summary": summary,
        "security": [],
        "tags": ["meta"],
        "responses": { "200": {
            "description": "The document",
            "content": json_content(json!({ "type": "object", "additionalProperties": true })),
        }},
    })
}

/// Declares `GET <base>/openapi.json` (the document itself) and `GET
/// <base>/openapi-3.0.json` (its 3.0.3 rendering), both without credentials.
pub fn document_operations(b: &mut Builder, base: &str, tag: &str) {
    for rendering in Rendering::ALL {
        let op = document_operation(tag, rendering);
        b.operation(&format!("{base}/{}", rendering.file()), "get", op);
    }
}

/// The text served and committed: JSON indented by one space, keys sorted, a final newline.
#[allow(
    clippy::expect_used,
    reason = "a Value serializes into a Vec without error, and serde_json writes UTF-8"
)]
pub fn render(doc: &Value) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    serde::Serialize::serialize(doc, &mut ser).expect("a document serializes");
    let mut text = String::from_utf8(out).expect("JSON is UTF-8");
    text.push('\n');
    text
}

/// A surface's document, built and rendered on first use and kept as that text (what is
/// served and what is committed), with its 3.0.3 rendering. Each surface crate holds one in
/// a static: `pub static DOCUMENT: Served = Served::new(document);`.
pub struct Served {
    build: fn() -> Value,
    texts: OnceLock<(String, String)>,
}

impl Served {
    /// The document `build` makes.
    pub const fn new(build: fn() -> Value) -> Served {
        Served {
            build,
            texts: OnceLock::new(),
        }
    }

    fn texts(&self) -> &(String, String) {
        self.texts.get_or_init(|| {
            let doc = (self.build)();
            (render(&doc), render(&oas30::translate(&doc)))
        })
    }

    /// The rendered document ([`render`]), OpenAPI 3.1.
    pub fn text(&self) -> &str {
        &self.texts().0
    }

    /// Its OpenAPI 3.0.3 rendering ([`oas30::translate`]).
    pub fn text_30(&self) -> &str {
        &self.texts().1
    }

    /// The answer of `GET <prefix>/openapi.json` (served without credentials).
    pub fn answer(&'static self) -> Response {
        json_answer(self.text())
    }

    /// The answer of `GET <prefix>/openapi-3.0.json` (served without credentials).
    pub fn answer_30(&'static self) -> Response {
        json_answer(self.text_30())
    }

    /// The answer of `GET <prefix>/<rendering's file>` (served without credentials).
    pub fn answer_of(&'static self, rendering: Rendering) -> Response {
        match rendering {
            Rendering::V31 => self.answer(),
            Rendering::V30 => self.answer_30(),
        }
    }
}

fn json_answer(text: &'static str) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], text).into_response()
}
