"""The HTTP scenarios of bench/fairbench.py: keepalive, close, sizes, idle, tail, servers and
keepalive-ab (run and report).
"""

import json
import os
import re
import resource
import socket
import time

from fbcore import (BEFORE, BIG, BenchError, COLORS, FAIRLEADS, KNOWN, PCTS, PRETTY, ROOT, RunningProxy,
                    SIZES, URING, aggregate, brief, clean_run, compare_build, f0, f2, f3, fmt_ratio,
                    fr, http_get, latest, loadavg1, log, measured_run, med, mib, new_result,
                    pair_label, paired_ratios, print_summary, proxied_rounds, ratio, ratio_pairs,
                    run_load, summarize_load)
from fbfmt import (_esc, chart_name, client_cmd_of, config_block, header_block, other_line,
                   proxy_label, proxy_table, rounds_line, svg_bars, svg_lines)
import fbcore



def sc_keepalive(ctx, args):
    ab = bool(ctx.compare_bin_dir)
    params = {"rounds": args.rounds, "duration_s": args.duration, "conns": args.conns, "path": args.path,
              "warmup_s": args.warmup}
    if ab:
        params["compare"] = compare_build(ctx)
    # two Fairlead builds are their own scenario, so the keep-alive section stays the proxies' one
    res = new_result(ctx, "keepalive-ab" if ab else "keepalive", params)
    case = {"name": "keepalive-ab" if ab else "keepalive", "mode": "http", "path": args.path,
            "conns": args.conns}
    res["cases"].append(case)
    ctx.start_origin()
    proxied_rounds(ctx, case, "http", ctx.proxy_url(args.path), args.conns, args.duration, args.rounds,
                   warmup=args.warmup, wrk=args.wrk, alternate=ab)
    aggregate(case)
    print_summary(case)
    if ab:
        res["ab"] = {k: paired_ratios(case, "fairlead", BEFORE, k)
                     for k in ("cpu_us_per_req", "cpu_user_us_per_req", "cpu_sys_us_per_req", "req_per_s")}
        c = res["ab"]["cpu_us_per_req"]
        if c:
            print("Fairlead/Fairlead (before), CPU us/req per round: %s; median x%.3f (min x%.3f, max x%.3f)" % (
                ", ".join("%.3f" % x for x in c["per_round"]), c["median"], c["min"], c["max"]))
    return res


def sc_close(ctx, args):
    modes = ["tcp", "http"] if args.mode == "both" else [args.mode]
    res = new_result(ctx, "close", {"rounds": args.rounds, "duration_s": args.duration,
                                    "conns": args.conns, "path": args.path, "modes": modes,
                                    "warmup_s": args.warmup})
    ctx.start_origin()
    for mode in modes:
        case = {"name": "close-%s" % mode, "mode": mode, "path": args.path, "conns": args.conns}
        res["cases"].append(case)
        proxied_rounds(ctx, case, mode, ctx.proxy_url(args.path), args.conns, args.duration,
                       args.rounds, close=True, warmup=args.warmup)
        aggregate(case)
        print_summary(case)
    return res


def sc_sizes(ctx, args):
    sizes = list(SIZES)
    if args.big:
        sizes.append(BIG)
    if args.sizes:
        want = args.sizes.split(",")
        sizes = [s for s in SIZES + [BIG] if s[0] in want]
    res = new_result(ctx, "sizes", {"rounds": args.rounds, "duration_s": args.duration,
                                    "sizes": [s[0] for s in sizes], "warmup_s": args.warmup})
    ctx.start_origin()
    for label, nbytes in sizes:
        conns = args.conns or (100 if nbytes <= 16384 else 20 if nbytes <= (1 << 20) else 8)
        path = "/?s=%s" % label
        case = {"name": "size-%s" % label, "mode": "http", "size": label, "bytes": nbytes,
                "path": path, "conns": conns}
        res["cases"].append(case)
        proxied_rounds(ctx, case, "http", ctx.proxy_url(path), conns, args.duration, args.rounds,
                       warmup=args.warmup)
        aggregate(case)
        print_summary(case)
    return res


def open_idle(host, port, n, path, batch=200, timeout=10.0):
    """Opens n keep-alive connections, one request each, response read; returns sockets."""
    socks = []
    req = ("GET %s HTTP/1.1\r\nHost: bench\r\n\r\n" % path).encode()
    failures = 0
    for start in range(0, n, batch):
        group = []
        for _ in range(min(batch, n - start)):
            try:
                s = socket.create_connection((host, port), timeout=timeout)
                s.sendall(req)
                group.append(s)
            except OSError:
                failures += 1
        for s in group:
            try:
                read_response(s)
                socks.append(s)
            except (OSError, BenchError):
                failures += 1
                s.close()
    return socks, failures


def read_response(s):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            raise BenchError("closed before response")
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
    if not m:
        raise BenchError("no content-length in idle-test response")
    need = int(m.group(1)) - len(body)
    while need > 0:
        chunk = s.recv(min(65536, need))
        if not chunk:
            raise BenchError("closed inside body")
        need -= len(chunk)


def still_open(socks):
    import selectors
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    closed = len(sel.select(timeout=0))  # readable idle keep-alive socket = EOF or reset
    sel.close()
    return len(socks) - closed


