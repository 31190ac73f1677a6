"""The `h2` scenario of bench/fairbench.py: HTTP/2 through the proxies.

Cases (`--cases`, default `tls,idle,grpc`):

* `tls`: HTTP/2 over TLS from the client (`fairlead-load --h2 -k`, ALPN
  h2), the proxy terminating TLS (`bind ... ssl crt PEM alpn h2,http/1.1`;
  nginx `listen ... ssl http2`) in front of the usual HTTP/1.1 origin.
  Proxy CPU µs per request, user and system; then h2load with the same
  connections and streams against the same running proxy, measured the
  same way (the cross-check).
* `idle`: N idle HTTP/2 TLS connections, each after one request (opened
  from this script: TLS with ALPN h2, the preface, SETTINGS, one GET,
  response read); (VmRSS with N − VmRSS before) / N.
* `grpc`: a gRPC-like exchange: `POST` with a small body, a small
  response, over HTTP/2 end to end: client h2 over TLS, the proxy to the
  origin over h2c (`server ... proto h2`; nginx `grpc_pass grpc://`),
  fairlead-term answering HTTP/2. All three proxies multiplex requests
  on kept server connections.

Every function takes the fairbench module as `fb` (this file is imported by
it and uses its process, measurement and report helpers).
"""

import os
import re
import shutil
import socket
import ssl
import struct
import subprocess
import time

H2_CASES = ("tls", "idle", "grpc")
H2_TITLES = {
    "tls": "HTTP/2 over TLS to the proxy, HTTP/1.1 to the origin, small responses",
    "grpc": "gRPC-like: POST with a 64-byte body, HTTP/2 over TLS to the proxy, h2c to the origin",
}
GRPC_BODY = b"g" * 64


def add_parser(sub, add_common):
    p = sub.add_parser("h2", help="HTTP/2: h2 over TLS to an HTTP/1 origin (CPU per request, h2load "
                                  "cross-check), memory per idle h2 connection, h2 -> h2 (gRPC-like)")
    add_common(p, rounds=3, duration=3.0, conns=10, path="/?s=64")
    p.add_argument("--cases", default=",".join(H2_CASES), help="comma list among %s (default %%(default)s)"
                   % ", ".join(H2_CASES))
    p.add_argument("--streams", type=int, default=10,
                   help="requests in flight per connection (--h2-streams, h2load -m; default %(default)s)")
    p.add_argument("--counts", default="2000", help="idle: numbers of h2 connections (default %(default)s)")
    p.add_argument("--idle-rounds", type=int, default=1, help="idle: rounds (default %(default)s)")
    p.add_argument("--settle", type=float, default=1.0, help="idle: seconds to wait before reading RSS")
    p.add_argument("--no-h2load", action="store_true", help="skip the h2load cross-check")
    return p


def tls_opts(certs, grpc=False):
    return {"crt": certs["ecdsa"]["pem"], "alpn": "h2,http/1.1", "tag": "h2", "http2": True, "grpc": grpc}


def grpc_config(fb, ctx, tls):
    """(file name, text): the usual HAProxy-syntax file with `proto h2` on the server line."""
    text = fb.haproxy_cfg(ctx, "http", 9500, tls=tls)
    server = "    server o1 %s:%d" % (ctx.origin_host, ctx.origin_port)
    if server not in text:
        raise fb.BenchError("unexpected generated configuration (no %r)" % server)
    return "bench-h2-grpc.cfg", text.replace(server, server + " proto h2")


