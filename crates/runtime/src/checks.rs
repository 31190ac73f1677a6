//! Starts the health checker for every server with `check` or
//! `agent-check`, feeding state changes back to the balancers and logging
//! them in HAProxy's format.

use crate::Shared;
use fairlead_config::Config;
use fairlead_health::{CheckTarget, CheckerHandle, HealthEvent};
use std::sync::Arc;

/// Starts the checker thread; `None` when no server is checked.
pub(crate) fn start(cfg: &Config, shared: &Shared) -> std::io::Result<Option<CheckerHandle>> {
    let mut targets = Vec::new();
    for (bcfg, be) in cfg.backends.iter().zip(&shared.backends) {
        for (scfg, srv) in bcfg.servers.iter().zip(&be.servers) {
            let Some(mut t) = CheckTarget::from_server(
                &be.name,
                scfg,
                **srv.addr.load(),
                &bcfg.options,
                srv.health.clone(),
            ) else {
                continue;
            };
            let weak = Arc::downgrade(be);
            t.on_change = Arc::new(move || {
                if let Some(b) = weak.upgrade() {
                    b.refresh_weights();
                }
            });
            targets.push(t);
        }
    }
    if targets.is_empty() {
        return Ok(None);
    }
    let backends = shared.backends.clone();
    let log = Arc::new(move |ev: HealthEvent| {
        let Some(b) = backends.iter().find(|b| b.name == ev.backend) else {
            return;
        };
        let (active, backup) = b.usable_counts();
        let sessions = b
            .servers
            .iter()
            .find(|s| s.name == ev.server)
            .map_or(0, |s| {
                s.cur.load(std::sync::atomic::Ordering::Relaxed) as usize
            });
        let level = if ev.up { "[WARNING] " } else { "[ALERT]   " };
        let line = ev.haproxy_line_full(active, backup, sessions, 0, b.queue.len());
        eprintln!("{level} {line}");
    });
    fairlead_health::start(targets, cfg.global.spread_checks, log).map(Some)
}