def sc_idle(ctx, args):
    counts = [int(x) for x in args.counts.split(",")]
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if max(counts) + 200 > nofile:
        raise BenchError("N=%d needs more than the %d file descriptors allowed" % (max(counts), nofile))
    maxconn = max(9500, max(counts) + 500)
    res = new_result(ctx, "idle", {"rounds": args.rounds, "counts": counts, "path": args.path,
                                   "settle_s": args.settle, "maxconn": maxconn})
    ctx.start_origin()
    for n in counts:
        case = {"name": "idle-%d" % n, "mode": "http", "conns": n, "path": args.path, "runs": []}
        res["cases"].append(case)
        for rnd in range(1, args.rounds + 1):
            for name in ctx.proxies:
                log("idle N=%d round %d/%d: %s" % (n, rnd, args.rounds, name))
                entry = {"round": rnd, "proxy": name}
                proxy = None
                socks = []
                try:
                    proxy = RunningProxy(ctx, name, "http", maxconn)
                    case.setdefault("configs", {})[name] = proxy.config_text
                    # a few requests on short connections so that lazy init is done
                    for _ in range(20):
                        http_get(ctx.proxy_host, ctx.proxy_port, args.path)
                    time.sleep(args.settle)
                    base = proxy.rss_kib()
                    entry["loadavg1"] = [loadavg1()]
                    t0 = time.monotonic()
                    socks, failures = open_idle(ctx.proxy_host, ctx.proxy_port, n, args.path)
                    opened = time.monotonic() - t0
                    time.sleep(args.settle)
                    with_n = proxy.rss_kib()
                    entry["loadavg1"].append(loadavg1())
                    fds = proxy.fds()
                    entry.update({
                        "rss_base_kib": base, "rss_with_n_kib": with_n,
                        "kib_per_conn": round((with_n - base) / n, 3),
                        "bytes_per_conn": round((with_n - base) * 1024 / n),
                        "peak_rss_kib": proxy.peak_rss_kib(),
                        "opened": len(socks), "open_failures": failures,
                        "open_time_s": round(opened, 2), "proxy_fds": fds,
                        "still_open": still_open(socks),
                        "proxy_alive": proxy.alive(),
                    })
                    if proxy.io_uring is not None:
                        entry["io_uring"] = proxy.io_uring
                    log("   %-14s base %d KiB, with %d conns %d KiB: %.2f KiB/conn, %d still open, "
                        "%d fds" % (name, base, n, with_n, entry["kib_per_conn"], entry["still_open"], fds))
                except BenchError as e:
                    entry["error"] = str(e)
                    log("ERROR:", e)
                finally:
                    for s in socks:
                        s.close()
                    if proxy is not None:
                        if not proxy.alive():
                            entry["proxy_exit"] = proxy.proc.returncode
                            entry["proxy_log"] = proxy.log_tail()
                        proxy.stop()
                case["runs"].append(entry)
        summ = {}
        for name in ctx.proxies:
            rs = [r for r in case["runs"] if r["proxy"] == name and "error" not in r]
            errs = [r for r in case["runs"] if r["proxy"] == name and "error" in r]
            if not rs:
                summ[name] = {"rounds_ok": 0, "first_error": errs[0]["error"][:500] if errs else None}
                continue
            summ[name] = {
                "rounds_ok": len(rs),
                "kib_per_conn": med([r["kib_per_conn"] for r in rs]),
                "rss_base_kib": med([r["rss_base_kib"] for r in rs]),
                "rss_with_n_kib": med([r["rss_with_n_kib"] for r in rs]),
                "still_open": min(r["still_open"] for r in rs),
                "open_failures": max(r["open_failures"] for r in rs),
                "proxy_fds": med([r["proxy_fds"] for r in rs]),
            }
            if any("io_uring" in r for r in rs):
                summ[name]["io_uring"] = min(r.get("io_uring") or 0 for r in rs)
        case["summary"] = summ
    return res


