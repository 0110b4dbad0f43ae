//! The end of a seed: the quiet period (no more faults, every request in flight lands or is
//! lost), then every environment and a new one must read the same rows and hold the same
//! idempotency keys, matching the model (see the parent module).

use super::{insert, model, outcome, rows, Sim, ENVS};
use crate::store::memory::Faults;
use crate::{Error, Result};
use std::collections::BTreeMap;

/// A tenant's ledger rows as [`rows`] reads them.
type Rows = Vec<(i64, String)>;

/// An idempotency key's row as every environment must hold it after the quiet period: key,
/// request, recorded answer.
type KeyRowSeen = (String, String, Option<Vec<u8>>);

fn key_rows(conn: &rusqlite::Connection) -> Result<Vec<KeyRowSeen>> {
    let mut stmt =
        conn.prepare("SELECT key, request_id, body FROM idempotency_keys ORDER BY key")?;
    let out = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(out)
}

impl Sim {
    /// The quiet period: no more faults, every request in flight lands or is lost; then
    /// every environment and a new one must read the same rows, matching the model.
    pub(super) fn quiet(&mut self) -> std::result::Result<(), String> {
        self.world.set_faults(Faults::NONE);
        self.world.settle();
        self.log.push("quiet period".into());
        self.envs.push(None);
        self.boot(ENVS)?;
        let mut seen: Option<(Rows, Vec<KeyRowSeen>)> = None;
        for env in 0..=ENVS {
            let tenant = self.tenant.id.clone();
            let (rows, keys) = self
                .on(env, false, |s| {
                    s.tenant_db(&tenant)?
                        .read_blocking(|c| Ok((rows(c)?, key_rows(c)?)))
                })?
                .ok_or("a crash in the quiet period")?
                .map_err(|e| format!("env {env} cannot read after the quiet period: {e}"))?;
            self.model
                .check(&rows, &mut self.ids)
                .map_err(|e| format!("after the quiet period, env {env}: {e}"))?;
            match &seen {
                Some((first, _)) if *first != rows => {
                    return Err(format!("env {env} did not converge: {rows:?} vs {first:?}"))
                }
                Some((_, first)) if *first != keys => {
                    return Err(format!(
                        "env {env} holds other idempotency keys: {keys:?} vs {first:?}"
                    ))
                }
                _ => seen = Some((rows, keys)),
            }
            for f in 0..self.forks.len() {
                self.check_fork_quiet(env, f)?;
            }
        }
        for (k, key) in self.keys.iter().enumerate() {
            let applied = (1..=key.attempts)
                .filter(|a| {
                    matches!(
                        self.model.get(&format!("k{k}a{a}")),
                        Some(model::St::Present(_))
                    )
                })
                .count();
            if key.applied && !key.restored && applied != 1 {
                return Err(format!(
                    "key-{k} was answered as applied but has {applied} rows"
                ));
            }
        }
        self.every_environment_writes()
    }

    /// Liveness, once the faults are over: a write from every environment in turn is
    /// acknowledged, though each starts on a copy the write before it made stale (its PUT
    /// finds the slot taken, it catches up and takes the next). The invariants above let a
    /// write answer "nothing was applied", so a protocol whose losers never catch up (every
    /// contended write refused at its deadline) would keep them all; it fails here.
    fn every_environment_writes(&mut self) -> std::result::Result<(), String> {
        let tenant = self.tenant.id.clone();
        for env in 0..=ENVS {
            let name = format!("live{env}");
            let (row, tenant) = (name.clone(), tenant.clone());
            let answer = self
                .on(env, false, move |s| {
                    s.tenant_db(&tenant)?
                        .write_blocking(move |tx| insert(tx, &row))
                })?
                .ok_or("a crash in the quiet period")?;
            let o = outcome(Some(answer.clone()), |id| *id);
            self.log
                .push(format!("env {env}: quiet write {name} -> {o:?}"));
            self.model.wrote(&name, o);
            if let Err(e) = answer {
                return Err(format!(
                    "env {env}: a write after the quiet period was not acknowledged: {e}"
                ));
            }
        }
        let rows = self
            .on(0, false, |s| s.tenant_db(&tenant)?.read_blocking(rows))?
            .ok_or("a crash in the quiet period")?
            .map_err(|e| format!("env 0 cannot read after the quiet writes: {e}"))?;
        self.model
            .check(&rows, &mut self.ids)
            .map_err(|e| format!("after the quiet writes, env 0: {e}"))
    }

    fn check_fork_quiet(&mut self, env: usize, f: usize) -> std::result::Result<(), String> {
        let id = self.forks[f].id.clone();
        let answer = self
            .on(env, false, |s| s.tenant_db(&id)?.read_blocking(rows))?
            .ok_or("a crash in the quiet period")?;
        let fork = &mut self.forks[f];
        match answer {
            _ if fork.unknown => Ok(()),
            Err(Error::NotFound(_)) if fork.deleted => Ok(()),
            other if fork.deleted => Err(format!("deleted fork {id} on env {env}: {other:?}")),
            Ok(rows) => fork
                .model
                .check(&rows, &mut BTreeMap::new())
                .map_err(|e| format!("fork {id} on env {env}: {e}")),
            Err(e) => Err(format!("fork {id} on env {env} cannot be read: {e}")),
        }
    }
}
