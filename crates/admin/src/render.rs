//! HAProxy's text output formats: durations, dates, the `show errors` dump,
//! `show servers state`, `show pools`, `show sess` and the tasks activity
//! table. Pure functions over the [`crate::api`] data.

use crate::api::{
    BackendInfo, CapturedError, ErrorSide, PoolInfo, ProfilingReport, ServerInfo, SessionInfo,
    TaskStat, TasksProfilingState,
};
use std::fmt::Write;
use std::net::IpAddr;
use std::time::{Duration, SystemTime};

/// Header of `show servers state`, format version 1.
pub const SERVERS_STATE_HEADER: &str = "# be_id be_name srv_id srv_name srv_addr srv_op_state \
srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status \
srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id \
srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr \
srv_agent_addr srv_agent_port";

/// Widest line of the `show errors` text dump.
const DUMP_WIDTH: usize = 79;

/// A duration as HAProxy's `show sess` ages: at most two units among
/// d/h/m/s, largest first (`0s`, `59s`, `1m5s`, `2h`, `3d4h`).
pub fn human_time(secs: u64) -> String {
    let (d, h, m, s) = (
        secs / 86400,
        secs % 86400 / 3600,
        secs % 3600 / 60,
        secs % 60,
    );
    let mut out = String::new();
    let mut left = 2;
    for (v, unit, always) in [(d, 'd', false), (h, 'h', false), (m, 'm', false)] {
        if left > 0 && (v > 0 || always) {
            let _ = write!(out, "{v}{unit}");
            left -= 1;
        }
    }
    if (left > 0 && s > 0) || secs == 0 {
        let _ = write!(out, "{s}s");
    }
    out
}

/// A nanosecond duration in exactly 7 characters (`1.234ms`, `12.34us`,
/// `   -   ` for zero), as the profiling tables show them.
pub fn time_short(ns: u64) -> String {
    if ns == 0 {
        return "   -   ".into();
    }
    let steps: [(&str, f64, f64); 9] = [
        ("ns", 1.0, 1000.0),
        ("us", 1000.0, 1000.0),
        ("ms", 1000.0, 1000.0),
        ("s ", 1000.0, 60.0),
        ("m ", 60.0, 60.0),
        ("h ", 60.0, 24.0),
        ("d ", 24.0, 365.0),
        ("yr", 365.0, 1000.0),
        ("", 1.0, 0.0),
    ];
    let mut v = ns as f64;
    for (unit, div, limit) in steps {
        if unit.is_empty() {
            break;
        }
        v /= div;
        if v < limit {
            return if v < 10.0 {
                format!("{v:1.3}{unit}")
            } else if v < 100.0 {
                format!("{v:2.2}{unit}")
            } else {
                format!("{v:3.1}{unit}")
            };
        }
    }
    "  inf  ".into()
}

/// `DD/Mon/YYYY:HH:MM:SS.mmm` in UTC (HAProxy prints local time; the CLI
/// has no safe access to the time zone, so it uses UTC), as the log lines
/// write it.
pub fn log_date(t: SystemTime) -> String {
    let mut out = Vec::with_capacity(24);
    fairlead_log::write_log_date(&mut out, t);
    String::from_utf8_lossy(&out).into_owned()
}

/// The escaped form of one byte in a text dump.
fn escape_byte(b: u8) -> String {
    match b {
        b'\t' => "\\t".into(),
        b'\n' => "\\n".into(),
        b'\r' => "\\r".into(),
        0x1b => "\\e".into(),
        b'\\' => "\\\\".into(),
        0x20..=0x7e => (b as char).to_string(),
        _ => format!("\\x{b:02X}"),
    }
}

