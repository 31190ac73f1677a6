//! Protocol versions and cipher suites from `ssl-min-ver`, `ssl-max-ver`,
//! `ciphers` and `ciphersuites`.
//!
//! Fairlead speaks TLS 1.2 and 1.3 only, with rustls' suites: ECDHE key
//! exchange with AES-GCM or ChaCha20-Poly1305, which is the Mozilla
//! "intermediate" profile without its CBC and DHE leftovers. Nothing weaker
//! can be enabled.
//!
//! # Cipher strings
//!
//! `ciphers` is read as a list of OpenSSL suite names separated by `:`
//! (or `,` or spaces), e.g. `ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305`;
//! IANA names (`TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256`) are accepted too.
//! The suites named are enabled in that order (the server's preference, as
//! HAProxy's default). Names of suites rustls does not have (CBC, DHE,
//! static RSA...) are dropped with a warning. OpenSSL's keywords and
//! operators (`HIGH`, `DEFAULT`, `+X`, `@STRENGTH`) are not interpreted,
//! except that `!name` / `-name` remove a named suite. When no suite name
//! remains, the default list is used and a warning names the string.
//! `ciphersuites` works the same for TLS 1.3 (`TLS_AES_128_GCM_SHA256`,
//! `TLS_AES_256_GCM_SHA384`, `TLS_CHACHA20_POLY1305_SHA256`).

use std::sync::Arc;

use fairlead_config::{TlsProtocol, TlsVersion};
use rustls::crypto::aws_lc_rs::cipher_suite as cs;
use rustls::crypto::CryptoProvider;
use rustls::{SupportedCipherSuite, SupportedProtocolVersion};

use crate::TlsError;

/// TLS 1.2 suites by OpenSSL name, and the default order (Mozilla
/// intermediate's).
const TLS12: &[(&str, SupportedCipherSuite)] = &[
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

/// TLS 1.3 suites, in the default order (Mozilla intermediate's).
const TLS13: &[(&str, SupportedCipherSuite)] = &[
    ("TLS_AES_128_GCM_SHA256", cs::TLS13_AES_128_GCM_SHA256),
    ("TLS_AES_256_GCM_SHA384", cs::TLS13_AES_256_GCM_SHA384),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        cs::TLS13_CHACHA20_POLY1305_SHA256,
    ),
];

/// What a [`TlsProtocol`] resolves to.
#[derive(Debug, Clone)]
pub struct Suites {
    /// The aws-lc-rs provider with the chosen suites, in preference order.
    pub provider: Arc<CryptoProvider>,
    /// The enabled protocol versions (TLS 1.2 and/or 1.3).
    pub versions: Vec<&'static SupportedProtocolVersion>,
}

/// The spelling of `v` in the configuration.
pub fn version_name(v: TlsVersion) -> &'static str {
    match v {
        TlsVersion::Ssl3 => "SSLv3",
        TlsVersion::Tls10 => "TLSv1.0",
        TlsVersion::Tls11 => "TLSv1.1",
        TlsVersion::Tls12 => "TLSv1.2",
        TlsVersion::Tls13 => "TLSv1.3",
    }
}

/// The enabled versions for `ssl-min-ver` / `ssl-max-ver`. A minimum below
/// TLS 1.2 is raised to TLS 1.2 with a warning; a maximum below it is an
/// error.
pub fn versions(
    p: &TlsProtocol,
    warnings: &mut Vec<String>,
) -> Result<Vec<&'static SupportedProtocolVersion>, TlsError> {
    let max = p.max_ver.unwrap_or(TlsVersion::Tls13);
    if max < TlsVersion::Tls12 {
        return Err(TlsError::new(
            None,
            format!(
                "ssl-max-ver {}: Fairlead supports TLS 1.2 and 1.3 only",
                version_name(max)
            ),
        ));
    }
    let mut min = p.min_ver.unwrap_or(TlsVersion::Tls12);
    if min < TlsVersion::Tls12 {
        warnings.push(format!(
            "ssl-min-ver {}: Fairlead supports TLS 1.2 and 1.3 only; using TLSv1.2",
            version_name(min)
        ));
        min = TlsVersion::Tls12;
    }
    if min > max {
        return Err(TlsError::new(
            None,
            format!(
                "ssl-min-ver {} is above ssl-max-ver {}",
                version_name(min),
                version_name(max)
            ),
        ));
    }
    let mut out = Vec::new();
    if min <= TlsVersion::Tls12 {
        out.push(&rustls::version::TLS12);
    }
    if max >= TlsVersion::Tls13 {
        out.push(&rustls::version::TLS13);
    }
    Ok(out)
}

