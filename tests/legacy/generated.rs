//! Types generated from the served XSD by a tool nobody on this project wrote (xsdata, the
//! Python data binding generator) work unchanged: the generator takes the schema without a
//! warning, and the generated classes read a page, an object, a fault, a create answer and
//! two command answers, and write the bodies of a create and of two commands, which the
//! server takes (`generated_client.py`). What they read is compared with the server's answers.

use e2e::legacy::{attr, child, Legacy, ROOT};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Runs `cmd`; it must succeed without a warning. Answers its output.
fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("python3");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{cmd:?}: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        !format!("{stdout}{stderr}")
            .to_lowercase()
            .contains("warning"),
        "{cmd:?}: {stdout}{stderr}"
    );
    stdout
}

#[tokio::test]
async fn classes_generated_from_the_xsd_read_and_write_surface_a() {
    e2e::require_tool("xsdata (Python)", || {
        e2e::runs("python3", &["-m", "xsdata", "--version"])
    });
    let a = Legacy::start("demo").await;
    let dir = tempfile::tempdir().unwrap();
    let xsd = e2e::xsd::fetch(&a.s.base).await;
    std::fs::write(dir.path().join("surface_a.xsd"), xsd).unwrap();
    run(Command::new("python3")
        .args([
            "-m",
            "xsdata",
            "generate",
            "surface_a.xsd",
            "--package",
            "surface_a",
        ])
        .current_dir(dir.path()));

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("legacy/generated_client.py");
    let basic = format!("{}:{}", a.t.username, a.t.password);
    let root = format!("{}{ROOT}", a.s.base);
    // Off the runtime's thread: the server under test answers the script from it.
    let out = tokio::task::spawn_blocking(move || {
        run(Command::new("python3")
            .arg(script)
            .arg(dir.path())
            .arg(root)
            .arg(basic))
    })
    .await
    .unwrap();
    let got: Value = serde_json::from_str(&out).expect(&out);

    let page = a.get("billingAccounts?pageSize=2").await;
    let p = page.el();
    let nums: Vec<&str> = p.children.iter().map(|c| attr(c, "accountNum")).collect();
    let total: i64 = attr(p, "totalElements").parse().unwrap();
    // The script's create comes after its page read: the page counted one account fewer.
    assert_eq!(got["page"][0], total - 1, "{got}");
    assert_eq!(got["page"][1], 2);
    assert_eq!(got["page"][2], serde_json::json!(nums));
    assert_eq!(got["first_bill_type"], attr(&p.children[0], "billType"));
    let invoice = a.get("invoices/1").await;
    let i = invoice.el();
    assert_eq!(got["invoice"][0], attr(i, "invoiceNum"));
    assert_eq!(got["invoice"][1], attr(i, "amount"));
    assert_eq!(got["invoice"][2], attr(i, "status"));
    assert_eq!(
        got["invoice"][3].to_string(),
        attr(child(i, "billingAccount"), "eid")
    );
    assert_eq!(got["fault"][0], 404);
    assert_eq!(got["fault"][1], "GENERAL");
    assert_eq!(got["created"][0], 201);
    assert_eq!(got["created"][1], true);
    let eid = got["created"][2].as_i64().unwrap();
    let account = a.get(&format!("billingAccounts/{eid}")).await;
    assert_eq!(attr(account.el(), "billType"), "PAPER");
    assert_eq!(attr(account.el(), "name"), "Generated");
    assert_eq!(got["note"][0], true);
    assert_eq!(got["note"][1], "from xsdata");
    assert_eq!(got["note"][2], attr(account.el(), "accountNum"));
    let notes = a.get(&format!("billingAccounts/{eid}/notes")).await;
    assert_eq!(attr(&notes.el().children[0], "note"), "from xsdata");
    // A new account owes nothing: the whole payment stays unapplied.
    assert_eq!(got["applied"], serde_json::json!([true, "12.5", 0]));
    let payments = a.get(&format!("payments?billingAccountEid={eid}")).await;
    assert_eq!(attr(&payments.el().children[0], "reference"), "gen");
    assert_eq!(got["users"], serde_json::json!([1, 1]));
}
