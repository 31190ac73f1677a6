"""The TLS scenarios of bench/fairbench.py: tls and tlsscan (certificates, a raw TLS probe,
idle TLS connections, the sslscan policy check; run and report).
"""

import os
import resource
import shlex
import socket
import subprocess
import sys
import time

from fbcore import (BENCH, BenchError, KNOWN, PRETTY, URING, RunningProxy, aggregate, client_tls_context,
                    f0, f1, f2, f3, fr, http_get, loadavg1, log, med, mib, negotiated_str,
                    new_result, pair_label, print_summary, proxied_rounds, ratio, ratio_pairs)
from fbfmt import (_esc, chart_name, client_cmd_of, config_block, header_block, other_line,
                   proxy_label, proxy_table, rounds_line, svg_bars)
from fbscen import idle_table, read_response
import fbcore



# --------------------------------------------------------------------------
# TLS termination (scenarios `tls` and `tlsscan`)

TLS_CASES = [
    # name, certificate, client options (besides -k), one request per connection, what it measures
    ("keepalive", "ecdsa", [], False, "keep-alive HTTPS, ECDSA P-256 certificate"),
    ("full-ecdsa", "ecdsa", ["--tls-resume", "off"], True, "full handshakes, ECDSA P-256"),
    ("full-rsa", "rsa", ["--tls-resume", "off"], True, "full handshakes, RSA-2048"),
    ("resumed", "ecdsa", ["--tls-resume", "on"], True, "resumed handshakes (session tickets), ECDSA P-256"),
]
TLS_PLAIN_CASES = [
    # plain-HTTP references in the same rounds (--cases plain-keepalive,plain-close)
    ("plain-keepalive", None, [], False, "plain HTTP keep-alive (reference)"),
    ("plain-close", None, [], True, "plain HTTP, one request per connection (reference)"),
]
TLS_DEFAULT_CASES = "keepalive,full-ecdsa,full-rsa,resumed,idle,scan"
GROUP_NAMES = {0x001D: "X25519", 0x0017: "P-256", 0x0018: "P-384", 0x0019: "P-521", 0x001E: "X448",
               0x11EC: "X25519MLKEM768", 0x0100: "ffdhe2048", 0x0101: "ffdhe3072"}
SUITE_NAMES = {0x1301: "TLS_AES_128_GCM_SHA256", 0x1302: "TLS_AES_256_GCM_SHA384",
               0x1303: "TLS_CHACHA20_POLY1305_SHA256", 0xC02B: "ECDHE-ECDSA-AES128-GCM-SHA256",
               0xC02C: "ECDHE-ECDSA-AES256-GCM-SHA384", 0xCCA9: "ECDHE-ECDSA-CHACHA20-POLY1305",
               0xC02F: "ECDHE-RSA-AES128-GCM-SHA256", 0xC030: "ECDHE-RSA-AES256-GCM-SHA384",
               0xCCA8: "ECDHE-RSA-CHACHA20-POLY1305"}


def make_certs(ctx):
    """Self-signed ECDSA P-256 and RSA-2048 certificates, each one PEM with the certificate and
    its key (HAProxy's crt format; nginx takes the same file for ssl_certificate and
    ssl_certificate_key). Returns {"ecdsa": {...}, "rsa": {...}} with the path and the command."""
    d = ctx.path("certs")
    os.makedirs(d, exist_ok=True)
    out = {}
    for kind, newkey in (("ecdsa", ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]),
                         ("rsa", ["-newkey", "rsa:2048"])):
        crt, key, pem = (os.path.join(d, kind + ext) for ext in (".crt", ".key", ".pem"))
        cmd = ["openssl", "req", "-x509"] + newkey + [
            "-nodes", "-sha256", "-days", "7", "-subj", "/CN=fairbench.local", "-keyout", key, "-out", crt,
            "-addext", "subjectAltName=DNS:fairbench.local,IP:%s" % ctx.proxy_host]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise BenchError("openssl failed: %s" % e)
        if p.returncode != 0:
            raise BenchError("openssl failed (%s): %s" % (" ".join(cmd), p.stderr[-500:]))
        with open(pem, "w") as f:
            f.write(open(crt).read() + open(key).read())
        os.chmod(pem, 0o600)
        fp = subprocess.run(["openssl", "x509", "-in", crt, "-noout", "-fingerprint", "-sha256"],
                            capture_output=True, text=True).stdout.strip().split("=", 1)[-1]
        out[kind] = {"pem": pem, "sha256_fingerprint": fp,
                     "command": " ".join(shlex.quote(os.path.basename(a)) if a.startswith(d) else shlex.quote(a)
                                         for a in cmd) + " && cat %s.crt %s.key > %s.pem" % (kind, kind, kind)}
    return out


