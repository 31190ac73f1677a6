"""Report helpers of bench/fairbench.py: hand-written SVG charts, number formats, the per-proxy
table and the header lines every scenario section of BENCHMARKS.md starts with.
"""

import math
import os
import re

from fbcore import (BEFORE, COLORS, DISTURBED_PCT, NAMES, PRETTY, ROOT, URING, URING_ENV, f0, f1, f2,
                    f3, fr, med, mib, pair_label, ratio, ratio_pairs)


def proxy_label(name, m=None):
    """The proxy's name in a table; Fairlead-uring that held no io_uring instance is flagged (its
    numbers are epoll Fairlead's: the binary ignored FAIRLEAD_IO_URING=1). Old results have no
    io_uring field and are shown as they were."""
    if name == URING and m is not None and m.get("io_uring") == 0:
        return "%s (**no io_uring**: ran as epoll)" % PRETTY[name]
    return PRETTY[name]



# --------------------------------------------------------------------------
# SVG charts (hand-written)

def _esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _nice_ticks(lo, hi, n=5):
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=raw)
    t = math.floor(lo / step) * step
    out = []
    while t <= hi + step * 1e-9:
        out.append(t)
        t += step
    return out


def _fmt_num(v):
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e6:
        return "%gM" % round(v / 1e6, 3)
    if a >= 1e3:
        return "%gk" % round(v / 1e3, 3)
    if a >= 1:
        return "%g" % round(v, 3)
    return "%g" % float("%.3g" % v)


def svg_lines(path, title, xlabel, ylabel, series, logx=False, logy=False, xticks=None):
    """series: [(label, color, dashed, [(x, y), ...])]; xticks: [(x, label)]."""
    W, H, L, R, T, B = 720, 420, 80, 170, 40, 55
    pts = [(x, y) for _, _, _, ps in series for x, y in ps if y is not None]
    if not pts:
        return False
    fx = (lambda v: math.log10(v)) if logx else (lambda v: v)
    fy = (lambda v: math.log10(max(v, 1e-9))) if logy else (lambda v: v)
    xs = [fx(x) for x, _ in pts]
    ys = [fy(y) for _, y in pts]
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x1 = x0 + 1
    if logy:
        y0, y1 = math.floor(min(ys)), math.ceil(max(ys))
        if y1 == y0:
            y1 += 1
        yt = [10 ** e for e in range(int(y0), int(y1) + 1)]
    else:
        yt = _nice_ticks(0, max(ys) * 1.05)
        y0, y1 = 0, yt[-1]

    def X(v):
        return L + (fx(v) - x0) / (x1 - x0) * (W - L - R)

    def Y(v):
        return H - B - (fy(v) - y0) / (y1 - y0) * (H - T - B)

    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
         'font-family="sans-serif" font-size="12">' % (W, H, W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>' % (L, _esc(title))]
    for v in yt:
        y = Y(v)
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, y, W - R, y))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (L - 6, y + 4, _fmt_num(v)))
    if xticks is None:
        xticks = [(x, _fmt_num(x)) for x in sorted(set(x for x, _ in pts))]
    for v, lab in xticks:
        x = X(v)
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>' % (x, T, x, H - B))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x, H - B + 16, _esc(lab)))
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>' % (
        L, T, W - L - R, H - T - B))
    o.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' % ((L + W - R) / 2, H - 12, _esc(xlabel)))
    o.append('<text x="16" y="%d" text-anchor="middle" transform="rotate(-90 16 %d)">%s</text>' % (
        (T + H - B) / 2, (T + H - B) / 2, _esc(ylabel)))
    for i, (label, color, dashed, ps) in enumerate(series):
        ps = [(x, y) for x, y in ps if y is not None]
        if not ps:
            continue
        d = " ".join("%s%.1f,%.1f" % ("M" if j == 0 else "L", X(x), Y(y)) for j, (x, y) in enumerate(ps))
        o.append('<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>' % (
            d, color, ' stroke-dasharray="6 4"' if dashed else ""))
        for x, y in ps:
            o.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (X(x), Y(y), color))
        ly = T + 14 + 18 * i
        o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>' % (
            W - R + 10, ly - 4, W - R + 34, ly - 4, color, ' stroke-dasharray="6 4"' if dashed else ""))
        o.append('<text x="%d" y="%d">%s</text>' % (W - R + 40, ly, _esc(label)))
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")
    return True


