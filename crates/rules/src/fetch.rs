//! Sample fetches: the catalog (name, arguments, output type, where the
//! data exists) and their evaluation against a [`Txn`].
//!
//! Multi-value fetches (`hdr`, `cook`, `url_param`, `res.hdr`) give every
//! occurrence to an ACL ([`Fetch::each`]) and one occurrence to a sample
//! context ([`Fetch::one`]): the one selected by the occurrence argument,
//! the last one by default for headers, as HAProxy does.

use crate::sample::{Sample, SmpType};
use crate::txn::{Msg, Txn, VarRef};
use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;

/// Where a fetch's data comes from (HAProxy's SMP_USE_* classes), as bits.
pub mod usage {
    /// Constants, variables, process state: valid everywhere.
    pub const INTERNAL: u8 = 1;
    /// The connection's addresses.
    pub const L4: u8 = 2;
    /// The TLS layer.
    pub const L5: u8 = 4;
    /// TCP-mode request contents.
    pub const L6REQ: u8 = 8;
    /// The HTTP request.
    pub const L7REQ: u8 = 16;
    /// The HTTP response.
    pub const L7RES: u8 = 32;
    /// TCP-mode response contents (`tcp-response content`).
    pub const L6RES: u8 = 64;

    /// What each rule set may read.
    pub const TCP_CONNECTION: u8 = INTERNAL | L4;
    pub const TCP_SESSION: u8 = INTERNAL | L4 | L5;
    pub const TCP_CONTENT: u8 = INTERNAL | L4 | L5 | L6REQ | L7REQ;
    pub const HTTP_REQUEST: u8 = INTERNAL | L4 | L5 | L6REQ | L7REQ;
    pub const HTTP_RESPONSE: u8 = INTERNAL | L4 | L5 | L6REQ | L7REQ | L7RES | L6RES;

    /// HAProxy's words for the data classes, for error messages.
    pub fn describe(bits: u8) -> &'static str {
        if bits & L7RES != 0 {
            "HTTP response headers"
        } else if bits & L6RES != 0 {
            "response buffer contents"
        } else if bits & L7REQ != 0 {
            "HTTP request headers"
        } else if bits & L6REQ != 0 {
            "request buffer contents"
        } else if bits & L5 != 0 {
            "the TLS layer"
        } else {
            "the connection"
        }
    }
}

/// A fetch that needs data that has not arrived yet (three-valued logic's
/// MISS): the rule set waits, if it can.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait;

