//! The OpenAPI 3.0.3 renderings (docs/openapi/*-3.0.json, served at
//! `<prefix>/openapi-3.0.json`): served as shipped, valid OpenAPI 3.0 by a validator nobody
//! on this project wrote (openapi-spec-validator), and saying what the 3.1 documents say,
//! operation by operation and schema by schema, read here with a reading of both dialects of
//! this test's own (not the translation under test).

use e2e::openapi::{operations, workspace_root, DOCUMENTS};
use e2e::{runs, TestServer};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

#[tokio::test]
async fn the_3_0_renderings_are_served_without_credentials_as_shipped() {
    let s = TestServer::start().await;
    for doc in &DOCUMENTS {
        let own = doc.own_path().replace("openapi.json", "openapi-3.0.json");
        for base in doc.bases() {
            let path = format!("{base}{own}");
            let r = s.client.get(s.url(&path)).send().await.expect("request");
            assert_eq!(r.status(), 200, "{path}");
            assert_eq!(r.headers()["content-type"], "application/json", "{path}");
            let served = r.text().await.expect("body");
            assert!(
                served == doc.text_30(),
                "{path} serves docs/openapi/{}",
                doc.file_30
            );
        }
        assert!(
            doc.served_30_at.ends_with(&own),
            "{}: {own}",
            doc.served_30_at
        );
        let json = doc.json_30();
        assert_eq!(json["openapi"], "3.0.3", "{}", doc.file_30);
        assert_eq!(json["paths"][&own]["get"]["security"], json!([]), "{own}");
    }
}

