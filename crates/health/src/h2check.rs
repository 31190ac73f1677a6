//! HTTP checks over HTTP/2 (`check-proto h2`, `http-check connect proto
//! h2`, or TLS whose ALPN negotiated `h2`), with Fairlead's own codec
//! (`fairlead-h2`): the client preface and SETTINGS, one request built
//! from `option httpchk` / `http-check send`, the response head (and the
//! body when an `http-check expect` needs it), then GOAWAY and close.
//!
//! As in HAProxy 2.6, the request's version is ignored, its header names
//! go out lowercase, `host` becomes `:authority`, the scheme is `https`
//! over TLS and `http` otherwise, and connection-specific headers are
//! dropped. A failure after the connection is up (a connection error, the
//! stream reset, a GOAWAY that leaves the stream out, the peer closing
//! before the response ends) is HAProxy's `SOCKERR`; no response in time
//! is `L7TOUT`.

use crate::event::{CheckStatus, Outcome};
use crate::probe::{err_text, write_all, MAX_RESPONSE};
use fairlead_config::HttpCheck;
use fairlead_h2::{Config, Conn as H2, ErrorCode, Event};
use fairlead_http::msg::{self, Part};
use fairlead_net::Conn;
use tokio::time::{timeout_at, Instant};

/// The request of an HTTP/2 check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    method: String,
    uri: String,
    /// Lowercase names, `host` included (the codec sends it as
    /// `:authority`).
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
}

impl Request {
    pub(crate) fn new(h: &HttpCheck) -> Request {
        let mut headers: Vec<(String, String)> = h
            .headers
            .iter()
            .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
            .collect();
        let body = h.body.as_ref().map(|b| b.as_bytes().to_vec());
        if let Some(b) = &body {
            if !headers.iter().any(|(n, _)| n == "content-length") {
                headers.push(("content-length".into(), b.len().to_string()));
            }
        }
        Request {
            method: h.method.clone(),
            uri: h.uri.clone(),
            headers,
            body,
        }
    }

    /// The HEADERS (and DATA) of the request on a new client connection,
    /// after its preface; the stream id.
    fn encode(&self, conn: &mut H2, tls: bool, out: &mut Vec<u8>) -> Option<u32> {
        let mut head = msg::take();
        head.start_request(self.method.as_bytes(), self.uri.as_bytes(), 20);
        head.set_part(Part::Scheme, if tls { b"https" } else { b"http" });
        for (n, v) in &self.headers {
            head.append_field(n.as_bytes(), v.as_bytes());
        }
        let id = conn.send_request(&head, &[], self.body.is_none(), out).ok();
        msg::give(head);
        id
    }
}

/// The response of an HTTP/2 check: status and body (at most
/// [`MAX_RESPONSE`] bytes, only when `need_body`).
pub(crate) struct Response {
    pub code: u16,
    pub body: Vec<u8>,
}

/// Where the exchange stands.
#[derive(Default)]
struct State {
    id: u32,
    /// Body bytes not yet sent (flow control).
    pending: usize,
    code: Option<u16>,
    body: Vec<u8>,
    done: bool,
    failed: bool,
}

/// Runs the exchange on a connected `s`; `Err` is the check's outcome.
pub(crate) async fn exchange(
    s: &mut Conn,
    req: &Request,
    need_body: bool,
    deadline: Instant,
    start: Instant,
) -> Result<Response, Outcome> {
    let sockerr = || Outcome::new(CheckStatus::SockErr, start.elapsed());
    let mut out = Vec::with_capacity(256);
    let mut conn = H2::client(Config::default(), &mut out);
    let id = req
        .encode(&mut conn, s.is_tls(), &mut out)
        .ok_or_else(sockerr)?;
    let body = req.body.as_deref().unwrap_or_default();
    let mut st = State {
        id,
        pending: body.len(),
        ..State::default()
    };
    send_body(&mut conn, &mut st, body, &mut out);
    let mut inbuf: Vec<u8> = Vec::with_capacity(4096);
    loop {
        if !out.is_empty() {
            write_all(s, &out, deadline, start).await?;
            out.clear();
            conn.flushed();
        }
        if st.failed {
            return Err(sockerr());
        }
        if st.done {
            break;
        }
        let mut chunk = [0u8; 4096];
        let n = match timeout_at(deadline, s.read(&mut chunk)).await {
            Err(_) => return Err(Outcome::new(CheckStatus::L7Tout, start.elapsed())),
            Ok(Ok(0)) => return Err(sockerr()),
            Ok(Ok(n)) => n,
            Ok(Err(e)) => return Err(sockerr().info(err_text(&e))),
        };
        inbuf.extend_from_slice(&chunk[..n]);
        let used = process(&mut conn, &mut inbuf, &mut st, need_body, &mut out);
        inbuf.drain(..used.min(inbuf.len()));
        if st.pending > 0 && !st.failed {
            send_body(&mut conn, &mut st, body, &mut out);
        }
    }
    // Done: GOAWAY, written before the caller closes.
    conn.goaway(ErrorCode::NO_ERROR, &mut out);
    let _ = write_all(s, &out, deadline, start).await;
    Ok(Response {
        code: st.code.unwrap_or_default(),
        body: st.body,
    })
}

