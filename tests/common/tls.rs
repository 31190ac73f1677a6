//! TLS helpers for the integration tests: certificates made at test time
//! with the `openssl` command line, and the `openssl s_client` / `curl`
//! clients run under a time limit.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// Seconds any one client command may run.
pub const CLIENT_LIMIT_S: u32 = 10;

/// The kind of key a certificate gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// ECDSA on P-256.
    Ec,
    /// RSA 2048.
    Rsa,
}

impl Key {
    fn newkey_args(self) -> Vec<&'static str> {
        match self {
            Key::Ec => vec!["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
            Key::Rsa => vec!["-newkey", "rsa:2048"],
        }
    }
}

/// A certificate authority: its certificate and key files.
#[derive(Debug, Clone)]
pub struct Ca {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// A directory of certificates for one test, removed on drop.
pub struct Pki {
    pub dir: PathBuf,
}

const REQ_CNF: &str = "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = x\n\
[v3_ca]\nbasicConstraints = critical,CA:TRUE\nkeyUsage = critical,keyCertSign,cRLSign\n\
subjectKeyIdentifier = hash\n";

impl Pki {
    /// A fresh directory under the temporary directory.
    pub fn new(tag: &str) -> Pki {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "fairlead-tls-{}-{tag}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("req.cnf"), REQ_CNF).unwrap();
        Pki { dir }
    }

