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
/// Set in the environment of workers started by a master.
pub const WORKER_ENV: &str = "FAIRLEAD_WORKER";

/// Descriptors per listening address.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FdMap(pub HashMap<SocketAddr, Vec<RawFd>>);

impl FdMap {
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
        Ok(FdMap(map))
    }

    /// The inherited map of this process, if it was started by a master.
    pub fn from_env() -> Result<Option<FdMap>, String> {
        match std::env::var(LISTEN_FDS_ENV) {
            Ok(s) => FdMap::decode(&s).map(Some),
            Err(_) => Ok(None),
        }
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
}
