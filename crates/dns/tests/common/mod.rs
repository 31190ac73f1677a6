//! Helpers of the resolver tests: a real dnsmasq ([`dnsmasq`]) and polling
//! with a deadline.

#![allow(dead_code)]

mod dnsmasq;
pub use dnsmasq::*;

use std::time::Duration;

/// Polls `check` until it returns Some, failing after `limit`.
pub async fn wait_for<T>(limit: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
