//! TLS client side of `https://` URLs: the rustls configuration built from
//! the options, and [`TlsConn`], which drives rustls over the connection's
//! tokio socket.
//!
//! # Why rustls' unbuffered API (and not tokio-rustls)
//!
//! The buffered `ClientConnection` (which tokio-rustls wraps) copies every
//! outgoing record into a freshly allocated `Vec` queued inside rustls
//! before it can be written to the socket, and tokio-rustls adds its own
//! poll adapter on top. With `UnbufferedClientConnection` the request is
//! encrypted straight into a per-connection buffer owned here (allocated
//! with the connection, reused by every request), ciphertext is read into a
//! second reused buffer, and the decrypted bytes are copied into the
//! connection's existing HTTP read buffer, so the HTTP parsing is the same
//! code as for plain TCP. Sending a request thus allocates nothing; the one
//! allocation left per received record is inside rustls 0.23 itself (a
//! decrypted record is handed over as a `Vec`, on both APIs).
//!
//! # Roots
//!
//! Without `--cacert` or `-k`, certificates are verified against the
//! operating system's trust store, read once at start-up with
//! `rustls-native-certs` (maintained by the rustls project). It was chosen
//! over `webpki-roots` because nothing is compiled in that could go stale,
//! and because load-test targets are often internal services whose private
//! CA is installed in the system store rather than in Mozilla's list.

use std::io;
use std::sync::Arc;

use rustls::client::{Resumption, UnbufferedClientConnection};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::unbuffered::{ConnectionState, EncryptError, UnbufferedStatus};
use rustls::{ClientConfig, HandshakeKind, RootCertStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::args::TlsOptions;
use crate::stats::ErrKind;

/// Initial size of the ciphertext input buffer: one maximal record
/// (16 KiB + header + expansion) with room to spare.
const IN_BUF: usize = 32 << 10;
/// Largest input buffer: a handshake message (a long certificate chain)
/// must fit whole.
const IN_BUF_MAX: usize = 1 << 20;
/// Initial size of the output buffer (grown once if a request is larger).
const OUT_BUF: usize = 16 << 10;
/// TLS 1.3 tickets kept per server and thread. Default is 1024.
///
/// rustls' own store keeps 8 per server, and each TLS 1.3 ticket is used
/// once: with more than 8 connections opening at the same moment (one
/// request per connection, a fast target), the others found the store empty
/// and made full handshakes, which made a fast server look as if it
/// resumed less often than a slow one.
const TICKETS_PER_SERVER: usize = 1024;

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// The base client configuration for `o`.
pub(crate) fn client_config(o: &TlsOptions) -> io::Result<ClientConfig> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let versions: &[&rustls::SupportedProtocolVersion] = match o.version.as_deref() {
        Some("1.2") => &[&rustls::version::TLS12],
        Some("1.3") => &[&rustls::version::TLS13],
        _ => rustls::DEFAULT_VERSIONS,
    };
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(|e| invalid(format!("TLS: {e}")))?;
    let mut cfg = if o.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(fairlead_tls::origin::NoVerify(provider)))
            .with_no_client_auth()
    } else {
        let mut roots = RootCertStore::empty();
        match &o.cacert {
            Some(f) => {
                let bad =
                    |e: &dyn std::fmt::Display| invalid(format!("--cacert {}: {e}", f.display()));
                let certs = CertificateDer::pem_file_iter(f).map_err(|e| bad(&e))?;
                for c in certs {
                    roots.add(c.map_err(|e| bad(&e))?).map_err(|e| bad(&e))?;
                }
                if roots.is_empty() {
                    return Err(bad(&"no certificate found"));
                }
            }
            None => {
                // Unreadable entries are skipped; an empty store makes every
                // handshake fail (counted as tls errors).
                roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
            }
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    cfg.alpn_protocols = o.alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    cfg.resumption = if o.resume {
        Resumption::default()
    } else {
        Resumption::disabled()
    };
    Ok(cfg)
}

/// One worker thread's configuration: `base` with a session cache of its
/// own (shared by the thread's connections, no cross-thread locking).
pub(crate) fn thread_config(base: &ClientConfig, resume: bool) -> Arc<ClientConfig> {
    let mut c = base.clone();
    c.resumption = if resume {
        Resumption::store(Arc::new(TicketStore::default()))
    } else {
        Resumption::disabled()
    };
    Arc::new(c)
}

/// One load thread's TLS session store (see [`TICKETS_PER_SERVER`]).
#[derive(Debug, Default)]
struct TicketStore(std::sync::Mutex<std::collections::HashMap<ServerName<'static>, Sessions>>);

#[derive(Debug, Default)]
struct Sessions {
    kx: Option<rustls::NamedGroup>,
    tls12: Option<rustls::client::Tls12ClientSessionValue>,
    tls13: std::collections::VecDeque<rustls::client::Tls13ClientSessionValue>,
}

impl TicketStore {
    fn with<R>(&self, name: &ServerName<'_>, f: impl FnOnce(&mut Sessions) -> R) -> R {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f(m.entry(name.to_owned()).or_default())
    }
}

impl rustls::client::ClientSessionStore for TicketStore {
    fn set_kx_hint(&self, name: ServerName<'static>, group: rustls::NamedGroup) {
        self.with(&name, |s| s.kx = Some(group));
    }

    fn kx_hint(&self, name: &ServerName<'_>) -> Option<rustls::NamedGroup> {
        self.with(name, |s| s.kx)
    }

    fn set_tls12_session(
        &self,
        name: ServerName<'static>,
        value: rustls::client::Tls12ClientSessionValue,
    ) {
        self.with(&name, |s| s.tls12 = Some(value));
    }

    fn tls12_session(
        &self,
        name: &ServerName<'_>,
    ) -> Option<rustls::client::Tls12ClientSessionValue> {
        self.with(name, |s| s.tls12.clone())
    }

    fn remove_tls12_session(&self, name: &ServerName<'static>) {
        self.with(name, |s| s.tls12 = None);
    }

    fn insert_tls13_ticket(
        &self,
        name: ServerName<'static>,
        value: rustls::client::Tls13ClientSessionValue,
    ) {
        self.with(&name, |s| {
            if s.tls13.len() >= TICKETS_PER_SERVER {
                s.tls13.pop_front();
            }
            s.tls13.push_back(value);
        });
    }

    fn take_tls13_ticket(
        &self,
        name: &ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        // The newest first, as rustls' own store does.
        self.with(name, |s| s.tls13.pop_back())
    }
}

/// The server name to send (SNI) and verify for a URL host.
pub(crate) fn server_name(o: &TlsOptions, host: &str) -> io::Result<ServerName<'static>> {
    let name = o.sni.as_deref().unwrap_or(host);
    ServerName::try_from(name.to_string())
        .map_err(|_| invalid(format!("bad TLS server name '{name}'")))
}

/// What [`TlsConn::drive`] should achieve.
#[derive(Clone, Copy)]
enum Want<'a> {
    /// Complete the handshake.
    Handshake,
    /// Encrypt and send these bytes.
    Send(&'a [u8]),
    /// Get some plaintext.
    Read,
}

/// What [`TlsConn::drive`] achieved.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Got {
    /// The handshake is complete / the data was sent.
    Done,
    /// This many plaintext bytes were put at the start of `dst`.
    Plain(usize),
    /// The peer closed (close_notify or end of stream).
    Eof,
}