def svg_bars(path, title, ylabel, groups, names, values):
    """values[group][name] -> number; one cluster of bars per group."""
    W, H, L, R, T, B = 720, 380, 80, 150, 40, 50
    allv = [v for g in groups for v in values.get(g, {}).values() if v is not None]
    if not allv:
        return False
    yt = _nice_ticks(0, max(allv) * 1.1)
    ymax = yt[-1]
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
         'font-family="sans-serif" font-size="12">' % (W, H, W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>' % (L, _esc(title))]

    def Y(v):
        return H - B - v / ymax * (H - T - B)

    for v in yt:
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, Y(v), W - R, Y(v)))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (L - 6, Y(v) + 4, _fmt_num(v)))
    gw = (W - L - R) / len(groups)
    bw = gw * 0.8 / max(1, len(names))
    for gi, g in enumerate(groups):
        gx = L + gi * gw + gw * 0.1
        for ni, n in enumerate(names):
            v = values.get(g, {}).get(n)
            if v is None:
                continue
            x = gx + ni * bw
            o.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>' % (
                x, Y(v), bw * 0.92, H - B - Y(v), COLORS.get(n, "#888")))
            o.append('<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%s</text>' % (
                x + bw * 0.46, Y(v) - 3, _fmt_num(v)))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (L + gi * gw + gw / 2, H - B + 16,
                                                                          _esc(g)))
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>' % (
        L, T, W - L - R, H - T - B))
    o.append('<text x="16" y="%d" text-anchor="middle" transform="rotate(-90 16 %d)">%s</text>' % (
        (T + H - B) / 2, (T + H - B) / 2, _esc(ylabel)))
    for i, n in enumerate(names):
        ly = T + 14 + 18 * i
        o.append('<rect x="%d" y="%d" width="14" height="10" fill="%s"/>' % (W - R + 10, ly - 9,
                                                                            COLORS.get(n, "#888")))
        o.append('<text x="%d" y="%d">%s</text>' % (W - R + 30, ly, _esc(PRETTY.get(n, n))))
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")
    return True


def proxy_table(summary, rate_label="req/s", extra_wrk=False, show_rate=False, split=False):
    """split: user and system CPU µs/req columns after the total."""
    cols = ["proxy", rate_label, "proxy CPU µs/req", "proxy CPU %", "p50 ms", "p90 ms", "p99 ms",
            "p99.9 ms", "p99.99 ms", "peak RSS", "errors"]
    if split:
        cols[3:3] = ["user µs/req", "sys µs/req"]
    if show_rate:
        cols.insert(1, "target rate")
    if extra_wrk:
        cols.append("wrk req/s")
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for name in NAMES:
        m = summary.get(name)
        if m is None:
            continue
        if not m.get("rounds_ok"):
            out.append("| %s | **failed**: %s |" % (PRETTY[name], _esc(
                (m.get("first_error") or "").splitlines()[0] if m.get("first_error") else "")))
            continue
        lat = m["lat_ms"]
        row = [proxy_label(name, m), f0(m["req_per_s"]), f2(m["cpu_us_per_req"]), f1(m["proxy_cpu_pct"]),
               f3(lat["50"]), f3(lat["90"]), f3(lat["99"]), f3(lat["99.9"]), f3(lat["99.99"]),
               mib(m["peak_rss_kib"]), str(m["errors"]) + (" (%d failed rounds)" % m["rounds_failed"]
                                                          if m.get("rounds_failed") else "")]
        if split:
            row[3:3] = [f2(m.get("cpu_user_us_per_req")), f2(m.get("cpu_sys_us_per_req"))]
        if show_rate:
            row.insert(1, f0(m.get("rate")))
        if extra_wrk:
            row.append(f0(m.get("wrk_req_per_s")))
        out.append("| " + " | ".join(row) + " |")
    for a, other in ratio_pairs(summary):
        f, o = summary[a], summary[other]
        if not (f.get("rounds_ok") and o.get("rounds_ok")):
            continue
        row = ["**%s**" % pair_label(a, other), fr(ratio(f["req_per_s"], o["req_per_s"])),
               fr(ratio(f["cpu_us_per_req"], o["cpu_us_per_req"])), "",
               fr(ratio(f["lat_ms"]["50"], o["lat_ms"]["50"])), fr(ratio(f["lat_ms"]["90"], o["lat_ms"]["90"])),
               fr(ratio(f["lat_ms"]["99"], o["lat_ms"]["99"])),
               fr(ratio(f["lat_ms"]["99.9"], o["lat_ms"]["99.9"])),
               fr(ratio(f["lat_ms"]["99.99"], o["lat_ms"]["99.99"])),
               fr(ratio(f["peak_rss_kib"], o["peak_rss_kib"])), ""]
        if split:
            row[3:3] = [fr(ratio(f.get("cpu_user_us_per_req"), o.get("cpu_user_us_per_req"))),
                        fr(ratio(f.get("cpu_sys_us_per_req"), o.get("cpu_sys_us_per_req")))]
        if show_rate:
            row.insert(1, "")
        if extra_wrk:
            row.append(fr(ratio(f.get("wrk_req_per_s"), o.get("wrk_req_per_s"))))
        out.append("| " + " | ".join(row) + " |")
    return out


