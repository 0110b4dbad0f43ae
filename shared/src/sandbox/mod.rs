//! The sandbox's powers over a tenant, beyond the platform's own behaviour: a test clock
//! ([`clock`]) whose advances can be undone ([`undo`]), fault injection ([`faults`],
//! matched by [`glob`]) and a request journal ([`journal`]); the admin API
//! (`functions/admin`) manages them. docs/sandbox.md describes them for users.
//!
//! This module holds their rules and state only; no HTTP type appears here. The request
//! pipeline applies them to served requests (`crate::web::powers`): it answers or delays a
//! request by a matching fault rule and records it in the journal, for requests the pipeline
//! identified (a tenant's credential, or the admin key on a path about one tenant).

pub mod clock;
pub mod faults;
pub mod glob;
pub mod journal;
pub mod undo;

/// This process's state of the powers: the journal and the fault draw counters.
pub struct Powers {
    /// The request journal of this environment.
    pub journal: journal::Journal,
    /// The draw counters of the fault rules in this environment.
    pub draws: faults::Draws,
}

impl Powers {
    /// The powers of a process whose journal is configured by `journal`, over the bucket of
    /// its store.
    pub fn new(journal: journal::Settings, bucket: Option<crate::store::s3::Bucket>) -> Powers {
        Powers {
            journal: journal::Journal::new(journal, bucket),
            draws: faults::Draws::default(),
        }
    }
}
