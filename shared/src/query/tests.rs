//! Table-driven tests of the language (parse, errors with positions, SQL semantics against a
//! real SQLite table) and property tests: no input panics, no input text reaches the SQL.

use super::*;
use crate::store::sqlite::configure;
use proptest::prelude::*;
use rusqlite::Connection;

const COLORS: &[&str] = &["RED", "GREEN", "BLUE"];

static FIELDS: &[FieldSpec] = &[
    FieldSpec::new("id", "t.id", FieldKind::Integer).sortable(),
    FieldSpec::new("name", "t.name", FieldKind::Text).sortable(),
    FieldSpec::new("amount", "t.amount", FieldKind::Decimal).sortable(),
    FieldSpec::new("active", "t.active", FieldKind::Bool),
    FieldSpec::new("at", "t.at", FieldKind::DateTime).sortable(),
    FieldSpec::new("color", "t.color", FieldKind::Enum(COLORS)).sortable(),
    FieldSpec::new("owner.id", "t.owner_id", FieldKind::Integer),
    FieldSpec::new("tag", "g.tag", FieldKind::Text).via("tags g WHERE g.t_id = t.id"),
];

fn tz() -> chrono_tz::Tz {
    "America/Chicago".parse().unwrap()
}

/// A table of five rows covering nulls, decimals that sort differently as text, and tags.
fn db() -> Connection {
    let c = Connection::open_in_memory().unwrap();
    configure(&c).unwrap();
    c.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, amount TEXT COLLATE DECIMAL,
            active INTEGER, at TEXT, color TEXT, owner_id INTEGER);
         CREATE TABLE tags (t_id INTEGER, tag TEXT);
         INSERT INTO t VALUES
           (1, 'Acme', '10', 1, '2025-01-01T06:00:00.000Z', 'RED', 7),
           (2, 'acme labs', '9.5', 0, '2025-06-01T05:00:00.000Z', 'GREEN', NULL),
           (3, 'O''Brien', '100.25', 1, NULL, 'BLUE', 7),
           (4, 'Globex', NULL, 0, '2026-01-01T06:00:00.000Z', NULL, 8),
           (5, 'a_b', '-1', 1, '2024-12-31T06:00:00.000Z', 'RED', NULL);
         INSERT INTO tags VALUES (1, 'vip'), (1, 'eu'), (3, 'eu');",
    )
    .unwrap();
    c
}

