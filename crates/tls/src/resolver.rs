//! Choosing the certificate for a ClientHello.
//!
//! 1. The SNI (case-insensitive, a trailing dot ignored) is looked up among
//!    the exact names of every certificate.
//! 2. Otherwise among the wildcards: `*.example.com` matches
//!    `a.example.com` but neither `example.com` nor `a.b.example.com`.
//! 3. Otherwise (or without SNI) the default certificate is used: the first
//!    one loaded, or with `strict-sni` none, which fails the handshake.
//!
//! A `crt-list` entry with a negative filter `!name` is skipped in steps 1
//! and 2 for that name.
//!
//! When several certificates match a step (the same name with an RSA and
//! an ECDSA key), the ECDSA one is chosen if the client can verify its
//! signatures (from the ClientHello's `signature_algorithms`, which rustls
//! has already reduced to those usable with the cipher suites both sides
//! have), else the first one the client can use, in load order. The
//! default certificate is grouped the same way with the certificates
//! loaded for exactly the same names.
//!
//! # Refused handshakes
//!
//! When no certificate applies (`strict-sni`), rustls aborts the handshake
//! with an `access_denied` alert and the error
//! `rustls::Error::General("no server certificate chain resolved")`;
//! [`is_no_certificate`] recognises it, and the connection's
//! `server_name()` gives the SNI that matched nothing (none if the client
//! sent none), for the log.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::SignatureScheme;

use crate::certs::{CertEntry, KeyType};

/// The error message rustls gives when the resolver returns no certificate.
const NO_CERT: &str = "no server certificate chain resolved";

/// Whether `err` is the handshake failure of a ClientHello for which no
/// certificate applies (`strict-sni` with an unknown or absent SNI).
pub fn is_no_certificate(err: &rustls::Error) -> bool {
    matches!(err, rustls::Error::General(m) if m == NO_CERT)
}

/// The certificates of one bind line, indexed by name.
#[derive(Debug)]
pub struct CertResolver {
    entries: Vec<CertEntry>,
    /// Exact name → entries, in load order.
    exact: HashMap<String, Vec<usize>>,
    /// `*.example.com` is under `example.com`.
    wildcard: HashMap<String, Vec<usize>>,
    /// The first entry and those loaded for the same names.
    default: Vec<usize>,
    strict_sni: bool,
}

impl CertResolver {
    /// Indexes `entries` (load order; the first is the default).
    pub fn new(entries: Vec<CertEntry>, strict_sni: bool) -> CertResolver {
        let mut exact: HashMap<String, Vec<usize>> = HashMap::new();
        let mut wildcard: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, e) in entries.iter().enumerate() {
            for n in &e.names {
                let (map, key) = match n.strip_prefix("*.") {
                    Some(rest) => (&mut wildcard, rest),
                    None => (&mut exact, n.as_str()),
                };
                let v = map.entry(key.to_string()).or_default();
                if !v.contains(&i) {
                    v.push(i);
                }
            }
        }
        let default = match entries.first() {
            Some(first) => (0..entries.len())
                .filter(|&i| entries[i].names == first.names)
                .collect(),
            None => Vec::new(),
        };
        CertResolver {
            entries,
            exact,
            wildcard,
            default,
            strict_sni,
        }
    }

    /// The number of certificates.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no certificate at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The certificate for a ClientHello with this SNI and these signature
    /// schemes; see the module docs.
    pub fn select(&self, sni: Option<&str>, schemes: &[SignatureScheme]) -> Option<&CertEntry> {
        if let Some(sni) = sni {
            let sni = sni.trim_end_matches('.');
            let sni = if sni.bytes().any(|b| b.is_ascii_uppercase()) {
                Cow::Owned(sni.to_ascii_lowercase())
            } else {
                Cow::Borrowed(sni)
            };
            if let Some(e) = self.find(&sni, schemes) {
                return Some(e);
            }
        }
        if self.strict_sni {
            return None;
        }
        self.choose(&self.default, None, schemes)
    }

    /// Steps 1 and 2 for a lower-case `sni`.
    fn find(&self, sni: &str, schemes: &[SignatureScheme]) -> Option<&CertEntry> {
        if let Some(e) = self
            .exact
            .get(sni)
            .and_then(|idx| self.choose(idx, Some(sni), schemes))
        {
            return Some(e);
        }
        let (label, parent) = sni.split_once('.')?;
        if label.is_empty() {
            return None;
        }
        self.wildcard
            .get(parent)
            .and_then(|idx| self.choose(idx, Some(sni), schemes))
    }

    /// Among the entries `idx` not excluding `sni`: the first ECDSA one the
    /// client can use, else the first one it can use, else the first one.
    fn choose(
        &self,
        idx: &[usize],
        sni: Option<&str>,
        schemes: &[SignatureScheme],
    ) -> Option<&CertEntry> {
        let mut first = None;
        let mut usable = None;
        for e in idx.iter().map(|&i| &self.entries[i]) {
            if sni.is_some_and(|n| e.excluded.iter().any(|x| x == n)) {
                continue;
            }
            first.get_or_insert(e);
            if e.cert.key.key.choose_scheme(schemes).is_some() {
                if e.cert.key_type == KeyType::Ecdsa {
                    return Some(e);
                }
                usable.get_or_insert(e);
            }
        }
        usable.or(first)
    }
}

