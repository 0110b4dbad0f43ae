//! The admin API of the sandbox powers over one tenant (see `shared::sandbox`): its test
//! clock (`/clock`, `/clock/advance`, `/clock/undo`), its fault rules (`/faults`) and its request journal
//! (`/requests`). Every route takes `X-Admin-Key` and answers 404 for an unknown tenant.

use crate::AdminAuth;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use shared::sandbox::clock::{self, Clock, Target};
use shared::sandbox::{faults, journal};
use shared::web::listing::{add_count_headers, read_page, CountHeaders, Paging, PagingRules};
use shared::web::{ApiError, AppState, JsonBody, Params, Tenant};

/// The registered tenant `id`, opened (404 when unknown or deleted).
pub(crate) async fn tenant(app: &AppState, id: &str) -> Result<Tenant, ApiError> {
    let record = shared::tenants::get(&app.store, id).await?;
    app.tenant(record)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("tenant {id} does not exist")))
}

/// A date or date-time of field `field` (a date is midnight in the tenant's time zone).
fn instant(field: &str, text: &str, t: &Tenant) -> Result<chrono::DateTime<chrono::Utc>, ApiError> {
    shared::time::parse_date_or_datetime(text, t.tz).ok_or_else(|| {
        ApiError::bad_request(format!("{field}: {}", shared::time::not_a_date(text)))
    })
}

// ---- clock ----------------------------------------------------------------------------

pub(crate) async fn get_clock(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<clock::ClockView>, ApiError> {
    let t = tenant(&app, &id).await?;
    let tz = t.tz;
    let view = t.db.read(move |c| Ok(Clock::load(c)?.view(tz))).await?;
    Ok(Json(view))
}

pub(crate) async fn set_clock(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<clock::Setting>,
) -> Result<Json<clock::ClockView>, ApiError> {
    let t = tenant(&app, &id).await?;
    let tz = t.tz;
    // Checked before the write (a refusal writes nothing), applied to the clock the write
    // reads (mode frozen freezes at that reading).
    body.clock(Clock::Real, tz)?;
    let view =
        t.db.write(move |tx| {
            let clock = body.clock(Clock::load(tx)?, tz)?;
            clock.store(tx)?;
            Ok(clock.view(tz))
        })
        .await?;
    Ok(Json(view))
}

/// Body of `POST .../clock/advance`: exactly one of seconds and to (forward only).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AdvanceClock {
    /// 1 to ten years of 365 days (`clock::MAX_ADVANCE_SECONDS`).
    #[schema(minimum = 1, maximum = 315360000)]
    seconds: Option<i64>,
    /// A date-time (or a date: midnight in the tenant's zone) ahead of the clock.
    to: Option<String>,
}

pub(crate) async fn advance_clock(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<AdvanceClock>,
) -> Result<Json<clock::Advanced>, ApiError> {
    let t = tenant(&app, &id).await?;
    let tz = t.tz;
    let target = match (body.seconds, &body.to) {
        (Some(n), None) => Target::Seconds(n),
        (None, Some(text)) => Target::To(instant("to", text, &t)?),
        _ => {
            return Err(ApiError::bad_request(
                "send exactly one of {\"seconds\": N} and {\"to\": \"<date-time>\"}",
            ))
        }
    };
    // The tenant just before the advance is kept, so that it can be undone.
    let advanced = shared::sandbox::undo::advance(&app.store, &t.db, target, tz).await?;
    Ok(Json(advanced))
}

