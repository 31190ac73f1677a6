//! Self-made SVG output (no plotting dependency): two stacked charts.
//!
//! 1. Latency percentile curve: latency (ms) on a linear Y axis against
//!    `1/(1−p)` on a logarithmic X axis, labelled 50%, 90%, 99%, 99.9%...
//!    one curve for TTFB and one for TTLB.
//! 2. Timeline: requests per second for each second of the run, with the
//!    ramp-up shaded.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use crate::Summary;

const W: f64 = 900.0;
const CHART_H: f64 = 360.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
/// Samples per decade of the percentile curve.
const PER_DECADE: u32 = 24;
/// Deepest percentile plotted: 1/(1−p) up to 10^MAX_DECADES (99.99999%).
const MAX_DECADES: u32 = 7;

/// A "nice" axis: upper bound and step (1, 2 or 5 times a power of 10),
/// about 5 steps for `max`.
pub fn nice_axis(max: f64) -> (f64, f64) {
    if max.is_nan() || max <= 0.0 {
        return (1.0, 0.2);
    }
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

/// Tick label without useless decimals.
fn tick(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// Label of the decade `d` on the percentile axis: 0 -> "0%", 1 -> "90%",
/// 2 -> "99%", 3 -> "99.9%"...
fn decade_label(d: u32) -> String {
    match d {
        0 => "0%".into(),
        1 => "90%".into(),
        _ => format!("99.{}%", "9".repeat(d as usize - 2)).replace("99.%", "99%"),
    }
}

/// Points `(log10(1/(1−p)), value in ms)` of a histogram up to `decades`.
fn curve(h: &Histogram<u64>, decades: u32) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    (0..=decades * PER_DECADE)
        .map(|i| {
            let lx = i as f64 / PER_DECADE as f64;
            let q = 1.0 - 10f64.powf(-lx);
            (lx, h.value_at_quantile(q) as f64 / 1e6)
        })
        .collect()
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Frame, title and axis labels of one chart at vertical offset `y0`.
fn frame(o: &mut String, y0: f64, title: &str, xlabel: &str, ylabel: &str) {
    let (pw, ph) = (W - LEFT - RIGHT, CHART_H - TOP - BOTTOM);
    let _ = writeln!(
        o,
        r##"<text x="{}" y="{}" font-size="16" text-anchor="middle" font-weight="bold">{}</text>"##,
        W / 2.0,
        y0 + 24.0,
        esc(title)
    );
    let _ = writeln!(
        o,
        r##"<rect x="{LEFT}" y="{}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##,
        y0 + TOP
    );
    let _ = writeln!(
        o,
        r##"<text x="{}" y="{}" font-size="12" text-anchor="middle">{}</text>"##,
        LEFT + pw / 2.0,
        y0 + CHART_H - 10.0,
        esc(xlabel)
    );
    let (lx, ly) = (18.0, y0 + TOP + ph / 2.0);
    let _ = writeln!(
        o,
        r##"<text x="{lx}" y="{ly}" font-size="12" text-anchor="middle" transform="rotate(-90 {lx} {ly})">{}</text>"##,
        esc(ylabel)
    );
}

/// Horizontal grid lines and Y tick labels for `0..=ymax`.
fn y_grid(o: &mut String, y0: f64, ymax: f64, step: f64) {
    let ph = CHART_H - TOP - BOTTOM;
    let mut v = 0.0;
    while v <= ymax + step / 2.0 {
        let y = y0 + TOP + ph - v / ymax * ph;
        let _ = writeln!(
            o,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            tick(v)
        );
        v += step;
    }
}

fn polyline(o: &mut String, pts: &[(f64, f64)], color: &str) {
    if pts.is_empty() {
        return;
    }
    o.push_str(r#"<polyline fill="none" stroke-width="2" stroke=""#);
    o.push_str(color);
    o.push_str(r#"" points=""#);
    for (x, y) in pts {
        let _ = write!(o, "{x:.1},{y:.1} ");
    }
    o.push_str("\"/>\n");
}

/// Renders both charts as a standalone SVG document.
pub fn svg(s: &Summary) -> String {
    let mut o = String::new();
    let h = 2.0 * CHART_H;
    let _ = writeln!(
        o,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif">"##
    );
    let _ = writeln!(o, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let (pw, ph) = (W - LEFT - RIGHT, CHART_H - TOP - BOTTOM);

    // Chart 1: percentiles.
    let count = s.hists.ttlb.len().max(1);
    let decades = ((count as f64).log10().ceil() as u32).clamp(1, MAX_DECADES);
    let ttfb = curve(&s.hists.ttfb, decades);
    let ttlb = curve(&s.hists.ttlb, decades);
    let ymax_raw = ttfb.iter().chain(&ttlb).map(|p| p.1).fold(0.0, f64::max);
    let (ymax, ystep) = nice_axis(ymax_raw);
    frame(
        &mut o,
        0.0,
        &format!("Latency by percentile ({count} responses)"),
        "percentile",
        "latency (ms)",
    );
    y_grid(&mut o, 0.0, ymax, ystep);
    let xpos = |lx: f64| LEFT + lx / decades as f64 * pw;
    let ypos = |v: f64| TOP + ph - v / ymax * ph;
    // Decade ticks, plus 50% at x = 2.
    let mut ticks: Vec<(f64, String)> =
        (0..=decades).map(|d| (d as f64, decade_label(d))).collect();
    ticks.insert(1, (2f64.log10(), "50%".into()));
    for (lx, label) in ticks {
        let x = xpos(lx);
        let _ = writeln!(
            o,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{}" stroke="#ddd"/><text x="{x:.1}" y="{}" font-size="11" text-anchor="middle">{label}</text>"##,
            TOP + ph,
            TOP + ph + 16.0
        );
    }
    let map = |pts: &[(f64, f64)]| {
        pts.iter()
            .map(|&(x, y)| (xpos(x), ypos(y)))
            .collect::<Vec<_>>()
    };
    polyline(&mut o, &map(&ttfb), "#1f77b4");
    polyline(&mut o, &map(&ttlb), "#d62728");
    for (i, (name, color)) in [("TTFB", "#1f77b4"), ("TTLB", "#d62728")]
        .iter()
        .enumerate()
    {
        let y = TOP + 16.0 + 18.0 * i as f64;
        let _ = writeln!(
            o,
            r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="{color}" stroke-width="3"/><text x="{}" y="{}" font-size="12">{name}</text>"##,
            LEFT + 14.0,
            LEFT + 40.0,
            LEFT + 46.0,
            y + 4.0
        );
    }

    // Chart 2: req/s timeline.
    let y0 = CHART_H;
    let tmax_raw = s
        .timeline
        .last()
        .map_or(1.0, |x| x.time)
        .max(s.elapsed.as_secs_f64());
    let (tmax, tstep) = nice_axis(tmax_raw);
    let rmax_raw = s.timeline.iter().map(|x| x.reqs_per_s).fold(0.0, f64::max);
    let (rmax, rstep) = nice_axis(rmax_raw);
    frame(&mut o, y0, "Requests per second", "time (s)", "req/s");
    let tx = |t: f64| LEFT + t / tmax * pw;
    if !s.rampup.is_zero() {
        let _ = writeln!(
            o,
            r##"<rect x="{LEFT}" y="{}" width="{:.1}" height="{ph}" fill="#eee"/>"##,
            y0 + TOP,
            tx(s.rampup.as_secs_f64().min(tmax)) - LEFT
        );
    }
    y_grid(&mut o, y0, rmax, rstep);
    let mut t = 0.0;
    while t <= tmax + tstep / 2.0 {
        let x = tx(t);
        let _ = writeln!(
            o,
            r##"<text x="{x:.1}" y="{}" font-size="11" text-anchor="middle">{}</text>"##,
            y0 + TOP + ph + 16.0,
            tick(t)
        );
        t += tstep;
    }
    // Each sample covers (time − span, time]: draw it as a step.
    let mut pts = Vec::new();
    for x in &s.timeline {
        let y = y0 + TOP + ph - x.reqs_per_s / rmax * ph;
        pts.push((tx(x.time - x.span), y));
        pts.push((tx(x.time), y));
    }
    polyline(&mut o, &pts, "#2ca02c");
    o.push_str("</svg>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes() {
        assert_eq!(nice_axis(0.0), (1.0, 0.2));
        assert_eq!(nice_axis(9.3), (10.0, 2.0));
        let (m, s) = nice_axis(0.37);
        assert!((m - 0.4).abs() < 1e-9 && (s - 0.1).abs() < 1e-9);
        assert_eq!(nice_axis(12345.0), (15000.0, 5000.0));
        assert_eq!(tick(0.30000000000000004), "0.3");
        assert_eq!(tick(20.0), "20");
        assert_eq!(tick(0.0), "0");
    }

    #[test]
    fn labels() {
        let l: Vec<_> = (0..5).map(decade_label).collect();
        assert_eq!(l, ["0%", "90%", "99%", "99.9%", "99.99%"]);
    }
}
