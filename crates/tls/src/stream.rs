//! The per-connection TLS driver: rustls' unbuffered API over a tokio
//! socket, with HAProxy's memory model.
//!
//! # Buffers
//!
//! A session owns three optional buffers, all from the worker thread's pool
//! (the TLS size class of [`fairlead_net::pool`], one record plus overhead):
//!
//! - `inb`: ciphertext read from the socket and not yet processed;
//! - `out`: records encrypted and not yet written;
//! - `spill`: decrypted bytes that did not fit in the caller's buffer.
//!
//! Each is taken when bytes arrive and given back as soon as it is drained,
//! so an idle TLS connection holds no buffer at all: only the rustls state
//! (keys and a few flags) and this struct. Decrypted data goes straight into
//! the session's own input buffer (the same [`fairlead_net::IoBuf`] a clear
//! connection uses), so HTTP parsing is the same code for both.
//!
//! rustls 0.23 still hands each decrypted record over as a `Vec` of its own
//! (one allocation per record received, freed at once); in-place
//! decryption is announced upstream and would remove it.
//!
//! # Concurrency
//!
//! Every method is synchronous and non-blocking; [`fairlead_net::Conn`]
//! does the waiting. Reads and writes may interleave freely: all ciphertext
//! goes through the one `out` queue in order, and plaintext that a write
//! step happens to decrypt (rustls must process input before it lets us
//! encrypt) goes to `spill` for the next read.

use std::cell::RefCell;
use std::io::{Error, ErrorKind, Result};
use std::sync::Arc;
use std::time::Duration;

use fairlead_net::pool;
use fairlead_net::Sock;
use fairlead_net::{Conn, TlsInfo, TlsLayer};
use rustls::client::UnbufferedClientConnection;
use rustls::pki_types::ServerName;
use rustls::server::UnbufferedServerConnection;
use rustls::unbuffered::{
    ConnectionState, EncodeError, EncryptError, InsufficientSizeError, UnbufferedStatus,
};
use rustls::{ClientConfig, HandshakeKind, ProtocolVersion, ServerConfig};

/// Largest input buffer: a handshake message (a long client certificate
/// chain) must fit whole. Default is 256 KiB.
const IN_MAX: usize = 256 << 10;

/// Plaintext encrypted per step: one full record.
const CHUNK: usize = 16384;

/// Room kept for one record's header, tag and content type (TLS 1.2 GCM
/// adds 29 bytes, TLS 1.3 22), rounded up.
const RECORD_SLACK: usize = 64;

/// Smallest record worth appending to queued ones instead of sending
/// those first.
const MIN_RECORD: usize = 1024;

/// The two sides of rustls' unbuffered API, seen through one interface.
pub trait Side {
    type Data;
    fn process<'c, 'i>(
        &'c mut self,
        incoming: &'i mut [u8],
    ) -> UnbufferedStatus<'c, 'i, Self::Data>;
    fn common(&self) -> &rustls::CommonState;
    /// The peer's certificate names are worth extracting: the client's
    /// certificate on accepted connections, for `ssl_c_s_dn` and the
    /// PROXY protocol's SSL TLV. A server's certificate is not parsed.
    const PEER_NAMES: bool;
}

impl Side for UnbufferedServerConnection {
    type Data = rustls::server::ServerConnectionData;
    const PEER_NAMES: bool = true;
    fn process<'c, 'i>(
        &'c mut self,
        incoming: &'i mut [u8],
    ) -> UnbufferedStatus<'c, 'i, Self::Data> {
        self.process_tls_records(incoming)
    }
    fn common(&self) -> &rustls::CommonState {
        self
    }
}

impl Side for UnbufferedClientConnection {
    type Data = rustls::client::ClientConnectionData;
    const PEER_NAMES: bool = false;
    fn process<'c, 'i>(
        &'c mut self,
        incoming: &'i mut [u8],
    ) -> UnbufferedStatus<'c, 'i, Self::Data> {
        self.process_tls_records(incoming)
    }
    fn common(&self) -> &rustls::CommonState {
        self
    }
}

/// Where the state machine stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// It needs more ciphertext (handshake, or a partial record).
    NeedInput,
    /// Handshake done, no complete record buffered: may encrypt.
    Writable,
    /// Both sides sent close_notify.
    Closed,
}

