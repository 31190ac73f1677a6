//! The stick table commands: `show table [<table> [data.<type> <op> <v>]
//! [key <key>]]`, `clear table <table> [key <key> | data.<type> <op>
//! <v>]` and `set table <table> key <key> [data.<type> <v>]*`. The
//! process runs them ([`crate::AdminApi::table_command`]) and prints
//! HAProxy's output; without stick tables every table is unknown.

use crate::commands::Command;
use crate::session::Session;
use crate::Level;

pub(crate) static COMMANDS: &[Command] = &[
    Command {
        words: &["clear", "table"],
        usage: "clear table <table> [<filter>]*",
        help: "remove an entry from a table (filter: data/key)",
        level: Level::Operator,
        run,
    },
    Command {
        words: &["set", "table"],
        usage: "set table <table> key <k> [data.* <v>]*",
        help: "update or create a table entry's data",
        level: Level::Admin,
        run,
    },
    Command {
        words: &["show", "table"],
        usage: "show table <table> [<filter>]*",
        help: "report table usage stats or dump this table's contents (filter: data/key)",
        level: Level::Operator,
        run,
    },
];

fn run(s: &mut Session, w: &[String]) -> String {
    let words: Vec<&str> = w.iter().map(String::as_str).collect();
    match s.api.table_command(&words) {
        Some(Ok(out)) => out,
        Some(Err(e)) => e,
        None => "No such table\n".to_string(),
    }
}