/// `POST .../clock/undo` (no body): the tenant as it was before its newest advance, as a
/// restore of the automatic checkpoint that advance kept; 409 when none is kept.
pub(crate) async fn undo_advance(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<shared::sandbox::undo::Undone>, ApiError> {
    let t = tenant(&app, &id).await?;
    // An Idempotency-Key's row joins the restore, as it joins a checkpoint's.
    let key = shared::tenants::tenant_key(t.db.tenant_id());
    let undone = shared::sandbox::undo::undo(&app.store, &t.db, t.tz, key).await?;
    Ok(Json(undone))
}

// ---- faults ---------------------------------------------------------------------------

pub(crate) async fn create_fault(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<faults::NewRule>,
) -> Result<Response, ApiError> {
    let t = tenant(&app, &id).await?;
    let rule = t.db.write(move |tx| faults::create(tx, &body)).await?;
    Ok((StatusCode::CREATED, Json(rule)).into_response())
}

pub(crate) async fn list_faults(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<faults::Rule>>, ApiError> {
    let t = tenant(&app, &id).await?;
    Ok(Json(t.db.read(faults::list).await?))
}

pub(crate) async fn get_fault(
    _: AdminAuth,
    State(app): State<AppState>,
    Path((id, rule)): Path<(String, String)>,
) -> Result<Json<faults::Rule>, ApiError> {
    let t = tenant(&app, &id).await?;
    Ok(Json(t.db.read(move |c| faults::get(c, &rule)).await?))
}

pub(crate) async fn delete_fault(
    _: AdminAuth,
    State(app): State<AppState>,
    Path((id, rule)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let t = tenant(&app, &id).await?;
    t.db.write(move |tx| faults::delete(tx, &rule)).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(crate) async fn delete_faults(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let t = tenant(&app, &id).await?;
    t.db.write(faults::delete_all).await?;
    app.powers.draws.forget(&id);
    Ok(StatusCode::NO_CONTENT)
}

// ---- journal --------------------------------------------------------------------------

/// Paging of the journal: `page_number` >= 1, `page_size` 1..100 (default 25), counts in
/// headers as Surface C names them.
pub const JOURNAL_PAGING: Paging = Paging {
    number: "page_number",
    size: "page_size",
    rules: PagingRules {
        min_number: 1,
        min_size: 1,
        max_size: 100,
        default_size: 25,
    },
    headers: Some(CountHeaders {
        total: "X-Total-Count",
        elements: "X-Elements-Count",
        elements_alias: None,
        pages: "X-Total-Pages",
    }),
};

/// The journal filter of a request's query: `method`, `path` (glob), `status` (e.g. `503`
/// or `5xx`), `from` and `to` (date-times; `to` exclusive).
fn journal_filter(
    q: &std::collections::HashMap<String, String>,
    t: &Tenant,
) -> Result<journal::Filter, ApiError> {
    let time = |name: &str| -> Result<Option<i64>, ApiError> {
        q.get(name)
            .map(|v| instant(name, v, t).map(|at| at.timestamp_millis()))
            .transpose()
    };
    let status = match q.get("status").map(|s| s.trim().to_ascii_lowercase()) {
        None => None,
        Some(s) => {
            let class = s
                .strip_suffix("xx")
                .and_then(|d| d.parse::<u16>().ok())
                .filter(|d| (1..=5).contains(d));
            match (class, s.parse::<u16>()) {
                (Some(d), _) => Some((d * 100, d * 100 + 99)),
                (None, Ok(code)) if (100..=599).contains(&code) => Some((code, code)),
                _ => {
                    return Err(ApiError::bad_request(format!(
                        "status: '{s}' is not a status (100-599) or a class (1xx-5xx)"
                    )))
                }
            }
        }
    };
    let path = q.get("path").cloned();
    if path
        .as_ref()
        .is_some_and(|p| p.chars().count() > faults::MAX_PATH_CHARS)
    {
        return Err(ApiError::bad_request(format!(
            "path: at most {} characters",
            faults::MAX_PATH_CHARS
        )));
    }
    Ok(journal::Filter {
        method: q.get("method").cloned(),
        path: path.as_deref().map(shared::sandbox::glob::Glob::new),
        status,
        from_ms: time("from")?,
        to_ms: time("to")?,
    })
}

pub(crate) async fn list_requests(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
    Params(q): Params,
) -> Result<Response, ApiError> {
    let t = tenant(&app, &id).await?;
    let filter = journal_filter(&q, &t)?;
    let powers = app.powers.clone();
    let tenant_id = id.clone();
    let entries = shared::store::blocking(move || powers.journal.read(&tenant_id, &filter)).await?;
    page_response(&entries, &q, |e| e.as_ref())
}

/// One page of a whole admin list (the journal, the tenants), paged by [`JOURNAL_PAGING`]
/// from `q`, each item answered as `view` shows it, with the count headers.
pub fn page_response<'a, T, U: serde::Serialize>(
    all: &'a [T],
    q: &std::collections::HashMap<String, String>,
    view: impl Fn(&'a T) -> U,
) -> Result<Response, ApiError> {
    let page = read_page(q, &JOURNAL_PAGING)?;
    let total = i64::try_from(all.len()).unwrap_or(i64::MAX);
    let (limit, offset) = page.limit_offset();
    let items: Vec<U> = all
        .iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(usize::try_from(limit).unwrap_or(0))
        .map(view)
        .collect();
    let mut response = Json(&items).into_response();
    add_count_headers(
        &mut response,
        &JOURNAL_PAGING,
        items.len(),
        Some(total),
        page,
    );
    Ok(response)
}

pub(crate) async fn clear_requests(
    _: AdminAuth,
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    tenant(&app, &id).await?;
    let powers = app.powers.clone();
    shared::store::blocking(move || powers.journal.clear(&id)).await?;
    Ok(StatusCode::NO_CONTENT)
}
