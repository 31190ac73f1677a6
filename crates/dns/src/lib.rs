#![forbid(unsafe_code)]
pub mod config;
pub mod events;
pub mod hold;
pub mod server;
pub mod template;
pub mod time;
pub mod wire;
