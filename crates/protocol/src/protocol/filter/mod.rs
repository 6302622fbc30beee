//! `$filter` text → typed [`Expr`]. Owns the grammar (see `parser.rs`), the lexer, the AST and
//! the errors with their positions. Knows nothing of the store or of how a filter is run
//! (that is the query module).
//!
//! Errors are Azure's 400 `InvalidInput`. The message follows the service where it was
//! observed: "Syntax error at position N in '<filter>'." [rec: Py] with N the UTF-16 offset
//! just past the offending token (`aaa bbb ccc` → 7; also observed for
//! `2019-03-20T21:13:35.0173879Z` → 7, MicrosoftDocs/azure-docs#27658);
//! "Unrecognized 'Edm.Int32' literal '5454161346626'…" (microsoft/AzureStorageExplorer#1382);
//! "The $filter expression must evaluate to a single boolean value." for a filter of just `1`
//! (Azure/Azurite#1185). The texts for more than 15 comparisons and too deep nesting are ours.

pub(crate) mod ast;
pub(crate) mod lexer;
pub(crate) mod parser;

pub use ast::{CmpOp, Comparison, Expr, PropertyName};

use super::{ApiError, ErrorCode};

/// Azure allows "no more than 15 discrete comparisons" in a `$filter` (Querying tables and
/// entities, REST reference).
pub const MAX_COMPARISONS: usize = 15;
/// Nesting of parentheses and `not` allowed before the parser gives up with a typed error.
pub(crate) const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterErrorKind {
    /// Unexpected token or character, unterminated string, unsupported construct.
    Syntax,
    /// A literal that does not fit its type (`2147483648`, `datetime'2020-13-01'`).
    UnrecognizedLiteral {
        edm_type: &'static str,
        literal: String,
    },
    /// The filter is a single operand, not a boolean expression.
    NotBoolean,
    TooManyComparisons,
    TooDeep,
}

/// A `$filter` error: what and where (UTF-16 code units from the start of the filter, the
/// unit .NET — and so Azure — counts positions in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterError {
    pub(crate) kind: FilterErrorKind,
    pub(crate) position: usize,
}

impl FilterError {
    /// An error at byte offset `byte_end` of `text`.
    pub(crate) fn at(text: &str, kind: FilterErrorKind, byte_end: usize) -> FilterError {
        let end = byte_end.min(text.len());
        let prefix = text.get(..end).unwrap_or(text);
        FilterError {
            kind,
            position: prefix.encode_utf16().count(),
        }
    }

    /// The message Azure would show for `filter`.
    pub fn message(&self, filter: &str) -> String {
        match &self.kind {
            FilterErrorKind::Syntax => {
                format!("Syntax error at position {} in '{filter}'.", self.position)
            }
            FilterErrorKind::UnrecognizedLiteral { edm_type, literal } => {
                format!("Unrecognized '{edm_type}' literal '{literal}' in '{filter}'.")
            }
            FilterErrorKind::NotBoolean => {
                "The $filter expression must evaluate to a single boolean value.".to_string()
            }
            FilterErrorKind::TooManyComparisons => format!(
                "The $filter expression has more than {MAX_COMPARISONS} discrete comparisons (position {}) in '{filter}'.",
                self.position
            ),
            FilterErrorKind::TooDeep => format!(
                "The $filter expression is nested more than {MAX_DEPTH} levels deep at position {} in '{filter}'.",
                self.position
            ),
        }
    }

    pub(crate) fn to_api_error(&self, filter: &str) -> ApiError {
        ApiError::with_message(ErrorCode::InvalidInput, self.message(filter))
    }
}

/// Parses a `$filter` text.
pub fn parse(text: &str) -> Result<Expr, FilterError> {
    parser::Parser::new(text)?.parse_filter()
}

