//! Connecting to a server with HAProxy's retry rules.
//!
//! - The request already holds a server slot ([`crate::Backend::assign`]);
//!   a failed connection is retried as [`crate::retry`] says (up to
//!   `retries` times, when `retry-on` has `conn-failure`, its default).
//! - Retries go to the same server after a turn-around delay of
//!   min(`timeout connect`, 1 s), as HAProxy does, so a restarting server is
//!   not hammered.
//! - With `option redispatch`, the last retry goes to another server (no
//!   delay), HAProxy's default redispatch interval of -1.
//! - Each result feeds the server's passive check (`observe layer4`).

use crate::counters::C;
use crate::error::{Cause, ProxyError};
use crate::retry::{Trigger, Verdict};
use crate::{Backend, RequestKey, Server, ServerSlot};
use fairlead_net::Conn;
use std::sync::Arc;
use std::time::Duration;

/// A new connection to a server, with the request's slot on it.
pub struct Connected {
    pub stream: Conn,
    pub slot: ServerSlot,
}

/// What a new server connection may need from the client side: the
/// client's SNI and the request's Host (without port), for
/// `sni ssl_fc_sni` / `sni req.hdr(host)`, and the client connection's
/// addresses for `send-proxy`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TlsNames<'a> {
    pub client_sni: Option<&'a str>,
    pub host: Option<&'a str>,
    /// The client connection's `(source, destination)`, sent in the PROXY
    /// protocol header. Default is none (`UNKNOWN` / `LOCAL` is sent).
    pub client_addrs: Option<(std::net::SocketAddr, std::net::SocketAddr)>,
    /// The TLVs of a `send-proxy-v2` header ([`proxy_v2_tlvs`]). Default
    /// is none (a header with the addresses only).
    pub proxy_v2: Option<&'a fairlead_proxyproto::V2Options>,
    /// The caller writes as soon as the connection is established (an
    /// HTTP request, TCP data already read from the client): with `option
    /// tcp-smart-connect` the handshake's last ACK waits for that data.
    /// Default is false.
    pub has_data: bool,
}

/// The longest unique id sent in a PROXY v2 UNIQUE_ID TLV (HAProxy's
/// `UNIQUEID_LEN` of 128 with its terminating NUL).
pub const MAX_UNIQUE_ID: usize = 127;

/// The TLVs of the PROXY v2 header sent to `server` for a request of the
/// `client` connection: the ALPN negotiated with the client whenever there
/// is one (as HAProxy does), then what `proxy-v2-options` asks for.
/// `unique_id` is the stream's unique id, if one was made.
pub fn proxy_v2_tlvs(
    server: &Server,
    client: &Conn,
    unique_id: Option<&[u8]>,
) -> fairlead_proxyproto::V2Options {
    let o = &server.conf.proxy_v2;
    let tls = client.tls_info_ref();
    let info = tls.as_deref();
    let mut v = fairlead_proxyproto::V2Options {
        crc32c: o.crc32c,
        alpn: info.and_then(|i| i.alpn.as_deref()).map(<[u8]>::to_vec),
        ..Default::default()
    };
    if o.authority {
        let received = client.proxy_info().and_then(|p| p.authority.as_deref());
        let sni = info.and_then(|i| i.sni.as_deref()).map(str::as_bytes);
        v.authority = received.or(sni).map(<[u8]>::to_vec);
    }
    if o.unique_id {
        // As HAProxy: an empty TLV when the stream has no id (no
        // `unique-id-format`), and an id cut at 127 bytes (UNIQUEID_LEN).
        let id = unique_id.unwrap_or_default();
        v.unique_id = Some(id.get(..MAX_UNIQUE_ID).unwrap_or(id).to_vec());
    }
    if o.ssl {
        v.ssl = Some(fairlead_proxyproto::SslInfo {
            tls: info.is_some(),
            cert_sess: info.is_some_and(|i| i.peer_cert),
            cert_conn: info.is_some_and(|i| i.peer_cert),
            verify: 0,
            version: info.map(|i| i.version.to_string()),
            cn: info
                .filter(|_| o.cert_cn)
                .and_then(|i| i.peer_cn.as_deref())
                .map(str::to_string),
            key_alg: info
                .filter(|_| o.cert_key)
                .and_then(|i| i.local_key_alg.as_deref())
                .map(str::to_string),
            sig_alg: info
                .filter(|_| o.cert_sig)
                .and_then(|i| i.local_sig_alg.as_deref())
                .map(str::to_string),
            cipher: info.filter(|_| o.ssl_cipher).map(|i| i.cipher.to_string()),
        });
    }
    v
}

