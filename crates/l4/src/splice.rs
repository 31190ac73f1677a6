//! Splicing in the tunnel: which directions splice (`option
//! splice-request|splice-response|splice-auto`), the bulk-data detection
//! of `splice-auto`, and the forwarding of one readable burst through a
//! pipe ([`fairlead_net::splice`]).
//!
//! A spliced burst behaves as the buffer copy does for everything the
//! stream sees: the bytes are counted when they leave the source, the
//! activity time moves on each read and write, a write waits at most the
//! write-side timeout, and end of stream on the source is the same
//! [`PumpEnd::Eof`] (the caller half-closes). The pipe is empty whenever
//! the burst ends normally; on an error it may still hold bytes and the
//! pool closes it.

use crate::{Dir, PumpEnd, Shared};
use fairlead_net::io::with_timeout;
use fairlead_net::splice::Pipe;
use std::io::ErrorKind;
use tokio::time::Instant;

/// How one direction splices. Default is `Off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SpliceMode {
    /// Copy through buffers.
    #[default]
    Off,
    /// Splice once the direction carries bulk data (`option
    /// splice-auto`): after [`STREAMER_READS`] reads in a row filled the
    /// buffer.
    Auto,
    /// Splice from the first byte (`option splice-request` or
    /// `splice-response`).
    Always,
}

/// The splicing of both directions of a tunnel. Default is no splicing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TunnelSplice {
    /// Client to server.
    pub request: SpliceMode,
    /// Server to client.
    pub response: SpliceMode,
}

impl TunnelSplice {
    /// The modes a stream's proxies ask for (the frontend's options ORed
    /// with the backend's, as HAProxy does), or none when splicing is off
    /// for the process (`nosplice`, `-dS`, no pipe allowed).
    pub fn from_options(o: fairlead_config::Splice) -> TunnelSplice {
        if !fairlead_net::splice::enabled() {
            return TunnelSplice::default();
        }
        let mode = |always: bool| match (always, o.auto) {
            (true, _) => SpliceMode::Always,
            (false, true) => SpliceMode::Auto,
            (false, false) => SpliceMode::Off,
        };
        TunnelSplice {
            request: mode(o.request),
            response: mode(o.response),
        }
    }
}

/// Reads in a row that must fill the buffer before `splice-auto` starts
/// splicing a direction (HAProxy's "fast streamer": the buffer was filled
/// in one read three consecutive times). Default is 3.
pub const STREAMER_READS: u8 = 3;

/// The bulk-data detection of one direction.
#[derive(Debug)]
pub(crate) struct Streamer {
    mode: SpliceMode,
    full_reads: u8,
}

impl Streamer {
    pub(crate) fn new(mode: SpliceMode) -> Streamer {
        Streamer {
            mode,
            full_reads: 0,
        }
    }

    /// The next burst should go through a pipe. Once a direction splices,
    /// it stays so.
    pub(crate) fn splicing(&self) -> bool {
        match self.mode {
            SpliceMode::Off => false,
            SpliceMode::Always => true,
            SpliceMode::Auto => self.full_reads >= STREAMER_READS,
        }
    }

    /// Records one buffered read: `full` when it filled the buffer.
    pub(crate) fn record_read(&mut self, full: bool) {
        if self.splicing() {
            return;
        }
        self.full_reads = if full {
            self.full_reads.saturating_add(1)
        } else {
            0
        };
    }
}

/// Bytes one burst moves at most before it lets the other tasks of the
/// thread run. Default is 256 KiB.
pub const BURST_MAX: u64 = 256 * 1024;

/// Moves what `src` holds to `dst` through `pipe`: fill, then drain
/// completely, until the source has nothing more (`None`: wait for
/// readiness again), [`BURST_MAX`] bytes moved (`None` too, the source
/// is still readable), or the direction ended (`Some`).
pub(crate) async fn forward_spliced(
    dir: &Dir<'_>,
    shared: &Shared,
    pipe: &mut Pipe,
) -> Option<PumpEnd> {
    let (Some(src), Some(dst)) = (dir.src.tcp(), dir.dst.tcp()) else {
        // Not reached: only epoll sockets splice (see `tunnel_spliced`).
        return Some(PumpEnd::ReadError);
    };
    let mut moved = 0u64;
    while moved < BURST_MAX {
        match pipe.fill_from(src) {
            Ok(0) => return Some(PumpEnd::Eof),
            Ok(n) => {
                shared.last_activity.set(Instant::now());
                dir.count.set(dir.count.get() + n as u64);
                moved += n as u64;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return None,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return Some(PumpEnd::ReadError),
        }
        while pipe.held() > 0 {
            match pipe.drain_to(dst) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    let room = dst.writable();
                    if with_timeout(dir.write_idle, "write timeout", room)
                        .await
                        .is_err()
                    {
                        return Some(PumpEnd::WriteError);
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Some(PumpEnd::WriteError),
            }
        }
        shared.last_activity.set(Instant::now());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_splices_after_three_full_reads_in_a_row() {
        let mut s = Streamer::new(SpliceMode::Auto);
        s.record_read(true);
        s.record_read(true);
        s.record_read(false);
        assert!(!s.splicing(), "a short read restarts the count");
        for _ in 0..2 {
            s.record_read(true);
        }
        assert!(!s.splicing());
        s.record_read(true);
        assert!(s.splicing());
        s.record_read(false);
        assert!(s.splicing(), "stays on");
        assert!(Streamer::new(SpliceMode::Always).splicing());
        let mut off = Streamer::new(SpliceMode::Off);
        for _ in 0..10 {
            off.record_read(true);
        }
        assert!(!off.splicing());
    }
}