def sc_tail(ctx, args):
    levels = [float(x) for x in args.levels.split(",")]
    rates = {}
    source = None
    if args.rate:
        rates = {p: float(args.rate) for p in ctx.proxies}
        source = "--rate"
    else:
        ka = latest("keepalive")
        if not ka:
            raise BenchError("no keepalive result to derive the rates from: run keepalive first or "
                             "pass --rate")
        with open(ka) as f:
            kres = json.load(f)
        summ = kres["cases"][0]["summary"]
        for p in ctx.proxies:
            if summ.get(p, {}).get("req_per_s"):
                rates[p] = summ[p]["req_per_s"]
        source = os.path.relpath(ka, ROOT)
        if URING in ctx.proxies and URING not in rates and rates.get("fairlead"):
            # a keepalive result from before fairlead-uring existed: epoll Fairlead's maximum
            rates[URING] = rates["fairlead"]
            source += " (%s: fairlead's rate, the result has no %s)" % (URING, URING)
            log("tail: %s has no keep-alive maximum in %s; using fairlead's" % (URING, os.path.relpath(ka, ROOT)))
    res = new_result(ctx, "tail", {"rounds": args.rounds, "duration_s": args.duration,
                                   "ramp_s": args.ramp, "conns": args.conns, "path": args.path,
                                   "levels_pct": levels, "max_rates": rates, "rates_from": source})
    ctx.start_origin()
    cases = {}
    for lv in levels:
        cases[lv] = {"name": "tail-%g%%" % lv, "level_pct": lv, "mode": "http", "path": args.path,
                     "conns": args.conns, "runs": [], "direct": []}
        res["cases"].append(cases[lv])
    for rnd in range(1, args.rounds + 1):
        for name in ctx.proxies:
            if name not in rates:
                log("no max rate for %s; skipped" % name)
                continue
            proxy = None
            try:
                proxy = RunningProxy(ctx, name, "http", 9500)
                for lv in levels:
                    case = cases[lv]
                    rate = int(rates[name] * lv / 100.0)
                    case.setdefault("configs", {})[name] = proxy.config_text
                    log("tail %g%% round %d/%d: %s and direct at %d req/s" % (lv, rnd, args.rounds,
                                                                             name, rate))
                    try:
                        d, shown = run_load(ctx, ctx.origin_url(args.path), args.conns, args.duration,
                                            rate=rate, ramp=args.ramp)
                        de = summarize_load(d)
                        de.update({"round": rnd, "for": name, "rate": rate, "client_cmd": shown})
                        case["direct"].append(de)
                    except BenchError as e:
                        case["direct"].append({"round": rnd, "for": name, "error": str(e)})
                    entry = {"round": rnd, "proxy": name, "rate": rate}
                    try:
                        entry.update(measured_run(ctx, proxy, ctx.proxy_url(args.path), args.conns,
                                                  args.duration, rate=rate, ramp=args.ramp))
                    except BenchError as e:
                        entry["error"] = str(e)
                    case["runs"].append(entry)
                    brief(entry)
                    if not proxy.alive():
                        break
            except BenchError as e:
                log("ERROR:", e)
                for lv in levels:
                    cases[lv]["runs"].append({"round": rnd, "proxy": name, "error": str(e)})
            finally:
                if proxy is not None:
                    proxy.stop()
    for lv in levels:
        case = cases[lv]
        aggregate(case)
        ref = {}
        for name in rates:
            ds = [d for d in case["direct"] if d.get("for") == name and "error" not in d]
            if ds:
                ref[name] = {"req_per_s": med([d["req_per_s"] for d in ds]),
                             "lat_ms": {p: med([d["lat_ms"].get(p) for d in ds]) for p in PCTS},
                             "errors": sum(d["errors"] + d["non_2xx"] for d in ds)}
        case["direct_summary"] = ref
        for name, m in case["summary"].items():
            m["rate"] = int(rates[name] * lv / 100.0)
        print_summary(case)
    return res


def origin_ports_in_use(host, lo, hi):
    """Distinct ports in [lo, hi] of `host` with an established TCP connection (from /proc/net/tcp):
    after a `servers` run, the backend servers the proxy still holds connections to."""
    want = "%08X" % int.from_bytes(socket.inet_aton(host), "little")
    ports = set()
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                parts = line.split()
                rem, st = parts[2], parts[3]
                ip, port = rem.split(":")
                if st == "01" and ip == want and lo <= int(port, 16) <= hi:
                    ports.add(int(port, 16))
    except OSError:
        return None
    return len(ports)


