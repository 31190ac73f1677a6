//! Time and size units, read the way HAProxy reads them.
//!
//! Times: an unsigned decimal integer followed by an optional unit among
//! `us`, `ms`, `s`, `m`, `h`, `d`. Without a unit the value is in
//! milliseconds (the unit of every timeout). Values above 2147483647 ms
//! (about 24.8 days) overflow HAProxy's timers and are rejected, as is a
//! non-zero value below one millisecond (e.g. `500us`), which HAProxy
//! reports as an underflow. Decimals (`1.5s`) are not accepted.
//!
//! Sizes: an unsigned decimal integer followed by an optional `k`, `m` or
//! `g` (either case), 1024-based.

use std::time::Duration;

/// Largest timer value HAProxy accepts, in milliseconds.
pub const MAX_TIMER_MS: u64 = i32::MAX as u64;

/// Parses a time value whose default unit is the millisecond.
pub fn parse_time(s: &str) -> Result<Duration, String> {
    parse_time_in(
        s,
        1_000,
        MAX_TIMER_MS * 1_000,
        "2147483647 ms or ~24.8 days",
        "1 ms",
    )
}

/// Parses a time value whose default unit is the second (cookie `maxidle`
/// and `maxlife`); the largest value is 2147483647 seconds.
pub fn parse_time_secs(s: &str) -> Result<Duration, String> {
    parse_time_in(
        s,
        1_000_000,
        MAX_TIMER_MS * 1_000_000,
        "2147483647 s or ~68 years",
        "1 s",
    )
}

/// `default_mult`: microseconds per unit-less step; `max_us`: largest value
/// accepted, in microseconds; non-zero values below one `default_mult`
/// are an underflow.
fn parse_time_in(
    s: &str,
    default_mult: u64,
    max_us: u64,
    max_text: &str,
    min_text: &str,
) -> Result<Duration, String> {
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if digits_end == 0 {
        return Err(format!(
            "invalid time value '{s}': expected an unsigned integer optionally followed by a unit among us, ms, s, m, h, d"
        ));
    }
    let value: u64 = s[..digits_end]
        .parse()
        .map_err(|_| format!("timer overflow in '{s}' (maximum value is {max_text})"))?;
    let unit = &s[digits_end..];
    // Multiplier in microseconds.
    let mult: u64 = match unit {
        "" => default_mult,
        "ms" => 1_000,
        "us" => 1,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        _ => {
            return Err(format!(
                "invalid unit '{unit}' in time value '{s}' (expected us, ms, s, m, h or d)"
            ))
        }
    };
    let micros = value
        .checked_mul(mult)
        .filter(|us| *us <= max_us)
        .ok_or_else(|| format!("timer overflow in '{s}' (maximum value is {max_text})"))?;
    if micros != 0 && micros < default_mult {
        return Err(format!(
            "timer underflow in '{s}' (minimum non-null value is {min_text})"
        ));
    }
    Ok(Duration::from_micros(micros))
}

/// Parses a size with an optional `k`, `m` or `g` suffix (1024-based).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if digits_end == 0 {
        return Err(format!(
            "invalid size '{s}': expected an unsigned integer optionally followed by k, m or g"
        ));
    }
    let value: u64 = s[..digits_end]
        .parse()
        .map_err(|_| format!("size '{s}' is too large"))?;
    let mult: u64 = match &s[digits_end..] {
        "" => 1,
        "k" | "K" => 1 << 10,
        "m" | "M" => 1 << 20,
        "g" | "G" => 1 << 30,
        unit => {
            return Err(format!(
                "invalid unit '{unit}' in size '{s}' (expected k, m or g)"
            ))
        }
    };
    value
        .checked_mul(mult)
        .ok_or_else(|| format!("size '{s}' is too large"))
}

/// Parses a plain unsigned integer of type `T`, naming the keyword on error.
pub(crate) fn parse_uint<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("'{what}' expects an unsigned integer (got '{s}')"));
    }
    s.parse::<T>()
        .map_err(|_| format!("value '{s}' is out of range for '{what}'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(parse_time("0"), Ok(Duration::ZERO));
        assert_eq!(parse_time("10"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_time("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_time("1500us"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_time("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_time("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_time("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_time("1d"), Ok(Duration::from_secs(86400)));
        assert_eq!(parse_time("24d"), Ok(Duration::from_secs(24 * 86400)));
    }

    #[test]
    fn bad_times() {
        assert!(parse_time("")
            .unwrap_err()
            .contains("invalid time value ''"));
        assert!(parse_time("s").is_err());
        assert!(parse_time("-1").is_err());
        assert!(parse_time("1.5s").unwrap_err().contains("'.5s'"));
        assert!(parse_time("10x").unwrap_err().contains("invalid unit 'x'"));
        assert!(parse_time("10S").is_err());
        assert!(parse_time("25d").unwrap_err().contains("overflow"));
        assert!(parse_time("2147483648").unwrap_err().contains("overflow"));
        assert!(parse_time("2147483647").is_ok());
        assert!(parse_time("99999999999999999999999")
            .unwrap_err()
            .contains("overflow"));
        assert!(parse_time("500us").unwrap_err().contains("underflow"));
        assert_eq!(parse_time("0us"), Ok(Duration::ZERO));
    }

    #[test]
    fn second_times() {
        assert_eq!(parse_time_secs("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_time_secs("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_time_secs("1500ms"), Ok(Duration::from_millis(1500)));
        assert!(parse_time_secs("500ms").unwrap_err().contains("underflow"));
        assert!(parse_time_secs("2147483648")
            .unwrap_err()
            .contains("68 years"));
        assert!(parse_time_secs("2147483647").is_ok());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("16384"), Ok(16384));
        assert_eq!(parse_size("16k"), Ok(16384));
        assert_eq!(parse_size("16K"), Ok(16384));
        assert_eq!(parse_size("2m"), Ok(2 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("1kb").unwrap_err().contains("'kb'"));
        assert!(parse_size("k").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("1.5k").is_err());
        assert!(parse_size("99999999999999999g")
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn uints() {
        assert_eq!(parse_uint::<u32>("42", "maxconn"), Ok(42));
        assert!(parse_uint::<u32>("-1", "maxconn").is_err());
        assert!(parse_uint::<u32>("99999999999", "maxconn")
            .unwrap_err()
            .contains("out of range"));
        assert!(parse_uint::<u32>("", "maxconn").is_err());
    }
}
