//! Recursive-descent parser for `$filter`.
//!
//! ```text
//! filter      = ws or-expr ws END
//! or-expr     = and-expr *( "or" and-expr )
//! and-expr    = unary *( "and" unary )
//! unary       = "not" unary / primary
//! primary     = "(" or-expr ")" / comparison / "true" / "false"
//! comparison  = operand cmp-op operand      ; exactly one side a property, the other a literal
//! cmp-op      = "eq" / "ne" / "gt" / "ge" / "lt" / "le"
//! operand     = property / literal
//! property    = (letter / "_") *(letter / digit / "_")   ; not a keyword; Unicode letters allowed
//! literal     = string / datetime / guid / binary / int64 / int32 / double / "true" / "false"
//! string      = "'" *( non-quote / "''" ) "'"
//! datetime    = "datetime'" date-time "'"
//! guid        = "guid'" 8HEX "-" 4HEX "-" 4HEX "-" 4HEX "-" 12HEX "'"
//! binary      = ( "X" / "x" / "binary" ) "'" *( 2HEX ) "'"
//! int64       = [ "-" ] 1*DIGIT ( "L" / "l" )
//! int32       = [ "-" ] 1*DIGIT                 ; must fit in 32 bits
//! double      = [ "-" ] 1*DIGIT ( "." 1*DIGIT [ exp ] / exp ) ; exp = ("e"/"E") ["+"/"-"] 1*DIGIT
//! ```
//!
//! Keywords are lowercase only (the reference: "all parts of the filter string are
//! case-sensitive"); tokens need no spaces between them where the boundary is unambiguous.
//! Precedence: comparison > `not` > `and` > `or`; `and`/`or` associate to the left.
//! Literal-first comparisons (`'x' eq Name`) are accepted and flipped to `Name eq 'x'`
//! (Azure accepts them: Azure/Azurite#1599 reports the real service answering such a query).
//! A bare `true`/`false` is a boolean expression of its own (`$filter=false`,
//! `(true and RowKey eq '1')`): the .NET SDK's LINQ translation sends such constants
//! (Azure/Azurite#1787, a `PredicateBuilder.False` query) and health checks query with
//! `false` against Azure (Azure/Azurite#1573, #2450).
//! Rejected: functions, arithmetic, `null`, property-to-property and literal-to-literal
//! comparisons, any other bare operand where a boolean is needed, more than
//! [`MAX_COMPARISONS`](super::MAX_COMPARISONS) comparisons and nesting deeper than
//! [`MAX_DEPTH`](super::MAX_DEPTH) (a typed error, not a stack overflow).

use super::ast::{CmpOp, Comparison, Expr, PropertyName};
use super::lexer::{Lexer, Token, TokenKind};
use super::{FilterError, FilterErrorKind, MAX_COMPARISONS, MAX_DEPTH};
use crate::model::EdmValue;

const KEYWORDS: [&str; 10] = [
    "and", "or", "not", "eq", "ne", "gt", "ge", "lt", "le", "null",
];

pub(crate) struct Parser<'a> {
    lexer: Lexer<'a>,
    current: Token<'a>,
    /// Index of `current` in the token stream (0 = first token).
    index: usize,
    depth: usize,
    comparisons: usize,
}

enum Operand {
    PropertyName(PropertyName),
    Literal(EdmValue),
}

impl<'a> Parser<'a> {
    pub(crate) fn new(text: &'a str) -> Result<Parser<'a>, FilterError> {
        let mut lexer = Lexer::new(text);
        let current = lexer.next_token()?;
        Ok(Parser {
            lexer,
            current,
            index: 0,
            depth: 0,
            comparisons: 0,
        })
    }

    /// Parses the whole text as one filter.
    pub(crate) fn parse_filter(mut self) -> Result<Expr, FilterError> {
        let expr = self.or_expr()?;
        if self.current.kind != TokenKind::End {
            return Err(self.unexpected());
        }
        Ok(expr)
    }

    fn advance(&mut self) -> Result<(), FilterError> {
        self.current = self.lexer.next_token()?;
        self.index += 1;
        Ok(())
    }

    fn error(&self, kind: FilterErrorKind, byte_end: usize) -> FilterError {
        FilterError::at(self.lexer.text(), kind, byte_end)
    }

    /// A syntax error at the current token: Azure reports the position just past it.
    fn unexpected(&self) -> FilterError {
        self.error(FilterErrorKind::Syntax, self.current.end)
    }

    fn is_word(&self, word: &str) -> bool {
        self.current.kind == TokenKind::Ident(word)
    }

    fn enter(&mut self) -> Result<(), FilterError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(FilterErrorKind::TooDeep, self.current.end));
        }
        Ok(())
    }

    fn or_expr(&mut self) -> Result<Expr, FilterError> {
        let mut left = self.and_expr()?;
        while self.is_word("or") {
            self.advance()?;
            let right = self.and_expr()?;
            left = Expr::or(left, right);
        }
        Ok(left)
    }

    fn and_expr(&mut self) -> Result<Expr, FilterError> {
        let mut left = self.unary()?;
        while self.is_word("and") {
            self.advance()?;
            let right = self.unary()?;
            left = Expr::and(left, right);
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, FilterError> {
        if self.is_word("not") {
            self.enter()?;
            self.advance()?;
            let inner = self.unary()?;
            self.depth -= 1;
            return Ok(Expr::not(inner));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, FilterError> {
        if self.current.kind == TokenKind::LParen {
            self.enter()?;
            self.advance()?;
            let inner = self.or_expr()?;
            if self.current.kind != TokenKind::RParen {
                return Err(self.unexpected());
            }
            self.advance()?;
            self.depth -= 1;
            return Ok(inner);
        }
        let first_index = self.index;
        let left = self.operand()?;
        let op = match &self.current.kind {
            TokenKind::Ident(word) => CmpOp::parse(word),
            _ => None,
        };
        let Some(op) = op else {
            if let Operand::Literal(EdmValue::Boolean(b)) = left {
                return Ok(Expr::Const(b));
            }
            if first_index == 0 && self.current.kind == TokenKind::End {
                // The whole filter is one property or literal (`IsActive`, `1`).
                return Err(self.error(FilterErrorKind::NotBoolean, self.current.end));
            }
            return Err(self.unexpected());
        };
        self.advance()?;
        let right_end = self.current.end;
        let right = self.operand()?;
        let comparison = match (left, right) {
            (Operand::PropertyName(property), Operand::Literal(value)) => Comparison {
                property,
                op,
                value,
            },
            (Operand::Literal(value), Operand::PropertyName(property)) => Comparison {
                property,
                op: op.flipped(),
                value,
            },
            // PropertyName-to-property and literal-to-literal: one side must be a constant and the
            // other a property (reference: "it is not possible to compare a property to a
            // dynamic value").
            _ => return Err(self.error(FilterErrorKind::Syntax, right_end)),
        };
        self.comparisons += 1;
        if self.comparisons > MAX_COMPARISONS {
            return Err(self.error(FilterErrorKind::TooManyComparisons, right_end));
        }
        Ok(Expr::Compare(comparison))
    }

    fn operand(&mut self) -> Result<Operand, FilterError> {
        let operand = match &self.current.kind {
            TokenKind::Literal(v) => Operand::Literal(v.clone()),
            TokenKind::Ident(word) if !KEYWORDS.contains(word) => {
                Operand::PropertyName(PropertyName::from_name(word))
            }
            _ => return Err(self.unexpected()),
        };
        self.advance()?;
        Ok(operand)
    }
}