def h2load_run(fb, ctx, proxy, url, conns, streams, duration, body_file=None):
    """h2load against the running proxy, with the proxy's CPU over the run."""
    exe = shutil.which("h2load")
    if not exe:
        return {"error": "h2load not installed (apt-get install -y nghttp2-client)"}
    threads = min(ctx.client_threads, conns)
    cmd = [exe, "-c", str(conns), "-m", str(streams), "-t", str(threads), "-D", str(max(1, round(duration)))]
    if body_file:
        cmd += ["-d", body_file]
    cmd.append(url)
    u0, k0 = proxy.cpu_split_s()
    t0 = time.monotonic()
    try:
        p = subprocess.run(["taskset", "-c", ctx.client_cpus] + cmd, capture_output=True, text=True,
                           timeout=duration + 30)
    except subprocess.TimeoutExpired:
        return {"error": "h2load did not finish in time"}
    wall = time.monotonic() - t0
    u1, k1 = proxy.cpu_split_s()
    shown = " ".join(["taskset", "-c", ctx.client_cpus, "h2load"] + [
        os.path.basename(a) if a.startswith(ctx.tmp) else a for a in cmd[1:]])
    rate = re.search(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s", p.stdout)
    reqs = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                     r"(\d+) errored, (\d+) timeout", p.stdout)
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", p.stdout)
    if not (rate and reqs):
        return {"error": "h2load failed: %s" % (p.stdout + p.stderr)[-800:], "cmd": shown}
    done = int(reqs.group(3))
    return {
        "cmd": shown, "req_per_s": float(rate.group(3)), "done": done,
        "succeeded": int(reqs.group(4)), "failed": int(reqs.group(5)), "errored": int(reqs.group(6)),
        "status_2xx": int(codes.group(1)) if codes else None,
        "proxy_cpu_pct": round(100.0 * ((u1 - u0) + (k1 - k0)) / wall, 1),
        "cpu_us_per_req": round(1e6 * ((u1 - u0) + (k1 - k0)) / done, 2) if done else None,
        "cpu_user_us_per_req": round(1e6 * (u1 - u0) / done, 2) if done else None,
        "cpu_sys_us_per_req": round(1e6 * (k1 - k0) / done, 2) if done else None,
    }


def h2_rounds(fb, ctx, args, case, url, tls, config, extra, body_file=None):
    """Interleaved rounds of fairlead-load --h2 (then h2load) through each proxy."""
    for rnd in range(1, args.rounds + 1):
        for name in ctx.proxies:
            entry = {"round": rnd, "proxy": name}
            fb.log("%s round %d/%d: %s" % (case["name"], rnd, args.rounds, name))
            proxy = None
            try:
                proxy = fb.RunningProxy(ctx, name, "http", 9500, tls=tls, config=config)
                case.setdefault("configs", {})[name] = proxy.config_text
                entry.update(fb.clean_run(ctx, proxy, entry, url, args.conns, args.duration,
                                          warmup=args.warmup, extra=extra))
                if not args.no_h2load and proxy.alive():
                    entry["h2load"] = h2load_run(fb, ctx, proxy, url, args.conns, args.streams,
                                                 args.duration, body_file)
                    h = entry["h2load"]
                    fb.log("   %-8s h2load %s" % (name, h.get("error") or "%.0f req/s, cpu %s us/req, %d failed"
                                                   % (h["req_per_s"], h["cpu_us_per_req"],
                                                      h["failed"] + h["errored"])))
            except fb.BenchError as e:
                entry["error"] = str(e)
                fb.log("ERROR:", e)
            finally:
                if proxy is not None:
                    if not proxy.alive() and "proxy_log" not in entry:
                        entry["proxy_exit"] = proxy.proc.returncode
                        entry["proxy_log"] = proxy.log_tail()
                    proxy.stop()
            case["runs"].append(entry)
            fb.brief(entry)
    summ = fb.aggregate(case)
    for name, m in summ.items():
        hs = [r["h2load"] for r in case["runs"]
              if r.get("proxy") == name and "error" not in r and "error" not in r.get("h2load", {"error": 1})]
        if hs:
            m["h2load"] = {k: fb.med([h[k] for h in hs]) for k in
                           ("req_per_s", "cpu_us_per_req", "cpu_user_us_per_req", "cpu_sys_us_per_req",
                            "proxy_cpu_pct")}
            m["h2load"]["failed"] = sum(h["failed"] + h["errored"] for h in hs)
            m["h2load"]["cpu_us_per_req_all"] = [h["cpu_us_per_req"] for h in hs]
    fb.print_summary(case)


