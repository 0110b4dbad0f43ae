//! The formula language: a table of formulas and their values or errors (with positions),
//! the bounds, and properties: random and mutated formulas never panic, and evaluation visits
//! each node at most once (linear time).

use super::*;
use proptest::prelude::*;

fn d(s: &str) -> Decimal {
    s.parse().unwrap()
}

fn inputs(amount: Decimal, reference_id: Option<&str>) -> Inputs<'_> {
    Inputs {
        amount,
        usage_amount: amount.checked_mul(Decimal::from(60)).unwrap_or(amount),
        attributes: Attributes {
            reference_id,
            sequence_id: None,
            service_resource_identifier: "srv-1",
            usage_uom: "MINUTE",
        },
    }
}

fn eval(source: &str, amount: &str, reference_id: Option<&str>) -> Result<Decimal, String> {
    let f = Formula::parse(source).map_err(|e| format!("parse: {e}"))?;
    f.evaluate(&inputs(d(amount), reference_id))
        .map_err(|e| e.to_string())
}

#[test]
fn formulas_compute_exact_decimals() {
    let cases: &[(&str, &str, Option<&str>, &str)] = &[
        ("amount", "3.5", None, "3.5"),
        ("amount * 0.1", "0.3", None, "0.03"),
        ("0.1 + 0.2", "0", None, "0.3"),
        ("1 - 2 - 3", "0", None, "-4"),
        ("2 * 3 + 4 * 5", "0", None, "26"),
        ("2 * (3 + 4) * 5", "0", None, "70"),
        ("10 / 4", "0", None, "2.5"),
        ("1 / 3 * 3", "0", None, "0.9999999999999999999999999999"),
        ("-amount", "2", None, "-2"),
        ("--amount", "2", None, "2"),
        ("usage_amount", "2", None, "120"),
        ("max(2.5, amount * 0.4)", "5", None, "2.5"),
        ("max(2.5, amount * 0.4)", "7", None, "2.8"),
        ("min(3, 1, 2)", "0", None, "1"),
        ("abs(0 - amount)", "4.25", None, "4.25"),
        ("floor(amount)", "-1.5", None, "-2"),
        ("ceil(amount)", "1.01", None, "2"),
        ("round(amount)", "2.5", None, "3"),
        ("round(amount)", "-2.5", None, "-3"),
        ("round(amount, 2)", "0.125", None, "0.13"),
        ("round(amount, 0)", "0.4", None, "0"),
        ("if(amount > 10, 1, 2)", "11", None, "1"),
        ("if(amount > 10, 1, 2)", "10", None, "2"),
        ("if(amount >= 10 and amount < 20, 1, 0)", "10", None, "1"),
        ("if(amount < 1 or amount > 5, 1, 0)", "3", None, "0"),
        ("if(not amount == 3, 1, 0)", "3", None, "0"),
        ("if(amount != 3, 1, 0)", "3.00", None, "0"),
        ("if(amount <= 3, 1, 0)", "3", None, "1"),
        ("if(true, 1, 0) + if(FALSE, 1, 0)", "0", None, "1"),
        (
            "if(starts_with(reference_id, 'roam'), 2, 1)",
            "0",
            Some("roam-1"),
            "2",
        ),
        (
            "if(starts_with(reference_id, 'roam'), 2, 1)",
            "0",
            None,
            "1",
        ),
        ("if(reference_id == '', 1, 0)", "0", None, "1"),
        (
            "if(reference_id == 'O''Brien', 1, 0)",
            "0",
            Some("O'Brien"),
            "1",
        ),
        (
            "if(usage_uom == 'MINUTE' and service_resource_identifier != 'x', 1, 0)",
            "0",
            None,
            "1",
        ),
        ("if(sequence_id == '', 7, 0)", "0", None, "7"),
        ("IF(Amount > 1, MAX(1, 2), 0)", "2", None, "2"),
        ("if(amount == 0, 0, 1 / amount)", "0", None, "0"),
        ("if(amount > 0 or 1 / amount > 0, 1, 0)", "1", None, "1"),
        ("  amount\n*\t2 ", "1", None, "2"),
    ];
    for (source, amount, reference_id, expected) in cases {
        assert_eq!(
            eval(source, amount, *reference_id),
            Ok(d(expected)),
            "{source} with amount {amount}"
        );
    }
}

