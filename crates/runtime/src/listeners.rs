//! The listening sockets of the workers: one `SO_REUSEPORT` socket per
//! worker and frontend address (or the ones the master hands down), one
//! shared UNIX or `fd@` socket duplicated to every worker, and the TCP
//! options set once on each listener.

use crate::{inherit, os, sockets, FrontendRt, Shared};
use std::io::{Error, ErrorKind, Result};
use std::net::SocketAddr;

/// A worker's listening sockets of one frontend: one per IP address, and
/// one per UNIX or `fd@` socket (its index in [`FrontendRt::sockets`]).
#[derive(Default)]
pub(crate) struct FeListeners {
    pub tcp: Vec<std::net::TcpListener>,
    pub socks: Vec<(usize, sockets::Lsock)>,
}

/// Binds one listening socket per worker for every frontend address.
/// Returns `listeners[worker][frontend]`.
type Listeners = Vec<Vec<FeListeners>>;

/// Opens (or takes from the master) each UNIX and `fd@` socket once and
/// gives every worker a duplicate of it.
fn bind_sockets(
    shared: &Shared,
    out: &mut Listeners,
    inherited: Option<&inherit::FdMap>,
) -> Result<()> {
    let mut opened: Vec<(String, sockets::Lsock)> = Vec::new();
    for (fe_idx, fe) in shared.frontends.iter().enumerate() {
        for (i, s) in fe.sockets.iter().enumerate() {
            let key = s.sock.to_string();
            let l = match opened.iter().find(|(k, _)| *k == key) {
                Some((_, l)) => l.try_clone()?,
                None => {
                    let l = match inherited.and_then(|m| m.1.get(&key)) {
                        Some(&fd) => sockets::from_master(fd),
                        None => sockets::open(&s.sock, &s.perms),
                    }
                    .map_err(|e| {
                        Error::new(e.kind(), format!("frontend '{}': {e}", fe.front.name))
                    })?;
                    opened.push((key, l.try_clone()?));
                    l
                }
            };
            l.set_nonblocking()?;
            if let sockets::Lsock::Tcp(t) = &l {
                tune_listener(fe, t);
            }
            for worker in out.iter_mut() {
                worker[fe_idx].socks.push((i, l.try_clone()?));
            }
        }
    }
    Ok(())
}

pub(crate) fn bind_all(
    shared: &Shared,
    workers: usize,
    check_free: bool,
    inherited: Option<&inherit::FdMap>,
) -> Result<Listeners> {
    let mut out: Listeners = (0..workers).map(|_| Vec::new()).collect();
    for fe in &shared.frontends {
        for w in out.iter_mut() {
            w.push(FeListeners::default());
        }
        for &(addr, v6only) in &fe.addrs {
            // Sockets handed down by the master: the same kernel sockets
            // the previous worker used.
            if let Some(fds) = inherited
                .and_then(|m| m.0.get(&addr))
                .filter(|f| !f.is_empty())
            {
                // Every inherited socket is used (one left unused would hold
                // connections nobody accepts): spread them over the workers,
                // and give workers without one a new SO_REUSEPORT socket.
                for (j, &fd) in fds.iter().enumerate() {
                    let l = os::listener_from_fd(fd, addr)?;
                    l.set_nonblocking(true)?;
                    tune_listener(fe, &l);
                    out[j % workers]
                        .last_mut()
                        .expect("pushed above")
                        .tcp
                        .push(l);
                }
                for w in out.iter_mut().skip(fds.len()) {
                    let l =
                        fairlead_net::bind_reuseport(addr, v6only, fairlead_net::DEFAULT_BACKLOG)?;
                    tune_listener(fe, &l);
                    w.last_mut().expect("pushed above").tcp.push(l);
                }
                continue;
            }
            if check_free {
                check_port_free(addr).map_err(|e| {
                    Error::new(
                        e.kind(),
                        format!(
                            "frontend '{}': cannot bind {addr}: {e} (another process listens there)",
                            fe.front.name
                        ),
                    )
                })?;
            }
            for w in out.iter_mut() {
                let l = fairlead_net::bind_reuseport(addr, v6only, fairlead_net::DEFAULT_BACKLOG)
                    .map_err(|e| {
                    Error::new(
                        e.kind(),
                        format!("frontend '{}': cannot bind {addr}: {e}", fe.front.name),
                    )
                })?;
                tune_listener(fe, &l);
                w.last_mut().expect("pushed above").tcp.push(l);
            }
        }
    }
    bind_sockets(shared, &mut out, inherited)?;
    Ok(out)
}

/// TCP_NODELAY and `option tcp-smart-accept` on a TCP listener, once,
/// as soon as it listens, instead of on every accepted connection (they
/// inherit both), and `defer-accept` (`TCP_DEFER_ACCEPT`: 1 s when the
/// `bind` line asks, 0 otherwise, as HAProxy does).
fn tune_listener(fe: &FrontendRt, l: &std::net::TcpListener) {
    if let Err(e) = fairlead_net::tune_listener(l, fe.smart_accept) {
        eprintln!(
            "[WARNING]  frontend '{}': cannot set TCP options on a listener: {e}",
            fe.front.name
        );
    }
    let defer = l.local_addr().is_ok_and(|a| fe.defer_accept.contains(&a));
    if let Err(e) = os::set_defer_accept(l, u32::from(defer)) {
        if defer {
            eprintln!(
                "[WARNING]  frontend '{}': cannot enable DEFER_ACCEPT: {e}",
                fe.front.name
            );
        }
    }
}

/// How long a busy port is tried again before start-up fails: a process
/// killed with SIGKILL while on io_uring keeps its listening sockets for
/// a moment after it is gone (the kernel tears its rings down
/// asynchronously; about 40 ms here). Default is 1 s.
const PORT_BUSY_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// SO_REUSEPORT lets two processes share a port silently: refuse to start
/// when something already listens there, by binding once without it
/// (again for up to [`PORT_BUSY_RETRY`] while the port is busy).
pub(crate) fn check_port_free(addr: SocketAddr) -> Result<()> {
    if addr.port() == 0 {
        return Ok(());
    }
    let end = std::time::Instant::now() + PORT_BUSY_RETRY;
    loop {
        let s = socket2::Socket::new(
            socket2::Domain::for_address(addr),
            socket2::Type::STREAM,
            None,
        )?;
        s.set_reuse_address(true)?;
        match s.bind(&addr.into()) {
            Err(e) if e.kind() == ErrorKind::AddrInUse && std::time::Instant::now() < end => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            r => return r,
        }
    }
}
