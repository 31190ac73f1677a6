//! A listener's server-side TLS context: [`BindContext`].
//!
//! The rustls `ServerConfig` is built once and shared (through an `Arc`) by
//! every worker thread; [`BindContext::reload`] builds a new one from the
//! files and swaps it in for new handshakes, while handshakes in progress
//! finish with the old one.
//!
//! # Resumption
//!
//! - TLS 1.3 and 1.2 session tickets are encrypted with aws-lc-rs'
//!   rotating ticketer (a new key every few hours, the previous one still
//!   accepted), unless `no-tls-tickets`. Without tickets, TLS 1.3 still
//!   resumes through stateful tickets kept in the session cache, as
//!   OpenSSL does with `SSL_OP_NO_TICKET`.
//! - TLS 1.2 session IDs are kept in an in-memory cache of 20000 sessions
//!   (HAProxy's `tune.ssl.cachesize` default).
//! - Two TLS 1.3 tickets are sent after each full handshake (OpenSSL's and
//!   rustls' default), so a client opening two connections at once can
//!   resume both; a ticket costs one small AEAD encryption.
//!
//! The ticketer and the cache are created once per `BindContext` and given
//! to every configuration [`BindContext::reload`] builds, so sessions
//! survive a certificate reload; since one `ServerConfig` serves every
//! thread, a ticket issued on one thread is accepted on all. The client
//! authentication requirements stay those of the same bind line across a
//! reload (only the CA file's contents may change), which is what rustls
//! asks of configurations sharing resumption state.
//!
//! Early data (0-RTT) is refused: `max_early_data_size` is 0.
//!
//! # Client certificates
//!
//! `verify optional` asks for a client certificate and verifies the one
//! presented against `ca-file`, but accepts clients without one;
//! `verify required` refuses those. `verify none` (the default) asks for
//! none, even with a `ca-file`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use fairlead_config::{BindTls, Verify};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::{
    NoServerSessionStorage, ProducesTickets, ServerSessionMemoryCache, StoresServerSessions,
    WebPkiClientVerifier,
};
use rustls::{RootCertStore, ServerConfig};

use crate::certs::load_bind_certs;
use crate::resolver::CertResolver;
use crate::suites;
use crate::TlsError;

/// TLS 1.2 sessions kept for resumption by session ID.
const SESSION_CACHE: usize = 20_000;
/// TLS 1.3 tickets sent after a full handshake.
const TLS13_TICKETS: usize = 2;

/// A listener's TLS state: its current server configuration and what
/// outlives reloads.
pub struct BindContext {
    cfg: BindTls,
    current: ArcSwap<ServerConfig>,
    warnings: Vec<String>,
    count: AtomicUsize,
    /// Shared by every configuration built, so tickets survive reloads.
    ticketer: Option<Arc<dyn ProducesTickets>>,
    /// Shared by every configuration built, so sessions survive reloads.
    sessions: Arc<dyn StoresServerSessions>,
    /// The certificates of the current configuration (`show ssl cert`).
    certs: ArcSwap<Vec<Arc<crate::certs::LoadedCert>>>,
}

impl std::fmt::Debug for BindContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BindContext")
            .field("crt", &self.cfg.crt)
            .field("crt_list", &self.cfg.crt_list)
            .field("certificates", &self.cert_count())
            .finish_non_exhaustive()
    }
}

/// Reads the CA certificates of `file`.
pub(crate) fn load_roots(file: &str) -> Result<RootCertStore, TlsError> {
    let bad = |m: String| TlsError::new(Some(file), m);
    let bytes = std::fs::read(file).map_err(|e| bad(format!("cannot read: {e}")))?;
    let mut roots = RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(&bytes) {
        let c = c.map_err(|e| bad(format!("invalid PEM: {e}")))?;
        roots
            .add(c)
            .map_err(|e| bad(format!("unusable CA certificate: {e}")))?;
    }
    if roots.is_empty() {
        return Err(bad("no CA certificate found in the file".into()));
    }
    Ok(roots)
}