/// What [`Session::advance`] encrypts once the session is writable.
enum Enc<'a> {
    Nothing,
    /// Application data; the bytes taken are written to the second member.
    Data(&'a [u8], &'a mut usize),
    /// A close_notify alert.
    CloseNotify,
}

/// A byte buffer from the TLS pool with a filled window `[pos, len)`.
#[derive(Default)]
struct Buf {
    data: Vec<u8>,
    pos: usize,
    len: usize,
}

impl Buf {
    fn is_empty(&self) -> bool {
        self.pos == self.len
    }

    fn filled(&self) -> &[u8] {
        &self.data[self.pos..self.len]
    }

    /// Makes sure at least `need` bytes of room follow the data, compacting
    /// or growing (up to `max`) as needed.
    fn reserve(&mut self, need: usize, max: usize) -> Result<()> {
        if self.data.len() < pool::tls_bufsize() {
            // No buffer, or a few bytes parked in a small one.
            let mut big = pool::take_tls();
            let kept = self.len - self.pos;
            big[..kept].copy_from_slice(&self.data[self.pos..self.len]);
            self.data = big;
            self.pos = 0;
            self.len = kept;
        }
        if self.data.len() - self.len >= need {
            return Ok(());
        }
        if self.pos > 0 {
            self.data.copy_within(self.pos..self.len, 0);
            self.len -= self.pos;
            self.pos = 0;
        }
        if self.data.len() - self.len < need {
            let want = (self.len + need).max(self.data.len() * 2);
            if want > max {
                return Err(Error::new(
                    ErrorKind::InvalidData,
                    "TLS message larger than the buffer limit",
                ));
            }
            self.data.resize(want, 0);
        }
        Ok(())
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
        if self.pos >= self.len {
            self.pos = 0;
            self.len = 0;
        }
    }

    /// Before a wait: gives the pooled buffer back when it holds nothing,
    /// and when it holds only a few bytes (the start of a record, such as a
    /// session ticket still arriving on an idle pooled connection), moves
    /// them to a small allocation of their own, so that an idle connection
    /// never pins a whole buffer.
    fn park(&mut self) {
        let kept = self.len - self.pos;
        if kept == 0 {
            self.release_if_empty();
        } else if kept <= PARK_MAX && self.data.len() == pool::tls_bufsize() {
            let small = self.data[self.pos..self.len].to_vec();
            pool::give_tls(std::mem::replace(&mut self.data, small));
            self.pos = 0;
            self.len = kept;
        }
    }

    /// Gives the buffer back when it holds nothing.
    fn release_if_empty(&mut self) {
        if self.is_empty() && !self.data.is_empty() {
            let d = std::mem::take(&mut self.data);
            if d.len() >= pool::tls_bufsize() {
                pool::give_tls(d);
            }
            self.pos = 0;
            self.len = 0;
        }
    }

    fn held(&self) -> usize {
        self.data.len()
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        let d = std::mem::take(&mut self.data);
        // Pooled (possibly grown: the pool frees those), not parked.
        if d.len() >= pool::tls_bufsize() {
            pool::give_tls(d);
        }
    }
}

/// Most bytes [`Buf::park`] moves out of a pooled buffer. Default is 1 KiB.
const PARK_MAX: usize = 1024;

/// One TLS connection's state over its socket.
pub struct Session<C: Side> {
    conn: C,
    inb: Buf,
    out: Buf,
    spill: Buf,
    /// close_notify received.
    peer_closed: bool,
    /// The socket returned end of stream.
    eof: bool,
    /// rustls reported an error: the session is dead and rustls must not
    /// be called again (a second fatal alert would trip its assertions).
    failed: bool,
    info: TlsInfo,
}

fn tls_err(e: rustls::Error) -> Error {
    Error::new(ErrorKind::InvalidData, e)
}

impl<C: Side> Session<C> {
    fn new(conn: C) -> Session<C> {
        Session {
            conn,
            inb: Buf::default(),
            out: Buf::default(),
            spill: Buf::default(),
            peer_closed: false,
            eof: false,
            failed: false,
            info: TlsInfo::default(),
        }
    }