def sc_servers(ctx, args):
    counts = [int(x) for x in args.counts.split(",")]
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    for a in algos:
        if a not in ("roundrobin", "leastconn"):
            raise BenchError("unsupported algorithm %r (roundrobin, leastconn)" % a)
    res = new_result(ctx, "servers", {"rounds": args.rounds, "duration_s": args.duration,
                                      "conns": args.conns, "path": args.path, "counts": counts,
                                      "algos": algos, "warmup_s": args.warmup})
    top = max(counts)
    # one fairlead-term listening on origin_port+1 .. origin_port+top; backend N uses the first N
    ctx.start_origin(extra_ports=top)
    res["params"]["origin_cmd"] = "taskset -c %s fairlead-term -t %d -n o1 %s:%d %s:%d ... %s:%d" % (
        ctx.origin_cpus, ctx.origin_threads, ctx.origin_host, ctx.origin_port, ctx.origin_host,
        ctx.origin_port + 1, ctx.origin_host, ctx.origin_port + top)
    cases = {}
    for a in algos:
        for n in counts:
            c = {"name": "servers-%s-%d" % (a, n), "mode": "http", "balance": a, "servers": n,
                 "path": args.path, "conns": args.conns, "runs": []}
            cases[(a, n)] = c
            res["cases"].append(c)
    url = ctx.proxy_url(args.path)
    # the order inside a round keeps the 10/100 pair of one proxy and algorithm close in time
    for rnd in range(1, args.rounds + 1):
        for a in algos:
            for name in ctx.proxies:
                for n in counts:
                    case = cases[(a, n)]
                    servers = [("s%d" % i, ctx.origin_host, ctx.origin_port + i) for i in range(1, n + 1)]
                    entry = {"round": rnd, "proxy": name}
                    log("servers %s N=%d round %d/%d: %s" % (a, n, rnd, args.rounds, name))
                    proxy = None
                    try:
                        proxy = RunningProxy(ctx, name, "http", 9500, balance=a, servers=servers)
                        case.setdefault("configs", {})[name] = proxy.config_text
                        # sampled in the middle of the measured run: after it, a proxy may already
                        # have closed its idle server connections
                        entry.update(clean_run(ctx, proxy, entry, url, args.conns, args.duration,
                                               warmup=args.warmup, sample=(
                                                   "servers_with_conns",
                                                   lambda n=n: origin_ports_in_use(
                                                       ctx.origin_host, ctx.origin_port + 1,
                                                       ctx.origin_port + n))))
                        entry["servers_with_conns_after"] = origin_ports_in_use(
                            ctx.origin_host, ctx.origin_port + 1, ctx.origin_port + n)
                    except BenchError as e:
                        entry["error"] = str(e)
                        log("ERROR:", e)
                    finally:
                        if proxy is not None:
                            if not proxy.alive() and "proxy_log" not in entry:
                                entry["proxy_exit"] = proxy.proc.returncode
                                entry["proxy_log"] = proxy.log_tail()
                            proxy.stop()
                    case["runs"].append(entry)
                    brief(entry)
    for c in cases.values():
        aggregate(c)
        for name, m in c["summary"].items():
            rs = [r for r in c["runs"] if r["proxy"] == name and "error" not in r]
            m["servers_with_conns"] = med([r.get("servers_with_conns") for r in rs])
    # 100/10 ratios per proxy and algorithm: of the medians, and paired by round
    lo, hi = min(counts), max(counts)
    scaling = {}
    for a in algos:
        for name in ctx.proxies:
            ml, mh = cases[(a, lo)]["summary"].get(name, {}), cases[(a, hi)]["summary"].get(name, {})
            if not (ml.get("rounds_ok") and mh.get("rounds_ok")):
                continue
            paired = []
            for rl in cases[(a, lo)]["runs"]:
                if rl["proxy"] != name or "error" in rl:
                    continue
                for rh in cases[(a, hi)]["runs"]:
                    if rh["proxy"] == name and rh["round"] == rl["round"] and "error" not in rh \
                            and rl.get("cpu_us_per_req") and rh.get("cpu_us_per_req"):
                        paired.append(round(rh["cpu_us_per_req"] / rl["cpu_us_per_req"], 3))
            scaling["%s/%s" % (a, name)] = {
                "algo": a, "proxy": name, "lo": lo, "hi": hi,
                "cpu": ratio(mh["cpu_us_per_req"], ml["cpu_us_per_req"]),
                "cpu_paired": paired, "cpu_paired_median": med(paired),
                "req_per_s": ratio(mh["req_per_s"], ml["req_per_s"]),
                "p99": ratio(mh["lat_ms"]["99"], ml["lat_ms"]["99"]),
            }
    res["scaling"] = scaling
    for c in res["cases"]:
        print_summary(c)
    print("\n== %d/%d servers ==" % (hi, lo))
    for k, v in scaling.items():
        print("%-22s cpu/req x%s (paired %s)  req/s x%s  p99 x%s" % (
            k, fmt_ratio(v["cpu"]), ", ".join("%.2f" % x for x in v["cpu_paired"]),
            fmt_ratio(v["req_per_s"]), fmt_ratio(v["p99"])))
    return res


def report_keepalive(path, res, md):
    case = res["cases"][0]
    s = case["summary"]
    md += ["## Keep-alive, small responses", ""]
    md += ["%d connections, `GET %s`, %s rounds × %s s per proxy (medians across rounds)." % (
        case["conns"], case["path"], res["params"]["rounds"], res["params"]["duration_s"]), ""]
    md += proxy_table(s, extra_wrk=any("wrk_req_per_s" in m for m in s.values()))
    md += ["", rounds_line(s), rounds_line(s, "cpu_us_per_req_all", "CPU µs/req"), other_line(case), ""]
    cn = chart_name(path, "rate")
    vals = {"req/s": {n: m.get("req_per_s") for n, m in s.items()}}
    if svg_bars(os.path.join(fbcore.RESULTS, cn), "keep-alive: req/s (median)", "req/s", ["req/s"], list(s), vals):
        cn2 = chart_name(path, "cpu")
        svg_bars(os.path.join(fbcore.RESULTS, cn2), "keep-alive: proxy CPU µs per request (median)", "µs/req",
                 ["CPU µs/req"], list(s), {"CPU µs/req": {n: m.get("cpu_us_per_req") for n, m in s.items()}})
        md += ["![req/s](bench/results/%s) ![cpu](bench/results/%s)" % (cn, cn2), ""]
    if client_cmd_of(case):
        md += ["Client: `%s`" % client_cmd_of(case), ""]
    md += header_block(res, path) + config_block(case)


def report_close(path, res, md):
    md += ["## One request per connection (close)", ""]
    for case in res["cases"]:
        md += ["### %s mode" % case["mode"].upper(), ""]
        md += ["%d concurrent connections, `GET %s` with `Connection: close` (`--close`), %s rounds × %s s." % (
            case["conns"], case["path"], res["params"]["rounds"], res["params"]["duration_s"]), ""]
        md += proxy_table(case["summary"], rate_label="conn/s (= req/s)")
        md += ["", rounds_line(case["summary"]), rounds_line(case["summary"], "cpu_us_per_req_all",
                                                              "CPU µs/conn"), other_line(case), ""]
        if client_cmd_of(case):
            md += ["Client: `%s`" % client_cmd_of(case), ""]
        md += config_block(case)
    md += header_block(res, path)


