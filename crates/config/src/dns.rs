//! DNS in the configuration: the `resolvers NAME` sections (parsed line by
//! line with [`fairlead_dns::ResolversSection`]), the `server-template`
//! line, and the cross checks between servers and sections.
//!
//! `parse-resolv-conf` (and HAProxy's implicit `default` section) read
//! `/etc/resolv.conf`: the one place this crate reads a file.

use crate::diag::Diags;
use crate::model::{Backend, Location, OtherSection, Server, ServerAddr, ServerTemplate};
use crate::server::{parse_server, ServerDefaults};
use crate::tls::ServerDraft;
use fairlead_dns::template::{parse_template_fqdn, parse_template_range};
use fairlead_dns::ResolversSection;

/// The most slots one `server-template` may declare. Default is 1024
/// (HAProxy has no limit; this keeps a typo from allocating millions).
pub const MAX_TEMPLATE_SLOTS: u32 = 1024;

/// Builds the `resolvers` sections from the stored sections, reporting
/// errors at their line.
pub(crate) fn build_resolvers(others: &[OtherSection], diags: &mut Diags) -> Vec<ResolversSection> {
    let mut out: Vec<ResolversSection> = Vec::new();
    for o in others.iter().filter(|o| o.kind == "resolvers") {
        let mut header = vec!["resolvers"];
        if !o.name.is_empty() {
            header.push(o.name.as_str());
        }
        let mut section = match ResolversSection::parse_header(&header) {
            Ok(s) => s,
            Err(e) => {
                diags.alert(&o.location, e);
                continue;
            }
        };
        if let Some(prev) = out.iter().find(|s| s.name == o.name) {
            diags.alert(
                &o.location,
                format!(
                    "resolvers '{}' has the same name as another resolvers section",
                    prev.name
                ),
            );
            continue;
        }
        for (loc, words) in &o.lines {
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            match section.parse_line(&words) {
                Ok(warnings) => {
                    for w in warnings {
                        diags.warn(loc, format!("resolvers '{}': {w}", o.name));
                    }
                }
                Err(e) => diags.alert(loc, format!("resolvers '{}': {e}", o.name)),
            }
        }
        if let Err(e) = section.validate() {
            diags.alert(&o.location, e);
        }
        out.push(section);
    }
    out
}

/// Checks that every server's `resolvers` names a section. A server
/// naming `default` when no such section exists gets HAProxy's implicit
/// one (the nameservers of `/etc/resolv.conf`), added to `sections`.
pub(crate) fn check_servers(
    backends: &[Backend],
    sections: &mut Vec<ResolversSection>,
    diags: &mut Diags,
) {
    for be in backends {
        for s in &be.servers {
            let Some(name) = &s.dns.resolvers else {
                continue;
            };
            if sections.iter().any(|r| &r.name == name) {
                continue;
            }
            if name == "default" {
                let path = std::path::Path::new(fairlead_dns::config::DEFAULT_RESOLV_CONF);
                match ResolversSection::default_section(path) {
                    Ok((section, warnings)) => {
                        for w in warnings {
                            diags.warn(&s.location, format!("resolvers 'default': {w}"));
                        }
                        sections.push(section);
                        continue;
                    }
                    Err(e) => {
                        diags.alert(&s.location, format!("resolvers 'default': {e}"));
                        continue;
                    }
                }
            }
            diags.alert(
                &s.location,
                format!(
                    "backend '{}', server '{}': unable to find required resolvers '{name}'",
                    be.name, s.name
                ),
            );
        }
    }
}

/// Parses `server-template PREFIX N[-M] FQDN[:PORT] [options]` into one
/// server per slot, each in maintenance until DNS gives it an address.
pub(crate) fn parse_template(
    words: &[String],
    defaults: &ServerDefaults,
    loc: &Location,
    diags: &mut Diags,
) -> Option<Vec<(Server, ServerDraft)>> {
    if words.len() < 4 {
        diags.alert(
            loc,
            "'server-template' expects <prefix> <nb | range> <fqdn>[:<port>] as arguments.",
        );
        return None;
    }
    let prefix = &words[1];
    let parsed = parse_template_range(&words[2])
        .and_then(|range| Ok((range, parse_template_fqdn(&words[3])?)));
    let (range, (fqdn, port)) = match parsed {
        Ok(p) => p,
        Err(e) => {
            diags.alert(loc, e);
            return None;
        }
    };
    if range.1 - range.0 >= MAX_TEMPLATE_SLOTS {
        diags.alert(
            loc,
            format!(
                "'server-template {prefix}': {} slots is more than Fairlead's limit of {MAX_TEMPLATE_SLOTS}",
                u64::from(range.1 - range.0) + 1
            ),
        );
        return None;
    }
    // The options are parsed once, as a `server` line would be (the
    // address given there is a placeholder, replaced below).
    let mut line = vec![
        "server".to_string(),
        format!("{prefix}{}", range.0),
        "0.0.0.0:1".to_string(),
    ];
    line.extend(words[4..].iter().cloned());
    let (first, tls) = parse_server(&line, defaults, loc, diags)?;
    if first.dns.resolvers.is_none() {
        diags.alert(
            loc,
            format!("'server-template {prefix}': 'resolvers' is required (Fairlead fills template slots from run-time DNS only)"),
        );
        return None;
    }
    if first.id.is_some() {
        diags.alert(
            loc,
            format!("'server-template {prefix}': 'id' cannot be set on a template"),
        );
        return None;
    }
    let out = (range.0..=range.1)
        .map(|n| {
            let s = Server {
                name: format!("{prefix}{n}"),
                addr: ServerAddr::Name(fqdn.clone(), port.unwrap_or(0)),
                template: Some(ServerTemplate {
                    prefix: prefix.clone(),
                    range,
                    fqdn: fqdn.clone(),
                    port,
                    slot: n,
                }),
                ..first.clone()
            };
            (s, tls.clone())
        })
        .collect();
    Some(out)
}

#[cfg(test)]
#[path = "dns_tests.rs"]
mod tests;
