//! EDM (Entity Data Model) types and values as the Table service stores them, with the typed
//! comparison `$filter` uses and the DateTime text format Azure writes.

use std::cmp::Ordering;
use std::fmt;

/// The eight property types of the Table service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EdmType {
    String,
    Int32,
    Int64,
    Double,
    Boolean,
    DateTime,
    Guid,
    Binary,
}

impl EdmType {
    /// The `Edm.*` name used in `@odata.type` annotations.
    pub fn name(self) -> &'static str {
        match self {
            EdmType::String => "Edm.String",
            EdmType::Int32 => "Edm.Int32",
            EdmType::Int64 => "Edm.Int64",
            EdmType::Double => "Edm.Double",
            EdmType::Boolean => "Edm.Boolean",
            EdmType::DateTime => "Edm.DateTime",
            EdmType::Guid => "Edm.Guid",
            EdmType::Binary => "Edm.Binary",
        }
    }

    /// Parses an `Edm.*` annotation value (exact, case-sensitive as the service treats it).
    pub(crate) fn parse(name: &str) -> Option<EdmType> {
        Some(match name {
            "Edm.String" => EdmType::String,
            "Edm.Int32" => EdmType::Int32,
            "Edm.Int64" => EdmType::Int64,
            "Edm.Double" => EdmType::Double,
            "Edm.Boolean" => EdmType::Boolean,
            "Edm.DateTime" => EdmType::DateTime,
            "Edm.Guid" => EdmType::Guid,
            "Edm.Binary" => EdmType::Binary,
            _ => return None,
        })
    }
}

/// A typed property value. Nulls are never stored, so there is no Null variant.
#[derive(Debug, Clone, PartialEq)]
pub enum EdmValue {
    String(String),
    Int32(i32),
    Int64(i64),
    Double(f64),
    Boolean(bool),
    DateTime(EdmDateTime),
    Guid([u8; 16]),
    Binary(Vec<u8>),
}

