"""The `costs` scenario of bench/fairbench.py: where each proxy's CPU goes (issue 13).

Cases (`--cases`, default `ka,ka50,tcp,close,1m`), each in interleaved
rounds with the proxy order reversed every other round (A B C, C B A...):

* `ka`: keep-alive, `GET /?s=64`, closed loop (saturated).
* `ka50`: the same, open loop (`fairlead-load -R`) at `--fixed-pct` (default
  50) percent of HAProxy's median req/s in `ka` of this run (or `--rate`),
  the same rate for every proxy.
* `tcp`: keep-alive `GET /?s=64` through `mode tcp`.
* `close`: one request per connection, `mode http`.
* `1m`: keep-alive `GET /?s=1m`, 20 connections.
* `tcp1m`: `GET /?s=1m` through `mode tcp`, 20 connections (not in the default set).

Every measured run records, besides the usual CPU and latency, user and
system CPU µs per request, TCP segments per request and backend connects per
client connection (namespace counters: run with `--netns` for exact
numbers), and the worker thread's context switches and run delay (see
bench/fbmetrics.py). After the rounds of a case, each proxy is started once
more for an unmeasured `strace -f -c` run (`--strace-d` seconds, default 2;
`--no-strace` skips it): system calls per request and per connection,
`epoll_wait` per request.

`report` renders every `costs` result (not only the latest) in the *Round 2*
section of BENCHMARKS.md, oldest first, with the notes of
`bench/results/round2-notes.md` in front. Every function takes the
fairbench module as `fb`.
"""

import json
import os

import fbmetrics

CASES = {
    "ka": {"title": "Keep-alive, saturated", "mode": "http", "path": "/?s=64"},
    "ka50": {"title": "Keep-alive at a fixed rate (open loop)", "mode": "http", "path": "/?s=64"},
    "tcp": {"title": "TCP mode, keep-alive client", "mode": "tcp", "path": "/?s=64"},
    "close": {"title": "HTTP, one request per connection", "mode": "http", "path": "/?s=64", "close": True},
    "1m": {"title": "1 MiB objects, keep-alive", "mode": "http", "path": "/?s=1m", "conns": 20},
    "tcp1m": {"title": "1 MiB objects through TCP mode", "mode": "tcp", "path": "/?s=1m", "conns": 20},
}
DEFAULT_CASES = "ka,ka50,tcp,close,1m"
NOTES = "round2-notes.md"


def add_parser(sub, add_common):
    p = sub.add_parser("costs", help="where the CPU goes: user/system µs per request, TCP segments, "
                                     "backend connects, context switches, run delay, syscalls (strace)")
    add_common(p, rounds=3, duration=5.0, conns=100)
    p.add_argument("--cases", default=DEFAULT_CASES,
                   help="comma list among %s (default %%(default)s)" % ", ".join(CASES))
    p.add_argument("--fixed-pct", type=float, default=50.0,
                   help="ka50: percent of HAProxy's saturated req/s (default %(default)s)")
    p.add_argument("--rate", type=float, help="ka50: this rate (req/s) instead")
    p.add_argument("--strace-d", type=float, default=2.0, help="seconds of the strace run (default %(default)s)")
    p.add_argument("--no-strace", action="store_true", help="skip the strace runs")
    return p


def fixed_rate(fb, args, res):
    """ka50's rate: --rate, or fixed-pct of HAProxy's median in this run's ka, or the latest keepalive."""
    if args.rate:
        return float(args.rate), "--rate"
    for c in res["cases"]:
        if c.get("key") == "ka" and (c.get("summary") or {}).get("haproxy", {}).get("req_per_s"):
            return c["summary"]["haproxy"]["req_per_s"] * args.fixed_pct / 100.0, "ka of this run"
    ka = fb.latest("keepalive")
    if ka:
        with open(ka) as f:
            h = json.load(f)["cases"][0]["summary"].get("haproxy", {}).get("req_per_s")
        if h:
            return h * args.fixed_pct / 100.0, os.path.relpath(ka, fb.ROOT)
    raise fb.BenchError("ka50 needs HAProxy's saturated rate: add ka to --cases, or pass --rate")


