//! Evaluates a `$filter` [`Expr`] against one row (an entity, or a table in Query Tables) with
//! the Table service's semantics (docs/query.md states each rule with its evidence):
//!
//! - A comparison holds only when the row has the property and its EDM type is the literal's
//!   type; otherwise it is false — for every operator, `ne` included.
//! - No cross-type numeric comparison: Int32, Int64 and Double never match each other.
//! - Strings compare ordinally by UTF-16 code units; DateTime by ticks; Guid and Binary by
//!   bytes; Boolean false < true; a NaN Double matches nothing.
//! - `and`, `or`, `not` are ordinary two-valued logic over those results, so `not (X eq 1)`
//!   holds for a row without `X`.
//! - `PartitionKey` and `RowKey` are Strings, `Timestamp` is a DateTime.

use std::cmp::Ordering;

use crate::model::edm::compare_ordinal;
use crate::model::{EdmValue, Entity};
use crate::protocol::filter::{Comparison, Expr, PropertyName};
use crate::store::StoredRow;

/// Something a filter can look at.
pub trait Row {
    /// Compares property `property` of this row with `value`: `None` when the row lacks the
    /// property or its value is of another type (or NaN).
    fn compare(&self, property: &PropertyName, value: &EdmValue) -> Option<Ordering>;
}

fn compare_string(text: &str, value: &EdmValue) -> Option<Ordering> {
    match value {
        EdmValue::String(s) => Some(compare_ordinal(text, s)),
        _ => None,
    }
}

impl Row for Entity {
    fn compare(&self, property: &PropertyName, value: &EdmValue) -> Option<Ordering> {
        match property {
            PropertyName::PartitionKey => compare_string(&self.partition_key, value),
            PropertyName::RowKey => compare_string(&self.row_key, value),
            PropertyName::Timestamp => match value {
                EdmValue::DateTime(t) => Some(self.timestamp.cmp(t)),
                _ => None,
            },
            PropertyName::Named(name) => self.property(name)?.compare(value),
        }
    }
}

/// A stored entity read in place: the same rules as [`Entity`]'s impl, on the encoded bytes.
impl Row for StoredRow<'_> {
    fn compare(&self, property: &PropertyName, value: &EdmValue) -> Option<Ordering> {
        match property {
            PropertyName::PartitionKey | PropertyName::RowKey => {
                let (pk, rk) = self.keys().ok()?;
                let key = if matches!(property, PropertyName::PartitionKey) {
                    pk
                } else {
                    rk
                };
                compare_string(&key, value)
            }
            PropertyName::Timestamp => match value {
                EdmValue::DateTime(t) => Some(self.timestamp()?.cmp(t)),
                _ => None,
            },
            PropertyName::Named(name) => self.property(name)?.compare(value.as_value_ref()),
        }
    }
}

/// A table as Query Tables filters it: a row with the single String property `TableName`,
/// holding the name with the casing used at creation.
pub(crate) struct TableRow<'a> {
    pub(crate) name: &'a str,
}

impl Row for TableRow<'_> {
    fn compare(&self, property: &PropertyName, value: &EdmValue) -> Option<Ordering> {
        match property {
            PropertyName::Named(n) if n == "TableName" => compare_string(self.name, value),
            _ => None,
        }
    }
}

pub(crate) fn holds(comparison: &Comparison, row: &impl Row) -> bool {
    row.compare(&comparison.property, &comparison.value)
        .is_some_and(|ordering| comparison.op.holds(ordering))
}

/// Whether `row` satisfies `expr`.
pub fn matches(expr: &Expr, row: &impl Row) -> bool {
    match expr {
        Expr::Compare(c) => holds(c, row),
        Expr::Const(b) => *b,
        Expr::Not(e) => !matches(e, row),
        Expr::And(a, b) => matches(a, row) && matches(b, row),
        Expr::Or(a, b) => matches(a, row) || matches(b, row),
    }
}

