//! Table names: validation by either rule set (Table storage's identifiers, or free-form
//! names; the dialect chooses, `protocol::dialect`) and the identity under which a table is
//! stored (case-insensitive or case-sensitive); the [`TableRef`] a request addresses and the
//! [`TableId`] the
//! store resolves it to.

use std::fmt;

/// A validated table name, keeping the casing it was created with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableName(String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableNameError {
    /// Length outside 3..=63 (Azure: 400 OutOfRangeInput).
    Length,
    /// Not `^[A-Za-z][A-Za-z0-9]*$`, or the reserved name `tables` (Azure: 400 InvalidResourceName).
    Characters,
    /// Free-form: empty, or longer than 254 characters.
    FreeFormLength,
    /// Free-form: one of `/ \ # ?`.
    ForbiddenCharacter,
    /// Free-form: a space at the end.
    TrailingSpace,
    /// Free-form and valid, but tablestore cannot serve it: a control character (no header
    /// or PostgreSQL text holds one) or a parenthesis (a URL could not tell the name from a
    /// key predicate).
    Unservable,
}

/// The longest free-form table name, in characters (Cosmos DB's): the Python SDK's
/// `_validate_cosmos_tablename` pattern `^[^/\\#?]{0,253}[^ /\\#?]{1}$` takes 254, and its live
/// test `test_table_name_errors_bad_length` sees Create Table refuse 255.
pub const MAX_FREE_FORM_TABLE_NAME: usize = 254;

impl TableName {
    /// A free-form name (Cosmos DB's rules): 1–254 characters, none of `/ \ # ?`, no trailing
    /// space; any other character, letter case kept.
    pub fn parse_free_form(name: &str) -> Result<TableName, TableNameError> {
        if name.is_empty() || name.chars().count() > MAX_FREE_FORM_TABLE_NAME {
            return Err(TableNameError::FreeFormLength);
        }
        if name.contains(FORBIDDEN_IN_FREE_FORM) {
            return Err(TableNameError::ForbiddenCharacter);
        }
        if name.ends_with(' ') {
            return Err(TableNameError::TrailingSpace);
        }
        if name.chars().any(|c| c.is_control() || c == '(' || c == ')') {
            return Err(TableNameError::Unservable);
        }
        Ok(TableName(name.to_string()))
    }

    /// A name by Table storage's rules.
    pub fn parse(name: &str) -> Result<TableName, TableNameError> {
        if !(3..=63).contains(&name.chars().count()) {
            return Err(TableNameError::Length);
        }
        let bytes = name.as_bytes();
        let valid = bytes[0].is_ascii_alphabetic() && bytes.iter().all(u8::is_ascii_alphanumeric);
        if !valid || name.eq_ignore_ascii_case("tables") {
            return Err(TableNameError::Characters);
        }
        Ok(TableName(name.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The case-insensitive identity under which the table is stored.
    #[cfg(test)]
    pub(crate) fn folded(&self) -> String {
        self.0.to_ascii_lowercase()
    }
}

/// The characters no free-form table name holds (the Python SDK's
/// `_validate_cosmos_tablename`).
const FORBIDDEN_IN_FREE_FORM: [char; 4] = ['/', '\\', '#', '?'];

/// How table names tell tables apart: Table storage's are case-insensitive, Cosmos DB's are
/// case-sensitive (API for Table FAQ: "Table names in Azure Table storage aren't
/// case-sensitive, but they are in Azure Cosmos DB for Table").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum NameCase {
    #[default]
    Insensitive,
    Sensitive,
}

/// The identity a table is stored under (docs/decisions.md, "Case-sensitive table names"):
/// case-insensitively the lower-cased name, as always; case-sensitively the name with each
/// ASCII capital `X` written `#x`. `#` is in no valid name of either rule set, so the
/// case-sensitive identity is unambiguous, a name without capitals is the same table in
/// both, and a name with capitals is apart from every case-insensitive identity.
pub fn table_identity(name: &str, case: NameCase) -> String {
    match case {
        NameCase::Insensitive => name.to_ascii_lowercase(),
        NameCase::Sensitive => {
            let mut out = String::with_capacity(name.len() + 4);
            for c in name.chars() {
                if c.is_ascii_uppercase() {
                    out.push('#');
                    out.push(c.to_ascii_lowercase());
                } else {
                    out.push(c);
                }
            }
            out
        }
    }
}

/// The name a case-sensitive reader knows a table by, from its identity: the inverse of
/// [`table_identity`] with [`NameCase::Sensitive`]. A case-insensitive identity (a table the
/// case-insensitive reader created) reads as its lower-cased name.
pub fn name_of_identity(identity: &str) -> String {
    let mut out = String::with_capacity(identity.len());
    let mut chars = identity.chars();
    while let Some(c) = chars.next() {
        match c {
            '#' => out.extend(chars.next().map(|l| l.to_ascii_uppercase())),
            c => out.push(c),
        }
    }
    out
}

/// Whether only a case-sensitive reader can address the table stored under `identity` (a
/// case-sensitive name with capitals).
pub fn is_case_sensitive_identity(identity: &str) -> bool {
    identity.contains('#')
}

/// A table as a request addresses it: the account and the table name, told apart from
/// others case-insensitively or case-sensitively ([`NameCase`]). Resolving it in the store
/// yields the table's [`TableId`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableRef {
    pub account: String,
    pub name: String,
    pub(crate) case: NameCase,
}

impl TableRef {
    /// A table named case-insensitively, as Table storage names them.
    pub fn new(account: impl Into<String>, name: impl Into<String>) -> TableRef {
        TableRef::in_case(account, name, NameCase::Insensitive)
    }

