//! Serving the stats page over HTTP: URI options, `stats auth`, admin
//! actions.
//!
//! HAProxy's conventions: a request belongs to the stats page when its
//! URI (path and query, as sent) *starts with* the `stats uri` (default
//! `/haproxy?stats`). The rest of the URI may hold options, in any order:
//! `;csv` (CSV), `;json` (typed JSON), `;json-schema`, `;norefresh` (no
//! `Refresh` header), `;up` (hide DOWN servers), `;st=CODE` (result of an
//! admin action) and `scope=NAME` (after `?` or `;`, from the page's
//! filter). So `/stats;csv`, `/stats;csv;norefresh` and, with the default
//! URI, `/haproxy?stats;csv` all work.
//!
//! A POST to the stats URI is an admin action (form fields `s`, `action`,
//! `b`); it is only honored with `stats admin` (`StatsConfig::admin`), and
//! answered with a 303 redirect to `<uri>;st=CODE`.

use crate::html::{html, HtmlOptions};
use crate::model::Snapshot;
use crate::stat::{csv, json};

/// The stats page settings of one proxy (`stats ...` keywords).
#[derive(Clone, Debug, PartialEq)]
pub struct StatsConfig {
    /// `stats uri`. Default is `"/haproxy?stats"`.
    pub uri: String,
    /// `stats realm`. Default is `"HAProxy Statistics"`.
    pub realm: String,
    /// `stats auth user:password` lines; empty means no authentication.
    /// Default is empty.
    pub users: Vec<(String, String)>,
    /// `stats refresh` in seconds. Default is `None`.
    pub refresh: Option<u32>,
    /// `stats admin` condition, already evaluated by the caller for this
    /// request. Default is `false`.
    pub admin: bool,
    /// `stats show-legends`. Default is `false`.
    pub show_legends: bool,
    /// `stats hide-version`. Default is `false`.
    pub hide_version: bool,
}

impl Default for StatsConfig {
    fn default() -> Self {
        StatsConfig {
            uri: "/haproxy?stats".to_string(),
            realm: "HAProxy Statistics".to_string(),
            users: Vec::new(),
            refresh: None,
            admin: false,
            show_legends: false,
            hide_version: false,
        }
    }
}

/// A request as the session parsed it.
#[derive(Clone, Copy, Debug, Default)]
pub struct StatsRequest<'a> {
    /// Method, e.g. `b"GET"`.
    pub method: &'a [u8],
    /// Request target as received (path and query).
    pub uri: &'a [u8],
    /// Value of the `Authorization` header, if any.
    pub authorization: Option<&'a [u8]>,
    /// Request body (form data of an admin POST; empty otherwise).
    pub body: &'a [u8],
}

/// A complete answer to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatsResponse {
    /// HTTP status code.
    pub status: u16,
    /// `Content-Type` value.
    pub content_type: &'static str,
    /// Other headers (`Cache-Control`, `Refresh`, `WWW-Authenticate`,
    /// `Location`).
    pub headers: Vec<(&'static str, String)>,
    /// Body. For HEAD, send the headers only.
    pub body: Vec<u8>,
}

/// Output format asked for in the URI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatsFormat {
    /// The HTML page. Default.
    Html,
    /// `;csv`.
    Csv,
    /// `;json`.
    Json,
    /// `;json-schema`.
    JsonSchema,
}

/// Options found after the stats URI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatsQuery {
    /// Output format.
    pub format: StatsFormat,
    /// `;norefresh`.
    pub norefresh: bool,
    /// `;up`.
    pub hide_down: bool,
    /// `scope=NAME` (percent-decoded).
    pub scope: Option<String>,
    /// `;st=CODE`.
    pub st: Option<String>,
}

/// The stats side of the application: snapshots, and admin actions.
pub trait StatsSource {
    /// Takes a snapshot of all counters.
    fn snapshot(&self) -> Snapshot;
    /// Applies an admin action; returns the result code. Default answers
    /// [`AdminResult::Denied`].
    fn apply(&self, req: &AdminRequest) -> AdminResult {
        let _ = req;
        AdminResult::Denied
    }
}

