//! A server's client-side TLS context (`server ... ssl`): [`ServerContext`].
//!
//! # Verification
//!
//! - `verify none`: any certificate chain and name is accepted; the
//!   handshake signatures are still checked against the certificate's key.
//! - `verify required` (HAProxy's default): the chain must lead to a CA of
//!   `ca-file` (which is then needed). The name checked is `verifyhost` if
//!   set, else the SNI sent. When neither applies (no `sni`, or an `sni`
//!   expression that gave nothing for this connection, and no
//!   `verifyhost`), only the chain is checked, as HAProxy does: the
//!   connection is then made with the server's IP address as its name, and
//!   a certificate not valid for that address is accepted.
//!   `verify optional`, which HAProxy does not accept on server lines, is
//!   treated as `required`.
//!
//! # Sessions
//!
//! The `ClientConfig` is shared by every thread, and so is its session
//! store: up to 256 sessions (tickets or TLS 1.2 session IDs) per server,
//! by server name. `no-ssl-reuse` disables resumption.

use std::net::IpAddr;
use std::sync::Arc;

use fairlead_config::{ServerTls, SniSource, Verify};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{Resumption, WebPkiServerVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::sign::SingleCertAndKey;
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, SignatureScheme};

use crate::bind::load_roots;
use crate::certs::{load_pem, now_secs};
use crate::suites;
use crate::TlsError;

/// Sessions kept for resumption with one server.
const SESSIONS: usize = 256;

/// The TLS settings of one server, for every connection to it.
#[derive(Debug)]
pub struct ServerContext {
    config: Arc<ClientConfig>,
    warnings: Vec<String>,
    sni: Option<SniSource>,
}