/// openapi-spec-validator's 3.0 validator over `files` (under docs/openapi/ unless absolute):
/// one `file: N errors` line each, then the first errors.
fn validate_30(files: &[String]) -> (bool, String) {
    let script = r#"
import sys
from openapi_spec_validator import OpenAPIV30SpecValidator
from openapi_spec_validator.readers import read_from_filename
bad = 0
for path in sys.argv[1:]:
    spec, _ = read_from_filename(path)
    errors = list(OpenAPIV30SpecValidator(spec).iter_errors())
    print(f"{path.rsplit('/', 1)[-1]}: {len(errors)} errors")
    for e in errors[:5]:
        print("  ", list(e.absolute_path), e.message[:300])
    bad += len(errors)
sys.exit(1 if bad else 0)
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(files)
        .output()
        .expect("python3");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn the_3_0_renderings_validate_as_openapi_3_0() {
    e2e::require_tool("openapi-spec-validator (Python)", || {
        runs("python3", &["-c", "import openapi_spec_validator"])
    });
    let dir = workspace_root().join("docs/openapi");
    let at = |file: &str| dir.join(file).display().to_string();
    let files: Vec<String> = DOCUMENTS.iter().map(|d| at(d.file_30)).collect();
    let (valid, said) = validate_30(&files);
    println!("{said}");
    assert!(valid, "{said}");
    // The validator is strict: the 3.1 documents, read as 3.0 (their version line changed),
    // are refused, so what passes above is 3.0 and not merely JSON.
    let work = tempfile::tempdir().expect("temp dir");
    let as_30: Vec<String> = DOCUMENTS
        .iter()
        .map(|d| {
            let mut json = d.json();
            json["openapi"] = json!("3.0.3");
            let path = work.path().join(d.file);
            std::fs::write(&path, json.to_string()).expect("write");
            path.display().to_string()
        })
        .collect();
    let (valid, said) = validate_30(&as_30);
    assert!(!valid, "the 3.1 documents pass as 3.0: {said}");
}

/// What a schema says, in either dialect, as one canonical JSON value: its non-null types
/// (sorted), whether it admits null, its non-null enum values, a `$ref` by name, bounds,
/// formats, descriptions, members and items (each read the same way). 3.1 spells null as a
/// `type` array member or an `anyOf`/`oneOf` branch `{type: "null"}`; 3.0.3 as `nullable:
/// true` (its `enum` listing null too), a `$ref` that is nullable or described under
/// `allOf`, and several types as `anyOf` of one `type` each. Left out: examples, and
/// `propertyNames` (3.0 has none; the documents only say keys are strings).
fn meaning(schema: &Value) -> Value {
    let Some(map) = schema.as_object() else {
        return schema.clone();
    };
    let mut out = Map::new();
    let mut types: BTreeSet<String> = BTreeSet::new();
    let mut nullable = map.get("nullable") == Some(&json!(true));
    let merge = |out: &mut Map<String, Value>, other: Value| {
        if let Value::Object(o) = other {
            for (k, v) in o {
                out.entry(k).or_insert(v);
            }
        }
    };
    for (key, value) in map {
        match key.as_str() {
            "type" => match value {
                Value::Array(ts) => {
                    for t in ts {
                        match t.as_str() {
                            Some("null") => nullable = true,
                            Some(t) => {
                                types.insert(t.to_string());
                            }
                            None => {}
                        }
                    }
                }
                Value::String(t) if t == "null" => nullable = true,
                Value::String(t) => {
                    types.insert(t.clone());
                }
                _ => {}
            },
            "nullable" | "example" | "examples" | "propertyNames" => {}
            "enum" | "const" => {
                let values = if key == "const" {
                    vec![value.clone()]
                } else {
                    value.as_array().cloned().unwrap_or_default()
                };
                nullable |= values.contains(&Value::Null);
                let mut kept: Vec<String> = values
                    .iter()
                    .filter(|v| !v.is_null())
                    .map(Value::to_string)
                    .collect();
                kept.sort();
                out.insert("enum".into(), json!(kept));
            }
            "anyOf" | "oneOf" | "allOf" => {
                let branches: Vec<&Value> = value.as_array().into_iter().flatten().collect();
                let null = |b: &&Value| b.get("type") == Some(&json!("null"));
                nullable |= branches.iter().any(null);
                let kept: Vec<Value> = branches
                    .into_iter()
                    .filter(|b| !null(b))
                    .map(meaning)
                    .collect();
                let only_types = kept.iter().all(|b| {
                    b.as_object()
                        .is_some_and(|o| o.len() == 1 && o.contains_key("types"))
                });
                if key != "allOf" && kept.len() > 1 && only_types {
                    // 3.0's spelling of a `type` array.
                    for b in &kept {
                        for t in b["types"].as_array().into_iter().flatten() {
                            types.insert(t.as_str().unwrap_or_default().to_string());
                        }
                    }
                } else if kept.len() == 1 {
                    let mut branch = kept.into_iter().next().unwrap_or_default();
                    if branch["nullable"] == json!(true) {
                        nullable = true;
                    }
                    if let Some(b) = branch.as_object_mut() {
                        b.remove("nullable");
                        if let Some(Value::Array(ts)) = b.remove("types") {
                            types.extend(ts.iter().filter_map(|t| t.as_str().map(String::from)));
                        }
                    }
                    merge(&mut out, branch);
                } else {
                    out.insert(key.to_string(), json!(kept));
                }
            }
            "properties" => {
                let props: Map<String, Value> = value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, s)| (k.clone(), meaning(s)))
                    .collect();
                out.insert(key.clone(), Value::Object(props));
            }
            "items" | "not" | "additionalProperties" => {
                out.insert(key.clone(), meaning(value));
            }
            "required" => {
                let mut names: Vec<String> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(Value::to_string)
                    .collect();
                names.sort();
                out.insert(key.clone(), json!(names));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if !types.is_empty() {
        out.insert("types".into(), json!(types));
    }
    if nullable {
        out.insert("nullable".into(), json!(true));
    }
    Value::Object(out)
}

/// What an operation says: its id, parameters (name, in, required, schema), request body
/// and answers (status, description, headers, media types), every schema read by [`meaning`].
fn operation_meaning(op: &Value) -> Value {
    let params: Vec<Value> = op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            json!({ "name": p["name"], "in": p["in"], "required": p["required"],
                    "description": p["description"], "schema": meaning(&p["schema"]) })
        })
        .collect();
    let content = |c: &Value| -> Value {
        c.as_object()
            .into_iter()
            .flatten()
            .map(|(media, m)| {
                (
                    media.clone(),
                    json!({ "schema": meaning(&m["schema"]), "example": m["example"] }),
                )
            })
            .collect::<Map<String, Value>>()
            .into()
    };
    let responses: Map<String, Value> = op["responses"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(status, r)| {
            let headers: Map<String, Value> = r["headers"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(h, v)| {
                    let said =
                        json!({ "description": v["description"], "schema": meaning(&v["schema"]) });
                    (h.clone(), said)
                })
                .collect();
            let said = json!({ "description": r["description"], "headers": headers,
                               "content": content(&r["content"]) });
            (status.clone(), said)
        })
        .collect();
    json!({
        "operationId": op["operationId"], "summary": op["summary"], "tags": op["tags"],
        "security": op["security"], "parameters": params,
        "requestBody": { "required": op["requestBody"]["required"],
                         "content": content(&op["requestBody"]["content"]) },
        "responses": responses,
    })
}