/// A property value borrowed from elsewhere (a stored entity's bytes, or an [`EdmValue`]):
/// what response encoding and in-place filters read without allocating.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EdmValueRef<'a> {
    String(&'a str),
    Int32(i32),
    Int64(i64),
    Double(f64),
    Boolean(bool),
    DateTime(EdmDateTime),
    Guid([u8; 16]),
    Binary(&'a [u8]),
}

impl EdmValueRef<'_> {
    /// Orders two values of the same EDM type (strings by UTF-16 code units, Guid and Binary
    /// by bytes); `None` across types or with a NaN. Filters on stored bytes and on decoded
    /// entities both come here.
    pub fn compare(self, other: EdmValueRef<'_>) -> Option<Ordering> {
        match (self, other) {
            (EdmValueRef::String(a), EdmValueRef::String(b)) => Some(compare_ordinal(a, b)),
            (EdmValueRef::Int32(a), EdmValueRef::Int32(b)) => Some(a.cmp(&b)),
            (EdmValueRef::Int64(a), EdmValueRef::Int64(b)) => Some(a.cmp(&b)),
            (EdmValueRef::Double(a), EdmValueRef::Double(b)) => a.partial_cmp(&b),
            (EdmValueRef::Boolean(a), EdmValueRef::Boolean(b)) => Some(a.cmp(&b)),
            (EdmValueRef::DateTime(a), EdmValueRef::DateTime(b)) => Some(a.cmp(&b)),
            (EdmValueRef::Guid(a), EdmValueRef::Guid(b)) => Some(a.cmp(&b)),
            (EdmValueRef::Binary(a), EdmValueRef::Binary(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }

    pub fn to_owned_value(self) -> EdmValue {
        match self {
            EdmValueRef::String(s) => EdmValue::String(s.to_string()),
            EdmValueRef::Int32(v) => EdmValue::Int32(v),
            EdmValueRef::Int64(v) => EdmValue::Int64(v),
            EdmValueRef::Double(v) => EdmValue::Double(v),
            EdmValueRef::Boolean(v) => EdmValue::Boolean(v),
            EdmValueRef::DateTime(v) => EdmValue::DateTime(v),
            EdmValueRef::Guid(v) => EdmValue::Guid(v),
            EdmValueRef::Binary(v) => EdmValue::Binary(v.to_vec()),
        }
    }
}

impl EdmValue {
    pub fn as_value_ref(&self) -> EdmValueRef<'_> {
        match self {
            EdmValue::String(s) => EdmValueRef::String(s),
            EdmValue::Int32(v) => EdmValueRef::Int32(*v),
            EdmValue::Int64(v) => EdmValueRef::Int64(*v),
            EdmValue::Double(v) => EdmValueRef::Double(*v),
            EdmValue::Boolean(v) => EdmValueRef::Boolean(*v),
            EdmValue::DateTime(v) => EdmValueRef::DateTime(*v),
            EdmValue::Guid(v) => EdmValueRef::Guid(*v),
            EdmValue::Binary(v) => EdmValueRef::Binary(v),
        }
    }

    pub fn edm_type(&self) -> EdmType {
        match self {
            EdmValue::String(_) => EdmType::String,
            EdmValue::Int32(_) => EdmType::Int32,
            EdmValue::Int64(_) => EdmType::Int64,
            EdmValue::Double(_) => EdmType::Double,
            EdmValue::Boolean(_) => EdmType::Boolean,
            EdmValue::DateTime(_) => EdmType::DateTime,
            EdmValue::Guid(_) => EdmType::Guid,
            EdmValue::Binary(_) => EdmType::Binary,
        }
    }

    /// Typed comparison: `None` when the two values are of different EDM types (a `$filter`
    /// comparison between them does not match) or when either Double is NaN.
    pub fn compare(&self, other: &EdmValue) -> Option<Ordering> {
        self.as_value_ref().compare(other.as_value_ref())
    }

    /// Bytes this value counts for in the service's entity-size formula.
    pub(crate) fn size_for_limit(&self) -> usize {
        match self {
            EdmValue::String(s) => 4 + 2 * utf16_len(s),
            EdmValue::Binary(b) => 4 + b.len(),
            EdmValue::Int32(_) => 4,
            EdmValue::Boolean(_) => 1,
            EdmValue::Guid(_) => 16,
            EdmValue::Int64(_) | EdmValue::Double(_) | EdmValue::DateTime(_) => 8,
        }
    }
}

/// Number of UTF-16 code units of `s` (the unit the service's string limits count in).
pub(crate) fn utf16_len(s: &str) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    s.chars().map(char::len_utf16).sum()
}

/// Ordinal string comparison by UTF-16 code units, as .NET's `string.CompareOrdinal` (the order
/// Azure sorts keys in). Differs from Rust's `str` order only for U+E000..U+FFFF versus
/// supplementary-plane characters.
pub fn compare_ordinal(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Formats a GUID as lowercase `8-4-4-4-12` hex.
pub fn format_guid(g: &[u8; 16]) -> String {
    write_guid(g, &mut [0u8; 36]).to_string()
}

/// [`format_guid`] into a caller's buffer, without allocating.
pub(crate) fn write_guid<'b>(g: &[u8; 16], buf: &'b mut [u8; 36]) -> &'b str {
    uuid::Uuid::from_bytes(*g).hyphenated().encode_lower(buf)
}

/// Parses a GUID in `8-4-4-4-12` form (any hex case).
pub fn parse_guid(s: &str) -> Option<[u8; 16]> {
    if s.len() != 36 {
        return None;
    }
    uuid::Uuid::try_parse(s).ok().map(|u| *u.as_bytes())
}

/// Ticks (100 ns) from 0001-01-01 to 1970-01-01.
const UNIX_EPOCH_TICKS: i64 = 621_355_968_000_000_000;
const TICKS_PER_SECOND: i64 = 10_000_000;

/// A UTC instant with 100 ns resolution, stored as ticks since the Unix epoch (negative before).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EdmDateTime(pub i64);

/// Error of [`EdmDateTime::parse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateTimeError {
    /// Not an ISO-8601 date-time of the accepted forms.
    Syntax,
    /// Well-formed but outside 1601-01-01 .. 9999-12-31T23:59:59.9999999Z.
    OutOfRange,
}

impl EdmDateTime {
    /// 1601-01-01T00:00:00Z, the earliest value the service accepts.
    pub(crate) const MIN: EdmDateTime = EdmDateTime(-116_444_736_000_000_000);
    /// 9999-12-31T23:59:59.9999999Z.
    pub(crate) const MAX: EdmDateTime = EdmDateTime(3_155_378_975_999_999_999 - UNIX_EPOCH_TICKS);

