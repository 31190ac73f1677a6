//! Loading certificates the way HAProxy's `crt` and `crt-list` find them.
//!
//! # PEM files
//!
//! A certificate file holds the chain, leaf first, and usually the private
//! key (PKCS#8 `PRIVATE KEY`, PKCS#1 `RSA PRIVATE KEY` or SEC1
//! `EC PRIVATE KEY`); other sections (`DH PARAMETERS`...) are skipped. When
//! the file has no key, the key is read from a companion file: first
//! `<file>.key` (HAProxy's rule: the whole name plus `.key`), then, if that
//! does not exist and the name has an extension, the name with its
//! extension replaced by `.key` (`site.pem` → `site.key`, what HAProxy does
//! with `ssl-load-extra-del-ext`).
//!
//! # Checks
//!
//! Every certificate is checked at load time, so that a bad file stops the
//! start-up (or a reload) with the file's name instead of failing every
//! handshake later: the key must match the leaf certificate. As HAProxy
//! does, a leaf that is expired or not valid yet is still loaded (an
//! operator may be mid-renewal, and refusing to start would take every
//! other site down with it), with a warning naming the file and the date.
//!
//! # Names
//!
//! The names a certificate is chosen for are its subject's common names
//! plus its DNS subject alternative names (as HAProxy does), in lower case.
//! A `crt-list` line can replace them with SNI filters.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use rustls::SignatureAlgorithm;
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

use crate::TlsError;

/// The kind of a certificate's private key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    /// RSA (PKCS#1 v1.5 or PSS signatures).
    Rsa,
    /// ECDSA on a NIST curve.
    Ecdsa,
    /// Ed25519.
    Ed25519,
    /// Anything else the provider could load.
    Other,
}

/// One certificate chain with its key, as loaded from a file.
#[derive(Debug, Clone)]
pub struct LoadedCert {
    /// The file the chain was read from.
    pub file: String,
    /// The chain and signing key, ready for rustls.
    pub key: Arc<CertifiedKey>,
    /// The leaf's common names and DNS subject alternative names, lower
    /// case, without duplicates (wildcards kept as `*.example.com`).
    pub names: Vec<String>,
    /// The kind of the private key.
    pub key_type: KeyType,
    /// The leaf's `notBefore`, in seconds since the Unix epoch.
    pub not_before: i64,
    /// The leaf's `notAfter`, in seconds since the Unix epoch.
    pub not_after: i64,
    /// The leaf's signature and key algorithms, as the PROXY v2
    /// `cert-sig` and `cert-key` sub-TLVs name them.
    pub algs: crate::cert_algs::CertAlgs,
}

/// What `show ssl cert <file>` prints about a certificate, HAProxy's
/// fields (dates as OpenSSL prints them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertDetails {
    pub file: String,
    /// Hexadecimal, upper case.
    pub serial: String,
    pub not_before: String,
    pub not_after: String,
    /// `DNS:a.example, DNS:*.b.example`.
    pub san: String,
    /// `EC256`, `RSA2048`, ...
    pub algorithm: String,
    /// `/CN=a.example/O=...`
    pub subject: String,
    pub issuer: String,
}

/// `Nov 22 04:00:00 2026 GMT`, as OpenSSL's `ASN1_TIME_print`.
fn openssl_date(t: &x509_parser::time::ASN1Time) -> String {
    let d = t.to_datetime();
    const M: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {:>2} {:02}:{:02}:{:02} {} GMT",
        M[usize::from(u8::from(d.month())) - 1],
        d.day(),
        d.hour(),
        d.minute(),
        d.second(),
        d.year()
    )
}

/// A peer certificate's subject in OpenSSL's one-line form and its first
/// common name; `(None, None)` when it does not parse.
pub(crate) fn subject_names(der: &[u8]) -> (Option<Box<str>>, Option<Box<str>>) {
    let Ok((_, cert)) = X509Certificate::from_der(der) else {
        return (None, None);
    };
    let subject = cert.subject();
    let cn = subject
        .iter_common_name()
        .next()
        .and_then(|c| c.as_str().ok())
        .map(Box::from);
    (Some(slash_name(subject).into()), cn)
}