/// Writes the PROXY protocol header `send-proxy` (`version` 1) or
/// `send-proxy-v2` (2) asks for, right after connecting and before TLS.
async fn send_proxy_header(
    tcp: &fairlead_net::Sock,
    version: u8,
    names: &TlsNames<'_>,
    timeout: Option<Duration>,
) -> std::io::Result<()> {
    let mut hdr = Vec::with_capacity(64);
    let addrs = names.client_addrs;
    if version == 1 {
        fairlead_proxyproto::encode_v1(addrs, &mut hdr);
    } else {
        let none = fairlead_proxyproto::V2Options::default();
        let opts = names.proxy_v2.unwrap_or(&none);
        let cmd = fairlead_proxyproto::Command::Proxy;
        fairlead_proxyproto::encode_v2(cmd, addrs, opts, &mut hdr);
    }
    let mut data = hdr.as_slice();
    while !data.is_empty() {
        match tcp.try_write(data) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => data = data.get(n..).unwrap_or_default(),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                fairlead_net::io::with_timeout(timeout, "connect timeout", tcp.writable()).await?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Opens a connection to `server`: TCP (or a UNIX socket; through the
/// server's SOCKS4 proxy when it has `socks4`), then the TLS handshake when
/// the server has `ssl`. The SOCKS4 exchange and the handshake share
/// `timeout connect`. No retry, no slot: also for a request already
/// holding one that needs a second connection to the same server (an
/// HTTP/2 stream refused on a shared connection).
pub async fn open(
    server: &Server,
    timeout: Option<Duration>,
    names: TlsNames<'_>,
) -> std::io::Result<Conn> {
    open_with(server, timeout, names, false).await
}

/// [`open`], with the backend's `option tcp-smart-connect` (`smart`): the
/// TCP connection is opened out of quick-ack mode when something is sent
/// as soon as it is established (`names.has_data`, a PROXY protocol
/// header, a TLS hello), as HAProxy does.
async fn open_with(
    server: &Server,
    timeout: Option<Duration>,
    names: TlsNames<'_>,
    smart: bool,
) -> std::io::Result<Conn> {
    let addr = **server.admin.addr.load();
    if server.conf.unresolved.is_some() {
        // No address (a dynamic server added by name): HAProxy 2.6 fails
        // the connection at once, and retries as for any failure.
        return Err(std::io::Error::new(
            std::io::ErrorKind::AddrNotAvailable,
            "server has no address",
        ));
    }
    // Plain TCP goes through the worker's io_uring ring when it has one.
    let tcp: fairlead_net::Sock = match (&server.conf.unix, server.conf.socks4) {
        (None, None) => {
            let data = names.has_data || server.conf.send_proxy != 0 || server.conf.tls.is_some();
            fairlead_net::connect_sock(addr, timeout, smart && data).await?
        }
        (None, Some(proxy)) => {
            let mut tcp = fairlead_net::connect(proxy, timeout).await?;
            let handshake = fairlead_health::socks4::connect(&mut tcp, addr);
            fairlead_net::io::with_timeout(timeout, "connect timeout", handshake).await?;
            tcp.into()
        }
        (Some(crate::server::UnixTarget::Addr(path)), _) => {
            fairlead_net::unix::connect_unix(path, timeout)
                .await?
                .into()
        }
        (Some(crate::server::UnixTarget::Pair(fd)), _) => crate::sockpair::connect(*fd)?.into(),
    };
    if server.conf.send_proxy != 0 {
        send_proxy_header(&tcp, server.conf.send_proxy, &names, timeout).await?;
    }
    let mut conn = match &server.conf.tls {
        None => Conn::plain(tcp),
        Some(tls) => {
            let name = tls.server_name(names.client_sni, names.host, addr.ip());
            fairlead_tls::stream::connect(tcp, tls.config(), name, timeout).await?
        }
    };
    if server.conf.unix.is_none() {
        // Closed with a reset if the proxy closes it first, as HAProxy
        // does with TCP server connections (UNIX ones leave no TIME_WAIT).
        conn.set_linger_risk();
    }
    Ok(conn)
}

/// Connects to the server of `slot`, retrying as the backend's retry
/// policy ([`crate::retry`]) says. `attempts` counts the retries already
/// spent on this request (HTTP retries share the `retries` budget) and is
/// updated.
pub async fn connect_server(
    be: &Arc<Backend>,
    mut slot: ServerSlot,
    key: &RequestKey<'_>,
    attempts: &mut u32,
    names: TlsNames<'_>,
) -> Result<Connected, ProxyError> {
    let connect_timeout = be.options.timeouts.connect;
    loop {
        let server = slot.server().clone();
        let smart = be.options.tcp_smart_connect;
        let e = match open_with(&server, connect_timeout, names, smart).await {
            Ok(stream) => {
                server.metrics.counters.inc(C::ConnNew);
                server.observe(false, true);
                return Ok(Connected { stream, slot });
            }
            Err(e) => e,
        };
        server.metrics.counters.inc(C::Econ);
        be.counters.inc(C::Econ);
        server.observe(false, false);
        let err = ProxyError::connect(if e.kind() == std::io::ErrorKind::TimedOut {
            Cause::ConnectTimeout
        } else {
            Cause::ConnectFailed
        });
        match be.retry(&server, Trigger::Error(&err), attempts) {
            Verdict::Stop => return Err(err),
            Verdict::Retry { redispatch: true } => {
                let failed = slot.id();
                drop(slot);
                slot = be.assign(key, None, Some(failed)).await?;
                if slot.id() != failed {
                    continue;
                }
            }
            Verdict::Retry { redispatch: false } => {}
        }
        let turnaround = connect_timeout
            .unwrap_or(Duration::from_secs(1))
            .min(Duration::from_secs(1));
        tokio::time::sleep(turnaround).await;
    }
}
