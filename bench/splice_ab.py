#!/usr/bin/env python3
"""CPU per MiB of a TCP- or HTTP-mode proxy, with and without kernel splicing.

Two fairlead processes run the same configuration (`mode tcp`, or `mode
http` with `--mode http`; `option splice-auto`, one thread); one of them is
started with `-dS` (no splicing). In TCP mode an origin process answers
every connection with one object of `--size` MiB and closes; in HTTP mode
it answers each GET of a keep-alive connection with an object of `--size`
MiB with a content-length (the client sends the next GET once the body is
in). The client downloads objects through one proxy, then the other,
alternating A B / B A for `--rounds` rounds of `--duration` seconds. Each
proxy's user and system CPU (from /proc/<pid>/stat) is divided by the MiB it
forwarded in that round. Prints per-round numbers and the medians, and the
with/without ratio of each round.

    python3 bench/splice_ab.py --bin target/release/fairlead --size 16
    python3 bench/splice_ab.py --bin target/release/fairlead --mode http
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")


def serve_http(c, data):
    """Answers each request head on `c` with `data` (keep-alive)."""
    head = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(data)
    pending = b""
    while True:
        while b"\r\n\r\n" not in pending:
            got = c.recv(4096)
            if not got:
                return
            pending += got
        pending = pending.split(b"\r\n\r\n", 1)[1]
        c.sendall(head)
        c.sendall(data)


def origin_main(host, port, size, http):
    """Serves `size` bytes per connection then closes, or per HTTP
    request (child process)."""
    data = bytes(range(256)) * (size // 256)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, port))
    ls.listen(512)
    print("ready", flush=True)

    def serve(c):
        try:
            if http:
                serve_http(c, data)
            else:
                c.sendall(data)
        except OSError:
            pass
        finally:
            c.close()

    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


def wait_port(host, port, deadline=10.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            socket.create_connection((host, port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.02)
    sys.exit(f"nothing listens on {host}:{port}")


def download(host, port, stop, totals, i):
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    while not stop.is_set():
        s = socket.create_connection((host, port))
        while True:
            n = s.recv_into(view)
            if n == 0:
                break
            totals[i] += n
        s.close()


def download_http(host, port, stop, totals, i):
    """GETs objects one after another on one keep-alive connection."""
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    s = socket.create_connection((host, port))
    while not stop.is_set():
        s.sendall(b"GET /o HTTP/1.1\r\nhost: bench\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            got = s.recv(4096)
            if not got:
                return
            head += got
        head, rest = head.split(b"\r\n\r\n", 1)
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        left = length - len(rest)
        totals[i] += len(rest)
        while left > 0:
            n = s.recv_into(view, min(left, len(buf)))
            if n == 0:
                return
            left -= n
            totals[i] += n
    s.close()


def measure(pid, host, port, duration, conns, http):
    stop = threading.Event()
    totals = [0] * conns
    u0, s0 = cpu_ticks(pid)
    t0 = time.monotonic()
    fetch = download_http if http else download
    th = [threading.Thread(target=fetch, args=(host, port, stop, totals, i))
          for i in range(conns)]
    for t in th:
        t.start()
    time.sleep(duration)
    stop.set()
    for t in th:
        t.join()
    wall = time.monotonic() - t0
    u1, s1 = cpu_ticks(pid)
    mib = sum(totals) / (1 << 20)
    us = lambda ticks: ticks * 1e6 / TICK / mib
    return {"mib": mib, "wall": wall, "user": us(u1 - u0), "sys": us(s1 - s0)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", help="the fairlead binary (release build)")
    ap.add_argument("--size", type=int, default=16, help="object size in MiB (default 16)")
    ap.add_argument("--rounds", type=int, default=4, help="A/B rounds (default 4)")
    ap.add_argument("--duration", type=float, default=3.0, help="seconds per measure (default 3)")
    ap.add_argument("--conns", type=int, default=2, help="concurrent downloads (default 2)")
    ap.add_argument("--host", default="127.0.0.63")
    ap.add_argument("--port", type=int, default=18600)
    ap.add_argument("--mode", choices=["tcp", "http"], default="tcp",
                    help="proxy mode (default tcp)")
    ap.add_argument("--origin", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.origin:
        origin_main(a.host, a.port, a.size << 20, a.mode == "http")
        return
    if not a.bin:
        ap.error("--bin is required")
    origin = subprocess.Popen([sys.executable, __file__, "--origin", "--host", a.host,
                               "--port", str(a.port), "--size", str(a.size), "--mode", a.mode],
                              stdout=subprocess.PIPE, text=True)
    origin.stdout.readline()
    procs = {}
    tmp = tempfile.mkdtemp(prefix="splice-ab-")
    try:
        for name, port, extra in (("splice", a.port + 1, []), ("copy", a.port + 2, ["-dS"])):
            cfg = os.path.join(tmp, f"{name}.cfg")
            with open(cfg, "w") as f:
                f.write(
                    "global\n    nbthread 1\n    maxconn 1000\n"
                    f"defaults\n    mode {a.mode}\n    timeout connect 2s\n"
                    "    timeout client 30s\n    timeout server 30s\n"
                    f"listen app\n    bind {a.host}:{port}\n    option splice-auto\n"
                    f"    server o {a.host}:{a.port}\n")
            procs[name] = (subprocess.Popen([a.bin, "-f", cfg, "-q", *extra]), port)
            wait_port(a.host, port)
        rows = {"splice": [], "copy": []}
        ratios = []
        for r in range(a.rounds):
            order = ["splice", "copy"] if r % 2 == 0 else ["copy", "splice"]
            got = {}
            for name in order:
                p, port = procs[name]
                got[name] = measure(p.pid, a.host, port, a.duration, a.conns,
                                    a.mode == "http")
                rows[name].append(got[name])
                m = got[name]
                print(f"round {r} {name:6} {m['mib']:8.0f} MiB in {m['wall']:.1f}s "
                      f"user {m['user']:7.1f} sys {m['sys']:7.1f} us/MiB", flush=True)
            tot = lambda m: m["user"] + m["sys"]
            ratios.append(tot(got["splice"]) / tot(got["copy"]))
        for name, ms in rows.items():
            med = lambda k: statistics.median(m[k] for m in ms)
            print(f"median {name:6} user {med('user'):7.1f} sys {med('sys'):7.1f} "
                  f"total {med('user') + med('sys'):7.1f} us/MiB, "
                  f"{statistics.median(m['mib'] / m['wall'] for m in ms):.0f} MiB/s")
        print("splice/copy CPU per MiB per round: "
              + " ".join(f"{x:.2f}" for x in ratios)
              + f" (median {statistics.median(ratios):.2f})")
    finally:
        for p, _ in procs.values():
            p.terminate()
            p.wait()
        origin.terminate()
        origin.wait()


if __name__ == "__main__":
    main()
