//! TLS options of `bind` and `server` lines, and the `ssl-default-*`
//! settings of the `global` section.
//!
//! Options are gathered into drafts while the lines are read ([`BindDraft`],
//! [`ServerDraft`]) and resolved into the model ([`BindTls`], [`ServerTls`])
//! once the whole configuration is known: the global defaults
//! (`ssl-default-bind-*`, `ssl-default-server-*`, `ssl-server-verify`,
//! `crt-base`, `ca-base`) then apply wherever the `global` section is, as
//! they do in HAProxy for a `global` section written first.
//!
//! Protocol versions follow HAProxy 2.6: `no-<version>` options turn
//! versions off, `force-<version>` sets both bounds, `ssl-min-ver` and
//! `ssl-max-ver` set one; the `no-*` options are ignored (with HAProxy's
//! warning) when a bound is set. Fairlead offers TLSv1.2 and TLSv1.3 only
//! (rustls), so the versions below are accepted in the configuration but
//! never offered.

use crate::model::{
    BindTls, Global, Location, ServerTls, SniSource, TlsProtocol, TlsVersion, Verify,
};

/// Every version, lowest first, as spelt in the configuration.
const VERSIONS: [(&str, TlsVersion); 5] = [
    ("SSLv3", TlsVersion::Ssl3),
    ("TLSv1.0", TlsVersion::Tls10),
    ("TLSv1.1", TlsVersion::Tls11),
    ("TLSv1.2", TlsVersion::Tls12),
    ("TLSv1.3", TlsVersion::Tls13),
];

/// The versions Fairlead offers.
const OFFERED: [TlsVersion; 2] = [TlsVersion::Tls12, TlsVersion::Tls13];

/// Warning text of options that are accepted but change nothing.
pub(crate) const NO_EFFECT: &str = "has no effect in Fairlead (rustls); ignored";

/// Warning text of `npn`.
pub(crate) const NPN: &str = "NPN is obsolete and not supported; ignored";

fn version_name(v: TlsVersion) -> &'static str {
    VERSIONS
        .iter()
        .find(|(_, x)| *x == v)
        .map(|(n, _)| *n)
        .unwrap_or("?")
}

/// Parses the value of `ssl-min-ver` / `ssl-max-ver`.
pub(crate) fn parse_version(opt: &str, arg: &str) -> Result<TlsVersion, String> {
    VERSIONS
        .iter()
        .find(|(n, _)| *n == arg)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            format!(
                "'{opt}': unknown ssl/tls version '{arg}'; expects one of 'SSLv3', 'TLSv1.0', 'TLSv1.1', 'TLSv1.2' or 'TLSv1.3'"
            )
        })
}

/// Parses a comma-separated ALPN list (`h2,http/1.1`).
pub(crate) fn parse_alpn(arg: &str) -> Result<Vec<String>, String> {
    if arg.is_empty() {
        return Err("'alpn': missing the comma-delimited ALPN protocol suite".into());
    }
    let mut out = Vec::new();
    for name in arg.split(',') {
        if name.is_empty() {
            return Err(format!("'alpn': empty protocol name in '{arg}'"));
        }
        if name.len() > 255 {
            return Err(format!("'alpn': ALPN protocol name too long : '{name}'"));
        }
        out.push(name.to_string());
    }
    Ok(out)
}

/// Parses the expression of a server's `sni`.
pub(crate) fn parse_sni(arg: &str) -> Result<SniSource, String> {
    if arg.is_empty() {
        return Err("'sni': missing sni expression".into());
    }
    if arg == "ssl_fc_sni" {
        return Ok(SniSource::ClientSni);
    }
    if let Some(name) = arg.strip_prefix("str(").and_then(|r| r.strip_suffix(')')) {
        if !name.is_empty() && !name.contains([')', ',', '(']) {
            return Ok(SniSource::Fixed(name.to_string()));
        }
    }
    for f in ["req.hdr(", "hdr("] {
        if let Some(h) = arg.strip_prefix(f).and_then(|r| r.strip_suffix(')')) {
            if h.eq_ignore_ascii_case("host") {
                return Ok(SniSource::HostHeader);
            }
        }
    }
    Err(format!(
        "sni expression '{arg}' is not supported yet; use str(<name>), ssl_fc_sni or req.hdr(host)"
    ))
}