def report_sizes(path, res, md):
    md += ["## Object sizes", ""]
    md += ["`GET /?s=SIZE` over keep-alive, %s rounds × %s s; medians. Gbit/s counts every byte "
           "received by the client (headers included)." % (res["params"]["rounds"],
                                                            res["params"]["duration_s"]), ""]
    names = [n for n in KNOWN if any(n in c.get("summary", {}) for c in res["cases"])]
    pairs = ratio_pairs(names)
    cols = ["size", "conns"] + ["%s hits/s" % PRETTY[n] for n in names] + \
           ["%s Gbit/s" % PRETTY[n] for n in names]
    cols += ["%s hits" % pair_label(a, b) for a, b in pairs]
    md += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for case in res["cases"]:
        s = case["summary"]
        row = [case["size"], str(case["conns"])]
        row += [f0(s.get(n, {}).get("req_per_s")) for n in names]
        row += [f2(s.get(n, {}).get("gbit_per_s")) for n in names]
        row += [fr(ratio(s.get(a, {}).get("req_per_s"), s.get(b, {}).get("req_per_s"))) for a, b in pairs]
        md.append("| " + " | ".join(row) + " |")
    md += ["", "Cost per request and memory:", ""]
    cols = ["size"] + ["%s CPU µs/req" % PRETTY[n] for n in names] + \
           ["%s p99 ms" % PRETTY[n] for n in names] + ["%s peak RSS" % PRETTY[n] for n in names] + \
           ["errors"]
    md += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for case in res["cases"]:
        s = case["summary"]
        row = [case["size"]] + [f2(s.get(n, {}).get("cpu_us_per_req")) for n in names]
        row += [f3(s.get(n, {}).get("lat_ms", {}).get("99")) for n in names]
        row += [mib(s.get(n, {}).get("peak_rss_kib")) for n in names]
        errs = []
        for n in names:
            m = s.get(n, {})
            if not m.get("rounds_ok"):
                errs.append("%s failed" % PRETTY[n])
            elif n == URING and m.get("io_uring") == 0:
                errs.append("%s: **no io_uring** (ran as epoll)" % PRETTY[n])
            elif m.get("errors") or m.get("rounds_failed"):
                errs.append("%s %d" % (PRETTY[n], m["errors"]) + (" (%d failed rounds)" % m["rounds_failed"]
                                                                if m.get("rounds_failed") else ""))
        row.append(", ".join(errs) or "0")
        md.append("| " + " | ".join(row) + " |")
    ticks = [(c["bytes"], c["size"]) for c in res["cases"]]
    hits = [(PRETTY[n], COLORS[n], False, [(c["bytes"], c["summary"].get(n, {}).get("req_per_s"))
                                             for c in res["cases"]]) for n in names]
    gb = [(PRETTY[n], COLORS[n], False, [(c["bytes"], c["summary"].get(n, {}).get("gbit_per_s"))
                                           for c in res["cases"]]) for n in names]
    c1, c2 = chart_name(path, "hits"), chart_name(path, "gbps")
    svg_lines(os.path.join(fbcore.RESULTS, c1), "hits/s vs object size", "object size (log)", "hits/s (log)",
              hits, logx=True, logy=True, xticks=ticks)
    svg_lines(os.path.join(fbcore.RESULTS, c2), "Gbit/s vs object size", "object size (log)", "Gbit/s",
              gb, logx=True, xticks=ticks)
    md += ["", "![hits/s](bench/results/%s)" % c1, "", "![Gbit/s](bench/results/%s)" % c2, ""]
    md += header_block(res, path) + config_block(res["cases"][0])


def report_idle(path, res, md):
    md += ["## Idle keep-alive connections", ""]
    plain = [c for c in res["cases"] if not c["name"].startswith("tls-")]
    tls = [c for c in res["cases"] if c["name"].startswith("tls-")]
    md += ["N connections opened from Python through the proxy; each sends one `GET %s`, reads the "
           "response and stays idle. Memory per connection = (VmRSS with N − VmRSS before) / N, "
           "of the proxy process (nginx: its worker). Kernel socket buffers are not in RSS%s. %s round(s)."
           % (res["params"]["path"], " (nor io_uring's in-flight requests; Fairlead-uring's rings are mapped into the process and in RSS "
              "from the start, so in the baseline)"
              if any(URING in c.get("summary", {}) for c in res["cases"]) else "", res["params"]["rounds"]), ""]
    for cases, label, title, suffix in ((plain, "KiB per connection", "RSS per idle keep-alive connection", "kib"),
                                        (tls, "KiB per TLS connection", "RSS per idle TLS connection", "tlskib")):
        if not cases:
            continue
        if cases is tls:
            md += ["", "### Idle TLS connections", "",
                   "The same over TLS, in the same run (`--tls-counts`): TLS 1.3 with an ECDSA P-256 "
                   "certificate (`bind ... ssl crt PEM alpn http/1.1`; nginx `listen ... ssl`), handshakes of 200 "
                   "connections at a time driven concurrently from Python's `ssl` module, one `GET` each, then "
                   "idle; the baseline after 20 TLS requests on fresh connections.", ""]
        md += idle_table(cases, label)
        groups = ["N=%d" % c["conns"] for c in cases]
        vals = {"N=%d" % c["conns"]: {n: m["kib_per_conn"] for n, m in c["summary"].items() if m.get("rounds_ok")}
                for c in cases}
        cn = chart_name(path, suffix)
        if svg_bars(os.path.join(fbcore.RESULTS, cn), title, "KiB/conn", groups,
                    [n for n in KNOWN if any(n in v for v in vals.values())], vals):
            md += ["", "![%s](bench/results/%s)" % (label, cn)]
    md += [""] + header_block(res, path) + config_block(plain[0] if plain else res["cases"][0])


