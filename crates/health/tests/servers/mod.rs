//! Real servers for the protocol checks' tests: MariaDB, PostgreSQL,
//! Exim, OpenLDAP's slapd, Dante (SOCKS4) and `openssl s_server`, each a
//! foreground process on its own loopback address with a temporary data
//! directory, started with a polling deadline and killed when dropped.
//! The packages are installed by `.ci/run`; a missing one fails the test
//! with the package to install.
//!
//! Shared by `crates/health/tests/protocols.rs` and the end-to-end
//! `tests/health_types.rs`.

#![allow(dead_code)]

use std::fs;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running server; killed, and its directory removed, when dropped.
pub struct Daemon {
    pub addr: SocketAddr,
    pub dir: PathBuf,
    child: Option<Child>,
    name: &'static str,
}

impl Daemon {
    /// Kills the server now (it is then "stopped" for the checks).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The server's log file, for failure messages.
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.join("out.log")).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// A port of `ip` that is free now. The kernel may hand a released port
/// out again, so no address is returned twice in one test binary.
pub fn free_port(ip: &str) -> SocketAddr {
    static GIVEN: std::sync::Mutex<Vec<SocketAddr>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let l = TcpListener::bind((ip, 0)).expect("bind a free port");
        let addr = l.local_addr().unwrap();
        if !given.contains(&addr) {
            given.push(addr);
            return addr;
        }
    }
}

/// A fresh directory under the system temp dir, writable by everyone
/// (servers that drop privileges write there).
fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "fairlead-{name}-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos() ^ rand_suffix()
    ));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    chmod_777(&d);
    d
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn chmod_777(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o777));
}

