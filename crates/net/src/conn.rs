//! [`Conn`]: one connection as the proxy sees it, a TCP socket with an
//! optional TLS layer on top.
//!
//! Everything above this module (HTTP sessions, TCP tunnels, idle pools)
//! reads and writes plaintext through `&Conn`, so that the two directions
//! of a connection can be driven from one task without splitting it. On a
//! clear connection each call is the same non-blocking socket call as
//! before TLS existed (one branch on `tls.is_none()`).
//!
//! The TLS layer is a trait object ([`TlsLayer`], implemented by the
//! `fairlead-tls` crate) behind a `RefCell`: every call borrows it only for
//! a synchronous step and never across an `.await`, so a reader and a
//! writer future of the same task can share the connection.

use std::cell::RefCell;
use std::io::{Error, ErrorKind, Result};
use std::time::Duration;
use tokio::net::TcpStream;

use crate::io::with_timeout;
use crate::Sock;

/// What a finished TLS handshake negotiated, for logs and statistics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsInfo {
    /// `TLSv1.2` or `TLSv1.3` (HAProxy's `%sslv`).
    pub version: &'static str,
    /// The cipher suite's IANA name (HAProxy's `%sslc` uses OpenSSL names;
    /// see the logging docs).
    pub cipher: &'static str,
    /// The server name the client asked for (SNI), if any.
    pub sni: Option<Box<str>>,
    /// The protocol chosen by ALPN, if any.
    pub alpn: Option<Box<[u8]>>,
    /// The session was resumed (ticket or session cache).
    pub resumed: bool,
    /// The peer presented a certificate that was verified.
    pub peer_cert: bool,
    /// The client certificate's subject, in OpenSSL's one-line form
    /// (`/C=FR/O=Example/CN=alice`; `ssl_c_s_dn`), on accepted
    /// connections. Default is none.
    pub peer_subject: Option<Box<str>>,
    /// The client certificate's first common name (`PP2_SUBTYPE_SSL_CN`
    /// of `send-proxy-v2-ssl-cn`). Default is none.
    pub peer_cn: Option<Box<str>>,
    /// The signature algorithm of the certificate this side presented
    /// (accepted connections: the frontend's), in OpenSSL's short names
    /// as HAProxy sends them in `PP2_SUBTYPE_SSL_SIG_ALG` (`RSA-SHA256`,
    /// `ecdsa-with-SHA256`). Default is none.
    pub local_sig_alg: Option<std::sync::Arc<str>>,
    /// The key algorithm and size of that certificate, as HAProxy sends
    /// them in `PP2_SUBTYPE_SSL_KEY_ALG` (`RSA2048`, `EC256`); none for
    /// other key types. Default is none.
    pub local_key_alg: Option<std::sync::Arc<str>>,
}

/// What a PROXY protocol header received on a connection carried
/// (`accept-proxy`, `expect-proxy layer4`): the addresses, unless the
/// header was `LOCAL`/`UNKNOWN`, and the TLVs rules can fetch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyInfo {
    /// `(source, destination)`: what [`Conn::peer_addr`] and
    /// [`Conn::local_addr`] return instead of the socket's. Default is
    /// none (the socket's addresses stay).
    pub addrs: Option<(std::net::SocketAddr, std::net::SocketAddr)>,
    /// `PP2_TYPE_AUTHORITY` (`fc_pp_authority`). Default is none.
    pub authority: Option<Box<[u8]>>,
    /// `PP2_TYPE_UNIQUE_ID` (`fc_pp_unique_id`). Default is none.
    pub unique_id: Option<Box<[u8]>>,
}