    pub fn now() -> EdmDateTime {
        let now = chrono::Utc::now();
        let secs = now.timestamp();
        let sub = i64::from(now.timestamp_subsec_nanos()) / 100;
        EdmDateTime(secs * TICKS_PER_SECOND + sub)
    }

    /// Parses `YYYY-MM-DDTHH:MM[:SS[.fffffff…]][Z|±HH:MM]`. A missing zone is taken as UTC; more
    /// than 7 fractional digits are truncated (Azure cuts `…40.331047814Z` to `…40.3310478Z`).
    pub fn parse(s: &str) -> Result<EdmDateTime, DateTimeError> {
        let b = s.as_bytes();
        let num = |from: usize, len: usize| -> Result<i64, DateTimeError> {
            let part = b.get(from..from + len).ok_or(DateTimeError::Syntax)?;
            if !part.iter().all(u8::is_ascii_digit) {
                return Err(DateTimeError::Syntax);
            }
            Ok(part
                .iter()
                .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0')))
        };
        let expect = |at: usize, c: u8| -> Result<(), DateTimeError> {
            if b.get(at) == Some(&c) {
                Ok(())
            } else {
                Err(DateTimeError::Syntax)
            }
        };
        let year = num(0, 4)?;
        expect(4, b'-')?;
        let month = num(5, 2)?;
        expect(7, b'-')?;
        let day = num(8, 2)?;
        if b.get(10) != Some(&b'T') && b.get(10) != Some(&b't') {
            return Err(DateTimeError::Syntax);
        }
        let hour = num(11, 2)?;
        expect(13, b':')?;
        let minute = num(14, 2)?;
        let mut pos = 16;
        let mut second = 0;
        let mut fraction_ticks = 0i64;
        if b.get(pos) == Some(&b':') {
            second = num(pos + 1, 2)?;
            pos += 3;
            if b.get(pos) == Some(&b'.') {
                pos += 1;
                let start = pos;
                while b.get(pos).is_some_and(u8::is_ascii_digit) {
                    if pos - start < 7 {
                        fraction_ticks = fraction_ticks * 10 + i64::from(b[pos] - b'0');
                    }
                    pos += 1;
                }
                let digits = pos - start;
                if digits == 0 {
                    return Err(DateTimeError::Syntax);
                }
                for _ in digits..7 {
                    fraction_ticks *= 10;
                }
            }
        }
        let offset_minutes = match b.get(pos) {
            None => 0,
            Some(b'Z') | Some(b'z') if pos + 1 == b.len() => 0,
            Some(sign @ (b'+' | b'-')) if pos + 6 == b.len() => {
                let h = num(pos + 1, 2)?;
                expect(pos + 3, b':')?;
                let m = num(pos + 4, 2)?;
                if h > 23 || m > 59 {
                    return Err(DateTimeError::Syntax);
                }
                let total = h * 60 + m;
                if *sign == b'+' {
                    total
                } else {
                    -total
                }
            }
            _ => return Err(DateTimeError::Syntax),
        };
        if hour > 23 || minute > 59 || second > 59 {
            return Err(DateTimeError::Syntax);
        }
        let date = u32::try_from(month)
            .ok()
            .zip(u32::try_from(day).ok())
            .and_then(|(m, d)| chrono::NaiveDate::from_ymd_opt(year as i32, m, d))
            .ok_or(DateTimeError::Syntax)?;
        let days = i64::from(
            date.signed_duration_since(chrono::NaiveDate::from_ymd_opt(1970, 1, 1).expect("valid"))
                .num_days() as i32,
        );
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
        let ticks = seconds * TICKS_PER_SECOND + fraction_ticks;
        let value = EdmDateTime(ticks);
        if value < EdmDateTime::MIN || value > EdmDateTime::MAX {
            return Err(DateTimeError::OutOfRange);
        }
        Ok(value)
    }

    /// Seconds since the Unix epoch and the 100 ns remainder (always 0..10_000_000).
    fn split(self) -> (i64, i64) {
        (
            self.0.div_euclid(TICKS_PER_SECOND),
            self.0.rem_euclid(TICKS_PER_SECOND),
        )
    }

    /// Azure's text form, `YYYY-MM-DDTHH:MM:SS[.f…]Z`: up to 7 fractional digits with
    /// trailing zeros dropped, no fraction when it is zero. Formatted on the stack: responses
    /// write two or three of these per entity.
    pub fn text(self) -> DateTimeText {
        let (secs, frac) = self.split();
        let days = secs.div_euclid(86_400);
        let sod = secs.rem_euclid(86_400);
        let date = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)
            .expect("valid")
            .checked_add_signed(chrono::Duration::days(days))
            .unwrap_or(chrono::NaiveDate::MIN);
        use chrono::Datelike;
        let mut t = DateTimeText {
            buf: *b"0000-00-00T00:00:00.0000000Z",
            len: 19,
        };
        // Years are 1..=9999 here (EdmDateTime's range); clamp so a bad value cannot overflow.
        let year = date.year().clamp(0, 9999) as u32;
        put_digits(&mut t.buf[0..4], year);
        put_digits(&mut t.buf[5..7], date.month());
        put_digits(&mut t.buf[8..10], date.day());
        put_digits(&mut t.buf[11..13], (sod / 3600) as u32);
        put_digits(&mut t.buf[14..16], ((sod / 60) % 60) as u32);
        put_digits(&mut t.buf[17..19], (sod % 60) as u32);
        if frac != 0 {
            put_digits(&mut t.buf[20..27], frac as u32);
            let mut end = 27;
            while t.buf[end - 1] == b'0' {
                end -= 1;
            }
            t.len = end;
        }
        t.buf[t.len] = b'Z';
        t.len += 1;
        t
    }