/// OpenSSL's name of a suite, as HAProxy logs it (`%sslc`), from the
/// same tables `ciphers`/`ciphersuites` are read with; the IANA name for
/// a suite they lack.
pub fn openssl_name(suite: rustls::CipherSuite) -> &'static str {
    TLS12
        .iter()
        .chain(TLS13)
        .find(|(_, s)| s.suite() == suite)
        .map(|(n, _)| *n)
        .or_else(|| suite.as_str())
        .unwrap_or("unknown")
}

/// Finds the suite `name` in `table` (OpenSSL or IANA spelling, any case).
fn lookup(table: &[(&str, SupportedCipherSuite)], name: &str) -> Option<SupportedCipherSuite> {
    table
        .iter()
        .find(|(n, s)| {
            n.eq_ignore_ascii_case(name)
                || s.suite()
                    .as_str()
                    .is_some_and(|iana| iana.eq_ignore_ascii_case(name))
        })
        .map(|(_, s)| *s)
}

/// Maps a cipher string (`ciphers` when `option` is "ciphers", else
/// `ciphersuites`) to suites of `table`, in order; see the module docs.
pub fn parse_ciphers(
    option: &str,
    spec: Option<&str>,
    table: &[(&str, SupportedCipherSuite)],
    warnings: &mut Vec<String>,
) -> Result<Vec<SupportedCipherSuite>, TlsError> {
    let default = || table.iter().map(|(_, s)| *s).collect::<Vec<_>>();
    let Some(spec) = spec else {
        return Ok(default());
    };
    let mut chosen = Vec::new();
    let mut removed = Vec::new();
    let mut ignored = Vec::new();
    for tok in spec.split([':', ',', ' ', '\t']).filter(|t| !t.is_empty()) {
        if let Some(neg) = tok.strip_prefix(['!', '-']) {
            // Removing a suite rustls lacks is already done.
            removed.extend(lookup(table, neg));
            continue;
        }
        match lookup(table, tok) {
            Some(s) if !chosen.contains(&s) => chosen.push(s),
            Some(_) => {}
            None => ignored.push(tok),
        }
    }
    if chosen.is_empty() {
        warnings.push(format!(
            "{option} '{spec}': no suite name Fairlead supports; using the default suites"
        ));
        chosen = default();
    } else if !ignored.is_empty() {
        warnings.push(format!(
            "{option}: ignoring {} (not supported: Fairlead has ECDHE with AES-GCM and \
             ChaCha20-Poly1305 only, and does not read OpenSSL keywords)",
            ignored.join(", ")
        ));
    }
    chosen.retain(|s| !removed.contains(s));
    if chosen.is_empty() {
        return Err(TlsError::new(
            None,
            format!("{option} '{spec}' leaves no usable cipher suite"),
        ));
    }
    Ok(chosen)
}