def strace_case(fb, ctx, case, url, conns, duration, rate, close):
    """One unmeasured strace -f -c run per proxy; fills case['strace']."""
    out = case.setdefault("strace", {})
    for name in ctx.proxies:
        proxy = None
        try:
            proxy = fb.RunningProxy(ctx, name, case["mode"], 9500)
            fb.run_load(ctx, url, conns, 1.0, close=close)
            ctx.seq += 1
            logp = ctx.path("strace-%d.txt" % ctx.seq)
            got = fbmetrics.strace_run(proxy.pids(), logp,
                                       lambda: fb.run_load(ctx, url, conns, duration, rate=rate, close=close))
            if got is None:
                out[name] = {"error": "strace not found"}
                continue
            calls, (s, shown) = got
            r = fbmetrics.syscall_rates(calls, s["responses"], s.get("connections"))
            r.update({"req_per_s": s["req_per_s"], "client_cmd": shown})
            out[name] = r
            fb.log("   strace %-14s %s syscalls/req, %s epoll_wait/req, %s io_uring_enter/req, %s syscalls/conn "
                   "at %.0f req/s" % (name, r["per_req"], r["epoll_wait_per_req"], r["io_uring_enter_per_req"],
                                      r["per_conn"], s["req_per_s"]))
        except fb.BenchError as e:
            out[name] = {"error": str(e)[:500]}
            fb.log("strace run failed:", e)
        finally:
            if proxy is not None:
                proxy.stop()


def sc_costs(fb, ctx, args):
    keys = [k.strip() for k in args.cases.split(",") if k.strip()]
    for k in keys:
        if k not in CASES:
            raise fb.BenchError("unknown case %r (choose from %s)" % (k, ", ".join(CASES)))
    params = {"rounds": args.rounds, "duration_s": args.duration, "conns": args.conns, "cases": keys,
              "warmup_s": args.warmup, "fixed_pct": args.fixed_pct, "strace_s": None if args.no_strace
              else args.strace_d}
    if ctx.compare_bin_dir:
        params["compare"] = fb.compare_build(ctx)
    res = fb.new_result(ctx, "costs", params)
    ctx.start_origin()
    for k in keys:
        spec = CASES[k]
        conns = spec.get("conns", args.conns)
        rate = None
        case = {"name": "costs-" + k, "key": k, "title": spec["title"], "mode": spec["mode"],
                "path": spec["path"], "conns": conns, "close": bool(spec.get("close"))}
        if k == "ka50":
            rate, src = fixed_rate(fb, args, res)
            rate = int(rate)
            case.update({"rate": rate, "rate_from": src, "fixed_pct": args.fixed_pct})
        res["cases"].append(case)
        url = ctx.proxy_url(spec["path"])
        fb.proxied_rounds(ctx, case, spec["mode"], url, conns, args.duration, args.rounds,
                          close=case["close"], rate_for=(lambda n, r=rate: r) if rate else None,
                          warmup=args.warmup, alternate=True)
        fb.aggregate(case)
        fb.print_summary(case)
        keys = ("cpu_us_per_req", "cpu_user_us_per_req", "cpu_sys_us_per_req")
        case["paired"] = {o: {key: fb.paired_ratios(case, "fairlead", o, key) for key in keys}
                          for o in ctx.proxies if o not in ("fairlead", fb.URING)}
        if fb.URING in ctx.proxies:
            # Fairlead-uring/X per round (X: fairlead, i.e. io_uring against epoll, haproxy, nginx)
            case["paired_uring"] = {o: {key: fb.paired_ratios(case, fb.URING, o, key) for key in keys}
                                    for o in ctx.proxies if o not in (fb.URING, fb.BEFORE)}
        if not args.no_strace:
            strace_case(fb, ctx, case, url, conns, args.strace_d, rate, case["close"])
    return res


# --------------------------------------------------------------------------
# report