/// Sends what the windows allow of the body's rest.
fn send_body(conn: &mut H2, st: &mut State, body: &[u8], out: &mut Vec<u8>) {
    let from = body.len() - st.pending.min(body.len());
    if st.pending == 0 {
        return;
    }
    match conn.send_data(st.id, body.get(from..).unwrap_or_default(), true, out) {
        Ok(n) => st.pending -= n.min(st.pending),
        Err(_) => st.failed = true,
    }
}

/// Feeds the received bytes to the codec until it needs more; returns how
/// many were consumed.
fn process(
    conn: &mut H2,
    inbuf: &mut [u8],
    st: &mut State,
    need_body: bool,
    out: &mut Vec<u8>,
) -> usize {
    let mut off = 0;
    while !st.done && !st.failed {
        let Some(input) = inbuf.get_mut(off..) else {
            break;
        };
        let r = match conn.recv(input, out) {
            Ok(r) => r,
            Err(_) => {
                st.failed = true;
                break;
            }
        };
        off += r.consumed;
        let Some(ev) = r.event else {
            if r.consumed == 0 {
                break;
            }
            continue;
        };
        on_event(conn, ev, st, need_body, out);
    }
    off
}

fn on_event(conn: &mut H2, ev: Event<'_>, st: &mut State, need_body: bool, out: &mut Vec<u8>) {
    match ev {
        Event::Head {
            stream,
            head,
            end_stream,
        } => {
            let code = head.view(&[]).status();
            msg::give(head);
            // 1xx heads are interim; the final one decides.
            if stream == st.id && code >= 200 {
                st.code = Some(code);
                st.done = end_stream || !need_body;
            }
        }
        Event::Data {
            stream,
            data,
            end_stream,
        } => {
            conn.release(stream, data.len(), out);
            if stream == st.id && st.code.is_some() {
                let room = MAX_RESPONSE.saturating_sub(st.body.len());
                st.body
                    .extend_from_slice(data.get(..room.min(data.len())).unwrap_or_default());
                st.done = end_stream || st.body.len() >= MAX_RESPONSE;
            }
        }
        Event::Trailers { stream, head } => {
            msg::give(head);
            if stream == st.id && st.code.is_some() {
                st.done = true;
            }
        }
        Event::Reset { stream, .. } if stream == st.id => st.failed = true,
        // Streams above `last_stream` were not processed.
        Event::GoAway { last_stream, .. } if last_stream < st.id => st.failed = true,
        _ => {}
    }
}

