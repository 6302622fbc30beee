//! Table names: validation per the service's rules and the case-insensitive identity; the
//! [`TableRef`] a request addresses and the [`TableId`] the store resolves it to.

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
}

impl TableName {
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
    pub fn folded(&self) -> String {
        self.0.to_ascii_lowercase()
    }
}

/// A table as a request addresses it: the account and the table name in any casing (table
/// names are case-insensitive). Resolving it in the store yields the table's [`TableId`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableRef {
    pub account: String,
    pub name: String,
}

impl TableRef {
    pub fn new(account: impl Into<String>, name: impl Into<String>) -> TableRef {
        TableRef {
            account: account.into(),
            name: name.into(),
        }
    }

    /// The case-insensitive identity under which the table is stored.
    pub fn folded(&self) -> String {
        self.name.to_ascii_lowercase()
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
}