/// `verify none` (and fairlead-load's `--insecure`): accepts any
/// certificate chain and name, but still checks the handshake signatures
/// against the certificate's key, so the peer does hold that key.
#[derive(Debug)]
pub struct NoVerify(pub Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify required`: rustls' webpki verifier, checking the name
/// `verifyhost` when set, and only the chain when the connection has no
/// name (an IP address) and no `verifyhost` is set.
#[derive(Debug)]
struct Verifier {
    inner: Arc<WebPkiServerVerifier>,
    verifyhost: Option<ServerName<'static>>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let name = self.verifyhost.as_ref().unwrap_or(server_name);
        let r = self
            .inner
            .verify_server_cert(end_entity, intermediates, name, ocsp, now);
        let no_name = self.verifyhost.is_none() && matches!(name, ServerName::IpAddress(_));
        match r {
            // webpki checks the name after the chain: the chain is good.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if no_name => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The verifier for `cfg`.
fn verifier(
    cfg: &ServerTls,
    provider: &Arc<CryptoProvider>,
    warnings: &mut Vec<String>,
) -> Result<Arc<dyn ServerCertVerifier>, TlsError> {
    if cfg.verify == Verify::None {
        if cfg.verifyhost.is_some() {
            warnings.push("'verifyhost' has no effect with 'verify none'".into());
        }
        return Ok(Arc::new(NoVerify(provider.clone())));
    }
    let Some(ca) = &cfg.ca_file else {
        return Err(TlsError::new(
            None,
            "verify required needs 'ca-file' (or set 'verify none' where the server's \
             certificate need not be checked)",
        ));
    };
    let roots = Arc::new(load_roots(ca)?);
    let inner = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
        .build()
        .map_err(|e| TlsError::new(Some(ca), format!("cannot verify servers with it: {e}")))?;
    let verifyhost = match &cfg.verifyhost {
        Some(h) => Some(
            ServerName::try_from(h.clone())
                .map_err(|_| TlsError::new(None, format!("verifyhost '{h}': not a host name")))?,
        ),
        None => None,
    };
    Ok(Arc::new(Verifier { inner, verifyhost }))
}

impl ServerContext {
    /// Loads the files (CA, client certificate) and builds the client
    /// configuration.
    pub fn build(cfg: &ServerTls) -> Result<ServerContext, TlsError> {
        let mut warnings = Vec::new();
        if let Some(SniSource::Fixed(n)) = &cfg.sni {
            if ServerName::try_from(n.as_str()).is_err() {
                return Err(TlsError::new(None, format!("sni '{n}': not a host name")));
            }
        }
        let s = suites::resolve(&cfg.protocol, &mut warnings)?;
        let verifier = verifier(cfg, &s.provider, &mut warnings)?;
        let builder = ClientConfig::builder_with_provider(s.provider.clone())
            .with_protocol_versions(&s.versions)
            .map_err(|e| TlsError::new(None, format!("TLS settings: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let mut config = match &cfg.crt {
            Some(crt) => {
                let cert = load_pem(crt, &s.provider, now_secs(), &mut warnings)?;
                builder.with_client_cert_resolver(Arc::new(SingleCertAndKey::from(cert.key)))
            }
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = cfg
            .protocol
            .alpn
            .iter()
            .map(|p| p.as_bytes().to_vec())
            .collect();
        config.resumption = if cfg.no_reuse {
            Resumption::disabled()
        } else {
            Resumption::in_memory_sessions(SESSIONS)
        };
        Ok(ServerContext {
            config: Arc::new(config),
            warnings,
            sni: cfg.sni.clone(),
        })
    }

    /// Warnings found while building (cipher strings reduced, a client
    /// certificate not valid yet...).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The client configuration (shared by all threads; its resumption
    /// store is the process-wide session cache for this server, unless
    /// `no-ssl-reuse`).
    pub fn config(&self) -> Arc<ClientConfig> {
        self.config.clone()
    }

    /// The server name for a new connection: the SNI to send and verify
    /// against.
    ///
    /// `client_sni`: the frontend connection's SNI; `host`: the request's
    /// Host header without port (None in TCP mode). `addr`: the server's
    /// address, used when no name applies (rustls then sends no SNI, and
    /// only the chain is verified unless `verifyhost` is set).
    pub fn server_name(
        &self,
        client_sni: Option<&str>,
        host: Option<&str>,
        addr: IpAddr,
    ) -> ServerName<'static> {
        let name = match &self.sni {
            Some(SniSource::Fixed(n)) => Some(n.as_str()),
            Some(SniSource::ClientSni) => client_sni,
            Some(SniSource::HostHeader) => host,
            None => None,
        };
        name.filter(|n| !n.is_empty())
            .and_then(|n| ServerName::try_from(n.trim_end_matches('.').to_string()).ok())
            .unwrap_or(ServerName::IpAddress(addr.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bind::BindContext;
    use crate::resolver::testutil::*;
    use fairlead_config::BindTls;
    use rustls::{ClientConnection, HandshakeKind, ServerConnection};
    use std::net::Ipv4Addr;

    const ADDR: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

    /// A listener serving `l`, optionally requiring client certificates
    /// from `clients`.
    fn backend(d: &TempDir, l: &Leaf, clients: Option<&Ca>) -> BindContext {
        let mut cfg = BindTls {
            crt: vec![d.write("backend.pem", &l.combined())],
            ..BindTls::default()
        };
        if let Some(ca) = clients {
            cfg.ca_file = Some(d.write("clients.pem", &ca.pem()));
            cfg.verify = Verify::Required;
        }
        BindContext::build(&cfg).unwrap()
    }

    fn hs(
        ctx: &ServerContext,
        b: &BindContext,
        name: ServerName<'static>,
    ) -> Result<(ClientConnection, ServerConnection), Failed> {
        let mut c = ClientConnection::new(ctx.config(), name).unwrap();
        let mut s = ServerConnection::new(b.config()).unwrap();
        drive(&mut c, &mut s)?;
        Ok((c, s))
    }

    fn cert_error(r: Result<(ClientConnection, ServerConnection), Failed>) -> CertificateError {
        match r {
            Err(Failed::Client(rustls::Error::InvalidCertificate(e))) => e,
            Err(e) => panic!("{e:?}"),
            Ok(_) => panic!("handshake succeeded"),
        }
    }

    #[test]
    fn server_name_sources() {
        let mut cfg = ServerTls {
            verify: Verify::None,
            ..ServerTls::default()
        };
        let name = |cfg: &ServerTls, sni, host| {
            ServerContext::build(cfg)
                .unwrap()
                .server_name(sni, host, ADDR)
        };
        let ip = ServerName::IpAddress(ADDR.into());
        let dns = |n: &str| ServerName::try_from(n.to_string()).unwrap();
        assert_eq!(name(&cfg, Some("c.test"), Some("h.test")), ip);
        cfg.sni = Some(SniSource::Fixed("f.test".into()));
        assert_eq!(name(&cfg, Some("c.test"), Some("h.test")), dns("f.test"));
        cfg.sni = Some(SniSource::ClientSni);
        assert_eq!(name(&cfg, Some("c.test"), Some("h.test")), dns("c.test"));
        assert_eq!(name(&cfg, None, Some("h.test")), ip);
        cfg.sni = Some(SniSource::HostHeader);
        assert_eq!(name(&cfg, Some("c.test"), Some("h.test.")), dns("h.test"));
        assert_eq!(name(&cfg, Some("c.test"), Some("")), ip);
        assert_eq!(name(&cfg, None, Some("bad name!")), ip);
        assert_eq!(name(&cfg, None, None), ip);
        cfg.sni = Some(SniSource::Fixed("10.1.2.3".into()));
        let v4 = ServerName::IpAddress(IpAddr::from([10, 1, 2, 3]).into());
        assert_eq!(name(&cfg, None, None), v4);
        cfg.sni = Some(SniSource::Fixed("bad name".into()));
        let e = ServerContext::build(&cfg).unwrap_err();
        assert_eq!(e.message, "sni 'bad name': not a host name");
    }

    #[test]
    fn verify_required() {
        let d = TempDir::new("origin-verify");
        let ca = Ca::new("servers");
        let other = Ca::new("other");
        let b = backend(&d, &leaf(&["backend.test"], &ECDSA, Some(&ca)), None);
        let mut cfg = ServerTls {
            verify: Verify::Required,
            sni: Some(SniSource::Fixed("backend.test".into())),
            ..ServerTls::default()
        };
        let e = ServerContext::build(&cfg).unwrap_err();
        assert!(
            e.message.starts_with("verify required needs 'ca-file'"),
            "{e}"
        );
        cfg.ca_file = Some(d.write("ca.pem", &ca.pem()));
        let ctx = ServerContext::build(&cfg).unwrap();
        let name = ctx.server_name(None, None, ADDR);
        let (_, s) = hs(&ctx, &b, name).unwrap();
        assert_eq!(s.server_name(), Some("backend.test"));
        // A name the certificate does not have.
        cfg.sni = Some(SniSource::Fixed("wrong.test".into()));
        let ctx = ServerContext::build(&cfg).unwrap();
        let name = ctx.server_name(None, None, ADDR);
        let e = cert_error(hs(&ctx, &b, name));
        assert!(
            matches!(e, CertificateError::NotValidForNameContext { .. }),
            "{e:?}"
        );
        // verifyhost is checked instead of the SNI.
        cfg.verifyhost = Some("backend.test".into());
        let ctx = ServerContext::build(&cfg).unwrap();
        let name = ctx.server_name(None, None, ADDR);
        assert!(hs(&ctx, &b, name).is_ok());
        cfg.sni = Some(SniSource::Fixed("backend.test".into()));
        cfg.verifyhost = Some("other.test".into());
        let ctx = ServerContext::build(&cfg).unwrap();
        let name = ctx.server_name(None, None, ADDR);
        let e = cert_error(hs(&ctx, &b, name));
        assert!(
            matches!(e, CertificateError::NotValidForNameContext { .. }),
            "{e:?}"
        );
        // verifyhost without SNI.
        cfg.sni = None;
        let ctx = ServerContext::build(&cfg).unwrap();
        let name = ctx.server_name(None, None, ADDR);
        let e = cert_error(hs(&ctx, &b, name));
        assert!(
            matches!(e, CertificateError::NotValidForNameContext { .. }),
            "{e:?}"
        );
        // No name at all: the chain only.
        cfg.verifyhost = None;
        let ctx = ServerContext::build(&cfg).unwrap();
        let name = ctx.server_name(None, None, ADDR);
        let (_, s) = hs(&ctx, &b, name).unwrap();
        assert_eq!(s.server_name(), None);
        // Another CA: refused, with or without a name.
        cfg.ca_file = Some(d.write("other.pem", &other.pem()));
        for sni in [None, Some(SniSource::Fixed("backend.test".into()))] {
            cfg.sni = sni;
            let ctx = ServerContext::build(&cfg).unwrap();
            let name = ctx.server_name(None, None, ADDR);
            assert_eq!(
                cert_error(hs(&ctx, &b, name)),
                CertificateError::UnknownIssuer
            );
        }
    }

    #[test]
    fn verify_none_accepts_self_signed() {
        let d = TempDir::new("origin-none");
        let b = backend(&d, &leaf(&["self.test"], &RSA, None), None);
        let cfg = ServerTls {
            verify: Verify::None,
            sni: Some(SniSource::Fixed("unrelated.test".into())),
            ..ServerTls::default()
        };
        let ctx = ServerContext::build(&cfg).unwrap();
        assert!(hs(&ctx, &b, ctx.server_name(None, None, ADDR)).is_ok());
    }

    #[test]
    fn client_certificate_sent() {
        let d = TempDir::new("origin-crt");
        let servers = Ca::new("servers");
        let clients = Ca::new("clients");
        let me = leaf(&["fairlead.test"], &ECDSA, Some(&clients));
        let b = backend(
            &d,
            &leaf(&["backend.test"], &ECDSA, Some(&servers)),
            Some(&clients),
        );
        let mut cfg = ServerTls {
            verify: Verify::Required,
            ca_file: Some(d.write("servers.pem", &servers.pem())),
            ..ServerTls::default()
        };
        let ctx = ServerContext::build(&cfg).unwrap();
        assert!(matches!(
            hs(&ctx, &b, ctx.server_name(None, None, ADDR)),
            Err(Failed::Server(_))
        ));
        cfg.crt = Some(d.write("me.pem", &me.combined()));
        let ctx = ServerContext::build(&cfg).unwrap();
        let (_, s) = hs(&ctx, &b, ctx.server_name(None, None, ADDR)).unwrap();
        assert_eq!(s.peer_certificates().unwrap()[0], me.der);
    }

    #[test]
    fn reuse_and_alpn() {
        let d = TempDir::new("origin-reuse");
        let b = BindContext::build(&BindTls {
            crt: vec![d.write("b.pem", &leaf(&["backend.test"], &ECDSA, None).combined())],
            protocol: fairlead_config::TlsProtocol {
                alpn: vec!["http/1.1".into(), "h2".into()],
                ..Default::default()
            },
            ..BindTls::default()
        })
        .unwrap();
        let mut cfg = ServerTls {
            verify: Verify::None,
            sni: Some(SniSource::Fixed("backend.test".into())),
            ..ServerTls::default()
        };
        cfg.protocol.alpn = vec!["h2".into()];
        for no_reuse in [false, true] {
            cfg.no_reuse = no_reuse;
            let ctx = ServerContext::build(&cfg).unwrap();
            let name = || ctx.server_name(None, None, ADDR);
            let (c, _) = hs(&ctx, &b, name()).unwrap();
            assert_eq!(c.handshake_kind(), Some(HandshakeKind::Full));
            assert_eq!(c.alpn_protocol(), Some(&b"h2"[..]));
            let (c, _) = hs(&ctx, &b, name()).unwrap();
            let want = if no_reuse {
                HandshakeKind::Full
            } else {
                HandshakeKind::Resumed
            };
            assert_eq!(c.handshake_kind(), Some(want));
        }
    }
}
