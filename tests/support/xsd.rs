//! Validation of Surface A's XML against the XSD the server under test serves, with the
//! Python `xmlschema` package (tests/requirements.txt), which nobody on this project wrote.
//! One validator process per distinct XSD lives as long as the test binary (starting Python
//! and compiling the schema takes a few hundred milliseconds; a document then takes about a
//! millisecond). Each server's XSD is fetched once, at `<root>/application.wadl/xsd0.xsd`,
//! without credentials, as a client generating code would fetch it.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};

/// Where the XSD is served below the Surface A root.
pub const XSD_PATH: &str = "application.wadl/xsd0.xsd";

/// A running `xsd_validate.py` for one schema.
struct Validator {
    xsd: String,
    io: Mutex<(ChildStdin, BufReader<ChildStdout>, Child)>,
    _file: tempfile::NamedTempFile,
}

impl Validator {
    fn start(xsd: String) -> Validator {
        crate::require_tool("xmlschema (Python)", || {
            crate::runs("python3", &["-c", "import xmlschema"])
        });
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        file.write_all(xsd.as_bytes()).expect("write the XSD");
        let script =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("support/xsd_validate.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(file.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 with xmlschema (pip install -r tests/requirements.txt)");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Validator {
            xsd,
            io: Mutex::new((stdin, stdout, child)),
            _file: file,
        }
    }

    fn check(&self, document: &str) -> Result<(), String> {
        let mut io = self.io.lock().unwrap_or_else(|p| p.into_inner());
        let (stdin, stdout, _) = &mut *io;
        write!(stdin, "{}\n{document}", document.len()).expect("send to the validator");
        stdin.flush().expect("send to the validator");
        let mut answer = String::new();
        stdout
            .read_line(&mut answer)
            .expect("read from the validator");
        match answer.trim_end() {
            "ok" => Ok(()),
            "" => Err("the validator stopped (is the XSD itself valid?)".into()),
            other => Err(other.to_string()),
        }
    }
}

/// Validators by XSD, and each server's (origin's) validator.
#[derive(Default)]
struct Validators {
    by_xsd: Vec<Arc<Validator>>,
    by_origin: HashMap<String, Arc<Validator>>,
}

static VALIDATORS: Mutex<Option<Validators>> = Mutex::new(None);

/// The XSD the server at `origin` (`http://host:port`) serves; panics when it serves none.
pub async fn fetch(origin: &str) -> String {
    let url = format!("{origin}{}/{XSD_PATH}", crate::legacy::ROOT);
    let r = reqwest::get(&url).await.expect("GET the XSD");
    let status = r.status();
    let body = r.text().await.expect("the XSD's body");
    assert_eq!(status, 200, "the server serves no XSD at {url}: {body}");
    body
}

/// Validates `document` against the XSD of the server at `origin`.
pub async fn validate(origin: &str, document: &str) -> Result<(), String> {
    let known = VALIDATORS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_or_insert_with(Validators::default)
        .by_origin
        .get(origin)
        .cloned();
    let validator = match known {
        Some(v) => v,
        None => {
            let xsd = fetch(origin).await;
            let mut all = VALIDATORS.lock().unwrap_or_else(|p| p.into_inner());
            let all = all.get_or_insert_with(Validators::default);
            let v = match all.by_xsd.iter().find(|v| v.xsd == xsd) {
                Some(v) => v.clone(),
                None => {
                    let v = Arc::new(Validator::start(xsd));
                    all.by_xsd.push(v.clone());
                    v
                }
            };
            all.by_origin.insert(origin.to_string(), v.clone());
            v
        }
    };
    validator.check(document)
}
