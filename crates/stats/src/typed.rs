//! HAProxy's typed output (management guide, "show info" and "show stat"
//! in section 9.3): one field per line, with its position, origin, nature,
//! scope and type.
//!
//! - `show stat typed`:
//!   `<obj>.<px_id>.<id>.<fpos>.<fname>.<process_num>:<tags>:<type>:<value>`,
//!   e.g. `F.2.0.0.pxname.1:KNS:str:fe`, empty fields left out, the lines
//!   of one object contiguous.
//! - `show info typed`: `<field_pos>.<field_name>.<process_num>:<tags>:<type>:<value>`,
//!   e.g. `0.Name.1:POS:str:HAProxy`, with HAProxy 2.6's positions (holes
//!   where it has them).
//!
//! The tags are three letters: origin (`K`ey, `C`onfig, `M`etric,
//! `S`tatus, `P`roduct), nature (`N`ame, `G`auge, `M`ax, `L`imit,
//! `C`ounter, `a`vg, `A`ge, `R`ate, `O`utput, `D`uration) and scope
//! (`S`ervice, `P`rocess).

use crate::fields::{for_each_row, Val, FIELDS};
use crate::model::Snapshot;
use std::io::Write;

/// The letter HAProxy prints for an origin, nature or scope word.
fn letter(word: &str) -> char {
    match word {
        "Key" => 'K',
        "Config" => 'C',
        "Metric" => 'M',
        "Status" => 'S',
        "Product" => 'P',
        "Name" => 'N',
        "Gauge" => 'G',
        "Max" => 'M',
        "Limit" => 'L',
        "Counter" => 'C',
        "Avg" => 'a',
        "Age" => 'A',
        "Rate" => 'R',
        "Output" => 'O',
        "Duration" => 'D',
        "Service" => 'S',
        "Process" => 'P',
        _ => '?',
    }
}

/// Appends `show stat typed`.
pub fn stat_typed(snap: &Snapshot, out: &mut Vec<u8>) {
    for_each_row(snap, |row| {
        let obj = row.obj.name().chars().next().unwrap_or('?');
        for (i, v) in row.vals.iter().enumerate() {
            if matches!(v, Val::Empty) {
                continue;
            }
            let (o, n, s) = row.tags(i);
            let _ = write!(
                out,
                "{obj}.{}.{}.{i}.{}.1:{}{}{}:{}:",
                row.iid,
                row.sid,
                FIELDS[i].name,
                letter(o),
                letter(n),
                letter(s),
                FIELDS[i].ty
            );
            match v {
                Val::Str(s) => out.extend_from_slice(s.as_bytes()),
                Val::U(n) => {
                    let _ = write!(out, "{n}");
                }
                Val::I(n) => {
                    let _ = write!(out, "{n}");
                }
                Val::Empty => {}
            }
            out.push(b'\n');
        }
    });
}

