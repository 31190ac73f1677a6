//! Date formatting without a date library.
//!
//! All dates are written in **UTC**. HAProxy writes `%t`, `%tr`, `%Tl`,
//! `%trl` and the syslog headers in local time; Fairlead does not read the
//! system time zone database, so on a host whose time zone is UTC (the usual
//! case for servers and containers) the output is identical, and elsewhere
//! the local-time fields are in UTC with a `+0000` / `+00:00` offset, which
//! keeps them unambiguous.

use std::time::{SystemTime, UNIX_EPOCH};

const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// A broken-down UTC date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Civil {
    pub year: i64,
    /// 1..=12
    pub month: u32,
    /// 1..=31
    pub day: u32,
    pub hour: u32,
    pub min: u32,
    pub sec: u32,
    /// Microseconds within the second.
    pub micros: u32,
}

/// Seconds and microseconds since the epoch (negative dates are clamped to
/// the epoch).
pub(crate) fn unix_micros(t: SystemTime) -> (i64, u32) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_micros()),
        Err(_) => (0, 0),
    }
}

impl Civil {
    pub fn from_system(t: SystemTime) -> Civil {
        let (secs, micros) = unix_micros(t);
        Civil::from_unix(secs, micros)
    }

    /// Days-to-civil conversion over the proleptic Gregorian calendar,
    /// counting in 400-year eras of 146097 days.
    pub fn from_unix(secs: i64, micros: u32) -> Civil {
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400) as u32;
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        Civil {
            year,
            month,
            day,
            hour: rem / 3600,
            min: rem / 60 % 60,
            sec: rem % 60,
            micros,
        }
    }

    fn month_name(&self) -> &'static [u8; 3] {
        MONTHS[(self.month as usize).clamp(1, 12) - 1]
    }
}

/// Writes `n` in decimal, left-padded with zeros to `width` digits.
pub(crate) fn pad(out: &mut Vec<u8>, n: u64, width: usize) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut v = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for _ in (buf.len() - i)..width {
        out.push(b'0');
    }
    out.extend_from_slice(&buf[i..]);
}

fn year(out: &mut Vec<u8>, y: i64) {
    pad(out, y.max(0) as u64, 4);
}

/// `dd/Mmm/yyyy:HH:MM:SS` (shared prefix of the log dates).
fn clf_prefix(out: &mut Vec<u8>, c: &Civil) {
    pad(out, c.day.into(), 2);
    out.push(b'/');
    out.extend_from_slice(c.month_name());
    out.push(b'/');
    year(out, c.year);
    out.push(b':');
    hms(out, c);
}

fn hms(out: &mut Vec<u8>, c: &Civil) {
    pad(out, c.hour.into(), 2);
    out.push(b':');
    pad(out, c.min.into(), 2);
    out.push(b':');
    pad(out, c.sec.into(), 2);
}

/// Writes `t` as HAProxy's log date, `22/Nov/2026:02:58:15.123` (UTC),
/// for other crates (the runtime API's `show errors`).
pub fn write_log_date(out: &mut Vec<u8>, t: SystemTime) {
    log_date(out, &Civil::from_system(t));
}

/// `%t` / `%tr`: `22/Nov/2026:02:58:15.123`.
pub(crate) fn log_date(out: &mut Vec<u8>, c: &Civil) {
    clf_prefix(out, c);
    out.push(b'.');
    pad(out, (c.micros / 1000).into(), 3);
}

/// `%T`, `%trg`, `%Tl`, `%trl`: `22/Nov/2026:02:58:15 +0000`.
pub(crate) fn clf_date(out: &mut Vec<u8>, c: &Civil) {
    clf_prefix(out, c);
    out.extend_from_slice(b" +0000");
}

/// RFC 3164 header date: `Nov  2 02:58:15` (day padded with a space).
pub(crate) fn legacy_date(out: &mut Vec<u8>, c: &Civil) {
    out.extend_from_slice(c.month_name());
    out.push(b' ');
    if c.day < 10 {
        out.push(b' ');
    }
    pad(out, c.day.into(), 1);
    out.push(b' ');
    hms(out, c);
}

/// RFC 5424 / ISO 8601 date: `2026-11-22T02:58:15.123456+00:00`.
pub(crate) fn iso_date(out: &mut Vec<u8>, c: &Civil) {
    year(out, c.year);
    out.push(b'-');
    pad(out, c.month.into(), 2);
    out.push(b'-');
    pad(out, c.day.into(), 2);
    out.push(b'T');
    hms(out, c);
    out.push(b'.');
    pad(out, c.micros.into(), 6);
    out.extend_from_slice(b"+00:00");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64, ms: u64) -> Civil {
        Civil::from_system(UNIX_EPOCH + Duration::from_millis(secs * 1000 + ms))
    }

    fn s(f: fn(&mut Vec<u8>, &Civil), c: &Civil) -> String {
        let mut v = Vec::new();
        f(&mut v, c);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn civil_dates() {
        assert_eq!(
            Civil::from_unix(0, 0),
            Civil {
                year: 1970,
                month: 1,
                day: 1,
                hour: 0,
                min: 0,
                sec: 0,
                micros: 0
            }
        );
        // 2009-02-06 12:14:14 UTC (the HAProxy documentation's example).
        let c = at(1_233_922_454, 655);
        assert_eq!(s(log_date, &c), "06/Feb/2009:12:14:14.655");
        assert_eq!(s(clf_date, &c), "06/Feb/2009:12:14:14 +0000");
        assert_eq!(s(legacy_date, &c), "Feb  6 12:14:14");
        assert_eq!(s(iso_date, &c), "2009-02-06T12:14:14.655000+00:00");
        // Leap day and end of year.
        assert_eq!(s(log_date, &at(951_782_400, 1)), "29/Feb/2000:00:00:00.001");
        assert_eq!(
            s(log_date, &at(1_798_761_599, 999)),
            "31/Dec/2026:23:59:59.999"
        );
        assert_eq!(s(legacy_date, &at(1_795_316_295, 0)), "Nov 22 02:58:15");
        let mut v = Vec::new();
        pad(&mut v, 7, 3);
        pad(&mut v, 12345, 2);
        assert_eq!(v, b"00712345");
    }
}
