//! Health checks of Fairlead's servers, with HAProxy's behaviour: active
//! checks (`check`: TCP connect, `option httpchk`, `option tcp-check`), the
//! agent protocol (`agent-check`), passive checks (`observe`,
//! `error-limit`, `on-error`) and `slowstart`.
//!
//! # Integration
//!
//! * Each server has an [`Arc<ServerHealth>`]: the request path reads it
//!   with relaxed atomics ([`ServerHealth::is_up`],
//!   [`ServerHealth::is_drain`], [`ServerHealth::weight_pct`]) and reports
//!   passive observations to it ([`ServerHealth::observe`], with
//!   [`is_http_error_status`] to classify HTTP statuses for `observe
//!   layer7`).
//! * Servers with `check` or `agent-check` become [`CheckTarget`]s
//!   (see [`CheckTarget::from_server`]) and are handed to [`start`], which
//!   runs every check on one dedicated OS thread with its own tokio
//!   current-thread runtime. [`CheckerHandle`] stops it when dropped.
//! * On each change of `is_up`/`is_drain`/`weight_pct` (including each
//!   slowstart step) the target's `on_change` is called from the checker
//!   thread; on each change of the operational state the `log` callback of
//!   [`start`] receives a [`HealthEvent`], whose
//!   [`haproxy_line`](HealthEvent::haproxy_line) formats HAProxy's message
//!   once the backend supplies its server counts (which only it knows).
//!
//! # Semantics (HAProxy 2.6)
//!
//! * **Start.** A checked server starts up, but with its health counter at
//!   `rise`: the first failed check takes it down at once, while a first
//!   success raises it to full health (HAProxy's default initial state).
//!   [`ServerHealth::new(false)`](ServerHealth::new) starts it down
//!   instead, needing `rise` successes.
//! * **Counters.** The counter runs from 0 to `rise + fall - 1`; the server
//!   is up while it is at least `rise`. From full health `fall`
//!   consecutive failures take it down; from 0 `rise` consecutive successes
//!   bring it up.
//! * **Intervals.** `inter` at full health, `downinter` while down with
//!   the counter at 0, `fastinter` in between (and right after start).
//!   `spread-checks` changes every interval by a random amount within
//!   +/- that percentage; first checks are spread evenly over the smallest
//!   `inter` of all targets.
//! * **Timeouts.** Without `timeout check` a whole check must end within
//!   `inter`; with it the connection gets min(`timeout connect`, `inter`)
//!   and the response `timeout check` more.
//! * **Results.** TCP: `L4OK`, `L4TOUT`, `L4CON`. HTTP: 2xx/3xx (or the
//!   `http-check expect` rule, `!` negating it) give `L7OK`; a status
//!   rule that fails gives `L7STS`; a content rule (`string`, `rstring`,
//!   matched against the body) that fails, or a response that is not HTTP,
//!   gives `L7RSP`; no complete response in time gives `L7TOUT`. At most
//!   16384 response bytes are examined. tcp-check: rules run in order, an
//!   implicit connect comes first when the rules do not start with
//!   `connect`; `expect` reads until its pattern is found, the peer closes,
//!   16384 bytes are buffered or time runs out (with `min-recv N`: until N
//!   bytes, then it decides); a negated `expect` succeeds only once the
//!   peer closed (or the buffer is full) without the pattern; the buffer
//!   is emptied by each `connect` and `send`, so consecutive expects judge
//!   the same reply. The last rule decides the success status: `L7OK`
//!   after an expect or a send, `L4OK` (`L6OK` over TLS) after a connect.
//! * **HTTP/2.** `check-proto h2` (or `http-check connect proto h2`)
//!   makes `option httpchk` speak HTTP/2 with prior knowledge, in clear
//!   text or over TLS; with `check-alpn` and no protocol set, a TLS check
//!   whose ALPN negotiated `h2` does too (not the server's own `alpn`, as
//!   HAProxy 2.6). Same request, same `expect` judgement (a content
//!   failure has no code; an empty body is "HTTP content check could not
//!   find a response body"), no reason phrase for `L7STS`; a failure once
//!   connected (not HTTP/2, stream reset, GOAWAY, early close) is
//!   `SOCKERR`, as HAProxy. See `h2check.rs`.
//! * **Protocol checks** (`option mysql-check`, `pgsql-check`, `smtpchk`,
//!   `ldap-check`, `ssl-hello-chk`, `spop-check`) are rule lists with
//!   HAProxy 2.6's packets and reply parsers; see `docs/balancing.md`.
//! * **Connections.** SOCKS4 (`check-via-socks4`, `connect via-socks4`)
//!   first, then the PROXY header (`send-proxy` servers checked on their
//!   own port, `check-send-proxy`, `connect send-proxy`), then TLS. Checks
//!   end with a reset, except `connect linger` rules (the protocol checks
//!   use them) which end with a FIN.
//! * **Agent.** Every `agent-inter` (`spread-checks` applies) the agent is
//!   connected to, sent `agent-send` if any, and one line is read. Words
//!   are separated by spaces, tabs or commas, case-insensitive: `N%` sets
//!   the weight percentage (at most 25600), `up` counts a success and
//!   `down`/`fail`/`stopped` a failure of the agent's own rise/fall counter
//!   (so `fall` replies of `down` from full health take the server down
//!   and `rise` replies of `up` bring it back; the first `down` after start
//!   does it at once), `drain` sets weight 0 while staying up, `maint`
//!   puts the server in maintenance (down), `ready` ends drain and
//!   maintenance; `#` starts a description; `maxconn:N` and unknown words
//!   are ignored. An agent that cannot be reached, or says nothing,
//!   changes nothing: connectivity is the regular check's job.
//! * **Passive checks.** Only with an active check. `error-limit`
//!   consecutive errors trigger `on-error`: `fastinter` brings the next
//!   check forward; `fail-check` also counts one failed check;
//!   `sudden-death` leaves exactly one more failure before down;
//!   `mark-down` marks the server down at once. Every action brings the
//!   next check to `fastinter` from now, and only checks bring the server
//!   back up.
//! * **Slowstart.** After a recovery (never at start, as HAProxy), the
//!   weight percentage grows linearly from 1% to 100% of the agent's
//!   percentage over `slowstart`, in steps of `slowstart / 20` but at
//!   least 100 ms, each calling `on_change`.
//! * **Logs.** One [`HealthEvent`] per change of the operational state:
//!   `Server bk/s1 is DOWN, reason: Layer4 connection problem, info:
//!   "Connection refused", check duration: 0ms. 0 active and 0 backup
//!   servers left. 0 sessions active, 0 requeued, 0 remaining in queue.`
//!   Drain and weight changes are not logged. With `option
//!   log-health-checks` ([`CheckTarget::log_checks`]) every active check
//!   whose status or health counter changed is reported too, as HAProxy
//!   does (`Health check for server bk/s1 failed, reason: Layer4
//!   connection problem, info: "Connection refused", check duration: 0ms,
//!   status: 0/2 DOWN.`), and the state-change line that follows leaves
//!   the reason out (`Server bk/s1 is DOWN. 0 active and ...`).
#![forbid(unsafe_code)]

