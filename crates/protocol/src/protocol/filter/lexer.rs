//! Tokens of a `$filter`, produced lazily (one per [`Lexer::next_token`] call), so that an error
//! is reported at the first token the parser cannot use, as Azure does: `aaa bbb ccc` fails at
//! the end of `bbb` (position 7) even though `ccc` is never looked at.
//!
//! Literals are typed here: `'…'`, `datetime'…'`, `guid'…'`, `X'…'`/`binary'…'`, `123`,
//! `123L`, `1.5`/`1e5`, `true`/`false`. Every other word is an [`TokenKind::Ident`] (property
//! names and the keywords `and or not eq ne gt ge lt le null`, which the parser interprets).

use super::{FilterError, FilterErrorKind};
use crate::model::edm::parse_guid;
use crate::model::{EdmDateTime, EdmValue};

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TokenKind<'a> {
    Ident(&'a str),
    Literal(EdmValue),
    LParen,
    RParen,
    End,
}

/// A token and its byte span in the filter text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token<'a> {
    pub(crate) kind: TokenKind<'a>,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

pub(crate) struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident_continue(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(text: &'a str) -> Lexer<'a> {
        Lexer { text, pos: 0 }
    }

    pub(crate) fn text(&self) -> &'a str {
        self.text
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn peek_byte_at(&self, at: usize) -> Option<u8> {
        self.text.as_bytes().get(at).copied()
    }

    fn error(&self, kind: FilterErrorKind, byte_end: usize) -> FilterError {
        FilterError::at(self.text, kind, byte_end)
    }

    pub(crate) fn next_token(&mut self) -> Result<Token<'a>, FilterError> {
        while let Some(c) = self.peek() {
            if c.is_whitespace() {
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
        let start = self.pos;
        let Some(c) = self.peek() else {
            return Ok(Token {
                kind: TokenKind::End,
                start,
                end: start,
            });
        };
        let kind = match c {
            '(' => {
                self.pos += 1;
                TokenKind::LParen
            }
            ')' => {
                self.pos += 1;
                TokenKind::RParen
            }
            '\'' => TokenKind::Literal(EdmValue::String(self.quoted()?)),
            '-' if self
                .peek_byte_at(start + 1)
                .is_some_and(|b| b.is_ascii_digit()) =>
            {
                self.number(start)?
            }
            '0'..='9' => self.number(start)?,
            c if is_ident_start(c) => {
                while self.peek().is_some_and(is_ident_continue) {
                    self.pos += self.peek().map_or(1, char::len_utf8);
                }
                let word = &self.text[start..self.pos];
                if self.peek() == Some('\'') && is_literal_prefix(word) {
                    self.typed_literal(word, start)?
                } else {
                    match word {
                        "true" => TokenKind::Literal(EdmValue::Boolean(true)),
                        "false" => TokenKind::Literal(EdmValue::Boolean(false)),
                        _ => TokenKind::Ident(word),
                    }
                }
            }
            other => {
                // Arithmetic signs, commas, slashes, `$`, … have no place in the grammar.
                self.pos += other.len_utf8();
                return Err(self.error(FilterErrorKind::Syntax, self.pos));
            }
        };
        Ok(Token {
            kind,
            start,
            end: self.pos,
        })
    }

    /// Reads `'…'` starting at the quote; `''` inside stands for one `'`.
    fn quoted(&mut self) -> Result<String, FilterError> {
        debug_assert_eq!(self.peek(), Some('\''));
        self.pos += 1;
        let mut out = String::new();
        loop {
            let rest = &self.text[self.pos..];
            match rest.find('\'') {
                None => {
                    self.pos = self.text.len();
                    return Err(self.error(FilterErrorKind::Syntax, self.pos));
                }
                Some(i) => {
                    out.push_str(&rest[..i]);
                    self.pos += i + 1;
                    if self.peek() == Some('\'') {
                        out.push('\'');
                        self.pos += 1;
                    } else {
                        return Ok(out);
                    }
                }
            }
        }
    }

    /// `datetime'…'`, `guid'…'`, `X'…'`/`binary'…'`; `word` has been read, the quote is next.
    fn typed_literal(&mut self, word: &str, start: usize) -> Result<TokenKind<'a>, FilterError> {
        let edm_type = match word {
            "datetime" => "Edm.DateTime",
            "guid" => "Edm.Guid",
            _ => "Edm.Binary",
        };
        let body = self.quoted()?;
        let value = match edm_type {
            "Edm.DateTime" => EdmDateTime::parse(&body).ok().map(EdmValue::DateTime),
            "Edm.Guid" => parse_guid(&body).map(EdmValue::Guid),
            _ => parse_hex(&body).map(EdmValue::Binary),
        };
        value.map(TokenKind::Literal).ok_or_else(|| {
            self.error(
                FilterErrorKind::UnrecognizedLiteral {
                    edm_type,
                    literal: self.text[start..self.pos].to_string(),
                },
                self.pos,
            )
        })
    }

    /// `-?digits` then `.digits` and/or an exponent (Double), or an `L` suffix (Int64).
    fn number(&mut self, start: usize) -> Result<TokenKind<'a>, FilterError> {
        let bytes = self.text.as_bytes();
        let digits = |mut at: usize| {
            while bytes.get(at).is_some_and(u8::is_ascii_digit) {
                at += 1;
            }
            at
        };
        let mut end = start;
        if bytes.get(end) == Some(&b'-') {
            end += 1;
        }
        end = digits(end);
        let mut is_double = false;
        if bytes.get(end) == Some(&b'.') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit) {
            end = digits(end + 1);
            is_double = true;
        }
        if matches!(bytes.get(end), Some(b'e' | b'E')) {
            let mut exp = end + 1;
            if matches!(bytes.get(exp), Some(b'+' | b'-')) {
                exp += 1;
            }
            if bytes.get(exp).is_some_and(u8::is_ascii_digit) {
                end = digits(exp);
                is_double = true;
            }
        }
        let text = &self.text[start..end];
        let (edm_type, value) = if is_double {
            let v = text
                .parse::<f64>()
                .ok()
                .filter(|d| d.is_finite())
                .map(EdmValue::Double);
            ("Edm.Double", v)
        } else if matches!(bytes.get(end), Some(b'L' | b'l')) {
            end += 1;
            ("Edm.Int64", text.parse::<i64>().ok().map(EdmValue::Int64))
        } else {
            ("Edm.Int32", text.parse::<i32>().ok().map(EdmValue::Int32))
        };
        self.pos = end;
        value.map(TokenKind::Literal).ok_or_else(|| {
            self.error(
                FilterErrorKind::UnrecognizedLiteral {
                    edm_type,
                    literal: self.text[start..end].to_string(),
                },
                end,
            )
        })
    }
}