/// Text dump of captured bytes, as `show errors` prints it: each line
/// starts with the offset of its first byte (5 digits), followed by `+`
/// when it continues a line broken at 79 columns; one input line per
/// output line; `\t \n \r \e \\` and `\xNN` escapes.
pub fn dump_text(bytes: &[u8]) -> String {
    let mut out = String::new();
    let mut pos = 0;
    let mut line_start = 0;
    while pos < bytes.len() {
        let mut line = format!("  {pos:05}{} ", if pos == line_start { ' ' } else { '+' });
        while pos < bytes.len() {
            let e = escape_byte(bytes[pos]);
            if line.len() + e.len() > DUMP_WIDTH {
                break;
            }
            line.push_str(&e);
            pos += 1;
            if bytes[pos - 1] == b'\n' {
                line_start = pos;
                break;
            }
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn addr_or_dash(a: Option<IpAddr>) -> String {
    a.map_or_else(|| "-".into(), |a| a.to_string())
}

/// One `show errors` entry.
pub fn captured_error(e: &CapturedError) -> String {
    let mut out = format!(" \n[{}]", log_date(e.when));
    let (other_name, other_id) = e
        .other
        .as_ref()
        .map_or(("<NONE>", -1), |(n, id)| (n.as_str(), *id));
    match e.side {
        ErrorSide::Request => {
            let _ = write!(
                out,
                " frontend {} (#{}): invalid request\n  backend {other_name} (#{other_id})",
                e.proxy, e.proxy_id
            );
        }
        ErrorSide::Response => {
            let _ = write!(
                out,
                " backend {} (#{}): invalid response\n  frontend {other_name} (#{other_id})",
                e.proxy, e.proxy_id
            );
        }
    }
    let (srv, srv_id) = e
        .server
        .as_ref()
        .map_or(("<NONE>", -1), |(n, id)| (n.as_str(), i64::from(*id)));
    let (ip, port) = e.client.map_or(("unknown".to_string(), 0), |a| {
        (a.ip().to_string(), a.port())
    });
    let _ = write!(
        out,
        ", server {srv} (#{srv_id}), event #{}, src {ip}:{port}\n  buffer starts at {}, len {}, error at position {}\n",
        e.event,
        e.offset,
        e.bytes.len(),
        e.position
    );
    if !e.reason.is_empty() {
        let _ = writeln!(out, "  reason: {}", e.reason);
    }
    out.push_str("  \n");
    out.push_str(&dump_text(&e.bytes));
    out
}

/// One `show servers state` data line.
pub fn server_state_line(be: &BackendInfo, s: &ServerInfo) -> String {
    format!(
        "{} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} - {} {} {} {} {}\n",
        be.id,
        be.name,
        s.id,
        s.name,
        addr_or_dash(s.addr),
        s.op_state as u8,
        s.admin_state,
        s.uweight,
        s.iweight,
        s.since_last_change.as_secs(),
        s.check_status,
        s.check_result,
        s.check_health,
        s.check_state & 0x0f,
        s.agent_state & 0x1f,
        u8::from(be.forced_id),
        u8::from(s.forced_id),
        s.fqdn.as_deref().unwrap_or("-"),
        s.port,
        u8::from(s.use_ssl),
        s.check_port,
        addr_or_dash(s.check_addr),
        addr_or_dash(s.agent_addr),
        s.agent_port,
    )
}

/// `show pools` (already filtered and sorted).
pub fn pools(list: &[PoolInfo]) -> String {
    let mut out = String::from("Dumping pools usage. Use SIGQUIT to flush them.\n");
    let (mut alloc, mut used, mut failed) = (0u64, 0u64, 0u64);
    for p in list {
        let bytes = p.allocated.saturating_mul(p.size);
        alloc = alloc.saturating_add(bytes);
        used = used.saturating_add(p.used.saturating_mul(p.size));
        failed = failed.saturating_add(p.failed);
        let _ = writeln!(
            out,
            "  - Pool {} ({} bytes) : {} allocated ({bytes} bytes), {} used, {} failures",
            p.name, p.size, p.allocated, p.used, p.failed
        );
    }
    let _ = writeln!(
        out,
        "Total: {} pools, {alloc} bytes allocated, {used} used, {failed} failures.",
        list.len()
    );
    out
}

/// One `show sess` line.
pub fn session_line(s: &SessionInfo) -> String {
    let src = s
        .client
        .map_or_else(|| "?".into(), |a| format!("{}:{}", a.ip(), a.port()));
    format!(
        "{:#x}: proto={} src={src} fe={} be={} srv={} age={} state={}\n",
        s.id,
        s.proto,
        s.frontend,
        s.backend.as_deref().unwrap_or("<NONE>"),
        s.server.as_deref().unwrap_or("<none>"),
        human_time(s.age.as_secs()),
        s.state
    )
}

/// The status lines of `show profiling`.
pub fn profiling_status(r: &ProfilingReport) -> String {
    let tasks = match r.tasks {
        TasksProfilingState::Off => "off",
        TasksProfilingState::On => "on",
        TasksProfilingState::AutoOff => "auto-off",
        TasksProfilingState::AutoOn => "auto-on",
    };
    format!(
        "Per-task CPU profiling              : {tasks:<8}      # set profiling tasks {{on|auto|off}}\n\
         Memory usage profiling              : {:<8}      # set profiling memory {{on|off}}\n",
        if r.memory { "on" } else { "off" }
    )
}

fn secs_f(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64())
}

/// The "Tasks activity" table of `show profiling` (rows already sorted).
pub fn tasks_activity(r: &ProfilingReport, rows: &[TaskStat]) -> String {
    let mut out = format!(
        "Tasks activity over {} sec till {} sec ago:\n  function                      calls   cpu_tot   cpu_avg   lat_tot   lat_avg\n",
        secs_f(r.measured),
        secs_f(r.stopped_ago)
    );
    for t in rows.iter().filter(|t| t.calls > 0) {
        let width = 35usize.saturating_sub(t.name.len()).max(1);
        let _ = write!(out, "  {}{:>width$}", t.name, t.calls);
        for ns in [t.cpu_ns, t.cpu_ns / t.calls, t.lat_ns, t.lat_ns / t.calls] {
            let _ = write!(out, "   {}", time_short(ns));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_time_units() {
        assert_eq!(human_time(0), "0s");
        assert_eq!(human_time(59), "59s");
        assert_eq!(human_time(65), "1m5s");
        assert_eq!(human_time(7200), "2h");
        assert_eq!(human_time(7260), "2h1m");
        assert_eq!(human_time(3 * 86400 + 4 * 3600 + 5), "3d4h");
    }

    #[test]
    fn time_short_is_seven_chars() {
        for (ns, want) in [
            (0, "   -   "),
            (5, "5.000ns"),
            (1_234_000, "1.234ms"),
            (12_340, "12.34us"),
            (123_400_000, "123.4ms"),
            (90_000_000_000, "1.500m "),
        ] {
            assert_eq!(time_short(ns), want);
            assert_eq!(time_short(ns).len(), 7);
        }
    }

    #[test]
    fn dates() {
        use std::time::UNIX_EPOCH;
        let t = UNIX_EPOCH + Duration::from_millis(1_236_181_616_081);
        assert_eq!(log_date(t), "04/Mar/2009:15:46:56.081");
        assert_eq!(log_date(UNIX_EPOCH), "01/Jan/1970:00:00:00.000");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(log_date(leap), "29/Feb/2000:00:00:00.000");
    }

    #[test]
    fn text_dump_escapes_and_wraps() {
        let d = dump_text(b"GET / HTTP/1.1\r\nX\\y:\x01\tz\r\n\r\n");
        assert_eq!(
            d,
            "  00000  GET / HTTP/1.1\\r\\n\n  00016  X\\\\y:\\x01\\tz\\r\\n\n  00025  \\r\\n\n"
        );
        let long = vec![b'a'; 150];
        let d = dump_text(&long);
        let lines: Vec<&str> = d.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines.iter().all(|l| l.len() <= 79));
        assert!(lines[0].starts_with("  00000  a"));
        assert!(lines[1].starts_with("  00070+ a"));
        assert!(lines[2].starts_with("  00140+ a"));
    }
}
