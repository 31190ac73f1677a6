//! HAProxy-compatible run-time DNS resolution for Fairlead (HAProxy 2.6
//! `configuration.txt` section 5.3 "Server IP address resolution using
//! DNS").
//!
//! The crate is standalone: the configuration and the backends call it.
//!
//! - [`config`]: the `resolvers NAME` section (`nameserver`,
//!   `parse-resolv-conf`, `accepted_payload_size`, `resolve_retries`,
//!   `timeout resolve|retry`, `hold ...`), one line at a time.
//! - [`server`]: the server options `resolvers`, `resolve-prefer`,
//!   `resolve-net`, `resolve-opts` and `init-addr`.
//! - [`wire`]: queries and response checks, through hickory-proto.
//! - [`runtime`]: [`Resolvers`], the task of one section. Names are
//!   registered with [`Resolvers::subscribe`] and published on a
//!   `tokio::sync::watch` channel as a [`NameState`]; [`Resolvers::run`]
//!   resolves them every `timeout resolve`; [`Resolvers::resolve_once`]
//!   serves `do-resolve`; [`show_resolvers`] prints the runtime API's
//!   `show resolvers`.
//! - [`hold`]: the `hold` rules and `hold obsolete`, with time passed in.
//! - [`events`]: a plain server's side ([`ServerResolver`]): which address
//!   it takes (HAProxy's scoring) and the log events ([`DnsEvent`]).
//! - [`template`]: `server-template` slots filled from A/AAAA or SRV
//!   answers ([`TemplateSlots`]).
//! - [`counters`]: per-nameserver counters.
//!
//! Typical wiring, per `resolvers` section:
//!
//! ```no_run
//! # async fn demo() -> Result<(), String> {
//! use fairlead_dns::{NameKind, Resolvers, ResolversSection, ServerResolver, ServerId, AddrPolicy, Family};
//! let mut section = ResolversSection::new("mydns");
//! section.parse_line(&["nameserver", "dns1", "10.0.0.1:53"])?;
//! let resolvers = Resolvers::new(section)?;
//! let mut rx = resolvers.subscribe("app.example.com", NameKind::Addr(Family::Ipv6))?;
//! tokio::spawn(resolvers.clone().run());
//! let mut server = ServerResolver::new(ServerId::new("be", "s1"), AddrPolicy::default(), None, true);
//! while rx.changed().await.is_ok() {
//!     let state = rx.borrow_and_update().clone();
//!     for event in server.apply(&state, &[]) {
//!         eprintln!("{event}."); // and apply server.addr() / maintenance
//!     }
//! }
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

pub mod config;
pub mod counters;
pub mod events;
pub mod hold;
pub mod runtime;
pub mod server;
pub mod template;
pub mod time;
pub mod transport;
pub mod wire;

pub use config::{HoldPeriods, Nameserver, ResolversSection, Transport};
pub use events::{select_address, AddrPolicy, DnsEvent, MaintReason, ServerId, ServerResolver};
pub use hold::{NameState, Status};
pub use runtime::{show_resolvers, NameKind, Resolvers};
pub use server::{Family, InitAddrMethod, InitAddrOutcome, ServerDnsOptions};
pub use template::{Slot, TemplateSlots};
pub use wire::{Answer, Record, SrvRecord};
