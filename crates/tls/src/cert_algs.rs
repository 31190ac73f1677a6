//! A certificate's signature and key algorithms named as HAProxy sends
//! them in the PROXY v2 SSL sub-TLVs `PP2_SUBTYPE_SSL_SIG_ALG`
//! (`proxy-v2-options cert-sig`) and `PP2_SUBTYPE_SSL_KEY_ALG`
//! (`cert-key`), for the certificate the frontend presented.
//!
//! * The signature algorithm is OpenSSL's short name of the certificate's
//!   signature algorithm (`OBJ_nid2sn`): `RSA-SHA256`,
//!   `ecdsa-with-SHA384`, `ED25519`, `RSASSA-PSS`...; an algorithm OpenSSL
//!   does not know is `UNDEF`.
//! * The key algorithm is the key type and its size in bits: `RSA2048`,
//!   `EC256`, `DSA2048`; other key types (Ed25519) give none, and HAProxy
//!   then sends no sub-TLV.

use std::sync::Arc;
use x509_parser::prelude::X509Certificate;
use x509_parser::public_key::PublicKey;

/// The two names of one certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertAlgs {
    /// `PP2_SUBTYPE_SSL_SIG_ALG`.
    pub sig: Arc<str>,
    /// `PP2_SUBTYPE_SSL_KEY_ALG`; none for key types HAProxy does not name.
    pub key: Option<Arc<str>>,
}

/// Signature algorithm OIDs and OpenSSL's short names for them.
const SIG_NAMES: &[(&str, &str)] = &[
    ("1.2.840.113549.1.1.4", "RSA-MD5"),
    ("1.2.840.113549.1.1.5", "RSA-SHA1"),
    ("1.2.840.113549.1.1.10", "RSASSA-PSS"),
    ("1.2.840.113549.1.1.11", "RSA-SHA256"),
    ("1.2.840.113549.1.1.12", "RSA-SHA384"),
    ("1.2.840.113549.1.1.13", "RSA-SHA512"),
    ("1.2.840.113549.1.1.14", "RSA-SHA224"),
    ("1.2.840.10045.4.1", "ecdsa-with-SHA1"),
    ("1.2.840.10045.4.3.1", "ecdsa-with-SHA224"),
    ("1.2.840.10045.4.3.2", "ecdsa-with-SHA256"),
    ("1.2.840.10045.4.3.3", "ecdsa-with-SHA384"),
    ("1.2.840.10045.4.3.4", "ecdsa-with-SHA512"),
    ("1.2.840.10040.4.3", "DSA-SHA1"),
    ("2.16.840.1.101.3.4.3.1", "dsa_with_SHA224"),
    ("2.16.840.1.101.3.4.3.2", "dsa_with_SHA256"),
    ("1.3.101.112", "ED25519"),
    ("1.3.101.113", "ED448"),
];

/// Named curves and their order's size in bits (what OpenSSL's
/// `EVP_PKEY_bits` gives for an EC key).
const CURVE_BITS: &[(&str, usize)] = &[
    ("1.2.840.10045.3.1.7", 256),
    ("1.3.132.0.34", 384),
    ("1.3.132.0.35", 521),
    ("1.3.132.0.10", 256),
    ("1.2.840.10045.3.1.1", 192),
    ("1.3.132.0.33", 224),
];

/// The names for a parsed certificate.
pub fn of(cert: &X509Certificate<'_>) -> CertAlgs {
    let oid = cert.tbs_certificate.signature.algorithm.to_id_string();
    let sig = SIG_NAMES
        .iter()
        .find(|(o, _)| *o == oid)
        .map_or("UNDEF", |(_, n)| n);
    let spki = cert.public_key();
    let key = match spki.parsed() {
        Ok(PublicKey::RSA(rsa)) => Some(format!("RSA{}", rsa.key_size())),
        Ok(PublicKey::EC(point)) => {
            let curve = spki
                .algorithm
                .parameters
                .as_ref()
                .and_then(|p| p.as_oid().ok())
                .map(|o| o.to_id_string());
            let bits = curve
                .and_then(|c| CURVE_BITS.iter().find(|(o, _)| *o == c).map(|(_, b)| *b))
                .unwrap_or_else(|| point.key_size());
            Some(format!("EC{bits}"))
        }
        Ok(PublicKey::DSA(y)) => Some(format!("DSA{}", y.len() * 8)),
        _ => None,
    };
    CertAlgs {
        sig: sig.into(),
        key: key.map(Into::into),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolver::testutil::{key, ECDSA, RSA};
    use x509_parser::prelude::FromDer;

    fn algs(alg: &'static rcgen::SignatureAlgorithm) -> CertAlgs {
        let kp = key(alg);
        let params = rcgen::CertificateParams::new(vec!["a.example".to_string()]).unwrap();
        let cert = params.self_signed(&kp).unwrap();
        let (_, x) = X509Certificate::from_der(cert.der()).unwrap();
        of(&x)
    }

    #[test]
    fn rsa_and_ecdsa_names() {
        let rsa = algs(&RSA);
        assert_eq!(&*rsa.sig, "RSA-SHA256");
        assert_eq!(rsa.key.as_deref(), Some("RSA2048"));
        let ec = algs(&ECDSA);
        assert_eq!(&*ec.sig, "ecdsa-with-SHA256");
        assert_eq!(ec.key.as_deref(), Some("EC256"));
        let ec384 = algs(&rcgen::PKCS_ECDSA_P384_SHA384);
        assert_eq!(&*ec384.sig, "ecdsa-with-SHA384");
        assert_eq!(ec384.key.as_deref(), Some("EC384"));
        let ed = algs(&rcgen::PKCS_ED25519);
        assert_eq!(&*ed.sig, "ED25519");
        assert_eq!(ed.key, None);
    }
}