#[test]
fn arithmetic_failures_name_the_operator() {
    let max = Decimal::MAX.to_string();
    let cases: Vec<(String, &str, &str)> = vec![
        (
            "100 / (amount - 5)".into(),
            "5",
            "division by zero at character 5",
        ),
        ("1 / 0".into(), "0", "division by zero at character 3"),
        (
            format!("amount * {max}"),
            "2",
            "arithmetic overflow at character 8",
        ),
        (
            format!("{max} + amount"),
            "1",
            "arithmetic overflow at character 31",
        ),
        (
            format!("0 - {max} - amount"),
            "1",
            "arithmetic overflow at character 35",
        ),
        (
            format!("{max} / 0.1"),
            "1",
            "arithmetic overflow at character 31",
        ),
    ];
    for (source, amount, expected) in cases {
        assert_eq!(
            eval(&source, amount, None),
            Err(expected.to_string()),
            "{source}"
        );
    }
}

#[test]
fn bad_formulas_are_refused_with_their_position() {
    let cases: &[(&str, usize, &str)] = &[
        ("", 1, "expected a value"),
        ("amount *", 9, "expected a value"),
        ("amount * (0.5", 14, "expected ')'"),
        ("amount ** 2", 9, "expected a value"),
        ("amount 2", 8, "expected an operator or the end"),
        ("(amount))", 9, "expected an operator or the end"),
        ("amount = 2", 8, "'=='"),
        ("amount ! 2", 8, "'not'"),
        ("amount $ 2", 8, "unexpected character '$'"),
        ("1.", 2, "followed by digits"),
        ("1.5.5", 4, "unexpected character '.'"),
        ("1e5", 2, "expected an operator"),
        ("0.12345678901234567890123456789", 1, "more digits"),
        ("99999999999999999999999999999", 1, "more digits"),
        ("'open", 1, "closing quote"),
        ("price * 2", 1, "unknown name 'price'"),
        ("system('ls')", 1, "unknown function 'system'"),
        ("eval(amount)", 1, "unknown function"),
        ("amount and 1", 1, "'and' takes a condition"),
        ("amount > 5", 1, "must give a number"),
        ("reference_id", 1, "must give a number"),
        ("reference_id + 1", 14, "'+' takes numbers"),
        ("'a' < 'b'", 5, "ordering compares numbers"),
        ("if(amount == 'x', 1, 0)", 11, "one type"),
        ("1 < 2 < 3", 7, "do not chain"),
        ("max(1)", 1, "max takes 2 or more arguments"),
        ("abs(1, 2)", 1, "abs takes 1 arguments"),
        ("round(amount, 29)", 15, "from 0 to 28"),
        ("round(amount, 1.5)", 15, "whole number"),
        ("round(amount, amount)", 15, "whole number"),
        (
            "if(amount, 1, 0)",
            4,
            "the first argument of if takes a condition",
        ),
        ("if(true, 1, 'x')", 13, "takes a number, found a text"),
        (
            "starts_with(reference_id, 1)",
            27,
            "starts_with takes a text",
        ),
        ("not amount", 5, "'not' takes a condition"),
        ("-reference_id", 2, "'-' takes a number"),
        ("max(1, 2", 9, "expected ',' or ')'"),
        ("and", 1, "expected a value, found 'and'"),
        ("amount or", 10, "expected a value"),
        (")", 1, "expected a value, found ')'"),
    ];
    for (source, position, needle) in cases {
        let e = Formula::parse(source).expect_err(source);
        assert_eq!(e.position, *position, "{source}: {e}");
        assert!(e.message.contains(needle), "{source}: {e}");
    }
}

