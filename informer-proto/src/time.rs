//! `metav1.Time`, `MicroTime` and `Duration` in their JSON forms, exactly as Go prints them.

use crate::Error;

/// A formatted time: RFC 3339 in UTC, at most 27 bytes, without allocating.
#[derive(Clone, Copy)]
pub struct TimeText {
    buf: [u8; 27],
    len: usize,
}

impl TimeText {
    /// The text.
    pub fn as_str(&self) -> &str {
        // Only ASCII digits and separators are ever written.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }
}

impl TimeText {
    fn push(&mut self, c: u8) {
        self.buf[self.len] = c;
        self.len += 1;
    }

    /// `v` as exactly `width` decimal digits.
    fn digits(&mut self, v: u64, width: u32) {
        for i in (0..width).rev() {
            self.push(b'0' + ((v / 10u64.pow(i)) % 10) as u8);
        }
    }
}

impl std::fmt::Debug for TimeText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Days since 1970-01-01 -> (year, month, day) in the proleptic Gregorian calendar.
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// What Go's JSON prints for a `metav1.Time` (`2006-01-02T15:04:05Z`) or, with `micro`, a
/// `metav1.MicroTime` (`2006-01-02T15:04:05.000000Z`) read from protobuf `seconds` and `nanos`
/// since the Unix epoch, in UTC.
///
/// As Go reads them: a `Time` drops `nanos` altogether, a `MicroTime` truncates them to
/// microseconds, and `nanos` outside a second carry into the seconds (`time.Unix`). The zero time
/// (Go's `null`) is an empty message, which the caller checks; seconds 0 is 1970-01-01.
///
/// Years outside 0..=9999 have no RFC 3339 form and are an error.
pub fn format_time(secs: i64, nanos: i32, micro: bool) -> Result<TimeText, Error> {
    let nanos = if micro {
        i64::from(nanos - nanos % 1000)
    } else {
        0
    };
    let secs = secs
        .checked_add(nanos.div_euclid(1_000_000_000))
        .ok_or_else(|| Error::Invalid(format!("time {secs}s is out of range")))?;
    let nanos = nanos.rem_euclid(1_000_000_000);
    let (days, in_day) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil(days);
    if !(0..=9999).contains(&year) {
        return Err(Error::Invalid(format!(
            "time {secs}s is out of the years RFC 3339 can print"
        )));
    }
    let mut t = TimeText {
        buf: [0; 27],
        len: 0,
    };
    let (h, m, sec) = (in_day / 3600, in_day % 3600 / 60, in_day % 60);
    t.digits(year as u64, 4);
    for (c, v) in [
        (b'-', u64::from(month)),
        (b'-', u64::from(day)),
        (b'T', h as u64),
        (b':', m as u64),
        (b':', sec as u64),
    ] {
        t.push(c);
        t.digits(v, 2);
    }
    if micro {
        t.push(b'.');
        t.digits((nanos / 1000) as u64, 6);
    }
    t.push(b'Z');
    Ok(t)
}
/// An RFC 3339 time -> (seconds, nanoseconds).
pub fn parse_time(s: &str) -> Result<(i64, i32), Error> {
    let ts: jiff::Timestamp = s
        .parse()
        .map_err(|e| Error::Invalid(format!("invalid time {s:?}: {e}")))?;
    Ok((ts.as_second(), ts.subsec_nanosecond()))
}

/// Go's `time.Duration.String()`: `0s`, `1.5s`, `2m0s`, `1h0m0s`, `500ms`, `1µs`.
pub fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".to_owned();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let u = nanos.unsigned_abs();
    let body = if u < 1_000_000_000 {
        let (div, unit) = match u {
            0..1_000 => (1, "ns"),
            1_000..1_000_000 => (1_000, "µs"),
            _ => (1_000_000, "ms"),
        };
        format!("{}{unit}", fraction(u, div))
    } else {
        let h = u / 3_600_000_000_000;
        let m = u % 3_600_000_000_000 / 60_000_000_000;
        let s = u % 60_000_000_000;
        let mut out = String::new();
        if h > 0 {
            out.push_str(&format!("{h}h"));
        }
        if h > 0 || m > 0 {
            out.push_str(&format!("{m}m"));
        }
        out.push_str(&format!("{}s", fraction(s, 1_000_000_000)));
        out
    };
    format!("{sign}{body}")
}