    /// Runs the state machine on the buffered ciphertext. Decrypted bytes
    /// go to `dst[*got..]`, then to `spill`; handshake records and alerts to
    /// `out`; `enc` (when the session is writable) is encrypted into `out`
    /// and its second member set to the bytes taken.
    fn advance(&mut self, dst: &mut [u8], got: &mut usize, enc: Enc<'_>) -> Result<Stop> {
        if self.failed {
            return Err(Error::new(ErrorKind::BrokenPipe, "TLS session failed"));
        }
        let r = self.advance_inner(dst, got, enc);
        if r.is_err() {
            self.failed = true;
            self.queue_alert();
        }
        r
    }

    /// Moves the alert rustls queued after an error into `out`, so that
    /// the peer learns why. rustls hands queued records out before it looks
    /// at any input, and this only calls it while some are queued
    /// (`wants_write`): the bad input is never processed twice (rustls
    /// asserts against a second fatal alert), and the call is the same as
    /// the one that failed (rustls' deframer keeps offsets into that input).
    fn queue_alert(&mut self) {
        for _ in 0..4 {
            if !self.conn.common().wants_write() {
                return;
            }
            let inb = &mut self.inb;
            let len = inb.len.min(inb.data.len());
            let pos = inb.pos.min(len);
            let UnbufferedStatus { state, .. } = self.conn.process(&mut inb.data[pos..len]);
            let Ok(ConnectionState::EncodeTlsData(mut e)) = state else {
                return;
            };
            if self.out.reserve(512, IN_MAX).is_err() {
                return;
            }
            let o = &mut self.out;
            match e.encode(&mut o.data[o.len..]) {
                Ok(n) => o.len += n,
                Err(_) => return,
            }
        }
    }

    fn advance_inner(&mut self, dst: &mut [u8], got: &mut usize, mut enc: Enc<'_>) -> Result<Stop> {
        loop {
            let inb = &mut self.inb;
            let UnbufferedStatus { mut discard, state } =
                self.conn.process(&mut inb.data[inb.pos..inb.len]);
            let state = match state {
                Ok(s) => s,
                Err(e) => {
                    self.inb.consume(discard);
                    return Err(tls_err(e));
                }
            };
            let stop = match state {
                ConnectionState::ReadTraffic(mut r) => {
                    while let Some(rec) = r.next_record() {
                        let rec = rec.map_err(tls_err)?;
                        discard += rec.discard;
                        let p = rec.payload;
                        let k = p.len().min(dst.len() - *got);
                        dst[*got..*got + k].copy_from_slice(&p[..k]);
                        *got += k;
                        if k < p.len() {
                            let rest = &p[k..];
                            self.spill.reserve(rest.len(), usize::MAX)?;
                            let s = &mut self.spill;
                            s.data[s.len..s.len + rest.len()].copy_from_slice(rest);
                            s.len += rest.len();
                        }
                    }
                    None
                }
                ConnectionState::EncodeTlsData(mut e) => {
                    let mut need = 0;
                    loop {
                        self.out.reserve(need, IN_MAX)?;
                        let o = &mut self.out;
                        match e.encode(&mut o.data[o.len..]) {
                            Ok(n) => {
                                o.len += n;
                                break;
                            }
                            Err(EncodeError::InsufficientSize(InsufficientSizeError {
                                required_size,
                            })) => need = required_size,
                            Err(e) => {
                                return Err(Error::new(ErrorKind::InvalidData, e.to_string()))
                            }
                        }
                    }
                    None
                }
                // The records are in `out`, ahead of anything encrypted
                // later; they are sent in that order.
                ConnectionState::TransmitTlsData(t) => {
                    t.done();
                    None
                }
                ConnectionState::BlockedHandshake => Some(Stop::NeedInput),
                ConnectionState::PeerClosed => {
                    self.peer_closed = true;
                    None
                }
                ConnectionState::Closed => Some(Stop::Closed),
                ConnectionState::WriteTraffic(mut w) => {
                    if let Enc::CloseNotify = enc {
                        self.out.reserve(64, IN_MAX)?;
                        let o = &mut self.out;
                        if let Ok(n) = w.queue_close_notify(&mut o.data[o.len..]) {
                            o.len += n;
                        }
                        enc = Enc::Nothing;
                    }
                    if let Enc::Data(data, taken) = std::mem::replace(&mut enc, Enc::Nothing) {
                        let data = &data[..data.len().min(CHUNK)];
                        let mut need = data.len() + 64;
                        loop {
                            self.out.reserve(need, IN_MAX)?;
                            let o = &mut self.out;
                            match w.encrypt(data, &mut o.data[o.len..]) {
                                Ok(n) => {
                                    o.len += n;
                                    *taken = data.len();
                                    break;
                                }
                                Err(EncryptError::InsufficientSize(InsufficientSizeError {
                                    required_size,
                                })) => need = required_size,
                                Err(e) => {
                                    return Err(Error::new(ErrorKind::BrokenPipe, e.to_string()))
                                }
                            }
                        }
                    }
                    Some(Stop::Writable)
                }
                _ => {
                    return Err(Error::new(
                        ErrorKind::InvalidData,
                        "unexpected TLS early data",
                    ))
                }
            };
            self.inb.consume(discard);
            if let Some(stop) = stop {
                return Ok(stop);
            }
        }
    }