/// Admin action posted by the page's form (HAProxy's `action` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdminAction {
    /// `ready`: leave DRAIN/MAINT.
    Ready,
    /// `drain`.
    Drain,
    /// `maint`.
    Maint,
    /// `dhlth`: disable health checks.
    DisableHealth,
    /// `ehlth`: enable health checks.
    EnableHealth,
    /// `hrunn`: force health UP.
    HealthUp,
    /// `hnolb`: force health NOLB.
    HealthNoLb,
    /// `hdown`: force health DOWN.
    HealthDown,
    /// `dagent`: disable agent checks.
    DisableAgent,
    /// `eagent`: enable agent checks.
    EnableAgent,
    /// `arunn`: force agent UP.
    AgentUp,
    /// `adown`: force agent DOWN.
    AgentDown,
    /// `shutdown`: kill the server's sessions.
    Shutdown,
}

impl AdminAction {
    /// Parses an `action` form value.
    pub fn parse(v: &str) -> Option<Self> {
        Some(match v {
            "ready" => Self::Ready,
            "drain" => Self::Drain,
            "maint" => Self::Maint,
            "dhlth" => Self::DisableHealth,
            "ehlth" => Self::EnableHealth,
            "hrunn" => Self::HealthUp,
            "hnolb" => Self::HealthNoLb,
            "hdown" => Self::HealthDown,
            "dagent" => Self::DisableAgent,
            "eagent" => Self::EnableAgent,
            "arunn" => Self::AgentUp,
            "adown" => Self::AgentDown,
            "shutdown" => Self::Shutdown,
            _ => return None,
        })
    }
}

/// Which backend an admin form names (`b=#3` by id, or a name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendRef {
    /// `#<iid>`.
    Id(u32),
    /// A backend name.
    Name(String),
}

/// A parsed admin POST.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdminRequest {
    /// Target backend.
    pub backend: BackendRef,
    /// Action to apply.
    pub action: AdminAction,
    /// Checked server names.
    pub servers: Vec<String>,
}

/// Outcome of an admin action, sent back as `;st=CODE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdminResult {
    /// `DONE`: applied to every server.
    Done,
    /// `NONE`: nothing changed.
    None,
    /// `PART`: applied to some servers only.
    Partial,
    /// `ERRP`: invalid parameters.
    BadParams,
    /// `DENY`: not allowed.
    Denied,
}

impl AdminResult {
    /// The `;st=` code.
    pub fn code(self) -> &'static str {
        match self {
            AdminResult::Done => "DONE",
            AdminResult::None => "NONE",
            AdminResult::Partial => "PART",
            AdminResult::BadParams => "ERRP",
            AdminResult::Denied => "DENY",
        }
    }
}