/// What a fetch reads.
#[derive(Debug, Clone)]
enum Kind {
    Method,
    ProtoHttp,
    Path,
    PathQ,
    Base,
    Url,
    Query,
    UrlParam(String, u8),
    ReqVer,
    Hdr {
        name: String,
        occ: i64,
        full: bool,
    },
    HdrCnt(String),
    HdrNames,
    Cook(String),
    CookCnt(String),
    HttpAuth(Arc<crate::userlist::Userlist>),
    HttpAuthGroup(Arc<crate::userlist::Userlist>),
    HttpAuthUser,
    ReqBody,
    ReqBodyLen,
    ReqLen,
    ReqPayload(usize, usize),
    ReqSslSni,
    ReqSslHelloType,
    /// `req.rdp_cookie([name])`; an empty name is any cookie.
    RdpCookie(Vec<u8>),
    /// `req.rdp_cookie_cnt([name])`.
    RdpCookieCnt(Vec<u8>),
    ResLen,
    ResPayload(usize, usize),
    WaitEnd,
    Status,
    ResVer,
    ResHdr {
        name: String,
        occ: i64,
        full: bool,
    },
    ResHdrCnt(String),
    ResCook(String),
    Src,
    SrcPort,
    Dst,
    DstPort,
    SslFc,
    SslFcSni,
    SslFcAlpn,
    SslFcProtocol,
    SslFcCipher,
    SslFcIsResumed,
    SslCUsed,
    SslCVerify,
    SslCSDn,
    FcRcvdProxy,
    FcPpAuthority,
    FcPpUniqueId,
    Var(VarRef, Option<String>),
    Nbsrv(Option<String>),
    BeName,
    FeName,
    SrvName,
    SrvId,
    Hostname,
    UniqueId,
    Uuid,
    Rand(Option<u64>),
    Const(Sample<'static>),
    Env(String),
    Date(i64),
    Pid,
    /// `sc_*`, `scN_*`, `src_*`, `table_avl`, `table_cnt`.
    Stick(Box<crate::stick::StickKind>),
}

/// A compiled fetch.
#[derive(Debug, Clone)]
pub struct Fetch {
    kind: Kind,
    out: SmpType,
    usage: u8,
    multi: bool,
}

mod catalog;
mod http;

pub use catalog::{canonical, exists, unknown, ALIASES, FETCHES};
use http::{count_values, each_cookie, each_header, each_url_param, pathq_of};
pub use http::{last_header, path_of, query_of, split_values};

fn arg_count(name: &str, args: &[String], min: usize, max: usize) -> Result<(), String> {
    if args.len() < min || args.len() > max {
        let want = match (min, max) {
            (0, 0) => "no argument".to_string(),
            (a, b) if a == b => format!("{a} argument(s)"),
            (a, b) => format!("{a} to {b} arguments"),
        };
        return Err(format!(
            "fetch method '{name}' expects {want} (got {})",
            args.len()
        ));
    }
    Ok(())
}

fn int_arg(name: &str, s: &str) -> Result<i64, String> {
    s.trim()
        .parse::<i64>()
        .map_err(|_| format!("fetch method '{name}': invalid integer '{s}'"))
}

impl Fetch {
    /// Compiles `name(args)`. Userlists are looked up in `env`.
    pub fn parse(name: &str, args: &[String], env: &crate::Env) -> Result<Fetch, String> {
        let canon = canonical(name);
        if let Some(k) = crate::stick::StickKind::parse(canon, args, env) {
            let k = k?;
            return Ok(Fetch {
                out: k.out_type(),
                kind: Kind::Stick(Box::new(k)),
                usage: usage::L4,
                multi: false,
            });
        }
        let Some(&(_, out, usage, _)) = FETCHES.iter().find(|f| f.0 == canon) else {
            return Err(unknown(name));
        };
        let a = |i: usize| args.get(i).map(String::as_str);
        let userlist = |i: usize| -> Result<Arc<crate::userlist::Userlist>, String> {
            let ul =
                a(i).ok_or_else(|| format!("fetch method '{name}' expects a userlist name"))?;
            env.userlists
                .get(ul)
                .cloned()
                .ok_or_else(|| format!("fetch method '{name}': unable to find userlist '{ul}'"))
        };
        let occ = |i: usize| -> Result<i64, String> { a(i).map_or(Ok(-1), |s| int_arg(name, s)) };
        let mut multi = false;
        let kind = match canon {
            "method" | "req.proto_http" | "path" | "pathq" | "base" | "url" | "query"
            | "req.ver" | "req.hdr_names" | "req.body" | "req.body_len" | "req.len"
            | "req.ssl_sni" | "req.ssl_hello_type" | "res.len" | "wait_end" | "status"
            | "res.ver" | "src" | "src_port" | "dst" | "dst_port" | "ssl_fc" | "ssl_fc_sni"
            | "ssl_fc_alpn" | "ssl_fc_protocol" | "ssl_fc_cipher" | "ssl_fc_is_resumed"
            | "ssl_c_used" | "ssl_c_verify" | "ssl_c_s_dn" | "be_name" | "fe_name" | "srv_name"
            | "srv_id" | "hostname" | "always_true" | "always_false" | "pid" | "http_auth_user"
            | "unique-id" | "fc_rcvd_proxy" | "fc_pp_authority" | "fc_pp_unique_id" => {
                arg_count(name, args, 0, 0)?;
                simple_kind(canon)
            }
            "url_param" => {
                arg_count(name, args, 0, 2)?;
                // The parameters start after the first `delim` ('?' by
                // default): HAProxy's `http_find_param_list`.
                let delim = match a(1) {
                    None => b'?',
                    Some(d) if d.len() == 1 => d.as_bytes()[0],
                    Some(d) => {
                        return Err(format!("fetch method '{name}': invalid delimiter '{d}'"))
                    }
                };
                multi = true;
                Kind::UrlParam(a(0).unwrap_or("").to_string(), delim)
            }
            "req.hdr" | "req.fhdr" | "res.hdr" | "res.fhdr" => {
                arg_count(name, args, 0, 2)?;
                multi = true;
                let name_arg = a(0).unwrap_or("").to_ascii_lowercase();
                let full = canon.ends_with("fhdr");
                if canon.starts_with("req") {
                    Kind::Hdr {
                        name: name_arg,
                        occ: occ(1)?,
                        full,
                    }
                } else {
                    Kind::ResHdr {
                        name: name_arg,
                        occ: occ(1)?,
                        full,
                    }
                }
            }
            "req.hdr_cnt" | "res.hdr_cnt" => {
                arg_count(name, args, 0, 1)?;
                let n = a(0).unwrap_or("").to_ascii_lowercase();
                if canon.starts_with("req") {
                    Kind::HdrCnt(n)
                } else {
                    Kind::ResHdrCnt(n)
                }
            }
            "req.cook" | "res.cook" => {
                arg_count(name, args, 0, 1)?;
                multi = true;
                let n = a(0).unwrap_or("").to_string();
                if canon.starts_with("req") {
                    Kind::Cook(n)
                } else {
                    Kind::ResCook(n)
                }
            }
            "req.rdp_cookie" | "req.rdp_cookie_cnt" => {
                arg_count(name, args, 0, 1)?;
                let n = a(0).unwrap_or("").as_bytes().to_vec();
                if canon == "req.rdp_cookie" {
                    Kind::RdpCookie(n)
                } else {
                    Kind::RdpCookieCnt(n)
                }
            }
            "req.cook_cnt" => {
                arg_count(name, args, 0, 1)?;
                Kind::CookCnt(a(0).unwrap_or("").to_string())
            }
            "http_auth" => {
                arg_count(name, args, 1, 1)?;
                Kind::HttpAuth(userlist(0)?)
            }
            "http_auth_group" => {
                arg_count(name, args, 1, 1)?;
                multi = true;
                Kind::HttpAuthGroup(userlist(0)?)
            }
            "req.payload" | "res.payload" => {
                arg_count(name, args, 2, 2)?;
                let off = int_arg(name, &args[0])?;
                let len = int_arg(name, &args[1])?;
                if off < 0 || len < 0 {
                    return Err(format!("fetch method '{name}': negative offset or length"));
                }
                if canon == "req.payload" {
                    Kind::ReqPayload(off as usize, len as usize)
                } else {
                    Kind::ResPayload(off as usize, len as usize)
                }
            }
            "var" => {
                arg_count(name, args, 1, 2)?;
                Kind::Var(VarRef::parse(&args[0])?, a(1).map(str::to_string))
            }
            "nbsrv" => {
                arg_count(name, args, 0, 1)?;
                Kind::Nbsrv(a(0).map(str::to_string))
            }
            "uuid" => {
                arg_count(name, args, 0, 1)?;
                if a(0).is_some_and(|v| v != "4") {
                    return Err(format!(
                        "fetch method '{name}': only version 4 is supported"
                    ));
                }
                Kind::Uuid
            }
            "rand" => {
                arg_count(name, args, 0, 1)?;
                Kind::Rand(
                    a(0).map(|s| int_arg(name, s))
                        .transpose()?
                        .map(|v| v as u64),
                )
            }
            "int" | "str" | "bool" | "ipv4" | "ipv6" | "meth" => {
                arg_count(name, args, 1, 1)?;
                Kind::Const(constant(canon, &args[0])?)
            }
            "env" => {
                arg_count(name, args, 1, 1)?;
                Kind::Env(args[0].clone())
            }
            "date" => {
                arg_count(name, args, 0, 2)?;
                Kind::Date(a(0).map_or(Ok(0), |s| int_arg(name, s))?)
            }
            _ => return Err(format!("unknown fetch method '{name}'")),
        };
        Ok(Fetch {
            kind,
            out,
            usage,
            multi,
        })
    }