/// `/CN=x/O=y`, OpenSSL's one-line form.
fn slash_name(n: &x509_parser::x509::X509Name<'_>) -> String {
    let mut out = String::new();
    for rdn in n.iter() {
        for a in rdn.iter() {
            let key = x509_parser::objects::oid2abbrev(
                a.attr_type(),
                x509_parser::objects::oid_registry(),
            )
            .map(str::to_string)
            .unwrap_or_else(|_| a.attr_type().to_id_string());
            let val = a.as_str().unwrap_or("?");
            out.push('/');
            out.push_str(&key);
            out.push('=');
            out.push_str(val);
        }
    }
    out
}

impl LoadedCert {
    /// The leaf's details for `show ssl cert <file>`.
    pub fn details(&self) -> CertDetails {
        let mut d = CertDetails {
            file: self.file.clone(),
            serial: String::new(),
            not_before: String::new(),
            not_after: String::new(),
            san: String::new(),
            algorithm: String::new(),
            subject: String::new(),
            issuer: String::new(),
        };
        let Some(der) = self.key.cert.first() else {
            return d;
        };
        let Ok((_, c)) = X509Certificate::from_der(der.as_ref()) else {
            return d;
        };
        d.serial = c.raw_serial().iter().map(|b| format!("{b:02X}")).collect();
        d.not_before = openssl_date(&c.validity().not_before);
        d.not_after = openssl_date(&c.validity().not_after);
        if let Ok(Some(san)) = c.subject_alternative_name() {
            let names: Vec<String> = san
                .value
                .general_names
                .iter()
                .filter_map(|g| match g {
                    GeneralName::DNSName(n) => Some(format!("DNS:{n}")),
                    GeneralName::IPAddress(ip) => Some(format!("IP:{}", ip_text(ip))),
                    _ => None,
                })
                .collect();
            d.san = names.join(", ");
        }
        let bits = c.public_key().parsed().map(|k| k.key_size()).unwrap_or(0);
        d.algorithm = match self.key_type {
            KeyType::Rsa => format!("RSA{bits}"),
            KeyType::Ecdsa => format!("EC{bits}"),
            KeyType::Ed25519 => "ED25519".into(),
            KeyType::Other => "unknown".into(),
        };
        d.subject = slash_name(c.subject());
        d.issuer = slash_name(c.issuer());
        d
    }
}

fn ip_text(b: &[u8]) -> String {
    match b.len() {
        4 => std::net::Ipv4Addr::new(b[0], b[1], b[2], b[3]).to_string(),
        16 => {
            let mut a = [0u8; 16];
            a.copy_from_slice(b);
            std::net::Ipv6Addr::from(a).to_string()
        }
        _ => "?".into(),
    }
}

/// A certificate with the names it is served for, ready for the resolver.
#[derive(Debug, Clone)]
pub struct CertEntry {
    /// The certificate.
    pub cert: Arc<LoadedCert>,
    /// The names (exact, or wildcards `*.example.com`) this certificate is
    /// chosen for: the certificate's own names, or a `crt-list` line's
    /// positive SNI filters. Lower case.
    pub names: Vec<String>,
    /// Names this certificate is never chosen for (negative SNI filters
    /// `!name`), even when one of `names` (a wildcard) matches. Lower case.
    pub excluded: Vec<String>,
}

impl CertEntry {
    /// An entry served for the certificate's own names.
    pub fn from_cert(cert: LoadedCert) -> CertEntry {
        CertEntry {
            names: cert.names.clone(),
            excluded: Vec::new(),
            cert: Arc::new(cert),
        }
    }
}

/// The current time, in seconds since the Unix epoch.
pub(crate) fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Formats a Unix time as `YYYY-MM-DD HH:MM:SS UTC`.
pub(crate) fn format_time(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from a day count (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

fn err(file: &str, message: impl Into<String>) -> TlsError {
    TlsError::new(Some(file), message)
}

/// The private key in `pem`, if there is one.
fn key_in(file: &str, pem: &[u8]) -> Result<Option<PrivateKeyDer<'static>>, TlsError> {
    match PrivateKeyDer::from_pem_slice(pem) {
        Ok(k) => Ok(Some(k)),
        Err(pem::Error::NoItemsFound) => Ok(None),
        Err(e) => Err(err(file, format!("invalid PEM: {e}"))),
    }
}

/// The companion key files tried for `file`, in order.
fn companions(file: &str) -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from(format!("{file}.key"))];
    let p = Path::new(file);
    if p.extension().is_some() {
        out.push(p.with_extension("key"));
    }
    out
}