# ---- idle HTTP/2 connections

def _frame(kind, flags, stream, payload=b""):
    return struct.pack("!I", len(payload))[1:] + bytes([kind, flags]) + struct.pack("!I", stream) + payload


def _hpack_literal(index, value):
    """Literal header field without indexing, indexed name (RFC 7541 §6.2.2), short value."""
    v = value.encode()
    if len(v) > 126:
        raise ValueError("value too long")
    return bytes([index]) + bytes([len(v)]) + v


def h2_request_bytes(path):
    """Preface, empty SETTINGS, and one GET on stream 1 (HEADERS with END_STREAM)."""
    block = b"\x82\x87" + _hpack_literal(4, path) + _hpack_literal(1, "bench")
    return (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + _frame(4, 0, 0) + _frame(1, 0x5, 1, block))


def h2_exchange(s, path, timeout):
    """Sends one GET on a fresh h2 connection and reads until stream 1 ends; acknowledges the
    server's SETTINGS. Returns the bytes received."""
    s.sendall(h2_request_bytes(path))
    buf, got, end = b"", 0, time.monotonic() + timeout
    while time.monotonic() < end:
        while len(buf) >= 9:
            n = int.from_bytes(buf[:3], "big")
            if len(buf) < 9 + n:
                break
            kind, flags, stream = buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
            buf = buf[9 + n:]
            if kind == 4 and not flags & 1:
                s.sendall(_frame(4, 1, 0))
            elif kind == 7:
                raise OSError("GOAWAY from the proxy")
            elif kind == 3 and stream == 1:
                raise OSError("stream reset by the proxy")
            elif kind in (0, 1) and stream == 1 and flags & 1:
                return got
        chunk = s.recv(65536)
        if not chunk:
            raise OSError("closed before the response")
        got += len(chunk)
        buf += chunk
    raise OSError("no complete response in time")


def open_idle_h2(host, port, n, path, timeout=10.0):
    """n TLS connections with ALPN h2, one GET each, left open. Returns (sockets, failures)."""
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    c.check_hostname = False
    c.verify_mode = ssl.CERT_NONE
    c.set_alpn_protocols(["h2"])
    socks, failures = [], 0
    for _ in range(n):
        s = None
        try:
            s = c.wrap_socket(socket.create_connection((host, port), timeout=timeout))
            if s.selected_alpn_protocol() != "h2":
                raise OSError("ALPN chose %r" % s.selected_alpn_protocol())
            h2_exchange(s, path, timeout)
            socks.append(s)
        except (OSError, ValueError):
            failures += 1
            if s is not None:
                s.close()
    return socks, failures


