//! Interoperability with the `h2` crate (dev-dependency only) over an
//! in-memory duplex pipe: our server role against `h2::client`, our
//! client role against `h2::server`, with bodies larger than the flow
//! control windows and trailers in both directions.

use std::collections::HashMap;
use std::future::poll_fn;
use std::time::Duration;

use bytes::Bytes;
use fairlead_h2::{Config, Conn, Event};
use fairlead_http::msg::{self, Head};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

const BODY_LEN: usize = 200_000;

fn body(seed: u8) -> Vec<u8> {
    body_of(seed, BODY_LEN)
}

fn body_of(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn run<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(20), f)
            .await
            .expect("deadline")
    })
}

/// One exchange as our side sees it.
#[derive(Default)]
struct Exchange {
    head: Option<Head>,
    body: Vec<u8>,
    trailers: Vec<(String, String)>,
    ended: bool,
    /// What we send, how much went out, and our trailer value.
    to_send: Vec<u8>,
    sent: usize,
    trailer: Option<String>,
    finished: bool,
}

fn fields(h: &Head) -> Vec<(String, String)> {
    h.view(&[])
        .headers()
        .map(|(_, n, v)| {
            (
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        })
        .collect()
}

/// Records one event; returns the stream it completed, if any.
fn on_event(
    conn: &mut Conn,
    ex: &mut HashMap<u32, Exchange>,
    e: Event<'_>,
    out: &mut Vec<u8>,
) -> Option<u32> {
    match e {
        Event::Head {
            stream,
            head,
            end_stream,
        } => {
            let x = ex.entry(stream).or_default();
            if head.view(&[]).status() >= 100 && head.view(&[]).status() < 200 {
                msg::give(head);
            } else {
                x.head = Some(head);
            }
            x.ended = end_stream;
            end_stream.then_some(stream)
        }
        Event::Data {
            stream,
            data,
            end_stream,
        } => {
            let x = ex.entry(stream).or_default();
            x.body.extend_from_slice(data);
            conn.release(stream, data.len(), out);
            x.ended = end_stream;
            end_stream.then_some(stream)
        }
        Event::Trailers { stream, head } => {
            let x = ex.entry(stream).or_default();
            x.trailers = fields(&head);
            msg::give(head);
            x.ended = true;
            Some(stream)
        }
        Event::Reset { stream, code, .. } => panic!("stream {stream} reset: {code}"),
        Event::GoAway { code, .. } => panic!("goaway {code}"),
        _ => None,
    }
}

/// Sends what the windows allow of every exchange's body, then its
/// trailers.
fn pump(conn: &mut Conn, ex: &mut HashMap<u32, Exchange>, out: &mut Vec<u8>) {
    for (&id, x) in ex.iter_mut() {
        if x.finished || x.trailer.is_none() {
            continue;
        }
        let n = conn
            .send_data(id, &x.to_send[x.sent..], false, out)
            .unwrap();
        x.sent += n;
        if x.sent == x.to_send.len() {
            let mut t = Head::default();
            t.start_request(b"", b"", 20);
            t.append_field(b"x-trailer", x.trailer.as_deref().unwrap_or("").as_bytes());
            conn.send_trailers(id, &t, &[], out).unwrap();
            x.finished = true;
        }
    }
}

/// Drives `conn` over `io` until `done` says so.
async fn drive(
    mut conn: Conn,
    mut out: Vec<u8>,
    io: DuplexStream,
    ex: &mut HashMap<u32, Exchange>,
    mut on_complete: impl FnMut(&mut Conn, &mut HashMap<u32, Exchange>, u32, &mut Vec<u8>),
    done: impl Fn(&HashMap<u32, Exchange>) -> bool,
) {
    let (mut rd, mut wr) = tokio::io::split(io);
    let mut buf = vec![0u8; 16 * 1024];
    let mut len = 0;
    loop {
        pump(&mut conn, ex, &mut out);
        if !out.is_empty() {
            wr.write_all(&out).await.unwrap();
            out.clear();
            conn.flushed();
        }
        if done(ex) {
            return;
        }
        let n = rd.read(&mut buf[len..]).await.unwrap();
        assert!(n > 0, "peer closed");
        len += n;
        let mut pos = 0;
        loop {
            let r = conn
                .recv(&mut buf[pos..len], &mut out)
                .expect("connection error");
            let stop = r.consumed == 0 && r.event.is_none();
            pos += r.consumed;
            if let Some(e) = r.event {
                if let Some(id) = on_event(&mut conn, ex, e, &mut out) {
                    on_complete(&mut conn, ex, id, &mut out);
                }
            }
            if stop {
                break;
            }
        }
        buf.copy_within(pos..len, 0);
        len -= pos;
    }
}

#[test]
fn our_server_against_h2_client() {
    server_against_h2_client(Config::default(), 3, BODY_LEN);
}

/// 100 concurrent streams on one connection (our limit), each carrying
/// 10 KiB up and down.
#[test]
fn our_server_with_100_concurrent_streams() {
    server_against_h2_client(Config::default(), 100, 10 * 1024);
}

/// One 1 MiB body up and down, byte-exact.
#[test]
fn our_server_one_mebibyte_each_way() {
    server_against_h2_client(Config::default(), 1, 1 << 20);
}

/// The same with our encoder keeping a dynamic table and small windows.
#[test]
fn our_indexing_server_with_small_windows_against_h2_client() {
    server_against_h2_client(
        Config {
            encoder_table_size: 4096,
            initial_window_size: 1000,
            connection_window_size: 65535,
            ..Config::default()
        },
        3,
        BODY_LEN,
    );
}

fn server_against_h2_client(cfg: Config, streams: u8, len: usize) {
    run(async {
        let (a, b) = tokio::io::duplex(64 * 1024);
        let client = tokio::spawn(async move {
            let (client, connection) = h2::client::handshake(a).await.unwrap();
            tokio::spawn(async move {
                let _ = connection.await;
            });
            let mut tasks = Vec::new();
            for i in 0..streams {
                let mut client = client.clone().ready().await.unwrap();
                let req = http::Request::builder()
                    .method("POST")
                    .uri(format!("https://example.com/echo/{i}"))
                    .header("x-seq", i.to_string())
                    .body(())
                    .unwrap();
                let (resp, mut send) = client.send_request(req, false).unwrap();
                tasks.push(tokio::spawn(async move {
                    send_body(&mut send, body_of(i, len)).await;
                    let mut t = http::HeaderMap::new();
                    t.insert("x-checksum", format!("c{i}").parse().unwrap());
                    send.send_trailers(t).unwrap();
                    let resp = resp.await.unwrap();
                    assert_eq!(resp.status(), 200);
                    assert_eq!(resp.headers()["x-echo-len"], len.to_string().as_str());
                    let (_, mut rb) = resp.into_parts();
                    let mut got = Vec::new();
                    while let Some(c) = rb.data().await {
                        let c = c.unwrap();
                        rb.flow_control().release_capacity(c.len()).unwrap();
                        got.extend_from_slice(&c);
                    }
                    assert!(got == body_of(i, len), "body {i} differs");
                    let t = rb.trailers().await.unwrap().unwrap();
                    assert_eq!(t["x-trailer"], format!("c{i}").as_str());
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
        });
        let mut out = Vec::new();
        let conn = Conn::server(cfg, &mut out);
        let mut ex = HashMap::new();
        drive(conn, out, b, &mut ex, respond_echo, |ex| {
            ex.len() == usize::from(streams) && ex.values().all(|x| x.finished)
        })
        .await;
        client.await.unwrap();
        for (id, x) in &ex {
            let h = x.head.as_ref().unwrap();
            let v = h.view(&[]);
            assert_eq!(v.method(), b"POST", "{id}");
            assert_eq!(v.scheme(), b"https");
            assert_eq!(v.authority(), b"example.com");
            assert!(v.target().starts_with(b"/echo/"));
            assert_eq!(v.get_last(b"host"), Some(&b"example.com"[..]));
        }
    });
}

/// Our server's answer to a complete request: 200 with the same body and
/// the request's `x-checksum` trailer as `x-trailer`.
fn respond_echo(conn: &mut Conn, ex: &mut HashMap<u32, Exchange>, id: u32, out: &mut Vec<u8>) {
    let x = ex.get_mut(&id).unwrap();
    let mut resp = Head::default();
    resp.start_response(200, None, 20);
    resp.append_field(b"x-echo-len", x.body.len().to_string().as_bytes());
    conn.send_response(id, &resp, &[], false, out).unwrap();
    x.to_send = std::mem::take(&mut x.body);
    let sum = x.trailers.iter().find(|(n, _)| n == "x-checksum");
    x.trailer = Some(sum.map(|(_, v)| v.clone()).unwrap_or_default());
}

async fn send_body(send: &mut h2::SendStream<Bytes>, data: Vec<u8>) {
    let mut rest = Bytes::from(data);
    while !rest.is_empty() {
        send.reserve_capacity(rest.len());
        let cap = poll_fn(|cx| send.poll_capacity(cx)).await.unwrap().unwrap();
        let chunk = rest.split_to(cap.min(rest.len()));
        send.send_data(chunk, false).unwrap();
    }
}

#[test]
fn our_client_against_h2_server() {
    run(async {
        let (a, b) = tokio::io::duplex(64 * 1024);
        let server = tokio::spawn(async move {
            let mut conn = h2::server::handshake(b).await.unwrap();
            while let Some(r) = conn.accept().await {
                let (req, mut respond) = r.unwrap();
                tokio::spawn(async move {
                    let (parts, mut rb) = req.into_parts();
                    assert_eq!(parts.uri.authority().unwrap().as_str(), "origin.test");
                    let mut got = Vec::new();
                    while let Some(c) = rb.data().await {
                        let c = c.unwrap();
                        rb.flow_control().release_capacity(c.len()).unwrap();
                        got.extend_from_slice(&c);
                    }
                    let t = rb.trailers().await.unwrap().unwrap();
                    let resp = http::Response::builder()
                        .status(201)
                        .header("x-path", parts.uri.path())
                        .body(())
                        .unwrap();
                    let mut send = respond.send_response(resp, false).unwrap();
                    send_body(&mut send, got).await;
                    let mut tr = http::HeaderMap::new();
                    tr.insert("x-trailer", t["x-trailer"].clone());
                    send.send_trailers(tr).unwrap();
                });
            }
        });
        let mut out = Vec::new();
        let mut conn = Conn::client(Config::default(), &mut out);
        let mut ex = HashMap::new();
        for i in 0..3u8 {
            let mut req = Head::default();
            req.start_request(b"PUT", format!("/up/{i}").as_bytes(), 20);
            req.set_part(fairlead_http::Part::Authority, b"origin.test");
            req.set_part(fairlead_http::Part::Scheme, b"http");
            let id = conn.send_request(&req, &[], false, &mut out).unwrap();
            let x: &mut Exchange = ex.entry(id).or_default();
            x.to_send = body(10 + i);
            x.trailer = Some(format!("t{i}"));
        }
        drive(
            conn,
            out,
            a,
            &mut ex,
            |_, _, _, _| {},
            |ex| ex.values().all(|x| x.ended),
        )
        .await;
        assert_eq!(ex.len(), 3);
        for (i, id) in [1u32, 3, 5].iter().enumerate() {
            let x = &ex[id];
            let h = x.head.as_ref().unwrap();
            assert_eq!(h.view(&[]).status(), 201);
            assert_eq!(
                h.view(&[]).get_last(b"x-path"),
                Some(format!("/up/{i}").as_bytes())
            );
            assert!(x.body == body(10 + i as u8), "body {i} differs");
            assert_eq!(x.trailers, vec![("x-trailer".to_string(), format!("t{i}"))]);
        }
        server.abort();
    });
}