/// The `$filter` query parameter: absent, empty or blank means no filter (Azure answers an
/// empty `$filter=` with all entities, Azure/Azurite#1573).
pub fn parse_param(raw: Option<&str>) -> Result<Option<Expr>, ApiError> {
    match raw {
        Some(text) if !text.trim().is_empty() => {
            parse(text).map(Some).map_err(|e| e.to_api_error(text))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EdmDateTime, EdmValue};
    use proptest::prelude::*;

    fn sexpr(text: &str) -> String {
        match parse(text) {
            Ok(e) => e.to_sexpr(),
            Err(e) => panic!("{text}: {e:?}"),
        }
    }

    #[test]
    fn canonical_trees() {
        let cases = [
            ("PartitionKey eq 'a'", "(eq PartitionKey 'a')"),
            ("not PartitionKey eq 'a'", "(not (eq PartitionKey 'a'))"),
            ("RowKey ne 'o''clock'", "(ne RowKey 'o''clock')"),
            ("A eq ''", "(eq A '')"),
            ("Age gt 30", "(gt Age 30)"),
            ("Age ge -2147483648", "(ge Age -2147483648)"),
            ("Big lt 123L", "(lt Big 123L)"),
            (
                "Big le -9223372036854775808L",
                "(le Big -9223372036854775808L)",
            ),
            ("D eq 1.5", "(eq D 1.5)"),
            ("D eq 2.0", "(eq D 2.0)"),
            ("D eq 1e3", "(eq D 1000.0)"),
            ("D eq 1.5E-3", "(eq D 0.0015)"),
            ("D eq 1E+20", "(eq D 1e20)"),
            ("B eq true", "(eq B true)"),
            ("B ne false", "(ne B false)"),
            (
                "T ge datetime'2008-07-10T00:00:00Z'",
                "(ge T datetime'2008-07-10T00:00:00Z')",
            ),
            (
                "T lt datetime'2013-08-02T17:37:43.9004348Z'",
                "(lt T datetime'2013-08-02T17:37:43.9004348Z')",
            ),
            (
                "G eq guid'4185404A-5818-48c3-b9be-f217df0dba6f'",
                "(eq G guid'4185404a-5818-48c3-b9be-f217df0dba6f')",
            ),
            ("Bin eq X'0A0b'", "(eq Bin X'0a0b')"),
            ("Bin eq binary'ff00'", "(eq Bin X'ff00')"),
            ("Bin eq X''", "(eq Bin X'')"),
            // Literal on the left is flipped.
            ("'x' eq Name", "(eq Name 'x')"),
            ("30 lt Age", "(gt Age 30)"),
            ("30L ge Age", "(le Age 30L)"),
            // Precedence: not > and > or; left associativity.
            (
                "A eq 1 or B eq 2 and C eq 3",
                "(or (eq A 1) (and (eq B 2) (eq C 3)))",
            ),
            (
                "A eq 1 and B eq 2 or C eq 3",
                "(or (and (eq A 1) (eq B 2)) (eq C 3))",
            ),
            (
                "A eq 1 and B eq 2 and C eq 3",
                "(and (and (eq A 1) (eq B 2)) (eq C 3))",
            ),
            ("not A eq 1 and B eq 2", "(and (not (eq A 1)) (eq B 2))"),
            ("not not A eq 1", "(not (not (eq A 1)))"),
            ("not (A eq 1 or B eq 2)", "(not (or (eq A 1) (eq B 2)))"),
            (
                "(A eq 1 or B eq 2) and C eq 3",
                "(and (or (eq A 1) (eq B 2)) (eq C 3))",
            ),
            ("((A eq 1))", "(eq A 1)"),
            // Spacing: extra spaces, none around parentheses or before quotes.
            ("  (PartitionKey eq'a')  ", "(eq PartitionKey 'a')"),
            ("(A eq 1)and(B eq 2)", "(and (eq A 1) (eq B 2))"),
            // System properties and non-ASCII names.
            (
                "Timestamp lt datetime'2020-01-01T00:00:00Z'",
                "(lt Timestamp datetime'2020-01-01T00:00:00Z')",
            ),
            ("啊齄丂狛狜 eq 'ü'", "(eq 啊齄丂狛狜 'ü')"),
            ("TableName ge 'a'", "(ge TableName 'a')"),
            (
                "PartitionKey eq 'a' and (RowKey eq '1' or RowKey eq '9')",
                "(and (eq PartitionKey 'a') (or (eq RowKey '1') (eq RowKey '9')))",
            ),
            // Bare `true`/`false` are boolean expressions (the .NET SDK's LINQ filters, health
            // checks); next to an operator they are still literals.
            ("true", "true"),
            ("false", "false"),
            ("not false", "(not false)"),
            ("(false)", "false"),
            (
                "(true and RowKey eq '1') and ((false or PartitionKey eq 'p1') or PartitionKey eq 'p2') or PartitionKey eq 'p3'",
                "(or (and (and true (eq RowKey '1')) (or (or false (eq PartitionKey 'p1')) (eq PartitionKey 'p2'))) (eq PartitionKey 'p3'))",
            ),
            ("true eq B", "(eq B true)"),
        ];
        for (text, expected) in cases {
            assert_eq!(sexpr(text), expected, "{text}");
        }
    }

    #[test]
    fn literal_values_are_typed() {
        let value = |text: &str| match parse(text).unwrap() {
            Expr::Compare(c) => c.value,
            other => panic!("{other:?}"),
        };
        assert_eq!(value("P eq 5"), EdmValue::Int32(5));
        assert_eq!(value("P eq 5L"), EdmValue::Int64(5));
        assert_eq!(value("P eq 5.0"), EdmValue::Double(5.0));
        assert_eq!(value("P eq '5'"), EdmValue::String("5".into()));
        assert_eq!(
            value("P eq datetime'2008-07-10T00:00:00Z'"),
            EdmValue::DateTime(EdmDateTime::parse("2008-07-10T00:00:00Z").unwrap())
        );
    }

    fn error(text: &str) -> FilterError {
        match parse(text) {
            Ok(e) => panic!("{text} parsed as {}", e.to_sexpr()),
            Err(e) => e,
        }
    }

    #[test]
    fn errors_and_positions() {
        use FilterErrorKind::*;
        let cases: &[(&str, FilterErrorKind, usize)] = &[
            // Recorded from the real service [rec: Py] / MicrosoftDocs/azure-docs#27658.
            ("aaa bbb ccc", Syntax, 7),
            ("2019-03-20T21:13:35.0173879Z", Syntax, 7),
            // Incomplete input: the position is the end of the text.
            ("PartitionKey eq", Syntax, 15),
            ("PartitionKey", NotBoolean, 12),
            ("IsActive", NotBoolean, 8),
            ("1", NotBoolean, 1),
            ("(A eq 1", Syntax, 7),
            ("A eq 1)", Syntax, 7),
            ("A eq 1 and", Syntax, 10),
            ("not", Syntax, 3),
            ("()", Syntax, 2),
            // Bare boolean properties are not accepted (see docs/query.md).
            ("not IsActive", Syntax, 12),
            ("IsActive and A eq 1", Syntax, 12),
            ("(IsActive)", Syntax, 10),
            // Unsupported: functions, arithmetic, null, other operators.
            ("startswith(Name,'a') eq true", Syntax, 11),
            ("substringof('a',Name)", Syntax, 12),
            ("Age add 1 eq 5", Syntax, 7),
            ("Age eq 1 add 2", Syntax, 12),
            ("Age eq -Age", Syntax, 8),
            ("Age eq +1", Syntax, 8),
            ("Name eq null", Syntax, 12),
            ("Name has 'a'", Syntax, 8),
            ("Name in ('a')", Syntax, 7),
            ("Name/Sub eq 1", Syntax, 5),
            // Operand shapes.
            ("A eq B", Syntax, 6),
            ("1 eq 1", Syntax, 6),
            ("'a' eq 'b'", Syntax, 10),
            ("A eq and", Syntax, 8),
            ("eq A 1", Syntax, 2),
            // Case-sensitive keywords.
            ("A EQ 1", Syntax, 4),
            ("A eq 1 AND B eq 2", Syntax, 10),
            ("A eq True", Syntax, 9),
            // `True` is a property name, not the literal.
            ("True", NotBoolean, 4),
            ("True and A eq 1", Syntax, 8),
            ("true true", Syntax, 9),
            ("true eq", Syntax, 7),
            // Lexical problems.
            ("Name eq 'abc", Syntax, 12),
            ("Name eq 'a''", Syntax, 12),
            ("A eq 1.", Syntax, 7),
            ("A eq 5 $", Syntax, 8),
            ("A eq time'12:00'", Syntax, 9),
            ("A eq 1.5M", Syntax, 9),
            // Positions count UTF-16 code units (an astral character is two).
            ("𝒜 eq 1 x", Syntax, 9),
            ("😀 eq 1", Syntax, 2),
            ("ü eq 1 x", Syntax, 8),
        ];
        for (text, kind, position) in cases {
            let e = error(text);
            assert_eq!((&e.kind, e.position), (kind, *position), "{text}");
        }
    }

    #[test]
    fn unrecognized_literals() {
        let cases = [
            ("A eq 2147483648", "Edm.Int32", "2147483648"),
            ("A eq -2147483649", "Edm.Int32", "-2147483649"),
            ("A eq 5454161346626", "Edm.Int32", "5454161346626"),
            (
                "A eq 9223372036854775808L",
                "Edm.Int64",
                "9223372036854775808L",
            ),
            ("A eq 1e999", "Edm.Double", "1e999"),
            (
                "A eq datetime'2020-13-01T00:00:00Z'",
                "Edm.DateTime",
                "datetime'2020-13-01T00:00:00Z'",
            ),
            (
                "A eq datetime'0001-01-01T00:00:00Z'",
                "Edm.DateTime",
                "datetime'0001-01-01T00:00:00Z'",
            ),
            ("A eq guid'xyz'", "Edm.Guid", "guid'xyz'"),
            ("A eq X'0'", "Edm.Binary", "X'0'"),
            ("A eq X'zz'", "Edm.Binary", "X'zz'"),
        ];
        for (text, ty, lit) in cases {
            let e = error(text);
            assert_eq!(
                e.kind,
                FilterErrorKind::UnrecognizedLiteral {
                    edm_type: ty,
                    literal: lit.to_string()
                },
                "{text}"
            );
            assert_eq!(e.position, text.len(), "{text}");
        }
        assert_eq!(
            error("A eq 5454161346626").message("A eq 5454161346626"),
            "Unrecognized 'Edm.Int32' literal '5454161346626' in 'A eq 5454161346626'."
        );
    }

    #[test]
    fn azure_message_for_a_syntax_error() {
        let e = error("aaa bbb ccc");
        assert_eq!(
            e.message("aaa bbb ccc"),
            "Syntax error at position 7 in 'aaa bbb ccc'."
        );
        let api = e.to_api_error("aaa bbb ccc");
        assert_eq!(api.code, ErrorCode::InvalidInput);
    }

    #[test]
    fn fifteen_comparisons_at_most() {
        let n = |count: usize| {
            (0..count)
                .map(|i| format!("P{i} eq {i}"))
                .collect::<Vec<_>>()
                .join(" or ")
        };
        assert_eq!(parse(&n(15)).unwrap().comparison_count(), 15);
        let text = n(16);
        let e = error(&text);
        assert_eq!(e.kind, FilterErrorKind::TooManyComparisons);
        assert_eq!(e.position, text.len());
    }

    #[test]
    fn nesting_is_capped_with_a_typed_error() {
        let nested = |depth: usize| format!("{}A eq 1{}", "(".repeat(depth), ")".repeat(depth));
        assert!(parse(&nested(MAX_DEPTH)).is_ok());
        assert_eq!(error(&nested(MAX_DEPTH + 1)).kind, FilterErrorKind::TooDeep);
        let nots = |depth: usize| format!("{}A eq 1", "not ".repeat(depth));
        assert!(parse(&nots(MAX_DEPTH)).is_ok());
        assert_eq!(error(&nots(MAX_DEPTH + 1)).kind, FilterErrorKind::TooDeep);
        // Far beyond the cap: still an error, not a stack overflow.
        assert_eq!(error(&nested(100_000)).kind, FilterErrorKind::TooDeep);
    }

    #[test]
    fn empty_param_means_no_filter() {
        assert_eq!(parse_param(None).unwrap(), None);
        assert_eq!(parse_param(Some("")).unwrap(), None);
        assert_eq!(parse_param(Some("   ")).unwrap(), None);
        assert!(parse_param(Some("A eq 1")).unwrap().is_some());
        assert_eq!(
            parse_param(Some("aaa bbb ccc")).unwrap_err().message,
            "Syntax error at position 7 in 'aaa bbb ccc'."
        );
    }

    pub(crate) fn arb_literal() -> impl Strategy<Value = EdmValue> {
        prop_oneof![
            ".{0,6}".prop_map(EdmValue::String),
            any::<i32>().prop_map(EdmValue::Int32),
            any::<i64>().prop_map(EdmValue::Int64),
            any::<f64>()
                .prop_filter("finite", |d| d.is_finite())
                .prop_map(EdmValue::Double),
            any::<bool>().prop_map(EdmValue::Boolean),
            (EdmDateTime::MIN.0..=EdmDateTime::MAX.0)
                .prop_map(|t| EdmValue::DateTime(EdmDateTime(t))),
            any::<[u8; 16]>().prop_map(EdmValue::Guid),
            proptest::collection::vec(any::<u8>(), 0..4).prop_map(EdmValue::Binary),
        ]
    }

    fn arb_expr() -> impl Strategy<Value = Expr> {
        let name = prop_oneof![
            Just("PartitionKey".to_string()),
            Just("RowKey".to_string()),
            Just("Timestamp".to_string()),
            "[A-Za-z_][A-Za-z0-9_]{0,4}".prop_filter("not a keyword", |n| {
                ![
                    "and", "or", "not", "eq", "ne", "gt", "ge", "lt", "le", "null", "true",
                    "false", "X", "x", "binary", "datetime", "guid",
                ]
                .contains(&n.as_str())
            }),
        ];
        let op = prop_oneof![
            Just(CmpOp::Eq),
            Just(CmpOp::Ne),
            Just(CmpOp::Gt),
            Just(CmpOp::Ge),
            Just(CmpOp::Lt),
            Just(CmpOp::Le)
        ];
        let leaf = prop_oneof![
            8 => (name, op, arb_literal()).prop_map(|(n, o, v)| Expr::compare(&n, o, v)),
            1 => any::<bool>().prop_map(Expr::Const),
        ];
        leaf.prop_recursive(4, 15, 2, |inner| {
            prop_oneof![
                inner.clone().prop_map(Expr::not),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::and(a, b)),
                (inner.clone(), inner).prop_map(|(a, b)| Expr::or(a, b)),
            ]
        })
    }

    proptest! {
        #[test]
        fn print_parse_round_trip(expr in arb_expr()) {
            prop_assume!(expr.comparison_count() <= MAX_COMPARISONS);
            let text = expr.to_string();
            let parsed = parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e:?}")))?;
            prop_assert_eq!(parsed, expr);
        }

        #[test]
        fn arbitrary_text_never_panics(text in ".{0,40}") {
            let _ = parse(&text);
        }
    }
}
