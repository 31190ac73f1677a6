//! HTTP/2 client helpers shared by `tests/http2.rs` and
//! `tests/http2_servers.rs` (included by path, as `h2util`): an h2c client
//! on the `h2` crate under the test deadline, whole exchanges, and the
//! configuration around a bind and servers.
#![allow(dead_code)]

use super::common::DEADLINE;
use bytes::Bytes;
use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpStream};

pub type Client = h2::client::SendRequest<Bytes>;

/// Runs `f` on a current-thread runtime with the test deadline.
pub fn run<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(DEADLINE, f)
            .await
            .expect("HTTP/2 test deadline")
    })
}

/// An h2c connection with prior knowledge.
pub async fn h2c(addr: SocketAddr) -> Client {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (client, conn) = h2::client::handshake(tcp).await.expect("h2 handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// A finished exchange.
pub struct Answer {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
    pub trailers: Option<http::HeaderMap>,
}

/// Sends one request (with `body` unless empty) and reads everything.
pub async fn exchange(client: &Client, method: &str, path: &str, body: &[u8]) -> Answer {
    let req = http::Request::builder()
        .method(method)
        .uri(format!("http://test{path}"))
        .body(())
        .unwrap();
    let mut client = client.clone().ready().await.expect("ready");
    let (resp, mut send) = client
        .send_request(req, body.is_empty())
        .expect("send_request");
    if !body.is_empty() {
        send_body(&mut send, body).await;
    }
    read_answer(resp).await
}

/// Sends `body` within the flow-control windows, then END_STREAM.
pub async fn send_body(send: &mut h2::SendStream<Bytes>, body: &[u8]) {
    let mut rest = Bytes::copy_from_slice(body);
    while !rest.is_empty() {
        send.reserve_capacity(rest.len().min(64 * 1024));
        let cap = std::future::poll_fn(|cx| send.poll_capacity(cx))
            .await
            .expect("capacity")
            .expect("capacity ok");
        let chunk = rest.split_to(cap.min(rest.len()));
        send.send_data(chunk, false).expect("send_data");
    }
    send.send_data(Bytes::new(), true).expect("end");
}

pub async fn read_answer(resp: h2::client::ResponseFuture) -> Answer {
    let resp = resp.await.expect("response");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let mut recv = resp.into_body();
    let mut body = Vec::new();
    while let Some(chunk) = recv.data().await {
        let chunk = chunk.expect("data");
        let _ = recv.flow_control().release_capacity(chunk.len());
        body.extend_from_slice(&chunk);
    }
    let trailers = recv.trailers().await.expect("trailers");
    Answer {
        status,
        headers,
        body,
        trailers,
    }
}

pub fn h2_cfg(bind: &str, servers: &str, fe_extra: &str) -> String {
    format!(
        "global\n    nbthread 1\n\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
frontend fe\n    bind {bind}\n{fe_extra}    default_backend bk\n\
backend bk\n{servers}\n"
    )
}

/// Reads an HTTP/1 request body as the origin: content-length or chunked
/// (trailers returned as text). Returns (framing, body, trailers).
pub fn read_body(r: &mut BufReader<TcpStream>, head: &str) -> (String, Vec<u8>, String) {
    let lower = head.to_ascii_lowercase();
    if let Some(l) = lower
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
    {
        let n: usize = l.trim().parse().unwrap();
        let mut body = vec![0; n];
        r.read_exact(&mut body).unwrap();
        return ("length".into(), body, String::new());
    }
    if !lower.contains("transfer-encoding: chunked") {
        return ("none".into(), Vec::new(), String::new());
    }
    let mut body = Vec::new();
    loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let size = usize::from_str_radix(line.trim(), 16).unwrap();
        if size == 0 {
            let mut trailers = String::new();
            loop {
                let mut t = String::new();
                r.read_line(&mut t).unwrap();
                if t == "\r\n" {
                    return ("chunked".into(), body, trailers);
                }
                trailers.push_str(&t);
            }
        }
        let at = body.len();
        body.resize(at + size, 0);
        r.read_exact(&mut body[at..]).unwrap();
        let mut crlf = [0; 2];
        r.read_exact(&mut crlf).unwrap();
    }
}

/// `len` bytes of a pattern that depends on `seed`.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}