/// `matches` for an optional filter (no filter matches everything).
pub fn matches_opt(expr: Option<&Expr>, row: &impl Row) -> bool {
    expr.is_none_or(|e| matches(e, row))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::edm::parse_guid;
    use crate::model::{EdmDateTime, Property as Prop};
    use crate::protocol::filter::parse;

    fn entity(props: Vec<(&str, EdmValue)>) -> Entity {
        Entity {
            partition_key: "pk".into(),
            row_key: "rk".into(),
            timestamp: EdmDateTime::parse("2021-02-05T17:15:16.7935715Z").unwrap(),
            properties: props
                .into_iter()
                .map(|(n, v)| Prop {
                    name: n.into(),
                    value: v,
                })
                .collect(),
        }
    }

    fn sample() -> Entity {
        entity(vec![
            ("Name", EdmValue::String("Smith".into())),
            ("Age", EdmValue::Int32(30)),
            ("Big", EdmValue::Int64(30)),
            ("Score", EdmValue::Double(30.0)),
            ("Nan", EdmValue::Double(f64::NAN)),
            ("Active", EdmValue::Boolean(true)),
            (
                "Born",
                EdmValue::DateTime(EdmDateTime::parse("1990-01-01T00:00:00Z").unwrap()),
            ),
            (
                "Id",
                EdmValue::Guid(parse_guid("22222222-2222-2222-2222-222222222222").unwrap()),
            ),
            ("Blob", EdmValue::Binary(vec![1, 2, 3])),
            ("AgeText", EdmValue::String("30".into())),
        ])
    }

    fn check(filter: &str, expected: bool) {
        let e = sample();
        let expr = parse(filter).unwrap_or_else(|err| panic!("{filter}: {err:?}"));
        assert_eq!(matches(&expr, &e), expected, "{filter}");
    }

    #[test]
    fn each_type_compares_by_value() {
        for (f, want) in [
            ("Name eq 'Smith'", true),
            ("Name lt 'smith'", true), // ordinal: 'S' < 's'
            ("Name ge 'Sm'", true),
            ("Name lt 'Sm'", false),
            ("Age eq 30", true),
            ("Age gt 29 and Age lt 31", true),
            ("Big eq 30L", true),
            ("Big ge 31L", false),
            ("Score eq 30.0", true),
            ("Score lt 30.5", true),
            ("Active eq true", true),
            ("Active ne false", true),
            ("Active gt false", true),
            ("Born lt datetime'1990-01-01T00:00:00.0000001Z'", true),
            ("Born eq datetime'1990-01-01T00:00:00Z'", true),
            ("Id eq guid'22222222-2222-2222-2222-222222222222'", true),
            ("Id gt guid'11111111-1111-1111-1111-111111111111'", true),
            ("Id ge guid'33333333-3333-3333-3333-333333333333'", false),
            ("Blob eq X'010203'", true),
            ("Blob gt X'0102'", true),
            ("Blob lt X'02'", true),
        ] {
            check(f, want);
        }
    }

    #[test]
    fn mismatched_types_never_match() {
        for f in [
            "Age eq 30L",
            "Age eq 30.0",
            "Age ne 30L",
            "Big eq 30",
            "Big ne 31",
            "Score eq 30",
            "Score ne 30L",
            "AgeText gt 20",
            "Age eq '30'",
            "Active eq 1",
            "Id eq '22222222-2222-2222-2222-222222222222'",
            "Born gt '1980'",
            "Blob ne 'x'",
        ] {
            check(f, false);
        }
    }

    #[test]
    fn missing_property_never_matches_even_under_ne() {
        for f in [
            "Missing eq 'x'",
            "Missing ne 'x'",
            "Missing ne ''",
            "Missing gt ''",
            "Missing lt ''",
            "Missing ge 0",
        ] {
            check(f, false);
        }
    }

    #[test]
    fn not_is_plain_negation() {
        check("not Missing eq 'x'", true);
        check("not Missing ne 'x'", true);
        check("not Age eq 30L", true);
        check("not Age eq 30", false);
        check("not (Age eq 30 and Missing eq 1)", true);
        check("not (Age eq 30 or Missing eq 1)", false);
    }

    #[test]
    fn nan_matches_nothing() {
        check("Nan eq 1.0", false);
        check("Nan ne 1.0", false);
        check("Nan lt 1.0", false);
        check("not Nan eq 1.0", true);
    }

    #[test]
    fn system_properties() {
        check("PartitionKey eq 'pk' and RowKey eq 'rk'", true);
        check("PartitionKey gt 'pj' and RowKey lt 'rl'", true);
        check("PartitionKey eq 5", false);
        check("PartitionKey ne 5", false);
        check("Timestamp gt datetime'2021-02-05T17:15:16Z'", true);
        check("Timestamp eq datetime'2021-02-05T17:15:16.7935715Z'", true);
        check("Timestamp eq '2021-02-05T17:15:16.7935715Z'", false);
    }

    #[test]
    fn precedence_in_evaluation() {
        // `or` binds looser than `and`: true or (false and false) = true.
        check("Age eq 30 or Age eq 1 and Name eq 'x'", true);
        // (true or false) and false = false.
        check("(Age eq 30 or Age eq 1) and Name eq 'x'", false);
    }

    #[test]
    fn table_rows_expose_only_table_name() {
        let t = TableRow { name: "MyTable" };
        let m = |f: &str| matches(&parse(f).unwrap(), &t);
        assert!(m("TableName eq 'MyTable'"));
        assert!(!m("TableName eq 'mytable'"));
        assert!(m("TableName ge 'M' and TableName lt 'N'"));
        assert!(!m("TableName ge 'm'"));
        assert!(!m("PartitionKey eq 'MyTable'"));
        assert!(!m("Other ne 'x'"));
    }
}