mod core;
mod event;
mod h2check;
mod health;
mod probe;
mod proto;
mod runner;
pub mod socks4;
mod tcpcheck;

pub use event::{CheckReport, CheckStatus, HealthEvent, Outcome};
pub use health::{is_http_error_status, ServerHealth};
pub use probe::CheckTls;

use fairlead_config as config;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Runs every protocol check's reply parser (MySQL packets, the LDAP bind
/// response, the SPOP AGENT-HELLO) on `data`, as a reply still growing
/// and as a final one, and returns how many passed. For the fuzz target
/// `fuzz/fuzz_targets/health_replies.rs`; never panics.
#[doc(hidden)]
pub fn fuzz_replies(data: &[u8]) -> usize {
    let mut passed = 0;
    for last in [false, true] {
        let verdicts = [
            proto::mysql_packet(data, 0, last),
            proto::mysql_after_handshake(data).map_or(proto::Verdict::Wait, |off| {
                proto::mysql_packet(data, off, last)
            }),
            proto::ldap_bind_response(data, last),
            proto::spop_agent_hello(data, last),
        ];
        passed += verdicts
            .iter()
            .filter(|v| **v == proto::Verdict::Pass)
            .count();
    }
    passed + proto::pgsql_error_text(data).len().min(1)
}