#[test]
fn size_and_depth_are_bounded() {
    let longest = format!("amount{}", " + 1".repeat((MAX_CHARS - 6) / 4));
    assert!(longest.chars().count() <= MAX_CHARS);
    assert!(Formula::parse(&longest).is_ok());
    let too_long = format!("{longest} + 1");
    let e = Formula::parse(&too_long).unwrap_err();
    assert_eq!(e.position, MAX_CHARS + 1);
    assert!(e.message.contains("1000 characters"), "{e}");
    // characters, not bytes
    let texts = format!("if('{}' == reference_id, 1, 0)", "é".repeat(900));
    assert!(Formula::parse(&texts).is_ok());

    let nested = |n: usize| format!("{}amount{}", "(".repeat(n), ")".repeat(n));
    assert!(Formula::parse(&nested(MAX_DEPTH)).is_ok());
    let e = Formula::parse(&nested(MAX_DEPTH + 1)).unwrap_err();
    assert_eq!(e.position, MAX_DEPTH + 1);
    assert!(e.message.contains("nesting deeper than 32"), "{e}");
    for deep in [
        format!("{}amount", "-".repeat(500)),
        format!("{}true, 1, 0)", "if(not ".repeat(100)),
        format!("{}amount{}", "abs(".repeat(150), ")".repeat(150)),
        nested(400),
    ] {
        let e = Formula::parse(&deep).unwrap_err();
        assert!(e.message.contains("nesting"), "{e}");
    }
    // long chains are flat, not deep
    let chain = format!("1{}", " * 1 - 1 + 1".repeat(70));
    assert!(Formula::parse(&chain).is_ok());
}

/// The largest formulas of several shapes, parsed and evaluated repeatedly: each stays far
/// below a millisecond-scale budget (printed with `--nocapture`; the bound is generous for a
/// loaded debug build: the point is that no shape is super-linear).
#[test]
fn the_largest_formulas_run_fast() {
    let max_args = format!("max(amount{})", ", 1".repeat((MAX_CHARS - 12) / 3));
    let nested_chain = format!(
        "{}amount{}{}",
        "(".repeat(MAX_DEPTH - 1),
        " * 1".repeat((MAX_CHARS - 6 - 2 * (MAX_DEPTH - 1)) / 4),
        ")".repeat(MAX_DEPTH - 1)
    );
    let conditions = format!(
        "if(amount > 0{}, 1, 0)",
        " and amount < 5".repeat((MAX_CHARS - 20) / 15)
    );
    let text = format!("if(reference_id == '{}', 1, 0)", "x".repeat(MAX_CHARS - 30));
    let shapes = [max_args, nested_chain, conditions, text];
    for source in &shapes {
        assert!(source.chars().count() <= MAX_CHARS, "{source}");
        let rounds = 200u32;
        let start = std::time::Instant::now();
        for _ in 0..rounds {
            let f = Formula::parse(source).unwrap();
            f.evaluate(&inputs(d("3"), Some("roam"))).unwrap();
        }
        let each = start.elapsed() / rounds;
        println!(
            "{} characters ({}...): parse + evaluate {each:?}",
            source.chars().count(),
            &source[..12]
        );
        assert!(each < std::time::Duration::from_millis(20), "{each:?}");
    }
}

