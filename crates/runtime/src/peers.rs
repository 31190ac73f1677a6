//! Starts the `peers` sections' sync tasks (see `fairlead-peers`): one
//! thread per section, with the section's own tables and the proxies'
//! tables that name it with `peers`.

use fairlead_config::Config;

/// Starts every enabled section that has a line for the local peer
/// (`-L`, `localpeer`, else the host name). Returns their handles, for
/// the hand-over on a soft stop.
pub(crate) fn start(
    cfg: &Config,
    shared: &crate::Shared,
    quiet: bool,
) -> Vec<fairlead_peers::Handle> {
    let local = cfg
        .global
        .localpeer
        .clone()
        .unwrap_or_else(fairlead_peers::default_local_name);
    let mut started = Vec::new();
    for sec in &cfg.peers {
        let tables = shared
            .tables
            .iter()
            .filter(|t| t.spec().peers.as_deref() == Some(sec.name.as_str()))
            .cloned()
            .collect();
        let setup = fairlead_peers::Setup {
            section: sec.clone(),
            local: local.clone(),
            tables,
            now: crate::stick_now,
            quiet,
        };
        started.extend(fairlead_peers::start(setup));
    }
    started
}
