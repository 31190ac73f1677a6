//! TLS listeners: the rustls server configuration read from one PEM file
//! (certificate chain and private key together, HAProxy's `crt` format)
//! and [`Io`], the byte stream the HTTP/2 side reads and writes, plain or
//! TLS.
//!
//! The TLS side uses rustls' buffered `ServerConnection` driven by hand
//! over the tokio socket: a test origin does not need the zero-copy
//! unbuffered API of the proxy (`fairlead-tls`), and every step here is
//! synchronous except the socket calls, which keeps [`Io::read`] safe to
//! cancel (a timer racing it loses no bytes).
//!
//! Only `h2` is offered in ALPN: a TLS listener serves HTTP/2 only (a
//! client that negotiates nothing is still spoken to in HTTP/2).

use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Ciphertext read per socket read.
const TLS_READ: usize = 16 << 10;

/// Builds the server configuration from a PEM file holding the
/// certificate chain and its private key. ALPN offers `h2` only.
pub fn server_config(pem: &Path) -> io::Result<Arc<ServerConfig>> {
    let bad = |e: &dyn std::fmt::Display| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: {e}", pem.display()),
        )
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(pem)
        .map_err(|e| bad(&e))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"no certificate found"));
    }
    let key = PrivateKeyDer::from_pem_file(pem).map_err(|e| bad(&e))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(&e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad(&e))?;
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(cfg))
}

/// A connection's byte stream: plain TCP or TLS.
pub(crate) enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
}

/// rustls' server state over the socket, with a reused ciphertext buffer.
pub(crate) struct TlsStream {
    sock: TcpStream,
    conn: ServerConnection,
    /// Ciphertext to write / just read.
    scratch: Vec<u8>,
}

fn tls_err(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl TlsStream {
    /// Runs the handshake on `sock`.
    pub(crate) async fn accept(sock: TcpStream, cfg: Arc<ServerConfig>) -> io::Result<TlsStream> {
        let conn = ServerConnection::new(cfg).map_err(tls_err)?;
        let mut t = TlsStream {
            sock,
            conn,
            scratch: Vec::with_capacity(TLS_READ),
        };
        while t.conn.is_handshaking() {
            t.flush().await?;
            if t.conn.wants_read() && !t.read_records().await? {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
        t.flush().await?;
        Ok(t)
    }

    /// Writes every queued record.
    async fn flush(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            self.scratch.clear();
            self.conn.write_tls(&mut self.scratch)?;
            self.sock.write_all(&self.scratch).await?;
        }
        Ok(())
    }

    /// Reads ciphertext once and processes it. `Ok(false)` at the end of
    /// the stream. Cancel-safe: the only await is the socket read.
    async fn read_records(&mut self) -> io::Result<bool> {
        self.scratch.resize(TLS_READ, 0);
        let n = self.sock.read(&mut self.scratch).await?;
        if n == 0 {
            return Ok(false);
        }
        let mut data = &self.scratch[..n];
        while !data.is_empty() {
            self.conn.read_tls(&mut data)?;
            if let Err(e) = self.conn.process_new_packets() {
                // Send the alert, then fail.
                let _ = self.flush().await;
                return Err(tls_err(e));
            }
        }
        Ok(true)
    }
}

impl Io {
    /// Reads some plaintext into `buf`: `Ok(0)` at the end of the stream.
    /// Cancel-safe (no bytes are lost if the future is dropped). Records
    /// the TLS layer must answer (alerts, key updates) are sent by the
    /// next [`Io::write_all`] or [`Io::flush`].
    pub(crate) async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let t = match self {
            Io::Plain(s) => return s.read(buf).await,
            Io::Tls(t) => t,
        };
        loop {
            match t.conn.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if !t.read_records().await? {
                // No close_notify: treated as the end of the stream.
                return Ok(0);
            }
        }
    }

    /// Writes all of `data` (encrypting it first for TLS).
    pub(crate) async fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            Io::Plain(s) => s.write_all(data).await,
            Io::Tls(t) => {
                // rustls bounds what it queues: write, flush, repeat.
                let mut data = data;
                while !data.is_empty() {
                    let n = t.conn.writer().write(data)?;
                    data = data.get(n..).unwrap_or_default();
                    t.flush().await?;
                    if n == 0 && !data.is_empty() && !t.conn.wants_write() {
                        return Err(io::ErrorKind::WriteZero.into());
                    }
                }
                Ok(())
            }
        }
    }

    /// Sends queued TLS records (nothing for plain TCP).
    pub(crate) async fn flush(&mut self) -> io::Result<()> {
        match self {
            Io::Plain(_) => Ok(()),
            Io::Tls(t) => t.flush().await,
        }
    }

    /// Half-closes the write side (TLS: close_notify first).
    pub(crate) async fn shutdown(&mut self) -> io::Result<()> {
        match self {
            Io::Plain(s) => s.shutdown().await,
            Io::Tls(t) => {
                t.conn.send_close_notify();
                t.flush().await?;
                t.sock.shutdown().await
            }
        }
    }
}