def tls_probe(host, port, timeout=3.0):
    """What fairlead-load negotiates with this listener: sends a ClientHello shaped like rustls
    0.23's default one (aws-lc-rs provider as fairlead-load builds it, no post-quantum preference:
    TLS 1.3 and 1.2, groups X25519, P-256, P-384, X25519MLKEM768 with an X25519 key share, the
    AES-256-GCM / AES-128-GCM / ChaCha20 suites, ALPN http/1.1, no SNI for an IP address) and
    reads the server's reply in clear: version, cipher suite, key exchange group (TLS 1.3: the
    ServerHello's key share; TLS 1.2: the ServerKeyExchange), HelloRetryRequest. The handshake is
    then abandoned. Returns a dict, or {"error": ...}."""
    import struct
    u16 = lambda v: struct.pack("!H", v)
    ext = lambda t, body: u16(t) + u16(len(body)) + body
    suites = [0x1302, 0x1301, 0x1303, 0xC02C, 0xC02B, 0xCCA9, 0xC030, 0xC02F, 0xCCA8]
    groups = [0x001D, 0x0017, 0x0018, 0x11EC]
    sigs = [0x0503, 0x0403, 0x0807, 0x0806, 0x0805, 0x0804, 0x0601, 0x0501, 0x0401]
    share = u16(0x001D) + u16(32) + bytes([9]) + bytes(31)   # the X25519 base point: a valid key
    alpn = b"http/1.1"
    exts = (ext(0x002B, bytes([4]) + u16(0x0304) + u16(0x0303))
            + ext(0x000A, u16(2 * len(groups)) + b"".join(u16(g) for g in groups))
            + ext(0x0033, u16(len(share)) + share)
            + ext(0x000D, u16(2 * len(sigs)) + b"".join(u16(g) for g in sigs))
            + ext(0x000B, b"\x01\x00") + ext(0x0010, u16(len(alpn) + 1) + bytes([len(alpn)]) + alpn)
            + ext(0x0017, b"") + ext(0x002D, b"\x01\x01") + ext(0x0023, b"") + ext(0xFF01, b"\x00"))
    body = (u16(0x0303) + os.urandom(32) + bytes([32]) + os.urandom(32)
            + u16(2 * len(suites)) + b"".join(u16(c) for c in suites) + b"\x01\x00" + u16(len(exts)) + exts)
    hello = b"\x01" + len(body).to_bytes(3, "big") + body
    hrr_random = bytes.fromhex("CF21AD74E59A6111BE1D8C021E65B891C2A211167ABB8C5E079E09E2C8A8339C")
    out = {"offered": "TLS 1.3+1.2; X25519 (key share), P-256, P-384, X25519MLKEM768; "
                      "AES-256-GCM, AES-128-GCM, ChaCha20; ALPN http/1.1"}
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(b"\x16\x03\x01" + u16(len(hello)) + hello)
            buf, hs = b"", b""
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                while len(buf) >= 5 and len(buf) >= 5 + struct.unpack("!H", buf[3:5])[0]:
                    n = struct.unpack("!H", buf[3:5])[0]
                    typ, payload, buf = buf[0], buf[5:5 + n], buf[5 + n:]
                    if typ == 0x15:
                        return dict(out, error="alert %d from the server" % payload[1] if len(payload) > 1
                                    else "alert")
                    if typ == 0x16:
                        hs += payload
                # handshake messages received so far
                i, msgs = 0, []
                while i + 4 <= len(hs):
                    mlen = int.from_bytes(hs[i + 1:i + 4], "big")
                    if i + 4 + mlen > len(hs):
                        break
                    msgs.append((hs[i], hs[i + 4:i + 4 + mlen]))
                    i += 4 + mlen
                sh = next((m for t, m in msgs if t == 2), None)
                if sh is not None:
                    r = _parse_server_hello(sh, hrr_random)
                    r.update(out)
                    if r["version"] == "TLSv1.3" or r.get("hrr"):
                        return r
                    ske = next((m for t, m in msgs if t == 12), None)
                    if ske is not None:
                        if ske[0] == 3:
                            g = struct.unpack("!H", ske[1:3])[0]
                            r["group"] = GROUP_NAMES.get(g, "0x%04X" % g)
                        return r
                    if any(t == 14 for t, _ in msgs):
                        return r
                chunk = s.recv(65536)
                if not chunk:
                    return dict(out, error="connection closed by the server")
                buf += chunk
            return dict(out, error="no ServerHello in %.0f s" % timeout)
    except OSError as e:
        return dict(out, error=str(e))