fn matching(c: &Connection, filter: &str) -> Vec<i64> {
    let expr = parse(filter).unwrap_or_else(|e| panic!("{filter}: {e}"));
    let frag = compile_filter(&expr, FIELDS, tz()).unwrap_or_else(|e| panic!("{filter}: {e}"));
    let sql = format!("SELECT t.id FROM t WHERE {} ORDER BY t.id", frag.sql);
    let mut stmt = c.prepare(&sql).unwrap();
    stmt.query_map(rusqlite::params_from_iter(frag.params.iter()), |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<Vec<i64>>>()
        .unwrap()
}

#[test]
fn semantics() {
    let c = db();
    let cases: &[(&str, &[i64])] = &[
        ("id EQ '3'", &[3]),
        ("name EQ 'O''Brien'", &[3]),
        ("name like 'acme%'", &[1, 2]),
        ("name LIKE 'a_b'", &[5]),
        ("name LIKE '%e%'", &[1, 2, 3, 4]),
        ("amount GT '9.6'", &[1, 3]),
        ("amount LTE '10.00'", &[1, 2, 5]),
        ("amount EQ '10.0'", &[1]),
        ("amount IS NULL", &[4]),
        ("active EQ 'TRUE'", &[1, 3, 5]),
        ("active NEQ 'true'", &[2, 4]),
        ("at GTE '2025-01-01'", &[1, 2, 4]),
        ("at LT '2025-01-01T00:00:00-06:00'", &[5]),
        (
            "at IS NOT NULL AND at LT '2025-06-01T00:00:00-05:00'",
            &[1, 5],
        ),
        ("color EQ 'red'", &[1, 5]),
        ("color NEQ 'RED'", &[2, 3]),
        ("NOT color EQ 'RED'", &[2, 3]),
        ("color IN ('GREEN', 'BLUE')", &[2, 3]),
        ("owner.id EQ '7'", &[1, 3]),
        ("owner.id IS NULL OR id EQ '4'", &[2, 4, 5]),
        ("id EQ '1' OR id EQ '2' AND name EQ 'x'", &[1]),
        ("(id EQ '1' OR id EQ '2') AND name LIKE 'acme%'", &[1, 2]),
        ("NOT (id EQ '1' OR id EQ '2')", &[3, 4, 5]),
        ("NOT NOT id EQ '1'", &[1]),
        ("tag EQ 'eu'", &[1, 3]),
        ("tag EQ 'vip' AND tag EQ 'eu'", &[1]),
        ("tag IS NULL", &[2, 4, 5]),
        ("tag IS NOT NULL", &[1, 3]),
        ("id IN ('1','5')", &[1, 5]),
        ("  id   eq   '2'  ", &[2]),
    ];
    for (filter, want) in cases {
        assert_eq!(&matching(&c, filter), want, "{filter}");
    }
}

#[test]
fn errors_name_the_problem_and_position() {
    let cases: &[(&str, Option<usize>, &str)] = &[
        ("", Some(1), "empty"),
        ("name EQ 'x", Some(9), "unbalanced quote"),
        ("(name EQ 'x'", Some(1), "never closed"),
        ("name EQ 'x')", Some(12), "unbalanced parenthesis"),
        ("nope EQ 'x'", Some(1), "unknown field 'nope'"),
        ("name XX 'x'", Some(6), "unknown operator 'XX'"),
        ("name EQ x", Some(9), "single quotes"),
        ("name EQ", Some(8), "end of the filter"),
        ("amount LIKE '1%'", Some(1), "LIKE does not apply"),
        ("amount GT 'ten'", Some(11), "not a number"),
        ("id EQ '1.5'", Some(7), "whole number"),
        ("active EQ 'yes'", Some(11), "true or false"),
        ("active GT 'true'", Some(1), "GT does not apply"),
        ("at GT 'tomorrow'", Some(7), "date"),
        ("color EQ 'PINK'", Some(10), "one of RED, GREEN, BLUE"),
        ("name EQ 'a' name EQ 'b'", Some(13), "expected AND, OR"),
        ("name = 'a'", Some(6), "unexpected character '='"),
        ("name IS 'x'", Some(9), "expected NULL"),
        ("name IN 'x'", Some(9), "expected '('"),
        ("AND", Some(4), "expected an operator"),
        ("id EQ '1' AND", Some(14), "end of the filter"),
    ];
    for (filter, pos, needle) in cases {
        let result = parse(filter).and_then(|e| compile_filter(&e, FIELDS, tz()));
        let err = result.expect_err(filter);
        assert_eq!(err.position, *pos, "{filter}: {err}");
        assert!(err.message.contains(needle), "{filter}: {err}");
    }
}

#[test]
fn limits() {
    let long = format!("name EQ '{}'", "x".repeat(MAX_FILTER_CHARS));
    assert!(parse(&long)
        .unwrap_err()
        .message
        .contains("characters long"));
    let deep = format!(
        "{}id EQ '1'{}",
        "(".repeat(MAX_DEPTH + 1),
        ")".repeat(MAX_DEPTH + 1)
    );
    assert!(parse(&deep)
        .unwrap_err()
        .message
        .contains("nested too deeply"));
    let ok = format!(
        "{}id EQ '1'{}",
        "(".repeat(MAX_DEPTH),
        ")".repeat(MAX_DEPTH)
    );
    assert!(parse(&ok).is_ok());
    let nots = format!("{}id EQ '1'", "NOT ".repeat(MAX_DEPTH + 1));
    assert!(parse(&nots).is_err());
    let values = |n: usize| {
        (0..n)
            .map(|i| format!("'{i}'"))
            .collect::<Vec<_>>()
            .join(",")
    };
    assert!(parse(&format!("id IN ({})", values(MAX_IN_VALUES))).is_ok());
    let err = parse(&format!("id IN ({})", values(MAX_IN_VALUES + 1))).unwrap_err();
    assert!(err.message.contains("at most 50"), "{err}");
}

#[test]
fn sort_keys() {
    assert_eq!(compile_sort("", FIELDS, "t.id").unwrap(), "t.id ASC");
    assert_eq!(
        compile_sort("-amount, name", FIELDS, "t.id").unwrap(),
        "t.amount COLLATE DECIMAL DESC, t.name ASC, t.id ASC"
    );
    let e = compile_sort("name,active", FIELDS, "t.id").unwrap_err();
    assert_eq!(e.position, Some(6));
    assert!(e.message.contains("cannot be sorted"));
    assert!(compile_sort("tag", FIELDS, "t.id").is_err());
    assert!(compile_sort("name,,id", FIELDS, "t.id").is_err());
    let e = compile_sort("name,-amount,name", FIELDS, "t.id").unwrap_err();
    assert_eq!(e.position, Some(14));
    assert!(e.message.contains("'name' is named twice"), "{e}");
    let too_many = vec!["name"; 2001].join(",");
    assert!(compile_sort(&too_many, FIELDS, "t.id").is_err());
    assert!(compile_sort("bogus", FIELDS, "t.id")
        .unwrap_err()
        .message
        .contains("unknown field"));
}

#[test]
fn decimal_sort_is_numeric() {
    let c = db();
    let order = compile_sort("-amount", FIELDS, "t.id").unwrap();
    let ids: Vec<i64> = c
        .prepare(&format!(
            "SELECT t.id FROM t WHERE t.amount IS NOT NULL ORDER BY {order}"
        ))
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(ids, vec![3, 1, 2, 5]);
}

/// Text that may show up in a value or a field name: quotes, SQL, unicode.
fn nasty() -> impl Strategy<Value = String> {
    prop::string::string_regex("[a-zA-Z0-9 '%_;()\\-\"\\\\ä*/=<>]{0,12}").unwrap()
}

/// Filters built from grammar pieces with arbitrary values and names, valid or not.
fn filter_text() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        Just("id".to_string()),
        Just("name".to_string()),
        Just("amount".to_string()),
        Just("at".to_string()),
        Just("color".to_string()),
        Just("tag".to_string()),
        "[a-z_.]{1,8}",
    ];
    let op = prop_oneof![
        Just("EQ"),
        Just("neq"),
        Just("LT"),
        Just("LTE"),
        Just("GT"),
        Just("GTE"),
        Just("LIKE")
    ];
    let leaf = prop_oneof![
        (name.clone(), op, nasty())
            .prop_map(|(n, o, v)| format!("{n} {o} '{}'", v.replace('\'', "''"))),
        name.clone().prop_map(|n| format!("{n} IS NOT NULL")),
        (name, prop::collection::vec(nasty(), 1..4)).prop_map(|(n, vs)| format!(
            "{n} IN ({})",
            vs.iter()
                .map(|v| format!("'{}'", v.replace('\'', "''")))
                .collect::<Vec<_>>()
                .join(",")
        )),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} AND {b}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} OR {b})")),
            inner.prop_map(|a| format!("NOT {a}")),
        ]
    })
}