/// Characters formulas are made of, weighted towards what makes valid ones.
fn formula_text() -> impl Strategy<Value = String> {
    let atoms = prop_oneof![
        Just("amount".to_string()),
        Just("usage_amount".to_string()),
        Just("reference_id".to_string()),
        Just("'roam'".to_string()),
        Just("0".to_string()),
        Just("1.5".to_string()),
        Just("79228162514264337593543950335".to_string()),
        Just("0.0000000000000000000000000001".to_string()),
        Just(" + ".to_string()),
        Just(" - ".to_string()),
        Just(" * ".to_string()),
        Just(" / ".to_string()),
        Just(" < ".to_string()),
        Just(" == ".to_string()),
        Just(" and ".to_string()),
        Just(" or ".to_string()),
        Just("not ".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just(", ".to_string()),
        Just("max(".to_string()),
        Just("min(".to_string()),
        Just("round(".to_string()),
        Just("if(".to_string()),
        Just("abs(".to_string()),
        Just("starts_with(".to_string()),
        Just("true".to_string()),
        Just("'".to_string()),
        any::<char>().prop_map(|c| c.to_string()),
    ];
    proptest::collection::vec(atoms, 0..120).prop_map(|parts| parts.concat())
}

/// A well-formed numeric formula of the given depth.
fn valid_formula() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("amount".to_string()),
        Just("usage_amount".to_string()),
        (0u64..1_000_000, 0u32..8).prop_map(|(m, s)| Decimal::new(m as i64, s).to_string()),
        Just("79228162514264337593543950335".to_string()),
    ];
    leaf.prop_recursive(6, 64, 4, |inner| {
        prop_oneof![
            (
                inner.clone(),
                inner.clone(),
                prop_oneof![Just("+"), Just("-"), Just("*"), Just("/")]
            )
                .prop_map(|(a, b, op)| format!("({a} {op} {b})")),
            inner.clone().prop_map(|a| format!("-{a}")),
            inner.clone().prop_map(|a| format!("abs({a})")),
            inner.clone().prop_map(|a| format!("round({a}, 2)")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("max({a}, {b})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("if({a} > {b}, {c}, {a})")),
            (inner.clone(), inner).prop_map(|(a, b)| format!(
                "if(starts_with(reference_id, 'r') or {a} == 0, {b}, floor({a}))"
            )),
        ]
    })
}

fn amounts() -> impl Strategy<Value = Decimal> {
    prop_oneof![
        Just(Decimal::ZERO),
        Just(Decimal::MAX),
        Just(Decimal::MIN),
        (any::<i64>(), 0u32..=28).prop_map(|(m, s)| Decimal::new(m, s)),
    ]
}

/// Parses and, when valid, evaluates: never a panic; visits at most the tree's nodes, and
/// the tree has at most as many nodes as the formula has characters.
fn parse_and_run(source: &str, amount: Decimal) {
    if let Ok(f) = Formula::parse(source) {
        assert!(f.nodes <= source.chars().count(), "{source}");
        let (_, steps) = f.evaluate_counting(&inputs(amount, Some("roam-1")));
        assert!(
            steps <= f.nodes,
            "{source}: {steps} steps for {} nodes",
            f.nodes
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_text_never_panics(source in formula_text(), amount in amounts()) {
        parse_and_run(&source, amount);
    }

    #[test]
    fn valid_formulas_evaluate_or_fail_on_arithmetic(source in valid_formula(), amount in amounts()) {
        if source.chars().count() <= MAX_CHARS {
            let f = Formula::parse(&source);
            prop_assert!(f.is_ok(), "{}: {:?}", source, f);
        }
        if let Ok(f) = Formula::parse(&source) {
            match f.evaluate(&inputs(amount, Some("roam-1"))) {
                Ok(_) => {}
                Err(e) => prop_assert!(
                    e.message == "division by zero" || e.message == "arithmetic overflow",
                    "{}: {}", source, e
                ),
            }
        }
        parse_and_run(&source, amount);
    }

    #[test]
    fn mutated_formulas_never_panic(
        source in valid_formula(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..3, any::<char>()), 1..8),
        amount in amounts(),
    ) {
        let mut chars: Vec<char> = source.chars().collect();
        for (at, kind, c) in edits {
            let i = at.index(chars.len() + 1);
            match kind {
                0 if i < chars.len() => { chars.remove(i); }
                1 => chars.insert(i, c),
                _ if i < chars.len() => chars[i] = c,
                _ => chars.push(c),
            }
        }
        let mutated: String = chars.into_iter().collect();
        parse_and_run(&mutated, amount);
    }
}
