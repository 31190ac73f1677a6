//! Command-line options and URL parsing.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

/// Usage text; every option states its default.
pub const USAGE: &str = "\
Usage: fairlead-load [options] URL [URL...]

HTTP/1.1 (or HTTP/2 with --h2) load generator over plain TCP (http://) or
TLS (https://).
Each thread runs its own single-threaded runtime driving its share of the
connections. Several URLs are used round-robin, request by request; a
connection is reopened when the next URL points to another address.

Options:
  -c CONNS         concurrent connections (total). Default is 10
  -t THREADS       threads. Default is the number of CPUs, at most CONNS
  -d SECONDS       test duration (fractions allowed). Default is to run
                   until -n is reached or Ctrl-C, forever without -n
  -n REQUESTS      total requests to send, then stop. Default is unlimited
  -s SECONDS       ramp-up: connections (and the -R rate) grow linearly over
                   this time; requests sent during it are left out of the
                   percentiles. Default is 0
  -R RATE          open loop: send RATE requests/s in total, latency counted
                   from each request's intended send time (no coordinated
                   omission). Default is closed loop (send when the previous
                   response on the connection is complete)
  --close          one request per connection (sends Connection: close).
                   Default is keep-alive
  --h2             HTTP/2: h2c with prior knowledge for http://, ALPN h2
                   for https:// (then --alpn defaults to h2). Every URL
                   must have the same scheme, host and port; no -R, no
                   --close. Default is HTTP/1.1
  --h2-streams N   with --h2: requests kept in flight on each connection
                   (a new one is sent as soon as one completes). Default
                   is 10
  -H 'NAME: VALUE' add a request header (repeatable). Default adds only Host
                   (unless given), and Content-Length with a body
  -m METHOD        request method. Default is GET
  --body STRING    request body. Default is none
  --body-file FILE request body read from FILE. Default is none
  --timeout MS     per-request timeout (connect included); 0 disables.
                   Default is 10000
  --json FILE      write the final report as JSON. Default is none
  --plot FILE.svg  write an SVG with the latency percentile curves and the
                   req/s timeline. Default is none
  -k, --insecure   https: accept any server certificate (self-signed test
                   origins); handshake signatures are still verified.
                   Default verifies the certificate chain and name
  --cacert FILE    https: trust the PEM certificates in FILE instead of the
                   system store. Default is the operating system's trust
                   store, read at start-up (no roots are bundled: with
                   neither this nor -k, a machine without a system store
                   fails every handshake, counted as tls errors)
  --sni NAME       https: server name sent (SNI) and verified. Default is
                   the URL host (an IP address host sends no SNI)
  --alpn LIST      https: ALPN protocols offered, comma-separated, or
                   'none'. Default is http/1.1 (h2 with --h2)
  --tls-resume on|off
                   https: resume TLS sessions on reconnect (a session
                   cache shared by each thread's connections). Default is on
  --tls-version 1.2|1.3
                   https: allow only this TLS version. Default is both
  -q, --quiet      no per-second lines. Default prints one line per second
  -h, --help       this help

Latencies (TTFB: first response byte, TTLB: last byte) include the connect
time (and the TLS handshake) when the request had to open a connection.
With https, handshakes (full and resumed) are counted and their duration
gets its own percentiles; --close makes every request a new handshake.
";

/// Parsed options. `Default` matches the documented defaults (with no URL).
#[derive(Debug, Clone)]
pub struct Options {
    /// Targets, used round-robin. At least one.
    pub urls: Vec<Target>,
    /// Concurrent connections. Default is 10.
    pub conns: usize,
    /// Threads; 0 means "number of CPUs, at most `conns`". Default is 0.
    pub threads: usize,
    /// Stop after this long. Default is none.
    pub duration: Option<Duration>,
    /// Stop after sending this many requests. Default is none.
    pub requests: Option<u64>,
    /// Linear ramp-up time. Default is 0.
    pub rampup: Duration,
    /// Open-loop total rate in requests/s. Default is none (closed loop).
    pub rate: Option<f64>,
    /// One request per connection. Default is false.
    pub close: bool,
    /// HTTP/2 (`--h2`). Default is false (HTTP/1.1).
    pub h2: bool,
    /// Requests in flight per HTTP/2 connection (`--h2-streams`). Default
    /// is 10.
    pub h2_streams: usize,
    /// Extra request headers, `(name, value)`. Default is empty.
    pub headers: Vec<(String, String)>,
    /// Request method. Default is `GET`.
    pub method: String,
    /// Request body. Default is none.
    pub body: Option<Vec<u8>>,
    /// Per-request timeout. Default is 10 s.
    pub timeout: Option<Duration>,
    /// JSON report path. Default is none.
    pub json: Option<PathBuf>,
    /// SVG plot path. Default is none.
    pub plot: Option<PathBuf>,
    /// No per-second lines. Default is false.
    pub quiet: bool,
    /// TLS settings (used by `https://` URLs only).
    pub tls: TlsOptions,
}

/// TLS settings for `https://` URLs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    /// Accept any certificate (`-k`). Default is false.
    pub insecure: bool,
    /// PEM roots file. Default is none (the system trust store).
    pub cacert: Option<PathBuf>,
    /// SNI / verified name override. Default is none (the URL host).
    pub sni: Option<String>,
    /// ALPN protocols offered. Default is `http/1.1`.
    pub alpn: Vec<String>,
    /// Session resumption on reconnect. Default is true.
    pub resume: bool,
    /// Only this version (`"1.2"` or `"1.3"`). Default is none (both).
    pub version: Option<String>,
}

impl Default for TlsOptions {
    fn default() -> Self {
        TlsOptions {
            insecure: false,
            cacert: None,
            sni: None,
            alpn: vec!["http/1.1".into()],
            resume: true,
            version: None,
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            urls: Vec::new(),
            conns: 10,
            threads: 0,
            duration: None,
            requests: None,
            rampup: Duration::ZERO,
            rate: None,
            close: false,
            h2: false,
            h2_streams: 10,
            headers: Vec::new(),
            method: "GET".into(),
            body: None,
            timeout: Some(Duration::from_secs(10)),
            json: None,
            plot: None,
            quiet: false,
            tls: TlsOptions::default(),
        }
    }
}

impl Options {
    /// Threads actually used.
    pub fn effective_threads(&self) -> usize {
        let t = if self.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            self.threads
        };
        t.clamp(1, self.conns.max(1))
    }
}

