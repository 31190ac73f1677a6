//! Human and machine-readable output: the per-second line, the final text
//! report and the JSON document (written by hand, no serde).

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use crate::stats::{ErrKind, Sample, ERR_NAMES};
use crate::Summary;

/// Percentiles reported (and plotted as reference points).
pub const PERCENTILES: [f64; 7] = [50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999];

/// Column titles of [`live_line`].
pub const LIVE_HEADER: &str =
    "#   time  open  tconn      treq     req/s   conn/s    bytes/s   errs  ttfb50ms  ttlb50ms";

/// One per-second line.
pub fn live_line(s: &Sample) -> String {
    format!(
        "{:8.1} {:5} {:6} {:9} {:9.0} {:8.0} {:>10} {:6} {:9.3} {:9.3}",
        s.time,
        s.open,
        s.total_conns,
        s.total_reqs,
        s.reqs_per_s,
        s.conns_per_s,
        human(s.bytes_per_s),
        s.errors,
        ms(s.ttfb_p50),
        ms(s.ttlb_p50),
    )
}

/// Nanoseconds to milliseconds.
pub fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// 1234567 -> "1.23M" (1000-based, as rates usually are).
pub fn human(v: f64) -> String {
    const UNITS: [&str; 5] = ["", "k", "M", "G", "T"];
    let mut v = v;
    let mut u = 0;
    while v >= 1000.0 && u < UNITS.len() - 1 {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}{}", UNITS[u])
    }
}

/// Value at percentile `p` (0..100), 0 for an empty histogram.
pub fn pct(h: &Histogram<u64>, p: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_percentile(p)
    }
}

fn mean(h: &Histogram<u64>) -> f64 {
    if h.is_empty() {
        0.0
    } else {
        h.mean()
    }
}

/// The final report.
pub fn text(s: &Summary) -> String {
    let t = &s.totals;
    let secs = s.elapsed.as_secs_f64().max(1e-9);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\n{} requests, {} connections, {} bytes received in {:.3} s ({} threads, {} connections target{})",
        t.responses,
        t.opened,
        t.bytes,
        secs,
        s.threads,
        s.conns,
        match s.rate {
            Some(r) => format!(", {r} req/s requested"),
            None => String::new(),
        }
    );
    let _ = writeln!(
        o,
        "averages: {:.1} req/s, {:.1} conn/s, {}B/s, {:.1} req/conn",
        t.responses as f64 / secs,
        t.opened as f64 / secs,
        human(t.bytes as f64 / secs),
        if t.opened > 0 {
            t.responses as f64 / t.opened as f64
        } else {
            0.0
        },
    );
    let _ = writeln!(
        o,
        "status: 1xx={} 2xx={} 3xx={} 4xx={} 5xx={} other={}",
        t.status[1], t.status[2], t.status[3], t.status[4], t.status[5], t.status[0]
    );
    let _ = write!(o, "errors: {} (", t.error_count());
    for (i, n) in ERR_NAMES.iter().enumerate() {
        let _ = write!(o, "{}{}={}", if i > 0 { " " } else { "" }, n, t.errors[i]);
    }
    let _ = writeln!(o, "), {} sent", t.sent);
    let tls = t.handshakes() > 0 || t.errors[ErrKind::Tls as usize] > 0;
    if tls {
        let _ = writeln!(
            o,
            "tls: {} handshakes ({} full, {} resumed), {:.1} handshakes/s",
            t.handshakes(),
            t.tls_full,
            t.tls_resumed,
            t.handshakes() as f64 / secs
        );
    }
    let _ = writeln!(
        o,
        "latency over {} responses{}, ms:",
        s.hists.ttlb.len(),
        if s.rampup.is_zero() {
            String::new()
        } else {
            format!(" (after the {:.1} s ramp-up)", s.rampup.as_secs_f64())
        }
    );
    // A third column with the TLS handshake times (over their own count).
    let hs = &s.hists.handshake;
    let col = |v: f64| {
        if tls {
            format!(" {v:12.3}")
        } else {
            String::new()
        }
    };
    let _ = writeln!(
        o,
        "  {:>10} {:>12} {:>12}{}",
        "percentile",
        "TTFB",
        "TTLB",
        if tls {
            format!(" {:>12}", "handshake")
        } else {
            String::new()
        }
    );
    for p in PERCENTILES {
        let _ = writeln!(
            o,
            "  {:>9}% {:12.3} {:12.3}{}",
            p,
            ms(pct(&s.hists.ttfb, p)),
            ms(pct(&s.hists.ttlb, p)),
            col(ms(pct(hs, p)))
        );
    }
    let _ = writeln!(
        o,
        "  {:>10} {:12.3} {:12.3}{}",
        "max",
        ms(s.hists.ttfb.max()),
        ms(s.hists.ttlb.max()),
        col(ms(hs.max()))
    );
    let _ = writeln!(
        o,
        "  {:>10} {:12.3} {:12.3}{}",
        "mean",
        mean(&s.hists.ttfb) / 1e6,
        mean(&s.hists.ttlb) / 1e6,
        col(mean(hs) / 1e6)
    );
    if tls {
        let _ = writeln!(o, "  (handshake: over {} handshakes)", hs.len());
    }
    o
}