def rounds_line(summary, key="req_per_s_all", unit="req/s"):
    parts = []
    for name in NAMES:
        m = summary.get(name)
        if m and m.get(key):
            fmt = f0 if key == "req_per_s_all" else f1
            parts.append("%s %s" % (PRETTY[name], ", ".join(fmt(v) if isinstance(v, (int, float)) else str(v)
                                                           for v in m[key])))
    return "Per round (%s): %s." % (unit, "; ".join(parts)) if parts else ""


def other_line(case):
    """Per-round CPU taken by others during each proxy's runs (disturbed runs in bold)."""
    parts = []
    for name in NAMES:
        vals = [r["machine_cpu"]["other_pct"] for r in case.get("runs", [])
                if r.get("proxy") == name and r.get("machine_cpu")]
        if vals:
            parts.append("%s %s" % (PRETTY[name], ", ".join(("**%.0f**" if v > DISTURBED_PCT else "%.0f") % v
                                                             for v in vals)))
    return ("Per round (other CPU %%, disturbed over %g%% in bold): %s." % (DISTURBED_PCT, "; ".join(parts))
            if parts else "")


def machine_line(m):
    return ("%s × %s, kernel %s%s; %s; %s; %s (%s); CPUs proxy %s / client %s / origin %s, "
            "proxy threads %s; load average at start %s." % (
                m["nproc"], m["cpu_model"] or "?", m["kernel"],
                " (kernel.io_uring_disabled=%s)" % m["io_uring_disabled"]
                if m.get("io_uring_disabled") is not None else "", m["haproxy"], m["nginx"],
                m["fairlead"], ("binary from " + m["build"]["commit"][:10]) if m.get("build") else
                m.get("fairlead_git", "?"), m["cpus"]["proxy"], m["cpus"]["client"],
                m["cpus"]["origin"], m["threads"]["proxy"], " ".join(m.get("loadavg_at_start", []))))


def build_line(m):
    """Which binaries ran: the commit they were built from and whether the source differed."""
    b = m.get("build")
    bins = m.get("binaries") or {}
    sha = ", ".join("%s %s" % (k, (v or {}).get("sha256", "?")) for k, v in bins.items())
    if b:
        state = ("clean" if not b.get("dirty_outside_bench") else
                 "**source differed from the commit** in %s (diff sha256 %s)" % (
                     ", ".join(b["dirty_outside_bench"]), b.get("diff_sha256")))
        other = [q for q in b.get("dirty_paths", []) if q not in b.get("dirty_outside_bench", [])]
        return "Binaries: built %s from commit `%s`, %s%s%s; `%s`; sha256: %s." % (
            b.get("built"), b.get("commit"), state,
            " (source: %s)" % b["source"] if b.get("source") else "",
            " (uncommitted changes in bench/ only: %s)" % ", ".join(other) if other else "",
            m.get("bin_dir", "?"), sha)
    rr = m.get("repo_at_run") or {}
    return "Binaries: `%s` (no build record), repository at run time `%s`%s; sha256: %s." % (
        m.get("bin_dir", "target/release"), rr.get("commit", m.get("fairlead_git", "?")),
        " dirty" if rr.get("dirty") else "", sha)