/// Feeds `data` to an HTTP/2 check's client connection as the server's
/// reply (cut in pieces of `split` bytes, the body read when
/// `need_body`) and returns the response status found. For the fuzz
/// target `fuzz/fuzz_targets/health_h2_reply.rs`; never panics.
#[doc(hidden)]
pub fn fuzz_h2_reply(data: &[u8], split: usize, need_body: bool) -> Option<u16> {
    h2check::feed(data, split, need_body)
}

/// The `log` callback of [`start`].
pub type LogFn = Arc<dyn Fn(HealthEvent) + Send + Sync>;

/// One server to check.
pub struct CheckTarget {
    /// Backend name, for events.
    pub backend: String,
    /// Server name, for events.
    pub server: String,
    /// Where active checks connect: the server's address with `addr` and
    /// `port` already applied by the caller.
    pub addr: SocketAddr,
    /// The backend's check (`option httpchk`, `tcp-check`, or a plain
    /// connect); `None` when the server has no `check` (an agent may still
    /// run). Default is `None`.
    pub check: Option<config::HealthCheck>,
    /// `inter`. Default is 2s.
    pub inter: Duration,
    /// `fastinter`. Default is `inter`.
    pub fastinter: Duration,
    /// `downinter`. Default is `inter`.
    pub downinter: Duration,
    /// `rise`. Default is 2.
    pub rise: u32,
    /// `fall`. Default is 3.
    pub fall: u32,
    /// `timeout connect`. Default is none (`inter` bounds it).
    pub connect_timeout: Option<Duration>,
    /// `timeout check`. Default is none (`inter` bounds the check).
    pub check_timeout: Option<Duration>,
    /// Agent address, `agent-inter` and `agent-send`. Default is none.
    pub agent: Option<(SocketAddr, Duration, Option<String>)>,
    /// `observe`. Default is none.
    pub observe: Option<config::Observe>,
    /// `error-limit`. Default is 10.
    pub error_limit: u32,
    /// `on-error`. Default is `fail-check`.
    pub on_error: config::OnError,
    /// `slowstart`. Default is none.
    pub slowstart: Option<Duration>,
    /// Shared state this target's checks write.
    pub health: Arc<ServerHealth>,
    /// Called from the checker thread on every change of `is_up`,
    /// `is_drain` or `weight_pct`, including each slowstart step (every
    /// `slowstart / 20`, at most every 100 ms). Default does nothing.
    pub on_change: Arc<dyn Fn() + Send + Sync>,
    /// TLS for the checks (not the agent). Default is none: clear text.
    pub tls: Option<CheckTls>,
    /// When `tls` is none: the TLS settings `tcp-check connect ssl` rules
    /// use (the server's `ssl` context). Default is none: such rules use
    /// a context that does not verify the server.
    pub rule_tls: Option<CheckTls>,
    /// Where active checks connect, asked before each check, for a server
    /// whose address changes at run time (DNS, the runtime API); `None`
    /// from it means the server has no address (added by name), and the
    /// check fails as `SOCKERR` without connecting, as HAProxy's does.
    /// Default is none: `addr`.
    pub addr_source: Option<Arc<dyn Fn() -> Option<SocketAddr> + Send + Sync>>,
    /// Called from the checker thread each time an active check cannot
    /// connect (`L4CON`, `L4TOUT`): HAProxy 2.6 asks its DNS to resolve
    /// the server's name again then, as the server may have moved.
    /// Default is none.
    pub on_connect_failure: Option<Arc<dyn Fn() + Send + Sync>>,
    /// `option log-health-checks`: an event ([`HealthEvent::report`]) for
    /// every active check whose status or health counter changed, and
    /// state-change lines without the reason. Default is false.
    pub log_checks: bool,
    /// The server is a `backup` one (named so in the lines). Default is
    /// false.
    pub backup: bool,
    /// PROXY protocol version the checks' connections start with (0:
    /// none; see `Server::check_proxy_header`). The header describes no
    /// client (`PROXY UNKNOWN`, v2 `LOCAL`), as HAProxy's checks. Default
    /// is 0.
    pub send_proxy: u8,
    /// The version a `tcp-check connect send-proxy` rule sends: the
    /// server's `send-proxy-v2` (2), else 1. Default is 1.
    pub proxy_version: u8,
    /// The server's `socks4` proxy. Default is none.
    pub socks4: Option<SocketAddr>,
    /// `check-via-socks4`: checks go through `socks4`. Default is false
    /// (only `tcp-check connect via-socks4` rules use it).
    pub via_socks4: bool,
    /// `check-proto`: `h2` makes HTTP checks speak HTTP/2 (prior
    /// knowledge in clear text, or over TLS), `h1` HTTP/1 whatever ALPN
    /// says; `http-check connect proto` takes precedence. Default is none:
    /// see `alpn_proto`.
    pub check_proto: Option<config::CheckProto>,
    /// The server has `check-alpn`: HTTP checks without a protocol speak
    /// HTTP/2 when TLS negotiated ALPN `h2`. Default is false: HTTP/1,
    /// even when the server's own `alpn` negotiates `h2` (HAProxy 2.6
    /// picks the protocol from ALPN only with `check-alpn`).
    pub alpn_proto: bool,
}