/// The only identifiers and keywords compiled SQL may contain.
fn sql_is_from_whitelist(sql: &str) -> bool {
    let mut rest = sql.to_string();
    for via in FIELDS.iter().filter_map(|f| f.via) {
        rest = rest.replace(via, " ");
    }
    for f in FIELDS {
        rest = rest.replace(f.sql, " ");
    }
    for word in [
        "COLLATE DECIMAL",
        "IS NOT NULL",
        "IS NULL",
        "NOT EXISTS",
        "EXISTS",
        "SELECT 1 FROM",
        "AND",
        "OR",
        "NOT",
        "LIKE",
        "IN",
        "<>",
        "<=",
        ">=",
        "=",
        "<",
        ">",
        "?",
        "(",
        ")",
        ",",
    ] {
        rest = rest.replace(word, " ");
    }
    rest.trim().is_empty()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_text_never_panics(input in "\\PC{0,200}") {
        if let Ok(e) = parse(&input) {
            let _ = compile_filter(&e, FIELDS, tz());
        }
        let _ = compile_sort(&input, FIELDS, "t.id");
    }

    #[test]
    fn compiled_sql_holds_no_input_text(filter in filter_text()) {
        if let Ok(frag) = parse(&filter).and_then(|e| compile_filter(&e, FIELDS, tz())) {
            prop_assert!(sql_is_from_whitelist(&frag.sql), "{} -> {}", filter, frag.sql);
            prop_assert_eq!(frag.sql.matches('?').count(), frag.params.len());
            // And it runs: the SQL is well-formed whatever the values were.
            let c = db();
            let sql = format!("SELECT COUNT(*) FROM t WHERE {}", frag.sql);
            let n: i64 = c.query_row(&sql, rusqlite::params_from_iter(frag.params.iter()), |r| r.get(0)).unwrap();
            prop_assert!(n >= 0);
        }
    }
}

