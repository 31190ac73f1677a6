//! The `peers` section: `peer`, `bind`, `server`, `table`, `disabled`.

use std::net::{SocketAddr, ToSocketAddrs};

use fairlead_stick::TableSpec;

/// A message about a configuration line: `(line, text)`.
pub type LineMsg = (usize, String);

/// One peer of a `peers` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerDef {
    /// The peer's name (compared with the local peer name).
    pub name: String,
    /// Its address; `None` for a `server NAME` line without one (the local
    /// peer in the `bind` form).
    pub addr: Option<SocketAddr>,
    /// Configuration line, for messages.
    pub line: usize,
}

/// A parsed `peers NAME` section.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PeersSection {
    /// The section name.
    pub name: String,
    /// `disabled`: nothing is synchronised. Default is false.
    pub disabled: bool,
    /// `peer` and `server` lines in order. Default is none.
    pub peers: Vec<PeerDef>,
    /// `bind ADDR:PORT`: the local peer's listener in the 2.x form.
    /// Default is none (the local `peer` line's address is used).
    pub bind: Option<SocketAddr>,
    /// `table NAME ...` lines, named `SECTION/NAME`. Default is none.
    pub tables: Vec<TableSpec>,
}

fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    let s = s
        .strip_prefix("ipv4@")
        .or_else(|| s.strip_prefix("ipv6@"))
        .unwrap_or(s);
    s.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("invalid address: '{s}'"))
}

impl PeersSection {
    /// Parses the section's lines (words already split, with their line
    /// numbers). Returns the section and warnings, or the errors.
    pub fn parse(
        name: &str,
        lines: &[(usize, Vec<String>)],
    ) -> Result<(PeersSection, Vec<LineMsg>), Vec<LineMsg>> {
        let mut s = PeersSection {
            name: name.to_string(),
            ..Default::default()
        };
        let (mut errs, mut warns) = (Vec::new(), Vec::new());
        for (line, words) in lines {
            let w: Vec<&str> = words.iter().map(String::as_str).collect();
            match w.as_slice() {
                ["disabled"] => s.disabled = true,
                ["enabled"] => s.disabled = false,
                ["peer" | "server", n, rest @ ..] => {
                    let addr = match rest.first() {
                        Some(a) if w[0] == "peer" || !a.is_empty() => match parse_addr(a) {
                            Ok(a) => Some(a),
                            Err(e) => {
                                errs.push((*line, format!("'{}' {n}: {e}", w[0])));
                                continue;
                            }
                        },
                        _ => None,
                    };
                    if w[0] == "peer" && addr.is_none() {
                        errs.push((*line, format!("'peer' {n}: missing address")));
                        continue;
                    }
                    if s.peers.iter().any(|p| p.name == *n) {
                        errs.push((*line, format!("peer '{n}' is declared twice")));
                        continue;
                    }
                    s.peers.push(PeerDef {
                        name: n.to_string(),
                        addr,
                        line: *line,
                    });
                }
                ["bind", a, ..] => match parse_addr(a) {
                    Ok(a) => s.bind = Some(a),
                    Err(e) => errs.push((*line, format!("'bind': {e}"))),
                },
                ["table", t, args @ ..] => {
                    let full = format!("{name}/{t}");
                    match TableSpec::parse(&full, args, true) {
                        Ok((mut spec, ws)) => {
                            spec.peers = Some(name.to_string());
                            warns.extend(ws.into_iter().map(|w| (*line, w)));
                            s.tables.push(spec);
                        }
                        Err(e) => errs.push((*line, format!("'table' {t}: {e}"))),
                    }
                }
                [kw, ..] => warns.push((*line, format!("'{kw}' in a 'peers' section is ignored"))),
                [] => {}
            }
        }
        if errs.is_empty() {
            Ok((s, warns))
        } else {
            Err(errs)
        }
    }

    /// The address the local peer named `local` listens on: its `peer`
    /// line's address, else the `bind` address when a `server` line names
    /// it. `None` when no line names it (HAProxy then removes the section).
    pub fn listen_addr(&self, local: &str) -> Option<SocketAddr> {
        let me = self.peers.iter().find(|p| p.name == local)?;
        me.addr.or(self.bind)
    }

    /// The remote peers (every peer but `local`) that have an address.
    pub fn remotes<'a>(&'a self, local: &'a str) -> impl Iterator<Item = &'a PeerDef> + 'a {
        self.peers
            .iter()
            .filter(move |p| p.name != local && p.addr.is_some())
    }

    /// The name a table has on the wire: HAProxy 2.6 names a table of a
    /// `peers` section by what follows the section name (`/t` for
    /// `mesh/t`), and a proxy's table by the proxy name.
    pub fn wire_name(table: &str, section: &str) -> String {
        match table.strip_prefix(section) {
            Some(rest) if rest.starts_with('/') => rest.to_string(),
            _ => table.to_string(),
        }
    }
}
