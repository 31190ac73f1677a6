"""The `stick` scenario of bench/fairbench.py: the cost of rate limiting.

HAProxy's canonical rate limit, in front of the usual origin, keep-alive:

    stick-table type ip size 200k expire 10m store http_req_rate(10s),gpc0
    http-request track-sc0 src
    http-request deny deny_status 429 if { sc_http_req_rate(0) gt 1000000000 }

(the threshold is never reached: every request pays the lookup, the
tracking and the rule, and gets its 200). The table holds N entries
before the run (`--entries`, default 100 and 100000): the client's own
(127.0.0.1) plus N − 1 others made through the stats socket (`set table
fe key 10.x.y.z data.gpc0 0`, batched with `;`). Fairlead and HAProxy
load the same file (nginx has no equivalent and is left out). Proxy CPU
µs per request, user and system, in interleaved rounds; the report also
gives each proxy's ratio to its own plain keep-alive run of the same
round (the rules' overhead).

Every function takes the fairbench module as `fb` (this file is imported
by it and uses its process, measurement and report helpers).
"""

import os
import socket
import time

ENTRIES = "100,100000"
TITLE = "Rate limiting: track-sc0 src + an sc_http_req_rate deny rule, keep-alive"


def add_parser(sub, add_common):
    p = sub.add_parser("stick", help="rate limiting: track-sc0 src + sc_http_req_rate deny, with the "
                                     "table at N entries (CPU per request against HAProxy)")
    add_common(p, rounds=3, duration=3.0)
    p.add_argument("--entries", default=ENTRIES,
                   help="comma list of table sizes before the run (default %(default)s)")
    return p


def stick_cfg(fb, ctx, sock):
    """The keep-alive configuration with the rate limit in the frontend."""
    text = fb.haproxy_cfg(ctx, "http", 9500)
    text = text.replace("global\n", "global\n    stats socket %s level admin\n" % sock, 1)
    rules = ("    stick-table type ip size 200k expire 10m store http_req_rate(10s),gpc0\n"
             "    http-request track-sc0 src\n"
             "    http-request deny deny_status 429 if { sc_http_req_rate(0) gt 1000000000 }\n"
             "    default_backend be\n")
    return text.replace("    default_backend be\n", rules, 1)


