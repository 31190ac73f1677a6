//! A dnsmasq started for one test on its own loopback address and a free
//! port, serving a hosts file the test rewrites. Shared by this crate's
//! tests and the binary's (`tests/dns.rs` includes this file by path).
//! dnsmasq-base is installed by `.ci/run`; without it the tests say so and
//! skip.

#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where dnsmasq is, if installed.
pub fn dnsmasq_path() -> Option<PathBuf> {
    let candidates = ["/usr/sbin/dnsmasq", "/usr/bin/dnsmasq", "/sbin/dnsmasq"];
    candidates.iter().map(PathBuf::from).find(|p| p.exists())
}

/// Prints why a test is skipped and returns None when dnsmasq is absent.
pub fn require_dnsmasq(test: &str) -> Option<PathBuf> {
    let found = dnsmasq_path();
    if found.is_none() {
        eprintln!("SKIP {test}: dnsmasq is not installed (apt-get install dnsmasq-base); .ci/run installs it");
    }
    found
}

/// A port free for both UDP and TCP on `ip`.
pub fn free_port(ip: &str) -> u16 {
    for _ in 0..100 {
        let udp = UdpSocket::bind((ip, 0)).expect("bind udp on loopback");
        let port = udp.local_addr().unwrap().port();
        if TcpListener::bind((ip, port)).is_ok() {
            return port;
        }
    }
    panic!("no free port on {ip}");
}

pub struct Dnsmasq {
    child: Option<Child>,
    pub addr: SocketAddr,
    pub dir: PathBuf,
    hosts: PathBuf,
    args: Vec<String>,
    bin: PathBuf,
}

impl Dnsmasq {
    /// Starts dnsmasq on `ip` serving `hosts` (hosts-file lines) for the
    /// local domain `test` (other names are REFUSED: no upstream), plus
    /// `extra` options (e.g. `--srv-host=...`).
    pub fn start(bin: &Path, ip: &str, hosts: &str, extra: &[&str]) -> Dnsmasq {
        let port = free_port(ip);
        let dir = std::env::temp_dir().join(format!("fairlead-dns-{}-{}", std::process::id(), ip));
        std::fs::create_dir_all(&dir).unwrap();
        let hosts_path = dir.join("hosts");
        write_world_readable(&hosts_path, hosts);
        let mut args = vec![
            "--keep-in-foreground".to_string(),
            "--conf-file=/dev/null".to_string(),
            "--no-resolv".to_string(),
            "--no-hosts".to_string(),
            format!("--addn-hosts={}", hosts_path.display()),
            format!("--listen-address={ip}"),
            "--bind-interfaces".to_string(),
            format!("--port={port}"),
            "--local=/test/".to_string(),
            "--pid-file=".to_string(),
            "--log-facility=-".to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut d = Dnsmasq {
            child: None,
            addr: SocketAddr::new(ip.parse().unwrap(), port),
            dir,
            hosts: hosts_path,
            args,
            bin: bin.to_path_buf(),
        };
        d.spawn();
        d
    }

    fn spawn(&mut self) {
        let child = Command::new(&self.bin)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start dnsmasq");
        self.child = Some(child);
        // ready once it answers TCP connections on its port
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect_timeout(&self.addr, Duration::from_millis(100)).is_err()
        {
            assert!(
                Instant::now() < deadline,
                "dnsmasq did not start on {}",
                self.addr
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Rewrites the hosts file and makes dnsmasq read it again (SIGHUP).
    pub fn set_hosts(&self, hosts: &str) {
        write_world_readable(&self.hosts, hosts);
        let pid = self.child.as_ref().expect("dnsmasq running").id();
        let status = Command::new("kill")
            .arg("-HUP")
            .arg(pid.to_string())
            .status()
            .expect("run kill");
        assert!(status.success());
    }

    /// Stops dnsmasq (its port then answers nothing).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same address and port.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

impl Drop for Dnsmasq {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn write_world_readable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}
