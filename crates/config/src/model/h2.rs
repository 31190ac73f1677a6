//! `tune.h2.*`: the HTTP/2 settings of the `global` section.

/// `tune.h2.*`, HTTP/2 settings for connections from clients (`fe`) and
/// to servers (`be`). A side-specific keyword (`tune.h2.fe.*`,
/// `tune.h2.be.*`) wins over the common one whatever their order, as in
/// HAProxy. Read the effective values with the methods.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct H2Tune {
    /// `tune.h2.header-table-size`: the HPACK decoder table size
    /// advertised (SETTINGS_HEADER_TABLE_SIZE), at most 65536. Default is
    /// none: 4096.
    pub header_table_size: Option<u32>,
    /// `tune.h2.initial-window-size`: both sides' stream receive window
    /// (SETTINGS_INITIAL_WINDOW_SIZE). Default is none: 65535.
    pub initial_window_size: Option<u32>,
    /// `tune.h2.fe.initial-window-size`. Default is none: the common one.
    pub fe_initial_window_size: Option<u32>,
    /// `tune.h2.be.initial-window-size`. Default is none: the common one.
    pub be_initial_window_size: Option<u32>,
    /// `tune.h2.max-concurrent-streams`: streams one connection may
    /// carry at once, on both sides (to a server, the lower of this and
    /// the server's own limit). 0 means no limit. Default is none: 100.
    pub max_concurrent_streams: Option<u32>,
    /// `tune.h2.fe.max-concurrent-streams`. Default is none: the common
    /// one.
    pub fe_max_concurrent_streams: Option<u32>,
    /// `tune.h2.be.max-concurrent-streams`. Default is none: the common
    /// one.
    pub be_max_concurrent_streams: Option<u32>,
    /// `tune.h2.max-frame-size`: SETTINGS_MAX_FRAME_SIZE advertised, 16384
    /// to 16777215. Default is none: 16384.
    pub max_frame_size: Option<u32>,
    /// `tune.h2.fe.max-total-streams`: streams a client connection may
    /// open in its life; the last one is followed by a GOAWAY, and the
    /// client opens a new connection. 0 means no limit. Default is none:
    /// no limit.
    pub fe_max_total_streams: Option<u32>,
    /// `tune.h2.fe.glitches-threshold`: the abuse budget of a client
    /// connection (see `docs/http2.md`); 0 disables it. Default is none:
    /// 200 (HAProxy ships it disabled).
    pub fe_glitches_threshold: Option<u32>,
    /// `tune.h2.be.glitches-threshold`: the same for server
    /// connections. Default is none: 200.
    pub be_glitches_threshold: Option<u32>,
}

impl H2Tune {
    /// Decoder table size. Default is 4096.
    pub fn header_table_size(&self) -> u32 {
        self.header_table_size.unwrap_or(4096)
    }
    /// Stream receive window toward clients (`fe`) or servers. Default is
    /// 65535.
    pub fn initial_window_size(&self, fe: bool) -> u32 {
        let side = if fe {
            self.fe_initial_window_size
        } else {
            self.be_initial_window_size
        };
        side.or(self.initial_window_size).unwrap_or(65_535)
    }
    /// Concurrent streams per connection (0: no limit). Default is 100.
    pub fn max_concurrent_streams(&self, fe: bool) -> u32 {
        let side = if fe {
            self.fe_max_concurrent_streams
        } else {
            self.be_max_concurrent_streams
        };
        side.or(self.max_concurrent_streams).unwrap_or(100)
    }
    /// Largest frame payload accepted. Default is 16384.
    pub fn max_frame_size(&self) -> u32 {
        self.max_frame_size.unwrap_or(16_384)
    }
    /// Streams per client connection before GOAWAY (0: no limit).
    /// Default is 0.
    pub fn fe_max_total_streams(&self) -> u32 {
        self.fe_max_total_streams.unwrap_or(0)
    }
    /// The abuse budget (0: off). Default is 200.
    pub fn glitches_threshold(&self, fe: bool) -> u32 {
        let side = if fe {
            self.fe_glitches_threshold
        } else {
            self.be_glitches_threshold
        };
        side.unwrap_or(200)
    }
}
