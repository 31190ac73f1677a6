//! Master-worker mode (`-W`, `-Ws`) and seamless reload.
//!
//! The master binds every listening socket once and keeps it open (TCP
//! addresses, UNIX sockets, and the `fd@` descriptors it inherited, see
//! [`crate::sockets`]). It runs
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
//!
//! Before starting the new worker the master saves the servers' state
//! files (`load-server-state-from-file`), see `crate::state_file`.
//!
//! Map and ACL edits made on a worker's CLI survive reloads: the master
//! keeps a private directory (mode 0700, in `$TMPDIR`, removed when it
//! exits) and gives each worker a file there to save them to
//! ([`PATTERN_STATE_ENV`]) and the current worker's file to restore them
//! from ([`PATTERN_RESTORE_ENV`]); see [`crate::admin::PatternState`].

use crate::inherit::{
    encode_sources, FdMap, CONFIG_FD_ENV, LISTEN_FDS_ENV, LISTEN_SOCKETS_ENV, READY_FD_ENV,
    WORKER_ENV,
};
use crate::os;
use crate::sockets::{self, Lsock};
use fairlead_config::Config;
use fairlead_config::Source;
use fairlead_config::{ListenSocket, UnixPerms};
use std::collections::HashMap;
use std::io::{Error, Read, Result};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Environment variable naming the file where a worker saves the map and
/// ACL entries edited on its CLI.
pub const PATTERN_STATE_ENV: &str = "FAIRLEAD_PATTERN_STATE";
/// Environment variable naming the file a new worker restores them from
/// (the previous worker's).
pub const PATTERN_RESTORE_ENV: &str = "FAIRLEAD_PATTERN_RESTORE";

/// The master's private directory for the workers' map/ACL state files.
static STATE_DIR: OnceLock<PathBuf> = OnceLock::new();