    pub fn out_type(&self) -> SmpType {
        self.out
    }

    /// The data classes this fetch needs ([`usage`]).
    pub fn usage(&self) -> u8 {
        self.usage
    }

    /// Whether a value that does not match may match later, once more
    /// data arrived (HAProxy's `SMP_F_MAY_CHANGE` on `req.len`): an ACL
    /// then gives MISS until the inspection is final.
    pub fn may_change(&self) -> bool {
        matches!(self.kind, Kind::ReqLen | Kind::ResLen)
    }

    /// Whether the fetch gives several values to an ACL.
    pub fn is_multi(&self) -> bool {
        self.multi
    }

    /// The value in a sample context (one occurrence).
    pub fn one<'a>(&'a self, txn: &'a dyn Txn) -> Result<Option<Sample<'a>>, Wait> {
        if !self.multi {
            return self.single(txn);
        }
        let mut last = None;
        let want = self.occurrence();
        let mut n = 0i64;
        let mut all: Vec<Sample<'a>> = Vec::new();
        self.each(txn, &mut |s| {
            n += 1;
            match want {
                // Last occurrence (the default for headers).
                -1 => last = Some(s),
                0 => {
                    last = Some(s);
                    return true;
                }
                k if k > 0 => {
                    if n == k {
                        last = Some(s);
                        return true;
                    }
                }
                _ => all.push(s),
            }
            false
        })?;
        if want < -1 {
            // -1 is the last value, -2 the one before it.
            let idx = all.len() as i64 + want;
            return Ok((idx >= 0).then(|| all.swap_remove(idx as usize)));
        }
        Ok(last)
    }