/// The client certificate verifier for `cfg`.
fn client_verifier(
    cfg: &BindTls,
    provider: &Arc<rustls::crypto::CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let optional = match cfg.verify {
        Verify::None => return Ok(WebPkiClientVerifier::no_client_auth()),
        Verify::Optional => true,
        Verify::Required => false,
    };
    let Some(ca) = &cfg.ca_file else {
        let v = if optional { "optional" } else { "required" };
        return Err(TlsError::new(None, format!("verify {v} needs 'ca-file'")));
    };
    let roots = Arc::new(load_roots(ca)?);
    let mut b = WebPkiClientVerifier::builder_with_provider(roots, provider.clone());
    if optional {
        b = b.allow_unauthenticated();
    }
    b.build()
        .map_err(|e| TlsError::new(Some(ca), format!("cannot verify clients with it: {e}")))
}

impl BindContext {
    /// Loads every file and builds the server configuration.
    pub fn build(cfg: &BindTls) -> Result<BindContext, TlsError> {
        BindContext::build_with_session_cache(cfg, SESSION_CACHE)
    }

    /// [`BindContext::build`] with a session cache of `entries` sessions
    /// (`tune.ssl.cachesize`) instead of 20000; 0 disables the cache.
    pub fn build_with_session_cache(
        cfg: &BindTls,
        entries: usize,
    ) -> Result<BindContext, TlsError> {
        let ticketer = if cfg.protocol.no_tickets {
            None
        } else {
            let t = rustls::crypto::aws_lc_rs::Ticketer::new()
                .map_err(|e| TlsError::new(None, format!("cannot create a ticket key: {e}")))?;
            Some(t)
        };
        let sessions: Arc<dyn StoresServerSessions> = if entries == 0 {
            Arc::new(NoServerSessionStorage {})
        } else {
            ServerSessionMemoryCache::new(entries)
        };
        let (config, certs, warnings) = make(cfg, &ticketer, &sessions)?;
        Ok(BindContext {
            cfg: cfg.clone(),
            current: ArcSwap::new(config),
            warnings,
            count: AtomicUsize::new(certs.len()),
            ticketer,
            sessions,
            certs: ArcSwap::from_pointee(certs),
        })
    }

    /// Warnings found while loading (ignored crt-list options, not-yet-valid
    /// certificates, cipher strings reduced...), from [`BindContext::build`].
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The current configuration for new handshakes (cheap; ArcSwap load).
    pub fn config(&self) -> Arc<ServerConfig> {
        self.current.load_full()
    }

    /// Re-reads the files and swaps the configuration used by new
    /// handshakes; on error the old one stays. Returns the number of
    /// certificates loaded.
    pub fn reload(&self) -> Result<usize, TlsError> {
        self.reload_with_warnings().map(|(n, _)| n)
    }

    /// [`BindContext::reload`], also returning the warnings of this load.
    pub fn reload_with_warnings(&self) -> Result<(usize, Vec<String>), TlsError> {
        let (config, certs, warnings) = make(&self.cfg, &self.ticketer, &self.sessions)?;
        let count = certs.len();
        self.current.store(config);
        self.certs.store(Arc::new(certs));
        self.count.store(count, Ordering::Relaxed);
        Ok((count, warnings))
    }

    /// Number of certificates loaded (for logs).
    pub fn cert_count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// The certificates new handshakes use, described for `show ssl
    /// cert`, in load order.
    pub fn certificates(&self) -> Vec<crate::certs::CertDetails> {
        self.certs.load().iter().map(|c| c.details()).collect()
    }
}

/// What [`make`] builds: the configuration, its certificates, warnings.
type Built = (
    Arc<ServerConfig>,
    Vec<Arc<crate::certs::LoadedCert>>,
    Vec<String>,
);

