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