    /// HAProxy's occurrence argument: 0 means the first, positive counts
    /// from the first, negative from the last (-1, the default for
    /// headers, is the last).
    fn occurrence(&self) -> i64 {
        match &self.kind {
            Kind::Hdr { occ, .. } | Kind::ResHdr { occ, .. } => *occ,
            // A named cookie: the last occurrence (`smp_fetch_cookie`);
            // without a name, the first cookie.
            Kind::Cook(n) | Kind::ResCook(n) if !n.is_empty() => -1,
            // URL parameters and the rest: the first occurrence.
            _ => 0,
        }
    }

    /// Calls `f` with each value until it returns true (ACL context).
    /// Returns whether `f` returned true.
    pub fn each<'a>(
        &'a self,
        txn: &'a dyn Txn,
        f: &mut dyn FnMut(Sample<'a>) -> bool,
    ) -> Result<bool, Wait> {
        match &self.kind {
            Kind::Hdr { name, full, .. } => {
                Ok(txn.req().is_some_and(|m| each_header(m, name, *full, f)))
            }
            Kind::ResHdr { name, full, .. } => {
                Ok(txn.res().is_some_and(|m| each_header(m, name, *full, f)))
            }
            Kind::Cook(name) => Ok(txn
                .req()
                .is_some_and(|m| each_cookie(m, b"cookie", name, f))),
            Kind::ResCook(name) => Ok(txn
                .res()
                .is_some_and(|m| each_cookie(m, b"set-cookie", name, f))),
            Kind::UrlParam(name, delim) => Ok(txn
                .req()
                .is_some_and(|m| each_url_param(m.target(), name.as_bytes(), *delim, f))),
            Kind::HttpAuthGroup(ul) => Ok(txn.req().is_some_and(|m| {
                let Some(user) = auth_user(m, ul) else {
                    return false;
                };
                for g in ul.groups_of(&user) {
                    if f(Sample::owned_str(g.as_bytes().to_vec())) {
                        return true;
                    }
                }
                false
            })),
            _ => match self.single(txn)? {
                Some(s) => Ok(f(s)),
                None => Ok(false),
            },
        }
    }

