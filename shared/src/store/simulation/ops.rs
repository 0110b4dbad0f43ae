//! The simulation's operations beyond plain writes: reads checked against the model, forks
//! and their deletion, and requests with idempotency keys (see the parent module).

use super::model::Outcome;
use super::{insert, outcome, rows, Fork, Key, KeyAttempt, Sim};
use crate::store::idempotency;
use crate::{Error, Result};
use std::collections::BTreeMap;

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
            let looked = {
                let key = key.clone();
                db.read_blocking(move |c| idempotency::lookup(c, &key, "fp"))?
            };
            Ok(match looked {
                idempotency::Found::Answer(a) => {
                    KeyAttempt::Replayed(String::from_utf8_lossy(&a.body).parse().unwrap_or(-1))
                }
                idempotency::Found::Unrecorded => KeyAttempt::Unrecorded,
                idempotency::Found::Mismatch => KeyAttempt::Mismatch,
                idempotency::Found::Nothing => {
                    let scope = idempotency::KeyScope::new(&tenant, &key, "fp");
                    let row = name.clone();
                    let ran = world.parked(|| {
                        rt.block_on(idempotency::scope(
                            scope.clone(),
                            db.write(move |tx| insert(tx, &row)),
                        ))
                    });
                    if let Ok(id) = &ran {
                        let answer = idempotency::Answer {
                            status: 201,
                            headers: Vec::new(),
                            body: id.to_string().into_bytes(),
                        };
                        let _ = world.parked(|| {
                            rt.block_on(
                                db.write(move |tx| idempotency::record_answer(tx, &scope, &answer)),
                            )
                        });
                    }
                    KeyAttempt::Ran(ran)
                }
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
}
