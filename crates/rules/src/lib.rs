//! HAProxy's rule layer, compiled at load time into flat evaluation plans.
//!
//! * [`sample`]: the sample types (`bool`, `sint`, `ipv4`, `ipv6`, `str`,
//!   `bin`, `meth`) and HAProxy 2.6's implicit cast table;
//! * [`fetch`]: sample fetches, what each needs and where it is valid;
//!   [`txn::Txn`] is the view of a stream that fetches read;
//! * [`conv`]: converters; [`expr`]: `fetch(args),conv(args),...`;
//! * [`pattern`] and [`map`]: match methods, pattern sets (trees where
//!   HAProxy uses trees, so the same entry wins) and shared pattern
//!   references (`-f` files and maps, editable at run time);
//! * [`acl`] and [`cond`]: `acl` lines, predefined ACLs and `if`/`unless`
//!   conditions with three-valued logic;
//! * [`action`], [`redirect`], [`answer`]: what rules do; [`exec`] runs a
//!   rule set against a [`exec::Stream`]; [`proxy::ProxyRules`] holds all
//!   the rules of one proxy section;
//! * [`fmt`]: log-format strings in rule arguments;
//! * [`userlist`] and [`reply`]: `userlist` sections with crypt(3)
//!   passwords, error pages and reply payloads;
//! * [`docs`]: the reference tables of `docs/rules.md`, generated from the
//!   catalogs above.
//!
//! Nothing here does network I/O; pattern, map and error files are read
//! when a configuration is compiled.
#![forbid(unsafe_code)]

pub mod acl;
pub mod action;
pub mod answer;
pub mod cond;
pub mod conv;
pub mod docs;
pub mod exec;
pub mod expr;
pub mod fetch;
pub mod fmt;
pub mod hash;
pub mod map;
pub mod pattern;
pub mod proxy;
mod rand;
pub mod rdp;
pub mod redirect;
pub mod reply;
pub mod resolve;
pub mod sample;
pub mod stick;
pub mod stick_actions;
pub mod sticking;
mod tlshello;
pub mod txn;
pub mod uniqueid;
pub mod userlist;
pub mod vars;

pub use sample::{Sample, SmpType};

use std::collections::HashMap;
use std::sync::Arc;

/// What compiling rules needs from the whole configuration.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// Pattern and map files, shared by path.
    pub patterns: pattern::Registry,
    /// `userlist` sections by name.
    pub userlists: HashMap<String, Arc<userlist::Userlist>>,
    /// `http-errors` sections by name: status → raw response.
    pub http_errors: HashMap<String, HashMap<u16, Arc<[u8]>>>,
    /// Stick tables by name (`track-sc... table T`, `sc_*`, `table_*`).
    pub tables: HashMap<String, fairlead_stick::Table>,
    /// The table of the section whose rules are being compiled: the
    /// default of `track-sc` and `src_*`. Default is none.
    pub own_table: Option<fairlead_stick::Table>,
    /// The names of the `resolvers` sections (`do-resolve`). Default is
    /// none.
    pub resolvers: std::collections::HashSet<String>,
}