/// Finite number as JSON (NaN and infinities become 0).
fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "0".into()
    }
}

fn hist_json(h: &Histogram<u64>) -> String {
    let mut o = String::from("{");
    let _ = write!(
        o,
        "\"count\":{},\"min_ms\":{},\"max_ms\":{},\"mean_ms\":{},\"percentiles_ms\":{{",
        h.len(),
        num(ms(if h.is_empty() { 0 } else { h.min() })),
        num(ms(h.max())),
        num(mean(h) / 1e6)
    );
    for (i, p) in PERCENTILES.iter().enumerate() {
        let _ = write!(
            o,
            "{}\"{}\":{}",
            if i > 0 { "," } else { "" },
            p,
            num(ms(pct(h, *p)))
        );
    }
    o.push_str("}}");
    o
}

/// The whole summary as a JSON object.
pub fn json(s: &Summary) -> String {
    let t = &s.totals;
    let secs = s.elapsed.as_secs_f64().max(1e-9);
    let mut o = String::from("{\n");
    let _ = writeln!(o, "  \"elapsed_s\": {},", num(s.elapsed.as_secs_f64()));
    let _ = writeln!(o, "  \"rampup_s\": {},", num(s.rampup.as_secs_f64()));
    let _ = writeln!(o, "  \"threads\": {},", s.threads);
    let _ = writeln!(o, "  \"connections_target\": {},", s.conns);
    let _ = writeln!(
        o,
        "  \"rate_requested\": {},",
        s.rate.map_or("null".to_string(), num)
    );
    let _ = writeln!(o, "  \"connections\": {},", t.opened);
    let _ = writeln!(o, "  \"requests_sent\": {},", t.sent);
    let _ = writeln!(o, "  \"responses\": {},", t.responses);
    let _ = writeln!(o, "  \"bytes\": {},", t.bytes);
    let _ = writeln!(o, "  \"req_per_s\": {},", num(t.responses as f64 / secs));
    let _ = writeln!(o, "  \"conn_per_s\": {},", num(t.opened as f64 / secs));
    let _ = writeln!(o, "  \"bytes_per_s\": {},", num(t.bytes as f64 / secs));
    let _ = writeln!(
        o,
        "  \"status\": {{\"1xx\":{},\"2xx\":{},\"3xx\":{},\"4xx\":{},\"5xx\":{},\"other\":{}}},",
        t.status[1], t.status[2], t.status[3], t.status[4], t.status[5], t.status[0]
    );
    o.push_str("  \"errors\": {");
    for (i, n) in ERR_NAMES.iter().enumerate() {
        let _ = write!(o, "\"{}\":{},", n, t.errors[i]);
    }
    let _ = writeln!(o, "\"total\":{}}},", t.error_count());
    let _ = writeln!(
        o,
        "  \"tls_handshakes\": {{\"total\":{},\"full\":{},\"resumed\":{},\"per_s\":{}}},",
        t.handshakes(),
        t.tls_full,
        t.tls_resumed,
        num(t.handshakes() as f64 / secs)
    );
    let _ = writeln!(o, "  \"handshake\": {},", hist_json(&s.hists.handshake));
    let _ = writeln!(o, "  \"ttfb\": {},", hist_json(&s.hists.ttfb));
    let _ = writeln!(o, "  \"ttlb\": {},", hist_json(&s.hists.ttlb));
    o.push_str("  \"timeline\": [");
    for (i, x) in s.timeline.iter().enumerate() {
        let _ = write!(
            o,
            "{}\n    {{\"time_s\":{},\"open\":{},\"total_conns\":{},\"total_reqs\":{},\"req_per_s\":{},\
             \"conn_per_s\":{},\"bytes_per_s\":{},\"errors\":{},\"ttfb_p50_ms\":{},\"ttlb_p50_ms\":{}}}",
            if i > 0 { "," } else { "" },
            num(x.time),
            x.open,
            x.total_conns,
            x.total_reqs,
            num(x.reqs_per_s),
            num(x.conns_per_s),
            num(x.bytes_per_s),
            x.errors,
            num(ms(x.ttfb_p50)),
            num(ms(x.ttlb_p50))
        );
    }
    o.push_str("\n  ]\n}\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn humans() {
        assert_eq!(human(999.0), "999");
        assert_eq!(human(1234.0), "1.23k");
        assert_eq!(human(5_600_000.0), "5.60M");
        assert_eq!(num(f64::NAN), "0");
        assert_eq!(num(1.5), "1.5");
    }
}