def idle_case(fb, ctx, args, res, certs, n):
    case = {"name": "h2-idle-%d" % n, "kind": "idle", "conns": n, "path": args.path, "runs": []}
    res["cases"].append(case)
    tls = tls_opts(certs)
    for rnd in range(1, args.idle_rounds + 1):
        for name in ctx.proxies:
            fb.log("h2 idle N=%d round %d/%d: %s" % (n, rnd, args.idle_rounds, name))
            entry = {"round": rnd, "proxy": name}
            proxy, socks = None, []
            try:
                proxy = fb.RunningProxy(ctx, name, "http", max(9500, n + 500), tls=tls)
                case.setdefault("configs", {})[name] = proxy.config_text
                warm, _ = open_idle_h2(ctx.proxy_host, ctx.proxy_port, 20, args.path)
                for s in warm:
                    s.close()
                time.sleep(args.settle)
                base = proxy.rss_kib()
                t0 = time.monotonic()
                socks, failures = open_idle_h2(ctx.proxy_host, ctx.proxy_port, n, args.path)
                opened = time.monotonic() - t0
                time.sleep(args.settle)
                with_n = proxy.rss_kib()
                entry.update({
                    "rss_base_kib": base, "rss_with_n_kib": with_n,
                    "kib_per_conn": round((with_n - base) / n, 3), "opened": len(socks),
                    "open_failures": failures, "open_time_s": round(opened, 2), "proxy_fds": proxy.fds(),
                    "still_open": fb.still_open_tls(socks), "proxy_alive": proxy.alive(),
                    "loadavg1": [fb.loadavg1()],
                })
                fb.log("   %-8s base %d KiB, with %d h2 conns %d KiB: %.2f KiB/conn, %d still open, "
                       "%d failures" % (name, base, n, with_n, entry["kib_per_conn"], entry["still_open"],
                                        failures))
            except fb.BenchError as e:
                entry["error"] = str(e)
                fb.log("ERROR:", e)
            finally:
                for s in socks:
                    s.close()
                if proxy is not None:
                    proxy.stop()
            case["runs"].append(entry)
    summ = {}
    for name in ctx.proxies:
        rs = [r for r in case["runs"] if r["proxy"] == name and "error" not in r]
        errs = [r for r in case["runs"] if r["proxy"] == name and "error" in r]
        if not rs:
            summ[name] = {"rounds_ok": 0, "first_error": errs[0]["error"][:500] if errs else None}
            continue
        summ[name] = {"rounds_ok": len(rs), "kib_per_conn": fb.med([r["kib_per_conn"] for r in rs]),
                      "rss_base_kib": fb.med([r["rss_base_kib"] for r in rs]),
                      "rss_with_n_kib": fb.med([r["rss_with_n_kib"] for r in rs]),
                      "still_open": min(r["still_open"] for r in rs),
                      "open_failures": max(r["open_failures"] for r in rs)}
    case["summary"] = summ


def sc_h2(fb, ctx, args):
    wanted = [c.strip() for c in args.cases.split(",") if c.strip()]
    for c in wanted:
        if c not in H2_CASES:
            raise fb.BenchError("unknown h2 case %r (choose from %s)" % (c, ",".join(H2_CASES)))
    counts = [int(x) for x in args.counts.split(",") if x.strip()] if "idle" in wanted else []
    certs = fb.make_certs(ctx)
    extra = ["--h2", "--h2-streams", str(args.streams), "-k"]
    res = fb.new_result(ctx, "h2", {
        "cases": wanted, "rounds": args.rounds, "duration_s": args.duration, "conns": args.conns,
        "streams": args.streams, "path": args.path, "warmup_s": args.warmup, "counts": counts,
        "idle_rounds": args.idle_rounds, "client_h2": extra, "alpn": "h2,http/1.1",
        "h2load": None if args.no_h2load else shutil.which("h2load"),
        "certs": {"ecdsa": {"command": certs["ecdsa"]["command"]}}})
    ctx.start_origin()
    url = "https://%s:%d%s" % (ctx.proxy_host, ctx.proxy_port, args.path)
    if "tls" in wanted:
        case = {"name": "h2-tls", "kind": "tls", "title": H2_TITLES["tls"], "conns": args.conns,
                "streams": args.streams, "path": args.path, "runs": []}
        res["cases"].append(case)
        h2_rounds(fb, ctx, args, case, url, tls_opts(certs), None, extra)
    for n in counts:
        idle_case(fb, ctx, args, res, certs, n)
    if "grpc" in wanted:
        body = ctx.path("grpc-body")
        with open(body, "wb") as f:
            f.write(GRPC_BODY)
        tls = tls_opts(certs, grpc=True)
        case = {"name": "h2-grpc", "kind": "grpc", "title": H2_TITLES["grpc"], "conns": args.conns,
                "streams": args.streams, "path": args.path, "runs": []}
        res["cases"].append(case)
        h2_rounds(fb, ctx, args, case, url, tls, grpc_config(fb, ctx, tls),
                  extra + ["-m", "POST", "--body-file", body], body_file=body)
    return res


# ---- report