def idle_table(cases, kib_label, fail=None):
    """The idle-memory table (plain and TLS): one row per N and proxy, then one ratio column per
    Fairlead kind present (Fairlead/this, Fairlead-uring/this)."""
    present = [n for n in KNOWN if any((c["summary"].get(n) or {}).get("rounds_ok") for c in cases)]
    bases = [b for b in FAIRLEADS if b in present]
    cols = ["N", "proxy", "RSS before", "RSS with N", kib_label, "still open", "proxy fds"] + \
           ["%s/this" % PRETTY[b] for b in bases]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for case in cases:
        s = case["summary"]
        for name in KNOWN:
            m = s.get(name)
            if m is None:
                continue
            if not m.get("rounds_ok"):
                err = m.get("first_error") or ""
                out.append("| %d | %s | **failed**: %s |" % (case["conns"], PRETTY[name], fail(err) if fail else
                                                             _esc(err.splitlines()[0] if err else "")))
                continue
            out.append("| %d | %s | %s | %s | %.2f | %d/%d | %s | %s |" % (
                case["conns"], proxy_label(name, m), mib(m["rss_base_kib"]), mib(m["rss_with_n_kib"]),
                m["kib_per_conn"], m["still_open"], case["conns"], f0(m["proxy_fds"]),
                " | ".join("" if name == b else fr(ratio((s.get(b) or {}).get("kib_per_conn"), m["kib_per_conn"]))
                           for b in bases)))
    return out


def pct_x(p):
    return 1.0 / (1.0 - float(p) / 100.0)


def report_tail(path, res, md):
    md += ["## Tail latency at a fixed rate", ""]
    md += ["Open-loop load (`fairlead-load -R`, latency from the intended send time) at %s of each proxy's "
           "median keep-alive maximum (from `%s`), %d connections, runs of %s s whose first %s s (a ramp-up) "
           "the percentiles leave out, %s rounds. Each proxied run is paired with a direct run at the same "
           "rate straight to the origin (the reference); *added* = proxied − direct. Medians across rounds; "
           "latencies in ms (TTLB)." % (
               " and ".join("%g%%" % lv for lv in res["params"]["levels_pct"]),
               res["params"].get("rates_from"), res["params"]["conns"], res["params"]["duration_s"],
               res["params"]["ramp_s"], res["params"]["rounds"]), ""]
    for case in res["cases"]:
        s, ref = case["summary"], case.get("direct_summary", {})
        md += ["### %g%% of max" % case["level_pct"], ""]
        cols = ["proxy", "target req/s", "achieved req/s (incl. ramp-up)", "direct p50", "direct p99", "direct p99.99",
                "proxied p50", "proxied p99", "proxied p99.9", "proxied p99.99", "added p99",
                "added p99.99", "proxy CPU µs/req", "errors"]
        md += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for name in KNOWN:
            m = s.get(name)
            if m is None:
                continue
            if not m.get("rounds_ok"):
                md.append("| %s | **failed**: %s |" % (PRETTY[name], _esc((m.get("first_error") or "")
                                                                          .splitlines()[0])))
                continue
            d = ref.get(name, {"lat_ms": {}})
            dl, pl = d["lat_ms"], m["lat_ms"]
            add = lambda p: (pl[p] - dl[p]) if (pl.get(p) is not None and dl.get(p) is not None) else None
            md.append("| " + " | ".join([
                proxy_label(name, m), f0(m.get("rate")), f0(m["req_per_s"]), f3(dl.get("50")), f3(dl.get("99")),
                f3(dl.get("99.99")), f3(pl["50"]), f3(pl["99"]), f3(pl["99.9"]), f3(pl["99.99"]),
                f3(add("99")), f3(add("99.99")), f2(m["cpu_us_per_req"]),
                str(m["errors"] + d.get("errors", 0))]) + " |")
        for a, other in ratio_pairs(s):
            f, o = s[a], s[other]
            if f.get("rounds_ok") and o.get("rounds_ok"):
                md.append("| **%s** | %s | | | | | %s | %s | %s | %s | | | %s | |" % (
                    pair_label(a, other), fr(ratio(f.get("rate"), o.get("rate"))),
                    fr(ratio(f["lat_ms"]["50"], o["lat_ms"]["50"])), fr(ratio(f["lat_ms"]["99"], o["lat_ms"]["99"])),
                    fr(ratio(f["lat_ms"]["99.9"], o["lat_ms"]["99.9"])),
                    fr(ratio(f["lat_ms"]["99.99"], o["lat_ms"]["99.99"])),
                    fr(ratio(f["cpu_us_per_req"], o["cpu_us_per_req"]))))
        series = []
        for name in KNOWN:
            m = s.get(name)
            if m and m.get("rounds_ok"):
                series.append(("%s @%s" % (PRETTY[name], f0(m.get("rate"))), COLORS[name], False,
                               [(pct_x(p), m["lat_ms"][p]) for p in PCTS]))
                d = ref.get(name)
                if d:
                    series.append(("direct @%s" % f0(m.get("rate")), COLORS[name], True,
                                   [(pct_x(p), d["lat_ms"][p]) for p in PCTS]))
        cn = chart_name(path, "p%g" % case["level_pct"])
        if svg_lines(os.path.join(fbcore.RESULTS, cn), "latency percentiles at %g%% of max (dashed: direct)"
                     % case["level_pct"], "percentile", "TTLB ms (log)", series, logx=True, logy=True,
                     xticks=[(pct_x(p), p + "%") for p in PCTS]):
            md += ["", "![percentiles](bench/results/%s)" % cn]
        md += [""]
    md += header_block(res, path) + config_block(res["cases"][0])