    /// The text form with `digits`: [`EdmDateTime::text`], or [`EdmDateTime::text_fixed7`].
    pub fn text_with(self, digits: FractionDigits) -> DateTimeText {
        match digits {
            FractionDigits::Trimmed => self.text(),
            FractionDigits::Seven => self.text_fixed7(),
        }
    }

    /// `YYYY-MM-DDTHH:MM:SS.fffffffZ`, always 7 fractional digits.
    pub(crate) fn text_fixed7(self) -> DateTimeText {
        let mut t = self.text();
        let (_, frac) = self.split();
        put_digits(&mut t.buf[20..27], frac as u32);
        t.buf[19] = b'.';
        t.buf[27] = b'Z';
        t.len = 28;
        t
    }

    /// RFC 1123 form for HTTP headers (`Mon, 27 Jun 2016 15:25:14 GMT`).
    pub fn to_rfc1123(self) -> String {
        let (secs, _) = self.split();
        chrono::DateTime::from_timestamp(secs, 0)
            .unwrap_or_default()
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string()
    }

    /// Seven-digit form used in error messages (`Time:2014-06-04T16:18:20.4307735Z`).
    pub fn to_fixed7(self) -> String {
        let (secs, frac) = self.split();
        let dt = chrono::DateTime::from_timestamp(secs, 0).unwrap_or_default();
        format!("{}.{frac:07}Z", dt.format("%Y-%m-%dT%H:%M:%S"))
    }
}

impl fmt::Display for EdmDateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text().as_str())
    }
}

/// How many fractional digits a DateTime's text has: up to 7 with trailing zeros dropped
/// (Azure Table storage's form), or always 7 (`1973-10-04T00:00:00.0000000Z`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum FractionDigits {
    #[default]
    Trimmed,
    Seven,
}

/// [`EdmDateTime::text`]'s result: at most 28 ASCII bytes, no allocation.
#[derive(Clone, Copy)]
pub struct DateTimeText {
    pub buf: [u8; 28],
    pub len: usize,
}

