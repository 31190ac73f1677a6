//! `show stat` as CSV (`;csv`) and typed JSON (`;json`), and `show info`.

use crate::fields::{for_each_row, Row, Val, FIELDS};
use crate::model::Snapshot;
use std::io::Write;

/// Writes a CSV field: quoted only when it holds a comma, a double quote
/// or a line break, with quotes doubled (HAProxy's rule).
fn csv_field(out: &mut Vec<u8>, s: &str) {
    if s.bytes().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
        out.push(b'"');
        for b in s.bytes() {
            if b == b'"' {
                out.push(b'"');
            }
            out.push(b);
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(s.as_bytes());
    }
}

fn csv_row(out: &mut Vec<u8>, row: &Row<'_>) {
    for v in &row.vals {
        match v {
            Val::Empty => {}
            Val::Str(s) => csv_field(out, s),
            Val::U(n) => {
                let _ = write!(out, "{n}");
            }
            Val::I(n) => {
                let _ = write!(out, "{n}");
            }
        }
        out.push(b',');
    }
    out.push(b'\n');
}

/// Appends HAProxy's `show stat` CSV to `out`: the header line
/// `# pxname,svname,...,agg_check_status,` then one line per frontend,
/// server and backend, each field followed by a comma as HAProxy does.
/// Over the CLI, HAProxy ends the answer with an empty line; the caller
/// adds it there, not on the HTTP page.
pub fn csv(snap: &Snapshot, out: &mut Vec<u8>) {
    out.extend_from_slice(b"# ");
    for f in FIELDS.iter() {
        out.extend_from_slice(f.name.as_bytes());
        out.push(b',');
    }
    out.push(b'\n');
    for_each_row(snap, |row| csv_row(out, &row));
}

/// Appends `s` as a JSON string literal.
pub(crate) fn json_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let mut b = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
    out.push(b'"');
}

