//! Per-server state machine: HAProxy's health counters for the check and
//! the agent, agent administrative states, weights and slowstart. Pure
//! logic (no I/O), driven by the runner.

use fairlead_config::OnError;
use std::time::{Duration, Instant};

/// One health counter as HAProxy keeps it: 0..=rise+fall-1. The check is
/// good while the counter is at least `rise`. A failure below `rise` drops
/// it to 0, a success reaching `rise` raises it to the top, so that `fall`
/// consecutive failures are needed to go down from full health and `rise`
/// consecutive successes to come back from 0.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counter {
    pub health: u32,
    rise: u32,
    fall: u32,
}

impl Counter {
    /// `up`: start at `rise` (up, but the first failure takes it down, as
    /// HAProxy's default initial state); else start at 0.
    pub fn new(rise: u32, fall: u32, up: bool) -> Self {
        let (rise, fall) = (rise.max(1), fall.max(1));
        Counter {
            health: if up { rise } else { 0 },
            rise,
            fall,
        }
    }

    pub fn max(&self) -> u32 {
        self.rise + self.fall - 1
    }

    pub fn is_up(&self) -> bool {
        self.health >= self.rise
    }

    pub fn is_full(&self) -> bool {
        self.health == self.max()
    }

    pub fn success(&mut self) {
        if self.health < self.max() {
            self.health += 1;
            if self.health >= self.rise {
                self.health = self.max();
            }
        }
    }

    /// HAProxy's `status: x/y` numbers of a per-check log line: while up,
    /// the failures left before going down over `fall`; while down, the
    /// successes so far over `rise`.
    pub fn shown(&self) -> (u32, u32) {
        if self.health >= self.rise {
            (self.health - self.rise + 1, self.fall)
        } else {
            (self.health, self.rise)
        }
    }

    pub fn failure(&mut self) {
        if self.health > 0 {
            self.health -= 1;
            if self.health < self.rise {
                self.health = 0;
            }
        }
    }

    /// Applies an `on-error` action (passive check) as a failed check.
    pub fn on_error(&mut self, action: OnError) {
        match action {
            OnError::Fastinter => {}
            OnError::FailCheck => self.failure(),
            OnError::SuddenDeath => {
                // Leave exactly one more failure before going down.
                if self.health > self.rise {
                    self.health = self.rise + 1;
                }
                self.failure();
            }
            OnError::MarkDown => {
                if self.health > 0 {
                    self.health = self.rise;
                }
                self.failure();
            }
        }
    }
}

/// What the agent's reply asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AgentReply {
    /// `up` (true) or `down`/`fail`/`stopped` (false).
    pub state: Option<bool>,
    /// `ready` / `drain` / `maint`.
    pub admin: Option<AgentAdmin>,
    /// `N%`.
    pub weight_pct: Option<u32>,
    /// The state word and the `#` description, for logs.
    pub info: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AgentAdmin {
    Ready,
    Drain,
    Maint,
}

/// Highest percentage an agent may announce, as HAProxy (the absolute
/// weight is capped at 256 by the backend).
pub(crate) const MAX_AGENT_PCT: u32 = 25600;

/// Parses one agent line: words separated by spaces, tabs or commas, case
/// insensitive; `#` starts a description that runs to the end of the line.
/// Unknown words (and `maxconn:N`, which Fairlead does not apply) are
/// ignored.
pub(crate) fn parse_agent_line(line: &str) -> AgentReply {
    let line = line.split(['\r', '\n']).next().unwrap_or("");
    let (words, desc) = match line.find('#') {
        Some(i) => (&line[..i], Some(line[i + 1..].trim())),
        None => (line, None),
    };
    let mut r = AgentReply::default();
    let mut info = Vec::new();
    for w in words.split([' ', '\t', ',']).filter(|w| !w.is_empty()) {
        let lw = w.to_ascii_lowercase();
        match lw.as_str() {
            "up" => r.state = Some(true),
            "down" | "fail" | "stopped" => r.state = Some(false),
            "ready" => r.admin = Some(AgentAdmin::Ready),
            "drain" => r.admin = Some(AgentAdmin::Drain),
            "maint" => r.admin = Some(AgentAdmin::Maint),
            _ => {
                if let Some(n) = lw.strip_suffix('%') {
                    if let Ok(v) = n.parse::<u64>() {
                        r.weight_pct = Some(v.min(MAX_AGENT_PCT as u64) as u32);
                    }
                }
                continue;
            }
        }
        info.push(lw);
    }
    if let Some(d) = desc.filter(|d| !d.is_empty()) {
        info.push(d.to_string());
    }
    r.info = info.join(" ");
    r
}

/// Everything that decides a server's published state.
#[derive(Debug)]
pub(crate) struct Core {
    /// `None` without `check`.
    pub check: Option<Counter>,
    /// `None` without `agent-check`.
    pub agent: Option<Counter>,
    pub maint: bool,
    pub drain: bool,
    /// `http-check disable-on-404` got a 404 while UP: NOLB until a
    /// check passes plainly again or the server goes down.
    pub nolb: bool,
    pub agent_pct: u32,
    pub slowstart: Option<Duration>,
    /// Start of the current slowstart ramp.
    pub ramp_since: Option<Instant>,
    /// What was last published.
    pub published_up: bool,
}

impl Core {
    pub fn new(
        initially_up: bool,
        has_check: bool,
        has_agent: bool,
        rise: u32,
        fall: u32,
        slowstart: Option<Duration>,
    ) -> Self {
        Core {
            check: has_check.then(|| Counter::new(rise, fall, initially_up)),
            // The agent never holds a server down at start.
            agent: has_agent.then(|| Counter::new(rise, fall, true)),
            maint: false,
            drain: false,
            nolb: false,
            agent_pct: 100,
            slowstart,
            ramp_since: None,
            published_up: initially_up,
        }
    }

