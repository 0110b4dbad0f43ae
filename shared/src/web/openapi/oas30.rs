//! The OpenAPI 3.0.3 rendering of a 3.1 document: the same document (paths, parameters,
//! answers, schemas), translated where 3.0's Schema Object says a thing differently, for the
//! generators that read 3.0 only (progenitor, openapi-generator's stable path). One document
//! is built per surface; this pass is its only second form, so the two cannot say different
//! things (`tests/openapi/oas30.rs` compares them operation by operation).
//!
//! What changes, schema by schema (3.1 -> 3.0.3):
//! - `type: [X, "null"]` -> `type: X, nullable: true`; several non-null types ->
//!   `anyOf` of one `type` each (3.0's `type` is a single string);
//! - an `anyOf`/`oneOf` branch `{type: "null"}` -> `nullable: true` on the schema; when one
//!   branch is left, it stands alone (a `$ref` under `allOf`, since 3.0 ignores the
//!   siblings of a `$ref`);
//! - a nullable `enum` lists null (3.0.3: `nullable` widens `type` only, not `enum`, and
//!   validators check `enum` on its own);
//! - `const: v` -> `enum: [v]`; `examples: [a, ...]` -> `example: a`;
//! - numeric `exclusiveMinimum`/`exclusiveMaximum` -> `minimum`/`maximum` with the boolean
//!   form;
//! - dropped, each meaning nothing a 3.0 reader could check: `propertyNames` (object keys are
//!   JSON strings anyway), `$schema`, `$id`, `$comment`; at the top, `jsonSchemaDialect`,
//!   `webhooks` and `info.summary` / `info.license.identifier`.
//!
//! Everything else (descriptions, bounds, formats, `$ref`s, media-type examples) is copied
//! as it is. Invariant: the output has no `type` array, no `type: "null"`, and no keyword
//! 3.0's Schema Object lacks among those the 3.1 documents use (a validator test checks).

use serde_json::{json, Map, Value};

/// The 3.0.3 rendering of the 3.1 document `doc`.
pub fn translate(doc: &Value) -> Value {
    let mut out = doc.clone();
    out["openapi"] = json!("3.0.3");
    if let Some(top) = out.as_object_mut() {
        top.remove("jsonSchemaDialect");
        top.remove("webhooks");
    }
    if let Some(info) = out.get_mut("info").and_then(Value::as_object_mut) {
        info.remove("summary");
        if let Some(license) = info.get_mut("license").and_then(Value::as_object_mut) {
            license.remove("identifier");
        }
    }
    if let Some(schemas) = out
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        for schema in schemas.values_mut() {
            *schema = schema30(schema);
        }
    }
    if let Some(paths) = out.get_mut("paths") {
        schemas_in(paths);
    }
    out
}