    fn single<'a>(&'a self, txn: &'a dyn Txn) -> Result<Option<Sample<'a>>, Wait> {
        let req = || txn.req();
        let s = match &self.kind {
            Kind::Method => req().map(|m| Sample::Meth(Cow::Borrowed(m.method()))),
            Kind::ProtoHttp => Some(Sample::Bool(req().is_some())),
            Kind::Path => req().map(|m| Sample::str(path_of(m.target()))),
            Kind::PathQ => req().map(|m| Sample::str(pathq_of(m.target()))),
            Kind::Url => req().map(|m| Sample::str(m.target())),
            Kind::Query => req().and_then(|m| query_of(m.target()).map(Sample::str)),
            Kind::Base => req().and_then(|m| {
                let host = last_header(m, b"host")?;
                let mut v = host.to_vec();
                v.extend_from_slice(path_of(m.target()));
                Some(Sample::owned_str(v))
            }),
            Kind::ReqVer => req().map(|m| version_str(m.version())),
            Kind::ResVer => txn.res().map(|m| version_str(m.version())),
            Kind::HdrCnt(n) => req().map(|m| Sample::Sint(count_values(m, n))),
            Kind::ResHdrCnt(n) => txn.res().map(|m| Sample::Sint(count_values(m, n))),
            Kind::HdrNames => req().map(|m| {
                let mut v = Vec::new();
                for i in 0..m.header_count() {
                    if i > 0 {
                        v.push(b',');
                    }
                    v.extend_from_slice(m.header(i).0);
                }
                Sample::owned_str(v)
            }),
            Kind::CookCnt(n) => req().map(|m| {
                let mut c = 0;
                each_cookie(m, b"cookie", n, &mut |_| {
                    c += 1;
                    false
                });
                Sample::Sint(c)
            }),
            Kind::HttpAuth(ul) => req().map(|m| Sample::Bool(auth_user(m, ul).is_some())),
            Kind::HttpAuthUser => req().and_then(|m| {
                let v = last_header(m, b"authorization")?;
                crate::userlist::basic_user(v).map(|u| Sample::owned_str(u.into_bytes()))
            }),
            Kind::ReqBody => txn.req_body().map(|b| Sample::Bin(Cow::Borrowed(b))),
            Kind::ReqBodyLen => txn.req_body().map(|b| Sample::Sint(b.len() as i64)),
            Kind::ReqLen => txn.payload().map(|p| Sample::Sint(p.len() as i64)),
            Kind::ResLen => txn.res_payload().map(|p| Sample::Sint(p.len() as i64)),
            Kind::WaitEnd if !txn.payload_final() => return Err(Wait),
            Kind::WaitEnd => Some(Sample::Bool(true)),
            Kind::ReqPayload(off, len) | Kind::ResPayload(off, len) => {
                let p = match &self.kind {
                    Kind::ReqPayload(..) => txn.payload(),
                    _ => txn.res_payload(),
                };
                let Some(p) = p else {
                    return Ok(None);
                };
                let end = if *len == 0 { p.len() } else { off + len };
                if p.len() < end || p.len() < *off {
                    return if txn.payload_final() {
                        Ok(None)
                    } else {
                        Err(Wait)
                    };
                }
                Some(Sample::Bin(Cow::Borrowed(&p[*off..end])))
            }
            Kind::ReqSslSni | Kind::ReqSslHelloType => {
                let Some(p) = txn.payload() else {
                    return Ok(None);
                };
                match crate::tlshello::parse(p) {
                    crate::tlshello::Hello::Incomplete if !txn.payload_final() => return Err(Wait),
                    crate::tlshello::Hello::Complete { sni } => match &self.kind {
                        Kind::ReqSslSni => sni.map(Sample::str),
                        _ => Some(Sample::Sint(1)),
                    },
                    _ => None,
                }
            }
            Kind::RdpCookie(n) | Kind::RdpCookieCnt(n) => return rdp_cookie(&self.kind, n, txn),
            Kind::Status => txn.res().map(|m| Sample::Sint(m.status() as i64)),
            // A UNIX socket client's address is 0.0.0.0 (see
            // `fairlead_net::unix`): no sample, as in HAProxy.
            Kind::Src => txn
                .src()
                .filter(|a| !a.ip().is_unspecified())
                .map(|a| ip_sample(a.ip())),
            Kind::SrcPort => txn
                .src()
                .filter(|a| !a.ip().is_unspecified())
                .map(|a| Sample::Sint(a.port() as i64)),
            Kind::Dst => txn.dst().map(|a| ip_sample(a.ip())),
            Kind::DstPort => txn.dst().map(|a| Sample::Sint(a.port() as i64)),
            Kind::SslFc => Some(Sample::Bool(txn.tls().is_some())),
            Kind::SslFcSni => txn
                .tls()
                .and_then(|t| t.sni)
                .map(|s| Sample::str(s.as_bytes())),
            Kind::SslFcAlpn => txn.tls().and_then(|t| t.alpn).map(Sample::str),
            Kind::SslFcProtocol => txn
                .tls()
                .and_then(|t| t.protocol)
                .map(|s| Sample::str(s.as_bytes())),
            Kind::SslFcCipher => txn
                .tls()
                .and_then(|t| t.cipher)
                .map(|s| Sample::str(s.as_bytes())),
            Kind::SslFcIsResumed => txn.tls().map(|t| Sample::Bool(t.resumed)),
            Kind::SslCUsed => txn.tls().map(|t| Sample::Bool(t.c_used)),
            Kind::SslCVerify => txn.tls().map(|t| Sample::Sint(t.c_verify)),
            Kind::SslCSDn => txn
                .tls()
                .and_then(|t| t.c_s_dn)
                .map(|s| Sample::str(s.as_bytes())),
            Kind::FcRcvdProxy => Some(Sample::Bool(txn.proxy().is_some())),
            Kind::FcPpAuthority => txn.proxy().and_then(|p| p.authority).map(Sample::str),
            Kind::FcPpUniqueId => txn.proxy().and_then(|p| p.unique_id).map(Sample::str),
            Kind::Var(v, default) => txn
                .var(v)
                .or_else(|| default.as_ref().map(|d| Sample::str(d.as_bytes()))),
            Kind::Nbsrv(be) => txn.nbsrv(be.as_deref()).map(Sample::Sint),
            Kind::BeName => txn.backend_name().map(|s| Sample::str(s.as_bytes())),
            Kind::FeName => Some(Sample::str(txn.frontend_name().as_bytes())),
            Kind::SrvName => txn.server_name().map(|s| Sample::str(s.as_bytes())),
            Kind::SrvId => txn.server_id().map(Sample::Sint),
            Kind::Hostname => Some(Sample::str(txn.hostname().as_bytes())),
            Kind::UniqueId => txn.unique_id().map(Sample::str),
            Kind::Uuid => Some(Sample::owned_str(uuid4().into_bytes())),
            Kind::Rand(range) => {
                let r = crate::rand::next_u32() as u64;
                Some(Sample::Sint(match range {
                    // HAProxy's `(u64)rand32 * (u64)range >> 32`, which
                    // wraps for a negative range.
                    Some(n) => (r.wrapping_mul(*n) >> 32) as i64,
                    None => r as i64,
                }))
            }
            Kind::Const(c) => Some(c.reborrow()),
            Kind::Env(name) => std::env::var(name)
                .ok()
                .map(|v| Sample::owned_str(v.into_bytes())),
            Kind::Date(off) => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64);
                Some(Sample::Sint(now.wrapping_add(*off)))
            }
            Kind::Pid => Some(Sample::Sint(std::process::id() as i64)),
            Kind::Stick(k) => k.eval(txn),
            Kind::Hdr { .. }
            | Kind::ResHdr { .. }
            | Kind::Cook(_)
            | Kind::ResCook(_)
            | Kind::UrlParam(..)
            | Kind::HttpAuthGroup(_) => return self.one(txn),
        };
        Ok(s)
    }
}

