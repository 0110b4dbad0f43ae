//! Statuses as enums at the domain's edges: a record's status is read from its row into an
//! enum (`FromSql`), decided on with `match`/`==` on members the compiler knows, and bound
//! back into SQL through the same enum (`ToSql`, its `as_str`). A misspelt status is then a
//! compile error, not a rule that silently never holds.
//!
//! [`status_enum!`] declares one set: the enum, its members' names in the platform's order
//! (`NAMES`, which the set constants the surfaces check, the fixtures' closed sets and the
//! JSON Schemas list are), `as_str`, `parse` and `parse_field` (the 400 of `check_enum`).
//!
//! Invariants: `NAMES[i]` is `ALL[i].as_str()`; `parse(as_str(s)) == Some(s)`; a stored value
//! outside the set (which no checked write stores) is a read error, never a member.

/// Declares a status enum: `status_enum! { /// doc  pub enum Name { Member = "TEXT", ... } }`.
macro_rules! status_enum {
    (
        $(#[$doc:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$member_doc:meta])* $member:ident = $text:literal, )+
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$member_doc])* $member, )+
        }

        impl $name {
            /// Every member, in the order the platform lists them.
            pub const ALL: &'static [$name] = &[$($name::$member,)+];
            /// Every member's name, in the same order: the closed set the surfaces check
            /// and the documents list.
            pub const NAMES: &'static [&'static str] = &[$($text,)+];

            /// The member's name as stored and sent.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$member => $text,)+
                }
            }

            /// The member named `text` exactly (case matters, as on the surfaces).
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some($name::$member),)+
                    _ => None,
                }
            }

            /// `text` as the value of field `field`: a 400 naming the allowed values when it
            /// is none of them.
            pub fn parse_field(field: &str, text: &str) -> $crate::Result<Self> {
                Self::parse(text)
                    .ok_or_else(|| $crate::domain::not_one_of(field, text, Self::NAMES))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl rusqlite::types::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(rusqlite::types::ToSqlOutput::from(self.as_str()))
            }
        }

        impl rusqlite::types::FromSql for $name {
            fn column_result(
                value: rusqlite::types::ValueRef<'_>,
            ) -> rusqlite::types::FromSqlResult<Self> {
                let text = value.as_str()?;
                Self::parse(text).ok_or_else(|| {
                    rusqlite::types::FromSqlError::Other(
                        format!(
                            "stored {} '{text}' is not one of {}",
                            stringify!($name),
                            Self::NAMES.join(", ")
                        )
                        .into(),
                    )
                })
            }
        }
    };
}

pub(crate) use status_enum;

status_enum! {
    /// The status of an AR ledger: only an ACTIVE ledger runs and posts. Its owner is
    /// `domain::ledgers` (which re-exports it); it is declared here because `domain::glrun`,
    /// which the ledgers module calls (a ledger's deletion deletes its runs), reads it too,
    /// and the domain's modules form no cycle.
    pub enum LedgerStatus {
        /// Runs and posts.
        Active = "ACTIVE",
        /// Kept, not run.
        Inactive = "INACTIVE",
    }
}

status_enum! {
    /// The status of a bill batch: only an ACTIVE batch is run on its invoice date. Its owner
    /// is `domain::bill_batches` (which re-exports it); declared here because
    /// `domain::bill_batch_membership`, which that module calls, reads it too.
    pub enum BillBatchStatus {
        /// Run on its invoice date.
        Active = "ACTIVE",
        /// Held: not run.
        Suspended = "SUSPENDED",
        /// Given up: not run.
        Canceled = "CANCELED",
    }
}
/// A status set as an SQL list of text literals (`'ACTIVE', 'TRIAL'`), for a statement that
/// names the set inside its text (an `IN (...)` a `prepare` caches). The names are the
/// enums' own literals (`NAMES`, or members' `as_str`), never input, and none holds a quote.
pub(crate) fn sql_list(names: &[&str]) -> String {
    debug_assert!(names.iter().all(|n| !n.contains('\'')));
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    status_enum! {
        /// A set for the test.
        enum Light {
            Red = "RED",
            Green = "GREEN",
        }
    }

    #[test]
    fn the_sets_are_the_ones_the_interface_lists() {
        use crate::domain::bill_batches::{BatchRunStatus, RunStepStatus};
        use crate::domain::catalog::CategoryStatus;
        // interfaces.md, "Enumerations": AR Ledger, Adjustment category, Bill batch.
        assert_eq!(super::LedgerStatus::NAMES, ["ACTIVE", "INACTIVE"]);
        assert_eq!(CategoryStatus::NAMES, ["ACTIVE", "SUSPENDED", "CANCELED"]);
        assert_eq!(
            super::BillBatchStatus::NAMES,
            ["ACTIVE", "SUSPENDED", "CANCELED"]
        );
        // What the clock's bill batch runs write (platform-facts.md: a run waits for its
        // approval unless it approves itself).
        assert_eq!(RunStepStatus::NAMES, ["RUNNING", "WAITING", "COMPLETE"]);
        assert_eq!(BatchRunStatus::NAMES, ["OPEN", "CLOSED"]);
    }

    #[test]
    fn a_set_becomes_an_sql_list_of_its_names() {
        assert_eq!(super::sql_list(Light::NAMES), "'RED', 'GREEN'");
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let sql = format!("SELECT 'GREEN' IN ({})", super::sql_list(Light::NAMES));
        assert!(c.query_row(&sql, [], |r| r.get::<_, bool>(0)).unwrap());
    }

    #[test]
    fn names_members_and_parsing_agree() {
        assert_eq!(Light::NAMES, ["RED", "GREEN"]);
        for (member, name) in Light::ALL.iter().zip(Light::NAMES) {
            assert_eq!(member.as_str(), *name);
            assert_eq!(Light::parse(name), Some(*member));
        }
        assert_eq!(Light::parse("red"), None);
        let refused = Light::parse_field("status", "BLUE").unwrap_err();
        assert!(refused
            .to_string()
            .contains("status: 'BLUE' is not one of RED, GREEN"));
    }

    #[test]
    fn a_stored_status_round_trips_and_a_stray_one_is_a_read_error() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let back: Light = c
            .query_row("SELECT ?1", [Light::Green], |r| r.get(0))
            .unwrap();
        assert_eq!(back, Light::Green);
        let stray = c.query_row("SELECT 'BLUE'", [], |r| r.get::<_, Light>(0));
        assert!(stray.is_err());
    }
}
