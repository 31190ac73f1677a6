//! The HTML statistics page (`stats enable` / `stats uri`).
//!
//! A self-contained HTML5 page with inline CSS and no script: general
//! process information, a color legend, links to the other views
//! (`;up`, `;norefresh`, `;csv`, `;json`), then one table per proxy laid
//! out like HAProxy's: frontend line, server lines, backend line; columns
//! Queue (Cur/Max/Limit), Session rate (Cur/Max/Limit), Sessions
//! (Cur/Max/Limit/Total/LbTot/Last), Bytes (In/Out), Denied (Req/Resp),
//! Errors (Req/Conn/Resp), Warnings (Retr/Redis) and Server (Status,
//! LastChk, Wght, Act, Bck, Chk, Dwn, Dwntme, Thrtle). Server rows are
//! colored by state with HAProxy's class names (`active_up`,
//! `backup_down`, `maintain`, `active_draining`...). With `admin`, server
//! rows get a checkbox and each backend a form posting HAProxy's admin
//! actions (see [`crate::parse_admin_post`]).
//!
//! Every name and free text from the snapshot is HTML-escaped.

use crate::model::{ProxyKind, ProxyStats, ServerState, ServerStats, Snapshot};
use crate::stat::format_uptime;
use std::io::Write;

/// Page options.
#[derive(Clone, Debug, PartialEq)]
pub struct HtmlOptions {
    /// Seconds between automatic reloads (`stats refresh`); adds a
    /// `<meta http-equiv="refresh">`. Default is `None` (no reload).
    pub refresh: Option<u32>,
    /// The stats URI the links are built on (`stats uri`). Default is
    /// `"/haproxy?stats"`.
    pub uri: String,
    /// Show server addresses and cookies (`stats show-legends`). Default
    /// is `false`.
    pub show_legends: bool,
    /// Render the admin checkboxes and forms (`stats admin` matched).
    /// Default is `false`.
    pub admin: bool,
    /// Hide servers that are DOWN or in maintenance (`;up`). Default is
    /// `false`.
    pub hide_down: bool,
    /// Only show proxies whose name contains this text (`scope=`). Default
    /// is `None`.
    pub scope: Option<String>,
    /// Hide the version (`stats hide-version`). Default is `false`.
    pub hide_version: bool,
    /// Result of an admin action to display (`;st=DONE`...). Default is
    /// `None`.
    pub status: Option<String>,
}

impl Default for HtmlOptions {
    fn default() -> Self {
        HtmlOptions {
            refresh: None,
            uri: "/haproxy?stats".to_string(),
            show_legends: false,
            admin: false,
            hide_down: false,
            scope: None,
            hide_version: false,
            status: None,
        }
    }
}

/// Appends `s` with `& < > " '` escaped.
pub fn escape_html(out: &mut Vec<u8>, s: &str) {
    for b in s.bytes() {
        match b {
            b'&' => out.extend_from_slice(b"&amp;"),
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b'"' => out.extend_from_slice(b"&quot;"),
            b'\'' => out.extend_from_slice(b"&#39;"),
            b => out.push(b),
        }
    }
}