    /// Operational state.
    pub fn is_up(&self) -> bool {
        !self.maint && self.check.is_none_or(|c| c.is_up()) && self.agent.is_none_or(|c| c.is_up())
    }

    /// Weight percentage at `now`: agent percentage times the slowstart
    /// ramp, never below 1% while ramping (HAProxy keeps a minimal
    /// weight), 0 while draining or NOLB.
    pub fn weight_pct(&mut self, now: Instant) -> u32 {
        if self.drain || self.nolb {
            return 0;
        }
        let base = self.agent_pct;
        let (Some(ss), Some(since)) = (self.slowstart, self.ramp_since) else {
            return base;
        };
        let elapsed = now.saturating_duration_since(since);
        if elapsed >= ss || ss.is_zero() {
            self.ramp_since = None;
            return base;
        }
        let ramp = (elapsed.as_micros() * 100)
            .div_ceil(ss.as_micros())
            .clamp(1, 100) as u64;
        ((base as u64 * ramp).div_ceil(100)) as u32
    }

    /// Whether a slowstart ramp is in progress.
    pub fn ramping(&self) -> bool {
        self.ramp_since.is_some()
    }

    /// Interval before the next active check, as HAProxy picks it:
    /// `inter` at full health, `downinter` when down with the counter at 0,
    /// `fastinter` in between (while going up or down, including right
    /// after start, whose counter is at `rise`).
    pub fn check_interval(&self, inter: Duration, fast: Duration, down: Duration) -> Duration {
        match self.check {
            Some(c) if c.is_full() => inter,
            Some(c) if c.health == 0 && !self.published_up => down,
            Some(_) => fast,
            None => inter,
        }
    }

    /// Applies an agent reply. The agent's own counter only moves on
    /// `up`/`down`/`fail`/`stopped`, like HAProxy's agent; a reply with only
    /// a percentage or an administrative word leaves it alone.
    pub fn apply_agent(&mut self, r: &AgentReply) {
        if let Some(pct) = r.weight_pct {
            self.agent_pct = pct;
        }
        match r.admin {
            Some(AgentAdmin::Ready) => {
                self.drain = false;
                self.maint = false;
            }
            Some(AgentAdmin::Drain) => self.drain = true,
            Some(AgentAdmin::Maint) => self.maint = true,
            None => {}
        }
        if let (Some(c), Some(state)) = (self.agent.as_mut(), r.state) {
            if state {
                c.success();
            } else {
                c.failure();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_rise_fall() {
        // Starts up at `rise`: the first failure takes it down.
        let mut c = Counter::new(2, 3, true);
        c.failure();
        assert!(!c.is_up());
        c.success();
        assert!(!c.is_up());
        c.success();
        assert!(c.is_up() && c.is_full());
        c.failure();
        c.failure();
        assert!(c.is_up());
        c.failure();
        assert!(!c.is_up());
        assert_eq!(c.health, 0);
    }

    #[test]
    fn on_error_actions() {
        let mut c = Counter::new(2, 3, true);
        c.success(); // full: 4
        c.on_error(OnError::FailCheck);
        assert_eq!(c.health, 3);
        c.success();
        c.on_error(OnError::SuddenDeath);
        assert!(c.is_up());
        c.failure();
        assert!(!c.is_up());
        let mut c = Counter::new(2, 3, true);
        c.success();
        c.on_error(OnError::MarkDown);
        assert!(!c.is_up());
        let mut c = Counter::new(2, 3, true);
        c.success();
        c.on_error(OnError::Fastinter);
        assert!(c.is_full());
    }

    #[test]
    fn agent_words() {
        let r = parse_agent_line("75%, DRAIN\t#busy night\r\n");
        assert_eq!(r.weight_pct, Some(75));
        assert_eq!(r.admin, Some(AgentAdmin::Drain));
        assert_eq!(r.state, None);
        assert_eq!(r.info, "drain busy night");
        let r = parse_agent_line("stopped maxconn:30 99999%");
        assert_eq!(r.state, Some(false));
        assert_eq!(r.weight_pct, Some(MAX_AGENT_PCT));
        let r = parse_agent_line("up ready 0%");
        assert_eq!(r.state, Some(true));
        assert_eq!(r.admin, Some(AgentAdmin::Ready));
        assert_eq!(r.weight_pct, Some(0));
    }

    #[test]
    fn slowstart_ramp() {
        let t0 = Instant::now();
        let mut c = Core::new(true, true, false, 2, 3, Some(Duration::from_secs(10)));
        c.ramp_since = Some(t0);
        assert_eq!(c.weight_pct(t0), 1);
        assert_eq!(c.weight_pct(t0 + Duration::from_secs(5)), 50);
        c.agent_pct = 50;
        assert_eq!(c.weight_pct(t0 + Duration::from_secs(5)), 25);
        assert_eq!(c.weight_pct(t0 + Duration::from_secs(11)), 50);
        assert!(!c.ramping());
        c.drain = true;
        assert_eq!(c.weight_pct(t0), 0);
    }

    #[test]
    fn intervals() {
        let (i, f, d) = (
            Duration::from_secs(2),
            Duration::from_secs(1),
            Duration::from_secs(5),
        );
        let mut c = Core::new(true, true, false, 2, 3, None);
        assert_eq!(c.check_interval(i, f, d), f); // at start, health = rise
        c.check.as_mut().unwrap().success();
        assert_eq!(c.check_interval(i, f, d), i);
        for _ in 0..3 {
            c.check.as_mut().unwrap().failure();
        }
        c.published_up = false;
        assert_eq!(c.check_interval(i, f, d), d);
    }
}