/// Reads the key of `file` from its companion `.key` file.
fn companion_key(file: &str) -> Result<PrivateKeyDer<'static>, TlsError> {
    let tried = companions(file);
    for path in &tried {
        let name = path.display().to_string();
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(err(&name, format!("cannot read the key file: {e}"))),
        };
        return match key_in(&name, &bytes)? {
            Some(k) => Ok(k),
            None => Err(err(&name, "no private key found in the key file")),
        };
    }
    let tried: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
    Err(err(
        file,
        format!(
            "no private key found in the file, nor in a companion key file (tried {})",
            tried.join(", ")
        ),
    ))
}

/// What x509-parser tells about a leaf certificate.
struct LeafInfo {
    names: Vec<String>,
    not_before: i64,
    not_after: i64,
    algs: crate::cert_algs::CertAlgs,
}

fn leaf_info(file: &str, der: &[u8]) -> Result<LeafInfo, TlsError> {
    let (_, cert) = X509Certificate::from_der(der)
        .map_err(|e| err(file, format!("cannot parse the certificate: {e}")))?;
    let mut names: Vec<String> = Vec::new();
    let mut add = |n: &str| {
        let n = n.trim_end_matches('.').to_ascii_lowercase();
        if !n.is_empty() && !names.contains(&n) {
            names.push(n);
        }
    };
    for cn in cert.subject().iter_common_name() {
        if let Ok(s) = cn.as_str() {
            add(s);
        }
    }
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for gn in &san.value.general_names {
            if let GeneralName::DNSName(s) = gn {
                add(s);
            }
        }
    }
    let v = cert.validity();
    Ok(LeafInfo {
        names,
        not_before: v.not_before.timestamp(),
        not_after: v.not_after.timestamp(),
        algs: crate::cert_algs::of(&cert),
    })
}

/// Loads one PEM file: chain, key (or its companion), checks.
///
/// `now` is the current Unix time; a leaf that is expired or not valid yet
/// adds a warning (and is loaded).
pub fn load_pem(
    file: &str,
    provider: &CryptoProvider,
    now: i64,
    warnings: &mut Vec<String>,
) -> Result<LoadedCert, TlsError> {
    let bytes = std::fs::read(file).map_err(|e| err(file, format!("cannot read: {e}")))?;
    let chain = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(file, format!("invalid PEM: {e}")))?;
    if chain.is_empty() {
        return Err(err(file, "no certificate found in the file"));
    }
    let key_der = match key_in(file, &bytes)? {
        Some(k) => k,
        None => companion_key(file)?,
    };
    let key = provider
        .key_provider
        .load_private_key(key_der)
        .map_err(|e| err(file, format!("unusable private key: {e}")))?;
    let key_type = match key.algorithm() {
        SignatureAlgorithm::RSA => KeyType::Rsa,
        SignatureAlgorithm::ECDSA => KeyType::Ecdsa,
        SignatureAlgorithm::ED25519 => KeyType::Ed25519,
        _ => KeyType::Other,
    };
    let info = leaf_info(file, &chain[0])?;
    let ck = CertifiedKey::new(chain, key);
    match ck.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {}
        Err(_) => return Err(err(file, "the private key does not match the certificate")),
    }
    if info.not_after < now {
        warnings.push(format!(
            "'{file}': certificate expired on {}; loaded anyway, clients will refuse it until it is renewed",
            format_time(info.not_after)
        ));
    }
    if info.not_before > now {
        warnings.push(format!(
            "'{file}': certificate is not valid before {}; clients will refuse it until then",
            format_time(info.not_before)
        ));
    }
    Ok(LoadedCert {
        file: file.to_string(),
        key: Arc::new(ck),
        names: info.names,
        key_type,
        not_before: info.not_before,
        not_after: info.not_after,
        algs: info.algs,
    })
}

/// Whether a directory entry is a companion or hidden file, not a
/// certificate.
fn skipped_in_dir(name: &str) -> bool {
    name.starts_with('.')
        || [".key", ".ocsp", ".issuer", ".sctl"]
            .iter()
            .any(|ext| name.ends_with(ext))
}

