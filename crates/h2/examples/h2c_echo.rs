//! A minimal h2c (prior knowledge) server on `fairlead-h2`, for h2spec and
//! curl: `cargo run -p fairlead-h2 --example h2c_echo -- 127.0.0.7:8080`.
//! Every request gets 200; the body echoes the request body, or says
//! `hello` when there is none. One blocking thread per connection (a test
//! tool, not how the proxy drives connections).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::time::Duration;

use fairlead_h2::{Config, Conn, Event};
use fairlead_http::msg::{self, Head};

/// A response body being sent.
struct Pending {
    body: Vec<u8>,
    sent: usize,
}

fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.7:8080".into());
    let listener = TcpListener::bind(&addr).expect("bind");
    eprintln!("h2c_echo listening on {addr}");
    for s in listener.incoming().flatten() {
        std::thread::spawn(move || serve(s));
    }
}

fn serve(mut s: TcpStream) {
    let mut out = Vec::new();
    let mut conn = Conn::server(Config::default(), &mut out);
    let mut buf = vec![0u8; 32 * 1024];
    let mut len = 0;
    let mut bodies: HashMap<u32, Vec<u8>> = HashMap::new();
    let mut sending: HashMap<u32, Pending> = HashMap::new();
    loop {
        pump(&mut conn, &mut sending, &mut out);
        if !out.is_empty() {
            if s.write_all(&out).is_err() {
                return;
            }
            out.clear();
            conn.flushed();
        }
        if conn.is_done() {
            return linger(s);
        }
        let n = match s.read(&mut buf[len..]) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        len += n;
        let mut pos = 0;
        loop {
            match conn.recv(&mut buf[pos..len], &mut out) {
                Ok(r) => {
                    let stop = r.consumed == 0 && r.event.is_none();
                    pos += r.consumed;
                    if let Some(e) = r.event {
                        on_event(&mut conn, e, &mut bodies, &mut sending, &mut out);
                    }
                    if stop {
                        break;
                    }
                }
                Err(e) => {
                    eprintln!("connection error: {e}");
                    let _ = s.write_all(&out);
                    return linger(s);
                }
            }
        }
        buf.copy_within(pos..len, 0);
        len -= pos;
    }
}

fn on_event(
    conn: &mut Conn,
    e: Event<'_>,
    bodies: &mut HashMap<u32, Vec<u8>>,
    sending: &mut HashMap<u32, Pending>,
    out: &mut Vec<u8>,
) {
    let done = match e {
        Event::Head {
            stream,
            head,
            end_stream,
        } => {
            msg::give(head);
            bodies.insert(stream, Vec::new());
            end_stream.then_some(stream)
        }
        Event::Data {
            stream,
            data,
            end_stream,
        } => {
            if let Some(b) = bodies.get_mut(&stream) {
                b.extend_from_slice(data);
            }
            conn.release(stream, data.len(), out);
            end_stream.then_some(stream)
        }
        Event::Trailers { stream, head } => {
            msg::give(head);
            Some(stream)
        }
        Event::Reset { stream, .. } => {
            bodies.remove(&stream);
            sending.remove(&stream);
            None
        }
        _ => None,
    };
    let Some(id) = done else {
        return;
    };
    let mut body = bodies.remove(&id).unwrap_or_default();
    if body.is_empty() {
        body = b"hello\n".to_vec();
    }
    let mut resp = Head::default();
    resp.start_response(200, None, 20);
    resp.append_field(b"content-type", b"text/plain");
    resp.append_field(b"content-length", body.len().to_string().as_bytes());
    if conn.send_response(id, &resp, &[], false, out).is_ok() {
        sending.insert(id, Pending { body, sent: 0 });
    }
}

fn pump(conn: &mut Conn, sending: &mut HashMap<u32, Pending>, out: &mut Vec<u8>) {
    sending.retain(
        |&id, p| match conn.send_data(id, &p.body[p.sent..], true, out) {
            Ok(n) => {
                p.sent += n;
                p.sent < p.body.len()
            }
            Err(_) => false,
        },
    );
}

/// Close without a reset: stop writing, drain what the peer still sends
/// for a moment, then close.
fn linger(mut s: TcpStream) {
    let _ = s.shutdown(Shutdown::Write);
    let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
    let mut sink = [0u8; 4096];
    while let Ok(n) = s.read(&mut sink) {
        if n == 0 {
            break;
        }
    }
}