def _row_vals(fb, m, st, uring_col):
    g = lambda k: m.get(k)
    return [fb.f0(g("req_per_s")), fb.f2(g("cpu_us_per_req")), fb.f2(g("cpu_user_us_per_req")),
            fb.f2(g("cpu_sys_us_per_req")), fb.f1(g("proxy_cpu_pct")), fb.f2(g("segs_per_req")),
            fb.f3(g("backend_per_client_conn")), fb.f0(g("worker_nvcsw_per_s")),
            fb.f3(g("worker_delay_pct")), fb.f2(st.get("per_req")), fb.f3(st.get("epoll_wait_per_req"))] + \
        ([fb.f3(st.get("io_uring_enter_per_req"))] if uring_col else []) + \
        [fb.f1(st.get("per_conn")), fb.f3((g("lat_ms") or {}).get("99")), fb.f3((g("lat_ms") or {}).get("99.99"))]


COLS = ["proxy", "req/s", "CPU µs/req", "user µs/req", "sys µs/req", "proxy CPU %", "TCP segs/req",
        "backend connects / client conn", "worker nvcsw/s", "worker run delay %", "syscalls/req (strace)",
        "epoll_wait/req (strace)", "syscalls/conn (strace)", "p99 ms", "p99.99 ms"]
URING_COL = 12   # "io_uring_enter/req (strace)" goes before "syscalls/conn (strace)"


def case_table(fb, case):
    s = case.get("summary") or {}
    st = case.get("strace") or {}
    # the io_uring_enter column only where an io_uring proxy ran (or some proxy made such calls)
    uring_col = fb.URING in s or any((v or {}).get("io_uring_enter_per_req") for v in st.values())
    cols = COLS[:URING_COL] + ["io_uring_enter/req (strace)"] + COLS[URING_COL:] if uring_col else COLS
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for name in fb.NAMES:
        m = s.get(name)
        if m is None:
            continue
        if not m.get("rounds_ok"):
            out.append("| %s | **failed**: %s |" % (fb.PRETTY[name], fb._esc((m.get("first_error") or "")[:200])))
            continue
        out.append("| " + " | ".join([fb.proxy_label(name, m)] + _row_vals(fb, m, st.get(name) or {}, uring_col))
                   + " |")
    for a, other in fb.ratio_pairs(s):
        f, o = s[a], s[other]
        if not (f.get("rounds_ok") and o.get("rounds_ok")):
            continue
        fv, ov = st.get(a) or {}, st.get(other) or {}
        r = lambda a, b: fb.fr(fb.ratio(a, b))
        row = ["**%s**" % fb.pair_label(a, other), r(f["req_per_s"], o["req_per_s"]),
               r(f.get("cpu_us_per_req"), o.get("cpu_us_per_req")),
               r(f.get("cpu_user_us_per_req"), o.get("cpu_user_us_per_req")),
               r(f.get("cpu_sys_us_per_req"), o.get("cpu_sys_us_per_req")), "",
               r(f.get("segs_per_req"), o.get("segs_per_req")), "", "", "",
               r(fv.get("per_req"), ov.get("per_req")), r(fv.get("epoll_wait_per_req"), ov.get("epoll_wait_per_req"))] + \
            ([""] if uring_col else []) + \
            [r(fv.get("per_conn"), ov.get("per_conn")),
             r(f["lat_ms"].get("99"), o["lat_ms"].get("99")), r(f["lat_ms"].get("99.99"), o["lat_ms"].get("99.99"))]
        out.append("| " + " | ".join(row) + " |")
    return out


def paired_line(fb, case):
    parts = []
    for base, key in (("fairlead", "paired"), (fb.URING, "paired_uring")):
        for other, d in (case.get(key) or {}).items():
            c = (d or {}).get("cpu_us_per_req")
            if c:
                parts.append("%s %s (median ×%.3f, min ×%.3f, max ×%.3f)" % (
                    fb.pair_label(base, other), ", ".join("×%.3f" % x for x in c["per_round"]), c["median"],
                    c["min"], c["max"]))
    return ("Per-round CPU µs/req ratios (the two runs of a round are minutes apart at most; the spread "
            "is the noise): %s." % "; ".join(parts)) if parts else ""


