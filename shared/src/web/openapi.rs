//! The OpenAPI 3.1 documents of Surfaces B, C and the admin API are built in code: each
//! surface crate lists its operations (its `openapi` module) and names the Rust types of their
//! bodies; the schemas are derived from those types (utoipa's `ToSchema`, with
//! `crate::schema` for what a Rust type cannot say), so a member added to a type is in the
//! document. This module holds what the surfaces' documents share: the assembly of paths and
//! components, parameters, error answers, the document's own operation, the rendering (the
//! committed docs/openapi/*.json are this rendering) and serving.
//!
//! Invariants: every schema an operation names is in `components.schemas` (registered with
//! the type, with everything it refers to); two types never claim one schema name; an
//! operation is declared once per (path, method).

use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

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
            let schema = serde_json::to_value(schema).expect("a schema serializes");
            self.add_schema(&name, schema);
        }
        reference(&name)
    }

    /// A `$ref` to a schema written here (not derived from one type), registering it.
    pub fn named(&mut self, name: &str, schema: Value) -> Value {
        self.add_schema(name, schema);
        reference(name)
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
        let item = item.as_object_mut().expect("a path item is an object");
        assert!(
            item.insert(method.to_string(), op).is_none(),
            "{method} {path} declared twice"
        );
    }

    /// The document: `head` (openapi, info, servers, security) with the paths, the schemas
    /// and `security_schemes`.
    pub fn finish(self, mut head: Value, security_schemes: Value) -> Value {
        head["paths"] = Value::Object(self.paths);
        head["components"] = json!({
            "schemas": Value::Object(self.schemas),
            "securitySchemes": security_schemes,
        });
        head
    }
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

/// `GET <prefix>/openapi.json`: the document itself, without credentials.
pub fn document_operation(tag: &str) -> Value {
    json!({
        "operationId": format!("{tag}OpenApi"),
        "summary": "This OpenAPI document",
        "security": [],
        "tags": ["meta"],
        "responses": { "200": {
            "description": "The document",
            "content": json_content(json!({ "type": "object", "additionalProperties": true })),
        }},
    })
}

/// The text served and committed: JSON indented by one space, keys sorted, a final newline.
pub fn render(doc: &Value) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    serde::Serialize::serialize(doc, &mut ser).expect("a document serializes");
    let mut text = String::from_utf8(out).expect("JSON is UTF-8");
    text.push('\n');
    text
}

/// The answer of `GET <prefix>/openapi.json`.
pub fn serve(text: &'static str) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], text).into_response()
}
