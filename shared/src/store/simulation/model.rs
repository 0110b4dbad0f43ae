//! What the simulation expects a tenant to hold: for every ledger name a write ever tried,
//! present (with its id), absent, or either (its outcome was unknown), and the names whose
//! write answered "nothing applied", which must never be seen. [`Model::check`] compares
//! the rows an environment reads with it (see the parent module for the invariants).

use std::collections::{BTreeMap, BTreeSet};

/// The state of one name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum St {
    /// Acknowledged (or seen): exactly one row, with this id.
    Present(i64),
    /// Never written, deleted, or wiped by a restore: no row.
    Absent,
    /// Outcome unknown: at most one row.
    Maybe,
}

/// What a client learned from a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Acknowledged, with the new row's id.
    Acked(i64),
    /// An answer that promises nothing was applied.
    Nothing,
    /// "Outcome unknown", a crash, or anything else.
    Unknown,
}

/// The expected state of one tenant.
#[derive(Debug, Clone, Default)]
pub struct Model {
    names: BTreeMap<String, St>,
    /// Names whose write answered "nothing applied".
    never: BTreeSet<String>,
}

impl Model {
    /// A write of `name` ended with `outcome`.
    pub fn wrote(&mut self, name: &str, outcome: Outcome) {
        let st = match outcome {
            Outcome::Acked(id) => St::Present(id),
            Outcome::Nothing => {
                self.never.insert(name.to_string());
                St::Absent
            }
            Outcome::Unknown => St::Maybe,
        };
        self.names.insert(name.to_string(), st);
    }

    /// A delete of `name` ended with `outcome`.
    pub fn deleted(&mut self, name: &str, outcome: Outcome) {
        let st = match outcome {
            Outcome::Acked(_) => St::Absent,
            Outcome::Nothing => return,
            Outcome::Unknown => St::Maybe,
        };
        self.names.insert(name.to_string(), st);
    }

    /// A restore to a checkpoint taken when the model was `snapshot` ended with `outcome`.
    pub fn restored(&mut self, snapshot: &Model, outcome: Outcome) {
        if outcome == Outcome::Nothing {
            return;
        }
        for (name, st) in self.names.iter_mut() {
            let then = snapshot.names.get(name).copied().unwrap_or(match *st {
                // Written after the checkpoint: wiped, unless its outcome is still unknown.
                St::Maybe => St::Maybe,
                _ => St::Absent,
            });
            *st = match outcome {
                Outcome::Acked(_) => then,
                // Either state: the same in both, or either.
                _ if then == *st => then,
                _ => St::Maybe,
            };
        }
    }

    /// Names present for sure (for deletes to pick from), in order.
    pub fn present(&self) -> Vec<String> {
        self.names
            .iter()
            .filter(|(_, st)| matches!(st, St::Present(_)))
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// The state of `name`.
    pub fn get(&self, name: &str) -> Option<St> {
        self.names.get(name).copied()
    }

    /// Compares `rows` (id, name), read by an environment, with the model: every present
    /// name exactly once with its id, no absent name, no name answered "nothing applied",
    /// no name nobody wrote, no id ever given to two names (`ids`, kept across reads), at
    /// most one row per idempotency key (names `k<key>a<attempt>`). A name of unknown
    /// outcome seen is present from then on.
    pub fn check(
        &mut self,
        rows: &[(i64, String)],
        ids: &mut BTreeMap<i64, String>,
    ) -> Result<(), String> {
        let mut seen: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
        let mut per_key: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (id, name) in rows {
            seen.entry(name.as_str()).or_default().push(*id);
            if let Some(other) = ids.get(id).filter(|other| *other != name) {
                return Err(format!("id {id} reused: first {other}, now {name}"));
            }
            ids.insert(*id, name.clone());
            if self.never.contains(name) {
                return Err(format!(
                    "{name} (id {id}) is there, but its write answered \"nothing applied\""
                ));
            }
            if !self.names.contains_key(name) {
                return Err(format!("{name} (id {id}) is there, but no write made it"));
            }
            if let Some((key, _)) = name.strip_prefix('k').and_then(|k| k.split_once('a')) {
                per_key.entry(key).or_default().push(name);
            }
        }
        if let Some((key, names)) = per_key.iter().find(|(_, n)| n.len() > 1) {
            return Err(format!("idempotency key {key} applied twice: {names:?}"));
        }
        for (name, st) in self.names.iter_mut() {
            let found = seen.get(name.as_str()).map(Vec::as_slice).unwrap_or(&[]);
            match (*st, found) {
                (St::Present(id), [got]) if *got == id => {}
                (St::Present(id), _) => {
                    return Err(format!(
                        "{name} was acknowledged with id {id} but is there {found:?}"
                    ))
                }
                (St::Absent, []) => {}
                (St::Absent, _) => return Err(format!("{name} should be gone but is {found:?}")),
                (St::Maybe, []) => {}
                (St::Maybe, [got]) => *st = St::Present(*got),
                (St::Maybe, _) => return Err(format!("{name} is there twice: {found:?}")),
            }
        }
        Ok(())
    }
}
