//! HAProxy time values (`1s`, `500ms`, `2m`...), as used by `timeout` and
//! `hold` in a `resolvers` section.

use std::time::Duration;

/// The largest time HAProxy accepts: 2147483647 ms (about 24.8 days).
pub const MAX_TIME_MS: u64 = 2_147_483_647;

/// Parses a HAProxy time: a decimal number followed by an optional unit
/// (`us`, `ms`, `s`, `m`, `h`, `d`). Without a unit the value is in
/// milliseconds. A non-zero value under 1 ms and a value over
/// [`MAX_TIME_MS`] are refused, as HAProxy does.
pub fn parse_time(word: &str) -> Result<Duration, String> {
    let digits_end = word
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(word.len());
    let (num, unit) = word.split_at(digits_end);
    if num.is_empty() {
        return Err(format!(
            "'{word}' is not a time (expected a number and a unit such as 10s)"
        ));
    }
    let value: u64 = num.parse().map_err(|_| {
        format!("timer overflow in '{word}', maximum value is {MAX_TIME_MS} ms (~24.8 days)")
    })?;
    let micros_per_unit: u64 = match unit {
        "" | "ms" => 1_000,
        "us" => 1,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        other => {
            return Err(format!(
                "unexpected unit '{other}' in time '{word}' (use us, ms, s, m, h or d)"
            ))
        }
    };
    let micros = value
        .checked_mul(micros_per_unit)
        .filter(|us| us / 1_000 <= MAX_TIME_MS)
        .ok_or_else(|| {
            format!("timer overflow in '{word}', maximum value is {MAX_TIME_MS} ms (~24.8 days)")
        })?;
    if micros != 0 && micros < 1_000 {
        return Err(format!(
            "timer underflow in '{word}', minimum non-null value is 1 ms"
        ));
    }
    Ok(Duration::from_micros(micros))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_time("1500").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_time("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_time("3s").unwrap(), Duration::from_secs(3));
        assert_eq!(parse_time("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_time("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_time("1d").unwrap(), Duration::from_secs(86400));
        assert_eq!(parse_time("2000us").unwrap(), Duration::from_millis(2));
        assert_eq!(parse_time("0").unwrap(), Duration::ZERO);
    }

    #[test]
    fn errors() {
        assert!(parse_time("").unwrap_err().contains("not a time"));
        assert!(parse_time("s").unwrap_err().contains("not a time"));
        assert!(parse_time("10x")
            .unwrap_err()
            .contains("unexpected unit 'x'"));
        assert!(parse_time("500us").unwrap_err().contains("underflow"));
        assert!(parse_time("25d").unwrap_err().contains("overflow"));
        assert!(parse_time("99999999999999999999999")
            .unwrap_err()
            .contains("overflow"));
        assert_eq!(
            parse_time("2147483647").unwrap(),
            Duration::from_millis(MAX_TIME_MS)
        );
        assert!(parse_time("2147483648").unwrap_err().contains("overflow"));
    }
}
