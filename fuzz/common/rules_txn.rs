//! Shared by the rule-layer fuzz targets: a request (and response) built
//! from fuzzer bytes, as a `fairlead_rules` stream, and HAProxy-like word
//! splitting for configuration lines.
#![allow(dead_code)]

use fairlead_rules::action::UrlPart;
use fairlead_rules::exec::{Edit, Stream};
use fairlead_rules::txn::{Msg, TlsFacts, Txn, VarRef};
use fairlead_rules::Sample;
use std::net::{IpAddr, SocketAddr};

/// An HTTP message head held as plain fields.
#[derive(Debug, Clone, Default)]
pub struct Head {
    pub method: Vec<u8>,
    pub target: Vec<u8>,
    pub version: u8,
    pub status: u16,
    pub headers: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Head {
    /// Reads `METHOD target HTTP/x.y` and `name: value` lines, leniently:
    /// whatever does not fit is still turned into something.
    pub fn request(text: &[u8]) -> Head {
        let mut lines = text.split(|&b| b == b'\n').map(trim_cr);
        let first = lines.next().unwrap_or_default();
        let mut parts = first.splitn(3, |&b| b == b' ');
        let method = parts.next().filter(|m| !m.is_empty()).unwrap_or(b"GET");
        let target = parts.next().unwrap_or(b"/");
        let version = match parts.next() {
            Some(b"HTTP/1.0") => 10,
            Some(b"HTTP/2.0") => 20,
            _ => 11,
        };
        Head {
            method: method.to_vec(),
            target: target.to_vec(),
            version,
            status: 0,
            headers: lines.filter_map(header_line).collect(),
        }
    }

    /// A response with these headers and a status taken from the request.
    pub fn response(req: &Head, status: u16) -> Head {
        let mut headers = req.headers.clone();
        headers.push((b"set-cookie".to_vec(), b"SID=abc; path=/".to_vec()));
        Head {
            method: Vec::new(),
            target: Vec::new(),
            version: req.version,
            status,
            headers,
        }
    }
}

fn trim_cr(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\r").unwrap_or(l)
}

fn header_line(l: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let i = l.iter().position(|&b| b == b':')?;
    let v = &l[i + 1..];
    let s = v.iter().position(|b| *b != b' ').unwrap_or(v.len());
    Some((l[..i].to_vec(), v[s..].to_vec()))
}

impl Msg for Head {
    fn method(&self) -> &[u8] {
        &self.method
    }
    fn target(&self) -> &[u8] {
        &self.target
    }
    fn version(&self) -> u8 {
        self.version
    }
    fn status(&self) -> u16 {
        self.status
    }
    fn header_count(&self) -> usize {
        self.headers.len()
    }
    fn header(&self, i: usize) -> (&[u8], &[u8]) {
        let (n, v) = &self.headers[i];
        (n, v)
    }
}

impl Edit for Head {
    fn add_header(&mut self, name: &[u8], value: &[u8]) {
        self.headers.push((name.to_vec(), value.to_vec()));
    }
    fn del_header(&mut self, name: &[u8]) {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    }
    fn set_header_value(&mut self, i: usize, value: &[u8]) {
        if let Some(h) = self.headers.get_mut(i) {
            h.1 = value.to_vec();
        }
    }
    fn set_url(&mut self, part: UrlPart, value: &[u8]) {
        let q = self.target.iter().position(|&b| b == b'?');
        match part {
            UrlPart::Method => self.method = value.to_vec(),
            UrlPart::Uri | UrlPart::PathQ => self.target = value.to_vec(),
            UrlPart::Path => {
                let mut t = value.to_vec();
                if let Some(q) = q {
                    t.extend_from_slice(&self.target[q..]);
                }
                self.target = t;
            }
            UrlPart::Query => {
                let mut t = self.target[..q.unwrap_or(self.target.len())].to_vec();
                t.push(b'?');
                t.extend_from_slice(value);
                self.target = t;
            }
        }
    }
    fn set_status(&mut self, code: u16, _reason: Option<&[u8]>) {
        self.status = code;
    }
}

/// A transaction: both heads, a payload, variables and fixed connection
/// facts.
pub struct FuzzTxn {
    pub req: Head,
    pub res: Option<Head>,
    pub payload: Vec<u8>,
    pub payload_final: bool,
    pub vars: Vec<(VarRef, Sample<'static>)>,
    pub src: SocketAddr,
}

impl FuzzTxn {
    /// `text`: a request head, then an empty line and a payload (used as
    /// both the TCP payload and the buffered body).
    pub fn new(text: &[u8], with_response: bool) -> FuzzTxn {
        let (head, payload) = match text.windows(2).position(|w| w == b"\n\n") {
            Some(i) => (&text[..i], &text[i + 2..]),
            None => (text, &b""[..]),
        };
        let req = Head::request(head);
        let res = with_response.then(|| Head::response(&req, 200));
        FuzzTxn {
            payload_final: payload.len() % 2 == 0,
            payload: payload.to_vec(),
            req,
            res,
            vars: vec![(
                VarRef::parse("txn.v").unwrap(),
                Sample::owned_str(b"42".to_vec()),
            )],
            src: "192.0.2.7:40000".parse().unwrap(),
        }
    }
}

impl Txn for FuzzTxn {
    fn req(&self) -> Option<&dyn Msg> {
        Some(&self.req)
    }
    fn res(&self) -> Option<&dyn Msg> {
        self.res.as_ref().map(|r| r as &dyn Msg)
    }
    fn req_body(&self) -> Option<&[u8]> {
        Some(&self.payload)
    }
    fn payload(&self) -> Option<&[u8]> {
        Some(&self.payload)
    }
    fn payload_final(&self) -> bool {
        self.payload_final
    }
    fn src(&self) -> Option<SocketAddr> {
        Some(self.src)
    }
    fn dst(&self) -> Option<SocketAddr> {
        Some("[2001:db8::1]:443".parse().unwrap())
    }
    fn tls(&self) -> Option<TlsFacts<'_>> {
        Some(TlsFacts {
            sni: Some("www.example.com"),
            alpn: Some(b"http/1.1"),
            protocol: Some("TLSv1.3"),
            cipher: Some("TLS_AES_128_GCM_SHA256"),
            resumed: false,
            c_used: true,
            c_verify: 0,
            c_s_dn: Some("/C=FR/CN=client"),
        })
    }
    fn var(&self, v: &VarRef) -> Option<Sample<'_>> {
        self.vars
            .iter()
            .find(|(k, _)| k == v)
            .map(|(_, s)| s.reborrow())
    }
    fn frontend_name(&self) -> &str {
        "fe"
    }
    fn backend_name(&self) -> Option<&str> {
        Some("be")
    }
    fn server_name(&self) -> Option<&str> {
        Some("s1")
    }
    fn nbsrv(&self, backend: Option<&str>) -> Option<i64> {
        backend.map_or(Some(2), |b| (b == "be").then_some(2))
    }
    fn hostname(&self) -> &str {
        "lb1"
    }
}

