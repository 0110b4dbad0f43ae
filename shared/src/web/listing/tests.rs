//! Unit tests of `listing` (kept in their own file so the module stays readable).

use super::*;

fn params(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn shape_from_return_and_prefer() {
    let mut h = HeaderMap::new();
    assert_eq!(read_shape(&params(&[]), &h).unwrap(), (Shape::Full, None));
    h.insert(
        "prefer",
        HeaderValue::from_static("respond-async, return=minimal"),
    );
    assert_eq!(
        read_shape(&params(&[]), &h).unwrap(),
        (Shape::Simple, Some("return=minimal"))
    );
    assert_eq!(
        read_shape(&params(&[("return", "FULL")]), &h).unwrap(),
        (Shape::Full, Some("return=representation"))
    );
    assert!(read_shape(&params(&[("return", "ALL")]), &h).is_err());
}

#[test]
fn simple_form_keeps_scalars_and_reference_ids() {
    let full = RawValue::from_string(
        r#"{"id":"1","name":"x","agreement":{"id":"2","name":"y"},"items":[{"id":"3"}],"amount":0.1000000000000000000000000001,"gone":null}"#.into(),
    )
    .unwrap();
    assert_eq!(
        simplify(&full).unwrap().get(),
        r#"{"id":"1","name":"x","agreement":{"id":"2"},"amount":0.1000000000000000000000000001,"gone":null}"#
    );
}

#[test]
fn etag_matching() {
    let mut h = HeaderMap::new();
    let first = Answer::json(StatusCode::OK, b"[1]".to_vec(), "", None).respond(&h);
    let tag = first.headers()[header::ETAG].clone();
    h.insert(header::IF_NONE_MATCH, tag.clone());
    let again = Answer::json(StatusCode::OK, b"[1]".to_vec(), "", None).respond(&h);
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    let changed = Answer::json(StatusCode::OK, b"[1]".to_vec(), "total 2", None).respond(&h);
    assert_eq!(changed.status(), StatusCode::OK);
}

#[test]
fn each_surface_pages_under_its_own_limits() {
    let page = |p: &[(&str, &str)], paging: &Paging| read_page(&params(p), paging);
    let first = Page {
        number: 1,
        size: 50,
    };
    assert_eq!(
        page(&[("page_number", "0")], &BILLING_PAGING).unwrap(),
        first
    );
    assert!(page(&[("page_size", "51")], &BILLING_PAGING).is_err());
    assert_eq!(
        page(&[("page_size", "0")], &BILLING_PAGING).unwrap().size,
        0
    );
    assert_eq!(page(&[], &REVENUE_PAGING).unwrap().size, 25);
    assert!(page(&[("page_number", "0")], &REVENUE_PAGING).is_err());
    assert!(page(&[("page_size", "0")], &REVENUE_PAGING).is_err());
    assert_eq!(
        page(&[("pageSize", "500")], &LEGACY_PAGING).unwrap().size,
        500
    );
    assert!(page(&[("pageSize", "501")], &LEGACY_PAGING).is_err());
    assert_eq!(page(&[], &LEGACY_PAGING).unwrap(), first);
}

#[test]
fn count_headers_follow_the_surface_and_the_omission() {
    let page = Page { number: 1, size: 2 };
    let mut b = StatusCode::OK.into_response();
    add_count_headers(&mut b, &BILLING_PAGING, 2, Some(5), page);
    assert_eq!(b.headers()["x-total-pages"], "3");
    assert_eq!(b.headers()["x-element-count"], "2");
    let mut c = StatusCode::OK.into_response();
    add_count_headers(&mut c, &REVENUE_PAGING, 2, None, page);
    assert_eq!(c.headers()["x-elements-count"], "2");
    assert!(c.headers().get("x-total-count").is_none());
    let mut a = StatusCode::OK.into_response();
    add_count_headers(&mut a, &LEGACY_PAGING, 2, Some(5), page);
    assert!(a.headers().is_empty());
}

/// One reader of a named filter's value, in the words of the surface it came to.
#[test]
fn a_filter_value_is_read_in_the_surfaces_words() {
    use crate::query::FieldKind;
    use crate::web::Surface::{Admin, Billing, Legacy, Revenue};
    let tz = chrono_tz::Europe::Paris;
    let read = |surface, kind, raw: &str| filter_value(surface, "k", kind, raw, tz);
    let message = |r: Result<SqlValue>| r.unwrap_err().to_string();
    assert_eq!(
        read(Legacy, FieldKind::Integer, " 7 ").unwrap(),
        SqlValue::Integer(7)
    );
    let legacy = message(read(Legacy, FieldKind::Integer, "x"));
    assert!(
        legacy.ends_with("k: 'x' is not a 64-bit integer"),
        "{legacy}"
    );
    let revenue = message(read(Revenue, FieldKind::Integer, "x"));
    assert!(revenue.ends_with("k: 'x' is not an integer"), "{revenue}");
    assert_eq!(message(read(Admin, FieldKind::Integer, "x")), revenue);
    assert_eq!(
        read(Revenue, FieldKind::Bool, "TRUE").unwrap(),
        SqlValue::Integer(1)
    );
    let maybe = message(read(Revenue, FieldKind::Bool, "maybe"));
    assert!(
        maybe.ends_with("k: 'maybe' is not true or false"),
        "{maybe}"
    );
    // A date is midnight in the tenant's zone, in stored (UTC) form.
    assert_eq!(
        read(Revenue, FieldKind::DateTime, "2026-01-15").unwrap(),
        SqlValue::Text(crate::domain::parse_time("k", "2026-01-15", tz).unwrap())
    );
    // Surface A refuses a value outside an enumeration; Surface C leaves it to the domain.
    let one_of = FieldKind::Enum(&["ON", "OFF"]);
    assert!(message(read(Legacy, one_of, "UP")).contains("is not one of ON, OFF"));
    assert_eq!(
        read(Revenue, one_of, "UP").unwrap(),
        SqlValue::Text("UP".into())
    );
    // Surface B's named filters are the query language's.
    assert!(matches!(
        read(Billing, FieldKind::Text, "a"),
        Err(Error::Internal(_))
    ));
}