/// `req.rdp_cookie` and `req.rdp_cookie_cnt`: the value (or 1) when the
/// cookie is there, no value (or 0) when the buffer is not such an RDP
/// request, a wait while it is too short to tell (no value once final).
fn rdp_cookie<'a>(kind: &Kind, name: &[u8], txn: &'a dyn Txn) -> Result<Option<Sample<'a>>, Wait> {
    use crate::rdp::RdpCookie;
    let Some(p) = txn.payload() else {
        return Ok(None);
    };
    let count = matches!(kind, Kind::RdpCookieCnt(_));
    Ok(match crate::rdp::cookie(p, name) {
        RdpCookie::Incomplete if !txn.payload_final() => return Err(Wait),
        RdpCookie::Incomplete => None,
        RdpCookie::Found(_) if count => Some(Sample::Sint(1)),
        RdpCookie::Found(v) => Some(Sample::str(v)),
        RdpCookie::Absent if count => Some(Sample::Sint(0)),
        RdpCookie::Absent => None,
    })
}

fn simple_kind(canon: &str) -> Kind {
    match canon {
        "method" => Kind::Method,
        "req.proto_http" => Kind::ProtoHttp,
        "path" => Kind::Path,
        "pathq" => Kind::PathQ,
        "base" => Kind::Base,
        "url" => Kind::Url,
        "query" => Kind::Query,
        "req.ver" => Kind::ReqVer,
        "req.hdr_names" => Kind::HdrNames,
        "req.body" => Kind::ReqBody,
        "req.body_len" => Kind::ReqBodyLen,
        "req.len" => Kind::ReqLen,
        "req.ssl_sni" => Kind::ReqSslSni,
        "req.ssl_hello_type" => Kind::ReqSslHelloType,
        "res.len" => Kind::ResLen,
        "wait_end" => Kind::WaitEnd,
        "status" => Kind::Status,
        "res.ver" => Kind::ResVer,
        "src" => Kind::Src,
        "src_port" => Kind::SrcPort,
        "dst" => Kind::Dst,
        "dst_port" => Kind::DstPort,
        "ssl_fc" => Kind::SslFc,
        "ssl_fc_sni" => Kind::SslFcSni,
        "ssl_fc_alpn" => Kind::SslFcAlpn,
        "ssl_fc_protocol" => Kind::SslFcProtocol,
        "ssl_fc_cipher" => Kind::SslFcCipher,
        "ssl_fc_is_resumed" => Kind::SslFcIsResumed,
        "ssl_c_used" => Kind::SslCUsed,
        "ssl_c_verify" => Kind::SslCVerify,
        "ssl_c_s_dn" => Kind::SslCSDn,
        "fc_rcvd_proxy" => Kind::FcRcvdProxy,
        "fc_pp_authority" => Kind::FcPpAuthority,
        "fc_pp_unique_id" => Kind::FcPpUniqueId,
        "be_name" => Kind::BeName,
        "fe_name" => Kind::FeName,
        "srv_name" => Kind::SrvName,
        "srv_id" => Kind::SrvId,
        "hostname" => Kind::Hostname,
        "unique-id" => Kind::UniqueId,
        "always_true" => Kind::Const(Sample::Bool(true)),
        "always_false" => Kind::Const(Sample::Bool(false)),
        "http_auth_user" => Kind::HttpAuthUser,
        _ => Kind::Pid,
    }
}