/// Feeds `data`, in pieces of `split` bytes, to a client connection that
/// sent a request, as a server's reply would come: the status found, if
/// any. For the fuzz target `fuzz/fuzz_targets/health_h2_reply.rs`;
/// never panics.
pub(crate) fn feed(data: &[u8], split: usize, need_body: bool) -> Option<u16> {
    let mut out = Vec::new();
    let mut conn = H2::client(Config::default(), &mut out);
    let req = Request::new(&HttpCheck {
        body: Some("x".into()),
        ..HttpCheck::default()
    });
    let id = req.encode(&mut conn, false, &mut out)?;
    let mut st = State {
        id,
        pending: 1,
        ..State::default()
    };
    let mut inbuf = Vec::new();
    for piece in data.chunks(split.max(1)) {
        inbuf.extend_from_slice(piece);
        out.clear();
        let used = process(&mut conn, &mut inbuf, &mut st, need_body, &mut out);
        inbuf.drain(..used.min(inbuf.len()));
        send_body(&mut conn, &mut st, b"x", &mut out);
        if st.done || st.failed {
            break;
        }
    }
    st.code
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's reply, cut in small pieces, gives its status; HTTP/1
    /// bytes or a reset stream give none.
    #[test]
    fn replies_fed_in_pieces() {
        let mut reply = Vec::new();
        let mut server = H2::server(Config::default(), &mut reply);
        // The server reads the client's request (stream 1) first.
        let mut out = Vec::new();
        let mut client = H2::client(Config::default(), &mut out);
        let req = Request::new(&HttpCheck {
            body: Some("x".into()),
            ..HttpCheck::default()
        });
        req.encode(&mut client, false, &mut out).unwrap();
        client.send_data(1, b"x", true, &mut out).unwrap();
        let mut off = 0;
        loop {
            let r = server.recv(&mut out[off..], &mut reply).unwrap();
            off += r.consumed;
            if let Some(Event::Head { head, .. }) = r.event {
                msg::give(head);
            } else if r.event.is_none() && r.consumed == 0 {
                break;
            }
        }
        let mut ok = reply.clone();
        let mut head = msg::take();
        head.start_response(204, None, 20);
        server.send_response(1, &head, &[], true, &mut ok).unwrap();
        msg::give(head);
        for split in [1, 3, 7, 4096] {
            assert_eq!(feed(&ok, split, true), Some(204), "split {split}");
        }
        let mut reset = reply.clone();
        server.reset(1, ErrorCode::REFUSED_STREAM, &mut reset);
        assert_eq!(feed(&reset, 5, false), None);
        assert_eq!(feed(b"HTTP/1.1 400 Bad Request\r\n\r\n", 4, false), None);
        assert_eq!(feed(&[], 1, false), None);
    }

    #[test]
    fn request_from_httpchk() {
        let h = HttpCheck {
            method: "POST".into(),
            uri: "/health?full=1".into(),
            version: "HTTP/1.1".into(),
            headers: vec![
                ("Host".into(), "example.org".into()),
                ("X-Check".into(), "yes".into()),
                ("Connection".into(), "close".into()),
            ],
            body: Some("ping".into()),
            ..HttpCheck::default()
        };
        let r = Request::new(&h);
        assert_eq!(
            r.headers,
            [
                ("host".to_string(), "example.org".to_string()),
                ("x-check".into(), "yes".into()),
                ("connection".into(), "close".into()),
                ("content-length".into(), "4".into()),
            ]
        );
        // Encoded and decoded by a server-side codec: pseudo-headers from
        // the method, URI and Host; connection-specific fields dropped.
        let mut out = Vec::new();
        let mut client = H2::client(Config::default(), &mut out);
        let id = r.encode(&mut client, false, &mut out).unwrap();
        let mut st = State {
            id,
            pending: 4,
            ..State::default()
        };
        send_body(&mut client, &mut st, b"ping", &mut out);
        assert_eq!((id, st.pending), (1, 0));
        let mut sout = Vec::new();
        let mut server = H2::server(Config::default(), &mut sout);
        let mut off = 0;
        let (mut seen, mut data) = (None, Vec::new());
        loop {
            let rcv = server.recv(&mut out[off..], &mut sout).unwrap();
            off += rcv.consumed;
            match rcv.event {
                Some(Event::Head { head, .. }) => {
                    let v = head.view(&[]);
                    let fields: Vec<(String, String)> = v
                        .headers()
                        .map(|(_, n, v)| {
                            (
                                String::from_utf8_lossy(n).into_owned(),
                                String::from_utf8_lossy(v).into_owned(),
                            )
                        })
                        .collect();
                    seen = Some((
                        String::from_utf8_lossy(v.method()).into_owned(),
                        String::from_utf8_lossy(v.target()).into_owned(),
                        String::from_utf8_lossy(v.authority()).into_owned(),
                        fields,
                    ));
                    msg::give(head);
                }
                Some(Event::Data { data: d, .. }) => data.extend_from_slice(d),
                Some(_) => {}
                None if rcv.consumed == 0 => break,
                None => {}
            }
        }
        let (method, target, authority, fields) = seen.unwrap();
        assert_eq!(
            (method.as_str(), target.as_str(), authority.as_str()),
            ("POST", "/health?full=1", "example.org")
        );
        assert!(fields.contains(&("x-check".into(), "yes".into())));
        assert!(fields.contains(&("content-length".into(), "4".into())));
        assert!(!fields.iter().any(|(n, _)| n == "connection"));
        assert_eq!(data, b"ping");
    }
}
