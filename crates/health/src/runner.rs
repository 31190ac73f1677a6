//! The checker thread: one tokio current-thread runtime, and per server a
//! task for the active check, one for the agent, one for passive
//! observations and, after each recovery, one for the slowstart ramp.

use crate::core::Core;
use crate::event::{CheckReport, CheckStatus, HealthEvent, Outcome};
use crate::probe::{agent_check, ConnOpts, Limits, Probe};
use crate::{CheckTarget, LogFn};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::task::spawn_local;
use tokio::time::{sleep, sleep_until, Instant};

/// Shortest step of the slowstart ramp.
const MIN_RAMP_STEP: Duration = Duration::from_millis(100);
/// Number of steps of the slowstart ramp (when each is at least
/// [`MIN_RAMP_STEP`]).
const RAMP_STEPS: u32 = 20;

/// Small xorshift generator for `spread-checks`; checks need no better.
pub(crate) struct Rng(Cell<u64>);

impl Rng {
    pub(crate) fn new() -> Rng {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let seed = t ^ (&t as *const u64 as u64).rotate_left(32) ^ 0x9E37_79B9_7F4A_7C15;
        Rng(Cell::new(seed | 1))
    }

    /// Uniform in [0, 1).
    fn next_f64(&self) -> f64 {
        let mut x = self.0.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `d` changed by a random amount within +/- `pct` percent.
    pub(crate) fn spread(&self, d: Duration, pct: u32) -> Duration {
        if pct == 0 {
            return d;
        }
        let f = 1.0 + (pct.min(50) as f64 / 100.0) * (2.0 * self.next_f64() - 1.0);
        d.mul_f64(f)
    }
}

pub(crate) struct Task {
    t: CheckTarget,
    probe: Option<Probe>,
    limits: Limits,
    core: RefCell<Core>,
    next_check: Cell<Instant>,
    wake: Notify,
    ramp_gen: Cell<u64>,
    log: LogFn,
    spread: u32,
    rng: Rc<Rng>,
    /// The status of the previous active check (`option
    /// log-health-checks` reports a check whose status changed).
    last_status: Cell<CheckStatus>,
}

impl Task {
    pub(crate) fn new(t: CheckTarget, log: LogFn, spread: u32, rng: Rc<Rng>) -> Rc<Task> {
        let mut core = Core::new(
            t.health.is_up(),
            t.check.is_some(),
            t.agent.is_some(),
            t.rise,
            t.fall,
            t.slowstart,
        );
        // A server restored as stopping stays NOLB until a check says
        // otherwise, as HAProxy restores it.
        core.nolb = t.health.is_nolb();
        let limits = Limits {
            inter: t.inter,
            connect: t.connect_timeout,
            check: t.check_timeout,
        };
        Rc::new(Task {
            probe: t.check.as_ref().map(Probe::compile),
            limits,
            core: RefCell::new(core),
            next_check: Cell::new(Instant::now()),
            wake: Notify::new(),
            ramp_gen: Cell::new(0),
            log,
            spread,
            rng,
            last_status: Cell::new(CheckStatus::Ini),
            t,
        })
    }

    /// Spawns this server's tasks; `first` and `first_agent` delay the
    /// first active and agent checks.
    pub(crate) fn spawn(self: &Rc<Self>, first: Duration, first_agent: Duration) {
        if self.probe.is_some() {
            spawn_local(self.clone().check_loop(first));
            if self.t.observe.is_some() {
                spawn_local(self.clone().passive_loop());
            }
        }
        if self.t.agent.is_some() {
            spawn_local(self.clone().agent_loop(first_agent));
        }
    }

    /// Publishes the core's state after a change caused by `cause`: logs
    /// an event when the operational state changed, starts or stops the
    /// slowstart ramp, calls `on_change` when anything visible changed.
    fn commit(self: &Rc<Self>, cause: &Outcome, was_maint: bool) {
        let now = Instant::now().into_std();
        let (up, drain, nolb, pct, event, ramp) = {
            let mut c = self.core.borrow_mut();
            let up = c.is_up();
            if !up {
                // A stopping server that fails is down; it comes back up
                // (not NOLB) on a passing check.
                c.nolb = false;
            }
            let was_nolb = self.t.health.is_nolb();
            let was_up = c.published_up;
            let mut ramp = false;
            if up && !was_up && c.slowstart.is_some_and(|d| !d.is_zero()) {
                c.ramp_since = Some(now);
                ramp = true;
            }
            if !up {
                c.ramp_since = None;
            }
            c.published_up = up;
            if let Some(h) = c.check {
                self.t.health.set_check_health(h.health);
            }
            // Entering or leaving NOLB while up is logged too ("is
            // stopping", then "is UP"), as HAProxy does.
            let nolb_moved = up && was_up && c.nolb != was_nolb;
            let event = (up != was_up || nolb_moved).then(|| {
                let maint = c.maint != was_maint;
                let mut e = HealthEvent::new(&self.t.backend, &self.t.server, up, maint, cause);
                e.stopping = up && c.nolb;
                e.backup = self.t.backup;
                e.brief = self.t.log_checks;
                e
            });
            (up, c.drain, c.nolb, c.weight_pct(now), event, ramp)
        };
        if self.t.health.publish(up, drain, nolb, pct) {
            (self.t.on_change)();
        }
        // After publishing: the line counts the servers left without it.
        if let Some(e) = event {
            (self.log)(e);
        }
        if ramp {
            self.ramp_gen.set(self.ramp_gen.get() + 1);
            spawn_local(self.clone().ramp_loop(self.ramp_gen.get()));
        }
    }

    fn maint(&self) -> bool {
        self.core.borrow().maint
    }

