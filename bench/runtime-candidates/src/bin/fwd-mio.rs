//! Candidate (b): a hand-written readiness loop on mio (epoll, edge-triggered).
//!
//! One `Poll` per worker. Each proxied connection lives in a slab and owns two
//! tokens (client = 2*i, backend = 2*i+1). On any event for either socket both
//! copy directions are pumped until the kernel says EAGAIN, which is what
//! edge-triggered readiness requires. Buffers come from the loop's own pool.

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

struct Conn {
    client: TcpStream,
    backend: TcpStream,
    c2b: Dir,
    b2c: Dir,
}

/// Move bytes src -> dst until either side would block. Returns Ok(true) once
/// EOF has been seen and forwarded.
fn pump(src: &mut TcpStream, dst: &mut TcpStream, d: &mut Dir) -> io::Result<bool> {
    loop {
        if d.start < d.end {
            match dst.write(&d.buf[d.start..d.end]) {
                Ok(n) => {
                    d.start += n;
                    if d.start == d.end {
                        d.start = 0;
                        d.end = 0;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            continue;
        }
        if d.eof {
            if !d.shut {
                dst.shutdown(Shutdown::Write)?;
                d.shut = true;
            }
            return Ok(true);
        }
        match src.read(&mut d.buf) {
            Ok(0) => d.eof = true,
            Ok(n) => d.end = n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
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
            let i = self.conns.insert(Conn {
                client,
                backend,
                c2b: Dir::new(self.pool.get()),
                b2c: Dir::new(self.pool.get()),
            });
            let c = self.conns.get_mut(i).unwrap();
            let reg = self.poll.registry();
            if reg.register(&mut c.client, Token(2 * i), rw).is_err()
                || reg.register(&mut c.backend, Token(2 * i + 1), rw).is_err()
            {
                self.close(i);
            }
        }
    }

    fn on_event(&mut self, i: usize) {
        let Some(c) = self.conns.get_mut(i) else { return };
        let r1 = pump(&mut c.client, &mut c.backend, &mut c.c2b);
        let r2 = pump(&mut c.backend, &mut c.client, &mut c.b2c);
        match (r1, r2) {
            (Ok(true), Ok(true)) | (Err(_), _) | (_, Err(_)) => self.close(i),
            _ => {}
        }
    }

    fn close(&mut self, i: usize) {
        if let Some(mut c) = self.conns.remove(i) {
            let reg = self.poll.registry();
            let _ = reg.deregister(&mut c.client);
            let _ = reg.deregister(&mut c.backend);
            self.pool.put(c.c2b.buf);
            self.pool.put(c.b2c.buf);
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
                Token(t) => w.on_event(t / 2),
            }
        }
    }
}