    /// A path inside the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Runs `openssl` in the directory; panics with its output on failure.
    pub fn openssl(&self, args: &[&str]) -> Output {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .output()
            .expect("run openssl");
        assert!(
            out.status.success(),
            "openssl {args:?} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// A self-signed CA named `name` (files `<name>.pem`, `<name>.key`).
    pub fn ca(&self, name: &str) -> Ca {
        let cert = self.path(&format!("{name}.pem"));
        let key = self.path(&format!("{name}.key"));
        let mut args = vec!["req", "-x509", "-config", "req.cnf", "-extensions", "v3_ca"];
        args.extend(Key::Ec.newkey_args());
        let subj = format!("/CN={name} Test CA");
        args.extend([
            "-nodes",
            "-keyout",
            key.to_str().unwrap(),
            "-out",
            cert.to_str().unwrap(),
            "-days",
            "30",
            "-subj",
            &subj,
        ]);
        self.openssl(&args);
        Ca { cert, key }
    }

    /// A new key (`<file>.key`) and certificate signing request
    /// (`<file>.csr`) for `cn`.
    fn csr(&self, file: &str, cn: &str, key: Key) -> (PathBuf, PathBuf) {
        let k = self.path(&format!("{file}.key"));
        let csr = self.path(&format!("{file}.csr"));
        let mut args = vec!["req", "-new", "-config", "req.cnf"];
        args.extend(key.newkey_args());
        let subj = format!("/CN={cn}");
        args.extend([
            "-nodes",
            "-keyout",
            k.to_str().unwrap(),
            "-subj",
            &subj,
            "-out",
            csr.to_str().unwrap(),
        ]);
        self.openssl(&args);
        (k, csr)
    }

    /// Signs a certificate for `cn` (plus `sans` as DNS names) with `ca`,
    /// valid 30 days; `client` makes a client certificate (EKU clientAuth)
    /// instead of a server one. Returns `<file>.pem`: the certificate
    /// followed by its key (HAProxy's format). `<file>.crt` and
    /// `<file>.key` hold the parts.
    pub fn leaf(
        &self,
        ca: &Ca,
        file: &str,
        cn: &str,
        sans: &[&str],
        key: Key,
        client: bool,
    ) -> PathBuf {
        let (k, csr) = self.csr(file, cn, key);
        let ext = self.path(&format!("{file}.ext"));
        let mut e = String::from("basicConstraints = CA:FALSE\nauthorityKeyIdentifier = keyid\n");
        if client {
            e.push_str("extendedKeyUsage = clientAuth\n");
        } else {
            e.push_str("extendedKeyUsage = serverAuth\n");
        }
        let mut names: Vec<String> = Vec::new();
        if !client {
            names.push(format!("DNS:{cn}"));
        }
        names.extend(sans.iter().map(|s| format!("DNS:{s}")));
        if !names.is_empty() {
            e.push_str(&format!("subjectAltName = {}\n", names.join(",")));
        }
        std::fs::write(&ext, e).unwrap();
        let crt = self.path(&format!("{file}.crt"));
        let serial = format!("0x{:016x}", rand_u64());
        self.openssl(&[
            "x509",
            "-req",
            "-in",
            csr.to_str().unwrap(),
            "-CA",
            ca.cert.to_str().unwrap(),
            "-CAkey",
            ca.key.to_str().unwrap(),
            "-set_serial",
            &serial,
            "-days",
            "30",
            "-extfile",
            ext.to_str().unwrap(),
            "-out",
            crt.to_str().unwrap(),
        ]);
        let pem = self.path(&format!("{file}.pem"));
        concat(&pem, &[&crt, &k]);
        pem
    }

    /// A server certificate for `cn` signed by `ca` (EC key), as a
    /// combined PEM.
    pub fn server(&self, ca: &Ca, file: &str, cn: &str) -> PathBuf {
        self.leaf(ca, file, cn, &[], Key::Ec, false)
    }

    /// A certificate for `cn` signed by `ca` that expired on 2020-01-01
    /// (valid from 2019-01-01), made with `openssl ca -startdate/-enddate`
    /// since OpenSSL 3.0's `x509`/`req` cannot date a certificate in the
    /// past. Returns the combined PEM `<file>.pem`.
    pub fn expired(&self, ca: &Ca, file: &str, cn: &str) -> PathBuf {
        let (k, csr) = self.csr(file, cn, Key::Ec);
        let db = self.path(&format!("{file}.db"));
        std::fs::create_dir_all(&db).unwrap();
        std::fs::write(db.join("index.txt"), "").unwrap();
        std::fs::write(db.join("serial"), format!("{:016X}\n", rand_u64())).unwrap();
        let cnf = self.path(&format!("{file}.ca.cnf"));
        std::fs::write(
            &cnf,
            format!(
                "[ca]\ndefault_ca = c\n[c]\ndatabase = {db}/index.txt\nnew_certs_dir = {db}\n\
serial = {db}/serial\ndefault_md = sha256\npolicy = p\nunique_subject = no\n\
[p]\ncommonName = supplied\n[ext]\nbasicConstraints = CA:FALSE\n\
extendedKeyUsage = serverAuth\nsubjectAltName = DNS:{cn}\n",
                db = db.display()
            ),
        )
        .unwrap();
        let crt = self.path(&format!("{file}.crt"));
        self.openssl(&[
            "ca",
            "-batch",
            "-notext",
            "-config",
            cnf.to_str().unwrap(),
            "-extensions",
            "ext",
            "-cert",
            ca.cert.to_str().unwrap(),
            "-keyfile",
            ca.key.to_str().unwrap(),
            "-in",
            csr.to_str().unwrap(),
            "-out",
            crt.to_str().unwrap(),
            "-startdate",
            "20190101000000Z",
            "-enddate",
            "20200101000000Z",
        ]);
        let pem = self.path(&format!("{file}.pem"));
        concat(&pem, &[&crt, &k]);
        pem
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Writes the concatenation of `parts` to `dst`.
pub fn concat(dst: &Path, parts: &[&Path]) {
    let mut all = Vec::new();
    for p in parts {
        all.extend(std::fs::read(p).unwrap());
    }
    std::fs::write(dst, all).unwrap();
}

/// A random 63-bit number (serials), from the clock and a counter.
fn rand_u64() -> u64 {
    static N: AtomicU32 = AtomicU32::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let x = t
        ^ (u64::from(std::process::id()) << 32)
        ^ u64::from(N.fetch_add(1, Ordering::Relaxed)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (x ^ (x >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9) >> 1
}

/// What a client command did.
#[derive(Debug)]
pub struct Ran {
    /// Exit status; `None` when killed by `timeout` or a signal.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }
    /// stdout and stderr together.
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Runs `prog args` under `timeout`, feeding `input` on stdin (then EOF).
pub fn run_limited(prog: &str, args: &[&str], input: &[u8], cwd: Option<&Path>) -> Ran {
    let mut cmd = Command::new("timeout");
    cmd.arg("-k")
        .arg("2")
        .arg(CLIENT_LIMIT_S.to_string())
        .arg(prog)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {prog}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    let _ = feeder.join();
    let code = out.status.code();
    assert_ne!(code, Some(124), "{prog} {args:?} timed out");
    Ran {
        code,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `openssl s_client -connect addr <args>` with `input` on stdin.
pub fn s_client(addr: SocketAddr, args: &[&str], input: &[u8]) -> Ran {
    let connect = addr.to_string();
    let mut all = vec!["s_client", "-connect", connect.as_str()];
    all.extend_from_slice(args);
    run_limited("openssl", &all, input, None)
}

/// The `subject=` line of an `s_client` output (`CN = a.example`).
pub fn subject(out: &str) -> Option<String> {
    out.lines()
        .find_map(|l| l.strip_prefix("subject="))
        .map(|s| s.trim().to_string())
}

/// The request that makes an `s_client -ign_eof` session read a response
/// then end when the server closes.
pub const CLOSE_REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

/// `curl -s --max-time N <args>`.
pub fn curl(args: &[&str]) -> Ran {
    let limit = (CLIENT_LIMIT_S - 2).to_string();
    let mut all = vec!["-s", "--max-time", limit.as_str()];
    all.extend_from_slice(args);
    run_limited("curl", &all, b"", None)
}

/// `--resolve name:port:ip` for `addr`.
pub fn resolve(name: &str, addr: SocketAddr) -> String {
    format!("{name}:{}:{}", addr.port(), addr.ip())
}

/// `https://name:port/path`.
pub fn https_url(name: &str, addr: SocketAddr, path: &str) -> String {
    format!("https://{name}:{}{path}", addr.port())
}

/// A field of `show stat` for `pxname,svname` (`None` if absent).
pub fn stat_field(csv: &str, px: &str, sv: &str, field: &str) -> Option<String> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next()?.trim_start_matches("# ").split(',').collect();
    let i = header.iter().position(|n| *n == field)?;
    lines
        .find(|l| l.starts_with(&format!("{px},{sv},")))
        .and_then(|l| l.split(',').nth(i))
        .map(str::to_string)
}

/// A `show pools` line's `used` count for pool `name`
/// (`  - Pool NAME (SIZE bytes) : A allocated (B bytes), U used, F failures`).
pub fn pool_used(out: &str, name: &str) -> Option<u64> {
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("- Pool {name} (")))?;
    let (_, rest) = line.split_once(" : ")?;
    let used = rest.split(", ").find(|p| p.ends_with(" used"))?;
    used.trim_end_matches(" used").trim().parse().ok()
}

/// Runs the `fairlead` binary on `cfg` and expects it to exit (not to
/// start serving): returns its exit code and stderr.
pub fn start_fails(cfg: &str, extra_args: &[&str]) -> (Option<i32>, String) {
    let path = super::write_cfg(cfg);
    let mut child = Command::new(env!("CARGO_BIN_EXE_fairlead"))
        .args(extra_args)
        .arg("-f")
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fairlead");
    let end = std::time::Instant::now() + super::DEADLINE;
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if std::time::Instant::now() > end {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            let _ = std::fs::remove_file(&path);
            panic!(
                "fairlead kept running on a configuration it should refuse:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_file(&path);
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        ),
    )
}

/// `global` (two threads, plus `global_extra`), `defaults` in mode http,
/// then `body`.
pub fn cfg(global_extra: &str, body: &str) -> String {
    format!(
        "global\n    nbthread 2\n{global_extra}\
defaults\n    mode http\n    timeout connect 2s\n    timeout client 10s\n    timeout server 10s\n\
{body}"
    )
}

pub fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Splits curl's stdout at the `-w` marker `##`: (body, write-out).
pub fn split_w(out: &str) -> (&str, &str) {
    out.rsplit_once("##").expect("curl write-out marker")
}

/// Waits for the admin socket.
pub fn wait_sock(sock: &Path) {
    super::wait_until("stats socket", || {
        std::os::unix::net::UnixStream::connect(sock).is_ok()
    });
}

/// A UDP syslog sink for one test.
pub struct Syslog {
    sock: std::net::UdpSocket,
    pub addr: SocketAddr,
    lines: Vec<String>,
}

impl Syslog {
    pub fn new(ip: std::net::IpAddr) -> Syslog {
        let sock = std::net::UdpSocket::bind((ip, 0)).unwrap();
        sock.set_read_timeout(Some(std::time::Duration::from_millis(100)))
            .unwrap();
        let addr = sock.local_addr().unwrap();
        Syslog {
            sock,
            addr,
            lines: Vec::new(),
        }
    }

    /// Waits for a received line containing every one of `needles`.
    pub fn wait_for(&mut self, needles: &[&str]) -> String {
        let end = std::time::Instant::now() + super::DEADLINE;
        loop {
            if let Some(l) = self
                .lines
                .iter()
                .find(|l| needles.iter().all(|n| l.contains(n)))
            {
                return l.clone();
            }
            assert!(
                std::time::Instant::now() < end,
                "no log line with {needles:?}; got:\n{}",
                self.lines.join("\n")
            );
            let mut buf = [0u8; 8192];
            if let Ok(n) = self.sock.recv(&mut buf) {
                self.lines
                    .push(String::from_utf8_lossy(&buf[..n]).trim_end().to_string());
            }
        }
    }
}

/// `show info`'s value for `key`.
pub fn info(sock: &Path, key: &str) -> u64 {
    let out = super::ask(sock, "show info");
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .unwrap_or_else(|| panic!("no {key} in show info:\n{out}"))
        .trim()
        .parse()
        .unwrap()
}