/// Creates [`STATE_DIR`] (a new directory, mode 0700, in `$TMPDIR`).
/// Without it, CLI edits of maps and ACLs do not survive a reload.
fn init_state_dir() {
    use std::os::unix::fs::DirBuilderExt;
    let salt = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    for attempt in 0..16u32 {
        let dir = std::env::temp_dir().join(format!(
            "fairlead-{}-{:x}",
            std::process::id(),
            salt.wrapping_add(attempt)
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {
                remove_stale_state_dirs(&dir);
                let _ = STATE_DIR.set(dir);
                return;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                eprintln!("[WARNING]  (master) cannot create {} ({e}): map and ACL changes made on the CLI will not survive reloads", dir.display());
                return;
            }
        }
    }
}

/// Removes the state directories that masters killed without cleaning up
/// left beside `own`: named like it, owned by the same user, and whose
/// process no longer exists.
fn remove_stale_state_dirs(own: &Path) {
    use std::os::unix::fs::MetadataExt;
    let (Some(parent), Ok(me)) = (own.parent(), std::fs::symlink_metadata(own)) else {
        return;
    };
    let Ok(list) = std::fs::read_dir(parent) else {
        return;
    };
    for e in list.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("fairlead-"))
            .and_then(|n| n.split_once('-'))
            .filter(|(p, salt)| {
                !p.is_empty()
                    && p.bytes().all(|b| b.is_ascii_digit())
                    && !salt.is_empty()
                    && salt.bytes().all(|b| b.is_ascii_hexdigit())
            })
            .map(|(p, _)| p)
        else {
            continue;
        };
        let stale = std::fs::symlink_metadata(e.path())
            .is_ok_and(|m| m.is_dir() && m.uid() == me.uid())
            && !Path::new("/proc").join(pid).exists();
        if stale {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// A new state file name for the next worker started.
fn next_state_file() -> Option<PathBuf> {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    STATE_DIR
        .get()
        .map(|d| d.join(format!("worker-{n}.patterns")))
}

/// Makes sure the state directory exists (a temporary-files cleaner may
/// have removed it) and belongs to the user the workers run as.
fn prepare_state_dir(cfg: &Config) {
    use std::os::unix::fs::DirBuilderExt;
    let Some(dir) = STATE_DIR.get() else { return };
    let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    let g = &cfg.global;
    let uid = g
        .uid
        .or_else(|| g.user.as_deref().and_then(os::lookup_user).map(|u| u.0));
    let gid = g
        .gid
        .or_else(|| g.group.as_deref().and_then(os::lookup_group));
    if uid.is_some() || gid.is_some() {
        if let Err(e) = std::os::unix::fs::chown(dir, uid, gid) {
            eprintln!(
                "[WARNING]  (master) cannot give {} to the workers' user ({e})",
                dir.display()
            );
        }
    }
}

fn remove_state(file: Option<&Path>) {
    if let Some(f) = file {
        let _ = std::fs::remove_file(f);
    }
}

/// Removes the state directory, before the master exits.
fn remove_state_dir() {
    if let Some(d) = STATE_DIR.get() {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// How long a new worker may take to report ready. Default is 10 s.
pub const WORKER_START_TIMEOUT: Duration = Duration::from_secs(10);

/// What the master needs from the command line.
pub struct MasterOptions {
    /// Loads and checks the configuration (the same files every time),
    /// printing diagnostics; `Err` when it is invalid. The sources are
    /// handed to the worker as they were checked.
    #[allow(clippy::type_complexity)]
    pub load: Box<dyn Fn() -> std::result::Result<(Config, Vec<Source>), ()>>,
    /// The executable to start workers with.
    pub exe: std::path::PathBuf,
    /// The workers' arguments (`-f` files, `-q`).
    pub worker_args: Vec<String>,
    pub daemon: bool,
    pub pidfile: Option<String>,
    pub quiet: bool,
    /// `-Ws`: notify systemd.
    pub systemd: bool,
    /// `-S <path>`: the master CLI socket (`show proc`, `reload`).
    pub master_socket: Option<std::path::PathBuf>,
}

/// A worker process and when it was started.
struct Worker {
    child: Child,
    started: Instant,
    /// The master's reload count when it was started.
    generation: u32,
    /// Where it saves its map and ACL edits.
    state: Option<PathBuf>,
}

/// `0d00h01m02s`, HAProxy's uptime format.
fn uptime(d: Duration) -> String {
    let s = d.as_secs();
    format!(
        "{}d{:02}h{:02}m{:02}s",
        s / 86400,
        s / 3600 % 24,
        s / 60 % 60,
        s % 60
    )
}

/// The `show proc` table.
fn show_proc(
    started: Instant,
    reloads: u32,
    failed: u32,
    current: &Worker,
    old: &[OldWorker],
) -> String {
    let v = env!("CARGO_PKG_VERSION");
    let mut out =
        String::from("#<PID>          <type>          <reloads>       <uptime>        <version>\n");
    out.push_str(&format!(
        "{:<15} {:<15} {:<15} {:<15} {v}\n",
        std::process::id(),
        "master",
        format!("{reloads} [failed: {failed}]"),
        uptime(started.elapsed())
    ));
    let row = |w: &Worker| {
        format!(
            "{:<15} {:<15} {:<15} {:<15} {v}\n",
            w.child.id(),
            "worker",
            reloads - w.generation,
            uptime(w.started.elapsed())
        )
    };
    out.push_str("# workers\n");
    out.push_str(&row(current));
    out.push_str("# old workers\n");
    for o in old {
        out.push_str(&row(&o.worker));
    }
    out.push_str("# programs\n\n");
    out
}

/// Listening sockets owned by the master, per address, and the UNIX and
/// `fd@` ones (one each), by their configuration spelling.
#[derive(Default)]
struct Sockets {
    map: HashMap<SocketAddr, Vec<TcpListener>>,
    other: HashMap<String, (ListenSocket, Lsock)>,
}

/// The UNIX and `fd@` sockets a configuration listens on, with their
/// `bind` line's file permissions.
fn wanted_other(cfg: &Config) -> Vec<(ListenSocket, UnixPerms)> {
    let mut out: Vec<(ListenSocket, UnixPerms)> = Vec::new();
    for f in cfg.frontends.iter().filter(|f| !f.disabled) {
        for b in &f.binds {
            for s in &b.sockets {
                if !out.iter().any(|(x, _)| x == s) {
                    out.push((s.clone(), b.unix_perms.clone()));
                }
            }
        }
    }
    out
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
                crate::listeners::check_port_free(addr).map_err(|e| {
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
        for (sock, perms) in wanted_other(cfg) {
            if let std::collections::hash_map::Entry::Vacant(e) = self.other.entry(sock.to_string())
            {
                let l = sockets::open(&sock, &perms)?;
                e.insert((sock, l));
            }
        }
        Ok(())
    }

    /// Closes the sockets of addresses `cfg` no longer uses. Inherited
    /// `fd@` and `sockpair@` sockets stay open: they could not be opened
    /// again.
    fn retain_for(&mut self, cfg: &Config) {
        let keep: Vec<SocketAddr> = wanted(cfg).into_iter().map(|(a, _)| a).collect();
        self.map.retain(|a, _| keep.contains(a));
        let keep: Vec<ListenSocket> = wanted_other(cfg).into_iter().map(|(s, _)| s).collect();
        self.other.retain(|_, (s, _)| {
            matches!(s, ListenSocket::Fd(_) | ListenSocket::SockPair(_)) || keep.contains(s)
        });
    }

    fn fd_map(&self, cfg: &Config, n: usize) -> FdMap {
        let mut m = FdMap::default();
        for (addr, _) in wanted(cfg) {
            if let Some(ls) = self.map.get(&addr) {
                m.0.insert(addr, ls.iter().take(n).map(|l| l.as_raw_fd()).collect());
            }
        }
        for (sock, _) in wanted_other(cfg) {
            let key = sock.to_string();
            if let Some((_, l)) = self.other.get(&key) {
                m.1.insert(key, l.raw_fd());
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

/// The map/ACL state files of a worker being started: where it saves its
/// edits, and where it restores the previous worker's from.
struct StateFiles<'a> {
    save: Option<&'a Path>,
    restore: Option<&'a Path>,
}

/// Starts a worker with the sockets and waits until it reports ready.
fn spawn_worker(
    socks: &Sockets,
    cfg: &Config,
    sources: &[Source],
    opts: &MasterOptions,
    state: StateFiles<'_>,
) -> Result<Child> {
    use std::io::Write;
    let n = crate::worker_count(cfg);
    prepare_state_dir(cfg);
    remove_state(state.save);
    let map = socks.fd_map(cfg, n);
    let (mut ours, theirs) = UnixStream::pair()?;
    let (mut cfg_ours, cfg_theirs) = UnixStream::pair()?;
    let mut fds: Vec<i32> = map.0.values().flatten().copied().collect();
    fds.extend(map.1.values().copied());
    fds.push(theirs.as_raw_fd());
    fds.push(cfg_theirs.as_raw_fd());
    for &fd in &fds {
        os::set_cloexec(fd, false)?;
    }
    let mut command = Command::new(&opts.exe);
    if let Some(f) = state.save {
        command.env(PATTERN_STATE_ENV, f);
    }
    match state.restore {
        Some(f) => command.env(PATTERN_RESTORE_ENV, f),
        None => command.env_remove(PATTERN_RESTORE_ENV),
    };
    let spawned = command
        .args(&opts.worker_args)
        // The worker checks that this is still its parent.
        .env(WORKER_ENV, std::process::id().to_string())
        .env(LISTEN_FDS_ENV, map.encode())
        .env(LISTEN_SOCKETS_ENV, map.encode_sockets())
        .env(READY_FD_ENV, theirs.as_raw_fd().to_string())
        .env(CONFIG_FD_ENV, cfg_theirs.as_raw_fd().to_string())
        .stdin(Stdio::null())
        .spawn();
    for &fd in &fds {
        let _ = os::set_cloexec(fd, true);
    }
    drop(theirs);
    drop(cfg_theirs);
    let mut child = spawned?;
    // The worker runs exactly the configuration checked here.
    let sent = cfg_ours.write_all(&encode_sources(sources));
    drop(cfg_ours);
    if let Err(e) = sent {
        let _ = child.kill();
        let _ = child.wait();
        return Err(Error::other(format!(
            "cannot pass the configuration to the worker: {e}"
        )));
    }
    // Signals (SIGCHLD from a previous worker exiting, for one) interrupt
    // a socket read that has a timeout even with SA_RESTART: retry until
    // the deadline.
    let deadline = Instant::now() + WORKER_START_TIMEOUT;
    let mut byte = [0u8; 1];
    let got = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break None;
        }
        ours.set_read_timeout(Some(left))?;
        match ours.read(&mut byte) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => break r.ok(),
        }
    };
    match got {
        Some(1) => Ok(child),
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
    worker: Worker,
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
pub fn run_master(cfg: Config, sources: Vec<Source>, opts: MasterOptions) -> Result<()> {
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
    crate::setup_limits(&cfg)?;
    let mut socks = Sockets::default();
    socks.ensure(&cfg, crate::worker_count(&cfg))?;
    if opts.daemon || cfg.global.daemon {
        os::daemonize()?;
    }
    if let Some(p) = opts.pidfile.as_ref().or(cfg.global.pidfile.as_ref()) {
        crate::write_pidfile(p)?;
    }
    let cli = match &opts.master_socket {
        Some(path) => {
            let _ = std::fs::remove_file(path);
            let _enter = rt.enter();
            Some(tokio::net::UnixListener::bind(path).map_err(|e| {
                Error::new(e.kind(), format!("master socket {}: {e}", path.display()))
            })?)
        }
        None => None,
    };
    let master_started = Instant::now();
    let (mut reloads, mut failed_reloads) = (0u32, 0u32);
    init_state_dir();
    let state = next_state_file();
    let files = StateFiles {
        save: state.as_deref(),
        restore: None,
    };
    let mut current = Worker {
        child: spawn_worker(&socks, &cfg, &sources, &opts, files)
            .inspect_err(|_| remove_state_dir())?,
        started: Instant::now(),
        generation: 0,
        state,
    };
    let mut hard_stop = cfg.global.hard_stop_after;
    notice(
        opts.quiet,
        &format!(
            "master {} started worker {}",
            std::process::id(),
            current.child.id()
        ),
    );
    sd_notify(opts.systemd, "READY=1");
    let mut old: Vec<OldWorker> = Vec::new();
    rt.block_on(async {
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            let mut do_reload = false;
            tokio::select! {
                _ = usr2.recv() => do_reload = true,
                conn = async { cli.as_ref().expect("guarded").accept().await }, if cli.is_some() => {
                    if let Ok((stream, _)) = conn {
                        let table = show_proc(master_started, reloads, failed_reloads, &current, &old);
                        do_reload = master_cli(stream, table).await;
                    }
                }
                _ = usr1.recv() => {
                    signal(&current.child, libc::SIGUSR1);
                    for o in &old {
                        signal(&o.worker.child, libc::SIGUSR1);
                    }
                    let _ = current.child.wait();
                    for o in &mut old {
                        let _ = o.worker.child.wait();
                    }
                    remove_state_dir();
                    std::process::exit(0);
                }
                _ = term.recv() => stop_all(&mut current, &mut old),
                _ = int.recv() => stop_all(&mut current, &mut old),
                _ = chld.recv() => {}
                _ = tick.tick() => {}
            }
            if do_reload {
                sd_notify(opts.systemd, "RELOADING=1");
                match reload(&mut socks, &opts, current.state.as_deref()) {
                    Ok((child, new_cfg, state)) => {
                        reloads += 1;
                        let worker = Worker { child, started: Instant::now(), generation: reloads, state };
                        let prev = std::mem::replace(&mut current, worker);
                        signal(&prev.child, libc::SIGUSR1);
                        let deadline = hard_stop.map(|h| Instant::now() + h);
                        notice(opts.quiet, &format!(
                            "reload complete: worker {} started, worker {} finishing",
                            current.child.id(), prev.child.id()
                        ));
                        old.push(OldWorker { worker: prev, deadline });
                        hard_stop = new_cfg.global.hard_stop_after;
                        socks.retain_for(&new_cfg);
                    }
                    Err(e) => {
                        failed_reloads += 1;
                        eprintln!(
                            "[ALERT]    (master) reload aborted, worker {} keeps running: {e}",
                            current.child.id()
                        );
                    }
                }
                sd_notify(opts.systemd, "READY=1");
            }
            // Reap and enforce hard-stop-after on every wake-up.
            if let Ok(Some(st)) = current.child.try_wait() {
                eprintln!(
                    "[ALERT]    (master) current worker {} exited ({st}); exiting",
                    current.child.id()
                );
                for o in &old {
                    signal(&o.worker.child, libc::SIGTERM);
                }
                remove_state_dir();
                std::process::exit(1);
            }
            old.retain_mut(|o| match o.worker.child.try_wait() {
                Ok(Some(_)) => {
                    notice(opts.quiet, &format!("former worker {} exited", o.worker.child.id()));
                    remove_state(o.worker.state.as_deref());
                    false
                }
                _ => {
                    if o.deadline.is_some_and(|d| Instant::now() >= d) {
                        eprintln!(
                            "[WARNING]  (master) worker {} still running after hard-stop-after; terminating it",
                            o.worker.child.id()
                        );
                        signal(&o.worker.child, libc::SIGTERM);
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

/// Serves one master CLI connection: `show proc`, `reload`, `help`.
/// Returns true when a reload was asked for.
async fn master_cli(stream: tokio::net::UnixStream, table: String) -> bool {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (r, mut w) = stream.into_split();
    let mut line = String::new();
    let read = tokio::time::timeout(
        Duration::from_secs(5),
        BufReader::new(r).read_line(&mut line),
    )
    .await;
    if !matches!(read, Ok(Ok(_))) {
        return false;
    }
    let (reply, reload) = match line.trim() {
        "show proc" => (table, false),
        "reload" => ("Reloading the workers.\n\n".to_string(), true),
        "help" | "" => (
            "The following commands are valid at this level:\n  help           : this message\n  reload         : reload the workers with the current configuration files\n  show proc      : show the master and worker processes\n\n"
                .to_string(),
            false,
        ),
        other => (format!("Unknown command: '{other}'. Try 'help'.\n\n"), false),
    };
    let _ = w.write_all(reply.as_bytes()).await;
    let _ = w.shutdown().await;
    reload
}

fn stop_all(current: &mut Worker, old: &mut [OldWorker]) -> ! {
    signal(&current.child, libc::SIGTERM);
    for o in old.iter() {
        signal(&o.worker.child, libc::SIGTERM);
    }
    let _ = current.child.wait();
    for o in old.iter_mut() {
        let _ = o.worker.child.wait();
    }
    remove_state_dir();
    std::process::exit(0);
}

/// Loads the new configuration, binds its new addresses and starts its
/// worker, which restores the map and ACL edits saved in `restore`.
/// Returns the worker, the configuration and the worker's state file.
fn reload(
    socks: &mut Sockets,
    opts: &MasterOptions,
    restore: Option<&Path>,
) -> Result<(Child, Config, Option<PathBuf>)> {
    let (cfg, sources) =
        (opts.load)().map_err(|_| Error::other("the new configuration has errors"))?;
    // The servers' current state, for the new worker's
    // `load-server-state-from-file`.
    crate::state_file::dump_for_reload(&cfg, opts.quiet);
    socks.ensure(&cfg, crate::worker_count(&cfg))?;
    let state = next_state_file();
    let files = StateFiles {
        save: state.as_deref(),
        restore,
    };
    match spawn_worker(socks, &cfg, &sources, opts, files) {
        Ok(child) => Ok((child, cfg, state)),
        Err(e) => {
            remove_state(state.as_deref());
            Err(e)
        }
    }
}