/// What to do once the borrows of one `process_tls_records` are released.
enum Next {
    Again,
    ReadSocket,
    Flush,
    Return(Got),
}

/// The TLS state of one connection.
pub(crate) struct TlsConn {
    conn: UnbufferedClientConnection,
    /// Received ciphertext, `..in_len` filled.
    inbuf: Vec<u8>,
    in_len: usize,
    /// Records to send, `..out_len` filled.
    out: Vec<u8>,
    out_len: usize,
}

impl TlsConn {
    /// Performs the handshake on `sock`. Every failure is [`ErrKind::Tls`].
    pub(crate) async fn handshake(
        config: Arc<ClientConfig>,
        name: ServerName<'static>,
        sock: &mut TcpStream,
    ) -> Result<TlsConn, ErrKind> {
        let conn = UnbufferedClientConnection::new(config, name).map_err(|_| ErrKind::Tls)?;
        let mut t = TlsConn {
            conn,
            inbuf: vec![0; IN_BUF],
            in_len: 0,
            out: vec![0; OUT_BUF],
            out_len: 0,
        };
        match t.drive(sock, Want::Handshake, &mut []).await {
            Ok(Got::Done) => Ok(t),
            _ => Err(ErrKind::Tls),
        }
    }

    /// The protocol agreed in ALPN, if any.
    pub(crate) fn alpn(&self) -> Option<&[u8]> {
        self.conn.alpn_protocol()
    }

    /// Whether the handshake resumed a previous session.
    pub(crate) fn resumed(&self) -> bool {
        self.conn.handshake_kind() == Some(HandshakeKind::Resumed)
    }

    /// Encrypts and sends `data`; plaintext that arrives meanwhile goes to
    /// `dst` ([`Got::Plain`], then call again).
    pub(crate) async fn send(
        &mut self,
        sock: &mut TcpStream,
        data: &[u8],
        dst: &mut [u8],
    ) -> Result<Got, ErrKind> {
        self.drive(sock, Want::Send(data), dst).await
    }