/// Parses `verify` (`optional` only for binds).
fn parse_verify(arg: &str, bind: bool) -> Result<Verify, String> {
    match arg {
        "none" => Ok(Verify::None),
        "required" => Ok(Verify::Required),
        "optional" if bind => Ok(Verify::Optional),
        _ if bind => Err(format!(
            "'verify': unknown verify method '{arg}', only 'none', 'optional' and 'required' are supported"
        )),
        _ => Err(format!(
            "'verify': unknown verify method '{arg}', only 'none' and 'required' are supported"
        )),
    }
}

/// A path argument: not empty.
fn path_arg(name: &str, arg: &str) -> Result<String, String> {
    if arg.is_empty() {
        return Err(format!("'{name}': missing file path"));
    }
    Ok(arg.to_string())
}

/// A string argument such as a cipher list: not empty.
fn str_arg(name: &str, arg: &str) -> Result<String, String> {
    if arg.is_empty() {
        return Err(format!("'{name}': expects a non-empty argument"));
    }
    Ok(arg.to_string())
}

/// Prefixes a relative path with a base directory (`crt-base`,
/// `ca-base`), as HAProxy does: absolute paths are kept, and so are
/// `@`-names (`@system-ca`).
pub(crate) fn with_base(base: Option<&str>, path: &str) -> String {
    match base {
        Some(b) if !path.starts_with('/') && !path.starts_with('@') => {
            format!("{}/{path}", b.trim_end_matches('/'))
        }
        _ => path.to_string(),
    }
}

/// Protocol version settings as written: `ssl-min-ver`, `ssl-max-ver`,
/// `no-<version>` and `force-<version>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Methods {
    pub min: Option<TlsVersion>,
    pub max: Option<TlsVersion>,
    /// Versions turned off by `no-<version>`.
    pub disabled: Vec<TlsVersion>,
}

impl Methods {
    /// Applies `no-<version>` or `force-<version>`; false when `name` is
    /// neither.
    pub fn option(&mut self, name: &str) -> bool {
        let (force, rest) = if let Some(r) = name.strip_prefix("no-") {
            (false, r)
        } else if let Some(r) = name.strip_prefix("force-") {
            (true, r)
        } else {
            return false;
        };
        let v = match rest {
            "sslv3" => TlsVersion::Ssl3,
            "tlsv10" => TlsVersion::Tls10,
            "tlsv11" => TlsVersion::Tls11,
            "tlsv12" => TlsVersion::Tls12,
            "tlsv13" => TlsVersion::Tls13,
            _ => return false,
        };
        if force {
            self.min = Some(v);
            self.max = Some(v);
        } else if !self.disabled.contains(&v) {
            self.disabled.push(v);
        }
        true
    }

    /// Applies `ssl-min-ver` / `ssl-max-ver`.
    pub fn minmax(&mut self, name: &str, arg: &str) -> Result<(), String> {
        let v = parse_version(name, arg)?;
        if name == "ssl-min-ver" {
            self.min = Some(v);
        } else {
            self.max = Some(v);
        }
        Ok(())
    }

    /// These settings completed by the global defaults, as HAProxy does
    /// on `ssl`: disabled versions add up, bounds are taken from the
    /// defaults when not set here.
    fn with_defaults(&self, g: &Methods) -> Methods {
        let mut m = self.clone();
        for v in &g.disabled {
            if !m.disabled.contains(v) {
                m.disabled.push(*v);
            }
        }
        m.min = m.min.or(g.min);
        m.max = m.max.or(g.max);
        m
    }

