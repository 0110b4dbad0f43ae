//! The simulation's operations beyond plain writes: reads checked against the model,
//! restores (plain and keyed), forks and their deletion, and requests with idempotency keys
//! (see the parent module).

use super::model::Outcome;
use super::{insert, outcome, rows, Fork, Key, KeyAttempt, Sim};
use crate::store::database::GroupWrite;
use crate::store::idempotency;
use crate::store::memory::World;
use crate::store::TenantDb;
use crate::{Error, Result};
use std::collections::BTreeMap;
use std::sync::Arc;

impl Sim {
    /// Reads the tenant (or a fork) on `env` and checks it against the model.
    pub(super) fn read(&mut self, env: usize, crashable: bool) -> std::result::Result<(), String> {
        let fork = if self.draw(0, 3) == 0 {
            self.pick(&self.forks)
        } else {
            None
        };
        let id = fork.map_or(self.tenant.id.clone(), |f| self.forks[f].id.clone());
        let answer = self.on(env, crashable, |s| s.tenant_db(&id)?.read_blocking(rows))?;
        self.log.push(format!(
            "env {env}: read {id} -> {}",
            match &answer {
                Some(Ok(r)) => format!("{} rows", r.len()),
                Some(Err(e)) => format!("{e}"),
                None => "crash".into(),
            }
        ));
        let Some(answer) = answer else { return Ok(()) };
        self.stats.checks += 1;
        match fork {
            None => match answer {
                Ok(rows) => self.model.check(&rows, &mut self.ids),
                Err(_) => Ok(()),
            },
            Some(f) => {
                let fork = &mut self.forks[f];
                match answer {
                    _ if fork.unknown => Ok(()),
                    Ok(rows) if fork.deleted => Err(format!(
                        "fork {} was deleted but {} rows are read",
                        fork.id,
                        rows.len()
                    )),
                    Err(Error::NotFound(_)) | Err(Error::Unavailable(_)) if fork.deleted => Ok(()),
                    Err(e) if fork.deleted => Err(format!("deleted fork {}: {e}", fork.id)),
                    // Ids of a fork are its own (its checkpoint's): checked apart.
                    Ok(rows) => fork.model.check(&rows, &mut BTreeMap::new()),
                    Err(_) => Ok(()),
                }
            }
        }
    }

