//! Listening sockets handed from the master to a worker across `exec`.
//!
//! The master binds every listening socket once and keeps it open for the
//! life of the process; each worker generation receives the same kernel
//! sockets (`nbthread` per address, one per worker thread) through
//! inherited descriptors listed in `FAIRLEAD_LISTEN_FDS`
//! (`addr=fd,fd;addr=fd,fd`). Because the sockets never close during a
//! reload, no connection attempt is refused: connections that reach the
//! accept queue while the old worker stops are accepted by the new one.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::fd::RawFd;

/// Environment variable carrying the inherited listeners.
pub const LISTEN_FDS_ENV: &str = "FAIRLEAD_LISTEN_FDS";
/// Environment variable carrying the descriptor on which a worker reports
/// that it is ready (one byte), then closes it.
pub const READY_FD_ENV: &str = "FAIRLEAD_READY_FD";
/// Set in the environment of workers started by a master: the master's
/// process id.
pub const WORKER_ENV: &str = "FAIRLEAD_WORKER";

/// Environment variable carrying the inherited listening sockets that are
/// not IP ones (UNIX sockets, `fd@`): `key=fd;key=fd`, the key being the
/// address as the configuration spells it (`unix@/path`, `abns@name`,
/// `fd@3`) with `%` and `;` escaped as `%25` and `%3B`.
pub const LISTEN_SOCKETS_ENV: &str = "FAIRLEAD_LISTEN_SOCKETS";

/// Descriptors per listening address (IP ones, several per address), and
/// per other listening socket (one each, see [`LISTEN_SOCKETS_ENV`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FdMap(
    pub HashMap<SocketAddr, Vec<RawFd>>,
    pub HashMap<String, RawFd>,
);

fn escape_key(k: &str) -> String {
    k.replace('%', "%25").replace(';', "%3B")
}

fn unescape_key(k: &str) -> String {
    k.replace("%3B", ";").replace("%25", "%")
}

impl FdMap {
    /// The [`LISTEN_SOCKETS_ENV`] value.
    pub fn encode_sockets(&self) -> String {
        let mut parts: Vec<String> = self
            .1
            .iter()
            .map(|(k, fd)| format!("{}={fd}", escape_key(k)))
            .collect();
        parts.sort();
        parts.join(";")
    }

    /// Reads a [`LISTEN_SOCKETS_ENV`] value into `self.1`.
    pub fn decode_sockets(&mut self, s: &str) -> Result<(), String> {
        for part in s.split(';').filter(|p| !p.is_empty()) {
            let (key, fd) = part
                .rsplit_once('=')
                .ok_or_else(|| format!("bad entry '{part}'"))?;
            let fd = fd
                .parse::<RawFd>()
                .map_err(|e| format!("bad fd '{fd}': {e}"))?;
            self.1.insert(unescape_key(key), fd);
        }
        Ok(())
    }

    pub fn encode(&self) -> String {
        let mut parts: Vec<String> = self
            .0
            .iter()
            .map(|(a, fds)| {
                let list: Vec<String> = fds.iter().map(|f| f.to_string()).collect();
                format!("{a}={}", list.join(","))
            })
            .collect();
        parts.sort();
        parts.join(";")
    }