def _parse_server_hello(m, hrr_random):
    import struct
    ver = struct.unpack("!H", m[0:2])[0]
    rnd = m[2:34]
    i = 34
    sid = m[i]
    i += 1 + sid
    suite = struct.unpack("!H", m[i:i + 2])[0]
    i += 3   # suite, compression
    r = {"version": {0x0303: "TLSv1.2", 0x0302: "TLSv1.1", 0x0301: "TLSv1.0"}.get(ver, "0x%04X" % ver),
         "cipher": SUITE_NAMES.get(suite, "0x%04X" % suite), "group": None, "hrr": rnd == hrr_random}
    if i + 2 <= len(m):
        end = i + 2 + struct.unpack("!H", m[i:i + 2])[0]
        i += 2
        while i + 4 <= end:
            t, n = struct.unpack("!HH", m[i:i + 4])
            d = m[i + 4:i + 4 + n]
            if t == 0x002B and n == 2:
                v = struct.unpack("!H", d)[0]
                r["version"] = {0x0304: "TLSv1.3", 0x0303: "TLSv1.2"}.get(v, "0x%04X" % v)
            elif t == 0x0033 and n >= 2:
                g = struct.unpack("!H", d[:2])[0]
                r["group"] = GROUP_NAMES.get(g, "0x%04X" % g)
            elif t == 0x0010 and n > 3:
                r["alpn"] = d[3:3 + d[2]].decode("ascii", "replace")
            i += 4 + n
    return r


def open_idle_tls(host, port, n, path, batch=200, timeout=10.0):
    """Opens n TLS connections (Python's ssl module, no certificate verification, ALPN
    http/1.1), a batch at a time with the handshakes of a batch driven concurrently
    (non-blocking sockets and a selector); then one GET on each, response read, and the
    connection stays idle. Returns (sockets, failures)."""
    import selectors
    import ssl
    tctx = client_tls_context()
    req = ("GET %s HTTP/1.1\r\nHost: bench\r\n\r\n" % path).encode()
    socks, failures = [], 0
    for start in range(0, n, batch):
        pending = []
        for _ in range(min(batch, n - start)):
            try:
                raw = socket.create_connection((host, port), timeout=timeout)
                s = tctx.wrap_socket(raw, do_handshake_on_connect=False)
                s.setblocking(False)
                pending.append(s)
            except OSError:
                failures += 1

        def step(s):
            try:
                s.do_handshake()
                return None
            except ssl.SSLWantReadError:
                return selectors.EVENT_READ
            except ssl.SSLWantWriteError:
                return selectors.EVENT_WRITE

        sel = selectors.DefaultSelector()
        done = []
        for s in pending:
            try:
                ev = step(s)
            except OSError:
                failures += 1
                s.close()
                continue
            if ev is None:
                done.append(s)
            else:
                sel.register(s, ev)
        deadline = time.monotonic() + timeout
        while sel.get_map() and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=1.0):
                s = key.fileobj
                try:
                    ev = step(s)
                except OSError:
                    sel.unregister(s)
                    s.close()
                    failures += 1
                    continue
                if ev is None:
                    sel.unregister(s)
                    done.append(s)
                else:
                    sel.modify(s, ev)
        for key in list(sel.get_map().values()):   # handshakes that did not finish in time
            sel.unregister(key.fileobj)
            key.fileobj.close()
            failures += 1
        sel.close()
        sent = []
        for s in done:
            s.settimeout(timeout)
            try:
                s.sendall(req)
                sent.append(s)
            except OSError:
                failures += 1
                s.close()
        for s in sent:
            try:
                read_response(s)
                socks.append(s)
            except (OSError, BenchError):
                failures += 1
                s.close()
    return socks, failures