/// HAProxy 2.6's `show info` fields: name, position, tags, type (from
/// HAProxy 2.6.12's `show info typed`).
const INFO: &[(&str, u16, &str, &str)] = &[
    ("Name", 0, "POS", "str"),
    ("Version", 1, "POS", "str"),
    ("Release_date", 2, "POS", "str"),
    ("Nbthread", 3, "CGS", "u32"),
    ("Nbproc", 4, "CGS", "u32"),
    ("Process_num", 5, "KGP", "u32"),
    ("Pid", 6, "SGP", "u32"),
    ("Uptime", 7, "MDP", "str"),
    ("Uptime_sec", 8, "MDP", "u32"),
    ("Memmax_MB", 9, "CLP", "u32"),
    ("PoolAlloc_MB", 10, "MGP", "u32"),
    ("PoolUsed_MB", 11, "MGP", "u32"),
    ("PoolFailed", 12, "MCP", "u32"),
    ("Ulimit-n", 13, "CLP", "u32"),
    ("Maxsock", 14, "CLP", "u32"),
    ("Maxconn", 15, "CLP", "u32"),
    ("Hard_maxconn", 16, "CLP", "u32"),
    ("CurrConns", 17, "MGP", "u32"),
    ("CumConns", 18, "MCP", "u32"),
    ("CumReq", 19, "MCP", "u32"),
    ("MaxSslConns", 20, "MMP", "u32"),
    ("CurrSslConns", 21, "MGP", "u32"),
    ("CumSslConns", 22, "MCP", "u32"),
    ("Maxpipes", 23, "CLP", "u32"),
    ("PipesUsed", 24, "MGP", "u32"),
    ("PipesFree", 25, "MGP", "u32"),
    ("ConnRate", 26, "MRP", "u32"),
    ("ConnRateLimit", 27, "CLP", "u32"),
    ("MaxConnRate", 28, "MMP", "u32"),
    ("SessRate", 29, "MRP", "u32"),
    ("SessRateLimit", 30, "CLP", "u32"),
    ("MaxSessRate", 31, "MRP", "u32"),
    ("SslRate", 32, "MRP", "u32"),
    ("SslRateLimit", 33, "CLP", "u32"),
    ("MaxSslRate", 34, "MMP", "u32"),
    ("SslFrontendKeyRate", 35, "MGP", "u32"),
    ("SslFrontendMaxKeyRate", 36, "MMP", "u32"),
    ("SslFrontendSessionReuse_pct", 37, "MGP", "u32"),
    ("SslBackendKeyRate", 38, "MRP", "u32"),
    ("SslBackendMaxKeyRate", 39, "MMP", "u32"),
    ("SslCacheLookups", 40, "MCP", "u32"),
    ("SslCacheMisses", 41, "MCP", "u32"),
    ("CompressBpsIn", 42, "MRP", "u32"),
    ("CompressBpsOut", 43, "MRP", "u32"),
    ("CompressBpsRateLim", 44, "CLP", "u32"),
    ("Tasks", 47, "MGP", "u32"),
    ("Run_queue", 48, "MGP", "u32"),
    ("Idle_pct", 49, "MaP", "u32"),
    ("node", 50, "COS", "str"),
    ("description", 51, "COS", "str"),
    ("Stopping", 52, "MGP", "u32"),
    ("Jobs", 53, "MGP", "u32"),
    ("Unstoppable Jobs", 54, "MGP", "u32"),
    ("Listeners", 55, "MGP", "u32"),
    ("ActivePeers", 56, "MGP", "u32"),
    ("ConnectedPeers", 57, "MGP", "u32"),
    ("DroppedLogs", 58, "MGP", "u32"),
    ("BusyPolling", 59, "MGP", "u32"),
    ("FailedResolutions", 60, "MGP", "u32"),
    ("TotalBytesOut", 61, "MGP", "u64"),
    ("TotalSplicdedBytesOut", 62, "MGP", "u64"),
    ("BytesOutRate", 63, "MRP", "u64"),
    ("DebugCommandsIssued", 64, "MGP", "u32"),
    ("CumRecvLogs", 65, "MCP", "u32"),
    ("Build info", 66, "POS", "str"),
    ("Memmax_bytes", 67, "CLP", "u32"),
    ("PoolAlloc_bytes", 68, "MGP", "u64"),
    ("PoolUsed_bytes", 69, "MGP", "u64"),
    ("Start_time_sec", 70, "MDP", "u32"),
    ("Tainted", 71, "SGP", "str"),
];

/// Appends `show info typed`, from the same values as [`crate::info`].
pub fn info_typed(snap: &Snapshot, out: &mut Vec<u8>) {
    let mut plain = Vec::new();
    crate::stat::info(snap, &mut plain);
    info_typed_from(&String::from_utf8_lossy(&plain), out);
}

/// The typed form of `Key: value` lines; keys HAProxy does not have are
/// left out.
pub fn info_typed_from(plain: &str, out: &mut Vec<u8>) {
    for line in plain.lines() {
        let Some((k, v)) = line.split_once(": ") else {
            continue;
        };
        if let Some((name, pos, tags, ty)) = INFO.iter().find(|(n, ..)| *n == k) {
            let _ = writeln!(out, "{pos}.{name}.1:{tags}:{ty}:{v}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_lines_as_haproxy() {
        let mut out = Vec::new();
        info_typed_from(
            "Name: Fairlead\nPid: 42\nUptime: 0d 0h00m08s\nnode: lb1\nBogus: 1\nTotalBytesOut: 7\nTainted: 0\n",
            &mut out,
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "0.Name.1:POS:str:Fairlead\n6.Pid.1:SGP:u32:42\n7.Uptime.1:MDP:str:0d 0h00m08s\n\
             50.node.1:COS:str:lb1\n61.TotalBytesOut.1:MGP:u64:7\n71.Tainted.1:SGP:str:0\n"
        );
    }

    #[test]
    fn letters() {
        let s: String = ["Key", "Name", "Service", "Metric", "Avg", "Process", "Age"]
            .iter()
            .map(|w| letter(w))
            .collect();
        assert_eq!(s, "KNSMaPA");
    }
}