    /// Two to four writes of one environment sharing one log entry (group commit), one of
    /// them sometimes refusing after its insert: each applied member's row is there once
    /// with the id it was answered, the refused member's never.
    pub(super) fn group_write(
        &mut self,
        env: usize,
        crashable: bool,
    ) -> std::result::Result<(), String> {
        let size = self.draw(2, 4) as usize;
        let refused = (self.draw(0, 2) == 0).then(|| self.draw(0, size as u64 - 1) as usize);
        let names: Vec<String> = (0..size).map(|i| format!("g{}m{i}", self.next)).collect();
        self.next += 1;
        let tenant = self.tenant.id.clone();
        let writes: Vec<GroupWrite<i64>> = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let (name, refuses) = (name.clone(), refused == Some(i));
                Box::new(move |tx: &rusqlite::Transaction<'_>| {
                    let id = insert(tx, &name)?;
                    if refuses {
                        return Err(Error::Conflict(format!("{name}: refused after its insert")));
                    }
                    Ok(id)
                }) as GroupWrite<i64>
            })
            .collect();
        let answers = self.on(env, crashable, |s| -> Result<Vec<Result<i64>>> {
            Ok(s.tenant_db(&tenant)?.db.write_together(writes))
        })?;
        let answers: Vec<Option<Result<i64>>> = match answers {
            Some(Ok(each)) => each.into_iter().map(Some).collect(),
            Some(Err(e)) => names.iter().map(|_| Some(Err(e.clone()))).collect(),
            None => names.iter().map(|_| None).collect(),
        };
        for (name, answer) in names.iter().zip(answers) {
            let o = outcome(answer, |id| *id);
            self.log
                .push(format!("env {env}: group write {name} -> {o:?}"));
            self.count(o);
            self.model.wrote(name, o);
        }
        Ok(())
    }

    pub(super) fn fork(&mut self, env: usize, crashable: bool) -> std::result::Result<(), String> {
        let Some(i) = self.pick(&self.checkpoints) else {
            return Ok(());
        };
        let (checkpoint, snapshot) = self.checkpoints[i].clone();
        let name = format!("f{}", self.next);
        self.next += 1;
        let source = self.tenant.clone();
        let answer = self.on(env, crashable, |s| {
            s.fork_tenant(&source, &checkpoint, &name)
        })?;
        self.log.push(format!(
            "env {env}: fork {checkpoint} as {name} -> {:?}",
            answer
                .as_ref()
                .map(|r| r.as_ref().map(|(rec, _)| rec.id.clone()))
        ));
        if let Some(Ok((record, _))) = answer {
            self.forks.push(Fork {
                id: record.id,
                model: snapshot,
                deleted: false,
                unknown: false,
            });
        }
        Ok(())
    }

    /// Deletes a fork as the admin API does: tombstone, registry entry, objects.
    pub(super) fn delete_fork(
        &mut self,
        env: usize,
        crashable: bool,
    ) -> std::result::Result<(), String> {
        let alive: Vec<usize> = (0..self.forks.len())
            .filter(|f| !self.forks[*f].deleted && !self.forks[*f].unknown)
            .collect();
        let Some(i) = self.pick(&alive) else {
            return Ok(());
        };
        let f = alive[i];
        let id = self.forks[f].id.clone();
        let answer = self.on(env, crashable, |s| {
            s.tombstone_tenant(&id)?;
            // The point of no return is the tombstone: what follows only cleans up.
            let _ = s.registry().delete(&id).and_then(|_| s.drop_tenant_db(&id));
            Ok::<_, Error>(())
        })?;
        self.log.push(format!(
            "env {env}: delete fork {id} -> {:?}",
            answer.as_ref().map(|r| r.is_ok())
        ));
        match answer {
            Some(Ok(())) => self.forks[f].deleted = true,
            // A tombstone PUT is not fenced (a deletion is idempotent): an error may still
            // have deleted the fork.
            _ => self.forks[f].unknown = true,
        }
        Ok(())
    }

    /// A request with an idempotency key, as the web layer serves it (`web/idempotency.rs`):
    /// look the key up; replay a recorded answer; or run the write inside the key's scope
    /// and record its answer. A new key, or the retry of one whose client has no answer.
    pub(super) fn keyed(&mut self, env: usize, crashable: bool) -> std::result::Result<(), String> {
        let open: Vec<usize> = (0..self.keys.len())
            .filter(|k| !self.keys[*k].applied)
            .collect();
        let k = match self.pick(&open) {
            Some(i) if self.draw(0, 1) == 0 => open[i],
            _ => {
                self.keys.push(Key::default());
                self.keys.len() - 1
            }
        };
        self.keys[k].attempts += 1;
        let name = format!("k{k}a{}", self.keys[k].attempts);
        let (tenant, key, rt) = (self.tenant.id.clone(), format!("key-{k}"), self.rt.clone());
        let world = self.world.clone();
        let answer = self.on(env, crashable, |s| -> Result<KeyAttempt> {
            let db = s.tenant_db(&tenant)?;
            serve_keyed(&world, &rt, &db, &key, "fp", |scope| {
                let row = name.clone();
                world.parked(|| {
                    rt.block_on(idempotency::scope(
                        scope.clone(),
                        db.write(move |tx| insert(tx, &row)),
                    ))
                })
            })
        })?;
        let entry = &mut self.keys[k];
        let what = match answer {
            None => {
                self.model.wrote(&name, Outcome::Unknown);
                "crash".to_string()
            }
            Some(Err(e)) => format!("lookup failed: {e}"),
            Some(Ok(KeyAttempt::Mismatch)) => {
                return Err(format!("key-{k}: the same request found a mismatch"))
            }
            Some(Ok(KeyAttempt::Unrecorded)) => {
                entry.applied = true;
                "applied, answer unrecorded (409)".into()
            }
            Some(Ok(KeyAttempt::Replayed(id))) => {
                if let Some(first) = entry.answer.filter(|a| *a != id && !entry.restored) {
                    return Err(format!("key-{k}: replayed id {id}, first answer {first}"));
                }
                entry.answer = Some(id);
                entry.applied = true;
                format!("replayed {id}")
            }
            Some(Ok(KeyAttempt::Ran(ran))) => {
                let o = outcome(Some(ran), |id| *id);
                if let Outcome::Acked(id) = o {
                    if entry.applied && !entry.restored {
                        return Err(format!("key-{k}: applied again as {name} (id {id})"));
                    }
                    entry.answer = Some(id);
                    entry.applied = true;
                }
                self.count(o);
                self.model.wrote(&name, o);
                format!("{name} -> {o:?}")
            }
        };
        self.log.push(format!("env {env}: key-{k} attempt: {what}"));
        Ok(())
    }

    /// A plain restore to a random checkpoint: the model becomes the checkpoint's.
    pub(super) fn restore(
        &mut self,
        env: usize,
        crashable: bool,
    ) -> std::result::Result<(), String> {
        let Some(i) = self.pick(&self.checkpoints) else {
            return Ok(());
        };
        let (tenant, name) = (self.tenant.id.clone(), self.checkpoints[i].0.clone());
        let answer = self.on(env, crashable, |s| s.restore_checkpoint(&tenant, &name))?;
        let o = outcome(answer, |_| 0);
        self.log.push(format!("env {env}: restore {name} -> {o:?}"));
        self.restored(i, o);
        Ok(())
    }

    /// The model after a restore to checkpoint `i` answered `o`; every key's row may be
    /// gone (the restored image holds the checkpoint's keys), so a retry may run again.
    fn restored(&mut self, i: usize, o: Outcome) {
        let snapshot = self.checkpoints[i].1.clone();
        self.model.restored(&snapshot, o);
        if o != Outcome::Nothing {
            self.keys.iter_mut().for_each(|k| k.restored = true);
            self.restore_keys.iter_mut().for_each(|k| k.restored = true);
        }
    }

    /// A restore with an idempotency key, as the admin API serves it: look the key up;
    /// replay; or restore with the key (its row joins the restore) and record the answer (the
    /// new version). A new key, or the retry of one whose client has no answer; a retry of a
    /// key answered as applied must never restore again (until another restore).
    pub(super) fn keyed_restore(
        &mut self,
        env: usize,
        crashable: bool,
    ) -> std::result::Result<(), String> {
        // Mostly a key whose client has no answer; sometimes any key (a client retrying
        // whatever it learned: an applied key must then be replayed, never run again).
        let any = self.draw(0, 3) == 0;
        let open: Vec<usize> = (0..self.restore_keys.len())
            .filter(|k| any || !self.restore_keys[*k].applied)
            .collect();
        let k = match self.pick(&open) {
            Some(i) if self.draw(0, 1) == 0 => open[i],
            _ => {
                let Some(checkpoint) = self.pick(&self.checkpoints) else {
                    return Ok(());
                };
                self.restore_keys.push(RestoreKey {
                    checkpoint,
                    ..RestoreKey::default()
                });
                self.restore_keys.len() - 1
            }
        };
        let i = self.restore_keys[k].checkpoint;
        let (tenant, name) = (self.tenant.id.clone(), self.checkpoints[i].0.clone());
        let (key, rt, world) = (format!("restore-{k}"), self.rt.clone(), self.world.clone());
        let answer = self.on(env, crashable, |s| -> Result<KeyAttempt> {
            let db = s.tenant_db(&tenant)?;
            serve_keyed(&world, &rt, &db, &key, "fp-restore", |scope| {
                let (_, version) = s.restore_checkpoint_keyed(&tenant, &name, Some(scope))?;
                i64::try_from(version).map_err(|e| Error::Internal(e.to_string()))
            })
        })?;
        let what = match answer {
            None => {
                self.restored(i, Outcome::Unknown);
                "crash".to_string()
            }
            Some(Err(e)) => format!("lookup failed: {e}"),
            Some(Ok(KeyAttempt::Mismatch)) => {
                return Err(format!("restore-{k}: the same request found a mismatch"))
            }
            Some(Ok(KeyAttempt::Unrecorded)) => {
                self.restore_keys[k].applied = true;
                "applied, answer unrecorded (409)".into()
            }
            Some(Ok(KeyAttempt::Replayed(version))) => {
                let entry = &mut self.restore_keys[k];
                if let Some(first) = entry.answer.filter(|a| *a != version && !entry.restored) {
                    return Err(format!(
                        "restore-{k}: replayed version {version}, first answer {first}"
                    ));
                }
                entry.answer = Some(version);
                entry.applied = true;
                format!("replayed version {version}")
            }
            Some(Ok(KeyAttempt::Ran(ran))) => {
                let o = outcome(Some(ran), |version| *version);
                let entry = &self.restore_keys[k];
                if let Outcome::Acked(version) = o {
                    if entry.applied && !entry.restored {
                        return Err(format!(
                            "restore-{k}: restored again (version {version}) after it was answered as applied"
                        ));
                    }
                }
                self.restored(i, o);
                if let Outcome::Acked(version) = o {
                    let entry = &mut self.restore_keys[k];
                    entry.answer = Some(version);
                    entry.applied = true;
                    entry.restored = false;
                }
                format!("{name} -> {o:?}")
            }
        };
        self.log.push(format!(
            "env {env}: restore-{k} (to {name}) attempt: {what}"
        ));
        Ok(())
    }
}