#[test]
fn the_3_0_renderings_say_what_the_3_1_documents_say() {
    let mut compared = (0, 0);
    for doc in &DOCUMENTS {
        let (v31, v30) = (doc.json(), doc.json_30());
        assert_eq!(v31["openapi"], "3.1.0");
        let ops = operations(&v31);
        assert_eq!(ops, operations(&v30), "{}: operations", doc.file_30);
        for (method, path) in &ops {
            let method = method.to_lowercase();
            let a = operation_meaning(&v31["paths"][path][&method]);
            let b = operation_meaning(&v30["paths"][path][&method]);
            assert!(
                a == b,
                "{} {method} {path}:\n3.1: {a}\n3.0: {b}",
                doc.file_30
            );
            compared.0 += 1;
        }
        for key in ["servers", "security", "info"] {
            assert_eq!(v31[key], v30[key], "{}: {key}", doc.file_30);
        }
        assert_eq!(
            v31["components"]["securitySchemes"], v30["components"]["securitySchemes"],
            "{}",
            doc.file_30
        );
        let (s31, s30) = (
            v31["components"]["schemas"].as_object().expect("schemas"),
            v30["components"]["schemas"].as_object().expect("schemas"),
        );
        let names = |s: &Map<String, Value>| s.keys().cloned().collect::<BTreeSet<_>>();
        assert_eq!(names(s31), names(s30), "{}: schema names", doc.file_30);
        for (name, schema) in s31 {
            let (a, b) = (meaning(schema), meaning(&s30[name]));
            assert!(a == b, "{} {name}:\n3.1: {a}\n3.0: {b}", doc.file_30);
            compared.1 += 1;
        }
    }
    println!(
        "{} operations and {} component schemas say the same in 3.0 and 3.1",
        compared.0, compared.1
    );
    assert!(compared.0 > 60 && compared.1 > 60, "{compared:?}");
}

/// What the 3.0 readers need of the renderings: no 3.1-only spelling left (a `type` array,
/// `type: "null"`, `const`, a schema's `examples` array), every nullable enumeration lists
/// null (3.0.3: `nullable` widens `type`, not `enum`), and every amount is a decimal.
#[test]
fn the_3_0_renderings_keep_no_3_1_spelling() {
    fn walk(v: &Value, at: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                match map.get("type") {
                    Some(Value::Array(_)) => out.push(format!("{at}: type array")),
                    Some(t) if t == "null" => out.push(format!("{at}: type null")),
                    _ => {}
                }
                if map.get("nullable") == Some(&json!(true)) {
                    if let Some(Value::Array(values)) = map.get("enum") {
                        if !values.contains(&Value::Null) {
                            out.push(format!("{at}: nullable enum without null"));
                        }
                    }
                }
                for (k, child) in map {
                    if k == "const" || (k == "examples" && child.is_array()) {
                        out.push(format!("{at}/{k}"));
                    }
                    walk(child, &format!("{at}/{k}"), out);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    walk(child, &format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut problems = Vec::new();
    for doc in &DOCUMENTS {
        walk(&doc.json_30(), doc.file_30, &mut problems);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