    /// The `(min_ver, max_ver)` of the model. A bound is `Some` when it
    /// was configured or when it differs from Fairlead's default range
    /// (TLSv1.2 to TLSv1.3). Errors when no version Fairlead offers is
    /// left. `bind`: HAProxy's default minimum for listeners, TLSv1.2,
    /// applies (for the error message; Fairlead's minimum is TLSv1.2
    /// anyway).
    fn resolve(&self, bind: bool, warns: &mut Vec<String>) -> Result<VersionRange, String> {
        let mut disabled = self.disabled.clone();
        if !disabled.is_empty() && (self.min.is_some() || self.max.is_some()) {
            warns.push("no-sslv3/no-tlsv1x are ignored when 'ssl-min-ver', 'ssl-max-ver' or 'force-*' is set (as in HAProxy). Use only 'ssl-min-ver' and 'ssl-max-ver' to fix.".into());
            disabled.clear();
        }
        let lo = match (self.min, self.max) {
            (Some(m), _) => m,
            (None, Some(m)) if bind && m < TlsVersion::Tls12 => m,
            (None, _) if bind => TlsVersion::Tls12,
            (None, _) => TlsVersion::Ssl3,
        };
        let hi = self.max.unwrap_or(TlsVersion::Tls13);
        let allowed = |v: &TlsVersion| *v >= lo && *v <= hi && !disabled.contains(v);
        let offered: Vec<TlsVersion> = OFFERED.iter().copied().filter(allowed).collect();
        let (Some(&first), Some(&last)) = (offered.first(), offered.last()) else {
            let wanted: Vec<&str> = VERSIONS
                .iter()
                .filter(|(_, v)| allowed(v))
                .map(|(n, _)| *n)
                .collect();
            return Err(if wanted.is_empty() {
                "all SSL/TLS versions are disabled".to_string()
            } else {
                format!(
                    "no TLS version left: only {} would be offered, and Fairlead supports TLSv1.2 and TLSv1.3 only",
                    wanted.join(", ")
                )
            });
        };
        if let Some(m) = self.min.filter(|m| *m < TlsVersion::Tls12) {
            warns.push(format!(
                "'ssl-min-ver {}': Fairlead never offers versions below TLSv1.2 (rustls supports TLSv1.2 and TLSv1.3 only); the minimum is TLSv1.2",
                version_name(m)
            ));
        }
        Ok((
            (self.min.is_some() || first != TlsVersion::Tls12).then_some(first),
            (self.max.is_some() || last != TlsVersion::Tls13).then_some(last),
        ))
    }
}

impl Methods {
    /// [`Methods::resolve`] of these settings with the global `defaults`,
    /// its problems added to `out` as `(is_alert, message)`; no bounds on
    /// error.
    fn range(&self, defaults: &Methods, bind: bool, out: &mut Vec<(bool, String)>) -> VersionRange {
        let mut warns = Vec::new();
        let r = match self.with_defaults(defaults).resolve(bind, &mut warns) {
            Ok(r) => r,
            Err(e) => {
                out.push((true, e));
                (None, None)
            }
        };
        out.extend(warns.into_iter().map(|w| (false, w)));
        r
    }
}

/// `(min_ver, max_ver)`.
type VersionRange = (Option<TlsVersion>, Option<TlsVersion>);

/// `ssl-default-bind-*` or `ssl-default-server-*`.
#[derive(Debug, Clone, Default)]
pub(crate) struct DefaultTls {
    pub ciphers: Option<String>,
    pub ciphersuites: Option<String>,
    pub no_tickets: bool,
    pub methods: Methods,
}

/// The TLS defaults of the `global` section.
#[derive(Debug, Clone, Default)]
pub(crate) struct GlobalTls {
    pub bind: DefaultTls,
    pub server: DefaultTls,
}

/// Parses the options of `ssl-default-bind-options` (`bind` true) or
/// `ssl-default-server-options` (words include the keyword). Returns the
/// warnings.
pub(crate) fn parse_default_options(
    words: &[String],
    d: &mut DefaultTls,
    bind: bool,
) -> Result<Vec<String>, String> {
    let kw = &words[0];
    if words.len() < 2 {
        return Err(format!(
            "global statement '{kw}' expects an option as an argument."
        ));
    }
    let mut warns = Vec::new();
    let mut i = 1;
    while i < words.len() {
        let o = words[i].as_str();
        match o {
            "no-tls-tickets" => d.no_tickets = true,
            "prefer-client-ciphers" if bind => warns.push(format!("'{o}' {NO_EFFECT}")),
            "ssl-min-ver" | "ssl-max-ver" => {
                let Some(arg) = words.get(i + 1) else {
                    return Err(format!(
                        "'{o}': missing the ssl/tls version on global statement '{kw}'."
                    ));
                };
                d.methods
                    .minmax(o, arg)
                    .map_err(|e| format!("{e} on global statement '{kw}'."))?;
                i += 1;
            }
            _ if d.methods.option(o) => {}
            _ => return Err(format!("unknown option '{o}' on global statement '{kw}'.")),
        }
        i += 1;
    }
    Ok(warns)
}

