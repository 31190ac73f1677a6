//! Candidate (c): a completion loop on io_uring (the `io-uring` crate).
//!
//! One ring per worker. Multishot accept on the listener; per connection a
//! Connect, then for each direction the chain Recv -> Send (repeat for short
//! sends) -> Recv ..., and Shutdown(SHUT_WR) on EOF. A failing op marks the
//! connection dead and shuts both sockets down so that the ops still in flight
//! complete; the slot and its buffers are released once nothing is in flight.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use io_uring::{cqueue, opcode, squeue, types, IoUring};
use runtime_candidates::{args, reuseport_listener, set_nodelay, sockaddr_in, BufPool, Slab};

const OP_ACCEPT: u64 = 0;
const OP_CONNECT: u64 = 1;
const OP_RECV: u64 = 2; // + dir
const OP_SEND: u64 = 4; // + dir
const OP_SHUT: u64 = 6; // + dir

/// Op kind without the direction bit (OP_ACCEPT/OP_CONNECT carry no direction).
fn kind(op: u64) -> u64 {
    if op < OP_RECV {
        op
    } else {
        op & !1
    }
}

struct Dir {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    done: bool,
}

struct Conn {
    fds: [RawFd; 2], // [client, backend]; dir 0 = client->backend, dir 1 = backend->client
    dirs: [Dir; 2],
    inflight: u32,
    dead: bool,
}

struct Worker {
    ring: IoUring,
    listen_fd: RawFd,
    backend: Box<libc::sockaddr_in>,
    conns: Slab<Conn>,
    pool: BufPool,
}

fn ud(i: usize, op: u64) -> u64 {
    ((i as u64) << 3) | op
}

impl Worker {
    fn push(&mut self, e: squeue::Entry) {
        // SAFETY: every buffer/address referenced by `e` outlives the op:
        // buffers are only returned to the pool when nothing is in flight.
        while unsafe { self.ring.submission().push(&e) }.is_err() {
            self.ring.submit().expect("io_uring submit");
        }
    }

    fn arm_accept(&mut self) {
        let e = opcode::AcceptMulti::new(types::Fd(self.listen_fd))
            .build()
            .user_data(ud(0, OP_ACCEPT));
        self.push(e);
    }

    fn post(&mut self, i: usize, op: u64) {
        let c = self.conns.get_mut(i).unwrap();
        c.inflight += 1;
        let dir = (op & 1) as usize;
        let (src, dst) = (c.fds[dir], c.fds[1 - dir]);
        let d = &mut c.dirs[dir];
        let e = match kind(op) {
            OP_RECV => opcode::Recv::new(types::Fd(src), d.buf.as_mut_ptr(), d.buf.len() as u32).build(),
            OP_SEND => {
                let p = unsafe { d.buf.as_ptr().add(d.start) };
                opcode::Send::new(types::Fd(dst), p, (d.end - d.start) as u32).build()
            }
            OP_SHUT => opcode::Shutdown::new(types::Fd(dst), libc::SHUT_WR).build(),
            _ => {
                debug_assert_eq!(op, OP_CONNECT);
                let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
                let sa = &*self.backend as *const libc::sockaddr_in as *const libc::sockaddr;
                opcode::Connect::new(types::Fd(c.fds[1]), sa, len).build()
            }
        };
        self.push(e.user_data(ud(i, op)));
    }

    fn on_accept(&mut self, res: i32, flags: u32) {
        if !cqueue::more(flags) {
            self.arm_accept();
        }
        if res < 0 {
            return;
        }
        let client = res;
        let backend = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if backend < 0 {
            unsafe { libc::close(client) };
            return;
        }
        let _ = set_nodelay(client);
        let _ = set_nodelay(backend);
        let mk = |b| Dir { buf: b, start: 0, end: 0, done: false };
        let dirs = [mk(self.pool.get()), mk(self.pool.get())];
        let i = self.conns.insert(Conn { fds: [client, backend], dirs, inflight: 0, dead: false });
        self.post(i, OP_CONNECT);
    }

    fn kill(&mut self, i: usize) {
        let c = self.conns.get_mut(i).unwrap();
        if !c.dead {
            c.dead = true;
            // Wake any op still waiting on these sockets.
            unsafe {
                libc::shutdown(c.fds[0], libc::SHUT_RDWR);
                libc::shutdown(c.fds[1], libc::SHUT_RDWR);
            }
        }
    }

    fn on_conn(&mut self, i: usize, op: u64, res: i32) {
        let c = self.conns.get_mut(i).unwrap();
        c.inflight -= 1;
        if c.dead || res < 0 {
            self.kill(i);
        } else {
            let dir = (op & 1) as usize;
            match kind(op) {
                OP_CONNECT => {
                    self.post(i, OP_RECV);
                    self.post(i, OP_RECV + 1);
                }
                OP_RECV if res == 0 => self.post(i, OP_SHUT + dir as u64),
                OP_RECV => {
                    let d = &mut c.dirs[dir];
                    d.start = 0;
                    d.end = res as usize;
                    self.post(i, OP_SEND + dir as u64);
                }
                OP_SEND => {
                    let d = &mut c.dirs[dir];
                    d.start += res as usize;
                    let again = if d.start < d.end { OP_SEND } else { OP_RECV };
                    self.post(i, again + dir as u64);
                }
                _ => {
                    // OP_SHUT completed: FIN forwarded in this direction.
                    c.dirs[dir].done = true;
                    if c.dirs[1 - dir].done {
                        c.dead = true;
                    }
                }
            }
        }
        let c = self.conns.get_mut(i).unwrap();
        if c.dead && c.inflight == 0 {
            let c = self.conns.remove(i).unwrap();
            unsafe {
                libc::close(c.fds[0]);
                libc::close(c.fds[1]);
            }
            let [d0, d1] = c.dirs;
            self.pool.put(d0.buf);
            self.pool.put(d1.buf);
        }
    }
}

fn main() -> io::Result<()> {
    let a = args();
    let listener = reuseport_listener(&a.listen, false)?;
    let mut w = Worker {
        // SINGLE_ISSUER + DEFER_TASKRUN: completions are processed only when
        // this thread enters the ring (no IPIs / task_work interrupts), the
        // recommended setup for one ring per thread.
        ring: IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(4096)?,
        listen_fd: listener.as_raw_fd(),
        backend: Box::new(sockaddr_in(&a.backend)),
        conns: Slab::default(),
        pool: BufPool::default(),
    };
    w.arm_accept();
    let mut done: Vec<(u64, i32, u32)> = Vec::with_capacity(4096);
    loop {
        match w.ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(e) => return Err(e),
        }
        done.clear();
        done.extend(w.ring.completion().map(|e| (e.user_data(), e.result(), e.flags())));
        for &(u, res, flags) in &done {
            let op = u & 7;
            if op == OP_ACCEPT {
                w.on_accept(res, flags);
            } else {
                w.on_conn((u >> 3) as usize, op, res);
            }
        }
    }
}