/// Loads a `crt` argument: one PEM file, or every certificate file of a
/// directory in name order (companion `.key`, `.ocsp`, `.issuer`, `.sctl`
/// files, dot-files and sub-directories skipped).
pub fn load_crt(
    path: &str,
    provider: &CryptoProvider,
    now: i64,
    warnings: &mut Vec<String>,
) -> Result<Vec<LoadedCert>, TlsError> {
    let meta = std::fs::metadata(path).map_err(|e| err(path, format!("cannot read: {e}")))?;
    if !meta.is_dir() {
        return Ok(vec![load_pem(path, provider, now, warnings)?]);
    }
    let rd = std::fs::read_dir(path).map_err(|e| err(path, format!("cannot read: {e}")))?;
    let mut files = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| err(path, format!("cannot read: {e}")))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if skipped_in_dir(&name) || entry.path().is_dir() {
            continue;
        }
        files.push(entry.path());
    }
    files.sort();
    files
        .iter()
        .map(|f| load_pem(&f.display().to_string(), provider, now, warnings))
        .collect()
}

/// One parsed `crt-list` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrtListLine {
    /// The line number, from 1.
    pub line: usize,
    /// The certificate path, `crt_base` applied.
    pub crt: String,
    /// The text between `[` and `]`, if any (per-certificate SSL options).
    pub options: Option<String>,
    /// Positive SNI filters, lower case.
    pub names: Vec<String>,
    /// Negative SNI filters (`!name`, without the `!`), lower case.
    pub excluded: Vec<String>,
}

/// Parses the text of a `crt-list` file named `file`; relative certificate
/// paths are joined to `crt_base` when it is set.
pub fn parse_crt_list(
    file: &str,
    text: &str,
    crt_base: Option<&str>,
) -> Result<Vec<CrtListLine>, TlsError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (crt, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let mut rest = rest.trim_start();
        let mut options = None;
        if let Some(after) = rest.strip_prefix('[') {
            let Some(end) = after.find(']') else {
                return Err(err(
                    file,
                    format!("line {line_no}: missing ']' after the SSL options"),
                ));
            };
            options = Some(after[..end].trim().to_string());
            rest = &after[end + 1..];
        }
        let mut names = Vec::new();
        let mut excluded = Vec::new();
        for f in rest.split_whitespace() {
            if f.starts_with('[') || f.contains(']') {
                return Err(err(
                    file,
                    format!(
                        "line {line_no}: SSL options '[...]' must come right after the certificate"
                    ),
                ));
            }
            match f.strip_prefix('!') {
                Some(n) if !n.is_empty() => excluded.push(n.to_ascii_lowercase()),
                Some(_) => return Err(err(file, format!("line {line_no}: empty filter '!'"))),
                None => names.push(f.to_ascii_lowercase()),
            }
        }
        let crt = match crt_base {
            Some(base) if !Path::new(crt).is_absolute() => {
                Path::new(base).join(crt).display().to_string()
            }
            _ => crt.to_string(),
        };
        out.push(CrtListLine {
            line: line_no,
            crt,
            options,
            names,
            excluded,
        });
    }
    Ok(out)
}

/// Loads a `crt-list` file: every line's certificate(s), with its SNI
/// filters. Positive filters replace the certificate's own names; negative
/// ones (`!name`) keep the entry from being chosen for that name. With only
/// negative filters the certificate's own names are used. Per-certificate
/// SSL options (`[alpn h2 ...]`) are not supported: they are ignored with a
/// warning.
pub fn load_crt_list(
    file: &str,
    crt_base: Option<&str>,
    provider: &CryptoProvider,
    now: i64,
    warnings: &mut Vec<String>,
) -> Result<Vec<CertEntry>, TlsError> {
    let text = std::fs::read_to_string(file).map_err(|e| err(file, format!("cannot read: {e}")))?;
    let mut out = Vec::new();
    for l in parse_crt_list(file, &text, crt_base)? {
        if let Some(opts) = &l.options {
            if !opts.is_empty() {
                warnings.push(format!(
                    "'{file}' line {}: ignoring the per-certificate SSL options [{opts}]; \
                     set them on the bind line instead",
                    l.line
                ));
            }
        }
        for cert in load_crt(&l.crt, provider, now, warnings)? {
            let names = if l.names.is_empty() {
                cert.names.clone()
            } else {
                l.names.clone()
            };
            out.push(CertEntry {
                names,
                excluded: l.excluded.clone(),
                cert: Arc::new(cert),
            });
        }
    }
    Ok(out)
}