/// Whether `uri` belongs to the stats page whose URI is `stats_uri`.
pub fn matches_stats_uri(uri: &[u8], stats_uri: &str) -> bool {
    uri.starts_with(stats_uri.as_bytes())
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes `application/x-www-form-urlencoded` text (`+` is a space).
pub fn url_decode(s: &[u8]) -> String {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < s.len() => match (hex(s[i + 1]), hex(s[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses the options of a stats URI; `None` when `uri` is not under
/// `stats_uri`.
pub fn parse_stats_uri(uri: &[u8], stats_uri: &str) -> Option<StatsQuery> {
    if !matches_stats_uri(uri, stats_uri) {
        return None;
    }
    let rest = &uri[stats_uri.len()..];
    let mut q = StatsQuery {
        format: StatsFormat::Html,
        norefresh: false,
        hide_down: false,
        scope: None,
        st: None,
    };
    for part in rest.split(|&b| b == b';' || b == b'?' || b == b'&') {
        match part {
            b"csv" => q.format = StatsFormat::Csv,
            b"json" => q.format = StatsFormat::Json,
            b"json-schema" => q.format = StatsFormat::JsonSchema,
            b"norefresh" => q.norefresh = true,
            b"up" => q.hide_down = true,
            _ => {
                if let Some(v) = part.strip_prefix(b"st=") {
                    q.st = Some(url_decode(v));
                } else if let Some(v) = part.strip_prefix(b"scope=") {
                    q.scope = Some(url_decode(v));
                }
            }
        }
    }
    Some(q)
}

/// Decodes standard base64 (RFC 4648, with or without `=` padding).
/// Written here rather than taken from a crate: it is 30 lines, used once
/// per stats request, and the crate has no other dependency.
pub fn base64_decode(s: &[u8]) -> Option<Vec<u8>> {
    fn val(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let s = s
        .strip_suffix(b"==")
        .or_else(|| s.strip_suffix(b"="))
        .unwrap_or(s);
    if s.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() / 4 * 3 + 2);
    for chunk in s.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c)? << (18 - 6 * i);
        }
        let bytes = [(acc >> 16) as u8, (acc >> 8) as u8, acc as u8];
        out.extend_from_slice(&bytes[..chunk.len() - 1]);
    }
    Some(out)
}

/// Compares without an early exit, so the time does not tell how much of
/// a password matched.
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `stats auth` check: `header_value` is the `Authorization` header
/// (`Basic <base64 of user:password>`, scheme case-insensitive). True when
/// it names one of `users` with the right password, or when `users` is
/// empty (no authentication configured).
pub fn check_basic_auth(header_value: Option<&[u8]>, users: &[(String, String)]) -> bool {
    if users.is_empty() {
        return true;
    }
    let Some(h) = header_value else {
        return false;
    };
    let h = h.trim_ascii();
    if h.len() < 6 || !h[..6].eq_ignore_ascii_case(b"basic ") {
        return false;
    }
    let Some(cred) = base64_decode(h[6..].trim_ascii()) else {
        return false;
    };
    let Some(colon) = cred.iter().position(|&b| b == b':') else {
        return false;
    };
    let (user, pass) = (&cred[..colon], &cred[colon + 1..]);
    users.iter().fold(false, |ok, (u, p)| {
        ok | (ct_eq(u.as_bytes(), user) & ct_eq(p.as_bytes(), pass))
    })
}

/// The 401 answer carrying `WWW-Authenticate: Basic realm="<realm>"`.
pub fn unauthorized(realm: &str) -> StatsResponse {
    let realm: String = realm.chars().filter(|&c| c != '"' && c != '\\').collect();
    StatsResponse {
        status: 401,
        content_type: "text/html",
        headers: vec![
            ("Cache-Control", "no-cache".into()),
            ("WWW-Authenticate", format!("Basic realm=\"{realm}\"")),
        ],
        body: b"<html><body><h1>401 Unauthorized</h1>\nA valid user name and password are required.\n</body></html>\n".to_vec(),
    }
}

/// Parses an admin form body: `s=srv1&s=srv2&action=drain&b=%233`.
pub fn parse_admin_post(body: &[u8]) -> Result<AdminRequest, AdminResult> {
    let mut backend = None;
    let mut action = None;
    let mut servers = Vec::new();
    for pair in body.split(|&b| b == b'&') {
        let Some(eq) = pair.iter().position(|&b| b == b'=') else {
            continue;
        };
        let (k, v) = (&pair[..eq], url_decode(&pair[eq + 1..]));
        match k {
            b"s" => servers.push(v),
            b"action" => action = AdminAction::parse(&v),
            b"b" => {
                backend = Some(match v.strip_prefix('#') {
                    Some(id) => BackendRef::Id(id.parse().map_err(|_| AdminResult::BadParams)?),
                    None => BackendRef::Name(v),
                })
            }
            _ => {}
        }
    }
    match (backend, action) {
        (Some(backend), Some(action)) if !servers.is_empty() => Ok(AdminRequest {
            backend,
            action,
            servers,
        }),
        (Some(_), Some(_)) => Err(AdminResult::None),
        _ => Err(AdminResult::BadParams),
    }
}

fn redirect(cfg: &StatsConfig, r: AdminResult) -> StatsResponse {
    StatsResponse {
        status: 303,
        content_type: "text/plain",
        headers: vec![
            ("Cache-Control", "no-cache".into()),
            ("Location", format!("{};st={}", cfg.uri, r.code())),
        ],
        body: Vec::new(),
    }
}

/// A JSON schema of the `;json` output.
pub const JSON_SCHEMA: &str = r#"{"$schema":"http://json-schema.org/draft-04/schema#","title":"Fairlead stats (HAProxy typed output)","type":"array","items":{"type":"array","items":{"type":"object","required":["objType","proxyId","id","field","processNum","tags","value"],"properties":{"objType":{"enum":["Frontend","Backend","Server"]},"proxyId":{"type":"integer","minimum":0},"id":{"type":"integer","minimum":0},"field":{"type":"object","required":["pos","name"],"properties":{"pos":{"type":"integer","minimum":0},"name":{"type":"string"}}},"processNum":{"type":"integer","minimum":1},"tags":{"type":"object","required":["origin","nature","scope"],"properties":{"origin":{"enum":["Metric","Status","Key","Config"]},"nature":{"enum":["Gauge","Limit","Min","Max","Rate","Counter","Duration","Age","Time","Name","Output","Avg"]},"scope":{"enum":["Cluster","Process","Service","System"]}}},"value":{"type":"object","required":["type","value"],"properties":{"type":{"enum":["s32","s64","u32","u64","str"]},"value":{"type":["integer","string"]}}}}}}}"#;

/// Answers a request to the stats page: `None` when `req.uri` is not
/// under `cfg.uri` (the caller goes on with normal processing).
/// Otherwise: 401 when `stats auth` fails; for POST, the admin action
/// (applied through `src` when `cfg.admin`, else denied) and a 303 to
/// `<uri>;st=CODE`; for any other method, the page in the format the URI
/// asks for, with `Cache-Control: no-cache` and, unless `;norefresh`,
/// `Refresh: <cfg.refresh>`.
pub fn handle_stats_request<S: StatsSource + ?Sized>(
    req: &StatsRequest<'_>,
    cfg: &StatsConfig,
    src: &S,
) -> Option<StatsResponse> {
    let q = parse_stats_uri(req.uri, &cfg.uri)?;
    if !check_basic_auth(req.authorization, &cfg.users) {
        return Some(unauthorized(&cfg.realm));
    }
    if req.method.eq_ignore_ascii_case(b"POST") {
        if !cfg.admin {
            return Some(redirect(cfg, AdminResult::Denied));
        }
        let result = match parse_admin_post(req.body) {
            Ok(a) => src.apply(&a),
            Err(r) => r,
        };
        return Some(redirect(cfg, result));
    }
    let mut headers = vec![("Cache-Control", "no-cache".to_string())];
    if let (Some(r), false) = (cfg.refresh, q.norefresh) {
        headers.push(("Refresh", r.to_string()));
    }
    let mut body = Vec::new();
    let content_type = match q.format {
        StatsFormat::Csv => {
            csv(&src.snapshot(), &mut body);
            "text/plain"
        }
        StatsFormat::Json => {
            json(&src.snapshot(), &mut body);
            "application/json"
        }
        StatsFormat::JsonSchema => {
            body.extend_from_slice(JSON_SCHEMA.as_bytes());
            "application/json"
        }
        StatsFormat::Html => {
            let opts = HtmlOptions {
                refresh: cfg.refresh.filter(|_| !q.norefresh),
                uri: cfg.uri.clone(),
                show_legends: cfg.show_legends,
                admin: cfg.admin,
                hide_down: q.hide_down,
                scope: q.scope.clone(),
                hide_version: cfg.hide_version,
                status: q.st.clone(),
            };
            html(&src.snapshot(), &opts, &mut body);
            "text/html; charset=utf-8"
        }
    };
    Some(StatsResponse {
        status: 200,
        content_type,
        headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_vectors() {
        for (enc, dec) in [
            ("", ""),
            ("Zg==", "f"),
            ("Zm8=", "fo"),
            ("Zm9v", "foo"),
            ("Zm9vYg==", "foob"),
            ("Zm9vYmE=", "fooba"),
            ("Zm9vYmFy", "foobar"),
            ("Zm9vYmFy", "foobar"),
            ("YWRtaW46cHc", "admin:pw"),
        ] {
            assert_eq!(
                base64_decode(enc.as_bytes()).unwrap(),
                dec.as_bytes(),
                "{enc}"
            );
        }
        assert!(base64_decode(b"Zm9v!").is_none());
        assert!(base64_decode(b"Z").is_none());
    }

    #[test]
    fn url_decoding() {
        assert_eq!(url_decode(b"%233"), "#3");
        assert_eq!(url_decode(b"a+b%2Cc"), "a b,c");
        assert_eq!(url_decode(b"bad%2"), "bad%2");
        assert_eq!(url_decode(b"%zz"), "%zz");
    }
}