    /// Reads plaintext into `dst`: [`Got::Plain`] or [`Got::Eof`].
    pub(crate) async fn read(
        &mut self,
        sock: &mut TcpStream,
        dst: &mut [u8],
    ) -> Result<Got, ErrKind> {
        self.drive(sock, Want::Read, dst).await
    }

    /// Runs the rustls state machine until `want` is achieved, plaintext
    /// was received or the peer closed.
    async fn drive(
        &mut self,
        sock: &mut TcpStream,
        want: Want<'_>,
        dst: &mut [u8],
    ) -> Result<Got, ErrKind> {
        let hs = matches!(want, Want::Handshake);
        // Socket errors during the handshake are handshake failures.
        let (rd_err, wr_err) = if hs {
            (ErrKind::Tls, ErrKind::Tls)
        } else {
            (ErrKind::Read, ErrKind::Write)
        };
        loop {
            let UnbufferedStatus { mut discard, state } = self
                .conn
                .process_tls_records(&mut self.inbuf[..self.in_len]);
            let next = match state.map_err(|_| ErrKind::Tls)? {
                // Application data right behind the handshake's last
                // message (a TLS 1.2 server's Finished, then its HTTP/2
                // SETTINGS): the handshake is done; the data stays for
                // the next read.
                ConnectionState::ReadTraffic(_) if hs => Next::Return(Got::Done),
                ConnectionState::ReadTraffic(mut r) => {
                    let mut n = 0;
                    while let Some(len) = r.peek_len() {
                        if len.get() > dst.len() - n {
                            break;
                        }
                        match r.next_record() {
                            Some(Ok(rec)) => {
                                dst[n..n + rec.payload.len()].copy_from_slice(rec.payload);
                                n += rec.payload.len();
                                discard += rec.discard;
                            }
                            Some(Err(_)) => return Err(ErrKind::Tls),
                            None => break,
                        }
                    }
                    if n == 0 {
                        // No room for the next record: the response head
                        // does not fit the read buffer.
                        return Err(ErrKind::Proto);
                    }
                    Next::Return(Got::Plain(n))
                }
                ConnectionState::EncodeTlsData(mut e) => loop {
                    match e.encode(&mut self.out[self.out_len..]) {
                        Ok(n) => {
                            self.out_len += n;
                            break Next::Again;
                        }
                        Err(rustls::unbuffered::EncodeError::InsufficientSize(s)) => {
                            self.out.resize(self.out_len + s.required_size, 0)
                        }
                        Err(_) => return Err(ErrKind::Tls),
                    }
                },
                ConnectionState::TransmitTlsData(t) => {
                    sock.write_all(&self.out[..self.out_len])
                        .await
                        .map_err(|_| wr_err)?;
                    self.out_len = 0;
                    t.done();
                    Next::Again
                }
                ConnectionState::BlockedHandshake => Next::ReadSocket,
                ConnectionState::WriteTraffic(mut w) => match want {
                    Want::Handshake => Next::Return(Got::Done),
                    Want::Read => Next::ReadSocket,
                    Want::Send(data) => loop {
                        match w.encrypt(data, &mut self.out[self.out_len..]) {
                            Ok(n) => {
                                self.out_len += n;
                                break Next::Flush;
                            }
                            Err(EncryptError::InsufficientSize(s)) => {
                                self.out.resize(self.out_len + s.required_size, 0)
                            }
                            Err(_) => return Err(ErrKind::Tls),
                        }
                    },
                },
                ConnectionState::PeerClosed | ConnectionState::Closed => match want {
                    Want::Read => Next::Return(Got::Eof),
                    _ => return Err(wr_err),
                },
                _ => return Err(ErrKind::Tls),
            };
            if discard > 0 {
                self.inbuf.copy_within(discard..self.in_len, 0);
                self.in_len -= discard;
            }
            match next {
                Next::Again => {}
                Next::Return(g) => return Ok(g),
                Next::Flush => {
                    sock.write_all(&self.out[..self.out_len])
                        .await
                        .map_err(|_| wr_err)?;
                    self.out_len = 0;
                    return Ok(Got::Done);
                }
                Next::ReadSocket => {
                    if self.in_len == self.inbuf.len() {
                        if self.inbuf.len() >= IN_BUF_MAX {
                            return Err(ErrKind::Tls);
                        }
                        self.inbuf.resize(self.inbuf.len() * 2, 0);
                    }
                    let n = sock
                        .read(&mut self.inbuf[self.in_len..])
                        .await
                        .map_err(|_| rd_err)?;
                    if n == 0 {
                        // End of stream without close_notify: like plain
                        // TCP for a response; a failure otherwise.
                        return match want {
                            Want::Read => Ok(Got::Eof),
                            _ => Err(rd_err),
                        };
                    }
                    self.in_len += n;
                }
            }
        }
    }
}
