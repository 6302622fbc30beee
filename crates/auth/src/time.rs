//! Date and time text used by authentication: RFC 1123 request dates (`x-ms-date`, `Date`)
//! and the ISO-8601 forms accepted in SAS fields (`st`, `se`) and stored access policies.
//!
//! Pure functions over `chrono`; depends on nothing else in the crate.

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};

/// Parses an RFC 1123 HTTP date such as `Mon, 27 Jun 2016 15:25:14 GMT`.
///
/// `chrono`'s RFC 2822 parser accepts the `GMT` zone name that RFC 1123 uses.
pub fn parse_http_date(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc2822(text.trim())
        .ok()
        .map(|d| d.with_timezone(&Utc))
}

/// Formats a time as RFC 1123 (`Mon, 27 Jun 2016 15:25:14 GMT`), the `ToString("R")` form
/// Azure uses inside authentication error details.
pub(crate) fn format_http_date(time: DateTime<Utc>) -> String {
    time.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

/// Parses an ISO-8601 UTC time in one of the forms Azure documents for SAS fields and stored
/// access policies (Azure docs: "Set Table ACL", "Create a service SAS"):
///
/// * `YYYY-MM-DD`
/// * `YYYY-MM-DDThh:mmTZD`
/// * `YYYY-MM-DDThh:mm:ssTZD`
/// * `YYYY-MM-DDThh:mm:ss.fTZD` with 1 to 7 fractional digits
///
/// where `TZD` is `Z` or a numeric offset `+hh:mm` / `-hh:mm` (the result is converted to UTC).
/// Anything else (missing zone, lower-case `t`/`z`, more than 7 fractional digits) is `None`.
pub fn parse_iso8601(text: &str) -> Option<DateTime<Utc>> {
    let bytes = text.as_bytes();
    // Byte offsets below are character offsets only for ASCII text (slicing inside a
    // multi-byte character would panic).
    if bytes.len() < 10 || !text.is_ascii() {
        return None;
    }
    let date = parse_date(&text[..10])?;
    if bytes.len() == 10 {
        return Utc
            .from_local_datetime(&date.and_time(NaiveTime::MIN))
            .single();
    }
    if bytes[10] != b'T' {
        return None;
    }
    let rest = &text[11..];
    // Split the zone designator off the end.
    let (clock, offset_seconds) = if let Some(clock) = rest.strip_suffix('Z') {
        (clock, 0i64)
    } else {
        if rest.len() < 6 {
            return None;
        }
        let (clock, zone) = rest.split_at(rest.len() - 6);
        (clock, parse_offset(zone)?)
    };
    let time = parse_clock(clock)?;
    let naive = NaiveDateTime::new(date, time);
    let utc = Utc.from_local_datetime(&naive).single()?;
    utc.checked_sub_signed(chrono::Duration::seconds(offset_seconds))
}

/// Formats a time the way Azure writes stored-access-policy times: seven fractional digits and
/// `Z` (`2021-07-08T09:10:09.0000000Z`).
pub(crate) fn format_iso8601_7(time: DateTime<Utc>) -> String {
    format!(
        "{}.{:07}Z",
        time.format("%Y-%m-%dT%H:%M:%S"),
        time.timestamp_subsec_nanos() / 100
    )
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn parse_date(s: &str) -> Option<NaiveDate> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, m, d) = (&s[0..4], &s[5..7], &s[8..10]);
    if !(all_digits(y) && all_digits(m) && all_digits(d)) {
        return None;
    }
    NaiveDate::from_ymd_opt(y.parse().ok()?, m.parse().ok()?, d.parse().ok()?)
}

fn parse_two(s: &str) -> Option<u32> {
    if s.len() == 2 && all_digits(s) {
        s.parse().ok()
    } else {
        None
    }
}

fn parse_clock(s: &str) -> Option<NaiveTime> {
    // hh:mm | hh:mm:ss | hh:mm:ss.f{1,7}
    let b = s.as_bytes();
    if b.len() < 5 || b[2] != b':' {
        return None;
    }
    let hour = parse_two(&s[0..2])?;
    let minute = parse_two(&s[3..5])?;
    if b.len() == 5 {
        return NaiveTime::from_hms_opt(hour, minute, 0);
    }
    if b.len() < 8 || b[5] != b':' {
        return None;
    }
    let second = parse_two(&s[6..8])?;
    if b.len() == 8 {
        return NaiveTime::from_hms_opt(hour, minute, second);
    }
    if b[8] != b'.' {
        return None;
    }
    let fraction = &s[9..];
    if fraction.len() > 7 || !all_digits(fraction) {
        return None;
    }
    let mut nanos: u32 = fraction.parse().ok()?;
    for _ in fraction.len()..9 {
        nanos *= 10;
    }
    NaiveTime::from_hms_nano_opt(hour, minute, second, nanos)
}

fn parse_offset(zone: &str) -> Option<i64> {
    let b = zone.as_bytes();
    if b.len() != 6 || b[3] != b':' {
        return None;
    }
    let sign = match b[0] {
        b'+' => 1i64,
        b'-' => -1i64,
        _ => return None,
    };
    let hours = i64::from(parse_two(&zone[1..3])?);
    let minutes = i64::from(parse_two(&zone[4..6])?);
    if hours > 23 || minutes > 59 {
        return None;
    }
    Some(sign * (hours * 3600 + minutes * 60))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn iso8601_accepts_the_documented_forms() {
        let cases = [
            ("2016-06-27", "2016-06-27T00:00:00Z"),
            ("2016-06-27T08:49Z", "2016-06-27T08:49:00Z"),
            ("2016-06-27T08:49:37Z", "2016-06-27T08:49:37Z"),
            ("2016-06-27T08:49:37.1Z", "2016-06-27T08:49:37.1Z"),
            (
                "2016-06-27T08:49:37.1234567Z",
                "2016-06-27T08:49:37.1234567Z",
            ),
            ("2016-06-27T10:49:37+02:00", "2016-06-27T08:49:37Z"),
            ("2016-06-27T08:49-01:30", "2016-06-27T10:19:00Z"),
        ];
        for (input, expected) in cases {
            assert_eq!(parse_iso8601(input), Some(utc(expected)), "{input}");
        }
    }

    #[test]
    fn iso8601_rejects_other_forms() {
        for input in [
            "",
            "2016-6-27",
            "2016-06-27T",
            "2016-06-27T08:49:37",
            "2016-06-27t08:49:37Z",
            "2016-06-27T08:49:37.12345678Z",
            "2016-06-27T08:49:37.Z",
            "2016-13-01",
            "2016-06-27T24:00:00Z",
            "2016-06-27 08:49:37Z",
            "2016-06-27T08:49:37+0200",
            "garbage!!",
        ] {
            assert_eq!(parse_iso8601(input), None, "{input}");
        }
    }

    #[test]
    fn seven_digit_format() {
        assert_eq!(
            format_iso8601_7(utc("2021-07-08T09:10:09Z")),
            "2021-07-08T09:10:09.0000000Z"
        );
        assert_eq!(
            format_iso8601_7(utc("2021-07-08T09:10:09.1234567Z")),
            "2021-07-08T09:10:09.1234567Z"
        );
    }

    #[test]
    fn http_dates_round_trip() {
        let t = parse_http_date("Mon, 27 Jun 2016 15:25:14 GMT").unwrap();
        assert_eq!(t, utc("2016-06-27T15:25:14Z"));
        assert_eq!(format_http_date(t), "Mon, 27 Jun 2016 15:25:14 GMT");
        assert_eq!(parse_http_date("yesterday"), None);
    }
}