    /// Reads the socket into `inb` once. `Ok(false)`: end of stream.
    fn fill(&mut self, tcp: &Sock) -> Result<bool> {
        self.inb.reserve(1, IN_MAX)?;
        let inb = &mut self.inb;
        match tcp.try_read(&mut inb.data[inb.len..]) {
            Ok(0) => {
                self.eof = true;
                self.inb.release_if_empty();
                Ok(false)
            }
            Ok(n) => {
                inb.len += n;
                Ok(true)
            }
            Err(e) => {
                // About to wait: hold no pooled buffer meanwhile.
                self.inb.park();
                Err(e)
            }
        }
    }

    /// Sends `out`; `WouldBlock` while some is left.
    fn flush(&mut self, tcp: &Sock) -> Result<()> {
        while !self.out.is_empty() {
            match tcp.try_write(self.out.filled()) {
                Ok(0) => return Err(Error::new(ErrorKind::WriteZero, "write returned 0")),
                Ok(n) => self.out.consume(n),
                Err(e) => return Err(e),
            }
        }
        self.out.release_if_empty();
        Ok(())
    }

    /// Sends what can be sent now; the rest waits for writability.
    fn flush_some(&mut self, tcp: &Sock) -> Result<()> {
        match self.flush(tcp) {
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(()),
            r => r,
        }
    }

    /// Completes the handshake, with `timeout` for the whole of it.
    async fn handshake(&mut self, tcp: &Sock, timeout: Option<Duration>) -> Result<()> {
        let fut = async {
            loop {
                let mut got = 0;
                let step = self.advance(&mut [], &mut got, Enc::Nothing);
                // What the certificate resolver noted during this step:
                // taken at once, before another connection's handshake on
                // this thread can run and note its own.
                if let Some(a) = LAST_CERT.with(|c| c.borrow_mut().take()) {
                    self.info.local_sig_alg = Some(a.sig);
                    self.info.local_key_alg = a.key;
                }
                if let Some(sni) = LAST_SNI.with(|l| l.borrow_mut().take()) {
                    self.info.sni = Some(sni);
                }
                let stop = match step {
                    Ok(s) => s,
                    Err(e) => {
                        // Send the alert (queued by `advance`), best effort.
                        let _ = self.flush(tcp);
                        return Err(e);
                    }
                };
                while let Err(e) = self.flush(tcp) {
                    if e.kind() != ErrorKind::WouldBlock {
                        return Err(e);
                    }
                    tcp.writable().await?;
                }
                match stop {
                    Stop::Writable => return Ok(()),
                    Stop::Closed => {
                        return Err(Error::new(
                            ErrorKind::ConnectionAborted,
                            "peer closed during the handshake",
                        ))
                    }
                    Stop::NeedInput => loop {
                        match self.fill(tcp) {
                            Ok(true) => break,
                            Ok(false) => {
                                return Err(Error::new(
                                    ErrorKind::UnexpectedEof,
                                    "connection closed during the handshake",
                                ))
                            }
                            Err(e) if e.kind() == ErrorKind::WouldBlock => tcp.readable().await?,
                            Err(e) => return Err(e),
                        }
                    },
                }
            }
        };
        let r = fairlead_net::io::with_timeout(timeout, "handshake timeout", fut).await;
        self.info = TlsInfo {
            version: match self.conn.common().protocol_version() {
                Some(ProtocolVersion::TLSv1_3) => "TLSv1.3",
                Some(ProtocolVersion::TLSv1_2) => "TLSv1.2",
                _ => "",
            },
            cipher: self
                .conn
                .common()
                .negotiated_cipher_suite()
                .map_or("", |s| crate::suites::openssl_name(s.suite())),
            sni: self.info.sni.take(),
            alpn: self.conn.common().alpn_protocol().map(Into::into),
            resumed: self.conn.common().handshake_kind() == Some(HandshakeKind::Resumed),
            peer_cert: self.conn.common().peer_certificates().is_some(),
            peer_subject: None,
            peer_cn: None,
            local_sig_alg: self.info.local_sig_alg.take(),
            local_key_alg: self.info.local_key_alg.take(),
        };
        if C::PEER_NAMES {
            if let Some(leaf) = self
                .conn
                .common()
                .peer_certificates()
                .and_then(|c| c.first())
            {
                let (dn, cn) = crate::certs::subject_names(leaf);
                self.info.peer_subject = dn;
                self.info.peer_cn = cn;
            }
        }
        self.out.release_if_empty();
        self.inb.park();
        r
    }
}