mod fuzz;

#[test]
fn names_match_ignoring_ascii_case_and_underscores() {
    // The platform's spelling (accountnum, accountNum) names our account_num.
    for written in [
        "account_num",
        "accountnum",
        "accountNum",
        "ACCOUNT_NUM",
        "_account__num_",
    ] {
        assert!(compile::same_name(written, "account_num"), "{written}");
    }
    for written in [
        "account-num",
        "accountnumber",
        "account.num",
        "accóuntnum",
        "",
    ] {
        assert!(!compile::same_name(written, "account_num"), "{written}");
    }
    // Filters, sorts and `mentions` resolve through the same rule.
    let c = db();
    assert_eq!(
        matching(&c, "Owner_.ID IS NULL"),
        matching(&c, "owner.id IS NULL")
    );
    assert_eq!(matching(&c, "NA_ME LIKE 'acme%'"), [1, 2]);
    assert_eq!(matching(&c, "T_a_G EQ 'eu'"), [1, 3]);
    assert_eq!(
        compile_sort("-A_mount,Name", FIELDS, "t.id").unwrap(),
        compile_sort("-amount,name", FIELDS, "t.id").unwrap()
    );
    let e = compile_sort("name,NA_ME", FIELDS, "t.id").unwrap_err();
    assert!(e.message.contains("'name' is named twice"), "{e}");
    assert!(parse("colo_r EQ 'RED'").unwrap().mentions("color"));
    assert!(!parse("colors EQ 'RED'").unwrap().mentions("color"));
    // A name that does not resolve is still refused, as written.
    let err = compile_filter(&parse("owner_idx EQ '1'").unwrap(), FIELDS, tz()).unwrap_err();
    assert!(err.message.contains("unknown field 'owner_idx'"), "{err}");
}

#[test]
fn name_collisions_are_found() {
    assert!(compile::name_collisions(FIELDS).is_empty());
    static CLASH: &[FieldSpec] = &[
        FieldSpec::new("account_num", "a", FieldKind::Text),
        FieldSpec::new("id", "b", FieldKind::Integer),
        FieldSpec::new("AccountNum", "c", FieldKind::Text),
    ];
    assert_eq!(
        compile::name_collisions(CLASH),
        [("account_num", "AccountNum")]
    );
}