def run_entries(res):
    out = []
    for c in res.get("cases", []):
        out += [r for r in c.get("runs", []) if isinstance(r, dict)]
    return out


def load_summary(res):
    """Load average at start, the 1-minute load around the measured runs, and CPU not ours."""
    l1 = [v for r in run_entries(res) for v in (r.get("loadavg1") or []) if v is not None]
    other = [r["machine_cpu"]["other_pct"] for r in run_entries(res)
             if r.get("machine_cpu") and r["machine_cpu"].get("other_pct") is not None]
    return {"start": res["machine"].get("loadavg_at_start"), "l1_min": min(l1) if l1 else None,
            "disturbed": sum(1 for o in other if o > DISTURBED_PCT), "runs_acct": len(other),
            "l1_max": max(l1) if l1 else None, "other_med": med(other),
            "other_max": max(other) if other else None, "wait": res.get("quiet_wait")}


def load_line(res):
    ls = load_summary(res)
    parts = ["load average at start %s" % " ".join(ls["start"] or [])]
    w = ls["wait"]
    if w:
        parts.append("waited %d s for the 1-minute load to drop below %g%s" % (
            w["waited_s"], w["threshold"], "" if w["quiet"] else " (**it did not**: started anyway)"))
    if ls["l1_min"] is not None:
        parts.append("1-minute load around the measured runs %.2f–%.2f (the benchmark's own processes "
                     "count: 2–3 is expected)" % (ls["l1_min"], ls["l1_max"]))
    if ls["other_med"] is not None:
        parts.append("CPU used by anything else than the proxy, the client, the origin and this script "
                     "(other people's work, and kernel time charged to no process): median %.0f%%, max "
                     "%.0f%% of one CPU; %d of %d measured runs disturbed (over %g%%)" % (
                         ls["other_med"], ls["other_max"], ls["disturbed"], ls["runs_acct"], DISTURBED_PCT))
    return "Load: " + "; ".join(parts) + "."


def header_block(res, path):
    return ["", "Result: [`%s`](%s) — %s to %s." % (
        os.path.relpath(path, ROOT), os.path.relpath(path, ROOT), res["started"], res.get("finished", "?")),
        "", "Command: `%s`" % res["command"], "", "Machine: " + machine_line(res["machine"]), "",
        build_line(res["machine"]), "", load_line(res), ""]


def config_block(case):
    out = []
    cfgs = {k: re.sub(r"/tmp/fairbench-[A-Za-z0-9_]+", "$TMPDIR", v)
            for k, v in case.get("configs", {}).items()}
    if "fairlead" in cfgs or URING in cfgs or "haproxy" in cfgs:
        who = "Fairlead, Fairlead-uring and HAProxy" if URING in cfgs else "Fairlead and HAProxy"
        out += ["<details><summary>configuration (the same file for %s)</summary>" % who, "",
                "```haproxy", (cfgs.get("fairlead") or cfgs.get(URING) or cfgs.get("haproxy")).rstrip(),
                "```", ""]
        if URING in cfgs:
            out += ["Fairlead-uring is the same `fairlead` binary with this file, started with `%s=1` in "
                    "its environment (io_uring for the whole process)." % URING_ENV, ""]
        if "nginx" in cfgs:
            out += ["```nginx", cfgs["nginx"].rstrip(), "```", ""]
        out += ["</details>", ""]
    return out


def client_cmd_of(case):
    for r in case.get("runs", []):
        if r.get("client_cmd"):
            return r["client_cmd"]
    return None


def chart_name(path, suffix):
    return os.path.splitext(os.path.basename(path))[0] + "-" + suffix + ".svg"
