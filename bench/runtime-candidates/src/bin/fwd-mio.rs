//! Candidate (b): a hand-written readiness loop on mio (epoll, edge-triggered).
//!
//! One `Poll` per worker. Each proxied connection lives in a slab and owns two
//! tokens (client = 2*i, backend = 2*i+1). Per-socket readiness flags are set
//! from events; on any event both copy directions are pumped for as long as the
//! sockets involved are believed ready (see `Side`). Buffers come from the
//! loop's own pool.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use runtime_candidates::{args, reuseport_listener, BufPool, Slab};

const LISTENER: Token = Token(usize::MAX);

/// One copy direction: bytes read from `src` waiting in `buf[start..end]`.
struct Dir {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    eof: bool,  // src returned EOF
    shut: bool, // FIN forwarded to dst
}

impl Dir {
    fn new(buf: Box<[u8]>) -> Self {
        Dir { buf, start: 0, end: 0, eof: false, shut: false }
    }
}

/// One socket plus the readiness we believe it has. Edge-triggered epoll only
/// reports changes, so the flags are set by events and cleared when a syscall
/// says EAGAIN, or earlier on a short read/write (the kernel queues a new edge
/// for any later arrival), which saves the trailing EAGAIN syscall.
/// `hup` (peer FIN or error seen) is final and disables the short-read rule:
/// data and FIN may arrive together, and no further edge would announce EOF.
struct Side {
    s: TcpStream,
    rd: bool,
    wr: bool,
    hup: bool,
}

struct Conn {
    sides: [Side; 2], // [client, backend]
    dirs: [Dir; 2],   // dirs[0]: client -> backend, dirs[1]: backend -> client
}

/// Move bytes src -> dst while both are believed ready. Returns Ok(true) once
/// EOF has been seen and forwarded.
fn pump(src: &mut Side, dst: &mut Side, d: &mut Dir) -> io::Result<bool> {
    loop {
        if d.start < d.end {
            if !dst.wr {
                return Ok(false);
            }
            match dst.s.write(&d.buf[d.start..d.end]) {
                Ok(n) => {
                    d.start += n;
                    if d.start == d.end {
                        d.start = 0;
                        d.end = 0;
                    } else {
                        dst.wr = false; // short write: send buffer is full
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => dst.wr = false,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            continue;
        }
        if d.eof {
            if !d.shut {
                dst.s.shutdown(Shutdown::Write)?;
                d.shut = true;
            }
            return Ok(true);
        }
        if !src.rd {
            return Ok(false);
        }
        match src.s.read(&mut d.buf) {
            Ok(0) => d.eof = true,
            Ok(n) => {
                d.end = n;
                if n < d.buf.len() && !src.hup {
                    src.rd = false; // drained what was queued
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => src.rd = false,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

struct Worker {
    poll: Poll,
    listener: TcpListener,
    backend: SocketAddr,
    conns: Slab<Conn>,
    pool: BufPool,
}

impl Worker {
    fn accept_all(&mut self) {
        loop {
            let (client, _) = match self.listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    eprintln!("accept: {e}");
                    return;
                }
            };
            let backend = match TcpStream::connect(self.backend) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("connect: {e}");
                    continue;
                }
            };
            let _ = client.set_nodelay(true);
            let _ = backend.set_nodelay(true);
            let rw = Interest::READABLE | Interest::WRITABLE;
            // Registered below, once the slab index (hence the tokens) is known.
            let side = |s| Side { s, rd: false, wr: false, hup: false };
            let i = self.conns.insert(Conn {
                sides: [side(client), side(backend)],
                dirs: [Dir::new(self.pool.get()), Dir::new(self.pool.get())],
            });
            let c = self.conns.get_mut(i).unwrap();
            let reg = self.poll.registry();
            if reg.register(&mut c.sides[0].s, Token(2 * i), rw).is_err()
                || reg.register(&mut c.sides[1].s, Token(2 * i + 1), rw).is_err()
            {
                self.close(i);
            }
        }
    }

    fn on_event(&mut self, ev: &mio::event::Event) {
        let t = ev.token().0;
        let i = t / 2;
        let Some(c) = self.conns.get_mut(i) else { return };
        let side = &mut c.sides[t & 1];
        side.hup |= ev.is_read_closed() || ev.is_error();
        side.rd |= ev.is_readable() || side.hup;
        side.wr |= ev.is_writable() || ev.is_write_closed() || ev.is_error();
        let [client, backend] = &mut c.sides;
        let [c2b, b2c] = &mut c.dirs;
        let r1 = pump(client, backend, c2b);
        let r2 = pump(backend, client, b2c);
        match (r1, r2) {
            (Ok(true), Ok(true)) | (Err(_), _) | (_, Err(_)) => self.close(i),
            _ => {}
        }
    }

    fn close(&mut self, i: usize) {
        if let Some(c) = self.conns.remove(i) {
            let reg = self.poll.registry();
            let [mut s0, mut s1] = c.sides;
            let _ = reg.deregister(&mut s0.s);
            let _ = reg.deregister(&mut s1.s);
            let [d0, d1] = c.dirs;
            self.pool.put(d0.buf);
            self.pool.put(d1.buf);
            // sockets closed on drop
        }
    }
}

fn main() -> io::Result<()> {
    let a = args();
    let std_l = reuseport_listener(&a.listen, true)?;
    let mut w = Worker {
        poll: Poll::new()?,
        listener: TcpListener::from_std(std_l),
        backend: SocketAddr::V4(a.backend),
        conns: Slab::default(),
        pool: BufPool::default(),
    };
    w.poll.registry().register(&mut w.listener, LISTENER, Interest::READABLE)?;
    let mut events = Events::with_capacity(1024);
    loop {
        if let Err(e) = w.poll.poll(&mut events, None) {
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for ev in events.iter() {
            match ev.token() {
                LISTENER => w.accept_all(),
                _ => w.on_event(ev),
            }
        }
    }
}