    pub fn in_case(
        account: impl Into<String>,
        name: impl Into<String>,
        case: NameCase,
    ) -> TableRef {
        TableRef {
            account: account.into(),
            name: name.into(),
            case,
        }
    }

    /// The identity under which the table is stored ([`table_identity`]).
    pub fn identity(&self) -> String {
        table_identity(&self.name, self.case)
    }
}

impl fmt::Display for TableRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.account, self.name)
    }
}

/// The store's identity of one existing table, fixed when it is created. Deleting the table
/// and creating the name again gives a new id, so nothing of the old table can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableId(pub u64);

impl fmt::Display for TableId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_name_rules() {
        assert!(TableName::parse("abc").is_ok());
        assert!(TableName::parse("MyTable1").is_ok());
        assert!(TableName::parse(&"a".repeat(63)).is_ok());
        assert_eq!(TableName::parse("ab"), Err(TableNameError::Length));
        assert_eq!(
            TableName::parse(&"a".repeat(64)),
            Err(TableNameError::Length)
        );
        assert_eq!(TableName::parse("1abc"), Err(TableNameError::Characters));
        assert_eq!(
            TableName::parse("my_table"),
            Err(TableNameError::Characters)
        );
        assert_eq!(TableName::parse("Tables"), Err(TableNameError::Characters));
        assert_eq!(
            TableName::parse("啊齄丂狛"),
            Err(TableNameError::Characters)
        );
        assert_eq!(TableName::parse("MyTable").unwrap().folded(), "mytable");
    }

    #[test]
    fn free_form_table_name_rules() {
        let free = |n: &str| TableName::parse_free_form(n);
        for ok in [
            "a",
            "my table",
            "Ünïcode-名前",
            "a.b_c-d",
            "tables",
            &"x".repeat(254),
        ] {
            assert!(free(ok).is_ok(), "{ok}");
        }
        assert_eq!(free(""), Err(TableNameError::FreeFormLength));
        assert_eq!(free(&"x".repeat(255)), Err(TableNameError::FreeFormLength));
        for bad in ["a/b", "a\\b", "a#b", "a?b"] {
            assert_eq!(free(bad), Err(TableNameError::ForbiddenCharacter), "{bad}");
        }
        assert_eq!(free("a "), Err(TableNameError::TrailingSpace));
        for unservable in ["a\u{0}b", "a\nb", "a(b", "a)"] {
            assert_eq!(free(unservable), Err(TableNameError::Unservable));
        }
        assert!(TableName::parse("a-b").is_err());
    }

    #[test]
    fn identities() {
        let sensitive = |n: &str| table_identity(n, NameCase::Sensitive);
        assert_eq!(sensitive("orders"), "orders");
        assert_eq!(sensitive("Orders"), "#orders");
        assert_ne!(sensitive("Orders"), sensitive("orders"));
        assert_eq!(table_identity("Orders", NameCase::Insensitive), "orders");
        assert_eq!(name_of_identity("#orders"), "Orders");
        assert_eq!(name_of_identity("orders"), "orders");
    }

    proptest::proptest! {
        /// Case-sensitive identities are unambiguous: every valid free-form name comes back from
        /// its identity, and names without capitals keep theirs as Storage's.
        #[test]
        fn sensitive_identities_round_trip(name in "[^/\\\\#?]{0,20}[^ /\\\\#?]") {
            let identity = table_identity(&name, NameCase::Sensitive);
            proptest::prop_assert_eq!(name_of_identity(&identity), name.clone());
            proptest::prop_assert_eq!(is_case_sensitive_identity(&identity), name.chars().any(|c| c.is_ascii_uppercase()));
            if !name.chars().any(|c| c.is_ascii_uppercase()) {
                proptest::prop_assert_eq!(identity, table_identity(&name, NameCase::Insensitive));
            }
        }
    }
}
