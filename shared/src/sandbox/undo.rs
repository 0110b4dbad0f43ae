//! Undoing clock advances: every advance first keeps an automatic checkpoint (an "image",
//! `crate::store::checkpoints::undo`) of the tenant as it was just before, and an undo
//! restores the newest one, exactly as a checkpoint is restored: data and clock back, one
//! new version, ids never given out again. docs/sandbox.md, "Undoing an advance", says it
//! for users.
//!
//! The list of images is the table `sandbox_undo` of the tenant's own data (newest last, at
//! most [`KEPT`] rows). Invariants:
//! - An advance and the row of its image commit in one transaction: an advance is undoable
//!   iff it happened (a refused or failed advance deletes its image).
//! - The image of an advance holds the list as it was before that advance; so restoring it
//!   takes its own row off the list in the same transaction (undo after undo walks back
//!   one advance at a time, and a crash between the restore and anything after it leaves
//!   nothing to be undone twice). A checkpoint restore or a reset replaces the list with
//!   the tenant's other data; images no row names are deleted by the next advance or undo
//!   once older than [`GRACE`].
//! - The image is of the version the advance ran on: the advance's transaction checks that
//!   no write landed since the image was made, else a new image is made (up to
//!   [`ATTEMPTS`] times; the last attempt runs whatever landed meanwhile, which then goes
//!   with the advance on an undo, as any write after it does).
//! - Beyond [`KEPT`] advances the oldest row is dropped and its image deleted; an undo
//!   whose newest row names no kept image answers 409 and changes nothing.

use super::clock::{self, ClockView, Target};
use crate::store::checkpoints::undo::Image;
use crate::store::idempotency::KeyScope;
use crate::store::{blocking, Store, TenantDb};
use crate::{Error, Result};
use rusqlite::{Connection, Transaction};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How many advances of a tenant can be undone (the newest ones).
pub const KEPT: usize = 3;

/// How many images an advance makes at most while other writes keep landing between an
/// image and the advance's transaction.
const ATTEMPTS: u32 = 3;

/// How old an image no row names must be before it is deleted: longer than any advance
/// may take between making its image and committing (a write's deadline is seconds), so an
/// image of an advance still running is never taken from it.
pub const GRACE: Duration = Duration::from_secs(15 * 60);

/// One row of the list: an advance that can be undone.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = UndoneAdvance)]
pub struct Kept {
    /// The image of the tenant before the advance (not shown).
    #[serde(skip)]
    #[schema(ignore)]
    pub image: String,
    /// The tenant's version the image holds (not shown).
    #[serde(skip)]
    #[schema(ignore)]
    pub version: u64,
    /// What the clock read before the advance.
    #[schema(format = DateTime)]
    pub advanced_from: String,
    /// What the advance moved it to.
    #[schema(format = DateTime)]
    pub advanced_to: String,
    /// When the automatic checkpoint was taken (real time, UTC).
    #[schema(format = DateTime)]
    pub kept_at: String,
}

/// The answer of an undo.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = ClockUndone)]
pub struct Undone {
    /// The clock after the undo (what it read before the advance, running on since when
    /// it runs).
    #[serde(flatten)]
    pub clock: ClockView,
    /// The advance undone.
    pub undone: Kept,
    /// The tenant's version after the undo (one more than before, as a restore's).
    pub version: u64,
    /// How many earlier advances can still be undone.
    pub undo_left: usize,
}