    async fn check_loop(self: Rc<Self>, first: Duration) {
        let Some(probe) = &self.probe else { return };
        self.next_check.set(Instant::now() + first);
        loop {
            // Wait for the next check; passive errors may bring it closer.
            loop {
                let at = self.next_check.get();
                if Instant::now() >= at {
                    break;
                }
                tokio::select! {
                    _ = sleep_until(at) => {}
                    _ = self.wake.notified() => {}
                }
            }
            let addr = self
                .t
                .addr_source
                .as_ref()
                .map_or(Some(self.t.addr), |f| f());
            let opts = ConnOpts {
                tls: self.t.tls.clone(),
                rule_tls: self.t.rule_tls.clone(),
                proxy: self.t.send_proxy,
                proxy_version: self.t.proxy_version,
                socks4: self.t.socks4.filter(|_| self.t.via_socks4),
                socks4_server: self.t.socks4,
                linger: false,
                proto: self.t.check_proto,
                alpn_proto: self.t.alpn_proto,
            };
            let mut o = match addr {
                Some(addr) => probe.run(addr, &self.limits, &opts).await,
                None => Outcome::new(CheckStatus::SockErr, Duration::ZERO),
            };
            if let (CheckStatus::L4Con | CheckStatus::L4Tout, Some(f)) =
                (o.status, &self.t.on_connect_failure)
            {
                f();
            }
            // `disable-on-404`: a 404 from an UP server is a conditional
            // pass (NOLB); a DOWN server stays down on 404s.
            if probe.disable_404() && o.code == Some(404) && self.core.borrow().published_up {
                o.status = crate::event::CheckStatus::L7OkCd;
                o.info = None;
            }
            self.t.health.set_status(o.status_text());
            let was_maint = self.maint();
            let report = {
                let mut core = self.core.borrow_mut();
                let drain = core.drain;
                let report = core.check.as_mut().and_then(|c| {
                    let before = c.health;
                    if o.status.is_ok() {
                        c.success();
                    } else {
                        c.failure();
                    }
                    let changed = before != c.health || self.last_status.get() != o.status;
                    let state = match (c.is_up(), drain) {
                        (false, _) => "DOWN",
                        (true, true) => "DRAIN",
                        (true, false) => "UP",
                    };
                    changed.then(|| CheckReport {
                        shown: c.shown(),
                        state,
                    })
                });
                match o.status {
                    crate::event::CheckStatus::L7OkCd => core.nolb = true,
                    s if s.is_ok() => core.nolb = false,
                    _ => {}
                }
                report
            };
            self.last_status.set(o.status);
            if let Some(r) = report.filter(|_| self.t.log_checks) {
                let mut e = HealthEvent::check(&self.t.backend, &self.t.server, &o, r);
                e.backup = self.t.backup;
                (self.log)(e);
            }
            self.commit(&o, was_maint);
            let iv =
                self.core
                    .borrow()
                    .check_interval(self.t.inter, self.t.fastinter, self.t.downinter);
            let iv = self.rng.spread(iv, self.spread);
            self.next_check.set(Instant::now() + iv);
        }
    }

    async fn passive_loop(self: Rc<Self>) {
        loop {
            self.t.health.notify.notified().await;
            let times = self.t.health.take_pending();
            if times == 0 {
                continue;
            }
            let o = Outcome::new(CheckStatus::Hana, Duration::ZERO).info(format!(
                "Detected {} consecutive errors",
                self.t.error_limit.max(1)
            ));
            let was_maint = self.maint();
            if let Some(c) = self.core.borrow_mut().check.as_mut() {
                for _ in 0..times {
                    c.on_error(self.t.on_error);
                }
            }
            if self.t.on_error != fairlead_config::OnError::Fastinter {
                self.t.health.set_status(o.status_text());
            }
            self.commit(&o, was_maint);
            // Every action also brings the next check to `fastinter`.
            let soon = Instant::now() + self.t.fastinter;
            if soon < self.next_check.get() {
                self.next_check.set(soon);
                self.wake.notify_one();
            }
        }
    }

    async fn agent_loop(self: Rc<Self>, first: Duration) {
        let Some((addr, inter, send)) = self.t.agent.clone() else {
            return;
        };
        let limits = Limits {
            inter,
            ..self.limits
        };
        sleep(first).await;
        loop {
            if let Ok(reply) = agent_check(addr, send.as_deref().map(str::as_bytes), &limits).await
            {
                let was_maint = self.maint();
                self.core.borrow_mut().apply_agent(&reply);
                let status = match reply.state {
                    Some(false) => CheckStatus::L7Sts,
                    _ => CheckStatus::L7Ok,
                };
                let mut o = Outcome::new(status, Duration::ZERO);
                if !reply.info.is_empty() {
                    o = o.info(format!("agent: {}", reply.info));
                }
                self.commit(&o, was_maint);
            }
            sleep(self.rng.spread(inter, self.spread)).await;
        }
    }

    async fn ramp_loop(self: Rc<Self>, generation: u64) {
        let Some(ss) = self.t.slowstart else { return };
        let step = (ss / RAMP_STEPS).max(MIN_RAMP_STEP);
        loop {
            sleep(step).await;
            if self.ramp_gen.get() != generation {
                return;
            }
            let (up, drain, nolb, pct, ramping) = {
                let mut c = self.core.borrow_mut();
                if !c.ramping() {
                    return;
                }
                let pct = c.weight_pct(Instant::now().into_std());
                (c.published_up, c.drain, c.nolb, pct, c.ramping())
            };
            if self.t.health.publish(up, drain, nolb, pct) {
                (self.t.on_change)();
            }
            if !ramping {
                return;
            }
        }
    }
}