/// Appends `show stat json` to `out`, in HAProxy's typed layout: an array
/// with one array per CSV line, holding one object per non-empty field:
///
/// ```json
/// [[{"objType":"Frontend","proxyId":2,"id":0,"field":{"pos":4,"name":"scur"},
///    "processNum":1,"tags":{"origin":"Metric","nature":"Gauge","scope":"Process"},
///    "value":{"type":"u32","value":0}}, ...], ...]
/// ```
///
/// `objType` is `Frontend`, `Backend` or `Server`; `proxyId` is `iid`; `id`
/// is `sid` (0 for frontends and backends); `field.pos` is the CSV column
/// (0-based) and `field.name` its CSV name; `value.type` is `str`, `u32`,
/// `s32` or `u64`. Empty CSV fields are left out, as HAProxy does.
pub fn json(snap: &Snapshot, out: &mut Vec<u8>) {
    out.push(b'[');
    let mut first_row = true;
    for_each_row(snap, |row| {
        if !first_row {
            out.push(b',');
        }
        first_row = false;
        out.push(b'[');
        let mut first = true;
        for (i, v) in row.vals.iter().enumerate() {
            if matches!(v, Val::Empty) {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            let (origin, nature, scope) = row.tags(i);
            let _ = write!(
                out,
                "{{\"objType\":\"{}\",\"proxyId\":{},\"id\":{},\"field\":{{\"pos\":{},\"name\":\"{}\"}},\"processNum\":1,\"tags\":{{\"origin\":\"{}\",\"nature\":\"{}\",\"scope\":\"{}\"}},\"value\":{{\"type\":\"{}\",\"value\":",
                row.obj.name(),
                row.iid,
                row.sid,
                i,
                FIELDS[i].name,
                origin,
                nature,
                scope,
                FIELDS[i].ty
            );
            match v {
                Val::Str(s) => json_str(out, s),
                Val::U(n) => {
                    let _ = write!(out, "{n}");
                }
                Val::I(n) => {
                    let _ = write!(out, "{n}");
                }
                Val::Empty => {}
            }
            out.extend_from_slice(b"}}");
        }
        out.push(b']');
    });
    out.push(b']');
}

/// Formats seconds as HAProxy's `0d 0h00m08s`.
pub fn format_uptime(secs: u64) -> String {
    format!(
        "{}d {}h{:02}m{:02}s",
        secs / 86400,
        (secs % 86400) / 3600,
        (secs % 3600) / 60,
        secs % 60
    )
}

/// Appends `show info` (`Key: value` lines, HAProxy's names and order for
/// the values Fairlead has; SSL, pipes, peers, compression are reported as
/// 0).
pub fn info(snap: &Snapshot, out: &mut Vec<u8>) {
    let p = &snap.process;
    let mut kv = |k: &str, v: &dyn std::fmt::Display| {
        let _ = writeln!(out, "{k}: {v}");
    };
    kv("Name", &p.name);
    kv("Version", &p.version);
    kv("Release_date", &p.release_date);
    kv("Nbthread", &p.nbthread);
    kv("Nbproc", &1);
    kv("Process_num", &1);
    kv("Pid", &p.pid);
    kv("Uptime", &format_uptime(p.uptime_secs));
    kv("Uptime_sec", &p.uptime_secs);
    kv("Memmax_MB", &(p.memmax_bytes >> 20));
    kv("PoolAlloc_MB", &(p.pool_alloc_bytes >> 20));
    kv("PoolUsed_MB", &(p.pool_used_bytes >> 20));
    kv("PoolFailed", &p.pool_failed);
    kv("Ulimit-n", &p.ulimit_n);
    kv("Maxsock", &p.maxsock);
    kv("Maxconn", &p.maxconn);
    kv("Hard_maxconn", &p.hard_maxconn);
    kv("CurrConns", &p.curr_conns);
    kv("CumConns", &p.cum_conns);
    kv("CumReq", &p.cum_req);
    for k in ["MaxSslConns", "CurrSslConns"] {
        kv(k, &0);
    }
    kv("CumSslConns", &p.cum_ssl_conns);
    kv("Maxpipes", &p.maxpipes);
    kv("PipesUsed", &p.pipes_used);
    kv("PipesFree", &p.pipes_free);
    kv("ConnRate", &p.conn_rate);
    kv("ConnRateLimit", &p.conn_rate_limit);
    kv("MaxConnRate", &p.conn_rate_max);
    kv("SessRate", &p.sess_rate);
    kv("SessRateLimit", &p.sess_rate_limit);
    kv("MaxSessRate", &p.sess_rate_max);
    for k in [
        "SslRate",
        "SslRateLimit",
        "MaxSslRate",
        "SslFrontendKeyRate",
        "SslFrontendMaxKeyRate",
    ] {
        kv(k, &0);
    }
    kv("SslFrontendSessionReuse_pct", &p.ssl_reuse_pct);
    for k in [
        "SslBackendKeyRate",
        "SslBackendMaxKeyRate",
        "SslCacheLookups",
        "SslCacheMisses",
        "CompressBpsIn",
        "CompressBpsOut",
        "CompressBpsRateLim",
    ] {
        kv(k, &0);
    }
    kv("Tasks", &p.tasks);
    kv("Run_queue", &p.run_queue);
    kv("Idle_pct", &p.idle_pct);
    kv("node", &p.node);
    if !p.description.is_empty() {
        kv("description", &p.description);
    }
    kv("Stopping", &u8::from(p.stopping));
    kv("Jobs", &p.jobs);
    kv("Unstoppable Jobs", &0);
    kv("Listeners", &p.listeners);
    for k in [
        "ActivePeers",
        "ConnectedPeers",
        "DroppedLogs",
        "BusyPolling",
        "FailedResolutions",
    ] {
        kv(k, &0);
    }
    kv("TotalBytesOut", &p.bytes_out_total);
    kv("TotalSplicdedBytesOut", &0);
    kv("BytesOutRate", &p.bytes_out_rate);
    kv("DebugCommandsIssued", &0);
    kv("CumRecvLogs", &0);
    kv("Build info", &p.version);
    kv("Memmax_bytes", &p.memmax_bytes);
    kv("PoolAlloc_bytes", &p.pool_alloc_bytes);
    kv("PoolUsed_bytes", &p.pool_used_bytes);
    kv("Start_time_sec", &p.start_time_secs);
    kv("Tainted", &0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quoting() {
        let mut o = Vec::new();
        csv_field(&mut o, "plain");
        o.push(b'|');
        csv_field(&mut o, "a,b");
        o.push(b'|');
        csv_field(&mut o, "say \"hi\"");
        assert_eq!(o, b"plain|\"a,b\"|\"say \"\"hi\"\"\"");
    }

    #[test]
    fn uptime_format() {
        assert_eq!(format_uptime(8), "0d 0h00m08s");
        assert_eq!(format_uptime(90061), "1d 1h01m01s");
    }

    #[test]
    fn json_escapes() {
        let mut o = Vec::new();
        json_str(&mut o, "a\"b\\c\n\u{1}é");
        assert_eq!(String::from_utf8(o).unwrap(), "\"a\\\"b\\\\c\\n\\u0001é\"");
    }
}
