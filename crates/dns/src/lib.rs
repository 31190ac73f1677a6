#![forbid(unsafe_code)]
pub mod config;
pub mod server;
pub mod time;
pub mod wire;
pub mod events;
pub mod hold;
