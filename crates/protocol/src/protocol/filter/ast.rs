//! The typed `$filter` AST. Every comparison is normalised to `property op literal` (a
//! literal-first comparison is flipped by the parser), literals are typed [`EdmValue`]s, and the
//! tree prints back both as OData text (`Display`) and as a canonical S-expression
//! ([`Expr::to_sexpr`]) that the parser tests compare against.

use std::cmp::Ordering;
use std::fmt::{self, Write as _};

use crate::model::edm::format_guid;
use crate::model::EdmValue;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

impl CmpOp {
    pub(crate) fn parse(word: &str) -> Option<CmpOp> {
        Some(match word {
            "eq" => CmpOp::Eq,
            "ne" => CmpOp::Ne,
            "gt" => CmpOp::Gt,
            "ge" => CmpOp::Ge,
            "lt" => CmpOp::Lt,
            "le" => CmpOp::Le,
            _ => return None,
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
        }
    }

    /// The operator with its operands swapped: `lit lt P` ≡ `P gt lit`.
    pub(crate) fn flipped(self) -> CmpOp {
        match self {
            CmpOp::Eq => CmpOp::Eq,
            CmpOp::Ne => CmpOp::Ne,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
        }
    }

    /// The complementary operator: `not (a lt b)` ≡ `a ge b`, valid only where the comparison
    /// is defined (both sides present and of one type).
    pub fn negated(self) -> CmpOp {
        match self {
            CmpOp::Eq => CmpOp::Ne,
            CmpOp::Ne => CmpOp::Eq,
            CmpOp::Gt => CmpOp::Le,
            CmpOp::Ge => CmpOp::Lt,
            CmpOp::Lt => CmpOp::Ge,
            CmpOp::Le => CmpOp::Gt,
        }
    }

    /// Whether `left op right` holds given `left.cmp(right)`.
    pub fn holds(self, ordering: Ordering) -> bool {
        match self {
            CmpOp::Eq => ordering == Ordering::Equal,
            CmpOp::Ne => ordering != Ordering::Equal,
            CmpOp::Gt => ordering == Ordering::Greater,
            CmpOp::Ge => ordering != Ordering::Less,
            CmpOp::Lt => ordering == Ordering::Less,
            CmpOp::Le => ordering != Ordering::Greater,
        }
    }
}

/// A property name; the three system properties are told apart because the planner and the
/// evaluator treat them specially.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PropertyName {
    PartitionKey,
    RowKey,
    Timestamp,
    /// Any other name, including `TableName` in Query Tables.
    Named(String),
}

impl PropertyName {
    pub(crate) fn from_name(name: &str) -> PropertyName {
        match name {
            "PartitionKey" => PropertyName::PartitionKey,
            "RowKey" => PropertyName::RowKey,
            "Timestamp" => PropertyName::Timestamp,
            other => PropertyName::Named(other.to_string()),
        }
    }

    pub(crate) fn name(&self) -> &str {
        match self {
            PropertyName::PartitionKey => "PartitionKey",
            PropertyName::RowKey => "RowKey",
            PropertyName::Timestamp => "Timestamp",
            PropertyName::Named(n) => n,
        }
    }
}

/// `property op value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub property: PropertyName,
    pub op: CmpOp,
    pub value: EdmValue,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Compare(Comparison),
    /// A bare `true` or `false` where a boolean is expected (`$filter=false`,
    /// `(true and RowKey eq '1')`): it matches every row or none.
    Const(bool),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

impl Expr {
    #[cfg(any(test, feature = "testing"))]
    pub fn compare(property: &str, op: CmpOp, value: EdmValue) -> Expr {
        Expr::Compare(Comparison {
            property: PropertyName::from_name(property),
            op,
            value,
        })
    }

    #[allow(clippy::should_implement_trait)] // reads as the filter operator, not std::ops::Not
    pub fn not(inner: Expr) -> Expr {
        Expr::Not(Box::new(inner))
    }