fn constant(kind: &str, v: &str) -> Result<Sample<'static>, String> {
    let bad = || format!("fetch method '{kind}': invalid value '{v}'");
    Ok(match kind {
        "int" => Sample::Sint(v.trim().parse().map_err(|_| bad())?),
        "bool" => Sample::Bool(v.trim().parse::<i64>().map_err(|_| bad())? != 0),
        "ipv4" => Sample::Ipv4(v.parse().map_err(|_| bad())?),
        "ipv6" => Sample::Ipv6(v.parse().map_err(|_| bad())?),
        "meth" => Sample::Meth(Cow::Owned(v.as_bytes().to_vec())),
        _ => Sample::owned_str(v.as_bytes().to_vec()),
    })
}

fn ip_sample(ip: IpAddr) -> Sample<'static> {
    match ip {
        IpAddr::V4(a) => Sample::Ipv4(a),
        IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => Sample::Ipv4(v4),
            None => Sample::Ipv6(a),
        },
    }
}

fn version_str(v: u8) -> Sample<'static> {
    Sample::str(match v {
        10 => b"1.0",
        20 => b"2.0",
        _ => b"1.1",
    })
}

fn auth_user(m: &dyn Msg, ul: &crate::userlist::Userlist) -> Option<String> {
    let v = last_header(m, b"authorization")?;
    ul.check_basic(v)
}