def report_servers(path, res, md):
    p = res["params"]
    lo, hi = min(p["counts"]), max(p["counts"])
    md += ["## Server selection: backends of %s servers" % " and ".join(str(n) for n in p["counts"]), ""]
    md += ["Does the cost of picking a server grow with the number of servers? %d keep-alive connections, "
           "`GET %s`, %s rounds × %s s per proxy, backend size and algorithm (`balance %s`; nginx: "
           "`upstream` with the same servers, round-robin and `least_conn`). The servers are ports of one "
           "`fairlead-term` process (`%s`); backend N uses the first N ports. Within a round each proxy "
           "runs its %d-server and %d-server backends back to back, so the %d/%d ratio is taken a few "
           "seconds apart. *Servers with connections*: backend servers the proxy held an established "
           "connection to %s (shows that the load was spread)." % (
               p["conns"], p["path"], p["rounds"], p["duration_s"], "` / `balance ".join(p["algos"]),
               p.get("origin_cmd", "fairlead-term"), lo, hi, hi, lo,
               "in the middle of the measured run (median across rounds)"
               if any("servers_with_conns_after" in r for c in res["cases"] for r in c.get("runs", []))
               else "right after the run (median across rounds; a proxy that closes idle server "
                    "connections quickly shows fewer: this result predates the mid-run sample)"), ""]
    sc = res.get("scaling", {})
    md += ["### %d servers vs %d: the ratios" % (hi, lo), "",
           "×1.00 = no growth. CPU µs/req is the number that matters (it does not depend on who the "
           "bottleneck was); req/s and p99 move with the noise of the machine.", ""]
    cols = ["algorithm", "proxy", "CPU µs/req, %d" % lo, "CPU µs/req, %d" % hi, "**CPU %d/%d**" % (hi, lo),
            "per-round CPU %d/%d" % (hi, lo), "req/s %d/%d" % (hi, lo), "p99 %d/%d" % (hi, lo)]
    md += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    cases = {(c["balance"], c["servers"]): c for c in res["cases"]}
    for a in p["algos"]:
        for name in KNOWN:
            v = sc.get("%s/%s" % (a, name))
            if not v:
                continue
            ml = cases[(a, lo)]["summary"][name]
            mh = cases[(a, hi)]["summary"][name]
            md.append("| %s | %s | %s | %s | **%s** | %s | %s | %s |" % (
                a, PRETTY[name], f2(ml["cpu_us_per_req"]), f2(mh["cpu_us_per_req"]), fr(v["cpu"]),
                ", ".join("%.2f" % x for x in v["cpu_paired"]), fr(v["req_per_s"]), fr(v["p99"])))
    present = [nm for nm in KNOWN if any(nm in c.get("summary", {}) for c in res["cases"])]
    pairs = [(x, y) for x, y in ratio_pairs(present) if y != BEFORE]
    ab = {"fairlead": "F", URING: "U", "haproxy": "H", "nginx": "n"}
    md += ["", "### %s per backend" % ("Ratios" if URING in present else
                                        " and ".join(pair_label(x, y) for x, y in pairs)), ""]
    if URING in present:
        md += ["F: Fairlead, U: Fairlead-uring, H: HAProxy, n: nginx.", ""]
    cols = ["algorithm", "servers"] + ["%s %s/%s" % (k, ab[x], ab[y]) for k in ("CPU µs/req", "req/s", "p99")
                                       for x, y in pairs]
    md += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for a in p["algos"]:
        for n in p["counts"]:
            s = cases[(a, n)]["summary"]

            def rr(k, x, y):
                f, o = s.get(x, {}), s.get(y, {})
                if not (f.get("rounds_ok") and o.get("rounds_ok")):
                    return "–"
                if k == "p99":
                    return fr(ratio(f["lat_ms"]["99"], o["lat_ms"]["99"]))
                return fr(ratio(f[k], o[k]))
            md.append("| %s | %d | %s |" % (a, n, " | ".join(rr(k, x, y) for k in ("cpu_us_per_req", "req_per_s", "p99")
                                                              for x, y in pairs)))
    md += [""]
    for a in p["algos"]:
        for n in p["counts"]:
            case = cases[(a, n)]
            md += ["### `balance %s`, %d servers" % (a, n), ""]
            tab = proxy_table(case["summary"])
            # add the spread column
            tab[0] = tab[0] + " servers with connections |"
            tab[1] = tab[1] + "---|"
            for k in range(2, len(tab)):
                row = tab[k]
                name = next((nm for nm in KNOWN if row.startswith("| %s |" % PRETTY[nm])), None)
                m = case["summary"].get(name, {}) if name else {}
                tab[k] = row + " %s |" % (("%d/%d" % (m["servers_with_conns"], n))
                                          if m.get("servers_with_conns") is not None else "")
            md += tab + ["", rounds_line(case["summary"], "cpu_us_per_req_all", "CPU µs/req"), other_line(case), ""]
    if client_cmd_of(res["cases"][0]):
        md += ["Client: `%s`" % client_cmd_of(res["cases"][0]), ""]
    md += header_block(res, path)
    for a in p["algos"]:
        c = cases[(a, hi)]
        md += ["<details><summary>configuration, `balance %s`, %d servers (the same file for Fairlead and "
               "HAProxy)</summary>" % (a, hi), ""]
        blk = config_block(c)
        md += blk[2:-2] if len(blk) > 4 else []
        md += ["</details>", ""]