/// Words that make a typed literal when a quote follows directly. Any other word followed by
/// a quote (`eq'a'`, or an OData form the Table service lacks such as `time'…'`) is an
/// identifier followed by a string.
fn is_literal_prefix(word: &str) -> bool {
    matches!(word, "datetime" | "guid" | "X" | "x" | "binary")
}

/// Hex pairs, any case; `None` for an odd count or a non-hex digit.
fn parse_hex(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    bytes
        .chunks(2)
        .map(|pair| {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            Some((hi * 16 + lo) as u8)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<TokenKind<'_>> {
        let mut lexer = Lexer::new(text);
        let mut out = Vec::new();
        loop {
            let t = lexer.next_token().unwrap();
            if t.kind == TokenKind::End {
                return out;
            }
            out.push(t.kind);
        }
    }

    #[test]
    fn tokens_and_spans() {
        let mut l = Lexer::new("  Age ge 30L)");
        let t = l.next_token().unwrap();
        assert_eq!((t.kind, t.start, t.end), (TokenKind::Ident("Age"), 2, 5));
        assert_eq!(l.next_token().unwrap().kind, TokenKind::Ident("ge"));
        let t = l.next_token().unwrap();
        assert_eq!(
            (t.kind, t.start, t.end),
            (TokenKind::Literal(EdmValue::Int64(30)), 9, 12)
        );
        assert_eq!(l.next_token().unwrap().kind, TokenKind::RParen);
        let t = l.next_token().unwrap();
        assert_eq!((t.kind, t.start), (TokenKind::End, 13));
    }

    #[test]
    fn numbers() {
        use EdmValue::*;
        let lit = |s: &str| match kinds(s).as_slice() {
            [TokenKind::Literal(v)] => v.clone(),
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(lit("0"), Int32(0));
        assert_eq!(lit("-2147483648"), Int32(i32::MIN));
        assert_eq!(lit("2147483647"), Int32(i32::MAX));
        assert_eq!(lit("7l"), Int64(7));
        assert_eq!(lit("-9223372036854775808L"), Int64(i64::MIN));
        assert_eq!(lit("1.5"), Double(1.5));
        assert_eq!(lit("-0.25"), Double(-0.25));
        assert_eq!(lit("1e3"), Double(1000.0));
        assert_eq!(lit("1E+20"), Double(1e20));
        assert_eq!(lit("2.5e-3"), Double(0.0025));
        // `1.` is the number 1 followed by an invalid `.`.
        let mut l = Lexer::new("1.");
        assert_eq!(l.next_token().unwrap().kind, TokenKind::Literal(Int32(1)));
        assert!(l.next_token().is_err());
    }

    #[test]
    fn typed_literals() {
        use EdmValue::*;
        assert_eq!(
            kinds("X'0A0b' binary'' x'ff'"),
            vec![
                TokenKind::Literal(Binary(vec![10, 11])),
                TokenKind::Literal(Binary(vec![])),
                TokenKind::Literal(Binary(vec![255])),
            ]
        );
        assert_eq!(
            kinds("'o''clock' ''"),
            vec![
                TokenKind::Literal(String("o'clock".into())),
                TokenKind::Literal(String("".into())),
            ]
        );
        assert!(matches!(
            kinds("guid'4185404a-5818-48c3-b9be-f217df0dba6f'").as_slice(),
            [TokenKind::Literal(Guid(_))]
        ));
        assert!(matches!(
            kinds("datetime'2008-07-10T00:00:00Z'").as_slice(),
            [TokenKind::Literal(DateTime(_))]
        ));
        assert_eq!(
            kinds("true false null"),
            vec![
                TokenKind::Literal(Boolean(true)),
                TokenKind::Literal(Boolean(false)),
                TokenKind::Ident("null"),
            ]
        );
    }

    #[test]
    fn non_ascii_identifiers() {
        assert_eq!(
            kinds("啊齄丂狛狜 _x1"),
            vec![TokenKind::Ident("啊齄丂狛狜"), TokenKind::Ident("_x1")]
        );
    }
}
