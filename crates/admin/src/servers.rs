//! Servers managed at run time (HAProxy's dynamic servers): `add server
//! <bk>/<srv> <addr>[:<port>] [options]`, `del server <bk>/<srv>`, and
//! `enable|disable health <bk>/<srv>` which starts the checks of a server
//! added with `check`. The process does the work
//! ([`crate::AdminApi::add_server`], [`crate::AdminApi::del_server`],
//! [`crate::AdminApi::set_health_checks`]); this module parses the
//! arguments and prints HAProxy's messages.

use crate::commands::{find_backend, find_server, with_newline, Command};
use crate::session::Session;
use crate::Level;

pub(crate) static COMMANDS: &[Command] = &[
    Command {
        words: &["add", "server"],
        usage: "add server <bk>/<srv>",
        help: "create a new server",
        level: Level::Admin,
        run: add_server,
    },
    Command {
        words: &["del", "server"],
        usage: "del server <bk>/<srv>",
        help: "remove a dynamically added server",
        level: Level::Admin,
        run: del_server,
    },
    Command {
        words: &["enable", "health"],
        usage: "enable health",
        help: "enable health checks",
        level: Level::Admin,
        run: enable_health,
    },
    Command {
        words: &["disable", "health"],
        usage: "disable health",
        help: "disable health checks",
        level: Level::Admin,
        run: disable_health,
    },
];

fn add_server(s: &mut Session, w: &[String]) -> String {
    let spec = w.get(2).map_or("", String::as_str);
    let Some((be, name)) = spec
        .split_once('/')
        .filter(|(b, n)| !b.is_empty() && !n.is_empty())
    else {
        return "Require 'backend/server'.\n".into();
    };
    let list = s.api.backends();
    let Some((bi, _)) = find_backend(&list, be) else {
        return "No such backend.\n".into();
    };
    match s.api.add_server(bi, name, w.get(3..).unwrap_or(&[])) {
        Ok(m) | Err(m) => with_newline(m),
    }
}

fn del_server(s: &mut Session, w: &[String]) -> String {
    let f = match find_server(s, w.get(2).map_or("", String::as_str)) {
        Ok(f) => f,
        Err(e) => return e,
    };
    match s.api.del_server(&f.target) {
        Ok(m) | Err(m) => with_newline(m),
    }
}

fn health(s: &mut Session, w: &[String], on: bool) -> String {
    let f = match find_server(s, w.get(2).map_or("", String::as_str)) {
        Ok(f) => f,
        Err(e) => return e,
    };
    match s.api.set_health_checks(&f.target, on) {
        Ok(()) => String::new(),
        Err(e) => with_newline(e),
    }
}

fn enable_health(s: &mut Session, w: &[String]) -> String {
    health(s, w, true)
}

fn disable_health(s: &mut Session, w: &[String]) -> String {
    health(s, w, false)
}