def _h2_table(fb, s):
    cols = ["proxy", "req/s", "CPU µs/req", "user µs/req", "sys µs/req", "proxy CPU %", "p50 ms", "p99 ms",
            "peak RSS", "errors", "h2load req/s", "h2load CPU µs/req (user/sys)"]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for name in fb.NAMES:
        m = s.get(name)
        if m is None:
            continue
        if not m.get("rounds_ok"):
            err = (m.get("first_error") or "").splitlines()
            out.append("| %s | **failed**: %s |" % (fb.PRETTY[name], fb._esc(err[0] if err else "")))
            continue
        h = m.get("h2load") or {}
        out.append("| " + " | ".join([
            fb.PRETTY[name], fb.f0(m["req_per_s"]), fb.f2(m["cpu_us_per_req"]),
            fb.f2(m.get("cpu_user_us_per_req")), fb.f2(m.get("cpu_sys_us_per_req")), fb.f1(m["proxy_cpu_pct"]),
            fb.f3(m["lat_ms"]["50"]), fb.f3(m["lat_ms"]["99"]), fb.mib(m["peak_rss_kib"]), str(m["errors"]),
            fb.f0(h.get("req_per_s")) if h else "",
            "%s (%s/%s)" % (fb.f2(h.get("cpu_us_per_req")), fb.f2(h.get("cpu_user_us_per_req")),
                            fb.f2(h.get("cpu_sys_us_per_req"))) if h else ""]) + " |")
    for a, other in fb.ratio_pairs(s):
        f, o = s[a], s[other]
        if f.get("rounds_ok") and o.get("rounds_ok") and other != fb.BEFORE:
            fh, oh = f.get("h2load") or {}, o.get("h2load") or {}
            out.append("| " + " | ".join([
                "**%s**" % fb.pair_label(a, other), fb.fr(fb.ratio(f["req_per_s"], o["req_per_s"])),
                fb.fr(fb.ratio(f["cpu_us_per_req"], o["cpu_us_per_req"])),
                fb.fr(fb.ratio(f.get("cpu_user_us_per_req"), o.get("cpu_user_us_per_req"))),
                fb.fr(fb.ratio(f.get("cpu_sys_us_per_req"), o.get("cpu_sys_us_per_req"))), "",
                fb.fr(fb.ratio(f["lat_ms"]["50"], o["lat_ms"]["50"])),
                fb.fr(fb.ratio(f["lat_ms"]["99"], o["lat_ms"]["99"])),
                fb.fr(fb.ratio(f["peak_rss_kib"], o["peak_rss_kib"])), "",
                fb.fr(fb.ratio(fh.get("req_per_s"), oh.get("req_per_s"))),
                fb.fr(fb.ratio(fh.get("cpu_us_per_req"), oh.get("cpu_us_per_req")))]) + " |")
    return out