/// Advances tenant `db`'s clock as [`clock::advance`] does, keeping an image of the tenant
/// just before it (see the module doc). Answers what the advance did.
pub async fn advance(
    store: &Store,
    db: &Arc<TenantDb>,
    target: Target,
    tz: chrono_tz::Tz,
) -> Result<clock::Advanced> {
    let tenant = db.tenant_id().to_string();
    let mut attempt = 1;
    loop {
        let (st, id) = (store.clone(), tenant.clone());
        let image = blocking(move || st.keep_undo_image(&id)).await?;
        let moved = Arc::new(AtomicBool::new(false));
        let last = attempt >= ATTEMPTS;
        let (kept, seen) = (image.clone(), moved.clone());
        let written = db
            .write(move |tx| {
                if !last && crate::store::capture::seq(tx)? != kept.version {
                    seen.store(true, Ordering::SeqCst);
                    return Err(Error::conflict(
                        "a write landed between the automatic checkpoint and the advance",
                    ));
                }
                let advanced = clock::advance(tx, target, tz)?;
                let dropped = push(tx, &kept, &advanced)?;
                Ok((advanced, kept.file.clone(), dropped))
            })
            .await;
        let ours = match &written {
            // A retry replaying an earlier attempt's result names that attempt's image.
            Ok((_, file, _)) => *file == image.file,
            // The row naming it may have landed: the image stays (collected when unnamed).
            Err(Error::OutcomeUnknown(_)) => true,
            Err(_) => false,
        };
        if !ours {
            let (st, id, file) = (store.clone(), tenant.clone(), image.file.clone());
            let deleted = blocking(move || st.delete_undo_image(&id, &file)).await;
            if let Err(e) = deleted {
                tracing::warn!(tenant = %tenant, error = %e, "an unused automatic checkpoint was not deleted");
            }
        }
        match written {
            Ok((advanced, _, dropped)) => {
                tidy(store, db, dropped).await;
                return Ok(advanced);
            }
            Err(_) if moved.load(Ordering::SeqCst) && !last => attempt += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Restores the image of tenant `db`'s newest undoable advance (see the module doc); 409
/// when there is none. `key`: the admin request's idempotency key, which joins the restore
/// as it joins a checkpoint's.
pub async fn undo(
    store: &Store,
    db: &Arc<TenantDb>,
    tz: chrono_tz::Tz,
    key: Option<Arc<KeyScope>>,
) -> Result<Undone> {
    let tenant = db.tenant_id().to_string();
    let nothing = || {
        Error::conflict(format!(
            "tenant {tenant} has no clock advance to undo: the automatic checkpoints of its last {KEPT} advances are kept, and each undo uses one"
        ))
    };
    let newest = db.read(|c| Ok(list(c)?.pop())).await?;
    let Some(newest) = newest else {
        return Err(nothing());
    };
    let (st, id, row) = (store.clone(), tenant.clone(), newest.clone());
    let version =
        blocking(move || st.restore_undo_image(&id, &row.image, row.version, key.as_deref()))
            .await?
            .ok_or_else(nothing)?;
    let (clock, left) = db
        .read(move |c| Ok((clock::Clock::load(c)?.view(tz), list(c)?)))
        .await?;
    let kept = tidy(store, db, vec![newest.image.clone()]).await;
    let undo_left = match kept {
        Some(kept) => left.iter().filter(|k| kept.contains(&k.image)).count(),
        None => left.len(),
    };
    Ok(Undone {
        clock,
        undone: newest,
        version,
        undo_left,
    })
}

/// Adds the row of `image` for `advanced` and drops the rows past [`KEPT`]; answers the
/// images of the dropped rows.
fn push(tx: &Transaction<'_>, image: &Image, advanced: &clock::Advanced) -> Result<Vec<String>> {
    tx.execute(
        "INSERT INTO sandbox_undo (image, version, advanced_from, advanced_to, kept_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        rusqlite::params![
            image.file,
            i64::try_from(image.version).unwrap_or(i64::MAX),
            advanced.advanced_from,
            advanced.advanced_to,
            crate::time::to_storage(crate::time::now()),
        ],
    )?;
    let dropped: Vec<String> = {
        let mut stmt =
            tx.prepare("SELECT image FROM sandbox_undo ORDER BY id DESC LIMIT -1 OFFSET ?1")?;
        let rows = stmt
            .query_map([i64::try_from(KEPT).unwrap_or(i64::MAX)], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        rows
    };
    for file in &dropped {
        tx.execute("DELETE FROM sandbox_undo WHERE image = ?1", [file])?;
    }
    Ok(dropped)
}

/// The list, oldest first.
fn list(conn: &Connection) -> Result<Vec<Kept>> {
    let mut stmt = conn.prepare(
        "SELECT image, version, advanced_from, advanced_to, kept_at FROM sandbox_undo ORDER BY id",
    )?;
    let rows = stmt
        .query_map([], |r| {
            Ok(Kept {
                image: r.get(0)?,
                version: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                advanced_from: r.get(2)?,
                advanced_to: r.get(3)?,
                kept_at: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// After an advance or an undo: deletes the images in `gone` (no longer on the list) and
/// those no row names that are older than [`GRACE`]. Answers the images kept that the list
/// names, or `None` when that could not be read (only a cleanup: a failure is logged, the
/// leftovers go at the next one).
async fn tidy(store: &Store, db: &Arc<TenantDb>, gone: Vec<String>) -> Option<Vec<String>> {
    let tenant = db.tenant_id().to_string();
    let named = db
        .read(|c| Ok(list(c)?.into_iter().map(|k| k.image).collect::<Vec<_>>()))
        .await;
    let st = store.clone();
    let id = tenant.clone();
    let tidied = blocking(move || {
        for file in gone
            .iter()
            .filter(|f| !named.as_ref().is_ok_and(|n| n.contains(f)))
        {
            st.delete_undo_image(&id, file)?;
        }
        let named = named?;
        st.collect_undo_images(&id, &named, GRACE)
    })
    .await;
    match tidied {
        Ok(kept) => Some(kept),
        Err(e) => {
            tracing::warn!(tenant = %tenant, error = %e, "automatic checkpoints not tidied; the next advance or undo tries again");
            None
        }
    }
}