impl Stream for FuzzTxn {
    fn edit(&mut self, res: bool) -> Option<&mut dyn Edit> {
        if res {
            self.res.as_mut().map(|r| r as &mut dyn Edit)
        } else {
            Some(&mut self.req)
        }
    }
    fn set_var(&mut self, v: &VarRef, s: Sample<'static>) {
        match self.vars.iter_mut().find(|(k, _)| k == v) {
            Some(e) => e.1 = s,
            None => self.vars.push((v.clone(), s)),
        }
    }
    fn unset_var(&mut self, v: &VarRef) {
        self.vars.retain(|(k, _)| k != v);
    }
    fn set_src(&mut self, ip: IpAddr) {
        self.src = SocketAddr::new(ip, self.src.port());
    }
}

/// Splits a configuration line into words: blanks separate words, double
/// and single quotes group, a backslash escapes the next character; `#`
/// outside quotes starts a comment.
pub fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (c, quote) {
            ('\\', _) => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                    in_word = true;
                }
            }
            (q, Some(open)) if q == open => quote = None,
            (_, Some(_)) => cur.push(c),
            ('"' | '\'', None) => {
                quote = Some(c);
                in_word = true;
            }
            ('#', None) if !in_word => break,
            (' ' | '\t', None) => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            _ => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// Whether the text could make the rule layer read a special file (a
/// device that never ends, `/proc`...): such inputs are skipped, since
/// reading pattern and map files is what a configuration asks for.
pub fn names_special_file(text: &str) -> bool {
    let flat: String = text
        .chars()
        .filter(|c| !matches!(c, '\\' | '"' | '\''))
        .collect();
    ["/dev", "/proc", "/sys", "/run"]
        .iter()
        .any(|p| flat.contains(p))
}

/// Inserts `-n` (no name resolution) after the criterion of every ACL
/// (`acl <name> <criterion>` lines and `{ <criterion> ... }` anonymous
/// ones), so the fuzzer never sends DNS queries for IP patterns.
pub fn no_dns(words: &mut Vec<String>) {
    if words.first().map(String::as_str) == Some("acl") && words.len() > 3 {
        words.insert(3, "-n".into());
    }
    let mut i = 0;
    while i < words.len() {
        if (words[i] == "{" || words[i] == "!{")
            && words.get(i + 1).is_some_and(|w| w != "}")
        {
            words.insert(i + 2, "-n".into());
            i += 2;
        }
        i += 1;
    }
}