def strace_line(fb, case):
    parts = []
    for name, r in (case.get("strace") or {}).items():
        if r.get("by_syscall_per_req"):
            top = ", ".join("%s %s" % (k, v) for k, v in list(r["by_syscall_per_req"].items())[:8])
            parts.append("%s (at %s req/s under strace): %s" % (fb.PRETTY.get(name, name), fb.f0(r.get("req_per_s")), top))
        elif r.get("error"):
            parts.append("%s: %s" % (fb.PRETTY.get(name, name), r["error"][:120]))
    return ("System calls per request, top 8 (`strace -f -c`, separate unmeasured run): %s." % "; ".join(parts)
            if parts else "")


def report_one(fb, path, res, md):
    p = res["params"]
    md += ["### `costs` run of %s" % res["started"], ""]
    md += ["Command: `%s`; %s rounds × %s s; %s." % (
        res["command"], p["rounds"], p["duration_s"],
        "its own network namespace (`--netns`): the TCP counters are the benchmark's alone"
        if res["machine"].get("netns") else "**shared network namespace**: TCP counters include other "
        "loopback traffic"), ""]
    md += [fbmetrics.vulnerabilities_line(res["machine"].get("cpu_vulnerabilities") or {}), ""]
    if p.get("compare"):
        b = (p["compare"].get("build") or {})
        md += ["*Fairlead (before)*: `%s` (commit `%s`)." % (p["compare"].get("bin_dir"), (b.get("commit") or "?")[:10]), ""]
    for case in res["cases"]:
        md += ["#### %s" % case.get("title", case["name"]), ""]
        desc = "%d connections, `GET %s`, `mode %s`%s%s." % (
            case["conns"], case["path"], case["mode"], ", one request per connection" if case.get("close") else "",
            ", open loop at %d req/s (%g%% of HAProxy's saturated rate, from %s) for every proxy" % (
                case["rate"], case.get("fixed_pct", 0), case.get("rate_from")) if case.get("rate") else "")
        md += [desc, ""] + case_table(fb, case) + [""]
        for line in (paired_line(fb, case), fb.other_line(case), strace_line(fb, case)):
            if line:
                md += [line, ""]
        if fb.client_cmd_of(case):
            md += ["Client: `%s`" % fb.client_cmd_of(case), ""]
    md += fb.header_block(res, path)


def report_all(fb, md):
    """The Round 2 section: the notes, then every costs result, oldest first."""
    files = sorted(f for f in os.listdir(fb.RESULTS) if f.startswith("costs-") and f.endswith(".json")) \
        if os.path.isdir(fb.RESULTS) else []
    notes = os.path.join(fb.RESULTS, NOTES)
    if not files and not os.path.exists(notes):
        return
    md += ["## Round 2 (issue 13): where the CPU goes", ""]
    if os.path.exists(notes):
        with open(notes) as f:
            md += [f.read().rstrip(), ""]
    md += ["Columns: *user/sys µs/req*: the proxy's utime and stime over the measured run per response; "
           "*TCP segs/req*: segments sent by every socket of the namespace (client↔proxy and proxy↔origin, "
           "`/proc/net/snmp` OutSegs, what `nstat` reads) per response; *backend connects / client conn*: "
           "(ActiveOpens − the client's connects) / the client's connects; *worker nvcsw/s* and *run delay %*: "
           "involuntary context switches per second and the share of wall time the busiest proxy thread was "
           "runnable but waiting for its CPU (`/proc/PID/task/*/status`, `schedstat`); *strace* columns: a "
           "separate, unmeasured run under `strace -f -c` (much slower, so fewer requests per wake-up than "
           "in the measured run); *io_uring_enter/req* (where Fairlead-uring ran: the same binary with "
           "`FAIRLEAD_IO_URING=1`): the io_uring worker's submit-and-wait call. Kernel io_uring worker threads (`iou-wrk`, `iou-sqp`) are threads of the proxy "
           "process: their CPU is in the proxy's µs/req.", ""]
    for fn in files:
        path = os.path.join(fb.RESULTS, fn)
        with open(path) as f:
            res = json.load(f)
        try:
            report_one(fb, path, res, md)
        except (KeyError, TypeError, ValueError) as e:
            md += ["", "(could not render %s: %s)" % (fn, e), ""]
