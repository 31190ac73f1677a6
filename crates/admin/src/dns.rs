//! The DNS commands: `show resolvers [<id>]` and `set server <b>/<s> fqdn
//! <name>` (HAProxy's management guide, section 9.3).

use crate::api::ServerRef;
use crate::session::Session;

fn with_newline(mut msg: String) -> String {
    if !msg.ends_with('\n') {
        msg.push('\n');
    }
    msg
}

/// `show resolvers [<id>]`.
pub(crate) fn show_resolvers(s: &mut Session, w: &[String]) -> String {
    match s.api.show_resolvers(w.get(2).map(String::as_str)) {
        Ok(out) | Err(out) => with_newline(out),
    }
}

/// `set server <b>/<s> fqdn <name>`.
pub(crate) fn set_fqdn(s: &Session, target: &ServerRef, value: &str) -> String {
    if value.is_empty() {
        return "set server <b>/<s> fqdn requires a FQDN.\n".into();
    }
    match s.api.set_server_fqdn(target, value) {
        Ok(out) | Err(out) => with_newline(out),
    }
}