/// Resolves the versions and suites of `p`. Suites are listed for the
/// enabled versions only; a version left without suites is an error.
pub fn resolve(p: &TlsProtocol, warnings: &mut Vec<String>) -> Result<Suites, TlsError> {
    let versions = versions(p, warnings)?;
    let mut suites = Vec::new();
    if versions.contains(&&rustls::version::TLS13) {
        suites.extend(parse_ciphers(
            "ciphersuites",
            p.ciphersuites.as_deref(),
            TLS13,
            warnings,
        )?);
    }
    if versions.contains(&&rustls::version::TLS12) {
        suites.extend(parse_ciphers(
            "ciphers",
            p.ciphers.as_deref(),
            TLS12,
            warnings,
        )?);
    }
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    provider.cipher_suites = suites;
    Ok(Suites {
        provider: Arc::new(provider),
        versions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &[SupportedCipherSuite]) -> Vec<&'static str> {
        s.iter().map(|s| s.suite().as_str().unwrap()).collect()
    }

    fn proto(min: Option<TlsVersion>, max: Option<TlsVersion>) -> TlsProtocol {
        TlsProtocol {
            min_ver: min,
            max_ver: max,
            ..TlsProtocol::default()
        }
    }

    #[test]
    fn version_ranges() {
        let mut w = Vec::new();
        let v = versions(&proto(None, None), &mut w).unwrap();
        assert_eq!(v.len(), 2);
        let v = versions(&proto(Some(TlsVersion::Tls13), None), &mut w).unwrap();
        assert_eq!(v, [&rustls::version::TLS13]);
        let v = versions(&proto(None, Some(TlsVersion::Tls12)), &mut w).unwrap();
        assert_eq!(v, [&rustls::version::TLS12]);
        assert!(w.is_empty());
        let v = versions(&proto(Some(TlsVersion::Tls10), None), &mut w).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(
            w,
            ["ssl-min-ver TLSv1.0: Fairlead supports TLS 1.2 and 1.3 only; using TLSv1.2"]
        );
        let e = versions(&proto(None, Some(TlsVersion::Tls11)), &mut w).unwrap_err();
        assert_eq!(
            e.message,
            "ssl-max-ver TLSv1.1: Fairlead supports TLS 1.2 and 1.3 only"
        );
        let e = versions(
            &proto(Some(TlsVersion::Tls13), Some(TlsVersion::Tls12)),
            &mut w,
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "ssl-min-ver TLSv1.3 is above ssl-max-ver TLSv1.2"
        );
    }

    #[test]
    fn openssl_names_come_from_the_tables() {
        for (name, s) in TLS12.iter().chain(TLS13) {
            assert_eq!(openssl_name(s.suite()), *name);
        }
        assert_eq!(
            openssl_name(rustls::CipherSuite::TLS_RSA_WITH_AES_128_GCM_SHA256),
            "TLS_RSA_WITH_AES_128_GCM_SHA256"
        );
    }

    #[test]
    fn cipher_names_in_order() {
        let mut w = Vec::new();
        let s = parse_ciphers(
            "ciphers",
            Some("ECDHE-RSA-CHACHA20-POLY1305:ecdhe-ecdsa-aes128-gcm-sha256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
            TLS12,
            &mut w,
        )
        .unwrap();
        assert_eq!(
            names(&s),
            [
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
            ]
        );
        assert!(w.is_empty(), "{w:?}");
    }

    #[test]
    fn unknown_cipher_names_dropped() {
        let mut w = Vec::new();
        let s = parse_ciphers(
            "ciphers",
            Some("ECDHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES128-SHA:AES128-SHA:!aNULL:!ECDHE-RSA-CHACHA20-POLY1305"),
            TLS12,
            &mut w,
        )
        .unwrap();
        assert_eq!(names(&s), ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("DHE-RSA-AES128-SHA, AES128-SHA"), "{w:?}");
    }

    #[test]
    fn keywords_fall_back_to_defaults() {
        let mut w = Vec::new();
        let s = parse_ciphers("ciphers", Some("HIGH:!aNULL:!MD5"), TLS12, &mut w).unwrap();
        assert_eq!(s.len(), 6);
        assert_eq!(
            w,
            ["ciphers 'HIGH:!aNULL:!MD5': no suite name Fairlead supports; using the default suites"]
        );
        // Exclusions still apply to the defaults.
        let mut w = Vec::new();
        let s = parse_ciphers(
            "ciphersuites",
            Some("DEFAULT:!TLS_CHACHA20_POLY1305_SHA256"),
            TLS13,
            &mut w,
        )
        .unwrap();
        assert_eq!(
            names(&s),
            ["TLS13_AES_128_GCM_SHA256", "TLS13_AES_256_GCM_SHA384"]
        );
        // Everything removed.
        let e = parse_ciphers(
            "ciphersuites",
            Some("TLS_AES_128_GCM_SHA256:-TLS_AES_128_GCM_SHA256"),
            TLS13,
            &mut w,
        )
        .unwrap_err();
        assert!(e.message.contains("leaves no usable cipher suite"), "{e}");
    }

    #[test]
    fn provider_has_suites_of_enabled_versions() {
        let mut w = Vec::new();
        let p = TlsProtocol {
            max_ver: Some(TlsVersion::Tls12),
            ciphers: Some("ECDHE-ECDSA-AES256-GCM-SHA384".into()),
            ciphersuites: Some("garbage".into()),
            ..TlsProtocol::default()
        };
        let s = resolve(&p, &mut w).unwrap();
        assert_eq!(
            names(&s.provider.cipher_suites),
            ["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"]
        );
        // TLS 1.3 is off: its string is not even read.
        assert!(w.is_empty(), "{w:?}");
        let s = resolve(&TlsProtocol::default(), &mut w).unwrap();
        assert_eq!(s.provider.cipher_suites.len(), 9);
        assert_eq!(s.versions.len(), 2);
    }
}