def still_open_tls(socks):
    """TLS sockets still open: a non-blocking read that wants more data (an EOF, a close_notify
    or a reset means closed). Post-handshake messages (session tickets) are consumed on the way."""
    import ssl
    n = 0
    for s in socks:
        try:
            s.setblocking(False)
            if s.recv(1):
                n += 1   # unexpected data, but open
        except ssl.SSLWantReadError:
            n += 1
        except (ssl.SSLWantWriteError, BlockingIOError):
            n += 1
        except OSError:
            pass
    return n


def scan_proxy(ctx, name, certs, kinds=("ecdsa", "rsa")):
    """sslscan-check (bench/sslscan_check.py) against this proxy's TLS listener, once per
    certificate type (the accepted TLS 1.2 suites depend on the key). Returns a dict."""
    sys.path.insert(0, BENCH)
    sys.dont_write_bytecode = True   # no bench/__pycache__
    import sslscan_check
    out = {"proxy": name, "by_cert": {}}
    for kind in kinds:
        proxy = None
        r = {}
        try:
            proxy = RunningProxy(ctx, name, "http", 9500, tls={"crt": certs[kind]["pem"], "alpn": "http/1.1",
                                                                "tag": kind})
            out.setdefault("configs", {})[kind] = proxy.config_text
            r = sslscan_check.check("%s:%d" % (ctx.proxy_host, ctx.proxy_port))
            lines = sslscan_check.summary_lines(r)
            for line in lines[:2] + [l for l in lines if l.startswith(("PASS", "FAIL"))]:
                log("   %s %s: %s" % (name, kind, line.strip()))
            if not proxy.alive():
                r["proxy_exit"] = proxy.proc.returncode
                r["proxy_log"] = proxy.log_tail()
        except BenchError as e:
            r = {"pass": None, "error": str(e)}
            log("ERROR:", e)
        finally:
            if proxy is not None:
                proxy.stop()
        out["by_cert"][kind] = r
    verdicts = [r.get("pass") for r in out["by_cert"].values()]
    out["pass"] = None if any(v is None for v in verdicts) else all(verdicts)
    return out


def tls_idle_case(ctx, args, res, certs, n):
    case = {"name": "tls-idle-%d" % n, "kind": "idle", "cert": "ecdsa", "mode": "http", "conns": n,
            "path": args.path, "runs": []}
    res["cases"].append(case)
    maxconn = max(9500, n + 500)
    tls = {"crt": certs["ecdsa"]["pem"], "alpn": "http/1.1", "tag": "ecdsa"}
    for rnd in range(1, args.idle_rounds + 1):
        for name in ctx.proxies:
            log("tls idle N=%d round %d/%d: %s" % (n, rnd, args.idle_rounds, name))
            entry = {"round": rnd, "proxy": name}
            proxy = None
            socks = []
            try:
                proxy = RunningProxy(ctx, name, "http", maxconn, tls=tls)
                case.setdefault("configs", {})[name] = proxy.config_text
                # a few requests on short TLS connections so that lazy initialisation is done
                for _ in range(20):
                    http_get(ctx.proxy_host, ctx.proxy_port, args.path, tls=True)
                time.sleep(args.settle)
                base = proxy.rss_kib()
                entry["loadavg1"] = [loadavg1()]
                t0 = time.monotonic()
                socks, failures = open_idle_tls(ctx.proxy_host, ctx.proxy_port, n, args.path)
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
                    "still_open": still_open_tls(socks),
                    "proxy_alive": proxy.alive(),
                })
                if proxy.io_uring is not None:
                    entry["io_uring"] = proxy.io_uring
                log("   %-14s base %d KiB, with %d TLS conns %d KiB: %.2f KiB/conn, %d still open, %d fds, "
                    "opened in %.1f s" % (name, base, n, with_n, entry["kib_per_conn"], entry["still_open"],
                                          fds, opened))
            except BenchError as e:
                entry["error"] = str(e)
                log("ERROR:", e)
            finally:
                for s in socks:
                    try:
                        s.close()
                    except OSError:
                        pass
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


