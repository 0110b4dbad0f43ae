//! Mutation and cost tests of the filter language: valid filters with characters replaced,
//! inserted or removed never panic and either compile or answer an error at a position inside
//! (or just past) the filter; and parsing plus compiling costs linear time on the long shapes
//! a hostile client can send up to [`MAX_FILTER_CHARS`].
//!
//! Timing is a ratio between a filter of about n characters and one of about 4n, each the
//! fastest of a few measurements of many repetitions, so a loaded machine slows both sides;
//! the bound (10x) is far from the 16x a quadratic cost would show.

use super::*;
use std::time::{Duration, Instant};

/// Valid filters over [`FIELDS`], one of each construct.
const VALID: [&str; 12] = [
    "id EQ '3'",
    "name EQ 'O''Brien'",
    "name like 'acme%'",
    "amount GT '9.6'",
    "active NEQ 'true'",
    "at IS NOT NULL AND at LT '2025-06-01T00:00:00-05:00'",
    "color IN ('GREEN', 'BLUE')",
    "owner.id IS NULL OR id EQ '4'",
    "(id EQ '1' OR id EQ '2') AND name LIKE 'acme%'",
    "NOT (id EQ '1' OR id EQ '2')",
    "tag EQ 'vip' AND tag EQ 'eu'",
    "  id   eq   '2'  ",
];

/// Pieces a hostile client would splice into a filter.
const PIECES: [&str; 18] = [
    "'",
    "''",
    "(",
    ")",
    ",",
    " ",
    "ä",
    "\u{1F600}",
    " AND ",
    " OR ",
    "NOT ",
    " IN (",
    " IS ",
    " NULL",
    "EQ",
    "%",
    "\\",
    ";--",
];

/// One edit: replace, insert or delete at an index (modulo the length in characters), or cut.
#[derive(Debug, Clone)]
enum Edit {
    Replace(usize, usize),
    Insert(usize, usize),
    Delete(usize),
    Truncate(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 0..PIECES.len()).prop_map(|(at, p)| Edit::Replace(at, p)),
        (any::<usize>(), 0..PIECES.len()).prop_map(|(at, p)| Edit::Insert(at, p)),
        any::<usize>().prop_map(Edit::Delete),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

fn apply(filter: &str, edit: &Edit) -> String {
    let mut chars: Vec<char> = filter.chars().collect();
    match *edit {
        Edit::Replace(at, p) if !chars.is_empty() => {
            let at = at % chars.len();
            chars.splice(at..=at, PIECES[p].chars());
        }
        Edit::Insert(at, p) => {
            let at = at % (chars.len() + 1);
            chars.splice(at..at, PIECES[p].chars());
        }
        Edit::Delete(at) if !chars.is_empty() => {
            chars.remove(at % chars.len());
        }
        Edit::Truncate(at) => chars.truncate(at % (chars.len() + 1)),
        _ => {}
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn mutated_filters_compile_or_name_a_position(
        which in 0..VALID.len(),
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        let mut filter = VALID[which].to_string();
        for e in &edits {
            filter = apply(&filter, e);
        }
        let chars = filter.chars().count();
        match parse(&filter).and_then(|e| compile_filter(&e, FIELDS, tz())) {
            Ok(frag) => prop_assert!(sql_is_from_whitelist(&frag.sql), "{} -> {}", filter, frag.sql),
            Err(err) => {
                let position = err.position;
                prop_assert!(
                    matches!(position, Some(p) if (1..=chars + 1).contains(&p)),
                    "{:?}: {}", filter, err
                );
                prop_assert!(!err.message.is_empty());
            }
        }
    }
}

#[test]
fn valid_filters_compile() {
    for filter in VALID {
        assert!(
            parse(filter)
                .and_then(|e| compile_filter(&e, FIELDS, tz()))
                .is_ok(),
            "{filter}"
        );
    }
}

/// The fastest of five measurements of 200 parses and compiles of `filter`.
fn fastest(filter: &str) -> Duration {
    (0..5)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..200 {
                let result = parse(filter).and_then(|e| compile_filter(&e, FIELDS, tz()));
                let _ = std::hint::black_box(result);
            }
            started.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// Whether `large` (about 4x `small`) costs at most 10 times as much (30 ms floor for costs
/// too quick to time). Each side is the fastest of five measurements, and the pair is
/// measured up to three times: a burst of load on a shared machine can spoil one round,
/// while a cost growing faster than linear (16x for quadratic) fails every round.
fn within_linear(small: &str, large: &str) -> Result<(), String> {
    let mut rounds = Vec::new();
    for _ in 0..3 {
        let (n, four_n) = (fastest(small), fastest(large));
        if four_n <= (n * 10).max(Duration::from_millis(30)) {
            return Ok(());
        }
        rounds.push(format!("n {n:?}, 4n {four_n:?}"));
    }
    Err(rounds.join("; "))
}

/// `unit` repeated (joined by `join`) to at most `chars` characters.
fn repeated(unit: &str, join: &str, chars: usize) -> String {
    let count = (chars + join.len()) / (unit.len() + join.len());
    vec![unit; count.max(1)].join(join)
}

/// A named way to build a filter of about the given number of characters.
type Shape = (&'static str, Box<dyn Fn(usize) -> String>);

#[test]
fn long_filters_cost_linear_time_up_to_the_length_limit() {
    let limit = MAX_FILTER_CHARS;
    let deep = format!(
        "{}id EQ '1'{}",
        "(".repeat(MAX_DEPTH),
        ")".repeat(MAX_DEPTH)
    );
    // Each shape at about `chars` characters.
    let shapes: [Shape; 7] = [
        ("many ORs", Box::new(|c| repeated("id EQ '1'", " OR ", c))),
        (
            "many ANDs and NOTs over a subquery field",
            Box::new(|c| repeated("NOT tag EQ 'x'", " AND ", c)),
        ),
        (
            "doubled quotes",
            Box::new(|c| format!("name EQ '{}'", "''".repeat((c - 10) / 2))),
        ),
        (
            "long LIKE pattern",
            Box::new(|c| format!("name LIKE '{}'", "%_a".repeat((c - 12) / 3))),
        ),
        (
            "deepest parentheses, repeated",
            Box::new(move |c| repeated(&deep, " OR ", c)),
        ),
        (
            "longest IN list of long values",
            Box::new(|c| {
                let value = format!("'{}'", "v".repeat(c / MAX_IN_VALUES - 4));
                format!("name IN ({})", vec![value; MAX_IN_VALUES].join(","))
            }),
        ),
        (
            "IN lists, repeated",
            Box::new(|c| {
                let list = format!("color IN ({})", vec!["'RED'"; MAX_IN_VALUES].join(","));
                repeated(&list, " OR ", c)
            }),
        ),
    ];
    for (shape, build) in shapes {
        let large = build(limit);
        let small = build(limit / 4);
        let length = large.chars().count();
        assert!(
            length <= limit && length > limit * 3 / 4,
            "{shape}: {length}"
        );
        let outcome = parse(&large).and_then(|e| compile_filter(&e, FIELDS, tz()));
        let linear = within_linear(&small, &large);
        eprintln!(
            "{shape}: 4n answers {:?}, linear {linear:?}",
            outcome.map(|f| f.params.len())
        );
        assert!(linear.is_ok(), "{shape}: {linear:?}");
    }
}
