//! The server-state file format (`show servers state`, version 1), as
//! `load-server-state-from-file` reads it: the version line, a `#` header,
//! one server per line. Only the fields Fairlead restores are kept.

use std::net::IpAddr;

/// One server line of a state file (version 1), the fields Fairlead uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedServer {
    pub backend: String,
    pub server: String,
    pub addr: Option<IpAddr>,
    /// `srv_op_state`: 0 stopped, 1 starting, 2 running, 3 stopping.
    /// Default is 2 when the field does not parse.
    pub op_state: u8,
    /// `srv_time_since_last_change`, in seconds (0 when it does not
    /// parse).
    pub since_change: u64,
    pub admin_state: u8,
    pub uweight: u32,
    pub iweight: u32,
    pub port: u16,
}

/// Parses a state file: the version line (`1`), then a server per line;
/// `#` lines are comments. Lines that do not parse are skipped.
pub fn parse(text: &str) -> Result<Vec<SavedServer>, String> {
    let mut lines = text.lines();
    match lines.next().map(str::trim) {
        Some("1") => {}
        Some(v) => return Err(format!("unknown version '{v}'")),
        None => return Err("empty file".into()),
    }
    let mut out = Vec::new();
    for line in lines {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let get = |i: usize| f.get(i).copied().unwrap_or("");
        let (Ok(admin_state), Ok(uweight), Ok(iweight)) = (
            get(6).parse::<u8>(),
            get(7).parse::<u32>(),
            get(8).parse::<u32>(),
        ) else {
            continue;
        };
        out.push(SavedServer {
            backend: get(1).to_string(),
            server: get(3).to_string(),
            addr: get(4).parse().ok(),
            op_state: get(5).parse().unwrap_or(2),
            since_change: get(9).parse().unwrap_or(0),
            admin_state,
            uweight,
            iweight,
            port: get(18).parse().unwrap_or(0),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n\
2 rr 1 a 127.0.0.9 2 0 1 1 4 1 0 2 0 0 0 0 - 9999 - 0 0 - - 0\n\
2 rr 2 b 127.0.0.1 2 8 3 5 1 1 0 2 0 0 0 0 - 8002 - 0 0 - - 0\n\
2 rr 6 h - 0 1 1 1 15 1 0 0 0 0 0 0 - 0 - 0 0 - - 0\n\
garbage\n";

    #[test]
    fn parses_haproxy_dumps() {
        let v = parse(FILE).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(
            v[0],
            SavedServer {
                backend: "rr".into(),
                server: "a".into(),
                addr: Some("127.0.0.9".parse().unwrap()),
                op_state: 2,
                since_change: 4,
                admin_state: 0,
                uweight: 1,
                iweight: 1,
                port: 9999,
            }
        );
        assert_eq!((v[1].admin_state, v[1].uweight, v[1].iweight), (8, 3, 5));
        assert_eq!((v[2].addr, v[2].port), (None, 0));
        assert_eq!((v[2].op_state, v[2].since_change), (0, 15));
        assert_eq!(parse("2\n").unwrap_err(), "unknown version '2'");
        assert!(parse("").is_err());
    }
}