def report_h2(fb, path, res, md):
    p = res["params"]
    md += ["## HTTP/2", ""]
    md += ["Client `fairlead-load --h2` (Fairlead's own HTTP/2 codec, `fairlead-h2`): %d connections × "
           "%d streams in flight, TLS 1.3 with ALPN h2, ECDSA P-256 certificate; the proxies bind "
           "`ssl crt PEM alpn h2,http/1.1` (nginx: `listen ... ssl http2`). Each measured run is followed "
           "by an h2load run with the same connections and streams against the same proxy process "
           "(`h2load -c %d -m %d -D %g`), measured the same way: two independent clients. %d rounds × "
           "%g s, medians across rounds." % (p["conns"], p["streams"], p["conns"], p["streams"],
                                              p["duration_s"], p["rounds"], p["duration_s"]), ""]
    for case in res["cases"]:
        s = case.get("summary", {})
        if case["kind"] in ("tls", "grpc"):
            md += ["### %s" % case["title"], ""]
            if case["kind"] == "grpc":
                md += ["`POST %s` with a %d-byte body (`--body-file`; h2load `-d`) and a 64-byte response; "
                       "the proxy forwards over HTTP/2 to the origin (`server ... proto h2`; nginx "
                       "`grpc_pass grpc://`), `fairlead-term` answering h2c. Each proxy keeps its server "
                       "connections and multiplexes the requests on them as streams (Fairlead: "
                       "`http-reuse safe`, the default)." % (
                           case["path"], len(GRPC_BODY)), ""]
            md += _h2_table(fb, s)
            md += ["", fb.rounds_line(s), fb.rounds_line(s, "cpu_us_per_req_all", "CPU µs/req"),
                   fb.other_line(case), ""]
            if fb.client_cmd_of(case):
                md += ["Client: `%s`" % fb.client_cmd_of(case), ""]
            h = next((r["h2load"]["cmd"] for r in case["runs"] if (r.get("h2load") or {}).get("cmd")), None)
            if h:
                md += ["Cross-check: `%s`" % h, ""]
            md += fb.config_block(case)
        elif case["kind"] == "idle":
            md += ["### Idle HTTP/2 TLS connections", ""]
            md += ["N connections opened from Python (TLS, ALPN h2, the preface, SETTINGS, one `GET %s`, "
                   "the response read), then left idle; (VmRSS with N − VmRSS before) / N of the proxy "
                   "(nginx: its worker), the baseline after 20 such connections." % case["path"], ""]
            cols = ["N", "proxy", "RSS before", "RSS with N", "KiB per connection", "still open", "Fairlead/this"]
            md += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
            fk = s.get("fairlead", {}).get("kib_per_conn")
            for name in fb.KNOWN:
                m = s.get(name)
                if m is None:
                    continue
                if not m.get("rounds_ok"):
                    md.append("| %d | %s | **failed**: %s |" % (case["conns"], fb.PRETTY[name], fb._esc(
                        (m.get("first_error") or "").splitlines()[0])))
                    continue
                md.append("| %d | %s | %s | %s | %.2f | %d/%d | %s |" % (
                    case["conns"], fb.PRETTY[name], fb.mib(m["rss_base_kib"]), fb.mib(m["rss_with_n_kib"]),
                    m["kib_per_conn"], m["still_open"], case["conns"],
                    "" if name == "fairlead" else fb.fr(fb.ratio(fk, m["kib_per_conn"]))))
            md += [""]
    md += _remarks(fb, res) + fb.header_block(res, path)


def _remarks(fb, res):
    """Reading notes computed from the result: saturation, disturbance, the two clients."""
    pcts, ratios = [], []
    for case in res["cases"]:
        for m in case.get("summary", {}).values():
            if case["kind"] in ("tls", "grpc") and m.get("rounds_ok"):
                pcts.append(m.get("proxy_cpu_pct") or 0)
                h = m.get("h2load") or {}
                if h.get("cpu_us_per_req") and m.get("cpu_us_per_req"):
                    ratios.append(h["cpu_us_per_req"] / m["cpu_us_per_req"])
    ls = fb.load_summary(res)
    out = ["**Remarks.**", ""]
    if pcts:
        out.append("* Proxy CPU stayed between %.0f%% and %.0f%% of its CPU: %s" % (
            min(pcts), max(pcts), "no proxy was saturated (the client and the origin share the other CPU), so "
            "req/s says more about them than about the proxy; compare CPU µs/req." if max(pcts) < 90 else
            "compare CPU µs/req rather than req/s where a proxy stayed well below 100%."))
    if ls["runs_acct"]:
        out.append("* %d of %d measured runs were disturbed (other processes took more than %g%% of a CPU; "
                   "median %.0f%%): on this shared 2-CPU machine only the ratios between proxies measured in "
                   "alternation mean something, and a ratio within ±10%% is a tie." % (
                       ls["disturbed"], ls["runs_acct"], fb.DISTURBED_PCT, ls["other_med"] or 0))
    if ratios:
        out.append("* The proxies' CPU per request under h2load was ×%.2f–×%.2f of the same under "
                   "fairlead-load: the two clients agree on what a request costs the proxy (req/s differ more, "
                   "since the clients themselves differ in cost on the shared client CPU)." % (
                       min(ratios), max(ratios)))
    out += ["* Idle connections: user-space RSS only (TLS state, HTTP/2 state, HPACK tables, whatever "
            "buffers a proxy keeps); kernel socket buffers are not counted.", ""]
    return out