/// A TLS session over a TCP socket: the operations [`Conn`] needs, all
/// non-blocking. "Would block" means: wait until the socket is readable,
/// or writable when [`TlsLayer::wants_write`] says so.
pub trait TlsLayer {
    /// Plaintext can be returned without reading the socket.
    fn has_plain(&self) -> bool;
    /// Encrypted bytes are queued and wait for the socket to be writable.
    fn wants_write(&self) -> bool;
    /// Reads plaintext into `dst`. `Ok(0)`: the peer closed (close_notify
    /// or end of stream).
    fn try_read(&mut self, tcp: &Sock, dst: &mut [u8]) -> Result<usize>;
    /// Encrypts a prefix of `data` and queues it, then tries to send
    /// (unless `more`: more data follows at once and goes out with it).
    /// Returns how many plaintext bytes were taken.
    fn try_write(&mut self, tcp: &Sock, data: &[u8], more: bool) -> Result<usize>;
    /// Sends queued bytes: `Ok` when none are left.
    fn try_flush(&mut self, tcp: &Sock) -> Result<()>;
    /// Queues a close_notify alert and tries to send it.
    fn close(&mut self, tcp: &Sock);
    /// What the handshake negotiated.
    fn info(&self) -> &TlsInfo;
    /// Bytes this session holds in buffers right now (for `show pools`-like
    /// accounting and tests of the idle memory model).
    fn buffered(&self) -> usize;
}

/// A connection: TCP, or TLS over TCP.
///
/// The TLS layer (and the rare addresses received with the PROXY
/// protocol) sit behind boxes so that the field is one thin pointer: every
/// idle connection's state carries a `Conn` (sometimes two), and a fat
/// pointer there cost 8 bytes more each.
pub struct Conn {
    tcp: Sock,
    ext: Option<Box<Ext>>,
}

/// What only some connections have.
#[derive(Default)]
struct Ext {
    tls: Option<RefCell<Box<dyn TlsLayer>>>,
    /// The PROXY protocol header received, if any. Default is none.
    proxy: Option<ProxyInfo>,
    /// Closed with a reset when dropped before the peer closed its side
    /// (see [`Conn::set_linger_risk`]). Default is off.
    linger_risk: std::cell::Cell<bool>,
}

impl Conn {
    /// A clear-text connection.
    pub fn plain(tcp: impl Into<Sock>) -> Conn {
        Conn {
            tcp: tcp.into(),
            ext: None,
        }
    }

    /// The TLS layer, if any.
    fn tls(&self) -> Option<&RefCell<Box<dyn TlsLayer>>> {
        self.ext.as_ref()?.tls.as_ref()
    }

    /// Records the PROXY protocol header the connection started with:
    /// [`Conn::peer_addr`] and [`Conn::local_addr`] return the addresses
    /// it carried, and [`Conn::proxy_info`] its TLVs.
    pub fn set_proxy_info(&mut self, info: ProxyInfo) {
        self.ext.get_or_insert_with(Box::default).proxy = Some(info);
    }

    /// Marks a server connection, as HAProxy marks its TCP server
    /// connections (`FD_LINGER_RISK`): dropped before the server closed
    /// its side (a read returned the end of the stream), it is closed with
    /// a reset (`SO_LINGER` 0), so that the proxy's ports do not pile up
    /// in TIME_WAIT. Bytes still unsent are dropped then, as in HAProxy.
    pub fn set_linger_risk(&mut self) {
        self.ext
            .get_or_insert_with(Box::default)
            .linger_risk
            .set(true);
    }

    /// The PROXY protocol header the connection started with, if any.
    pub fn proxy_info(&self) -> Option<&ProxyInfo> {
        self.ext.as_ref()?.proxy.as_ref()
    }

    fn proxied(&self) -> Option<(std::net::SocketAddr, std::net::SocketAddr)> {
        self.ext.as_ref()?.proxy.as_ref()?.addrs
    }

    /// A connection whose TLS handshake is complete.
    pub fn with_tls(tcp: impl Into<Sock>, tls: Box<dyn TlsLayer>) -> Conn {
        Conn {
            tcp: tcp.into(),
            ext: Some(Box::new(Ext {
                tls: Some(RefCell::new(tls)),
                ..Ext::default()
            })),
        }
    }

    /// The socket (addresses, socket options).
    pub fn sock(&self) -> &Sock {
        &self.tcp
    }

    /// The tokio stream, on the epoll path (splicing needs one).
    pub fn tcp(&self) -> Option<&TcpStream> {
        self.tcp.epoll()
    }