    pub fn decode(s: &str) -> Result<FdMap, String> {
        let mut map = HashMap::new();
        for part in s.split(';').filter(|p| !p.is_empty()) {
            let (addr, fds) = part
                .rsplit_once('=')
                .ok_or_else(|| format!("bad entry '{part}'"))?;
            let addr: SocketAddr = addr
                .parse()
                .map_err(|e| format!("bad address '{addr}': {e}"))?;
            let fds = fds
                .split(',')
                .map(|f| f.parse::<RawFd>().map_err(|e| format!("bad fd '{f}': {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            map.insert(addr, fds);
        }
        Ok(FdMap(map, HashMap::new()))
    }

    /// The inherited map of this process, if it was started by a master.
    pub fn from_env() -> Result<Option<FdMap>, String> {
        let Ok(s) = std::env::var(LISTEN_FDS_ENV) else {
            return Ok(None);
        };
        let mut m = FdMap::decode(&s)?;
        if let Ok(s) = std::env::var(LISTEN_SOCKETS_ENV) {
            m.decode_sockets(&s)?;
        }
        Ok(Some(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut m = FdMap::default();
        m.0.insert("127.0.0.1:80".parse().unwrap(), vec![5, 6]);
        m.0.insert("[::1]:443".parse().unwrap(), vec![7]);
        let s = m.encode();
        assert_eq!(FdMap::decode(&s).unwrap(), m);
        assert!(FdMap::decode("nonsense").is_err());
        assert!(FdMap::decode("127.0.0.1:80=x").is_err());
        assert_eq!(FdMap::decode("").unwrap(), FdMap::default());
    }

    #[test]
    fn sockets_round_trip() {
        let mut m = FdMap::default();
        m.1.insert("unix@/run/a;b=c%d.sock".into(), 9);
        m.1.insert("fd@3".into(), 3);
        m.1.insert("abns@lb".into(), 10);
        let s = m.encode_sockets();
        assert_eq!(s, "abns@lb=10;fd@3=3;unix@/run/a%3Bb=c%25d.sock=9");
        let mut back = FdMap::default();
        back.decode_sockets(&s).unwrap();
        assert_eq!(back, m);
        assert!(back.decode_sockets("fd@3").is_err());
        assert!(back.decode_sockets("fd@3=x").is_err());
    }
}

/// Environment variable carrying the descriptor from which a worker reads
/// the configuration sources its master validated (so a file edited after
/// the master's check cannot reach a worker unchecked).
pub const CONFIG_FD_ENV: &str = "FAIRLEAD_CONFIG_FD";

/// Serializes configuration sources: per source, the name, a NUL, the text
/// length in decimal, a newline, then the text.
pub fn encode_sources(sources: &[fairlead_config::Source]) -> Vec<u8> {
    let mut out = Vec::new();
    for s in sources {
        out.extend_from_slice(s.name.as_bytes());
        out.push(0);
        out.extend_from_slice(format!("{}\n", s.text.len()).as_bytes());
        out.extend_from_slice(s.text.as_bytes());
    }
    out
}

/// Reverse of [`encode_sources`].
pub fn decode_sources(mut b: &[u8]) -> Result<Vec<fairlead_config::Source>, String> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let nul = b.iter().position(|&c| c == 0).ok_or("missing name end")?;
        let name = String::from_utf8_lossy(&b[..nul]).into_owned();
        b = &b[nul + 1..];
        let nl = b
            .iter()
            .position(|&c| c == b'\n')
            .ok_or("missing length end")?;
        let len: usize = std::str::from_utf8(&b[..nl])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or("bad length")?;
        b = &b[nl + 1..];
        if b.len() < len {
            return Err("truncated text".into());
        }
        let text = String::from_utf8(b[..len].to_vec()).map_err(|_| "text is not UTF-8")?;
        b = &b[len..];
        out.push(fairlead_config::Source { name, text });
    }
    Ok(out)
}

/// Reads the sources a master passed to this worker, if any.
pub fn sources_from_env() -> Option<Result<Vec<fairlead_config::Source>, String>> {
    use std::io::Read;
    let fd: i32 = std::env::var(CONFIG_FD_ENV).ok()?.parse().ok()?;
    let mut buf = Vec::new();
    let read = crate::os::unix_stream_from_fd(fd).and_then(|mut s| s.read_to_end(&mut buf));
    Some(
        read.map_err(|e| format!("cannot read the configuration from the master: {e}"))
            .and_then(|_| decode_sources(&buf)),
    )
}

#[cfg(test)]
mod source_tests {
    use super::*;

    #[test]
    fn sources_round_trip() {
        let s = vec![
            fairlead_config::Source {
                name: "a.cfg".into(),
                text: "global\n  maxconn 1\n".into(),
            },
            fairlead_config::Source {
                name: "b.cfg".into(),
                text: String::new(),
            },
        ];
        let back = decode_sources(&encode_sources(&s)).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].text, s[0].text);
        assert_eq!(back[1].name, "b.cfg");
        assert!(decode_sources(b"x\x005\nabc").is_err());
    }
}