/// One parsed `http://` or `https://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The URL as given.
    pub url: String,
    /// Resolved address (first result of name resolution).
    pub addr: SocketAddr,
    /// `Host` header value: authority as written.
    pub host: String,
    /// Request target: path and query, `/` when absent.
    pub path: String,
    /// `https://`.
    pub tls: bool,
    /// Host name or IP address alone (no brackets, no port): the default
    /// TLS server name.
    pub hostname: String,
}

impl Target {
    /// Parses and resolves `http[s]://host[:port][/path][?query]` (no
    /// scheme means `http://`).
    pub fn parse(url: &str) -> Result<Target, String> {
        let (rest, tls) = if let Some(r) = url.strip_prefix("http://") {
            (r, false)
        } else if let Some(r) = url.strip_prefix("https://") {
            (r, true)
        } else if url.contains("://") {
            return Err(format!(
                "{url}: only http:// and https:// URLs are supported"
            ));
        } else {
            (url, false)
        };
        let default_port = if tls { "443" } else { "80" };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        if authority.is_empty() {
            return Err(format!("{url}: missing host"));
        }
        if authority.contains('@') {
            return Err(format!("{url}: user info is not supported"));
        }
        // Split host and port, minding [v6]:port.
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let end = v6
                .find(']')
                .ok_or_else(|| format!("{url}: bad IPv6 host"))?;
            let after = &v6[end + 1..];
            let port = match after.strip_prefix(':') {
                Some(p) => p,
                None if after.is_empty() => default_port,
                None => return Err(format!("{url}: bad authority")),
            };
            (&v6[..end], port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, p),
                None => (authority, default_port),
            }
        };
        let port: u16 = port
            .parse()
            .map_err(|_| format!("{url}: bad port '{port}'"))?;
        let addr = (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("{url}: cannot resolve {host}: {e}"))?
            .next()
            .ok_or_else(|| format!("{url}: {host} has no address"))?;
        Ok(Target {
            url: url.to_string(),
            addr,
            host: authority.to_string(),
            path,
            tls,
            hostname: host.to_string(),
        })
    }
}

/// What the command line asked for.
#[derive(Debug)]
pub enum Command {
    Run(Box<Options>),
    Help,
}

fn num<T: std::str::FromStr>(opt: &str, v: Option<String>) -> Result<T, String> {
    let v = v.ok_or_else(|| format!("{opt} needs a value"))?;
    v.parse().map_err(|_| format!("{opt}: bad value '{v}'"))
}

