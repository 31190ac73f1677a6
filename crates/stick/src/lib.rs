//! HAProxy-compatible stick tables (HAProxy 2.6 semantics).
//!
//! * [`spec`]: the `stick-table` declaration ([`TableSpec::parse`]), key
//!   and data types;
//! * [`key`]: converting samples to keys ([`KeyInput`]), printing and
//!   parsing keys;
//! * [`freq`]: HAProxy's `freq_ctr` rates, bit for bit;
//! * [`table`]: the shared, sharded [`Table`] with expiry, purge and
//!   reference-counted [`EntryRef`] handles; counter updates per event are
//!   methods of [`EntryRef`] (see `events.rs`);
//! * [`track`]: the per-connection [`Trackers`] slots (`track-sc0..2`) and
//!   which event updates which counter;
//! * [`cli`]: `show table`, `clear table`, `set table` output;
//! * [`peer`]: the peers protocol's update queue and apply entry point;
//! * [`fetch`]: the `sc_*`, `src_*`, `table_*` fetches and converters.
//!
//! Nothing here reads a clock: every call that depends on time takes `now`
//! in milliseconds on the caller's monotonic clock.
#![forbid(unsafe_code)]

pub mod cli;
pub mod data;
mod events;
pub mod fetch;
pub mod freq;
pub mod key;
pub mod peer;
pub mod spec;
pub mod table;
pub mod track;

pub use data::{Gpc, Gpt, Value};
pub use key::{KeyInput, TableKey};
pub use peer::{PeerVal, Pending};
pub use spec::{DataType, KeyType, SrvKey, Stored, TableSpec};
pub use table::{EntryRef, InUse, Table};
pub use track::{Levels, TrackFrom, Trackers};