fn uuid4() -> String {
    let a = crate::rand::next_u64();
    let b = crate::rand::next_u64();
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&a.to_le_bytes());
    bytes[8..].copy_from_slice(&b.to_le_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let h: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Multi-value fetches, checked against HAProxy 2.6.12
/// (tests/scenarios/28_multi_value_fetches.scn, 29_request_fetches.scn).
#[cfg(test)]
mod multi_value_tests {
    use super::*;

    struct Req {
        target: &'static [u8],
        headers: Vec<(&'static [u8], &'static [u8])>,
    }

    impl Msg for Req {
        fn method(&self) -> &[u8] {
            b"GET"
        }
        fn target(&self) -> &[u8] {
            self.target
        }
        fn version(&self) -> u8 {
            11
        }
        fn status(&self) -> u16 {
            0
        }
        fn header_count(&self) -> usize {
            self.headers.len()
        }
        fn header(&self, i: usize) -> (&[u8], &[u8]) {
            self.headers[i]
        }
    }

    impl Txn for Req {
        fn req(&self) -> Option<&dyn Msg> {
            Some(self)
        }
    }

    fn req(target: &'static str, headers: &[(&'static str, &'static str)]) -> Req {
        Req {
            target: target.as_bytes(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
                .collect(),
        }
    }

    /// The sample-context value of `name(args)`, as text.
    fn one(r: &Req, name: &str, args: &[&str]) -> Option<String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let f = Fetch::parse(name, &args, &crate::Env::default()).unwrap();
        let s = f.one(r).ok()??;
        Some(String::from_utf8_lossy(s.as_bytes()?).into_owned())
    }

    #[test]
    fn negative_occurrences_count_from_the_last() {
        let r = req("/", &[("x-v", "a, b"), ("x-v", "c")]);
        assert_eq!(one(&r, "hdr", &["x-v", "-1"]).as_deref(), Some("c"));
        assert_eq!(one(&r, "hdr", &["x-v", "-2"]).as_deref(), Some("b"));
        assert_eq!(one(&r, "hdr", &["x-v", "-3"]).as_deref(), Some("a"));
        assert_eq!(one(&r, "hdr", &["x-v", "-4"]), None);
    }

    #[test]
    fn a_named_cookie_is_its_last_occurrence() {
        let r = req("/", &[("cookie", "s=1; t=2"), ("cookie", "s=3")]);
        assert_eq!(one(&r, "cook", &["s"]).as_deref(), Some("3"));
        // Without a name, the first cookie.
        assert_eq!(one(&r, "cook", &[]).as_deref(), Some("1"));
    }

    #[test]
    fn url_params_follow_haproxy_delimiters() {
        let r = req("/p/q?a=1;b=2&c=3", &[]);
        // ';' always separates parameters.
        assert_eq!(one(&r, "url_param", &["b"]).as_deref(), Some("2"));
        assert_eq!(one(&r, "url_param", &["c"]).as_deref(), Some("3"));
        // No name: the first value.
        assert_eq!(one(&r, "url_param", &[]).as_deref(), Some("1"));
        // A custom delimiter is where the parameters start.
        assert_eq!(one(&r, "url_param", &["b", ";"]).as_deref(), Some("2"));
        assert_eq!(one(&r, "url_param", &["a", ";"]), None);
        let r = req("/p;jsessionid=abc?x=1", &[]);
        assert_eq!(
            one(&r, "url_param", &["jsessionid", ";"]).as_deref(),
            Some("abc?x=1")
        );
        let r = req("/s?debug&n=5", &[]);
        assert_eq!(one(&r, "url_param", &["debug"]), None);
        assert_eq!(one(&r, "url_param", &[]).as_deref(), Some("5"));
    }
}

#[cfg(test)]
mod overflow_tests {
    use super::*;

    struct NoTxn;

    impl Txn for NoTxn {}

    /// Regression (found by the `expr_eval` fuzz target): extreme
    /// arguments of `date` and `rand` overflowed (a panic in debug
    /// builds); they wrap, as HAProxy's C arithmetic does.
    #[test]
    fn date_and_rand_extreme_arguments_wrap() {
        let env = crate::Env::default();
        for (name, arg) in [
            ("date", "9223372036854775807"),
            ("date", "-9223372036854775808"),
            ("rand", "-1"),
            ("rand", "9223372036854775807"),
        ] {
            let f = Fetch::parse(name, &[arg.to_string()], &env).unwrap();
            assert!(
                matches!(f.one(&NoTxn), Ok(Some(Sample::Sint(_)))),
                "{name}({arg})"
            );
        }
    }
}