/// Short duration as on HAProxy's page: `7s`, `5m6s`, `3h4m`, `1d2h`.
pub fn human_duration(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d}d{h}h")
    } else if h > 0 {
        format!("{h}h{m}m")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

const STYLE: &str = "\
body{font-family:sans-serif;font-size:12px;color:#000;background:#fff;margin:8px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;color:#5a2a8a;margin:0 0 8px}
.msg{padding:4px 8px;margin:6px 0;border:1px solid #888;background:#ffe}
.top{display:flex;gap:24px;align-items:flex-start;margin-bottom:10px}
.top ul{margin:0;padding-left:16px}
table.tbl{border-collapse:collapse;width:100%;margin-bottom:12px}
table.tbl td,table.tbl th{border:1px solid #999;padding:1px 3px;font-size:11px;white-space:nowrap}
table.tbl td{text-align:right}table.tbl td.name{text-align:left}
table.tbl th.px{background:#a0204a;color:#ff6;text-align:left;font-size:12px}
tr.titre th{background:#3cc;color:#000}
table.lgd td{padding:1px 6px;font-size:11px}
.frontend,.backend{background:#e8e8d0;font-weight:bold}
.active_up{background:#c0ffc0}.backup_up{background:#b0d0ff}
.active_down,.backup_down{background:#ff9090}
.active_going_down{background:#ffffa0}.backup_going_down{background:#c060ff}
.active_going_up{background:#ffd020}.backup_going_up{background:#ff80ff}
.active_nolb{background:#20a0ff}.backup_nolb{background:#90b0e0}
.active_draining{background:#20a0ff}.backup_draining{background:#cc9900}
.active_no_check,.backup_no_check{background:#e0e0e0}
.maintain{background:#c07820}
@media (prefers-color-scheme:dark){body{color:#ddd;background:#151718}
.frontend,.backend{background:#2f3437}.active_up{background:#1d5a10}.backup_up{background:#243a5a}
.active_down,.backup_down{background:#760000}.maintain{background:#7a4a10}
.active_no_check,.backup_no_check{background:#2a2d2f}.active_draining,.active_nolb{background:#005a99}
.active_going_down{background:#5c5c00}.active_going_up{background:#8a6a00}
tr.titre th{background:#1a8080;color:#eee}}
";

/// CSS class of a server row.
fn server_class(sv: &ServerStats) -> &'static str {
    let pair = |a, b| if sv.backup { b } else { a };
    match sv.state {
        ServerState::Up => pair("active_up", "backup_up"),
        ServerState::Down => pair("active_down", "backup_down"),
        ServerState::NoCheck => pair("active_no_check", "backup_no_check"),
        ServerState::Maint | ServerState::MaintVia(_) => "maintain",
        ServerState::Drain => pair("active_draining", "backup_draining"),
        ServerState::NoLb => pair("active_nolb", "backup_nolb"),
        ServerState::GoingDown { .. } => pair("active_going_down", "backup_going_down"),
        ServerState::GoingUp { .. } => pair("active_going_up", "backup_going_up"),
    }
}

/// A row under construction: cells are pushed in column order.
struct Cells<'o> {
    out: &'o mut Vec<u8>,
}

impl Cells<'_> {
    fn text(&mut self, s: &str) {
        self.out.extend_from_slice(b"<td>");
        escape_html(self.out, s);
        self.out.extend_from_slice(b"</td>");
    }
    fn num(&mut self, n: u64) {
        let _ = write!(self.out, "<td>{n}</td>");
    }
    fn opt(&mut self, n: Option<u64>) {
        match n {
            Some(n) => self.num(n),
            None => self.text("-"),
        }
    }
    fn empty(&mut self, n: usize) {
        for _ in 0..n {
            self.out.extend_from_slice(b"<td></td>");
        }
    }
}

fn last_sess(v: Option<u64>) -> String {
    v.map_or_else(|| "?".to_string(), human_duration)
}

fn table_head(out: &mut Vec<u8>, px_name: &str, admin: bool) {
    out.extend_from_slice(b"<table class=\"tbl\">\n<tr><th class=\"px\" colspan=\"");
    let _ = write!(out, "{}", 31 + usize::from(admin));
    out.extend_from_slice(b"\"><a id=\"");
    escape_html(out, px_name);
    out.extend_from_slice(b"\" href=\"#");
    escape_html(out, px_name);
    out.extend_from_slice(b"\">");
    escape_html(out, px_name);
    out.extend_from_slice(b"</a></th></tr>\n<tr class=\"titre\">");
    if admin {
        out.extend_from_slice(b"<th rowspan=\"2\"></th>");
    }
    out.extend_from_slice(
        b"<th rowspan=\"2\"></th><th colspan=\"3\">Queue</th><th colspan=\"3\">Session rate</th>\
<th colspan=\"6\">Sessions</th><th colspan=\"2\">Bytes</th><th colspan=\"2\">Denied</th>\
<th colspan=\"3\">Errors</th><th colspan=\"2\">Warnings</th><th colspan=\"9\">Server</th></tr>\n\
<tr class=\"titre\"><th>Cur</th><th>Max</th><th>Limit</th><th>Cur</th><th>Max</th><th>Limit</th>\
<th>Cur</th><th>Max</th><th>Limit</th><th>Total</th><th>LbTot</th><th>Last</th><th>In</th><th>Out</th>\
<th>Req</th><th>Resp</th><th>Req</th><th>Conn</th><th>Resp</th><th>Retr</th><th>Redis</th>\
<th>Status</th><th>LastChk</th><th>Wght</th><th>Act</th><th>Bck</th><th>Chk</th><th>Dwn</th>\
<th>Dwntme</th><th>Thrtle</th></tr>\n",
    );
}

fn frontend_row(out: &mut Vec<u8>, px: &ProxyStats, admin: bool) {
    let c = &px.counters;
    out.extend_from_slice(b"<tr class=\"frontend\">");
    if admin {
        out.extend_from_slice(b"<td></td>");
    }
    out.extend_from_slice(b"<td class=\"name\">Frontend</td>");
    let mut t = Cells { out };
    t.empty(3);
    t.num(c.rate);
    t.num(c.rate_max);
    if px.rate_lim > 0 {
        t.num(px.rate_lim)
    } else {
        t.text("-")
    }
    t.num(c.scur);
    t.num(c.smax);
    t.opt(px.slim);
    t.num(c.stot);
    t.empty(2);
    t.num(c.bin);
    t.num(c.bout);
    t.num(c.dreq);
    t.num(c.dresp);
    t.num(c.ereq);
    t.empty(4);
    t.text(&px.status);
    t.empty(8);
    t.out.extend_from_slice(b"</tr>\n");
}

fn server_row(out: &mut Vec<u8>, sv: &ServerStats, admin: bool, show_legends: bool) {
    let c = &sv.counters;
    let _ = write!(out, "<tr class=\"{}\">", server_class(sv));
    if admin {
        out.extend_from_slice(b"<td><input type=\"checkbox\" name=\"s\" value=\"");
        escape_html(out, &sv.name);
        out.extend_from_slice(b"\"></td>");
    }
    out.extend_from_slice(b"<td class=\"name\">");
    escape_html(out, &sv.name);
    if show_legends {
        if let Some(a) = &sv.addr {
            out.extend_from_slice(b" <small>");
            escape_html(out, a);
            if let Some(ck) = &sv.cookie {
                out.extend_from_slice(b" cookie ");
                escape_html(out, ck);
            }
            out.extend_from_slice(b"</small>");
        }
    }
    out.extend_from_slice(b"</td>");
    let mut t = Cells { out };
    t.num(c.qcur);
    t.num(c.qmax);
    t.opt(sv.qlimit);
    t.num(c.rate);
    t.num(c.rate_max);
    t.empty(1);
    t.num(c.scur);
    t.num(c.smax);
    t.opt(sv.slim);
    t.num(c.stot);
    t.num(c.lbtot);
    t.text(&last_sess(c.last_sess_secs));
    t.num(c.bin);
    t.num(c.bout);
    t.empty(1);
    t.num(c.dresp);
    t.empty(1);
    t.num(c.econ);
    t.num(c.eresp);
    t.num(c.wretr);
    t.num(c.wredis);
    t.text(&format!(
        "{} {}",
        human_duration(sv.lastchg_secs),
        sv.state.text()
    ));
    match &sv.check {
        Some(ck) => {
            let mut s = String::new();
            if ck.in_progress {
                s.push_str("* ");
            }
            s.push_str(&ck.status);
            if let Some(code) = ck.code {
                s.push_str(&format!("/{code}"));
            }
            if let Some(d) = ck.duration_ms {
                s.push_str(&format!(" in {d}ms"));
            }
            t.text(&s);
        }
        None => t.empty(1),
    }
    t.text(&format!("{}/{}", sv.weight, sv.uweight));
    t.text(if sv.backup { "-" } else { "Y" });
    t.text(if sv.backup { "Y" } else { "-" });
    if sv.check.is_some() {
        t.num(sv.chkfail);
        t.num(sv.chkdown);
    } else {
        t.empty(2);
    }
    match sv.downtime_secs {
        Some(d) => t.text(&human_duration(d)),
        None => t.empty(1),
    }
    match sv.throttle {
        Some(p) => t.text(&format!("{p} %")),
        None => t.text("-"),
    }
    t.out.extend_from_slice(b"</tr>\n");
}

fn backend_row(out: &mut Vec<u8>, px: &ProxyStats, admin: bool) {
    let c = &px.counters;
    out.extend_from_slice(b"<tr class=\"backend\">");
    if admin {
        out.extend_from_slice(b"<td></td>");
    }
    out.extend_from_slice(b"<td class=\"name\">Backend</td>");
    let mut t = Cells { out };
    t.num(c.qcur);
    t.num(c.qmax);
    t.empty(1);
    t.num(c.rate);
    t.num(c.rate_max);
    t.empty(1);
    t.num(c.scur);
    t.num(c.smax);
    t.opt(px.slim);
    t.num(c.stot);
    t.num(c.lbtot);
    t.text(&last_sess(c.last_sess_secs));
    t.num(c.bin);
    t.num(c.bout);
    t.num(c.dreq);
    t.num(c.dresp);
    t.empty(1);
    t.num(c.econ);
    t.num(c.eresp);
    t.num(c.wretr);
    t.num(c.wredis);
    t.text(&format!(
        "{} {}",
        human_duration(px.lastchg_secs),
        px.status
    ));
    t.empty(1);
    t.text(&format!("{}/{}", px.weight, px.uweight));
    t.num(px.act);
    t.num(px.bck);
    t.empty(1);
    t.num(px.chkdown);
    match px.downtime_secs {
        Some(d) => t.text(&human_duration(d)),
        None => t.empty(1),
    }
    t.empty(1);
    t.out.extend_from_slice(b"</tr>\n");
}

/// Admin actions offered in the form: (value posted, label).
const ADMIN_ACTIONS: [(&str, &str); 13] = [
    ("ready", "Set state to READY"),
    ("drain", "Set state to DRAIN"),
    ("maint", "Set state to MAINT"),
    ("dhlth", "Health: disable checks"),
    ("ehlth", "Health: enable checks"),
    ("hrunn", "Health: force UP"),
    ("hnolb", "Health: force NOLB"),
    ("hdown", "Health: force DOWN"),
    ("dagent", "Agent: disable checks"),
    ("eagent", "Agent: enable checks"),
    ("arunn", "Agent: force UP"),
    ("adown", "Agent: force DOWN"),
    ("shutdown", "Kill Sessions"),
];

fn admin_form_tail(out: &mut Vec<u8>, px: &ProxyStats) {
    out.extend_from_slice(
        b"<p>Choose the action to perform on the checked servers: <select name=\"action\"><option value=\"\"></option>",
    );
    for (v, label) in ADMIN_ACTIONS {
        let _ = write!(out, "<option value=\"{v}\">{label}</option>");
    }
    let _ = writeln!(
        out,
        "</select><input type=\"hidden\" name=\"b\" value=\"#{}\"><input type=\"submit\" value=\"Apply\"></p></form>",
        px.iid
    );
}

/// Text shown for an admin result code (`;st=`).
pub fn status_message(code: &str) -> &'static str {
    match code {
        "DONE" => "Action processed successfully.",
        "NONE" => "Nothing has changed.",
        "PART" => "Action not processed for some of the servers.",
        "ERRP" => "Action not processed: invalid parameters.",
        "EXCD" => "Action not processed: request too large.",
        "DENY" => "Action denied.",
        _ => "Unexpected result.",
    }
}

fn link(out: &mut Vec<u8>, uri: &str, suffix: &str, text: &str) {
    out.extend_from_slice(b"<li><a href=\"");
    escape_html(out, uri);
    escape_html(out, suffix);
    out.extend_from_slice(b"\">");
    escape_html(out, text);
    out.extend_from_slice(b"</a></li>\n");
}

fn header(snap: &Snapshot, opts: &HtmlOptions, out: &mut Vec<u8>) {
    let p = &snap.process;
    out.extend_from_slice(b"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n");
    if let Some(r) = opts.refresh {
        let _ = writeln!(out, "<meta http-equiv=\"refresh\" content=\"{r}\">");
    }
    out.extend_from_slice(b"<title>Statistics Report for ");
    escape_html(out, &p.name);
    out.extend_from_slice(b"</title>\n<style>\n");
    out.extend_from_slice(STYLE.as_bytes());
    out.extend_from_slice(b"</style></head>\n<body>\n<h1>");
    escape_html(out, &p.name);
    if !opts.hide_version && !p.version.is_empty() {
        out.extend_from_slice(b" version ");
        escape_html(out, &p.version);
    }
    let _ = write!(out, "</h1>\n<h2>Statistics Report for pid {}", p.pid);
    if !p.node.is_empty() {
        out.extend_from_slice(b" on ");
        escape_html(out, &p.node);
    }
    out.extend_from_slice(b"</h2>\n");
    if let Some(st) = &opts.status {
        let _ = writeln!(out, "<p class=\"msg\">{}</p>", status_message(st));
    }
    out.extend_from_slice(b"<div class=\"top\"><div><b>General process information</b><br>\n");
    let _ = write!(
        out,
        "pid = {} (nbthread = {})<br>\nuptime = {}<br>\nmaxconn = {}; maxsock = {}; ulimit-n = {}<br>\n\
current conns = {}; conn rate = {}/sec; sess rate = {}/sec<br>\nrunning tasks: {}/{}; idle = {} %",
        p.pid,
        p.nbthread,
        format_uptime(p.uptime_secs),
        p.maxconn,
        p.maxsock,
        p.ulimit_n,
        p.curr_conns,
        p.conn_rate,
        p.sess_rate,
        p.run_queue,
        p.tasks,
        p.idle_pct
    );
    if !p.description.is_empty() {
        out.extend_from_slice(b"<br>\n");
        escape_html(out, &p.description);
    }
    out.extend_from_slice(b"</div>\n<table class=\"lgd\">\n");
    for (class, label) in [
        ("active_up", "active UP"),
        ("backup_up", "backup UP"),
        ("active_going_down", "active UP, going down"),
        ("backup_going_down", "backup UP, going down"),
        ("active_going_up", "active DOWN, going up"),
        ("backup_going_up", "backup DOWN, going up"),
        ("active_down", "active or backup DOWN"),
        ("active_no_check", "not checked"),
        ("maintain", "DOWN for maintenance (MAINT)"),
        ("active_draining", "draining (DRAIN) or not balanced (NOLB)"),
    ] {
        let _ = writeln!(
            out,
            "<tr><td class=\"{class}\">&nbsp;&nbsp;&nbsp;</td><td>{label}</td></tr>"
        );
    }
    out.extend_from_slice(b"</table>\n<div><b>Display options</b><ul>\n");
    if opts.hide_down {
        link(out, &opts.uri, "", "Show all servers");
    } else {
        link(out, &opts.uri, ";up", "Hide 'DOWN' servers");
    }
    if opts.refresh.is_some() {
        link(out, &opts.uri, ";norefresh", "Disable refresh");
    }
    link(out, &opts.uri, "", "Refresh now");
    link(out, &opts.uri, ";csv;norefresh", "CSV export");
    link(out, &opts.uri, ";json;norefresh", "JSON export");
    out.extend_from_slice(b"</ul></div></div>\n");
}

/// Appends the whole page for `snap` to `out`.
pub fn html(snap: &Snapshot, opts: &HtmlOptions, out: &mut Vec<u8>) {
    header(snap, opts, out);
    let in_scope = |px: &ProxyStats| {
        opts.scope
            .as_deref()
            .is_none_or(|s| s.is_empty() || px.name.contains(s))
    };
    let mut i = 0;
    let proxies = &snap.proxies;
    while i < proxies.len() {
        // Entries of one proxy (a `listen` is a frontend then a backend).
        let mut j = i + 1;
        while j < proxies.len()
            && proxies[j].name == proxies[i].name
            && proxies[j].iid == proxies[i].iid
        {
            j += 1;
        }
        let group = &proxies[i..j];
        i = j;
        if !in_scope(&group[0]) {
            continue;
        }
        let admin = opts.admin
            && group
                .iter()
                .any(|p| p.kind == ProxyKind::Backend && !p.servers.is_empty());
        if admin {
            out.extend_from_slice(b"<form method=\"post\" action=\"");
            escape_html(out, &opts.uri);
            out.extend_from_slice(b"\">\n");
        }
        table_head(out, &group[0].name, admin);
        for px in group {
            match px.kind {
                ProxyKind::Frontend => frontend_row(out, px, admin),
                ProxyKind::Backend => {
                    for sv in &px.servers {
                        let down = matches!(
                            sv.state,
                            ServerState::Down | ServerState::Maint | ServerState::MaintVia(_)
                        );
                        if !(opts.hide_down && down) {
                            server_row(out, sv, admin, opts.show_legends);
                        }
                    }
                    backend_row(out, px, admin);
                }
            }
        }
        out.extend_from_slice(b"</table>\n");
        if admin {
            if let Some(be) = group.iter().find(|p| p.kind == ProxyKind::Backend) {
                admin_form_tail(out, be);
            }
        }
    }
    out.extend_from_slice(b"</body></html>\n");
}