def sc_tls(ctx, args):
    wanted = [c.strip() for c in args.cases.split(",") if c.strip()]
    known = [c[0] for c in TLS_CASES + TLS_PLAIN_CASES] + ["idle", "scan"]
    for c in wanted:
        if c not in known:
            raise BenchError("unknown tls case %r (choose from %s)" % (c, ",".join(known)))
    counts = [int(x) for x in args.counts.split(",") if x.strip()] if "idle" in wanted else []
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if counts and 2 * max(counts) + 500 > nofile:
        raise BenchError("N=%d needs more than the %d file descriptors allowed" % (max(counts), nofile))
    certs = make_certs(ctx)
    client_tls = ["-k"] + (["--tls-version", args.tls_version] if args.tls_version else [])
    res = new_result(ctx, "tls", {
        "cases": wanted, "rounds": args.rounds, "duration_s": args.duration, "conns": args.conns,
        "path": args.path, "warmup_s": args.warmup, "counts": counts, "idle_rounds": args.idle_rounds,
        "settle_s": args.settle, "client_tls": client_tls, "alpn": "http/1.1",
        "certs": {k: {"command": v["command"], "sha256_fingerprint": v["sha256_fingerprint"]}
                  for k, v in certs.items()}})
    ctx.start_origin()
    probe = lambda proxy, entry: entry.update(negotiated=tls_probe(ctx.proxy_host, ctx.proxy_port)) \
        if proxy.tls else None
    for name, cert, opts, close, title in TLS_PLAIN_CASES + TLS_CASES:
        if name not in wanted:
            continue
        tls = {"crt": certs[cert]["pem"], "alpn": "http/1.1", "tag": cert} if cert else None
        url = ctx.proxy_url(args.path)
        if tls:
            url = "https://" + url[len("http://"):]
        case = {"name": "tls-" + name if tls else name, "kind": name, "title": title, "cert": cert,
                "mode": "http", "path": args.path, "conns": args.conns, "close": close, "tls": bool(tls)}
        res["cases"].append(case)
        proxied_rounds(ctx, case, "http", url, args.conns, args.duration, args.rounds, close=close,
                       warmup=args.warmup, tls=tls, extra=(client_tls + opts) if tls else None, on_start=probe)
        aggregate(case)
        print_summary(case)
    for n in counts:
        tls_idle_case(ctx, args, res, certs, n)
    if "scan" in wanted:
        # fairlead-uring is the same binary and TLS stack as fairlead: its listener offers the same
        # protocols and suites (the `tlsscan` scenario scans it when asked by name)
        res["scan"] = [scan_proxy(ctx, name, certs) for name in ctx.proxies
                       if not (name == URING and "fairlead" in ctx.proxies)]
    return res


def sc_tlsscan(ctx, args):
    """Only the sslscan check of each proxy's TLS listener (ECDSA and RSA certificates)."""
    certs = make_certs(ctx)
    res = new_result(ctx, "tlsscan", {"certs": {k: {"command": v["command"]} for k, v in certs.items()},
                                      "checker": "bench/sslscan_check.py"})
    ctx.start_origin()
    res["scan"] = [scan_proxy(ctx, name, certs) for name in ctx.proxies]
    for s in res["scan"]:
        log("%s: %s" % (s["proxy"], {True: "PASS", False: "FAIL", None: "no verdict"}[s["pass"]]))
    return res


