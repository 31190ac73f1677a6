//! Master-worker mode (`-W`, `-Ws`) and seamless reload.
//!
//! The master binds every listening socket once and keeps it open. It runs
//! the proxy in a worker process that inherits those sockets
//! ([`crate::inherit`]). On SIGUSR2 it reloads:
//!
//! 1. re-reads and checks the configuration; on error it logs the errors and
//!    keeps the current worker (nothing else changes);
//! 2. binds the sockets of new addresses (existing ones are kept as they
//!    are, so their accept queues never close);
//! 3. starts a new worker and waits for its "ready" byte;
//! 4. sends SIGUSR1 (soft stop) to the previous worker, which stops
//!    accepting, finishes its requests and tunnels, and exits; after
//!    `hard-stop-after` it gets SIGTERM.
//!
//! SIGTERM/SIGINT stop everything at once; SIGUSR1 soft-stops the workers
//! and exits when they are gone. If the current worker dies unexpectedly
//! the master exits with an error (a supervisor restarts it). With `-Ws`
//! the master speaks systemd's notify protocol (`READY=1`, `RELOADING=1`).

use crate::inherit::{FdMap, LISTEN_FDS_ENV, READY_FD_ENV, WORKER_ENV};
use crate::os;
use fairlead_config::Config;
use std::collections::HashMap;
use std::io::{Error, Read, Result};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a new worker may take to report ready. Default is 10 s.
pub const WORKER_START_TIMEOUT: Duration = Duration::from_secs(10);

/// What the master needs from the command line.
pub struct MasterOptions {
    /// Loads and checks the configuration (the same files every time),
    /// printing diagnostics; `Err` when it is invalid.
    pub load: Box<dyn Fn() -> std::result::Result<Config, ()>>,
    /// The executable to start workers with.
    pub exe: std::path::PathBuf,
    /// The workers' arguments (`-f` files, `-q`).
    pub worker_args: Vec<String>,
    pub daemon: bool,
    pub pidfile: Option<String>,
    pub quiet: bool,
    /// `-Ws`: notify systemd.
    pub systemd: bool,
}

/// Listening sockets owned by the master, per address.
#[derive(Default)]
struct Sockets {
    map: HashMap<SocketAddr, Vec<TcpListener>>,
}

/// Addresses a configuration listens on, with their `v6only` setting.
fn wanted(cfg: &Config) -> Vec<(SocketAddr, Option<bool>)> {
    let mut out: Vec<(SocketAddr, Option<bool>)> = Vec::new();
    for f in cfg.frontends.iter().filter(|f| !f.disabled) {
        for b in &f.binds {
            for a in &b.addrs {
                if !out.iter().any(|(x, _)| x == a) {
                    out.push((*a, b.v6only));
                }
            }
        }
    }
    out
}

impl Sockets {
    /// Makes sure every address of `cfg` has `n` sockets; new addresses
    /// must be free (no other process listening).
    fn ensure(&mut self, cfg: &Config, n: usize) -> Result<()> {
        for (addr, v6only) in wanted(cfg) {
            let have = self.map.get(&addr).map_or(0, Vec::len);
            if have == 0 {
                crate::check_port_free(addr).map_err(|e| {
                    Error::new(
                        e.kind(),
                        format!("cannot bind {addr}: {e} (another process listens there)"),
                    )
                })?;
            }
            let list = self.map.entry(addr).or_default();
            while list.len() < n {
                let l = fairlead_net::bind_reuseport(addr, v6only, fairlead_net::DEFAULT_BACKLOG)
                    .map_err(|e| Error::new(e.kind(), format!("cannot bind {addr}: {e}")))?;
                list.push(l);
            }
        }
        Ok(())
    }

    /// Closes the sockets of addresses `cfg` no longer uses.
    fn retain_for(&mut self, cfg: &Config) {
        let keep: Vec<SocketAddr> = wanted(cfg).into_iter().map(|(a, _)| a).collect();
        self.map.retain(|a, _| keep.contains(a));
    }

    fn fd_map(&self, cfg: &Config, n: usize) -> FdMap {
        let mut m = FdMap::default();
        for (addr, _) in wanted(cfg) {
            if let Some(ls) = self.map.get(&addr) {
                m.0.insert(addr, ls.iter().take(n).map(|l| l.as_raw_fd()).collect());
            }
        }
        m
    }
}

/// Sends a message to systemd's notify socket, if any.
fn sd_notify(enabled: bool, msg: &str) {
    if !enabled {
        return;
    }
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let Ok(sock) = std::os::unix::net::UnixDatagram::unbound() else {
        return;
    };
    let path = path.to_string_lossy().into_owned();
    if let Some(name) = path.strip_prefix('@') {
        use std::os::linux::net::SocketAddrExt;
        if let Ok(a) = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()) {
            let _ = sock.send_to_addr(msg.as_bytes(), &a);
        }
    } else {
        let _ = sock.send_to(msg.as_bytes(), path);
    }
}

/// Starts a worker with the sockets and waits until it reports ready.
fn spawn_worker(socks: &Sockets, cfg: &Config, opts: &MasterOptions) -> Result<Child> {
    let n = crate::worker_count(cfg);
    let map = socks.fd_map(cfg, n);
    let (mut ours, theirs) = UnixStream::pair()?;
    let mut fds: Vec<i32> = map.0.values().flatten().copied().collect();
    fds.push(theirs.as_raw_fd());
    for &fd in &fds {
        os::set_cloexec(fd, false)?;
    }
    let spawned = Command::new(&opts.exe)
        .args(&opts.worker_args)
        .env(WORKER_ENV, "1")
        .env(LISTEN_FDS_ENV, map.encode())
        .env(READY_FD_ENV, theirs.as_raw_fd().to_string())
        .stdin(Stdio::null())
        .spawn();
    for &fd in &fds {
        let _ = os::set_cloexec(fd, true);
    }
    drop(theirs);
    let mut child = spawned?;
    ours.set_read_timeout(Some(WORKER_START_TIMEOUT))?;
    let mut byte = [0u8; 1];
    match ours.read(&mut byte) {
        Ok(1) => Ok(child),
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            Err(Error::other(
                "the new worker exited or did not report ready",
            ))
        }
    }
}