    pub fn and(left: Expr, right: Expr) -> Expr {
        Expr::And(Box::new(left), Box::new(right))
    }

    pub fn or(left: Expr, right: Expr) -> Expr {
        Expr::Or(Box::new(left), Box::new(right))
    }

    /// Number of comparisons in the tree (Azure allows at most 15).
    #[cfg(any(test, feature = "testing"))]
    pub fn comparison_count(&self) -> usize {
        match self {
            Expr::Compare(_) => 1,
            Expr::Const(_) => 0,
            Expr::Not(e) => e.comparison_count(),
            Expr::And(a, b) | Expr::Or(a, b) => a.comparison_count() + b.comparison_count(),
        }
    }

    /// The canonical S-expression: `(and (eq PartitionKey 'a') (not (gt Age 3)))`.
    #[cfg(test)]
    pub(crate) fn to_sexpr(&self) -> String {
        let mut out = String::new();
        self.write_sexpr(&mut out);
        out
    }

    #[cfg(test)]
    fn write_sexpr(&self, out: &mut String) {
        match self {
            Expr::Compare(c) => {
                let _ = write!(out, "({} {} ", c.op.as_str(), c.property.name());
                write_literal(&c.value, out);
                out.push(')');
            }
            Expr::Const(b) => out.push_str(if *b { "true" } else { "false" }),
            Expr::Not(e) => {
                out.push_str("(not ");
                e.write_sexpr(out);
                out.push(')');
            }
            Expr::And(a, b) | Expr::Or(a, b) => {
                out.push_str(if matches!(self, Expr::And(..)) {
                    "(and "
                } else {
                    "(or "
                });
                a.write_sexpr(out);
                out.push(' ');
                b.write_sexpr(out);
                out.push(')');
            }
        }
    }
}

/// Writes a literal in `$filter` syntax: `'it''s'`, `5`, `5L`, `5.0`, `true`,
/// `datetime'…'`, `guid'…'`, `X'0a0b'`.
pub(crate) fn write_literal(value: &EdmValue, out: &mut String) {
    match value {
        EdmValue::String(s) => {
            out.push('\'');
            out.push_str(&s.replace('\'', "''"));
            out.push('\'');
        }
        EdmValue::Int32(n) => {
            let _ = write!(out, "{n}");
        }
        EdmValue::Int64(n) => {
            let _ = write!(out, "{n}L");
        }
        // `{:?}` is the shortest text that reads back to the same f64 and always carries a
        // `.` or an exponent, so it lexes as a Double again.
        EdmValue::Double(d) => {
            let _ = write!(out, "{d:?}");
        }
        EdmValue::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        EdmValue::DateTime(t) => {
            let _ = write!(out, "datetime'{t}'");
        }
        EdmValue::Guid(g) => {
            let _ = write!(out, "guid'{}'", format_guid(g));
        }
        EdmValue::Binary(bytes) => {
            out.push_str("X'");
            for b in bytes {
                let _ = write!(out, "{b:02x}");
            }
            out.push('\'');
        }
    }
}

/// OData text that parses back to the same tree (operands of `and`/`or`/`not` are
/// parenthesised unless they are comparisons).
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn operand(e: &Expr, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match e {
                Expr::Compare(_) | Expr::Const(_) => write!(f, "{e}"),
                _ => write!(f, "({e})"),
            }
        }
        match self {
            Expr::Compare(c) => {
                let mut lit = String::new();
                write_literal(&c.value, &mut lit);
                write!(f, "{} {} {lit}", c.property.name(), c.op.as_str())
            }
            Expr::Const(b) => f.write_str(if *b { "true" } else { "false" }),
            Expr::Not(e) => {
                f.write_str("not ")?;
                operand(e, f)
            }
            Expr::And(a, b) | Expr::Or(a, b) => {
                operand(a, f)?;
                f.write_str(if matches!(self, Expr::And(..)) {
                    " and "
                } else {
                    " or "
                })?;
                operand(b, f)
            }
        }
    }
}