impl CheckTarget {
    /// A target with HAProxy's defaults (plain TCP check, inter 2s, rise 2,
    /// fall 3, error-limit 10, on-error fail-check).
    pub fn new(
        backend: impl Into<String>,
        server: impl Into<String>,
        addr: SocketAddr,
        health: Arc<ServerHealth>,
    ) -> Self {
        let inter = Duration::from_secs(2);
        CheckTarget {
            backend: backend.into(),
            server: server.into(),
            addr,
            check: Some(config::HealthCheck::Tcp),
            inter,
            fastinter: inter,
            downinter: inter,
            rise: 2,
            fall: 3,
            connect_timeout: None,
            check_timeout: None,
            agent: None,
            observe: None,
            error_limit: 10,
            on_error: config::OnError::FailCheck,
            slowstart: None,
            health,
            on_change: Arc::new(|| {}),
            tls: None,
            rule_tls: None,
            addr_source: None,
            on_connect_failure: None,
            log_checks: false,
            backup: false,
            send_proxy: 0,
            proxy_version: 1,
            socks4: None,
            via_socks4: false,
            check_proto: None,
            alpn_proto: false,
        }
    }

    /// Builds the target of a configured server whose address was resolved
    /// to `addr`; `None` when it has neither `check` nor `agent-check`.
    /// Applies `addr`/`port` (check address), `agent-addr` (default the
    /// server's address), `agent-inter` (default `inter`), and the
    /// defaults of `fastinter`/`downinter`.
    pub fn from_server(
        backend: &str,
        server: &config::Server,
        addr: SocketAddr,
        options: &config::ProxyOptions,
        health: Arc<ServerHealth>,
    ) -> Option<CheckTarget> {
        if !server.check && server.agent.is_none() {
            return None;
        }
        let check_addr = SocketAddr::new(
            server.check_addr.unwrap_or(addr.ip()),
            server.check_port.unwrap_or(addr.port()),
        );
        let agent = server.agent.as_ref().map(|a| {
            (
                SocketAddr::new(a.addr.unwrap_or(addr.ip()), a.port),
                a.inter.unwrap_or(server.inter),
                a.send.clone(),
            )
        });
        Some(CheckTarget {
            backend: backend.to_string(),
            server: server.name.clone(),
            addr: check_addr,
            check: server.check.then(|| options.health_check.clone()),
            inter: server.inter,
            fastinter: server.fastinter.unwrap_or(server.inter),
            downinter: server.downinter.unwrap_or(server.inter),
            rise: server.rise,
            fall: server.fall,
            connect_timeout: options.timeouts.connect,
            check_timeout: options.timeouts.check,
            agent,
            observe: server.observe,
            error_limit: server.error_limit,
            on_error: server.on_error,
            slowstart: server.slowstart,
            health,
            on_change: Arc::new(|| {}),
            tls: None,
            rule_tls: None,
            addr_source: None,
            on_connect_failure: None,
            log_checks: options.log.health_checks,
            backup: server.backup,
            send_proxy: server.check_proxy_header(),
            proxy_version: server.send_proxy.max(1),
            socks4: server.socks4,
            via_socks4: server.check_via_socks4 && server.socks4.is_some(),
            check_proto: server.check_proto,
            alpn_proto: server.check_alpn.is_some(),
        })
    }
}