/// A `bind` line's TLS options as written.
#[derive(Debug, Clone, Default)]
pub(crate) struct BindDraft {
    /// The address list as written, for messages.
    pub list: String,
    pub ssl: bool,
    pub crt: Vec<String>,
    pub crt_list: Vec<String>,
    pub strict_sni: bool,
    pub ca_file: Option<String>,
    pub verify: Verify,
    pub ciphers: Option<String>,
    pub ciphersuites: Option<String>,
    pub alpn: Vec<String>,
    pub no_tickets: bool,
    pub methods: Methods,
}

impl BindDraft {
    /// Applies one implemented TLS option of a `bind` line.
    pub fn apply(&mut self, name: &str, arg: &str) -> Result<(), String> {
        match name {
            "ssl" => self.ssl = true,
            "crt" => self.crt.push(path_arg(name, arg)?),
            "crt-list" => self.crt_list.push(path_arg(name, arg)?),
            "strict-sni" => self.strict_sni = true,
            "alpn" => self.alpn = parse_alpn(arg)?,
            "ca-file" => self.ca_file = Some(path_arg(name, arg)?),
            "verify" => self.verify = parse_verify(arg, true)?,
            "ciphers" => self.ciphers = Some(str_arg(name, arg)?),
            "ciphersuites" => self.ciphersuites = Some(str_arg(name, arg)?),
            "no-tls-tickets" => self.no_tickets = true,
            "ssl-min-ver" | "ssl-max-ver" => self.methods.minmax(name, arg)?,
            _ if self.methods.option(name) => {}
            _ => {
                return Err(format!(
                    "option '{name}' is not implemented yet in Fairlead"
                ))
            }
        }
        Ok(())
    }

    /// The line's [`BindTls`] (`None` without `ssl`), with the global
    /// defaults and base directories applied. Problems are returned as
    /// `(is_alert, message)`.
    pub fn resolve(
        &self,
        g: &Global,
        defaults: &DefaultTls,
        out: &mut Vec<(bool, String)>,
    ) -> Option<BindTls> {
        if !self.ssl {
            return None;
        }
        let (min_ver, max_ver) = self.methods.range(&defaults.methods, true, out);
        if self.verify != Verify::None && self.ca_file.is_none() {
            out.push((true, "verify is enabled but no CA file specified.".into()));
        }
        let crt_base = g.crt_base.as_deref();
        Some(BindTls {
            crt: self.crt.iter().map(|p| with_base(crt_base, p)).collect(),
            // As HAProxy: `crt-base` applies to the paths inside a
            // crt-list, not to the list's own path.
            crt_list: self.crt_list.clone(),
            crt_base: g.crt_base.clone(),
            strict_sni: self.strict_sni,
            ca_file: self
                .ca_file
                .as_deref()
                .map(|p| with_base(g.ca_base.as_deref(), p)),
            verify: self.verify,
            protocol: TlsProtocol {
                min_ver,
                max_ver,
                ciphers: self.ciphers.clone().or_else(|| defaults.ciphers.clone()),
                ciphersuites: self
                    .ciphersuites
                    .clone()
                    .or_else(|| defaults.ciphersuites.clone()),
                alpn: self.alpn.clone(),
                no_tickets: self.no_tickets || defaults.no_tickets,
            },
        })
    }
}

/// A `server` (or `default-server`) line's TLS options as written.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerDraft {
    pub ssl: bool,
    /// `None`: `ssl-server-verify` decides.
    pub verify: Option<Verify>,
    pub ca_file: Option<String>,
    pub verifyhost: Option<String>,
    pub sni: Option<SniSource>,
    pub crt: Option<String>,
    pub no_reuse: bool,
    pub ciphers: Option<String>,
    pub ciphersuites: Option<String>,
    pub alpn: Vec<String>,
    /// `None`: `ssl-default-server-options` decides.
    pub no_tickets: Option<bool>,
    pub methods: Methods,
}

