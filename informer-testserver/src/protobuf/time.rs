//! `metav1.Time`, `MicroTime` and `Duration` in their JSON forms.

use super::Error;

/// RFC 3339 in UTC: seconds for `Time`, six fractional digits for `MicroTime`.
pub(crate) fn format(secs: i64, nanos: i64, micro: bool) -> Result<String, Error> {
    let ts = jiff::Timestamp::from_second(secs)
        .map_err(|e| Error::Invalid(format!("time out of range: {e}")))?;
    let base = ts.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    Ok(if micro {
        format!("{base}.{:06}Z", nanos.clamp(0, 999_999_999) / 1000)
    } else {
        format!("{base}Z")
    })
}

/// An RFC 3339 time -> (seconds, nanoseconds).
pub(crate) fn parse(s: &str) -> Result<(i64, i32), Error> {
    let ts: jiff::Timestamp = s
        .parse()
        .map_err(|e| Error::Invalid(format!("invalid time {s:?}: {e}")))?;
    Ok((ts.as_second(), ts.subsec_nanosecond()))
}

/// Go's `time.Duration.String()`: `0s`, `1.5s`, `2m0s`, `1h0m0s`, `500ms`, `1µs`.
pub(crate) fn go_duration(nanos: i64) -> String {
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
pub(crate) fn parse_go_duration(s: &str) -> Result<i64, Error> {
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
    fn times_format_and_parse() {
        assert_eq!(
            format(1_700_000_000, 0, false).expect("t"),
            "2023-11-14T22:13:20Z"
        );
        assert_eq!(
            format(1_700_000_000, 123_456_789, true).expect("t"),
            "2023-11-14T22:13:20.123456Z"
        );
        assert_eq!(
            parse("2023-11-14T22:13:20Z").expect("p"),
            (1_700_000_000, 0)
        );
        assert_eq!(
            parse("2023-11-14T22:13:20.123456Z").expect("p"),
            (1_700_000_000, 123_456_000)
        );
        assert!(parse("yesterday").is_err());
    }
}