def cli(sock, cmd, timeout=10.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(sock)
    s.sendall((cmd + "\n").encode())
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    return out.decode("latin-1")


def table_used(sock):
    head = cli(sock, "show table fe").splitlines()
    for line in head[:1]:
        for part in line.split(","):
            part = part.strip()
            if part.startswith("used:"):
                return int(part[5:])
    return None


def prefill(sock, n):
    """Makes the table hold `n` entries: 10.x.y.z keys through the stats socket, 200 per command
    line (`;`-separated; a line stays under the 16 KiB both CLIs take), plus the client's own."""
    keys = ["10.%d.%d.%d" % (i >> 16 & 255, i >> 8 & 255, i & 255) for i in range(1, n)]
    for i in range(0, len(keys), 200):
        out = cli(sock, ";".join("set table fe key %s data.gpc0 0" % k for k in keys[i:i + 200]))
        if "too long" in out:
            raise fb_error("stats socket refused a line: %s" % out.strip())
    return table_used(sock)


def fb_error(msg):
    import fairbench
    return fairbench.BenchError(msg)


def sc_stick(fb, ctx, args):
    sizes = [int(float(x)) for x in args.entries.split(",") if x.strip()]
    ctx.proxies = [p for p in ctx.proxies if p != "nginx"]
    res = fb.new_result(ctx, "stick", {"rounds": args.rounds, "duration_s": args.duration,
                                       "conns": args.conns, "path": args.path, "warmup_s": args.warmup,
                                       "entries": sizes})
    ctx.start_origin()
    sock = ctx.path("stick.sock")
    cfg = stick_cfg(fb, ctx, sock)
    url = ctx.proxy_url(args.path)
    plain = {"name": "stick-plain", "kind": "plain", "mode": "http", "path": args.path, "conns": args.conns}
    cases = [plain]
    for n in sizes:
        cases.append({"name": "stick-%d" % n, "kind": "stick", "entries": n, "mode": "http",
                      "path": args.path, "conns": args.conns})
    res["cases"] += cases

    def on_start_for(n):
        def on_start(proxy, entry):
            t0 = time.monotonic()
            try:
                os.stat(sock)
            except OSError:
                raise fb.BenchError("no stats socket %s" % sock)
            used = prefill(sock, n)
            if used is None or used < n - 1:
                raise fb.BenchError("the table holds %s entries, not %d" % (used, n))
            entry["prefill_s"] = round(time.monotonic() - t0, 2)
            entry["table_used_before"] = used
            fb.log("   table fe: %s entries before the run (%.1f s to fill)" % (used, entry["prefill_s"]))
        return on_start

    # each round: the plain keep-alive reference, then every table size, each for every proxy
    for rnd in range(1, args.rounds + 1):
        fb.proxied_rounds(ctx, plain, "http", url, args.conns, args.duration, args.rounds,
                          warmup=args.warmup, round_range=[rnd])
        for case in cases[1:]:
            fb.proxied_rounds(ctx, case, "http", url, args.conns, args.duration, args.rounds,
                              warmup=args.warmup, round_range=[rnd], config=("bench-stick.cfg", cfg),
                              on_start=on_start_for(case["entries"]))
    for case in cases:
        fb.aggregate(case)
        fb.print_summary(case)
    return res


def report_stick(fb, path, res, md):
    p = res["params"]
    md += ["## Rate limiting (stick tables)", ""]
    md += ["The canonical rate limit, `http-request track-sc0 src` + `http-request deny deny_status 429 if "
           "{ sc_http_req_rate(0) gt 1000000000 }` (never reached: every request pays the lookup, the "
           "tracking and the rule) on a `stick-table type ip size 200k expire 10m store "
           "http_req_rate(10s),gpc0`, keep-alive, %d connections, `GET %s`. The table holds N entries "
           "before each run (the client's own plus N − 1 made through the stats socket). Fairlead and "
           "HAProxy load the same file; \"plain\" is the same proxies without the rules in the same "
           "rounds. %d rounds × %g s, medians." % (p["conns"], p["path"], p["rounds"], p["duration_s"]), ""]
    plain = next((c for c in res["cases"] if c.get("kind") == "plain"), {}).get("summary", {})
    cols = ["case", "proxy", "req/s", "CPU µs/req", "user µs/req", "sys µs/req", "vs plain",
            "Fairlead/HAProxy", "p99 ms", "errors"]
    md += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for case in res["cases"]:
        s = case.get("summary", {})
        label = "plain" if case.get("kind") == "plain" else "N = %d" % case["entries"]
        f, h = s.get("fairlead", {}), s.get("haproxy", {})
        for name in ("fairlead", "haproxy"):
            m = s.get(name)
            if not m or not m.get("rounds_ok"):
                continue
            base = (plain.get(name) or {}).get("cpu_us_per_req")
            vs = fb.fmt_ratio(fb.ratio(m["cpu_us_per_req"], base)) if case.get("kind") != "plain" else ""
            fh = fb.fmt_ratio(fb.ratio(f.get("cpu_us_per_req"), h.get("cpu_us_per_req"))) \
                if name == "fairlead" else ""
            md.append("| " + " | ".join([
                label, fb.PRETTY[name], fb.f0(m["req_per_s"]), fb.f2(m["cpu_us_per_req"]),
                fb.f2(m.get("cpu_user_us_per_req")), fb.f2(m.get("cpu_sys_us_per_req")), vs, fh,
                fb.f3(m["lat_ms"]["99"]), str(m["errors"])]) + " |")
    md += [""]
    for case in res["cases"]:
        if case.get("kind") == "stick":
            md += fb.config_block(case)
            break