impl ResolvesServerCert for CertResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        // For logs: rustls' unbuffered connection does not expose the SNI.
        crate::stream::note_sni(hello.server_name());
        let e = self.select(hello.server_name(), hello.signature_schemes())?;
        // For the PROXY v2 `cert-sig` / `cert-key` sub-TLVs.
        crate::stream::note_cert(&e.cert.algs);
        Some(e.cert.key.clone())
    }
}

/// Certificates, temporary files and in-memory handshakes for the tests of
/// every module.
#[cfg(test)]
pub(crate) mod testutil {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, OnceLock};

    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SignatureAlgorithm};
    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::crypto::CryptoProvider;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use rustls::{
        ClientConfig, ClientConnection, DigitallySignedStruct, ServerConfig, ServerConnection,
        SignatureScheme,
    };

    /// The two key kinds the tests use.
    pub use rcgen::{PKCS_ECDSA_P256_SHA256 as ECDSA, PKCS_RSA_SHA256 as RSA};

    /// A directory under the system's temporary directory, removed on drop.
    pub struct TempDir(pub PathBuf);

    impl TempDir {
        /// A fresh, empty directory; `tag` makes its name readable.
        pub fn new(tag: &str) -> TempDir {
            static N: AtomicUsize = AtomicUsize::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let p =
                std::env::temp_dir().join(format!("fairlead-tls-{}-{tag}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }

        /// The path of `name` in the directory.
        pub fn path(&self, name: &str) -> String {
            self.0.join(name).display().to_string()
        }

        /// Writes `name`; returns its path.
        pub fn write(&self, name: &str, contents: &str) -> String {
            let p = self.path(name);
            std::fs::write(&p, contents).unwrap();
            p
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A key pair for `alg`; RSA keys are generated once and reused (slow).
    pub fn key(alg: &'static SignatureAlgorithm) -> KeyPair {
        static RSA_PEM: OnceLock<String> = OnceLock::new();
        if alg == &RSA {
            let pem = RSA_PEM.get_or_init(|| KeyPair::generate_for(&RSA).unwrap().serialize_pem());
            KeyPair::from_pkcs8_pem_and_sign_algo(pem, &RSA).unwrap()
        } else {
            KeyPair::generate_for(alg).unwrap()
        }
    }

    /// A certificate authority.
    pub struct Ca {
        /// Its self-signed certificate.
        pub cert: rcgen::Certificate,
        /// Its ECDSA key.
        pub key: KeyPair,
    }

    impl Ca {
        /// A CA whose common name is `name`.
        pub fn new(name: &str) -> Ca {
            let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
            p.distinguished_name
                .push(rcgen::DnType::CommonName, name.to_string());
            p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            let key = key(&ECDSA);
            let cert = p.self_signed(&key).unwrap();
            Ca { cert, key }
        }

        /// Its certificate in PEM, as in a `ca-file`.
        pub fn pem(&self) -> String {
            self.cert.pem()
        }
    }

    /// A leaf certificate and its key.
    pub struct Leaf {
        /// The certificate in PEM.
        pub cert_pem: String,
        /// The key in PEM (PKCS#8).
        pub key_pem: String,
        /// The certificate in DER, to compare with what a peer presented.
        pub der: CertificateDer<'static>,
    }

    impl Leaf {
        /// Certificate then key, as in a HAProxy `crt` file.
        pub fn combined(&self) -> String {
            format!("{}{}", self.cert_pem, self.key_pem)
        }
    }

    /// A leaf for `names` (SANs), self-signed when `issuer` is none.
    pub fn leaf(names: &[&str], alg: &'static SignatureAlgorithm, issuer: Option<&Ca>) -> Leaf {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        leaf_with(params(&names), alg, issuer)
    }

    /// Parameters for `names` (SANs) without rcgen's default common name.
    pub fn params(names: &[String]) -> CertificateParams {
        let mut p = CertificateParams::new(names.to_vec()).unwrap();
        p.distinguished_name = rcgen::DistinguishedName::new();
        p
    }

    /// A leaf from `params`.
    pub fn leaf_with(
        params: CertificateParams,
        alg: &'static SignatureAlgorithm,
        issuer: Option<&Ca>,
    ) -> Leaf {
        let key = key(alg);
        let cert = match issuer {
            Some(ca) => params.signed_by(&key, &ca.cert, &ca.key).unwrap(),
            None => params.self_signed(&key).unwrap(),
        };
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            der: cert.der().clone(),
        }
    }

    /// The aws-lc-rs provider.
    pub fn provider() -> Arc<CryptoProvider> {
        Arc::new(rustls::crypto::aws_lc_rs::default_provider())
    }

    /// A client-side verifier that accepts any certificate and offers only
    /// `schemes` (all of the provider's when empty).
    #[derive(Debug)]
    pub struct AnyCert {
        /// For the signature checks.
        pub provider: Arc<CryptoProvider>,
        /// The schemes offered in `signature_algorithms`.
        pub schemes: Vec<SignatureScheme>,
    }

    impl AnyCert {
        /// A verifier offering `schemes` (all when empty).
        pub fn new(schemes: &[SignatureScheme]) -> Arc<AnyCert> {
            Arc::new(AnyCert {
                provider: provider(),
                schemes: schemes.to_vec(),
            })
        }
    }

    impl ServerCertVerifier for AnyCert {
        fn verify_server_cert(
            &self,
            _: &CertificateDer<'_>,
            _: &[CertificateDer<'_>],
            _: &ServerName<'_>,
            _: &[u8],
            _: UnixTime,
        ) -> Result<ServerCertVerified, rustls::Error> {
            Ok(ServerCertVerified::assertion())
        }

        fn verify_tls12_signature(
            &self,
            m: &[u8],
            c: &CertificateDer<'_>,
            d: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            let algs = &self.provider.signature_verification_algorithms;
            rustls::crypto::verify_tls12_signature(m, c, d, algs)
        }

        fn verify_tls13_signature(
            &self,
            m: &[u8],
            c: &CertificateDer<'_>,
            d: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            let algs = &self.provider.signature_verification_algorithms;
            rustls::crypto::verify_tls13_signature(m, c, d, algs)
        }

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            if self.schemes.is_empty() {
                let algs = &self.provider.signature_verification_algorithms;
                algs.supported_schemes()
            } else {
                self.schemes.clone()
            }
        }
    }

    /// A client configuration trusting anything, for `versions`.
    pub fn any_client(
        schemes: &[SignatureScheme],
        versions: &[&'static rustls::SupportedProtocolVersion],
    ) -> ClientConfig {
        ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(versions)
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(AnyCert::new(schemes))
            .with_no_client_auth()
    }

    /// Which side of an in-memory handshake failed.
    #[derive(Debug)]
    pub enum Failed {
        /// The client refused the server.
        Client(rustls::Error),
        /// The server refused the client.
        Server(rustls::Error),
    }

    /// Moves records between `c` and `s` until neither has anything to
    /// send (handshake done, TLS 1.3 tickets delivered) or one fails.
    pub fn drive(c: &mut ClientConnection, s: &mut ServerConnection) -> Result<(), Failed> {
        for _ in 0..64 {
            let mut moved = false;
            while c.wants_write() {
                let mut buf = Vec::new();
                c.write_tls(&mut buf).unwrap();
                moved = true;
                let mut rd = &buf[..];
                while !rd.is_empty() {
                    s.read_tls(&mut rd).unwrap();
                    s.process_new_packets().map_err(Failed::Server)?;
                }
            }
            while s.wants_write() {
                let mut buf = Vec::new();
                s.write_tls(&mut buf).unwrap();
                moved = true;
                let mut rd = &buf[..];
                while !rd.is_empty() {
                    c.read_tls(&mut rd).unwrap();
                    c.process_new_packets().map_err(Failed::Client)?;
                }
            }
            if !moved {
                assert!(
                    !c.is_handshaking() && !s.is_handshaking(),
                    "handshake stalled"
                );
                return Ok(());
            }
        }
        panic!("handshake did not finish");
    }

    /// A handshake of `client` (sending `name` as SNI when it is a DNS
    /// name) with `server`.
    pub fn connect(
        client: Arc<ClientConfig>,
        server: Arc<ServerConfig>,
        name: &str,
    ) -> Result<(ClientConnection, ServerConnection), Failed> {
        let name = ServerName::try_from(name.to_string()).unwrap();
        let mut c = ClientConnection::new(client, name).unwrap();
        let mut s = ServerConnection::new(server).unwrap();
        drive(&mut c, &mut s)?;
        Ok((c, s))
    }

    /// The leaf certificate the server presented.
    pub fn served(c: &ClientConnection) -> CertificateDer<'static> {
        c.peer_certificates().unwrap()[0].clone().into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;
    use crate::certs::{load_pem, now_secs};
    use rustls::ServerConfig;

    /// Loads `l` through a file, as a bind line would.
    fn entry(d: &TempDir, file: &str, l: &Leaf) -> CertEntry {
        let f = d.write(file, &l.combined());
        CertEntry::from_cert(load_pem(&f, &provider(), now_secs(), &mut Vec::new()).unwrap())
    }

    fn server(entries: Vec<CertEntry>, strict: bool) -> Arc<ServerConfig> {
        let cfg = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(CertResolver::new(entries, strict)));
        Arc::new(cfg)
    }

    fn client() -> Arc<rustls::ClientConfig> {
        Arc::new(any_client(&[], rustls::DEFAULT_VERSIONS))
    }

    #[test]
    fn sni_exact_wildcard_default() {
        let d = TempDir::new("sni");
        let def = leaf(&["default.test"], &ECDSA, None);
        let www = leaf(&["www.example.com"], &ECDSA, None);
        let wild = leaf(&["*.example.com"], &ECDSA, None);
        let s = server(
            vec![
                entry(&d, "0.pem", &def),
                entry(&d, "1.pem", &wild),
                entry(&d, "2.pem", &www),
            ],
            false,
        );
        let served = |name: &str| served(&connect(client(), s.clone(), name).unwrap().0);
        // Exact beats wildcard, whatever the order; case does not matter.
        assert_eq!(served("www.example.com"), www.der);
        assert_eq!(served("WWW.Example.COM"), www.der);
        assert_eq!(served("api.example.com"), wild.der);
        // A wildcard covers exactly one label.
        assert_eq!(served("a.b.example.com"), def.der);
        assert_eq!(served("example.com"), def.der);
        assert_eq!(served("other.test"), def.der);
        // No SNI (an IP address is not sent).
        assert_eq!(served("127.0.0.1"), def.der);
    }

    #[test]
    fn strict_sni_refuses_unknown_and_absent() {
        let d = TempDir::new("strict");
        let a = leaf(&["a.test"], &ECDSA, None);
        let s = server(vec![entry(&d, "a.pem", &a)], true);
        assert_eq!(
            served(&connect(client(), s.clone(), "a.test").unwrap().0),
            a.der
        );
        for name in ["b.test", "127.0.0.1"] {
            match connect(client(), s.clone(), name) {
                Err(Failed::Server(e)) => assert!(is_no_certificate(&e), "{e:?}"),
                other => panic!("{name}: {:?}", other.map(|_| ())),
            }
        }
    }

    #[test]
    fn negative_filter_excludes_a_name() {
        let d = TempDir::new("negative");
        let def = leaf(&["default.test"], &ECDSA, None);
        let wild = leaf(&["*.example.com"], &ECDSA, None);
        let mut w = entry(&d, "w.pem", &wild);
        w.excluded = vec!["secure.example.com".into()];
        let s = server(vec![entry(&d, "d.pem", &def), w], false);
        let served = |name: &str| served(&connect(client(), s.clone(), name).unwrap().0);
        assert_eq!(served("www.example.com"), wild.der);
        assert_eq!(served("secure.example.com"), def.der);
    }

    #[test]
    fn rsa_or_ecdsa_by_client_schemes() {
        let d = TempDir::new("keytype");
        let rsa = leaf(&["both.test"], &RSA, None);
        let ec = leaf(&["both.test"], &ECDSA, None);
        // RSA loaded first: ECDSA still preferred when usable.
        let s = server(
            vec![entry(&d, "rsa.pem", &rsa), entry(&d, "ec.pem", &ec)],
            false,
        );
        let rsa_only = [
            SignatureScheme::RSA_PSS_SHA256,
            SignatureScheme::RSA_PKCS1_SHA256,
        ];
        let ec_only = [SignatureScheme::ECDSA_NISTP256_SHA256];
        for versions in [&[&rustls::version::TLS12], &[&rustls::version::TLS13]] {
            let c = |schemes: &[SignatureScheme]| Arc::new(any_client(schemes, versions));
            for name in ["both.test", "127.0.0.1"] {
                let got = |schemes: &[SignatureScheme]| {
                    served(&connect(c(schemes), s.clone(), name).unwrap().0)
                };
                assert_eq!(got(&rsa_only), rsa.der, "{name}");
                assert_eq!(got(&ec_only), ec.der, "{name}");
                assert_eq!(got(&[]), ec.der, "{name}");
            }
        }
    }

    #[test]
    fn error_recognised() {
        assert!(is_no_certificate(&rustls::Error::General(NO_CERT.into())));
        assert!(!is_no_certificate(&rustls::Error::DecryptError));
    }
}