/// Loads every certificate of a bind line: the `crt` arguments in order,
/// then the `crt-list` files. The first entry is the default certificate.
pub fn load_bind_certs(
    cfg: &fairlead_config::BindTls,
    provider: &CryptoProvider,
    warnings: &mut Vec<String>,
) -> Result<Vec<CertEntry>, TlsError> {
    let now = now_secs();
    let mut out = Vec::new();
    for crt in &cfg.crt {
        let certs = load_crt(crt, provider, now, warnings)?;
        if certs.is_empty() {
            warnings.push(format!("'{crt}': no certificate file in this directory"));
        }
        out.extend(certs.into_iter().map(CertEntry::from_cert));
    }
    for list in &cfg.crt_list {
        out.extend(load_crt_list(
            list,
            cfg.crt_base.as_deref(),
            provider,
            now,
            warnings,
        )?);
    }
    if out.is_empty() {
        return Err(TlsError::new(
            None,
            "no certificate loaded for this bind line: 'ssl' needs 'crt' or 'crt-list'",
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolver::testutil::*;

    fn load(path: &str) -> Result<(LoadedCert, Vec<String>), TlsError> {
        let mut w = Vec::new();
        let c = load_pem(path, &provider(), now_secs(), &mut w)?;
        Ok((c, w))
    }

    #[test]
    fn pem_with_key() {
        let d = TempDir::new("pemkey");
        let l = leaf(&["www.example.com", "*.example.org"], &ECDSA, None);
        let f = d.write("site.pem", &l.combined());
        let (c, w) = load(&f).unwrap();
        assert!(w.is_empty());
        assert_eq!(c.names, ["www.example.com", "*.example.org"]);
        assert_eq!(c.key_type, KeyType::Ecdsa);
        assert_eq!(c.key.cert[0], l.der);
        assert!(c.not_before <= now_secs() && c.not_after > now_secs());
    }

    #[test]
    fn rsa_key_first_and_common_name() {
        let d = TempDir::new("rsa");
        let mut p = params(&["a.example.com".to_string()]);
        p.distinguished_name
            .push(rcgen::DnType::CommonName, "CN.Example.com");
        let l = leaf_with(p, &RSA, None);
        let f = d.write("rsa.pem", &format!("{}{}", l.key_pem, l.cert_pem));
        let (c, _) = load(&f).unwrap();
        assert_eq!(c.key_type, KeyType::Rsa);
        assert_eq!(c.names, ["cn.example.com", "a.example.com"]);
    }

    #[test]
    fn separate_key_files() {
        let d = TempDir::new("sepkey");
        let l = leaf(&["a.test"], &ECDSA, None);
        // HAProxy's `<file>.key`.
        let f = d.write("a.pem", &l.cert_pem);
        d.write("a.pem.key", &l.key_pem);
        assert!(load(&f).is_ok());
        // The extension replaced.
        let f = d.write("b.crt", &l.cert_pem);
        d.write("b.key", &l.key_pem);
        assert!(load(&f).is_ok());
        // None: both names in the message.
        let f = d.write("c.pem", &l.cert_pem);
        let e = load(&f).unwrap_err();
        assert_eq!(e.file.as_deref(), Some(f.as_str()));
        assert!(e.message.contains("c.pem.key"), "{e}");
        assert!(e.message.contains("c.key"), "{e}");
    }

    #[test]
    fn bad_files() {
        let d = TempDir::new("bad");
        let missing = d.path("missing.pem");
        let e = load(&missing).unwrap_err();
        assert_eq!(e.file.as_deref(), Some(missing.as_str()));
        assert!(e.message.starts_with("cannot read"), "{e}");
        let l = leaf(&["a.test"], &ECDSA, None);
        let f = d.write("nocert.pem", &l.key_pem);
        let e = load(&f).unwrap_err();
        assert_eq!(e.message, "no certificate found in the file");
    }

    #[test]
    fn key_mismatch_names_the_file() {
        let d = TempDir::new("mismatch");
        let a = leaf(&["a.test"], &ECDSA, None);
        let b = leaf(&["b.test"], &ECDSA, None);
        let f = d.write("a.pem", &format!("{}{}", a.cert_pem, b.key_pem));
        let e = load(&f).unwrap_err();
        assert_eq!(e.file.as_deref(), Some(f.as_str()));
        assert_eq!(e.message, "the private key does not match the certificate");
        assert!(e.to_string().contains("a.pem"));
    }

    #[test]
    fn expired_and_not_yet_valid() {
        let d = TempDir::new("dates");
        let mut p = params(&["old.test".to_string()]);
        p.not_before = rcgen::date_time_ymd(1999, 1, 1);
        p.not_after = rcgen::date_time_ymd(2000, 3, 1);
        let f = d.write("old.pem", &leaf_with(p, &ECDSA, None).combined());
        let (c, w) = load(&f).unwrap();
        assert_eq!(c.names, vec!["old.test".to_string()]);
        assert_eq!(
            w,
            vec![format!(
                "'{f}': certificate expired on 2000-03-01 00:00:00 UTC; loaded anyway, clients will refuse it until it is renewed"
            )]
        );
        let mut p = params(&["new.test".to_string()]);
        p.not_before = rcgen::date_time_ymd(2999, 1, 1);
        p.not_after = rcgen::date_time_ymd(3000, 1, 1);
        let f = d.write("new.pem", &leaf_with(p, &ECDSA, None).combined());
        let (_, w) = load(&f).unwrap();
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("not valid before 2999-01-01"), "{w:?}");
    }

    #[test]
    fn directory_skips_companions() {
        let d = TempDir::new("dir");
        let a = leaf(&["a.test"], &ECDSA, None);
        let b = leaf(&["b.test"], &ECDSA, None);
        d.write("b.pem", &b.cert_pem);
        d.write("b.pem.key", &b.key_pem);
        d.write("a.pem", &a.combined());
        for junk in ["a.pem.ocsp", "a.pem.issuer", "a.pem.sctl", ".hidden"] {
            d.write(junk, "not a certificate");
        }
        std::fs::create_dir(d.0.join("sub")).unwrap();
        let mut w = Vec::new();
        let certs = load_crt(&d.0.display().to_string(), &provider(), now_secs(), &mut w).unwrap();
        let names: Vec<&str> = certs.iter().map(|c| c.names[0].as_str()).collect();
        assert_eq!(names, ["a.test", "b.test"]);
    }

    #[test]
    fn crt_list_parsing() {
        let text = "# comment\n\n\
                    a.pem\n\
                    /abs/b.pem [alpn h2 ssl-min-ver TLSv1.2] *.Example.com !secure.example.com\n\
                    c.pem !x.test\n";
        let l = parse_crt_list("list", text, Some("/certs")).unwrap();
        assert_eq!(l.len(), 3);
        assert_eq!(l[0].crt, "/certs/a.pem");
        assert_eq!(l[0].line, 3);
        assert_eq!(l[1].crt, "/abs/b.pem");
        assert_eq!(l[1].options.as_deref(), Some("alpn h2 ssl-min-ver TLSv1.2"));
        assert_eq!(l[1].names, ["*.example.com"]);
        assert_eq!(l[1].excluded, ["secure.example.com"]);
        assert!(l[2].names.is_empty());
        assert_eq!(l[2].excluded, ["x.test"]);
        let e = parse_crt_list("list", "a.pem [alpn h2\n", None).unwrap_err();
        assert_eq!(e.file.as_deref(), Some("list"));
        assert!(e.message.starts_with("line 1:"), "{e}");
    }

    #[test]
    fn crt_list_loading() {
        let d = TempDir::new("crtlist");
        d.write("a.pem", &leaf(&["a.test"], &ECDSA, None).combined());
        d.write("b.pem", &leaf(&["b.test"], &ECDSA, None).combined());
        let list = d.write(
            "list.txt",
            "a.pem [alpn h2]\nb.pem *.example.com !secure.example.com\n",
        );
        let mut w = Vec::new();
        let base = d.0.display().to_string();
        let entries = load_crt_list(&list, Some(&base), &provider(), now_secs(), &mut w).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].names, ["a.test"]);
        assert_eq!(entries[1].names, ["*.example.com"]);
        assert_eq!(entries[1].excluded, ["secure.example.com"]);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("line 1") && w[0].contains("[alpn h2]"),
            "{w:?}"
        );
    }

    #[test]
    fn dates_format() {
        assert_eq!(format_time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(format_time(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(format_time(1_700_000_000), "2023-11-14 22:13:20 UTC");
    }
}
