//! [`Txn`]: the view of a stream that fetches and converters read. The
//! proxy implements it over its own state (the HTTP message model, the
//! connection, variables); the rule layer never sees protocol bytes.

use crate::sample::Sample;
use std::net::SocketAddr;

/// An HTTP message head, whatever protocol carried it.
pub trait Msg {
    /// The request method (empty for a response).
    fn method(&self) -> &[u8];
    /// The request target as received (`/a?b`, or an absolute URI).
    fn target(&self) -> &[u8];
    /// 10 for HTTP/1.0, 11 for HTTP/1.1, 20 for HTTP/2.
    fn version(&self) -> u8;
    /// The response status (0 for a request).
    fn status(&self) -> u16;
    /// How many header fields the head has now (edits included).
    fn header_count(&self) -> usize;
    /// The `i`th header field: name and value, in order.
    fn header(&self, i: usize) -> (&[u8], &[u8]);
}

/// What the TLS layer of the client connection knows.
#[derive(Debug, Clone, Copy, Default)]
pub struct TlsFacts<'a> {
    pub sni: Option<&'a str>,
    pub alpn: Option<&'a [u8]>,
    /// `TLSv1.2`, `TLSv1.3`.
    pub protocol: Option<&'a str>,
    pub cipher: Option<&'a str>,
    pub resumed: bool,
    /// A client certificate was presented.
    pub c_used: bool,
    /// The client certificate's verification result (0: ok).
    pub c_verify: i64,
    /// The client certificate's subject DN, in HAProxy's `/C=../CN=..` form.
    pub c_s_dn: Option<&'a str>,
}

/// What a PROXY protocol header received on the client connection
/// carried besides the addresses (`fc_pp_*` fetches).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProxyFacts<'a> {
    /// `PP2_TYPE_AUTHORITY` (`fc_pp_authority`).
    pub authority: Option<&'a [u8]>,
    /// `PP2_TYPE_UNIQUE_ID` (`fc_pp_unique_id`).
    pub unique_id: Option<&'a [u8]>,
}

/// A variable reference: `txn.name`, `sess.name`, ...
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VarRef {
    pub scope: Scope,
    pub name: String,
}

/// Variable scopes, from the widest to the narrowest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    Proc,
    Sess,
    Txn,
    Req,
    Res,
}

impl VarRef {
    /// Parses `scope.name` (`txn.host`); names use `[A-Za-z0-9._-]`.
    pub fn parse(s: &str) -> Result<VarRef, String> {
        let (scope, name) = s
            .split_once('.')
            .ok_or_else(|| format!("invalid variable name '{s}': expects '<scope>.<name>' where scope is one of proc, sess, txn, req, res"))?;
        let scope = match scope {
            "proc" => Scope::Proc,
            "sess" => Scope::Sess,
            "txn" => Scope::Txn,
            "req" => Scope::Req,
            "res" => Scope::Res,
            other => {
                return Err(format!(
                    "invalid variable scope '{other}' in '{s}': expects one of proc, sess, txn, req, res"
                ))
            }
        };
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
        {
            return Err(format!("invalid variable name '{s}'"));
        }
        Ok(VarRef {
            scope,
            name: name.to_string(),
        })
    }
}

/// A stream as the rule layer sees it. Every method has a default that
/// says "not available", so a context (TCP, health check, test) implements
/// only what it has.
pub trait Txn {
    /// The request head, once parsed.
    fn req(&self) -> Option<&dyn Msg> {
        None
    }
    /// The response head, in response rules.
    fn res(&self) -> Option<&dyn Msg> {
        None
    }
    /// The request body received so far (`option http-buffer-request`).
    fn req_body(&self) -> Option<&[u8]> {
        None
    }
    /// TCP-mode content received so far (`req.payload`, `req.len`, ...).
    fn payload(&self) -> Option<&[u8]> {
        None
    }
    /// TCP-mode server data received so far (`res.payload`, `res.len`), in
    /// `tcp-response content` rules.
    fn res_payload(&self) -> Option<&[u8]> {
        None
    }
    /// True when no more payload can arrive for the inspection (the
    /// inspect-delay expired, the buffer is full or the client closed):
    /// a fetch that lacks data then fails instead of asking to wait.
    fn payload_final(&self) -> bool {
        true
    }
    /// The client's address (after `set-src` / PROXY protocol).
    fn src(&self) -> Option<SocketAddr> {
        None
    }
    /// The address the client connected to.
    fn dst(&self) -> Option<SocketAddr> {
        None
    }
    fn tls(&self) -> Option<TlsFacts<'_>> {
        None
    }
    /// The PROXY protocol header the client connection started with
    /// (`fc_rcvd_proxy`, `fc_pp_*`); `None` when there was none.
    fn proxy(&self) -> Option<ProxyFacts<'_>> {
        None
    }
    fn var(&self, _v: &VarRef) -> Option<Sample<'_>> {
        None
    }
    fn frontend_name(&self) -> &str {
        ""
    }
    fn backend_name(&self) -> Option<&str> {
        None
    }
    fn server_name(&self) -> Option<&str> {
        None
    }
    /// The server's numeric id (`srv_id`).
    fn server_id(&self) -> Option<i64> {
        None
    }
    /// Usable servers of a backend (`None`: the current backend).
    fn nbsrv(&self, _backend: Option<&str>) -> Option<i64> {
        None
    }
    /// The machine's host name.
    fn hostname(&self) -> &str {
        ""
    }
    /// The transaction's unique id (`unique-id-format`), generated on
    /// first use; `None` without a format.
    fn unique_id(&self) -> Option<&[u8]> {
        None
    }
    /// The stream's stick counter slots (`tcp-request content`,
    /// `http-request` and `http-response` `track-scN`), if it has any.
    fn trackers(&self) -> Option<&fairlead_stick::Trackers> {
        None
    }
    /// The session's stick counter slots (`tcp-request connection` and
    /// `tcp-request session` `track-scN`), if it has any: `sc_*` fetches
    /// read slot N there when the stream does not track it.
    fn sess_trackers(&self) -> Option<&fairlead_stick::Trackers> {
        None
    }
}
