//! `fairlead-term [-t THREADS] [-n NAME] [--tls PEM] ADDR [ADDR...]`: serve until
//! SIGINT/SIGTERM. See the library docs for the query-string protocol.

use std::net::SocketAddr;
use std::process::exit;

const USAGE: &str = "\
Usage: fairlead-term [-t THREADS] [-n NAME] [--tls PEM] ADDR [ADDR...]

HTTP/1.1 and HTTP/2 test origin; the request's query string drives the
response:
  s=SIZE     body size, k/m/g suffixes (1024-based). Default is the name
             followed by a newline, or an empty body when no name is set
  t=MS       wait MS ms before responding (with times=: max random wait
             between parts). Default is 0
  r=STATUS   status code 200..599. Default is 200
  k=1        chunked transfer encoding (HTTP/1.1 only). Default is
             content-length
  C=1        close the connection after the response (HTTP/2: GOAWAY).
             Default is keep-alive
  R=1        random (incompressible) body. Default is a text pattern
  times=N    stream N chunks of s bytes (default 16) spaced by random waits
             of 0..t ms. Default is a single plain response

Options:
  -t THREADS  worker threads, each with its own SO_REUSEPORT listeners.
              Default is 1
  -n NAME     origin name: sent as x-served-by and used as default body.
              Default is empty
  --tls PEM   every address speaks TLS with the certificate chain and key
              in PEM (one file, HAProxy's crt format), ALPN h2, and serves
              HTTP/2 only. Default is plain TCP
  -h, --help  this help

ADDR is IP:PORT, e.g. 127.0.0.1:8000 or [::1]:8000; port 0 picks one.
A plain address serves HTTP/1.x, and HTTP/2 (h2c) to a client that opens
with the HTTP/2 preface (prior knowledge).
";

fn main() {
    let mut opts = fairlead_term::TermOptions::default();
    let mut addrs: Vec<SocketAddr> = Vec::new();
    let mut tls = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "-h" | "--help" => {
                print!("{USAGE}");
                return;
            }
            "-t" => {
                opts.threads = match args.next().and_then(|v| v.parse().ok()) {
                    Some(n) if n > 0 => n,
                    _ => die("-t needs a positive number"),
                }
            }
            "-n" => opts.name = args.next().unwrap_or_else(|| die("-n needs a name")),
            "--tls" => {
                let f = args.next().unwrap_or_else(|| die("--tls needs a PEM file"));
                match fairlead_term::tls::server_config(std::path::Path::new(&f)) {
                    Ok(c) => tls = Some(c),
                    Err(e) => die(&format!("--tls: {e}")),
                }
            }
            _ if a.starts_with('-') => die(&format!("unknown option {a}")),
            _ => match a.parse() {
                Ok(x) => addrs.push(x),
                Err(_) => die(&format!("bad address {a} (expected IP:PORT)")),
            },
        }
    }
    if addrs.is_empty() {
        die("no address given");
    }
    let started = match tls {
        Some(c) => fairlead_term::start_tls(&addrs, opts, c),
        None => fairlead_term::start(&addrs, opts),
    };
    let mut h = match started {
        Ok(h) => h,
        Err(e) => {
            eprintln!("fairlead-term: {e}");
            exit(1);
        }
    };
    for a in h.local_addrs() {
        println!("listening on {a}");
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| die(&format!("runtime: {e}")));
    rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).unwrap_or_else(|e| die(&e.to_string()));
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    });
    eprintln!(
        "fairlead-term: stopping after {} connections, {} requests",
        h.connections(),
        h.requests()
    );
    h.stop();
}

fn die(msg: &str) -> ! {
    eprintln!("fairlead-term: {msg}\n\n{USAGE}");
    exit(2);
}