impl ServerDraft {
    /// Applies one implemented TLS option of a `server` line.
    pub fn apply(&mut self, name: &str, arg: &str) -> Result<(), String> {
        match name {
            "ssl" => self.ssl = true,
            "no-ssl" => self.ssl = false,
            "verify" => self.verify = Some(parse_verify(arg, false)?),
            "ca-file" => self.ca_file = Some(path_arg(name, arg)?),
            "verifyhost" => self.verifyhost = Some(str_arg(name, arg)?),
            "no-verifyhost" => self.verifyhost = None,
            "sni" => self.sni = Some(parse_sni(arg)?),
            "crt" => self.crt = Some(path_arg(name, arg)?),
            "no-ssl-reuse" => self.no_reuse = true,
            "ssl-reuse" => self.no_reuse = false,
            "ciphers" => self.ciphers = Some(str_arg(name, arg)?),
            "ciphersuites" => self.ciphersuites = Some(str_arg(name, arg)?),
            "alpn" => self.alpn = parse_alpn(arg)?,
            "no-tls-tickets" => self.no_tickets = Some(true),
            "tls-tickets" => self.no_tickets = Some(false),
            "ssl-min-ver" | "ssl-max-ver" => self.methods.minmax(name, arg)?,
            _ if self.methods.option(name) => {}
            _ => {
                return Err(format!(
                    "option '{name}' is not implemented yet in Fairlead"
                ))
            }
        }
        Ok(())
    }

    /// The server's [`ServerTls`] (`None` without `ssl`), with the global
    /// defaults and base directories applied. Problems are returned as
    /// `(is_alert, message)`.
    pub fn resolve(
        &self,
        g: &Global,
        defaults: &DefaultTls,
        out: &mut Vec<(bool, String)>,
    ) -> Option<ServerTls> {
        if !self.ssl {
            return None;
        }
        let (min_ver, max_ver) = self.methods.range(&defaults.methods, false, out);
        let verify = self.verify.unwrap_or(g.ssl_server_verify);
        if verify == Verify::Required && self.ca_file.is_none() {
            // HAProxy's wording, which depends on the global setting only.
            let msg = if g.ssl_server_verify == Verify::Required {
                "verify is enabled by default but no CA file specified. If you're running on a LAN where you're certain to trust the server's certificate, please set an explicit 'verify none' statement on the 'server' line, or use 'ssl-server-verify none' in the global section to disable server-side verifications by default."
            } else {
                "verify is enabled but no CA file specified."
            };
            out.push((true, msg.to_string()));
        }
        Some(ServerTls {
            verify,
            ca_file: self
                .ca_file
                .as_deref()
                .map(|p| with_base(g.ca_base.as_deref(), p)),
            verifyhost: self.verifyhost.clone(),
            sni: self.sni.clone(),
            crt: self
                .crt
                .as_deref()
                .map(|p| with_base(g.crt_base.as_deref(), p)),
            no_reuse: self.no_reuse,
            protocol: TlsProtocol {
                min_ver,
                max_ver,
                ciphers: self.ciphers.clone().or_else(|| defaults.ciphers.clone()),
                ciphersuites: self
                    .ciphersuites
                    .clone()
                    .or_else(|| defaults.ciphersuites.clone()),
                alpn: self.alpn.clone(),
                no_tickets: self.no_tickets.unwrap_or(defaults.no_tickets),
            },
        })
    }
}