def saturation_note(summary):
    """A sentence when the proxies were far from saturated (CPU % well below 100 per thread)."""
    pcts = [m.get("proxy_cpu_pct") for m in summary.values() if m.get("rounds_ok") and m.get("proxy_cpu_pct")]
    if not pcts or max(pcts) >= 80:
        return []
    return ["**Not at saturation**: the proxies used %.0f–%.0f%% of their CPU (median per proxy); the client "
            "and the origin, on the other CPU with everything else running on the machine, were the limit. "
            "CPU µs/req still compares the proxies (same load, same conditions), but at this rate a proxy "
            "handles fewer requests per wake-up than when saturated, so the absolute µs/req are higher than "
            "a saturated run's." % (min(pcts), max(pcts)), ""]


def report_keepalive_ab(path, res, md):
    case = res["cases"][0]
    s = case["summary"]
    p = res["params"]
    cmp_ = p.get("compare") or {}
    b, a = (cmp_.get("build") or {}), (res["machine"].get("build") or {})
    md += ["## Keep-alive: two Fairlead builds", ""]
    md += ["*Fairlead* is commit `%s`, *Fairlead (before)* is commit `%s`, both built with `fairbench.py "
           "build` from a `git archive` export, run in alternation in the same series (A B, B A, A B...), "
           "the same configuration, client and origin as the keep-alive scenario: %d connections, `GET %s`, "
           "%s rounds × %s s per build." % ((a.get("commit") or "?")[:10], (b.get("commit") or "?")[:10],
                                           case["conns"], case["path"], p["rounds"], p["duration_s"]), ""]
    md += proxy_table(s, split=True)
    md += ["", rounds_line(s, "cpu_us_per_req_all", "CPU µs/req"), rounds_line(s), other_line(case), ""]
    ab = res.get("ab") or {}
    rows = []
    for k, label in (("cpu_us_per_req", "CPU µs/req"), ("cpu_user_us_per_req", "user µs/req"),
                     ("cpu_sys_us_per_req", "sys µs/req"), ("req_per_s", "req/s")):
        v = ab.get(k)
        if v:
            rows.append("| %s | **×%.3f** | ×%.3f – ×%.3f | %s |" % (
                label, v["median"], v["min"], v["max"], ", ".join("%.3f" % x for x in v["per_round"])))
    if rows:
        md += ["Fairlead/Fairlead (before), paired by round (the two runs of a round are back to back):", "",
               "| | median | min – max | per round |", "|---|---|---|---|"] + rows + [""]
    md += saturation_note(s)
    # earlier series of the same two commits (only the newest is shown above)
    older, others = [], []
    for f in sorted(os.listdir(fbcore.RESULTS)):
        q = os.path.join(fbcore.RESULTS, f)
        if not re.match(r"keepalive-ab-\d{8}-\d{6}\.json$", f) or os.path.abspath(q) == os.path.abspath(path):
            continue
        try:
            with open(q) as fh:
                o = json.load(fh)
        except (OSError, ValueError):
            continue
        ob, oc = (o["machine"].get("build") or {}), ((o["params"].get("compare") or {}).get("build") or {})
        v = (o.get("ab") or {}).get("cpu_us_per_req")
        if not v:
            continue
        line = ("[`%s`](bench/results/%s) (%d rounds × %g s): CPU µs/req ×%.3f (×%.3f – ×%.3f), user "
                "×%s, sys ×%s" % (f, f, o["params"]["rounds"], o["params"]["duration_s"], v["median"],
                                 v["min"], v["max"], "%.3f" % o["ab"]["cpu_user_us_per_req"]["median"],
                                 "%.3f" % o["ab"]["cpu_sys_us_per_req"]["median"]))
        if ob.get("commit") == a.get("commit") and oc.get("commit") == b.get("commit"):
            older.append(line)
        elif ob.get("commit") and oc.get("commit"):
            # other pairs of builds stay visible: each A/B answers its own question
            others.append("`%s` vs `%s`: %s" % (ob["commit"][:10], oc["commit"][:10], line))
    if older:
        md += ["Earlier series of the same two commits (paired medians, min – max): " + "; ".join(older) + ".", ""]
    if others:
        md += ["Earlier series of other pairs of builds (*Fairlead* vs *Fairlead (before)*, paired medians, "
               "min – max):", ""] + ["- " + o for o in others] + [""]
    if client_cmd_of(case):
        md += ["Client: `%s`" % client_cmd_of(case), ""]
    md += header_block(res, path)
    if cmp_:
        fb = cmp_.get("fairlead") or {}
        md += ["Before: `%s`, built %s from commit `%s` (%s); fairlead sha256 %s." % (
            cmp_.get("bin_dir"), b.get("built", "?"), b.get("commit", "?"), b.get("source", "?"),
            fb.get("sha256", "?")), ""]
    blk = config_block(case)
    if blk:
        blk[0] = "<details><summary>configuration (the same file for both builds)</summary>"
    md += blk