/// Running checker thread. Dropping it, or [`stop`](Self::stop), ends the
/// thread (waiting for callbacks in progress).
pub struct CheckerHandle {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl CheckerHandle {
    /// Stops every check and waits for the thread to end.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

impl Drop for CheckerHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Runs the checks of `targets` on one dedicated OS thread with its own
/// tokio current-thread runtime. `spread_checks` is the global
/// `spread-checks` percentage (0..=50, larger values count as 50; default
/// in the configuration is 0: no randomisation); first
/// checks are spread evenly over the smallest `inter` so that they never
/// all fire at once. `log` receives one [`HealthEvent`] per change of a
/// server's operational state.
pub fn start(
    targets: Vec<CheckTarget>,
    spread_checks: u32,
    log: LogFn,
) -> std::io::Result<CheckerHandle> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let spread = spread_checks.min(50);
    // Status "INI" and passive observation are visible as soon as start()
    // returns.
    for t in &targets {
        if t.check.is_some() {
            t.health.set_status(CheckStatus::Ini.name().to_string());
            let h = if t.health.is_up() { t.rise.max(1) } else { 0 };
            t.health.set_check_health(h);
            if t.observe.is_some() {
                t.health.enable_observe(t.error_limit);
            }
        }
    }
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("fairlead-health".into())
        .spawn(move || {
            let local = tokio::task::LocalSet::new();
            local.block_on(&rt, async move {
                let rng = Rc::new(runner::Rng::new());
                let checked = targets.iter().filter(|t| t.check.is_some()).count().max(1);
                let agents = targets.iter().filter(|t| t.agent.is_some()).count().max(1);
                let min_inter = targets
                    .iter()
                    .filter(|t| t.check.is_some())
                    .map(|t| t.inter)
                    .min()
                    .unwrap_or_default();
                let (mut ci, mut ai) = (0u32, 0u32);
                for t in targets {
                    let first = min_inter * ci / checked as u32;
                    let first_agent = t
                        .agent
                        .as_ref()
                        .map_or(Duration::ZERO, |a| a.1 * ai / agents as u32);
                    ci += t.check.is_some() as u32;
                    ai += t.agent.is_some() as u32;
                    let task = runner::Task::new(t, log.clone(), spread, rng.clone());
                    task.spawn(first, first_agent);
                }
                let _ = rx.await;
            });
        })?;
    Ok(CheckerHandle {
        stop: Some(tx),
        thread: Some(thread),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_from_server() {
        let addr: SocketAddr = "10.0.0.1:80".parse().unwrap();
        let mut s = config::Server::new("s1", config::ServerAddr::Ip(addr));
        let mut o = config::ProxyOptions::default();
        let health = Arc::new(ServerHealth::new(true));
        assert!(CheckTarget::from_server("bk", &s, addr, &o, health.clone()).is_none());
        s.check = true;
        s.check_port = Some(8080);
        s.fastinter = Some(Duration::from_millis(500));
        s.agent = Some(config::AgentCheck {
            port: 9999,
            addr: None,
            inter: None,
            send: Some("hi\n".into()),
        });
        o.timeouts.check = Some(Duration::from_secs(1));
        o.health_check = config::HealthCheck::Http(config::HttpCheck::default());
        let t = CheckTarget::from_server("bk", &s, addr, &o, health).unwrap();
        assert_eq!(t.addr, "10.0.0.1:8080".parse().unwrap());
        assert_eq!(
            (t.inter, t.fastinter, t.downinter),
            (s.inter, Duration::from_millis(500), s.inter)
        );
        assert_eq!(t.check, Some(o.health_check.clone()));
        assert_eq!(t.check_timeout, Some(Duration::from_secs(1)));
        let (aaddr, ainter, send) = t.agent.unwrap();
        assert_eq!(aaddr, "10.0.0.1:9999".parse().unwrap());
        assert_eq!((ainter, send.as_deref()), (s.inter, Some("hi\n")));
        s.check = false;
        let h = Arc::new(ServerHealth::new(true));
        assert!(CheckTarget::from_server("bk", &s, addr, &o, h)
            .unwrap()
            .check
            .is_none());
    }
}
