//! The tcp-check engine: `tcp-check` rule lists and the protocol checks
//! HAProxy builds as rule lists (`redis-check`, `mysql-check`,
//! `pgsql-check`, `smtpchk`, `ldap-check`, `ssl-hello-chk`,
//! `spop-check`).
//!
//! As HAProxy 2.6: the input buffer is emptied by each `connect` and
//! `send`, not by an `expect`, so consecutive expects judge the same
//! bytes; an expect reads first only when nothing was read since the last
//! `send`/`connect`; the last rule evaluated (comments aside) decides the
//! success status: an expect gives its `ok-status` (default `L7OK`), a
//! `connect` `L4OK` (`L6OK` over TLS), a `send` `L7OK`.

use crate::event::{CheckStatus, Outcome};
use crate::probe::{
    close, close_linger, connect, read_more, write_all, ConnOpts, Limits, Matcher, Read,
    MAX_RESPONSE,
};
use crate::proto::{self, Verdict};
use fairlead_config::{HealthCheck, TcpCheckRule, TcpConnect};
use fairlead_net::Conn;
use std::net::SocketAddr;
use tokio::time::Instant;

/// A compiled rule list.
#[derive(Debug)]
pub(crate) struct Program {
    steps: Vec<Step>,
    /// A protocol check: failures carry no generic "TCPCHK ..." text.
    proto: bool,
}

#[derive(Debug)]
enum Step {
    Connect(TcpConnect),
    Send(Data),
    Expect(Box<ExpectStep>),
    Comment(String),
}

#[derive(Debug)]
enum Data {
    Bytes(Vec<u8>),
    /// `ssl-hello-chk`'s ClientHello, stamped with the current time.
    SslHello,
}

#[derive(Debug)]
enum Test {
    Pattern(Matcher),
    MysqlHandshake,
    MysqlOk,
    LdapBind,
    SpopHello,
}

/// A description built from the reply (`on-error`/`on-success`).
#[derive(Debug)]
enum Msg {
    Text(&'static str),
    /// The reply from byte `from`, spaces trimmed on the left when `ltrim`,
    /// cut at the first CR or LF.
    Payload {
        from: usize,
        ltrim: bool,
    },
    /// PostgreSQL's error: from byte 6 to the first NUL.
    PgError,
}

impl Msg {
    fn render(&self, buf: &[u8]) -> String {
        match self {
            Msg::Text(t) => t.to_string(),
            Msg::PgError => proto::pgsql_error_text(buf),
            Msg::Payload { from, ltrim } => {
                let mut s = buf.get(*from..).unwrap_or_default();
                if *ltrim {
                    while let [b' ', rest @ ..] = s {
                        s = rest;
                    }
                }
                let end = s
                    .iter()
                    .position(|&b| b == b'\r' || b == b'\n')
                    .unwrap_or(s.len());
                String::from_utf8_lossy(&s[..end]).into_owned()
            }
        }
    }
}

#[derive(Debug)]
struct ExpectStep {
    test: Test,
    min_recv: Option<usize>,
    ok: Option<CheckStatus>,
    err: Option<CheckStatus>,
    tout: Option<CheckStatus>,
    on_error: Option<Msg>,
    on_success: Option<Msg>,
    /// The check code is the reply's first 3 bytes (SMTP's reply code).
    code3: bool,
}

impl ExpectStep {
    fn new(test: Test) -> ExpectStep {
        ExpectStep {
            test,
            min_recv: None,
            ok: None,
            err: None,
            tout: None,
            on_error: None,
            on_success: None,
            code3: false,
        }
    }

    fn pattern(negate: bool, regex: &str, hex: bool, min_recv: usize) -> ExpectStep {
        ExpectStep {
            min_recv: Some(min_recv),
            ..ExpectStep::new(Test::Pattern(Matcher::regex(negate, regex, hex)))
        }
    }

    /// The reply code of `code3`.
    fn code(&self, buf: &[u8]) -> Option<u16> {
        if !self.code3 {
            return None;
        }
        std::str::from_utf8(buf.get(..3)?).ok()?.parse().ok()
    }

