//! Fuzzes the TLS server driver (`fairlead_tls::stream`) with arbitrary
//! network input: the first byte picks where the input is cut into two
//! chunks (a record split across reads). rustls errors are fine; a panic
//! is not (the release build aborts on panic).
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;

/// A throw-away self-signed ECDSA certificate and key, for fuzzing only.
const CERT: &str = include_str!("fuzz_cert.pem");

fn config() -> Arc<rustls::ServerConfig> {
    static CFG: OnceLock<Arc<rustls::ServerConfig>> = OnceLock::new();
    CFG.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("fairlead-fuzz-{}.pem", std::process::id()));
        std::fs::write(&path, CERT).unwrap();
        let cfg = fairlead_config::BindTls {
            crt: vec![path.display().to_string()],
            ..Default::default()
        };
        fairlead_tls::BindContext::build(&cfg).unwrap().config()
    })
    .clone()
}

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let at = usize::from(cut) * rest.len() / 256;
    let (a, b) = rest.split_at(at);
    fairlead_tls::stream::fuzz_server_input(config(), &[a, b]);
});