/// Builds a configuration for `cfg` from the files, with a context's
/// ticketer and session cache.
fn make(
    cfg: &BindTls,
    ticketer: &Option<Arc<dyn ProducesTickets>>,
    sessions: &Arc<dyn StoresServerSessions>,
) -> Result<Built, TlsError> {
    let mut warnings = Vec::new();
    let s = suites::resolve(&cfg.protocol, &mut warnings)?;
    if cfg.ca_file.is_some() && cfg.verify == Verify::None {
        warnings
            .push("'ca-file' is set with 'verify none': no client certificate is asked for".into());
    }
    let verifier = client_verifier(cfg, &s.provider)?;
    let entries = load_bind_certs(cfg, &s.provider, &mut warnings)?;
    let mut certs: Vec<Arc<crate::certs::LoadedCert>> = Vec::new();
    for e in &entries {
        if !certs.iter().any(|c| Arc::ptr_eq(c, &e.cert)) {
            certs.push(e.cert.clone());
        }
    }
    let resolver = CertResolver::new(entries, cfg.strict_sni);
    let mut sc = ServerConfig::builder_with_provider(s.provider.clone())
        .with_protocol_versions(&s.versions)
        .map_err(|e| TlsError::new(None, format!("TLS settings: {e}")))?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(Arc::new(resolver));
    sc.alpn_protocols = cfg
        .protocol
        .alpn
        .iter()
        .map(|p| p.as_bytes().to_vec())
        .collect();
    // The configured suite order is the server's preference, as with
    // HAProxy's default (no `prefer-client-ciphers`).
    sc.ignore_client_order = true;
    sc.session_storage = sessions.clone();
    if let Some(t) = ticketer {
        sc.ticketer = t.clone();
    }
    sc.send_tls13_tickets = TLS13_TICKETS;
    sc.max_early_data_size = 0;
    Ok((Arc::new(sc), certs, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolver::testutil::*;
    use fairlead_config::{TlsProtocol, TlsVersion};
    use rustls::pki_types::PrivateKeyDer;
    use rustls::{ClientConfig, HandshakeKind, ProtocolVersion};

    const TLS12: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS12];
    const TLS13: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS13];

    fn one_cert(d: &TempDir, names: &[&str]) -> (BindTls, Leaf) {
        let l = leaf(names, &ECDSA, None);
        let cfg = BindTls {
            crt: vec![d.write("site.pem", &l.combined())],
            ..BindTls::default()
        };
        (cfg, l)
    }

    fn client(versions: &[&'static rustls::SupportedProtocolVersion]) -> Arc<ClientConfig> {
        Arc::new(any_client(&[], versions))
    }

    #[test]
    fn crt_and_crt_list_together() {
        let d = TempDir::new("bind-sni");
        let first = leaf(&["first.test"], &ECDSA, None);
        let wild = leaf(&["unused.test"], &ECDSA, None);
        let other = leaf(&["other.test"], &RSA, None);
        d.write("w.pem", &wild.combined());
        d.write("o.pem", &other.combined());
        let cfg = BindTls {
            crt: vec![d.write("first.pem", &first.combined())],
            crt_list: vec![d.write(
                "list",
                "w.pem *.example.com !secure.example.com\no.pem [alpn h2]\n",
            )],
            crt_base: Some(d.0.display().to_string()),
            ..BindTls::default()
        };
        let ctx = BindContext::build(&cfg).unwrap();
        assert_eq!(ctx.cert_count(), 3);
        assert_eq!(ctx.warnings().len(), 1, "{:?}", ctx.warnings());
        let served = |name: &str| served(&connect(client(TLS13), ctx.config(), name).unwrap().0);
        assert_eq!(served("a.example.com"), wild.der);
        assert_eq!(served("unused.test"), first.der);
        assert_eq!(served("secure.example.com"), first.der);
        assert_eq!(served("other.test"), other.der);
        assert_eq!(served("127.0.0.1"), first.der);
    }

    #[test]
    fn load_errors_name_the_file() {
        let d = TempDir::new("bind-err");
        let good = d.write("good.pem", &leaf(&["a.test"], &ECDSA, None).combined());
        let bad = d.write("bad.pem", "not a certificate");
        let cfg = BindTls {
            crt: vec![good, bad.clone()],
            ..BindTls::default()
        };
        let e = BindContext::build(&cfg).unwrap_err();
        assert_eq!(e.file.as_deref(), Some(bad.as_str()));
        let e = BindContext::build(&BindTls::default()).unwrap_err();
        assert!(e.message.starts_with("no certificate loaded"), "{e}");
    }

    #[test]
    fn alpn_negotiated() {
        let d = TempDir::new("alpn");
        let (mut cfg, _) = one_cert(&d, &["a.test"]);
        cfg.protocol.alpn = vec!["h2".into(), "http/1.1".into()];
        let ctx = BindContext::build(&cfg).unwrap();
        let mut c = any_client(&[], rustls::DEFAULT_VERSIONS);
        c.alpn_protocols = vec![b"http/1.1".to_vec()];
        let (c, s) = connect(Arc::new(c), ctx.config(), "a.test").unwrap();
        assert_eq!(c.alpn_protocol(), Some(&b"http/1.1"[..]));
        assert_eq!(s.alpn_protocol(), Some(&b"http/1.1"[..]));
        let mut c = any_client(&[], rustls::DEFAULT_VERSIONS);
        c.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let (c, _) = connect(Arc::new(c), ctx.config(), "a.test").unwrap();
        assert_eq!(c.alpn_protocol(), Some(&b"h2"[..]));
    }

    #[test]
    fn protocol_versions() {
        let d = TempDir::new("versions");
        let (mut cfg, _) = one_cert(&d, &["a.test"]);
        cfg.protocol.min_ver = Some(TlsVersion::Tls13);
        let ctx = BindContext::build(&cfg).unwrap();
        assert!(matches!(
            connect(client(TLS12), ctx.config(), "a.test"),
            Err(Failed::Server(_))
        ));
        let (c, _) = connect(client(rustls::ALL_VERSIONS), ctx.config(), "a.test").unwrap();
        assert_eq!(c.protocol_version(), Some(ProtocolVersion::TLSv1_3));
        cfg.protocol.min_ver = None;
        cfg.protocol.max_ver = Some(TlsVersion::Tls12);
        let ctx = BindContext::build(&cfg).unwrap();
        let (c, _) = connect(client(rustls::ALL_VERSIONS), ctx.config(), "a.test").unwrap();
        assert_eq!(c.protocol_version(), Some(ProtocolVersion::TLSv1_2));
        cfg.protocol.max_ver = Some(TlsVersion::Tls11);
        let e = BindContext::build(&cfg).unwrap_err();
        assert_eq!(
            e.message,
            "ssl-max-ver TLSv1.1: Fairlead supports TLS 1.2 and 1.3 only"
        );
    }

    #[test]
    fn cipher_order_is_the_servers() {
        let d = TempDir::new("ciphers");
        let (mut cfg, _) = one_cert(&d, &["a.test"]);
        cfg.protocol = TlsProtocol {
            max_ver: Some(TlsVersion::Tls12),
            ciphers: Some("ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256".into()),
            ..TlsProtocol::default()
        };
        let ctx = BindContext::build(&cfg).unwrap();
        assert!(ctx.warnings().is_empty());
        let (c, _) = connect(client(TLS12), ctx.config(), "a.test").unwrap();
        let suite = c.negotiated_cipher_suite().unwrap().suite();
        assert_eq!(
            suite,
            rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
        );
        cfg.protocol.ciphers = Some("HIGH:!aNULL".into());
        cfg.protocol.ciphersuites = Some("TLS_AES_256_GCM_SHA384".into());
        cfg.protocol.max_ver = None;
        let ctx = BindContext::build(&cfg).unwrap();
        assert_eq!(ctx.warnings().len(), 1);
        assert!(ctx.warnings()[0].starts_with("ciphers 'HIGH:!aNULL'"));
        let (c, _) = connect(client(TLS13), ctx.config(), "a.test").unwrap();
        let suite = c.negotiated_cipher_suite().unwrap().suite();
        assert_eq!(suite, rustls::CipherSuite::TLS13_AES_256_GCM_SHA384);
    }

    /// A client presenting `leaf` (none when `None`).
    fn client_with_cert(
        leaf: Option<&Leaf>,
        versions: &[&'static rustls::SupportedProtocolVersion],
    ) -> Arc<ClientConfig> {
        let b = ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(versions)
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(AnyCert::new(&[]));
        Arc::new(match leaf {
            Some(l) => {
                let key = PrivateKeyDer::from_pem_slice(l.key_pem.as_bytes()).unwrap();
                b.with_client_auth_cert(vec![l.der.clone()], key).unwrap()
            }
            None => b.with_no_client_auth(),
        })
    }

    #[test]
    fn client_certificates() {
        let d = TempDir::new("clientauth");
        let ca = Ca::new("clients");
        let good = leaf(&["client.test"], &ECDSA, Some(&ca));
        let bad = leaf(&["client.test"], &ECDSA, None);
        let (mut cfg, _) = one_cert(&d, &["a.test"]);
        cfg.verify = Verify::Optional;
        let e = BindContext::build(&cfg).unwrap_err();
        assert_eq!(e.message, "verify optional needs 'ca-file'");
        cfg.ca_file = Some(d.write("ca.pem", &ca.pem()));
        for versions in [TLS12, TLS13] {
            let ctx = BindContext::build(&cfg).unwrap();
            let hs =
                |l: Option<&Leaf>| connect(client_with_cert(l, versions), ctx.config(), "a.test");
            let (_, s) = hs(None).unwrap();
            assert!(s.peer_certificates().is_none());
            let (_, s) = hs(Some(&good)).unwrap();
            assert_eq!(s.peer_certificates().unwrap()[0], good.der);
            assert!(hs(Some(&bad)).is_err());
        }
        cfg.verify = Verify::Required;
        for versions in [TLS12, TLS13] {
            let ctx = BindContext::build(&cfg).unwrap();
            let hs =
                |l: Option<&Leaf>| connect(client_with_cert(l, versions), ctx.config(), "a.test");
            assert!(matches!(hs(None), Err(Failed::Server(_))));
            assert!(hs(Some(&bad)).is_err());
            assert!(hs(Some(&good)).is_ok());
        }
        // verify none: nothing asked, even with a CA file.
        cfg.verify = Verify::None;
        let ctx = BindContext::build(&cfg).unwrap();
        let (_, s) = connect(client_with_cert(Some(&good), TLS13), ctx.config(), "a.test").unwrap();
        assert!(s.peer_certificates().is_none());
        assert_eq!(ctx.warnings().len(), 1);
    }

    /// Full handshake, reload, then a resumed one, for every way of
    /// resuming.
    #[test]
    fn sessions_survive_reload() {
        let d = TempDir::new("resume");
        let (mut cfg, _) = one_cert(&d, &["a.test"]);
        for no_tickets in [false, true] {
            cfg.protocol.no_tickets = no_tickets;
            for versions in [TLS12, TLS13] {
                let ctx = BindContext::build(&cfg).unwrap();
                let mut c = any_client(&[], versions);
                c.resumption = rustls::client::Resumption::in_memory_sessions(8);
                let c = Arc::new(c);
                let (first, _) = connect(c.clone(), ctx.config(), "a.test").unwrap();
                assert_eq!(first.handshake_kind(), Some(HandshakeKind::Full));
                let before = ctx.config();
                assert_eq!(ctx.reload().unwrap(), 1);
                assert!(!Arc::ptr_eq(&before, &ctx.config()));
                let (second, _) = connect(c.clone(), ctx.config(), "a.test").unwrap();
                assert_eq!(
                    second.handshake_kind(),
                    Some(HandshakeKind::Resumed),
                    "no_tickets {no_tickets} {versions:?}"
                );
            }
        }
    }

    #[test]
    fn reload_swaps_or_keeps() {
        let d = TempDir::new("reload");
        let (cfg, first) = one_cert(&d, &["a.test"]);
        let ctx = BindContext::build(&cfg).unwrap();
        let old = ctx.config();
        std::fs::write(&cfg.crt[0], "garbage").unwrap();
        let e = ctx.reload().unwrap_err();
        assert_eq!(e.file.as_deref(), Some(cfg.crt[0].as_str()));
        assert!(Arc::ptr_eq(&old, &ctx.config()));
        let served = || served(&connect(client(TLS13), ctx.config(), "a.test").unwrap().0);
        assert_eq!(served(), first.der);
        let second = leaf(&["a.test"], &ECDSA, None);
        std::fs::write(&cfg.crt[0], second.combined()).unwrap();
        let (n, w) = ctx.reload_with_warnings().unwrap();
        assert_eq!((n, w.len()), (1, 0));
        assert_eq!(served(), second.der);
    }
}