    /// The description HAProxy's custom expects give a success: the
    /// MySQL server's version (from its handshake), "Success" for LDAP,
    /// "SPOA server is ok" for SPOP.
    fn success_info(&self, buf: &[u8]) -> Option<String> {
        match self.test {
            Test::Pattern(_) => None,
            Test::MysqlHandshake | Test::MysqlOk => {
                let v = buf.get(5..).unwrap_or_default();
                let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
                Some(String::from_utf8_lossy(&v[..end]).into_owned())
            }
            Test::LdapBind => Some("Success".into()),
            Test::SpopHello => Some("SPOA server is ok".into()),
        }
    }

    /// Judges `buf` (`last`: no more bytes will come).
    fn eval(&self, buf: &[u8], last: bool) -> Verdict {
        if !last && self.min_recv.is_some_and(|n| buf.len() < n) {
            return Verdict::Wait;
        }
        let m = match &self.test {
            Test::Pattern(m) => m,
            Test::MysqlHandshake => return proto::mysql_packet(buf, 0, last),
            Test::MysqlOk => {
                return match proto::mysql_after_handshake(buf) {
                    Some(off) => proto::mysql_packet(buf, off, last),
                    None if last => Verdict::Fail(CheckStatus::L7Rsp, None, None),
                    None => Verdict::Wait,
                }
            }
            Test::LdapBind => return proto::ldap_bind_response(buf, last),
            Test::SpopHello => return proto::spop_agent_hello(buf, last),
        };
        if let Some(e) = m.invalid() {
            return Verdict::Fail(CheckStatus::L7Rsp, None, Some(e.to_string()));
        }
        if !last && m.literal_len().is_some_and(|n| buf.len() < n) {
            return Verdict::Wait;
        }
        let found = m.find(buf).unwrap_or(false);
        if !found && !last && self.min_recv.is_none() {
            return Verdict::Wait;
        }
        if found != m.negate() {
            return Verdict::Pass;
        }
        Verdict::Fail(self.err.unwrap_or(CheckStatus::L7Rsp), None, None)
    }
}

fn connect_rule(default: bool, linger: bool) -> Step {
    Step::Connect(TcpConnect {
        default,
        linger,
        ..TcpConnect::default()
    })
}

impl Program {
    /// The rule list of a `tcp-check` or protocol check; `None` for the
    /// plain and HTTP checks.
    pub(crate) fn compile(hc: &HealthCheck) -> Option<Program> {
        let (steps, proto) = match hc {
            HealthCheck::Tcp | HealthCheck::Http(_) => return None,
            HealthCheck::TcpCheck(rules) => (rules.iter().map(user_rule).collect(), false),
            HealthCheck::Mysql(user) => {
                let mut s = vec![connect_rule(true, true)];
                if let Some(u) = user {
                    s.push(Step::Send(Data::Bytes(proto::mysql_request(
                        &u.name, u.post41,
                    ))));
                }
                s.push(Step::Expect(Box::new(ExpectStep::new(
                    Test::MysqlHandshake,
                ))));
                if user.is_some() {
                    s.push(Step::Expect(Box::new(ExpectStep::new(Test::MysqlOk))));
                }
                (s, true)
            }
            HealthCheck::Pgsql { user } => (pgsql(user), true),
            HealthCheck::Smtp { command } => (smtp(command), true),
            HealthCheck::Ldap => {
                let mut first = ExpectStep::pattern(false, "^30", true, 14);
                first.on_error = Some(Msg::Text("Not LDAPv3 protocol"));
                let s = vec![
                    Step::Send(Data::Bytes(proto::LDAP_BIND.to_vec())),
                    Step::Expect(Box::new(first)),
                    Step::Expect(Box::new(ExpectStep::new(Test::LdapBind))),
                ];
                (s, true)
            }
            HealthCheck::SslHello => {
                let mut e = ExpectStep::pattern(false, "^1[56]", true, 5);
                e.ok = Some(CheckStatus::L6Ok);
                e.err = Some(CheckStatus::L6Rsp);
                e.tout = Some(CheckStatus::L6Tout);
                (
                    vec![Step::Send(Data::SslHello), Step::Expect(Box::new(e))],
                    true,
                )
            }
            HealthCheck::Spop => {
                let mut e = ExpectStep::new(Test::SpopHello);
                e.min_recv = Some(4);
                let s = vec![
                    Step::Send(Data::Bytes(proto::spop_hello())),
                    Step::Expect(Box::new(e)),
                ];
                (s, true)
            }
        };
        Some(Program { steps, proto })
    }
}

fn user_rule(r: &TcpCheckRule) -> Step {
    match r {
        TcpCheckRule::Connect(c) => Step::Connect(c.clone()),
        TcpCheckRule::Send(b) => Step::Send(Data::Bytes(b.clone())),
        TcpCheckRule::Expect(e) => Step::Expect(Box::new(ExpectStep {
            min_recv: e.min_recv,
            ..ExpectStep::new(Test::Pattern(Matcher::compile(e)))
        })),
        TcpCheckRule::Comment(c) => Step::Comment(c.clone()),
    }
}

/// `option pgsql-check`: no ErrorResponse, then an Authentication
/// message that is OK or asks for a password HAProxy knows of (2.6.12's
/// list, SASL/SCRAM included).
fn pgsql(user: &str) -> Vec<Step> {
    let mut not_error = ExpectStep::pattern(true, "^E", false, 5);
    not_error.on_error = Some(Msg::PgError);
    let mut auth = ExpectStep::pattern(
        false,
        "^52000000[A-Z0-9]{2}000000(00|02|03|04|05|06|07|09|0A)",
        true,
        9,
    );
    auth.err = Some(CheckStatus::L7Sts);
    auth.on_success = Some(Msg::Text("PostgreSQL server is ok"));
    auth.on_error = Some(Msg::Text("PostgreSQL unknown error"));
    vec![
        connect_rule(true, true),
        Step::Send(Data::Bytes(proto::pgsql_request(user))),
        Step::Expect(Box::new(not_error)),
        Step::Expect(Box::new(auth)),
    ]
}

/// `option smtpchk`, as HAProxy 2.6.12 (with the fixes backported to
/// 2.6: complete EHLO replies, and a QUIT for a clean end): a
/// well-formed 2xx greeting, a complete 2xx reply to the HELO/EHLO
/// command (waited for until the check times out), then QUIT and a 2xx
/// reply. The reply code is the check's code, the reply text its info.
fn smtp(command: &str) -> Vec<Step> {
    let text = || {
        Some(Msg::Payload {
            from: 4,
            ltrim: true,
        })
    };
    let mut greeting = ExpectStep::pattern(false, "^[0-9]{3}[ \r]", false, 4);
    greeting.on_error = Some(Msg::Payload {
        from: 0,
        ltrim: false,
    });
    let mut greeting_ok = ExpectStep::pattern(false, "^2[0-9]{2}[ \r]", false, 4);
    greeting_ok.err = Some(CheckStatus::L7Sts);
    greeting_ok.on_error = text();
    greeting_ok.code3 = true;
    let mut hello = ExpectStep::pattern(false, "^(2[0-9]{2}-[^\r]*\r\n)*2[0-9]{2}[ \r]", false, 0);
    hello.min_recv = None;
    hello.err = Some(CheckStatus::L7Sts);
    hello.on_error = text();
    hello.on_success = text();
    hello.code3 = true;
    let mut bye = ExpectStep::pattern(false, "^2[0-9]{2}[- \r]", false, 4);
    bye.err = Some(CheckStatus::L7Sts);
    bye.on_error = text();
    bye.on_success = text();
    bye.code3 = true;
    vec![
        connect_rule(true, true),
        Step::Expect(Box::new(greeting)),
        Step::Expect(Box::new(greeting_ok)),
        Step::Send(Data::Bytes(format!("{command}\r\n").into_bytes())),
        Step::Expect(Box::new(hello)),
        Step::Send(Data::Bytes(b"QUIT\r\n".to_vec())),
        Step::Expect(Box::new(bye)),
    ]
}

/// What the last evaluated rule was, for the success status.
enum Last {
    None,
    Connect {
        tls: bool,
    },
    Send,
    Expect {
        status: CheckStatus,
        info: Option<String>,
        code: Option<u16>,
    },
}

/// The connection options of a `connect` rule: the server's own check
/// settings with `default` (or for the implicit connect), plus what the
/// rule names.
fn rule_opts(c: &TcpConnect, implicit: bool, base: &ConnOpts) -> ConnOpts {
    let inherit = c.default || implicit;
    let mut o = if inherit {
        base.clone()
    } else {
        ConnOpts {
            proxy_version: base.proxy_version,
            socks4_server: base.socks4_server,
            rule_tls: base.rule_tls.clone(),
            ..ConnOpts::default()
        }
    };
    if c.ssl {
        let settings = base.tls.as_ref().or(base.rule_tls.as_ref());
        o.tls = Some(crate::probe::rule_tls(
            settings,
            c.sni.as_deref(),
            c.alpn.as_deref(),
        ));
    }
    if c.send_proxy {
        o.proxy = o.proxy_version.max(1);
    }
    if c.via_socks4 {
        o.socks4 = o.socks4_server;
    }
    o.linger = c.linger;
    o
}

fn fail(o: Outcome, comment: Option<&str>) -> Outcome {
    match comment {
        Some(c) => o.info(c),
        None => o,
    }
}

/// One run of a rule list: the connection and what was read.
struct Session<'a> {
    limits: &'a Limits,
    start: Instant,
    conn: Option<Conn>,
    linger: bool,
    deadline: Instant,
    buf: Vec<u8>,
    /// An expect reads before judging (nothing read since the last
    /// `connect`/`send`).
    must_read: bool,
    eof: bool,
}