def fail_reason(err):
    """First line of an error, plus the proxy's first [ALERT] line when it has one."""
    lines = (err or "").splitlines()
    alert = next((l.strip() for l in lines[1:] if "ALERT" in l), None)
    return _esc((lines[0] if lines else "") + (" — `%s`" % alert if alert else ""))


def scan_rows(scans):
    """Markdown rows for sslscan-check results (one per proxy and certificate)."""
    cols = ["proxy", "certificate", "verdict", "protocols enabled", "TLS 1.3 suites", "TLS 1.2 suites",
            "problems"]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    short = lambda n: n.replace("ECDHE-", "").replace("TLS_", "")
    for sc in scans:
        for kind, r in sc.get("by_cert", {}).items():
            if r.get("pass") is None:
                out.append("| %s | %s | **no verdict** | %s | | | |" % (
                    PRETTY.get(sc["proxy"], sc["proxy"]), kind.upper(), fail_reason(r.get("error"))))
                continue
            bad = {f.split(" cipher ", 1)[1].split(" ", 1)[0] for f in r["failures"]
                   if " cipher " in f and ("not in the intermediate" in f or f.endswith("accepted"))}
            mark = lambda c: short(c["name"]) + (" ✗" if c["name"] in bad else "")
            c13 = [mark(c) for c in r["ciphers"] if c["version"] == "TLSv1.3"]
            c12 = [mark(c) for c in r["ciphers"] if c["version"] == "TLSv1.2"]
            other = [f for f in r["failures"] if not (" cipher " in f and ("not in the intermediate" in f
                                                                          or f.endswith("accepted")))]
            probs = (["%d suite(s) outside the profile (✗)" % len(bad)] if bad else []) + other
            out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                PRETTY.get(sc["proxy"], sc["proxy"]), kind.upper(), "pass" if r["pass"] else "**FAIL**",
                ", ".join(r["enabled_protocols"]), ", ".join(c13) or "–", ", ".join(c12) or "–",
                _esc("; ".join(probs)) or "none"))
    return out


SCAN_POLICY = ("Policy (`bench/sslscan_check.py`, Mozilla *intermediate*): no SSLv2/SSLv3/TLS 1.0/TLS 1.1; "
               "TLS 1.3 suites AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305; TLS 1.2 suites ECDHE-ECDSA/RSA "
               "with AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305 (and DHE-RSA ones); no DH under 2048 bits, "
               "no curve under 128-bit security, no certificate key under RSA-2048/P-256; no insecure "
               "renegotiation. The proxies run their default TLS settings: a FAIL for HAProxy or nginx "
               "shows what their defaults accept (CBC suites), not a flaw of this bench.")


