//! Generates the client of each OpenAPI 3.0.3 document (docs/openapi/<name>-3.0.json) with
//! progenitor, into `$OUT_DIR/<name>.rs` (included by src/lib.rs). Built from the committed
//! documents, which a test keeps equal to what the server serves, so the client cannot drift
//! from the server.
//!
//! Two changes to the documents first, both in what progenitor can express, none in what the
//! server does: progenitor types all of an operation's success answers (and `default`) as
//! one Rust type, so the `304 Not Modified` answers (sent only to a request carrying
//! If-None-Match, which this client never sends) and the `default` error answers (an
//! undocumented status then reaches the caller as `Error::UnexpectedResponse`) are left out.
//! And every exact decimal (`type: number, format: decimal`) becomes `crate::Decimal`, which
//! reads and writes the JSON number's digits exactly, never through f64.

#![allow(
    clippy::expect_used,
    clippy::panic,
    reason = "a build script fails by panicking"
)]

use progenitor_impl::{GenerationSettings, Generator, InterfaceStyle, TypeImpl};
use schemars::schema::{InstanceType, NumberValidation, SchemaObject};
use serde_json::Value;
use std::path::Path;

/// The documents, by the name of the module each becomes.
const DOCUMENTS: [&str; 3] = ["billing", "revenue", "admin"];

fn main() {
    // Read when the script runs, not when it is compiled: a compiled build script can be
    // reused from a target directory built at another checkout's path.
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let docs = Path::new(&manifest_dir).join("../../docs/openapi");
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    for name in DOCUMENTS {
        let path = docs.join(format!("{name}-3.0.json"));
        println!("cargo::rerun-if-changed={}", path.display());
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut doc: Value = serde_json::from_str(&text).expect("a document is JSON");
        one_answer_type(&mut doc);
        let spec: openapiv3::OpenAPI =
            serde_json::from_value(doc).expect("an OpenAPI 3.0 document");
        let mut generator = Generator::new(&settings());
        let tokens = generator
            .generate_tokens(&spec)
            .unwrap_or_else(|e| panic!("{name}-3.0.json: {e}"));
        let file = Path::new(&out).join(format!("{name}.rs"));
        std::fs::write(&file, tokens.to_string()).expect("write the generated client");
    }
}

/// Leaves out each operation's `304` and `default` answers (see the module's doc), and, of
/// success answers with different bodies, all but those of the highest status: a tenant's
/// creation answers 201 with the tenant, its dry run (`dry_run=true`) 200 with a report, and
/// the client types the creation; a dry run's report then reaches the caller as
/// `Error::UnexpectedResponse`, whose body it can still read.
fn one_answer_type(doc: &mut Value) {
    let paths = doc["paths"].as_object_mut().expect("paths");
    for item in paths.values_mut() {
        for op in item.as_object_mut().expect("a path item").values_mut() {
            if let Some(responses) = op["responses"].as_object_mut() {
                responses.remove("304");
                responses.remove("default");
                let success: Vec<String> = responses
                    .keys()
                    .filter(|code| code.starts_with('2'))
                    .cloned()
                    .collect();
                let Some(highest) = success.iter().max().cloned() else {
                    continue;
                };
                let body = responses[&highest].get("content").cloned();
                for code in success {
                    if responses[&code].get("content").cloned() != body {
                        responses.remove(&code);
                    }
                }
            }
        }
    }
}

/// The builder interface (`client.get_ledger().id(7).send()`), and exact decimals: each form
/// a decimal takes in the documents (with its bounds; descriptions are not compared).
fn settings() -> GenerationSettings {
    let mut settings = GenerationSettings::new();
    settings.with_interface(InterfaceStyle::Builder);
    for minimum in [None, Some(0.0)] {
        let decimal = SchemaObject {
            instance_type: Some(InstanceType::Number.into()),
            format: Some("decimal".into()),
            number: minimum.map(|m| {
                Box::new(NumberValidation {
                    minimum: Some(m),
                    ..Default::default()
                })
            }),
            ..Default::default()
        };
        settings.with_conversion(
            decimal,
            "crate::Decimal",
            [TypeImpl::Display, TypeImpl::FromStr].into_iter(),
        );
    }
    settings
}