impl DateTimeText {
    pub fn as_str(&self) -> &str {
        // Only ASCII digits and separators are ever written.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

/// Writes `value` as exactly `out.len()` decimal digits, zero-padded (higher digits dropped).
fn put_digits(out: &mut [u8], mut value: u32) {
    for slot in out.iter_mut().rev() {
        *slot = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(s: &str) -> String {
        EdmDateTime::parse(s).unwrap().to_string()
    }

    #[test]
    fn datetime_text_follows_azure_normalisation() {
        assert_eq!(round("1973-10-04T00:00:00.000000Z"), "1973-10-04T00:00:00Z");
        assert_eq!(
            round("2021-02-05T17:15:16.111Z"),
            "2021-02-05T17:15:16.111Z"
        );
        assert_eq!(
            round("2021-02-05T17:15:16.7935715Z"),
            "2021-02-05T17:15:16.7935715Z"
        );
        assert_eq!(
            round("2023-04-11T21:16:40.331047814Z"),
            "2023-04-11T21:16:40.3310478Z"
        );
        assert_eq!(
            round("2023-04-11T21:16:40.331+00:00"),
            "2023-04-11T21:16:40.331Z"
        );
        assert_eq!(round("2023-04-11T23:16:40+02:00"), "2023-04-11T21:16:40Z");
        assert_eq!(round("2008-07-10T00:00:00"), "2008-07-10T00:00:00Z");
        assert_eq!(round("2008-07-10T00:00Z"), "2008-07-10T00:00:00Z");
        assert_eq!(round("1601-01-01T00:00:00Z"), "1601-01-01T00:00:00Z");
        assert_eq!(
            round("9999-12-31T23:59:59.9999999Z"),
            "9999-12-31T23:59:59.9999999Z"
        );
        assert_eq!(round("1969-12-31T23:59:59.5Z"), "1969-12-31T23:59:59.5Z");
    }

    /// The seven-digit text pads the fraction with zeros (`1973-10-04T00:00:00.0000000Z`,
    /// `2011-11-04T00:05:23.2830000Z`).
    #[test]
    fn seven_digit_text_pads_the_fraction() {
        let seven = |s: &str| {
            EdmDateTime::parse(s)
                .unwrap()
                .text_with(FractionDigits::Seven)
                .as_str()
                .to_string()
        };
        assert_eq!(
            seven("1973-10-04T00:00:00.000000Z"),
            "1973-10-04T00:00:00.0000000Z"
        );
        assert_eq!(
            seven("2011-11-04T00:05:23.283000Z"),
            "2011-11-04T00:05:23.2830000Z"
        );
        assert_eq!(
            seven("1969-12-31T23:59:59.5Z"),
            "1969-12-31T23:59:59.5000000Z"
        );
    }

    proptest::proptest! {
        /// Both texts parse back to the same instant, and the seven-digit one always has
        /// exactly 7 fractional digits.
        #[test]
        fn both_texts_round_trip(
            secs in -11_644_473_600i64..253_402_300_799i64,
            frac in 0i64..10_000_000,
        ) {
            let t = EdmDateTime(secs * 10_000_000 + frac);
            for digits in [FractionDigits::Trimmed, FractionDigits::Seven] {
                let text = t.text_with(digits);
                proptest::prop_assert_eq!(EdmDateTime::parse(text.as_str()).unwrap(), t);
            }
            let seven = t.text_with(FractionDigits::Seven);
            proptest::prop_assert_eq!(seven.as_str().len(), 28);
            proptest::prop_assert_eq!(&seven.as_str()[19..20], ".");
        }
    }

    #[test]
    fn datetime_rejects_bad_text_and_range() {
        for bad in [
            "",
            "2020-13-01T00:00:00Z",
            "2020-02-30T00:00:00Z",
            "2020-01-01",
            "2020-01-01T25:00:00Z",
            "2020-01-01T00:00:00.Z",
            "2020-01-01T00:00:00Zjunk",
            "abcd-01-01T00:00:00Z",
        ] {
            assert_eq!(EdmDateTime::parse(bad), Err(DateTimeError::Syntax), "{bad}");
        }
        assert_eq!(
            EdmDateTime::parse("1600-12-31T23:59:59Z"),
            Err(DateTimeError::OutOfRange)
        );
    }

    #[test]
    fn ordinal_order_is_utf16() {
        // U+FF21 sorts after U+1F600 in UTF-16 (0xFF21 > 0xD83D) although its code point is lower.
        assert_eq!(compare_ordinal("\u{FF21}", "\u{1F600}"), Ordering::Greater);
        assert_eq!(compare_ordinal("a", "b"), Ordering::Less);
        assert_eq!(compare_ordinal("B", "a"), Ordering::Less);
    }

    #[test]
    fn typed_compare_needs_same_type() {
        assert_eq!(EdmValue::Int32(1).compare(&EdmValue::Int64(1)), None);
        assert_eq!(
            EdmValue::Int64(1).compare(&EdmValue::Int64(2)),
            Some(Ordering::Less)
        );
        assert_eq!(
            EdmValue::Double(f64::NAN).compare(&EdmValue::Double(1.0)),
            None
        );
    }
}