impl<C: Side> TlsLayer for Session<C> {
    fn has_plain(&self) -> bool {
        !self.spill.is_empty()
    }

    fn wants_write(&self) -> bool {
        !self.out.is_empty()
    }

    fn try_read(&mut self, tcp: &Sock, dst: &mut [u8]) -> Result<usize> {
        if !self.spill.is_empty() {
            let s = self.spill.filled();
            let k = s.len().min(dst.len());
            dst[..k].copy_from_slice(&s[..k]);
            self.spill.consume(k);
            self.spill.release_if_empty();
            return Ok(k);
        }
        loop {
            let mut got = 0;
            let stop = self.advance(dst, &mut got, Enc::Nothing);
            // Handshake messages or alerts produced meanwhile.
            self.flush_some(tcp)?;
            let stop = stop?;
            if got > 0 {
                self.inb.release_if_empty();
                return Ok(got);
            }
            if self.peer_closed || stop == Stop::Closed || self.eof {
                self.inb.release_if_empty();
                return Ok(0);
            }
            if !self.fill(tcp)? {
                // End of stream without close_notify: like a clear
                // connection's end (HAProxy does the same).
                return Ok(0);
            }
        }
    }

    fn try_write(&mut self, tcp: &Sock, data: &[u8], more: bool) -> Result<usize> {
        // Records queue up in the one pooled buffer: encrypt only what fits
        // after what is still queued (so it never grows), sending first
        // when too little room is left.
        let room = |o: &Buf| pool::tls_bufsize().saturating_sub(o.len - o.pos + RECORD_SLACK);
        if !self.out.is_empty() && room(&self.out) < MIN_RECORD.min(data.len()) {
            self.flush(tcp)?;
        }
        let data = &data[..data.len().min(room(&self.out).max(1))];
        let mut taken = 0;
        let mut got = 0;
        self.advance(&mut [], &mut got, Enc::Data(data, &mut taken))?;
        if taken == 0 && !data.is_empty() {
            // Not writable after the handshake: the session was closed on
            // our side (rustls refuses renegotiation). Never "would
            // block": nothing would wake the writer.
            return Err(Error::new(ErrorKind::BrokenPipe, "TLS session closed"));
        }
        if !more {
            self.flush_some(tcp)?;
        }
        Ok(taken)
    }

    fn try_flush(&mut self, tcp: &Sock) -> Result<()> {
        self.flush(tcp)
    }

    fn close(&mut self, tcp: &Sock) {
        let mut got = 0;
        // Reaching the writable state may decrypt pending records; they go
        // to `spill` and stay readable after the close.
        let _ = self.advance(&mut [], &mut got, Enc::CloseNotify);
        let _ = self.flush(tcp);
        self.out.release_if_empty();
    }

