//! gRPC through the real binary, with a real gRPC implementation on both
//! ends: Python's grpcio (Debian's python3-grpcio, installed by
//! `.ci/run`) as server and client, driven by `tests/grpc/peer.py`.
//! Unary, server-streaming and bidirectional calls, a 1 MiB message, an
//! error status and trailing metadata must all arrive intact, over h2c and
//! over TLS with ALPN, to a `server ... proto h2`.

mod common;
use common::*;
#[path = "common/h2.rs"]
mod h2util;
use h2util::*;

use std::net::{IpAddr, SocketAddr};
use std::process::Command;

const PEER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/grpc/peer.py");
/// Debian's interpreter, which has python3-grpcio (a pyenv `python3` on
/// the PATH may not).
const PYTHON: &str = "/usr/bin/python3";

/// The gRPC server (python3-grpcio).
fn grpc_server(ip: IpAddr) -> PythonPeer {
    PythonPeer::start(
        PEER,
        &["server"],
        ip,
        "the Python gRPC server (python3-grpcio)",
    )
}

/// Runs every call through `target`; returns the client's JSON line.
fn client(target: SocketAddr, tls: Option<(&std::path::Path, &str)>) -> String {
    let mut cmd = Command::new("timeout");
    cmd.args(["60", PYTHON, PEER, "client", &target.to_string()]);
    if let Some((ca, name)) = tls {
        cmd.arg(ca).arg(name);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// What the client must see, call by call.
fn check(json: &str) {
    let want_stream: Vec<String> = (0..50).map(|i| format!("\"msg-{i}\"")).collect();
    let want_bidi: Vec<String> = (0..20).map(|i| format!("\"PART-{i}\"")).collect();
    for part in [
        "\"unary\": \"cprg olleh\"".to_string(),
        "\"unary_code\": \"OK\"".into(),
        "\"unary_trailer\": \"done\"".into(),
        "\"big_ok\": true".into(),
        format!("\"server_stream\": [{}]", want_stream.join(", ")),
        format!("\"bidi\": [{}]", want_bidi.join(", ")),
        "\"fail\": [\"INVALID_ARGUMENT\", \"bad thing\"]".into(),
    ] {
        assert!(json.contains(&part), "missing {part} in {json}");
    }
}

/// The peer itself, without the proxy: the expectations hold for a
/// direct call (so a failure through the proxy is the proxy's).
#[test]
fn grpc_direct_baseline() {
    let ip = test_ip();
    let srv = grpc_server(ip);
    check(&client(srv.addr, None));
}

/// h2c client → `bind ... proto h2` → `server ... proto h2`.
#[test]
fn grpc_calls_through_h2c() {
    let ip = test_ip();
    let srv = grpc_server(ip);
    let bind = free_addr(ip);
    let cfg = h2_cfg(
        &format!("{bind} proto h2"),
        &format!("    server g1 {} proto h2", srv.addr),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    check(&client(bind, None));
}

/// TLS with ALPN h2 on the bind, h2c to the server.
#[test]
fn grpc_calls_through_tls_alpn() {
    let ip = test_ip();
    let srv = grpc_server(ip);
    let bind = free_addr(ip);
    let pki = tls::Pki::new("grpc");
    let ca = pki.ca("ca");
    let pem = pki.server(&ca, "www", "grpc.example");
    let cfg = h2_cfg(
        &format!("{bind} ssl crt {} alpn h2,http/1.1", pem.display()),
        &format!("    server g1 {} proto h2", srv.addr),
        "",
    );
    let _p = Proxy::start(&cfg, &[bind]);
    check(&client(bind, Some((&ca.cert, "grpc.example"))));
}