struct OldWorker {
    child: Child,
    deadline: Option<Instant>,
}

fn notice(quiet: bool, msg: &str) {
    if !quiet {
        eprintln!("[NOTICE]   (master) {msg}");
    }
}

fn signal(child: &Child, sig: i32) {
    os::signal_pids(&[child.id() as i32], sig);
}

/// Runs the master until it is stopped.
pub fn run_master(cfg: Config, opts: MasterOptions) -> Result<()> {
    // Signal handlers first: a reload requested as soon as the port is
    // open must not hit SIGUSR2's default action (terminate).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (mut usr2, mut usr1, mut term, mut int, mut chld) = {
        use tokio::signal::unix::{signal as sig, SignalKind};
        let _enter = rt.enter();
        (
            sig(SignalKind::user_defined2())?,
            sig(SignalKind::user_defined1())?,
            sig(SignalKind::terminate())?,
            sig(SignalKind::interrupt())?,
            sig(SignalKind::child())?,
        )
    };
    crate::setup_limits(&cfg);
    let mut socks = Sockets::default();
    socks.ensure(&cfg, crate::worker_count(&cfg))?;
    if opts.daemon || cfg.global.daemon {
        os::daemonize()?;
    }
    if let Some(p) = opts.pidfile.as_ref().or(cfg.global.pidfile.as_ref()) {
        std::fs::write(p, format!("{}\n", std::process::id()))
            .map_err(|e| Error::new(e.kind(), format!("cannot write pidfile '{p}': {e}")))?;
    }
    let mut current = spawn_worker(&socks, &cfg, &opts)?;
    let mut hard_stop = cfg.global.hard_stop_after;
    notice(
        opts.quiet,
        &format!(
            "master {} started worker {}",
            std::process::id(),
            current.id()
        ),
    );
    sd_notify(opts.systemd, "READY=1");
    let mut old: Vec<OldWorker> = Vec::new();
    rt.block_on(async {
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tokio::select! {
                _ = usr2.recv() => {
                    sd_notify(opts.systemd, "RELOADING=1");
                    match reload(&mut socks, &opts) {
                        Ok((worker, new_cfg)) => {
                            let prev = std::mem::replace(&mut current, worker);
                            signal(&prev, libc::SIGUSR1);
                            let deadline = hard_stop.map(|h| Instant::now() + h);
                            notice(opts.quiet, &format!(
                                "reload complete: worker {} started, worker {} finishing",
                                current.id(), prev.id()
                            ));
                            old.push(OldWorker { child: prev, deadline });
                            hard_stop = new_cfg.global.hard_stop_after;
                            socks.retain_for(&new_cfg);
                        }
                        Err(e) => eprintln!(
                            "[ALERT]    (master) reload aborted, worker {} keeps running: {e}",
                            current.id()
                        ),
                    }
                    sd_notify(opts.systemd, "READY=1");
                }
                _ = usr1.recv() => {
                    signal(&current, libc::SIGUSR1);
                    for o in &old {
                        signal(&o.child, libc::SIGUSR1);
                    }
                    let _ = current.wait();
                    for o in &mut old {
                        let _ = o.child.wait();
                    }
                    std::process::exit(0);
                }
                _ = term.recv() => stop_all(&mut current, &mut old),
                _ = int.recv() => stop_all(&mut current, &mut old),
                _ = chld.recv() => {}
                _ = tick.tick() => {}
            }
            // Reap and enforce hard-stop-after on every wake-up.
            if let Ok(Some(st)) = current.try_wait() {
                eprintln!("[ALERT]    (master) current worker {} exited ({st}); exiting", current.id());
                for o in &old {
                    signal(&o.child, libc::SIGTERM);
                }
                std::process::exit(1);
            }
            old.retain_mut(|o| match o.child.try_wait() {
                Ok(Some(_)) => {
                    notice(opts.quiet, &format!("former worker {} exited", o.child.id()));
                    false
                }
                _ => {
                    if o.deadline.is_some_and(|d| Instant::now() >= d) {
                        eprintln!(
                            "[WARNING]  (master) worker {} still running after hard-stop-after; terminating it",
                            o.child.id()
                        );
                        signal(&o.child, libc::SIGTERM);
                        o.deadline = None;
                    }
                    true
                }
            });
        }
        #[allow(unreachable_code)]
        Ok::<(), Error>(())
    })
}

fn stop_all(current: &mut Child, old: &mut [OldWorker]) -> ! {
    signal(current, libc::SIGTERM);
    for o in old.iter() {
        signal(&o.child, libc::SIGTERM);
    }
    let _ = current.wait();
    for o in old.iter_mut() {
        let _ = o.child.wait();
    }
    std::process::exit(0);
}

/// Loads the new configuration, binds its new addresses and starts its
/// worker.
fn reload(socks: &mut Sockets, opts: &MasterOptions) -> Result<(Child, Config)> {
    let cfg = (opts.load)().map_err(|_| Error::other("the new configuration has errors"))?;
    socks.ensure(&cfg, crate::worker_count(&cfg))?;
    let child = spawn_worker(socks, &cfg, opts)?;
    Ok((child, cfg))
}