/// Serves a request with idempotency key `key` as the web layer does (`web/idempotency.rs`):
/// looks the key up; replays a recorded answer (the row id or version it holds); or runs
/// the request (`run`, inside the key's scope) and records its answer.
fn serve_keyed(
    world: &World,
    rt: &tokio::runtime::Runtime,
    db: &Arc<TenantDb>,
    key: &str,
    fingerprint: &str,
    run: impl FnOnce(&Arc<idempotency::KeyScope>) -> Result<i64>,
) -> Result<KeyAttempt> {
    let looked = {
        let (key, fingerprint) = (key.to_string(), fingerprint.to_string());
        db.read_blocking(move |c| idempotency::lookup(c, &key, &fingerprint))?
    };
    Ok(match looked {
        idempotency::Found::Answer(a) => {
            KeyAttempt::Replayed(String::from_utf8_lossy(&a.body).parse().unwrap_or(-1))
        }
        idempotency::Found::Unrecorded => KeyAttempt::Unrecorded,
        idempotency::Found::Mismatch => KeyAttempt::Mismatch,
        idempotency::Found::Nothing => {
            let scope = idempotency::KeyScope::new(db.tenant_id(), key, fingerprint);
            let ran = run(&scope);
            if let Ok(answer) = &ran {
                let answer = idempotency::Answer {
                    status: 200,
                    headers: Vec::new(),
                    body: answer.to_string().into_bytes(),
                };
                let _ = world.parked(|| {
                    rt.block_on(db.write(move |tx| idempotency::record_answer(tx, &scope, &answer)))
                });
            }
            KeyAttempt::Ran(ran)
        }
    })
}

/// A keyed restore's requests so far (see [`Sim::keyed_restore`]).
#[derive(Default)]
pub(super) struct RestoreKey {
    /// The checkpoint it restores (index in `Sim::checkpoints`).
    checkpoint: usize,
    /// The answer (the version) the client got, first or replayed.
    answer: Option<i64>,
    /// The client learned the restore was applied.
    applied: bool,
    /// Another restore since: its row may be gone, so a retry may run again.
    restored: bool,
}