    fn info(&self) -> &TlsInfo {
        &self.info
    }

    fn buffered(&self) -> usize {
        self.inb.held() + self.out.held() + self.spill.held()
    }
}

thread_local! {
    /// The SNI of the ClientHello being processed on this thread, noted by
    /// the certificate resolver (rustls' unbuffered server connection does
    /// not expose it afterwards) and taken by the handshake right after the
    /// step that called the resolver, as [`LAST_CERT`] is.
    static LAST_SNI: RefCell<Option<Box<str>>> = const { RefCell::new(None) };
}

thread_local! {
    /// The algorithms of the certificate the resolver just chose, taken
    /// by the handshake right after the step that called the resolver
    /// (no other connection runs in between).
    static LAST_CERT: RefCell<Option<crate::cert_algs::CertAlgs>> = const { RefCell::new(None) };
}

/// Called by the certificate resolver with the chosen certificate's
/// algorithms.
pub fn note_cert(algs: &crate::cert_algs::CertAlgs) {
    LAST_CERT.with(|c| *c.borrow_mut() = Some(algs.clone()));
}

/// Called by the certificate resolver with the ClientHello's SNI.
pub fn note_sni(sni: Option<&str>) {
    LAST_SNI.with(|s| *s.borrow_mut() = sni.map(Into::into));
}

/// Why a handshake failed, for logs and counters.
#[derive(Debug)]
pub struct HandshakeError {
    /// The SNI the client sent, if the ClientHello got that far.
    pub sni: Option<Box<str>>,
    pub error: Error,
}

impl std::fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.error.kind() {
            ErrorKind::TimedOut => f.write_str("timeout during SSL handshake"),
            ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset => {
                f.write_str("connection closed during SSL handshake")
            }
            _ => write!(f, "SSL handshake failure ({})", self.error),
        }
    }
}

/// Performs the server side of a handshake on an accepted socket.
pub async fn accept(
    tcp: impl Into<Sock>,
    config: Arc<ServerConfig>,
    timeout: Option<Duration>,
) -> std::result::Result<Conn, HandshakeError> {
    let conn = UnbufferedServerConnection::new(config).map_err(|e| HandshakeError {
        sni: None,
        error: tls_err(e),
    })?;
    let mut s = Session::new(conn);
    let tcp = tcp.into();
    match s.handshake(&tcp, timeout).await {
        Ok(()) => Ok(Conn::with_tls(tcp, Box::new(s))),
        Err(error) => Err(HandshakeError {
            sni: s.info.sni.take(),
            error,
        }),
    }
}

/// Performs the client side of a handshake with a server.
pub async fn connect(
    tcp: impl Into<Sock>,
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
    timeout: Option<Duration>,
) -> Result<Conn> {
    let sni: Option<Box<str>> = match &name {
        ServerName::DnsName(d) => Some(d.as_ref().into()),
        _ => None,
    };
    let conn = UnbufferedClientConnection::new(config, name).map_err(tls_err)?;
    let mut s = Session::new(conn);
    s.info.sni = sni;
    let tcp = tcp.into();
    s.handshake(&tcp, timeout).await?;
    Ok(Conn::with_tls(tcp, Box::new(s)))
}