/// Translates every `schema` member below `v` (parameters, headers and media types of
/// operations): what is not a schema is left as it is.
fn schemas_in(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if key == "schema" && child.is_object() {
                    *child = schema30(child);
                } else {
                    schemas_in(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(schemas_in),
        _ => {}
    }
}

/// Whether `s` is the schema `{"type": "null"}` (a 3.1 way of saying "or null").
fn is_null(s: &Value) -> bool {
    s.get("type") == Some(&json!("null"))
}

/// One schema (with everything below it) in 3.0.3's terms.
fn schema30(schema: &Value) -> Value {
    let Some(map) = schema.as_object() else {
        return schema.clone();
    };
    let mut out = Map::new();
    let mut nullable = false;
    for (key, value) in map {
        match key.as_str() {
            "properties" => {
                let props = value
                    .as_object()
                    .map(|p| p.iter().map(|(k, s)| (k.clone(), schema30(s))).collect())
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Object(props));
            }
            "items" | "not" => {
                out.insert(key.clone(), schema30(value));
            }
            "additionalProperties" if value.is_object() => {
                out.insert(key.clone(), schema30(value));
            }
            "allOf" | "anyOf" | "oneOf" => {
                let branches = value.as_array().cloned().unwrap_or_default();
                nullable |= branches.iter().any(is_null);
                let kept: Vec<Value> = branches
                    .iter()
                    .filter(|b| !is_null(b))
                    .map(schema30)
                    .collect();
                out.insert(key.clone(), Value::Array(kept));
            }
            "type" => match value {
                Value::Array(types) => {
                    nullable |= types.iter().any(|t| t == "null");
                    let types: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
                    match types.as_slice() {
                        [one] => {
                            out.insert(key.clone(), (*one).clone());
                        }
                        many => {
                            let each = many.iter().map(|t| json!({ "type": t })).collect();
                            out.insert("anyOf".into(), Value::Array(each));
                        }
                    }
                }
                other => {
                    out.insert(key.clone(), other.clone());
                }
            },
            "const" => {
                out.insert("enum".into(), json!([value]));
            }
            "examples" => {
                if let Some(first) = value.as_array().and_then(|e| e.first()) {
                    out.insert("example".into(), first.clone());
                }
            }
            "exclusiveMinimum" | "exclusiveMaximum" if value.is_number() => {
                let bound = if key == "exclusiveMinimum" {
                    "minimum"
                } else {
                    "maximum"
                };
                out.insert(bound.into(), value.clone());
                out.insert(key.clone(), json!(true));
            }
            "propertyNames" | "$schema" | "$id" | "$comment" => {}
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    // A combination left with one branch (its other was null) is that branch.
    for combinator in ["anyOf", "oneOf"] {
        let single = matches!(out.get(combinator), Some(Value::Array(b)) if b.len() == 1);
        if !single {
            continue;
        }
        let Some(Value::Array(mut branches)) = out.remove(combinator) else {
            continue;
        };
        let branch = branches.remove(0);
        match branch.as_object() {
            Some(b) if b.contains_key("$ref") => {
                // 3.0 ignores a `$ref`'s siblings: the reference goes under `allOf`, and the
                // description it carried stays beside it.
                let mut reference = Map::new();
                for (k, v) in b {
                    if k == "$ref" {
                        reference.insert(k.clone(), v.clone());
                    } else {
                        out.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
                out.insert("allOf".into(), json!([Value::Object(reference)]));
            }
            Some(b) => {
                for (k, v) in b {
                    out.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            None => {}
        }
    }
    if nullable {
        out.insert("nullable".into(), json!(true));
        if let Some(Value::Array(values)) = out.get_mut("enum") {
            if !values.contains(&Value::Null) {
                values.push(Value::Null);
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nullable_types_enums_and_references_become_nullable() {
        assert_eq!(
            schema30(&json!({ "type": ["number", "null"], "format": "decimal" })),
            json!({ "type": "number", "format": "decimal", "nullable": true })
        );
        assert_eq!(
            schema30(
                &json!({ "anyOf": [{ "type": "string", "enum": ["A"] }, { "type": "null" }] })
            ),
            json!({ "type": "string", "enum": ["A", null], "nullable": true })
        );
        assert_eq!(
            schema30(
                &json!({ "oneOf": [{ "type": "null" }, { "$ref": "#/x", "description": "d" }] })
            ),
            json!({ "allOf": [{ "$ref": "#/x" }], "description": "d", "nullable": true })
        );
        assert_eq!(
            schema30(&json!({ "type": ["string", "integer"], "description": "d" })),
            json!({ "anyOf": [{ "type": "string" }, { "type": "integer" }], "description": "d" })
        );
    }

    #[test]
    fn keywords_3_0_lacks_are_translated_or_dropped() {
        assert_eq!(
            schema30(&json!({ "const": "x", "examples": [1, 2], "exclusiveMinimum": 0 })),
            json!({ "enum": ["x"], "example": 1, "minimum": 0, "exclusiveMinimum": true })
        );
        assert_eq!(
            schema30(
                &json!({ "type": "object", "propertyNames": { "type": "string" },
                "properties": { "a": { "type": ["integer", "null"] } } })
            ),
            json!({ "type": "object", "properties": { "a": { "type": "integer", "nullable": true } } })
        );
    }
}