fn fraction(v: u64, div: u64) -> String {
    let (whole, frac) = (v / div, v % div);
    if frac == 0 {
        return whole.to_string();
    }
    let width = div.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Parses a Go duration string (`1h30m`, `1.5s`, `-2ms`, `0`) into nanoseconds.
pub fn parse_go_duration(s: &str) -> Result<i64, Error> {
    let bad = || Error::Invalid(format!("invalid duration {s:?}"));
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let num: f64 = rest[..n].parse().map_err(|_| bad())?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let mult = match &rest[..u] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(bad()),
        };
        total += num * mult;
        rest = &rest[u..];
    }
    let total = total.round() as i64;
    Ok(if neg { -total } else { total })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_like_go() {
        for (n, s) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (2_000_000, "2ms"),
            (1_500_000_000, "1.5s"),
            (120_000_000_000, "2m0s"),
            (3_600_000_000_000, "1h0m0s"),
            (3_723_000_000_000, "1h2m3s"),
            (-90_000_000_000, "-1m30s"),
        ] {
            assert_eq!(go_duration(n), s);
            assert_eq!(parse_go_duration(s).expect(s), n, "{s}");
        }
        assert!(parse_go_duration("5x").is_err());
        assert!(parse_go_duration("").is_err());
    }

    #[test]
    fn times_format_like_go_and_parse() {
        let t = |secs, nanos, micro| format_time(secs, nanos, micro).expect("in range");
        assert_eq!(t(1_700_000_000, 0, false).as_str(), "2023-11-14T22:13:20Z");
        assert_eq!(
            t(1_700_000_000, 123_456_789, true).as_str(),
            "2023-11-14T22:13:20.123456Z"
        );
        // metav1.Time drops the fraction; MicroTime always prints six digits.
        assert_eq!(
            t(1_700_000_000, 999_999_999, false).as_str(),
            "2023-11-14T22:13:20Z"
        );
        assert_eq!(t(0, 0, true).as_str(), "1970-01-01T00:00:00.000000Z");
        assert_eq!(t(-1, 0, false).as_str(), "1969-12-31T23:59:59Z");
        assert_eq!(t(951_782_400, 0, false).as_str(), "2000-02-29T00:00:00Z");
        assert_eq!(
            t(253_402_300_799, 0, false).as_str(),
            "9999-12-31T23:59:59Z"
        );
        assert_eq!(
            t(-62_135_596_800, 0, false).as_str(),
            "0001-01-01T00:00:00Z"
        );
        assert!(format_time(253_402_300_800, 0, false).is_err());
        // Nanoseconds carry into the seconds, as with Go's time.Unix.
        assert_eq!(t(10, -1_000, true).as_str(), "1970-01-01T00:00:09.999999Z");
        assert_eq!(
            t(10, 1_999_999, true).as_str(),
            "1970-01-01T00:00:10.001999Z"
        );
        // Every day of a few centuries agrees with jiff.
        for day in (-719_000i64..2_900_000).step_by(997) {
            let secs = day * 86_400 + 3_723;
            let want = jiff::Timestamp::from_second(secs)
                .expect("range")
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string();
            assert_eq!(t(secs, 0, false).as_str(), want, "{secs}");
        }
        assert_eq!(
            parse_time("2023-11-14T22:13:20Z").expect("p"),
            (1_700_000_000, 0)
        );
        assert_eq!(
            parse_time("2023-11-14T22:13:20.123456Z").expect("p"),
            (1_700_000_000, 123_456_000)
        );
        assert!(parse_time("yesterday").is_err());
    }
}