    /// Both clear-text io_uring sockets, source then destination, when
    /// bytes may go from `self` to `dst` without a copy
    /// ([`fairlead_uring::UringSock::lend_from`]).
    pub fn ring_pair<'a>(
        &'a self,
        dst: &'a Conn,
    ) -> Option<(&'a fairlead_uring::UringSock, &'a fairlead_uring::UringSock)> {
        if self.is_tls() || dst.is_tls() {
            return None;
        }
        Some((self.tcp.uring()?, dst.tcp.uring()?))
    }

    pub fn is_tls(&self) -> bool {
        self.tls().is_some()
    }

    /// What the TLS handshake negotiated; `None` on a clear connection.
    pub fn tls_info(&self) -> Option<TlsInfo> {
        self.tls().map(|t| t.borrow().info().clone())
    }

    /// What the TLS handshake negotiated, borrowed (no copy); `None` in
    /// clear. Never hold it across an `.await`: the connection's reads and
    /// writes borrow the same cell mutably.
    pub fn tls_info_ref(&self) -> Option<std::cell::Ref<'_, TlsInfo>> {
        self.tls()
            .map(|t| std::cell::Ref::map(t.borrow(), |l| l.info()))
    }

    /// Bytes held by the TLS layer's buffers (0 on a clear connection).
    pub fn tls_buffered(&self) -> usize {
        self.tls().map_or(0, |t| t.borrow().buffered())
    }

    /// Waits until [`Conn::try_read`] may make progress. Queued TLS output
    /// (a post-handshake message) is sent first. The waits are sequential,
    /// not selected, so that this future (part of every idle connection's
    /// state) stays the size of one socket wait.
    pub async fn readable(&self) -> Result<()> {
        if let Some(tls) = self.tls() {
            if tls.borrow().has_plain() {
                return Ok(());
            }
            while tls.borrow().wants_write() {
                self.tcp.writable().await?;
                let r = tls.borrow_mut().try_flush(&self.tcp);
                match r {
                    Err(e) if e.kind() != ErrorKind::WouldBlock => return Err(e),
                    _ => {}
                }
            }
        }
        self.tcp.readable().await
    }

    /// [`Conn::readable`] as a poll, with no future of its own: a TLS layer
    /// with decrypted bytes is ready at once, and one with records to send
    /// first flushes them. The waker is kept by the socket's registration
    /// (only the last one polled for each direction is woken).
    pub fn poll_read_ready(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<()>> {
        use std::task::Poll;
        if let Some(tls) = self.tls() {
            if tls.borrow().has_plain() {
                return Poll::Ready(Ok(()));
            }
            while tls.borrow().wants_write() {
                match self.tcp.poll_write_ready(cx) {
                    Poll::Ready(Ok(())) => {}
                    other => return other,
                }
                let r = tls.borrow_mut().try_flush(&self.tcp);
                match r {
                    Err(e) if e.kind() != ErrorKind::WouldBlock => return Poll::Ready(Err(e)),
                    _ => {}
                }
            }
        }
        self.tcp.poll_read_ready(cx)
    }

    /// One non-blocking read. `Ok(0)` at end of stream, `WouldBlock` when
    /// nothing is ready. On a clear connection a short read also clears the
    /// socket's readiness (see [`crate::io::try_read_drain`]).
    pub fn try_read(&self, buf: &mut [u8]) -> Result<usize> {
        let r = match self.tls() {
            None => self.tcp.try_read(buf),
            Some(tls) => tls.borrow_mut().try_read(&self.tcp, buf),
        };
        if matches!(r, Ok(0)) && !buf.is_empty() {
            self.peer_closed_first();
        }
        r
    }

    /// [`Conn::try_read`] that also tells whether the bytes read were the
    /// last before the peer's end of stream (see [`Sock::try_read_fin`]);
    /// always `false` over TLS.
    pub fn try_read_fin(&self, buf: &mut [u8]) -> Result<(usize, bool)> {
        if self.tls().is_some() {
            return self.try_read(buf).map(|n| (n, false));
        }
        let r = self.tcp.try_read_fin(buf);
        if let Ok((n, fin)) = r {
            if (n == 0 && !buf.is_empty()) || fin {
                self.peer_closed_first();
            }
        }
        r
    }

    /// The peer closed first: no TIME_WAIT is left here, so the close
    /// need not be a reset (see [`Conn::set_linger_risk`]).
    fn peer_closed_first(&self) {
        if let Some(e) = &self.ext {
            e.linger_risk.set(false);
        }
    }

    /// Waits for data and reads once.
    pub async fn read(&self, buf: &mut [u8]) -> Result<usize> {
        loop {
            self.readable().await?;
            match self.try_read(buf) {
                Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                r => return r,
            }
        }
    }

    /// Writes all of `data`, trying the socket first and waiting for
    /// writability only when it is full. Each wait is bounded by `idle`.
    pub async fn write_all(&self, mut data: &[u8], idle: Option<Duration>) -> Result<()> {
        let Some(tls) = self.tls() else {
            while !data.is_empty() {
                match self.tcp.try_write(data) {
                    Ok(0) => return Err(Error::new(ErrorKind::WriteZero, "write returned 0")),
                    Ok(n) => data = &data[n..],
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        with_timeout(idle, "write timeout", self.tcp.writable()).await?;
                    }
                    Err(e) => return Err(e),
                }
            }
            return Ok(());
        };
        while !data.is_empty() {
            let r = tls.borrow_mut().try_write(&self.tcp, data, false);
            match r {
                Ok(n) => data = &data[n..],
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    with_timeout(idle, "write timeout", self.tcp.writable()).await?;
                }
                Err(e) => return Err(e),
            }
        }
        self.flush(idle).await
    }

    /// [`Conn::write_all`], telling the kernel that more of the same
    /// message follows when `more` is set (`MSG_MORE`, as HAProxy does
    /// while a message is unfinished): partial segments wait for the next
    /// send instead of leaving at once, so a large body leaves in full
    /// segments. The last send of a message must pass `more = false`, which
    /// pushes what is held. TLS connections ignore `more`.
    pub async fn write_all_more(
        &self,
        mut data: &[u8],
        idle: Option<Duration>,
        more: bool,
    ) -> Result<()> {
        if !more || self.tls().is_some() {
            return self.write_all(data, idle).await;
        }
        while !data.is_empty() {
            let sent = self.tcp.try_send(data, true);
            match sent {
                Ok(0) => return Err(Error::new(ErrorKind::WriteZero, "write returned 0")),
                Ok(n) => data = data.get(n..).unwrap_or_default(),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    with_timeout(idle, "write timeout", self.tcp.writable()).await?;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Sends what the TLS layer still holds (nothing to do in clear).
    async fn flush(&self, idle: Option<Duration>) -> Result<()> {
        let Some(tls) = self.tls() else {
            return Ok(());
        };
        loop {
            let r = tls.borrow_mut().try_flush(&self.tcp);
            match r {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    with_timeout(idle, "write timeout", self.tcp.writable()).await?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes `head` then `body`. In clear, vectored writes send both with
    /// one syscall when the socket has room, without copying them into one
    /// buffer; with TLS both are encrypted into the same queue first.
    pub async fn write_all2(&self, head: &[u8], body: &[u8], idle: Option<Duration>) -> Result<()> {
        self.write_all2_more(head, body, idle, false).await
    }

    /// [`Conn::write_all2`] with `MSG_MORE` on every send when `more` is
    /// set (see [`Conn::write_all_more`]).
    pub async fn write_all2_more(
        &self,
        head: &[u8],
        body: &[u8],
        idle: Option<Duration>,
        more: bool,
    ) -> Result<()> {
        if let Some(tls) = self.tls() {
            // The head's record is queued and leaves with the body's first
            // one, in one send.
            let mut head = head;
            while !head.is_empty() {
                let r = tls.borrow_mut().try_write(&self.tcp, head, true);
                match r {
                    Ok(n) => head = &head[n..],
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        with_timeout(idle, "write timeout", self.tcp.writable()).await?;
                    }
                    Err(e) => return Err(e),
                }
            }
            return self.write_all(body, idle).await;
        }
        let (mut head, mut body) = (head, body);
        while !head.is_empty() {
            let sent = self.tcp.try_send2(head, body, more);
            match sent {
                Ok(0) => return Err(Error::new(ErrorKind::WriteZero, "write returned 0")),
                Ok(n) if n >= head.len() => {
                    body = &body[n - head.len()..];
                    head = &[];
                }
                Ok(n) => head = head.get(n..).unwrap_or_default(),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    with_timeout(idle, "write timeout", self.tcp.writable()).await?;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.write_all_more(body, idle, more).await
    }

    /// Closes the write side: a TLS close_notify (best effort), then a FIN.
    /// Reads continue.
    pub fn shutdown_write(&self) {
        if let Some(tls) = self.tls() {
            tls.borrow_mut().close(&self.tcp);
        }
        self.tcp.shutdown_write();
    }

    /// Drops the connection without a FIN: `SO_LINGER` 0, so that closing
    /// sends a reset (HAProxy's `silent-drop`, as close as user space
    /// gets without TTL tricks). The caller then drops the connection.
    pub fn abort(&self) {
        self.tcp.set_abortive_close();
    }

    /// Checks, without blocking, whether an idle pooled connection is still
    /// usable: nothing to read and not closed by the peer. On TLS, records
    /// that carry no data (a TLS 1.3 session ticket sent after the
    /// handshake) are consumed and do not count as data.
    pub fn idle_alive(&self) -> bool {
        let mut probe = [0u8; 1];
        matches!(self.try_read(&mut probe), Err(e) if e.kind() == ErrorKind::WouldBlock)
    }

    pub fn set_nodelay(&self, on: bool) -> Result<()> {
        self.tcp.set_nodelay(on)
    }

    /// The client's address: the socket's peer, or the source of a
    /// received PROXY protocol header.
    pub fn peer_addr(&self) -> Result<std::net::SocketAddr> {
        match self.proxied() {
            Some((src, _)) => Ok(src),
            None => self.tcp.peer_addr(),
        }
    }

    /// The address the client connected to: the socket's, or the
    /// destination of a received PROXY protocol header.
    pub fn local_addr(&self) -> Result<std::net::SocketAddr> {
        match self.proxied() {
            Some((_, dst)) => Ok(dst),
            None => self.tcp.local_addr(),
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if self.ext.as_ref().is_some_and(|e| e.linger_risk.get()) {
            self.tcp.set_abortive_close();
        }
    }
}

impl From<TcpStream> for Conn {
    fn from(tcp: TcpStream) -> Conn {
        Conn::plain(tcp)
    }
}

impl From<Sock> for Conn {
    fn from(tcp: Sock) -> Conn {
        Conn::plain(tcp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// A message sent in pieces with `MSG_MORE` on all but the last arrives
    /// whole and in order, head first.
    #[test]
    fn sends_with_more_arrive_whole() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let l = tokio::net::TcpListener::bind("127.0.0.91:0")
                .await
                .expect("bind");
            let addr = l.local_addr().expect("addr");
            let (a, b) = tokio::join!(TcpStream::connect(addr), l.accept());
            let tx = Conn::plain(a.expect("connect"));
            let (mut rx, _) = b.expect("accept");
            let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
            let head = b"HTTP/1.1 200 OK\r\ncontent-length: 300000\r\n\r\n";
            let reader = async {
                let mut got = Vec::new();
                let want = head.len() + body.len();
                while got.len() < want {
                    let mut chunk = vec![0u8; 65536];
                    let n = rx.read(&mut chunk).await.expect("read");
                    assert!(n > 0, "closed after {} bytes", got.len());
                    got.extend_from_slice(&chunk[..n]);
                }
                got
            };
            let writer = async {
                let (first, rest) = body.split_at(1000);
                tx.write_all2_more(head, first, None, true)
                    .await
                    .expect("head");
                let mut pieces = rest.chunks(16384).peekable();
                while let Some(p) = pieces.next() {
                    let more = pieces.peek().is_some();
                    tx.write_all_more(p, None, more).await.expect("piece");
                }
            };
            let deadline = std::time::Duration::from_secs(10);
            let (got, ()) = tokio::time::timeout(deadline, async { tokio::join!(reader, writer) })
                .await
                .expect("the message arrives before the deadline");
            assert_eq!(&got[..head.len()], &head[..]);
            assert_eq!(&got[head.len()..], &body[..]);
        });
    }
}