impl Session<'_> {
    /// Closes the connection (with a FIN after a `linger` connect).
    fn close(&mut self) {
        if let Some(s) = self.conn.take() {
            if self.linger {
                close_linger(s);
            } else {
                close(s);
            }
        }
    }

    /// A failure: the connection is reset.
    fn abort(&mut self, o: Outcome) -> Outcome {
        self.linger = false;
        self.close();
        o
    }

    async fn connect(&mut self, target: SocketAddr, opts: &ConnOpts) -> Result<(), Outcome> {
        self.close();
        let mut cd = self.limits.connect_deadline(Instant::now());
        if self.limits.check.is_none() {
            cd = cd.min(self.start + self.limits.inter);
        }
        self.conn = Some(connect(target, cd, self.start, opts).await?);
        self.linger = opts.linger;
        self.deadline = self.limits.read_deadline(self.start, Instant::now());
        self.buf.clear();
        (self.must_read, self.eof) = (true, false);
        Ok(())
    }

    async fn send(&mut self, data: &Data) -> Result<(), Outcome> {
        let stamped;
        let data = match data {
            Data::Bytes(b) => b,
            Data::SslHello => {
                stamped = proto::ssl_hello(unix_time());
                &stamped
            }
        };
        self.buf.clear();
        self.must_read = true;
        let Some(s) = self.conn.as_mut() else {
            return Ok(());
        };
        match write_all(s, data, self.deadline, self.start).await {
            Ok(()) => Ok(()),
            Err(o) => Err(self.abort(o)),
        }
    }

    /// Reads (when needed) and judges until `e` decides.
    async fn expect(
        &mut self,
        e: &ExpectStep,
        step_no: usize,
        comment: Option<&str>,
        program: &Program,
    ) -> Result<Last, Outcome> {
        loop {
            if self.must_read {
                let Some(s) = self.conn.as_mut() else {
                    return Ok(Last::None);
                };
                match read_more(s, &mut self.buf, self.deadline).await {
                    Read::Data => {}
                    Read::Eof | Read::Error(_) => self.eof = true,
                    Read::Timeout => {
                        let st = e.tout.unwrap_or(CheckStatus::L7Tout);
                        let o = fail(Outcome::new(st, self.start.elapsed()), comment);
                        return Err(self.abort(o));
                    }
                }
                self.must_read = false;
                if self.eof && self.buf.is_empty() {
                    let st = e.err.unwrap_or(CheckStatus::L7Rsp);
                    let mut info = format!("TCPCHK got an empty response at step {step_no}");
                    if let Some(c) = comment {
                        info.push_str(&format!(" comment: '{c}'"));
                    }
                    let o = Outcome::new(st, self.start.elapsed()).info(info);
                    return Err(self.abort(o));
                }
            }
            let full = self.eof || self.buf.len() >= MAX_RESPONSE;
            let buf = &self.buf;
            match e.eval(buf, full) {
                Verdict::Wait if !full => self.must_read = true,
                Verdict::Pass => {
                    let status = e.ok.unwrap_or(CheckStatus::L7Ok);
                    // A protocol check's L7OK carries code 0, as
                    // HAProxy's (`L7OK/0`, "code: 0").
                    let zero = (program.proto && status == CheckStatus::L7Ok).then_some(0);
                    let info = e.on_success.as_ref().map(|m| m.render(buf));
                    return Ok(Last::Expect {
                        status,
                        info: info.or_else(|| e.success_info(buf)),
                        code: e.code(buf).or(zero),
                    });
                }
                Verdict::Wait => {
                    let o = Outcome::new(CheckStatus::L7Rsp, self.start.elapsed());
                    return Err(self.abort(o));
                }
                Verdict::Fail(st, code, info) => {
                    let info = info
                        .or_else(|| e.on_error.as_ref().map(|m| m.render(buf)))
                        .or_else(|| program.generic_failure(e, step_no));
                    let mut o = Outcome::new(st, self.start.elapsed());
                    if let Some(c) = code.or_else(|| e.code(buf)) {
                        o = o.code(c);
                    }
                    if let Some(i) = info {
                        o = o.info(i);
                    }
                    return Err(self.abort(fail(o, comment)));
                }
            }
        }
    }
}