fn seconds(opt: &str, v: Option<String>) -> Result<Duration, String> {
    let s: f64 = num(opt, v)?;
    if !(0.0..1e9).contains(&s) {
        return Err(format!("{opt}: out of range"));
    }
    Ok(Duration::from_secs_f64(s))
}

/// Parses arguments (without the program name).
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Command, String> {
    let mut o = Options::default();
    let mut args = args.into_iter();
    let mut urls = Vec::new();
    let mut alpn_given = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "-c" => o.conns = num(&a, args.next())?,
            "-t" => o.threads = num(&a, args.next())?,
            "-d" => o.duration = Some(seconds(&a, args.next())?),
            "-n" => o.requests = Some(num(&a, args.next())?),
            "-s" => o.rampup = seconds(&a, args.next())?,
            "-R" => {
                let r: f64 = num(&a, args.next())?;
                if !(r > 0.0 && r.is_finite()) {
                    return Err("-R must be positive".into());
                }
                o.rate = Some(r);
            }
            "--close" => o.close = true,
            "--h2" => o.h2 = true,
            "--h2-streams" => o.h2_streams = num(&a, args.next())?,
            "-H" => {
                let h = args.next().ok_or("-H needs a value")?;
                let (n, v) = h
                    .split_once(':')
                    .ok_or_else(|| format!("-H '{h}': expected 'Name: value'"))?;
                let n = n.trim();
                if n.is_empty() || n.bytes().any(|b| b <= b' ' || b == 0x7f) {
                    return Err(format!("-H '{h}': bad header name"));
                }
                if v.bytes().any(|b| b == b'\r' || b == b'\n') {
                    return Err(format!("-H '{h}': bad header value"));
                }
                o.headers.push((n.to_string(), v.trim().to_string()));
            }
            "-m" => {
                let m = args.next().ok_or("-m needs a value")?;
                if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                    return Err(format!("-m: bad method '{m}'"));
                }
                o.method = m;
            }
            "--body" => o.body = Some(args.next().ok_or("--body needs a value")?.into_bytes()),
            "--body-file" => {
                let f = args.next().ok_or("--body-file needs a value")?;
                o.body = Some(std::fs::read(&f).map_err(|e| format!("--body-file {f}: {e}"))?);
            }
            "--timeout" => {
                let ms: u64 = num(&a, args.next())?;
                o.timeout = (ms > 0).then(|| Duration::from_millis(ms));
            }
            "--json" => o.json = Some(args.next().ok_or("--json needs a file")?.into()),
            "--plot" => o.plot = Some(args.next().ok_or("--plot needs a file")?.into()),
            "-q" | "--quiet" => o.quiet = true,
            "-k" | "--insecure" => o.tls.insecure = true,
            "--cacert" => o.tls.cacert = Some(args.next().ok_or("--cacert needs a file")?.into()),
            "--sni" => {
                let n = args.next().ok_or("--sni needs a name")?;
                if rustls::pki_types::ServerName::try_from(n.as_str()).is_err() {
                    return Err(format!("--sni: bad name '{n}'"));
                }
                o.tls.sni = Some(n);
            }
            "--alpn" => {
                let l = args.next().ok_or("--alpn needs a value")?;
                alpn_given = true;
                o.tls.alpn = if l == "none" || l.is_empty() {
                    Vec::new()
                } else {
                    l.split(',').map(|p| p.trim().to_string()).collect()
                };
                if o.tls.alpn.iter().any(|p| p.is_empty() || p.len() > 255) {
                    return Err(format!("--alpn: bad list '{l}'"));
                }
            }
            "--tls-resume" => {
                o.tls.resume = match args.next().as_deref() {
                    Some("on") => true,
                    Some("off") => false,
                    _ => return Err("--tls-resume needs on or off".into()),
                }
            }
            "--tls-version" => {
                let v = args.next().ok_or("--tls-version needs 1.2 or 1.3")?;
                if v != "1.2" && v != "1.3" {
                    return Err(format!("--tls-version: bad value '{v}' (1.2 or 1.3)"));
                }
                o.tls.version = Some(v);
            }
            _ if a.starts_with('-') && a.len() > 1 => return Err(format!("unknown option {a}")),
            _ => urls.push(a),
        }
    }
    if urls.is_empty() {
        return Err("no URL given".into());
    }
    if o.conns == 0 {
        return Err("-c must be at least 1".into());
    }
    if o.h2 && !alpn_given {
        o.tls.alpn = vec!["h2".into()];
    }
    for u in &urls {
        o.urls.push(Target::parse(u)?);
    }
    Ok(Command::Run(Box::new(o)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Options, String> {
        match parse(s.split_whitespace().map(String::from))? {
            Command::Run(o) => Ok(*o),
            Command::Help => Err("help".into()),
        }
    }

    #[test]
    fn urls() {
        let t = Target::parse("http://127.0.0.1:8080/a?b=c").unwrap();
        assert_eq!(t.addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(
            (t.host.as_str(), t.path.as_str()),
            ("127.0.0.1:8080", "/a?b=c")
        );
        let t = Target::parse("http://127.0.0.1?s=1").unwrap();
        assert_eq!((t.addr.port(), t.path.as_str()), (80, "/?s=1"));
        let t = Target::parse("127.0.0.2:9").unwrap();
        assert_eq!(t.path, "/");
        let t = Target::parse("http://[::1]:81/x").unwrap();
        assert_eq!(t.addr, "[::1]:81".parse().unwrap());
        let t = Target::parse("https://127.0.0.1/").unwrap();
        assert!(t.tls);
        assert_eq!((t.addr.port(), t.hostname.as_str()), (443, "127.0.0.1"));
        let t = Target::parse("https://[::1]:8443").unwrap();
        assert_eq!((t.addr.port(), t.hostname.as_str()), (8443, "::1"));
        assert!(!Target::parse("http://127.0.0.1/").unwrap().tls);
        assert!(Target::parse("ftp://127.0.0.1/").is_err());
        assert!(Target::parse("http://127.0.0.1:x/").is_err());
        assert!(Target::parse("http:///").is_err());
    }

    #[test]
    fn options() {
        let o = p(
            "-c 5 -t 2 -d 1.5 -n 100 -s 2 -R 1000 --close -H a:b -H X-Y:_z -m POST \
                   --body hi --timeout 0 -q http://127.0.0.1:1/",
        )
        .unwrap();
        assert_eq!((o.conns, o.threads, o.requests), (5, 2, Some(100)));
        assert_eq!(o.duration, Some(Duration::from_millis(1500)));
        assert_eq!(o.rampup, Duration::from_secs(2));
        assert_eq!(o.rate, Some(1000.0));
        assert!(o.close && o.quiet);
        assert_eq!(o.headers[1], ("X-Y".to_string(), "_z".to_string()));
        assert_eq!(o.method, "POST");
        assert_eq!(o.body.as_deref(), Some(&b"hi"[..]));
        assert_eq!(o.timeout, None);
        assert_eq!(o.effective_threads(), 2);
        let o = p("http://127.0.0.1:1/").unwrap();
        assert_eq!(o.timeout, Some(Duration::from_secs(10)));
        assert!(p("-c 0 http://127.0.0.1:1/").is_err());
        assert!(p("-x http://127.0.0.1:1/").is_err());
        assert!(p("-R -1 http://127.0.0.1:1/").is_err());
        assert!(p("-H nocolon http://127.0.0.1:1/").is_err());
        assert!(p("-c 3").is_err());
        assert_eq!(p("-h").unwrap_err(), "help");
        assert_eq!(o.tls, TlsOptions::default());
        assert_eq!(o.tls.alpn, ["http/1.1"]);
        let o = p(
            "-k --cacert /x --sni a.example --alpn h2,http/1.1 --tls-resume off \
                   --tls-version 1.3 https://127.0.0.1:1/",
        )
        .unwrap();
        assert!(o.tls.insecure && !o.tls.resume);
        assert_eq!(o.tls.cacert, Some(PathBuf::from("/x")));
        assert_eq!(o.tls.sni.as_deref(), Some("a.example"));
        assert_eq!(o.tls.alpn, ["h2", "http/1.1"]);
        assert_eq!(o.tls.version.as_deref(), Some("1.3"));
        assert!(p("--alpn none https://127.0.0.1:1/")
            .unwrap()
            .tls
            .alpn
            .is_empty());
        assert!(p("--tls-version 1.1 https://127.0.0.1:1/").is_err());
        let o = p("--h2 --h2-streams 32 https://127.0.0.1:1/").unwrap();
        assert!(o.h2);
        assert_eq!(
            (o.h2_streams, o.tls.alpn.as_slice()),
            (32, &["h2".to_string()][..])
        );
        let o = p("--h2 --alpn h2,http/1.1 https://127.0.0.1:1/").unwrap();
        assert_eq!(o.tls.alpn, ["h2", "http/1.1"]);
        let o = p("https://127.0.0.1:1/").unwrap();
        assert!(!o.h2);
        assert_eq!(o.h2_streams, 10);
        assert!(p("--tls-resume maybe https://127.0.0.1:1/").is_err());
    }
}