def report_tls(path, res, md):
    p = res["params"]
    cases = {c.get("kind", c["name"]): c for c in res["cases"]}
    md += ["## TLS termination", ""]
    md += ["The same certificates for every proxy, generated at bench time with `openssl` (self-signed, "
           "one PEM with certificate and key: HAProxy's `crt` format; nginx gets the same file as "
           "`ssl_certificate` and `ssl_certificate_key`): ECDSA P-256 (`%s`) and RSA-2048. Fairlead and "
           "HAProxy load the same file, `bind ... ssl crt PEM alpn http/1.1`; nginx `listen ... ssl` with "
           "`ssl_protocols TLSv1.2 TLSv1.3` (HAProxy 2.6's default minimum), other TLS settings at each "
           "proxy's defaults. The backend is the same plain-HTTP `fairlead-term`. Client: `fairlead-load "
           "%s` (no certificate verification; handshake signatures are still checked), %d connections, "
           "`GET %s`, %s rounds × %s s per proxy and case after a %s s warm-up, rounds interleaved; "
           "medians across rounds. *Negotiated*: what a ClientHello shaped like fairlead-load's (rustls "
           "0.23) gets from each proxy, read in clear by the bench." % (
               (p.get("certs", {}).get("ecdsa") or {}).get("command", "openssl req"),
               " ".join(p.get("client_tls", ["-k"])), p["conns"], p["path"], p["rounds"], p["duration_s"],
               p["warmup_s"]), ""]
    for kind in ("keepalive", "plain-keepalive"):
        case = cases.get(kind)
        if not case:
            continue
        md += ["### %s" % ("Keep-alive over TLS (ECDSA P-256)" if kind == "keepalive" else
                           "Keep-alive, plain HTTP (reference, same rounds)"), ""]
        s = case["summary"]
        md += proxy_table(s)
        neg = ["%s %s" % (PRETTY[n], negotiated_str(s[n].get("negotiated"))) for n in KNOWN
               if s.get(n, {}).get("negotiated")]
        md += ["", rounds_line(s), rounds_line(s, "cpu_us_per_req_all", "CPU µs/req"), other_line(case)]
        if neg:
            md += ["", "Negotiated: " + "; ".join(neg) + "."]
        if client_cmd_of(case):
            md += ["", "Client: `%s`" % client_cmd_of(case)]
        md += [""]
    hs_kinds = [k for k in ("full-ecdsa", "full-rsa", "resumed", "plain-close") if k in cases]
    if hs_kinds:
        md += ["### Handshakes: one request per connection", "",
               "`--close` (each connection: TCP connect, TLS handshake, one request, close). Full handshakes: "
               "`--tls-resume off`; resumed: `--tls-resume on` (the client's session cache per thread; TLS "
               "1.3 session tickets), the share that resumed is shown. *CPU µs/handshake* = proxy "
               "utime+stime over the measured run / handshakes completed, so it includes the TCP accept, the "
               "HTTP request and the backend exchange of that connection (the `plain-close` row, when run, "
               "is the same without TLS). *Handshake ms*: the client's connect-to-handshake-done time, "
               "queueing included.", ""]
        cols = ["case", "proxy", "handshakes/s", "full / resumed", "proxy CPU µs/handshake", "proxy CPU %",
                "handshake p50 ms", "handshake p99 ms", "TTLB p99 ms", "peak RSS", "errors", "negotiated"]
        md += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        groups, rate_v, cpu_v = [], {}, {}
        for kind in hs_kinds:
            case = cases[kind]
            s = case["summary"]
            label = {"full-ecdsa": "full, ECDSA P-256", "full-rsa": "full, RSA-2048",
                     "resumed": "resumed, ECDSA P-256", "plain-close": "plain HTTP (no TLS)"}[kind]
            groups.append(label)
            rate_v[label], cpu_v[label] = {}, {}
            for name in KNOWN:
                m = s.get(name)
                if m is None:
                    continue
                if not m.get("rounds_ok"):
                    md.append("| %s | %s | **failed**: %s |" % (label, PRETTY[name], fail_reason(m.get("first_error"))))
                    continue
                t = m.get("tls") or {}
                rate = t.get("hs_per_s", m.get("conn_per_s"))
                cpu = t.get("cpu_us_per_hs", m.get("cpu_us_per_req"))
                rate_v[label][name], cpu_v[label][name] = rate, cpu
                md.append("| " + " | ".join([
                    label, proxy_label(name, m), f0(rate),
                    ("%s / %s%s" % (f0(t.get("full")), f0(t.get("resumed")),
                                    " (%.0f%% resumed)" % t["resumed_pct"] if t.get("resumed_pct") is not None
                                    and kind == "resumed" else "")) if t else "–",
                    f2(cpu), f1(m["proxy_cpu_pct"]), f3((t.get("hs_lat_ms") or {}).get("50")),
                    f3((t.get("hs_lat_ms") or {}).get("99")), f3(m["lat_ms"]["99"]), mib(m["peak_rss_kib"]),
                    str(m["errors"]) + (" (%d failed rounds)" % m["rounds_failed"] if m.get("rounds_failed") else ""),
                    negotiated_str(m.get("negotiated")) if t else "–"]) + " |")
            for a, other in ratio_pairs(s):
                f, o = s[a], s[other]
                if f.get("rounds_ok") and o.get("rounds_ok"):
                    md.append("| %s | **%s** | %s | | %s | | | | | %s | | |" % (
                        label, pair_label(a, other), fr(ratio(rate_v[label].get(a), rate_v[label].get(other))),
                        fr(ratio(cpu_v[label].get(a), cpu_v[label].get(other))),
                        fr(ratio(f["peak_rss_kib"], o["peak_rss_kib"]))))
        md += [""]
        for kind in hs_kinds:
            s = cases[kind]["summary"]
            per = []
            for name in KNOWN:
                t = (s.get(name) or {}).get("tls")
                if t:
                    per.append("%s %s hs/s, %s µs" % (PRETTY[name], ", ".join(f0(v) for v in t["hs_per_s_all"]),
                                                       ", ".join(f1(v) for v in t["cpu_us_per_hs_all"])))
            if per:
                md.append("Per round, %s: %s." % (kind, "; ".join(per)))
            ol = other_line(cases[kind])
            if ol:
                md.append(ol.replace("Per round (", "Per round, %s (" % kind, 1))
        names = [n for n in KNOWN if any(n in v for v in rate_v.values())]
        c1, c2 = chart_name(path, "hs"), chart_name(path, "hscpu")
        if svg_bars(os.path.join(fbcore.RESULTS, c1), "TLS handshakes/s (one request per connection, median)",
                    "handshakes/s", groups, names, rate_v):
            svg_bars(os.path.join(fbcore.RESULTS, c2), "proxy CPU µs per handshake (median)", "µs/handshake",
                     groups, names, cpu_v)
            md += ["", "![handshakes/s](bench/results/%s) ![CPU per handshake](bench/results/%s)" % (c1, c2)]
        cmd = client_cmd_of(cases[hs_kinds[0]])
        if cmd:
            md += ["", "Client (%s): `%s`" % (hs_kinds[0], cmd)]
        md += [""]
    idle = [c for c in res["cases"] if c.get("kind") == "idle"]
    if idle:
        md += ["### Idle TLS connections", "",
               "N TLS connections opened from Python (`ssl` module, handshakes of 200 connections at a time "
               "driven concurrently; TLS 1.3, X25519, ECDSA P-256 certificate), each sends one `GET %s`, reads "
               "the response and stays idle. Memory per connection = (VmRSS with N − VmRSS before) / N, of "
               "the proxy process (nginx: its worker), the baseline taken after 20 TLS requests on fresh "
               "connections. Kernel socket buffers are not in RSS. %s round(s)." % (p["path"], p["idle_rounds"]),
               ""]
        md += idle_table(idle, "KiB per TLS connection", fail=fail_reason)
        groups = ["N=%d" % c["conns"] for c in idle]
        vals = {"N=%d" % c["conns"]: {n: m["kib_per_conn"] for n, m in c["summary"].items() if m.get("rounds_ok")}
                for c in idle}
        cn = chart_name(path, "idlekib")
        if svg_bars(os.path.join(fbcore.RESULTS, cn), "RSS per idle TLS connection", "KiB/conn", groups,
                    [n for n in KNOWN if any(n in v for v in vals.values())], vals):
            md += ["", "![KiB per TLS connection](bench/results/%s)" % cn]
        md += [""]
    if res.get("scan"):
        md += ["### Protocols and ciphers (sslscan)", "", SCAN_POLICY, ""] + scan_rows(res["scan"]) + [""]
    md += header_block(res, path)
    shown = next((c for c in res["cases"] if c.get("configs") and c.get("cert")), None)
    if shown:
        md += ["Configuration of the ECDSA cases (the RSA case differs only in the `crt` file):", ""]
        md += config_block(shown)


def report_tlsscan(path, res, md):
    md += ["## TLS protocols and ciphers (sslscan)", "", SCAN_POLICY, ""] + scan_rows(res.get("scan", []))
    md += [""] + header_block(res, path)
    cfg = next((s.get("configs") for s in res.get("scan", []) if s.get("configs")), None)
    if cfg:
        md += ["<details><summary>TLS bind line (ECDSA)</summary>", "", "```",
               next((l.strip() for l in cfg.get("ecdsa", "").splitlines() if "ssl" in l), ""), "```", "",
               "</details>", ""]