/// For the fuzz target `tls_server`: feeds `chunks` of network input, one
/// after the other, to a server session as the driver does (records that
/// do not fit are kept for the next chunk), discarding what it would send.
/// Returns whether the session survived the input. Must never panic.
#[doc(hidden)]
pub fn fuzz_server_input(config: Arc<ServerConfig>, chunks: &[&[u8]]) -> bool {
    let Ok(conn) = UnbufferedServerConnection::new(config) else {
        return false;
    };
    let mut s = Session::new(conn);
    let mut dst = [0u8; 4096];
    for chunk in chunks {
        if s.inb.reserve(chunk.len().max(1), IN_MAX).is_err() {
            return false;
        }
        let b = &mut s.inb;
        b.data[b.len..b.len + chunk.len()].copy_from_slice(chunk);
        b.len += chunk.len();
        let mut got = 0;
        if s.advance(&mut dst, &mut got, Enc::Nothing).is_err() {
            return false;
        }
        s.out = Buf::default();
        s.spill = Buf::default();
        s.inb.park();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolver::testutil::{leaf, TempDir};
    use rcgen::PKCS_ECDSA_P256_SHA256 as ECDSA;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpStream;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn server_config(dir: &TempDir) -> Arc<ServerConfig> {
        let pem = dir.write("a.pem", &leaf(&["a.example"], &ECDSA, None).combined());
        let cfg = fairlead_config::BindTls {
            crt: vec![pem],
            ..Default::default()
        };
        crate::BindContext::build(&cfg).unwrap().config()
    }

    /// A socket pair on loopback: (client, server).
    async fn pair() -> (TcpStream, TcpStream) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (s, _) = l.accept().await.unwrap();
        (c, s)
    }

    /// A real ClientHello, as a rustls client sends it.
    fn client_hello() -> Vec<u8> {
        let cfg = ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
        let mut c =
            rustls::ClientConnection::new(Arc::new(cfg), "a.example".try_into().unwrap()).unwrap();
        let mut out = Vec::new();
        c.write_tls(&mut out).unwrap();
        out
    }

    /// Network input never panics the driver (a panic aborts the whole
    /// process in release builds): random bytes, and real ClientHellos
    /// truncated, bit-flipped or followed by garbage, each end in an
    /// error. Found two panics in the alert path before it was fixed.
    #[test]
    fn garbage_input_fails_cleanly() {
        let dir = TempDir::new("garbage");
        let cfg = server_config(&dir);
        let hello = client_hello();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        rt().block_on(async {
            for i in 0..300 {
                let mut input = match i % 4 {
                    0 => (0..rnd() % 3000).map(|_| rnd() as u8).collect::<Vec<u8>>(),
                    1 => hello[..(rnd() as usize % hello.len())].to_vec(),
                    2 => {
                        let mut h = hello.clone();
                        for _ in 0..1 + rnd() % 4 {
                            let at = rnd() as usize % h.len();
                            h[at] ^= 1 << (rnd() % 8);
                        }
                        h
                    }
                    _ => {
                        let mut h = hello.clone();
                        h.extend((0..rnd() % 200).map(|_| rnd() as u8));
                        h
                    }
                };
                if i % 4 == 0 && !input.is_empty() {
                    input[0] = 0x16; // looks like a handshake record
                }
                let (mut c, s) = pair().await;
                c.write_all(&input).await.unwrap();
                c.shutdown().await.unwrap();
                let r = accept(s, cfg.clone(), Some(Duration::from_secs(2))).await;
                assert!(r.is_err(), "input {i} was accepted");
            }
        });
    }

    /// A full exchange through the driver: handshake, a request larger
    /// than one record each way, and no buffer held once drained.
    #[test]
    fn exchange_releases_buffers() {
        let dir = TempDir::new("exchange");
        let cfg = server_config(&dir);
        rt().block_on(async {
            let (c, s) = pair().await;
            let ccfg = crate::ServerContext::build(&fairlead_config::ServerTls {
                verify: fairlead_config::Verify::None,
                ..Default::default()
            })
            .unwrap()
            .config();
            let name = ServerName::try_from("a.example").unwrap();
            let (server, client) = tokio::join!(accept(s, cfg, None), connect(c, ccfg, name, None));
            let (server, client) = (server.unwrap(), client.unwrap());
            assert_eq!(server.tls_info().unwrap().sni.as_deref(), Some("a.example"));
            let data: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
            let write = client.write_all(&data, None);
            let read = async {
                let mut got = Vec::new();
                let mut buf = vec![0u8; 7000];
                while got.len() < data.len() {
                    let n = server.read(&mut buf).await.unwrap();
                    assert!(n > 0);
                    got.extend_from_slice(&buf[..n]);
                }
                got
            };
            let (w, got) = tokio::join!(write, read);
            w.unwrap();
            assert!(got == data);
            assert_eq!(
                server.tls_buffered(),
                0,
                "an idle server side holds buffers"
            );
            assert_eq!(
                client.tls_buffered(),
                0,
                "an idle client side holds buffers"
            );
            client.shutdown_write();
            let mut buf = [0u8; 10];
            assert_eq!(server.read(&mut buf).await.unwrap(), 0);
        });
    }
}