/// Pushes `(is_alert, message)` problems as diagnostics at `loc`, each
/// message prefixed with `label` (`'bind :443'`, `server 'be/s1'`).
pub(crate) fn report(
    out: Vec<(bool, String)>,
    label: &str,
    loc: &Location,
    diags: &mut crate::diag::Diags,
) {
    for (alert, msg) in out {
        let msg = format!("{label}: {msg}");
        if alert {
            diags.alert(loc, msg);
        } else {
            diags.warn(loc, msg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TlsVersion::*;

    fn methods(opts: &[&str]) -> Methods {
        let mut m = Methods::default();
        let mut i = 0;
        while i < opts.len() {
            if opts[i].starts_with("ssl-m") {
                m.minmax(opts[i], opts[i + 1]).unwrap();
                i += 1;
            } else {
                assert!(m.option(opts[i]), "{}", opts[i]);
            }
            i += 1;
        }
        m
    }

    fn range(opts: &[&str]) -> Result<(VersionRange, Vec<String>), String> {
        let mut w = Vec::new();
        methods(opts).resolve(true, &mut w).map(|r| (r, w))
    }

    #[test]
    fn version_ranges() {
        assert_eq!(range(&[]).unwrap(), ((None, None), vec![]));
        assert_eq!(
            range(&["no-sslv3", "no-tlsv10", "no-tlsv11"]).unwrap().0,
            (None, None)
        );
        assert_eq!(range(&["no-tlsv13"]).unwrap().0, (None, Some(Tls12)));
        assert_eq!(range(&["no-tlsv12"]).unwrap().0, (Some(Tls13), None));
        assert_eq!(
            range(&["force-tlsv12"]).unwrap().0,
            (Some(Tls12), Some(Tls12))
        );
        assert_eq!(
            range(&["force-tlsv13"]).unwrap().0,
            (Some(Tls13), Some(Tls13))
        );
        assert_eq!(
            range(&["ssl-min-ver", "TLSv1.2"]).unwrap().0,
            (Some(Tls12), None)
        );
        assert_eq!(
            range(&["ssl-max-ver", "TLSv1.2"]).unwrap().0,
            (None, Some(Tls12))
        );
        assert_eq!(
            range(&["ssl-min-ver", "TLSv1.3"]).unwrap().0,
            (Some(Tls13), None)
        );
        // Below TLSv1.2: accepted, clamped, with a warning.
        let (r, w) = range(&["ssl-min-ver", "TLSv1.0"]).unwrap();
        assert_eq!(r, (Some(Tls12), None));
        assert!(
            w[0].contains("never offers versions below TLSv1.2"),
            "{w:?}"
        );
        // HAProxy ignores no-* once a bound is set, with a warning.
        let (r, w) = range(&["ssl-min-ver", "TLSv1.2", "no-tlsv13"]).unwrap();
        assert_eq!(r, (Some(Tls12), None));
        assert!(w[0].contains("no-sslv3/no-tlsv1x are ignored"), "{w:?}");
        // Nothing left.
        assert_eq!(
            range(&["no-tlsv12", "no-tlsv13"]).unwrap_err(),
            "all SSL/TLS versions are disabled"
        );
        assert_eq!(
            range(&["ssl-min-ver", "TLSv1.3", "ssl-max-ver", "TLSv1.2"]).unwrap_err(),
            "all SSL/TLS versions are disabled"
        );
        assert!(range(&["force-tlsv11"]).unwrap_err().contains(
            "only TLSv1.1 would be offered, and Fairlead supports TLSv1.2 and TLSv1.3 only"
        ));
        assert!(range(&["ssl-max-ver", "TLSv1.1"])
            .unwrap_err()
            .contains("only TLSv1.1 would be offered"));
        // Servers have no default minimum in HAProxy.
        let m = methods(&["no-tlsv12", "no-tlsv13"]);
        assert!(m
            .resolve(false, &mut Vec::new())
            .unwrap_err()
            .contains("only SSLv3, TLSv1.0, TLSv1.1 would be offered"));
    }

    #[test]
    fn defaults_complete_methods() {
        let g = methods(&["no-tlsv13", "ssl-min-ver", "TLSv1.2"]);
        let m = methods(&["no-sslv3"]).with_defaults(&g);
        assert_eq!(m.disabled, vec![Ssl3, Tls13]);
        assert_eq!(m.min, Some(Tls12));
        let m = methods(&["ssl-min-ver", "TLSv1.3"]).with_defaults(&g);
        assert_eq!(m.min, Some(Tls13));
    }

    #[test]
    fn bad_versions_and_options() {
        let e = Methods::default()
            .minmax("ssl-min-ver", "TLSv1.4")
            .unwrap_err();
        assert_eq!(e, "'ssl-min-ver': unknown ssl/tls version 'TLSv1.4'; expects one of 'SSLv3', 'TLSv1.0', 'TLSv1.1', 'TLSv1.2' or 'TLSv1.3'");
        assert!(!Methods::default().option("no-tlsv14"));
        assert!(!Methods::default().option("tlsv12"));
    }

    #[test]
    fn alpn_lists() {
        assert_eq!(parse_alpn("h2,http/1.1").unwrap(), ["h2", "http/1.1"]);
        assert_eq!(parse_alpn("http/1.1").unwrap(), ["http/1.1"]);
        assert!(parse_alpn("h2,,x")
            .unwrap_err()
            .contains("empty protocol name"));
        assert!(parse_alpn("").unwrap_err().contains("missing"));
        assert!(parse_alpn(&"a".repeat(256))
            .unwrap_err()
            .contains("too long"));
    }

    #[test]
    fn sni_forms() {
        assert_eq!(
            parse_sni("str(www.example.com)").unwrap(),
            SniSource::Fixed("www.example.com".into())
        );
        assert_eq!(parse_sni("ssl_fc_sni").unwrap(), SniSource::ClientSni);
        for h in ["req.hdr(host)", "hdr(host)", "req.hdr(Host)", "hdr(HOST)"] {
            assert_eq!(parse_sni(h).unwrap(), SniSource::HostHeader, "{h}");
        }
        for bad in [
            "str()",
            "req.hdr(x-host)",
            "ssl_fc_sni,lower",
            "var(txn.sni)",
            "str(a),lower",
        ] {
            assert_eq!(
                parse_sni(bad).unwrap_err(),
                format!("sni expression '{bad}' is not supported yet; use str(<name>), ssl_fc_sni or req.hdr(host)")
            );
        }
    }

    #[test]
    fn base_paths() {
        assert_eq!(with_base(Some("/etc/ssl"), "a.pem"), "/etc/ssl/a.pem");
        assert_eq!(with_base(Some("/etc/ssl/"), "d/a.pem"), "/etc/ssl/d/a.pem");
        assert_eq!(with_base(Some("/etc/ssl"), "/abs.pem"), "/abs.pem");
        assert_eq!(with_base(Some("/etc/ssl"), "@system-ca"), "@system-ca");
        assert_eq!(with_base(None, "a.pem"), "a.pem");
        assert_eq!(with_base(Some("/"), "a.pem"), "/a.pem");
    }

    #[test]
    fn default_options() {
        let w = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let mut d = DefaultTls::default();
        let warns = parse_default_options(
            &w("ssl-default-bind-options prefer-client-ciphers no-sslv3 ssl-min-ver TLSv1.2 no-tls-tickets"),
            &mut d,
            true,
        )
        .unwrap();
        assert!(d.no_tickets);
        assert_eq!(d.methods.min, Some(Tls12));
        assert_eq!(d.methods.disabled, vec![Ssl3]);
        assert_eq!(
            warns,
            ["'prefer-client-ciphers' has no effect in Fairlead (rustls); ignored"]
        );
        let mut d = DefaultTls::default();
        assert_eq!(
            parse_default_options(&w("ssl-default-server-options prefer-client-ciphers"), &mut d, false)
                .unwrap_err(),
            "unknown option 'prefer-client-ciphers' on global statement 'ssl-default-server-options'."
        );
        assert!(
            parse_default_options(&w("ssl-default-bind-options ssl-max-ver"), &mut d, true)
                .unwrap_err()
                .contains("missing the ssl/tls version")
        );
        assert!(parse_default_options(
            &w("ssl-default-bind-options ssl-max-ver TLS1"),
            &mut d,
            true
        )
        .unwrap_err()
        .contains("unknown ssl/tls version 'TLS1'"));
        assert!(
            parse_default_options(&w("ssl-default-bind-options"), &mut d, true)
                .unwrap_err()
                .contains("expects an option as an argument")
        );
        assert!(
            parse_default_options(&w("ssl-default-bind-options strict-sni"), &mut d, true)
                .unwrap_err()
                .contains("unknown option 'strict-sni'")
        );
    }
}