/// The first of `candidates` that exists, or a panic naming the package.
fn find_bin(candidates: &[&str], package: &str) -> PathBuf {
    for c in candidates {
        let p = PathBuf::from(c);
        if p.is_absolute() && p.exists() {
            return p;
        }
        if !p.is_absolute() {
            if let Ok(out) = Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {c}"))
                .output()
            {
                let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
                if !s.is_empty() {
                    return PathBuf::from(s);
                }
            }
        }
    }
    panic!(
        "{} not found: install the Debian package '{package}' (see .ci/run)",
        candidates[0]
    );
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Runs `cmd` to completion, panicking with its output on failure.
fn run_ok(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Spawns `cmd` with its output in `dir/out.log` and waits until `addr`
/// accepts connections (at most `limit`).
fn spawn(
    name: &'static str,
    mut cmd: Command,
    dir: PathBuf,
    addr: SocketAddr,
    limit: Duration,
) -> Daemon {
    let log = fs::File::create(dir.join("out.log")).unwrap();
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    let child = cmd.spawn().unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut d = Daemon {
        addr,
        dir,
        child: Some(child),
        name,
    };
    let end = Instant::now() + limit;
    loop {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return d;
        }
        if let Some(Ok(Some(st))) = d.child.as_mut().map(|c| c.try_wait()) {
            panic!("{name} exited ({st}) before listening:\n{}", d.log());
        }
        if Instant::now() >= end {
            let log = d.log();
            d.stop();
            panic!("{name} did not listen on {addr} within {limit:?}:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// MariaDB with a user `haproxy` (any host, no password) that checks log
/// in as, and per-user statistics (`information_schema.USER_STATISTICS`). Queries run as root over the Unix socket with [`mariadb_query`].
pub fn mariadb(ip: &str) -> Daemon {
    let mariadbd = find_bin(&["mariadbd", "/usr/sbin/mariadbd"], "mariadb-server");
    let install = find_bin(&["mariadb-install-db"], "mariadb-server");
    let dir = temp_dir("mariadb");
    let data = dir.join("data");
    run_ok(
        Command::new(install)
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg("--user=root")
            .arg("--skip-test-db")
            .arg("--auth-root-authentication-method=socket"),
        "mariadb-install-db",
    );
    fs::write(
        dir.join("init.sql"),
        "CREATE USER IF NOT EXISTS 'haproxy'@'%';\n",
    )
    .unwrap();
    let addr = free_port(ip);
    let mut cmd = Command::new(mariadbd);
    cmd.arg("--no-defaults")
        .arg(format!("--datadir={}", data.display()))
        .arg(format!("--socket={}", dir.join("sock").display()))
        .arg(format!("--pid-file={}", dir.join("pid").display()))
        .arg(format!("--bind-address={ip}"))
        .arg(format!("--port={}", addr.port()))
        .arg(format!("--init-file={}", dir.join("init.sql").display()))
        .arg("--user=root")
        .arg("--skip-name-resolve")
        .arg("--skip-log-bin")
        .arg("--innodb-buffer-pool-size=8M")
        .arg("--log-warnings=2")
        .arg("--userstat=1");
    spawn("mariadbd", cmd, dir, addr, Duration::from_secs(60))
}

/// Runs one SQL statement as root over the Unix socket; its output rows.
pub fn mariadb_query(db: &Daemon, sql: &str) -> String {
    let client = find_bin(&["mariadb", "mysql"], "mariadb-client");
    let out = Command::new(client)
        .arg("--no-defaults")
        .arg(format!("--socket={}", db.dir.join("sock").display()))
        .arg("-uroot")
        .arg("-N")
        .arg("-B")
        .arg("-e")
        .arg(sql)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The PostgreSQL binaries' directory (`/usr/lib/postgresql/<v>/bin`).
fn pg_bindir() -> PathBuf {
    let mut found: Vec<PathBuf> = fs::read_dir("/usr/lib/postgresql")
        .map(|r| r.flatten().map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    found.retain(|p| p.join("postgres").exists());
    found.sort();
    found.pop().unwrap_or_else(|| {
        panic!("PostgreSQL not found: install the Debian package 'postgresql' (see .ci/run)")
    })
}

/// A command run as `nobody` when we are root (PostgreSQL refuses root).
fn unprivileged(bin: PathBuf) -> Command {
    if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .arg(bin);
        c
    } else {
        Command::new(bin)
    }
}

/// PostgreSQL with `pg_hba.conf`: `postgres` trusted, `pwuser` asked a
/// clear-text password, `scramuser` a SCRAM exchange, everyone else rejected.
pub fn postgres(ip: &str) -> Daemon {
    let bin = pg_bindir();
    let dir = temp_dir("pgsql");
    let data = dir.join("data");
    run_ok(
        unprivileged(bin.join("initdb")).arg("-D").arg(&data).args([
            "-U",
            "postgres",
            "--auth=trust",
            "-N",
        ]),
        "initdb",
    );
    fs::write(
        data.join("pg_hba.conf"),
        "host all postgres 127.0.0.0/8 trust\n\
         host all pwuser 127.0.0.0/8 password\n\
         host all scramuser 127.0.0.0/8 scram-sha-256\n\
         host all all 127.0.0.0/8 reject\n",
    )
    .unwrap();
    let addr = free_port(ip);
    let mut cmd = unprivileged(bin.join("postgres"));
    cmd.arg("-D")
        .arg(&data)
        .arg("-k")
        .arg(&dir)
        .args(["-h", ip, "-p", &addr.port().to_string()])
        .args(["-c", "fsync=off", "-c", "shared_buffers=8MB"]);
    spawn("postgres", cmd, dir, addr, Duration::from_secs(30))
}

/// Exim receiving SMTP as `test.local`; `HELO bad.example` is refused
/// (550).
pub fn exim(ip: &str) -> Daemon {
    let exim = find_bin(&["exim4", "/usr/sbin/exim4", "exim"], "exim4-daemon-light");
    let dir = temp_dir("exim");
    for sub in ["spool", "log"] {
        fs::create_dir_all(dir.join(sub)).unwrap();
        chmod_777(&dir.join(sub));
    }
    let addr = free_port(ip);
    let conf = format!(
        "primary_hostname = test.local\n\
         spool_directory = {d}/spool\n\
         log_file_path = {d}/log/%slog\n\
         pid_file_path = {d}/exim.pid\n\
         keep_environment =\n\
         acl_smtp_helo = acl_helo\n\
         begin acl\n\
         acl_helo:\n  deny condition = ${{if eq{{$sender_helo_name}}{{bad.example}}}}\n  accept\n",
        d = dir.display()
    );
    fs::write(dir.join("exim.conf"), conf).unwrap();
    let mut cmd = Command::new(exim);
    cmd.arg("-C")
        .arg(dir.join("exim.conf"))
        .arg("-bdf")
        .arg("-oX")
        .arg(format!("<; {ip}.{}", addr.port()));
    spawn("exim", cmd, dir, addr, Duration::from_secs(20))
}

/// OpenLDAP's slapd with an empty `dc=example,dc=com` database;
/// `disallow_anon` refuses anonymous binds (resultCode 48).
pub fn slapd(ip: &str, disallow_anon: bool) -> Daemon {
    let slapd = find_bin(&["slapd", "/usr/sbin/slapd"], "slapd");
    let dir = temp_dir("slapd");
    fs::create_dir_all(dir.join("db")).unwrap();
    let addr = free_port(ip);
    let conf = format!(
        "include /etc/ldap/schema/core.schema\n\
         pidfile {d}/slapd.pid\n\
         argsfile {d}/slapd.args\n\
         {anon}\
         modulepath /usr/lib/ldap\n\
         moduleload back_mdb\n\
         database mdb\n\
         maxsize 10485760\n\
         suffix \"dc=example,dc=com\"\n\
         rootdn \"cn=admin,dc=example,dc=com\"\n\
         directory {d}/db\n",
        d = dir.display(),
        anon = if disallow_anon {
            "disallow bind_anon\n"
        } else {
            ""
        }
    );
    fs::write(dir.join("slapd.conf"), conf).unwrap();
    let mut cmd = Command::new(slapd);
    cmd.args(["-d", "0", "-f"])
        .arg(dir.join("slapd.conf"))
        .arg("-h")
        .arg(format!("ldap://{addr}/"));
    spawn("slapd", cmd, dir, addr, Duration::from_secs(20))
}

/// Dante as a SOCKS4 proxy that grants everything but `blocked`.
pub fn dante(ip: &str, blocked: SocketAddr) -> Daemon {
    let danted = find_bin(&["danted", "/usr/sbin/danted"], "dante-server");
    let dir = temp_dir("dante");
    let addr = free_port(ip);
    let IpAddr::V4(b) = blocked.ip() else {
        panic!("SOCKS4 blocks IPv4 addresses")
    };
    let conf = format!(
        "logoutput: stderr\n\
         internal: {ip} port = {port}\n\
         external: {ip}\n\
         clientmethod: none\n\
         socksmethod: none\n\
         user.privileged: root\n\
         user.unprivileged: nobody\n\
         client pass {{ from: 0.0.0.0/0 to: 0.0.0.0/0 }}\n\
         socks block {{ from: 0.0.0.0/0 to: {b}/32 port = {bp} }}\n\
         socks pass {{ from: 0.0.0.0/0 to: 0.0.0.0/0 }}\n",
        port = addr.port(),
        bp = blocked.port()
    );
    fs::write(dir.join("danted.conf"), conf).unwrap();
    let mut cmd = Command::new(danted);
    cmd.arg("-f").arg(dir.join("danted.conf"));
    spawn("danted", cmd, dir, addr, Duration::from_secs(20))
}

/// `openssl s_server` with a fresh self-signed certificate.
pub fn tls_server(ip: &str) -> Daemon {
    let openssl = find_bin(&["openssl"], "openssl");
    let dir = temp_dir("tls");
    run_ok(
        Command::new(&openssl)
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
            ])
            .args(["-nodes", "-days", "2", "-subj", "/CN=check.test", "-keyout"])
            .arg(dir.join("key.pem"))
            .arg("-out")
            .arg(dir.join("cert.pem")),
        "openssl req",
    );
    let addr = free_port(ip);
    let mut cmd = Command::new(openssl);
    cmd.args(["s_server", "-quiet", "-accept"])
        .arg(addr.to_string())
        .arg("-cert")
        .arg(dir.join("cert.pem"))
        .arg("-key")
        .arg(dir.join("key.pem"))
        .args(["-alpn", "h2,http/1.1"]);
    spawn("openssl s_server", cmd, dir, addr, Duration::from_secs(20))
}