impl Program {
    pub(crate) async fn run(
        &self,
        addr: SocketAddr,
        limits: &Limits,
        start: Instant,
        base: &ConnOpts,
    ) -> Outcome {
        let mut ses = Session {
            limits,
            start,
            conn: None,
            linger: false,
            deadline: limits.read_deadline(start, start),
            buf: Vec::new(),
            must_read: true,
            eof: false,
        };
        let mut last = Last::None;
        let mut comment: Option<&str> = None;
        let implicit = TcpConnect::default();
        for (i, step) in self.steps.iter().enumerate() {
            if let Step::Comment(c) = step {
                comment = Some(c);
                continue;
            }
            // `connect` rules, and the implicit connect before the first
            // `send` or `expect` when the rules start without one.
            let rule = match step {
                Step::Connect(c) => Some((c, false)),
                _ if ses.conn.is_none() => Some((&implicit, true)),
                _ => None,
            };
            if let Some((c, is_implicit)) = rule {
                let opts = rule_opts(c, is_implicit, base);
                let target =
                    SocketAddr::new(c.addr.unwrap_or(addr.ip()), c.port.unwrap_or(addr.port()));
                if let Err(o) = ses.connect(target, &opts).await {
                    return fail(o, comment);
                }
                if !is_implicit {
                    last = Last::Connect {
                        tls: opts.tls.is_some(),
                    };
                }
            }
            let res = match step {
                Step::Send(data) => ses.send(data).await.map(|()| Last::Send),
                Step::Expect(e) => ses.expect(e, i + 1, comment, self).await,
                Step::Connect(_) | Step::Comment(_) => Ok(Last::None),
            };
            match res {
                Err(o) if matches!(step, Step::Send(_)) => return fail(o, comment),
                Err(o) => return o,
                Ok(Last::None) => {}
                Ok(l) => last = l,
            }
            comment = None;
        }
        if ses.conn.is_none() {
            // Only comments: a plain connect.
            if let Err(o) = ses.connect(addr, base).await {
                return o;
            }
            last = Last::Connect {
                tls: base.tls.is_some(),
            };
        }
        ses.close();
        outcome(last, start.elapsed())
    }

    /// HAProxy's text for a failed `tcp-check expect` of a user rule list
    /// (protocol checks give none).
    fn generic_failure(&self, e: &ExpectStep, step_no: usize) -> Option<String> {
        if self.proto {
            return None;
        }
        let Test::Pattern(m) = &e.test else {
            return None;
        };
        let what = if m.negate() {
            "matched unwanted content"
        } else {
            "did not match content"
        };
        Some(format!("TCPCHK {what} {} at step {step_no}", m.describe()))
    }
}

/// The success outcome the last evaluated rule gives.
fn outcome(last: Last, d: std::time::Duration) -> Outcome {
    match last {
        Last::Expect { status, info, code } => {
            let mut o = Outcome::new(status, d);
            if let Some(c) = code {
                o = o.code(c);
            }
            match info {
                Some(i) => o.info(i),
                None => o,
            }
        }
        Last::Connect { tls: true } => Outcome::new(CheckStatus::L6Ok, d),
        Last::Send => Outcome::new(CheckStatus::L7Ok, d),
        Last::Connect { tls: false } | Last::None => Outcome::new(CheckStatus::L4Ok, d),
    }
}

fn unix_time() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or(0)
}
