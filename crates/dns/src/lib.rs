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
