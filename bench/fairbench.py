#!/usr/bin/env python3
"""fairbench: side-by-side benchmarks of Fairlead, HAProxy and nginx.

One subcommand per scenario (keepalive, close, sizes, idle, tail, servers,
crosscheck, tls) plus `build` (a private, recorded copy of the binaries) and
`report`, which regenerates BENCHMARKS.md from the latest result of each
scenario. Python 3 standard library only. See bench/README.md.

Every scenario starts one origin (fairlead-term) and then runs the proxies
one after another in interleaved rounds (fairlead, haproxy, nginx, fairlead,
...), each started fresh for its round, with the same client command. Fairlead
and HAProxy load the very same configuration file; nginx gets the equivalent
nginx.conf. All children are killed at the end, even on error.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import fbcosts  # the `costs` scenario (bench/fbcosts.py)
import fbmetrics  # TCP counters, thread scheduling, strace counts, CPU mitigations
import h2bench  # the `h2` scenario (bench/h2bench.py)
import stickbench  # the `stick` scenario (bench/stickbench.py)

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
RESULTS = os.path.join(BENCH, "results")
RELEASE = os.path.join(ROOT, "target", "release")
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

PROXIES = ("fairlead", "haproxy", "nginx")
# --compare-bin-dir DIR: a second Fairlead build (DIR/fairlead) run as one more "proxy"
BEFORE = "fairlead-before"
NAMES = ("fairlead", BEFORE, "haproxy", "nginx")   # display order
HAPROXY_SYNTAX = ("fairlead", BEFORE, "haproxy")   # loaded from the same HAProxy-syntax file
PRETTY = {"fairlead": "Fairlead", "haproxy": "HAProxy", "nginx": "nginx",
          "direct": "direct (no proxy)", BEFORE: "Fairlead (before)"}
COLORS = {"fairlead": "#d62728", "haproxy": "#1f77b4", "nginx": "#2ca02c",
          "direct": "#555555", BEFORE: "#ff9896"}
PCTS = ("50", "90", "99", "99.9", "99.99")
NETNS_ENV = "FAIRBENCH_IN_NETNS"   # set when --netns re-ran this script in its own network namespace
SIZES = [("64", 64), ("1k", 1024), ("16k", 16384), ("256k", 262144),
         ("1m", 1 << 20), ("16m", 16 << 20)]
BIG = ("100m", 100 << 20)


class BenchError(Exception):
    pass


def log(*a):
    print("[fairbench %s]" % time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# machine description

def _first_line(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        out = (p.stdout or "") + (p.stderr or "")
        return out.strip().splitlines()[0] if out.strip() else ""
    except (OSError, subprocess.TimeoutExpired):
        return "not found"


def binary_id(path):
    """The shared target dir may be rebuilt by others: record which binary ran."""
    import hashlib
    try:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        mtime = datetime.datetime.fromtimestamp(os.stat(path).st_mtime, datetime.timezone.utc)
        return {"sha256": h.hexdigest()[:16], "built": mtime.strftime("%Y-%m-%dT%H:%M:%SZ")}
    except OSError:
        return None


def machine(ctx):
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f.readline().split(":", 1)[1].strip()
    except OSError:
        pass
    git = _first_line(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    build = None
    try:
        with open(os.path.join(ctx.bin_dir, "build.json")) as f:
            build = json.load(f)
    except (OSError, ValueError):
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "mem_total": mem,
        "kernel": platform.release(),
        "loadavg_at_start": open("/proc/loadavg").read().split()[:3],
        "fairlead": _first_line([ctx.bin("fairlead"), "-v"]),
        "fairlead_git": git + ("-dirty" if dirty else ""),
        "fairlead_binary": binary_id(ctx.bin("fairlead")),
        "binaries": {b: binary_id(ctx.bin(b)) for b in ("fairlead", "fairlead-term", "fairlead-load")},
        "bin_dir": os.path.relpath(ctx.bin_dir, ROOT) if ctx.bin_dir.startswith(ROOT) else ctx.bin_dir,
        # the state of the source the binaries were built from (written by `fairbench.py build`);
        # without it, only the repository state at measurement time is known
        "build": build,
        "repo_at_run": git_state(),
        "haproxy": _first_line([ctx.haproxy, "-v"]),
        "nginx": _first_line([ctx.nginx, "-v"]),
        "wrk": _first_line([ctx.wrk, "-v"]) if ctx.wrk else "not found",
        "python": platform.python_version(),
        "cpus": {"proxy": ctx.proxy_cpus, "client": ctx.client_cpus, "origin": ctx.origin_cpus},
        "threads": {"proxy": ctx.threads, "client": ctx.client_threads, "origin": ctx.origin_threads},
        "nofile": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
        "cpu_vulnerabilities": fbmetrics.vulnerabilities(),
        "netns": bool(os.environ.get(NETNS_ENV)),
    }


def git_state():
    """Full commit and the tracked files that differ from it (bench/ edits do not change binaries)."""
    head = _first_line(["git", "-C", ROOT, "rev-parse", "HEAD"])
    st = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                        capture_output=True, text=True).stdout.splitlines()
    paths = [l[3:] for l in st if l.strip()]
    code = [q for q in paths if not (q.startswith("bench/") or q == "BENCHMARKS.md")]
    return {"commit": head, "dirty": bool(paths), "dirty_paths": paths,
            "dirty_outside_bench": code}


# --------------------------------------------------------------------------
# /proc helpers

def proc_cpu_s(pid):
    """utime+stime of a process, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_cpu_split_s(pid):
    """(utime, stime) of a process, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK


def proc_status_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def children_of(pid):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(int(d))
        except OSError:
            pass
    return out


def cpu_busy_s():
    """Busy seconds of all CPUs together since boot (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / CLK_TCK


class CpuAccount:
    """Machine CPU over a measured run: busy, ours (proxy, origin, the client that ran and
    exited, this script) and the rest: other people's work, plus kernel time (softirq) that
    is not charged to any process."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.t0 = time.monotonic()
        self.busy0 = cpu_busy_s()
        self.origin0 = ctx.origin_cpu_s()
        ch, me = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
        self.kids0 = ch.ru_utime + ch.ru_stime
        self.self0 = me.ru_utime + me.ru_stime

    def done(self, proxy_cpu_s):
        wall = time.monotonic() - self.t0
        ch, me = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
        busy = cpu_busy_s() - self.busy0
        client = ch.ru_utime + ch.ru_stime - self.kids0
        origin = self.ctx.origin_cpu_s() - self.origin0
        mine = me.ru_utime + me.ru_stime - self.self0
        ours = proxy_cpu_s + client + origin + mine
        pct = lambda x: round(100.0 * x / wall, 1) if wall > 0 else None
        return {"busy_pct": pct(busy), "client_pct": pct(client), "origin_pct": pct(origin),
                "proxy_pct": pct(proxy_cpu_s), "other_pct": pct(max(0.0, busy - ours)),
                "ncpu": os.cpu_count()}


def loadavg1():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except OSError:
        return None


def fd_count(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return None


# --------------------------------------------------------------------------
# sockets

def port_free(host, port):
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def check_loopback(host):
    if not host.startswith("127."):
        raise BenchError("%s is not a loopback address (127.0.0.0/8 only)" % host)


def client_tls_context():
    """A client context for the bench's self-signed certificates: no verification, ALPN http/1.1."""
    import ssl
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    c.check_hostname = False
    c.verify_mode = ssl.CERT_NONE
    c.set_alpn_protocols(["http/1.1"])
    return c


def http_get(host, port, path="/", timeout=2.0, tls=False):
    """One GET on a fresh connection (over TLS with tls=True); returns the status code."""
    s = socket.create_connection((host, port), timeout=timeout)
    try:
        if tls:
            s = client_tls_context().wrap_socket(s)
        s.sendall(("GET %s HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n" % path).encode())
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
    if not m:
        raise BenchError("bad response from %s:%d: %r" % (host, port, data[:80]))
    return int(m.group(1))


def wait_ready(host, port, path, deadline_s, proc, tls=False):
    end = time.monotonic() + deadline_s
    last = None
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            raise BenchError("process exited with status %s before serving" % proc.returncode)
        try:
            st = http_get(host, port, path, timeout=1.0, tls=tls)
            if st == 200:
                return
            last = "status %d" % st
        except (OSError, BenchError) as e:
            last = str(e)
        time.sleep(0.05)
    raise BenchError("%s:%d not ready after %.1fs (%s)" % (host, port, deadline_s, last))


# --------------------------------------------------------------------------
# process management

class Procs:
    """Tracks every child; stop_all() kills them (SIGTERM, then SIGKILL)."""

    def __init__(self):
        self.live = []

    def spawn(self, cmd, logpath, cpus=None):
        if cpus:
            cmd = ["taskset", "-c", cpus] + cmd
        logf = open(logpath, "ab")
        p = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        logf.close()
        p.cmdline = cmd
        p.logpath = logpath
        self.live.append(p)
        return p

    def stop(self, p, grace=3.0):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        # the group may still hold children (nginx workers) even after the leader is gone
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            p.wait(2)
        except subprocess.TimeoutExpired:
            pass
        if p in self.live:
            self.live.remove(p)

    def stop_all(self):
        for p in list(self.live):
            self.stop(p, grace=1.0)


def tail_of(path, n=20):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace").splitlines()[-n:]
    except OSError:
        return []


# --------------------------------------------------------------------------
# configuration files

def backend_servers(ctx, servers):
    """[(name, host, port)]: the single origin by default, or the `servers` scenario's list."""
    if servers:
        return servers
    return [("o1", ctx.origin_host, ctx.origin_port)]


def haproxy_cfg(ctx, mode, maxconn, keepalive_timeout="60s", balance="roundrobin", servers=None, tls=None):
    lines = [
        "# generated by bench/fairbench.py; loaded as is by both Fairlead and HAProxy",
        "global",
        "    nbthread %d" % ctx.threads,
        "    maxconn %d" % maxconn,
        "",
        "defaults",
        "    mode %s" % mode,
        "    timeout connect 5s",
        "    timeout client 60s",
        "    timeout server 60s",
    ]
    if mode == "http":
        lines += ["    timeout http-request 10s",
                  "    timeout http-keep-alive %s" % keepalive_timeout,
                  "    option http-keep-alive"]
    lines += [
        "",
        "frontend fe",
        "    bind %s:%d%s" % (ctx.proxy_host, ctx.proxy_port, tls_bind_opts(tls)),
        "    default_backend be",
        "",
        "backend be",
        "    balance %s" % balance,
    ]
    lines += ["    server %s %s:%d" % sv for sv in backend_servers(ctx, servers)]
    lines.append("")
    return "\n".join(lines)


def tls_bind_opts(tls):
    """HAProxy bind options for TLS termination: ` ssl crt PEM alpn http/1.1` (tls: {crt, alpn})."""
    if not tls:
        return ""
    return " ssl crt %s%s" % (tls["crt"], " alpn %s" % tls["alpn"] if tls.get("alpn") else "")


def nginx_conf(ctx, mode, maxconn, tmp, balance="roundrobin", servers=None, tls=None):
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    wc = max(1024, min(2 * maxconn + 64, nofile - 64))
    head = ["# generated by bench/fairbench.py; the nginx equivalent of the HAProxy configuration"]
    if mode == "tcp":
        mod = "/usr/lib/nginx/modules/ngx_stream_module.so"
        if os.path.exists(mod):
            head.append("load_module %s;" % mod)
    head += [
        "daemon off;",
        "master_process on;",
        "worker_processes %d;" % ctx.threads,
        "worker_rlimit_nofile %d;" % nofile,
        "pid %s/nginx.pid;" % tmp,
        "error_log %s/nginx-error.log warn;" % tmp,
        "events { worker_connections %d; }" % wc,
    ]
    if mode == "tcp":
        body = [
            "stream {",
            "    upstream be { %s%s }" % ("least_conn; " if balance == "leastconn" else "",
                                        " ".join("server %s:%d;" % (h, port)
                                                 for _, h, port in backend_servers(ctx, servers))),
            "    server {",
            "        listen %s:%d;" % (ctx.proxy_host, ctx.proxy_port),
            "        proxy_pass be;",
            "        proxy_connect_timeout 5s;",
            "        proxy_timeout 60s;",
            "    }",
            "}",
        ]
    else:
        body = [
            "http {",
            "    access_log off;",
            "    keepalive_timeout 60s;",
            "    keepalive_requests 1000000;",
            "    client_body_temp_path %s/body;" % tmp,
            "    proxy_temp_path %s/proxy;" % tmp,
            "    fastcgi_temp_path %s/fastcgi;" % tmp,
            "    uwsgi_temp_path %s/uwsgi;" % tmp,
            "    scgi_temp_path %s/scgi;" % tmp,
            "    upstream be {",
        ] + (["        least_conn;"] if balance == "leastconn" else []) + [
            "        server %s:%d;" % (h, port) for _, h, port in backend_servers(ctx, servers)
        ] + [
            "        keepalive 1024;",
            "        keepalive_requests 1000000;",
            "        keepalive_timeout 60s;",
            "    }",
            "    server {",
            "        listen %s:%d%s;" % (ctx.proxy_host, ctx.proxy_port,
                                   (" ssl http2" if tls.get("http2") else " ssl") if tls else ""),
        ] + ([
            # the same PEM (certificate + key) for both, as HAProxy's crt; nginx's defaults
            # otherwise (session tickets on, no session cache: TLS 1.3 resumes with tickets),
            # protocols as HAProxy 2.6's default (TLS 1.2 minimum); ALPN http/1.1 is automatic
            "        ssl_certificate %s;" % tls["crt"],
            "        ssl_certificate_key %s;" % tls["crt"],
            "        ssl_protocols TLSv1.2 TLSv1.3;",
        ] if tls else []) + ([
            # the `h2` scenario's h2 -> h2 case: HTTP/2 to the origin
            "        location / {",
            "            grpc_pass grpc://be;",
            "            grpc_connect_timeout 5s;",
            "            grpc_read_timeout 60s;",
            "            grpc_send_timeout 60s;",
            "        }",
            "    }",
            "}",
        ] if tls and tls.get("grpc") else [
            "        location / {",
            "            proxy_pass http://be;",
            "            proxy_http_version 1.1;",
            '            proxy_set_header Connection "";',
            "            proxy_max_temp_file_size 0;",
            "            proxy_connect_timeout 5s;",
            "            proxy_read_timeout 60s;",
            "            proxy_send_timeout 60s;",
            "        }",
            "    }",
            "}",
        ])
    return "\n".join(head + body) + "\n"


# --------------------------------------------------------------------------
# context: options, binaries, addresses

class Ctx:
    def __init__(self, args):
        env = os.environ.get
        self.args = args
        self.proxy_cpus = args.proxy_cpus or env("FAIRBENCH_PROXY_CPUS", "1")
        self.client_cpus = args.client_cpus or env("FAIRBENCH_CLIENT_CPUS", "0")
        self.origin_cpus = args.origin_cpus or env("FAIRBENCH_ORIGIN_CPUS", "0")
        self.threads = args.threads or int(env("FAIRBENCH_THREADS", "1"))
        self.client_threads = args.client_threads or int(
            env("FAIRBENCH_CLIENT_THREADS", str(len(cpu_list(self.client_cpus)))))
        self.origin_threads = args.origin_threads or int(
            env("FAIRBENCH_ORIGIN_THREADS", str(len(cpu_list(self.origin_cpus)))))
        self.origin_host = args.origin_host
        self.origin_port = args.origin_port
        self.proxy_host = args.proxy_host
        self.proxy_port = args.proxy_port
        for h in (self.origin_host, self.proxy_host):
            check_loopback(h)
        self.haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
        self.nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.wrk = shutil.which("wrk")
        self.bin_dir = getattr(args, "bin_dir", None) or env("FAIRBENCH_BIN_DIR") or RELEASE
        self.proxies = [p.strip() for p in args.proxies.split(",") if p.strip()]
        self.compare_bin_dir = getattr(args, "compare_bin_dir", None)
        if self.compare_bin_dir and BEFORE not in self.proxies:
            # the second build runs right after the first in every round
            i = self.proxies.index("fairlead") + 1 if "fairlead" in self.proxies else 0
            self.proxies.insert(i, BEFORE)
        for p in self.proxies:
            if p not in PROXIES and not (p == BEFORE and self.compare_bin_dir):
                raise BenchError("unknown proxy %r (choose from %s%s)" % (
                    p, ",".join(PROXIES), "" if self.compare_bin_dir else "; %s needs --compare-bin-dir" % BEFORE))
        self.procs = Procs()
        self.tmp = tempfile.mkdtemp(prefix="fairbench-")
        self.origin = None
        self.quiet_wait = None
        self.retries = getattr(args, "retries", None)
        if self.retries is None:
            self.retries = int(env("FAIRBENCH_RETRIES", "2"))
        self.seq = 0

    def bin(self, name):
        return os.path.join(self.bin_dir, name)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def check_bins(self):
        for b in ("fairlead", "fairlead-term", "fairlead-load"):
            if not os.access(self.bin(b), os.X_OK):
                raise BenchError("%s missing: run cargo build --release -p fairlead "
                                 "-p fairlead-term -p fairlead-load" % self.bin(b))
        if self.compare_bin_dir and not os.access(os.path.join(self.compare_bin_dir, "fairlead"), os.X_OK):
            raise BenchError("%s/fairlead missing (--compare-bin-dir)" % self.compare_bin_dir)
        for name in self.proxies:
            if name == "haproxy" and not os.access(self.haproxy, os.X_OK):
                raise BenchError("haproxy not found (apt-get install -y haproxy)")
            if name == "nginx" and not os.access(self.nginx, os.X_OK):
                raise BenchError("nginx not found (apt-get install -y nginx-full)")

    # ---- origin
    def start_origin(self, extra_ports=0, cpus=None, threads=None):
        """fairlead-term on origin_port, plus origin_port+1 .. origin_port+extra_ports (one process
        listening on all of them: the `servers` scenario's backend servers)."""
        ports = [self.origin_port] + [self.origin_port + i for i in range(1, extra_ports + 1)]
        for port in ports:
            if not port_free(self.origin_host, port):
                raise BenchError("origin port %s:%d is busy" % (self.origin_host, port))
        cmd = [self.bin("fairlead-term"), "-t", str(threads or self.origin_threads), "-n", "o1"] + [
            "%s:%d" % (self.origin_host, port) for port in ports]
        self.origin = self.procs.spawn(cmd, self.path("origin.log"), cpus or self.origin_cpus)
        wait_ready(self.origin_host, self.origin_port, "/", 5.0, self.origin)
        if extra_ports:
            wait_ready(self.origin_host, ports[-1], "/", 5.0, self.origin)
        shown = cmd if len(ports) <= 3 else cmd[:-len(ports) + 2] + ["...", cmd[-1]]
        log("origin up: %s" % " ".join(shown))

    def origin_cpu_s(self):
        try:
            return proc_cpu_s(self.origin.pid) if self.origin is not None else 0.0
        except OSError:
            return 0.0

    def origin_url(self, path):
        return "http://%s:%d%s" % (self.origin_host, self.origin_port, path)

    def proxy_url(self, path):
        return "http://%s:%d%s" % (self.proxy_host, self.proxy_port, path)

    def cleanup(self):
        self.procs.stop_all()
        if not self.args.keep_tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            log("temporary files kept in", self.tmp)


def cpu_list(spec):
    out = []
    for part in spec.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += list(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


class RunningProxy:
    def __init__(self, ctx, name, mode, maxconn, keepalive_timeout="60s", balance="roundrobin",
                 servers=None, cpus=None, tls=None, config=None):
        """tls: {"crt": PEM path, "alpn": "http/1.1", "tag": name in the file name}: the frontend
        terminates TLS (`bind ... ssl crt PEM alpn http/1.1`; nginx: `listen ... ssl`).
        config: (file name, text): this HAProxy-syntax file instead of the generated one
        (Fairlead and HAProxy only). fairlead-before: DIR/fairlead of --compare-bin-dir."""
        self.ctx, self.name, self.mode, self.tls = ctx, name, mode, tls
        ctx.seq += 1
        tag = "%s-%d" % (name, ctx.seq)
        if not port_free(ctx.proxy_host, ctx.proxy_port):
            raise BenchError("proxy port %s:%d is busy" % (ctx.proxy_host, ctx.proxy_port))
        if name == "nginx":
            d = ctx.path(tag)
            os.makedirs(d, exist_ok=True)
            self.config_text = nginx_conf(ctx, mode, maxconn, d, balance, servers, tls)
            cfg = os.path.join(d, "nginx.conf")
            cmd = [ctx.nginx, "-p", d, "-e", os.path.join(d, "nginx-error.log"), "-c", cfg]
        elif config:
            cfg, self.config_text = ctx.path(config[0]), config[1]
        else:
            self.config_text = haproxy_cfg(ctx, mode, maxconn, keepalive_timeout, balance, servers, tls)
            cfg = ctx.path("bench-%s.cfg" % (mode if not tls else "https-" + tls.get("tag", "tls")))
        if name == "fairlead":
            cmd = [ctx.bin("fairlead"), "-f", cfg, "-q"]
        elif name == BEFORE:
            cmd = [os.path.join(ctx.compare_bin_dir, "fairlead"), "-f", cfg, "-q"]
        elif name == "haproxy":
            cmd = [ctx.haproxy, "-f", cfg, "-db"]
        with open(cfg, "w") as f:
            f.write(self.config_text)
        self.cfg = cfg
        self.proc = ctx.procs.spawn(cmd, ctx.path(tag + ".log"), cpus or ctx.proxy_cpus)
        self.cmdline = cmd
        try:
            wait_ready(ctx.proxy_host, ctx.proxy_port, "/?s=64", 8.0, self.proc, tls=bool(tls))
        except BenchError as e:
            out = "\n".join(tail_of(self.proc.logpath))
            ctx.procs.stop(self.proc)
            raise BenchError("%s failed to start: %s\n%s" % (name, e, out))

    def pids(self):
        """Processes whose CPU counts: nginx master + workers, else the one process."""
        if self.name == "nginx":
            return [self.proc.pid] + children_of(self.proc.pid)
        return [self.proc.pid]

    def mem_pids(self):
        if self.name == "nginx":
            return children_of(self.proc.pid) or [self.proc.pid]
        return [self.proc.pid]

    def cpu_s(self):
        return sum(proc_cpu_s(p) for p in self.pids())

    def cpu_split_s(self):
        """(user, system) seconds of the proxy process(es)."""
        v = [proc_cpu_split_s(p) for p in self.pids()]
        return sum(u for u, _ in v), sum(k for _, k in v)

    def peak_rss_kib(self):
        return sum(proc_status_kib(p, "VmHWM") for p in self.mem_pids())

    def rss_kib(self):
        return sum(proc_status_kib(p, "VmRSS") for p in self.mem_pids())

    def fds(self):
        return sum(fd_count(p) or 0 for p in self.mem_pids())

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        self.ctx.procs.stop(self.proc)

    def log_tail(self):
        return tail_of(self.proc.logpath)


# --------------------------------------------------------------------------
# clients

def load_cmd(ctx, url, conns, duration, rate=None, close=False, ramp=0.0, jsonpath=None, extra=None):
    cmd = [ctx.bin("fairlead-load"), "-c", str(conns), "-t", str(min(ctx.client_threads, conns)),
           "-d", "%g" % duration, "-q"] + list(extra or [])
    if ramp:
        cmd += ["-s", "%g" % ramp]
    if rate:
        cmd += ["-R", str(int(rate))]
    if close:
        cmd.append("--close")
    if jsonpath:
        cmd += ["--json", jsonpath]
    cmd.append(url)
    return cmd


def run_load(ctx, url, conns, duration, rate=None, close=False, ramp=0.0, extra=None):
    """Runs fairlead-load pinned to the client CPUs; returns (summary dict, command).
    extra: more fairlead-load options (the TLS ones: -k, --tls-resume off...)."""
    ctx.seq += 1
    jp = ctx.path("load-%d.json" % ctx.seq)
    cmd = load_cmd(ctx, url, conns, duration, rate, close, ramp, jp, extra)
    full = ["taskset", "-c", ctx.client_cpus] + cmd
    shown = " ".join(shlex.quote(a) for a in (["taskset", "-c", ctx.client_cpus, "fairlead-load"]
                                               + cmd[1:-3] + [cmd[-1]]))
    try:
        p = subprocess.run(full, capture_output=True, text=True, timeout=duration + ramp + 30)
    except subprocess.TimeoutExpired:
        raise BenchError("fairlead-load did not finish in time: %s" % shown)
    if p.returncode != 0 or not os.path.exists(jp):
        raise BenchError("fairlead-load failed (rc %d): %s\n%s" % (p.returncode, shown,
                                                                   (p.stderr or p.stdout)[-2000:]))
    with open(jp) as f:
        return json.load(f), shown


def run_wrk(ctx, url, conns, duration):
    if not ctx.wrk:
        raise BenchError("wrk not installed (apt-get install -y wrk)")
    cmd = ["taskset", "-c", ctx.client_cpus, ctx.wrk, "-t", str(min(ctx.client_threads, conns)),
           "-c", str(conns), "-d", "%ds" % max(1, round(duration)), url]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 30)
    m = re.search(r"Requests/sec:\s+([\d.]+)", p.stdout)
    if not m:
        raise BenchError("wrk failed: %s" % (p.stdout + p.stderr)[-1000:])
    total = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)\b", p.stdout)
    errs = re.search(r"Socket errors: (.*)", p.stdout)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", p.stdout)
    return {"req_per_s": float(m.group(1)),
            "requests": int(total.group(1)) if total else None,
            "socket_errors": errs.group(1) if errs else None,
            "non_2xx": int(non2xx.group(1)) if non2xx else 0}, " ".join(
                ["taskset", "-c", ctx.client_cpus, "wrk"] + cmd[4:])


def summarize_load(s):
    lat = s.get("ttlb", {}).get("percentiles_ms", {})
    hs = s.get("tls_handshakes") or {}
    tls = {}
    if hs.get("total") or (s.get("errors") or {}).get("tls"):
        hl = (s.get("handshake") or {}).get("percentiles_ms", {})
        tls = {"tls": {"handshakes": hs.get("total"), "full": hs.get("full"), "resumed": hs.get("resumed"),
                       "per_s": hs.get("per_s"),
                       "lat_ms": {k: hl.get(k) for k in ("50", "90", "99", "99.9")}}}
    return dict(tls, **{
        "req_per_s": s["req_per_s"],
        "conn_per_s": s.get("conn_per_s"),
        "connections": s.get("connections"),
        "bytes_per_s": s.get("bytes_per_s"),
        "responses": s["responses"],
        "elapsed_s": s["elapsed_s"],
        "errors": s["errors"]["total"],
        "errors_by_kind": {k: v for k, v in s["errors"].items() if k != "total" and v},
        "non_2xx": sum(v for k, v in s["status"].items() if k != "2xx"),
        "lat_ms": {k: lat.get(k) for k in ("50", "90", "99", "99.9", "99.99", "99.999", "99.9999")},
        "lat_max_ms": s.get("ttlb", {}).get("max_ms"),
        "rate_requested": s.get("rate_requested"),
    })


def measured_run(ctx, proxy, url, conns, duration, rate=None, close=False, ramp=0.0,
                 warmup=0.0, wrk=False, sample=None, extra=None, loader=None):
    """One measured client run through a running proxy, with its CPU and memory.
    sample: (key, callable) called once in the middle of the measured run; its value is stored.
    loader: a function with run_load's signature used instead of it (the `rules` request mix)."""
    import threading
    run_load_ = loader or run_load
    if warmup > 0:
        try:
            run_load_(ctx, url, conns, warmup, close=close, extra=extra)
        except BenchError as e:
            log("warm-up failed:", e)
    c0 = proxy.cpu_s()
    u0, k0 = proxy.cpu_split_s()
    load1 = loadavg1()
    acct = CpuAccount(ctx)
    probe = fbmetrics.RunProbe(proxy.pids())
    sampled = {}
    timer = None
    if sample:
        timer = threading.Timer(ramp + duration / 2.0, lambda: sampled.update({sample[0]: sample[1]()}))
        timer.start()
    t0 = time.monotonic()
    try:
        s, shown = run_load_(ctx, url, conns, duration, rate=rate, close=close, ramp=ramp, extra=extra)
    finally:
        if timer is not None:
            timer.cancel()
    t1 = time.monotonic()
    alive = proxy.alive()
    c1 = proxy.cpu_s() if alive else c0
    u1, k1 = proxy.cpu_split_s() if alive else (u0, k0)
    r = summarize_load(s)
    r["client_cmd"] = shown
    if alive:
        r.update(probe.finish(r["responses"], r.get("connections"), CLK_TCK))
    cpu = c1 - c0
    r["proxy_cpu_s"] = round(cpu, 3)
    r["proxy_cpu_pct"] = round(100.0 * cpu / (t1 - t0), 1)
    r["cpu_us_per_req"] = round(1e6 * cpu / r["responses"], 2) if r["responses"] else None
    if r["responses"]:
        r["cpu_user_us_per_req"] = round(1e6 * (u1 - u0) / r["responses"], 2)
        r["cpu_sys_us_per_req"] = round(1e6 * (k1 - k0) / r["responses"], 2)
    if r.get("tls"):
        n = r["tls"]["handshakes"]
        r["tls"]["cpu_us_per_handshake"] = round(1e6 * cpu / n, 2) if n else None
    r["peak_rss_kib"] = proxy.peak_rss_kib() if alive else None
    r["proxy_alive"] = alive
    r["loadavg1"] = [load1, loadavg1()]
    r["machine_cpu"] = acct.done(cpu)
    r.update(sampled)
    if not alive:
        r["proxy_exit"] = proxy.proc.returncode
        r["proxy_log"] = proxy.log_tail()
    if wrk and alive:
        try:
            w, wshown = run_wrk(ctx, url, conns, duration)
            r["wrk"] = w
            r["wrk_cmd"] = wshown
        except BenchError as e:
            r["wrk_error"] = str(e)
    return r


def clean_run(ctx, proxy, entry, *a, **kw):
    """measured_run, measured again (up to ctx.retries times) when someone else took more than
    DISTURBED_PCT of a CPU during it; the disturbed runs are kept in entry["discarded"]."""
    attempt = 0
    while True:
        r = measured_run(ctx, proxy, *a, **kw)
        other = (r.get("machine_cpu") or {}).get("other_pct")
        if other is None or other <= DISTURBED_PCT or attempt >= ctx.retries or not r.get("proxy_alive", True):
            if attempt and other is not None and other > DISTURBED_PCT:
                log("   still disturbed after %d retries: kept" % attempt)
            return r
        attempt += 1
        entry.setdefault("discarded", []).append(r)
        log("   disturbed (other CPU %.0f%% of one CPU, %.0f req/s): discarded, measuring again (%d/%d)" % (
            other, r["req_per_s"], attempt, ctx.retries))


def proxied_rounds(ctx, case, mode, url, conns, duration, rounds, close=False, rate_for=None,
                   ramp=0.0, warmup=0.0, wrk=False, maxconn=9500, tls=None, extra=None, on_start=None,
                   config=None, loader=None, round_range=None, alternate=False):
    """Interleaved rounds; fills case['runs'] with one entry per (round, proxy).
    tls: the proxies terminate TLS (see RunningProxy); extra: more fairlead-load options;
    on_start(proxy, entry): called once the proxy serves, before the warm-up;
    config: (file name, text) for RunningProxy; loader: see measured_run;
    round_range: the round numbers to run (default 1..rounds); alternate: even rounds run the
    proxies in reverse order (A B, B A, A B...: no proxy always runs first)."""
    runs = case.setdefault("runs", [])
    for rnd in (round_range or range(1, rounds + 1)):
        order = ctx.proxies[::-1] if alternate and rnd % 2 == 0 else ctx.proxies
        for name in order:
            rate = rate_for(name) if rate_for else None
            entry = {"round": rnd, "proxy": name}
            log("%s round %d/%d: %s%s" % (case["name"], rnd, rounds, name,
                                        " at %d req/s" % rate if rate else ""))
            proxy = None
            try:
                proxy = RunningProxy(ctx, name, mode, maxconn, tls=tls, config=config)
                case.setdefault("configs", {})[name] = proxy.config_text
                if on_start:
                    on_start(proxy, entry)
                case.setdefault("proxy_cmds", {})[name] = " ".join(
                    ["taskset", "-c", ctx.proxy_cpus] + [os.path.basename(proxy.cmdline[0])]
                    + [os.path.basename(a) if a.startswith(ctx.tmp) else a for a in proxy.cmdline[1:]])
                entry.update(clean_run(ctx, proxy, entry, url, conns, duration, rate=rate, close=close,
                                       ramp=ramp, warmup=warmup, wrk=wrk, extra=extra, loader=loader))
            except BenchError as e:
                entry["error"] = str(e)
                log("ERROR:", e)
            finally:
                if proxy is not None:
                    if not proxy.alive() and "proxy_log" not in entry:
                        entry["proxy_exit"] = proxy.proc.returncode
                        entry["proxy_log"] = proxy.log_tail()
                    proxy.stop()
            runs.append(entry)
            brief(entry)
    return runs


def brief(e):
    if "error" in e:
        return
    lat = e.get("lat_ms", {})
    mc = e.get("machine_cpu") or {}
    log("   %-8s %9.0f req/s  cpu %6s us/req (%5.1f%%)  p50 %.3f p99 %.3f p99.99 %.3f ms  "
        "rss %s KiB  err %d%s%s%s" % (
            e.get("proxy", "direct"), e["req_per_s"], e.get("cpu_us_per_req"), e.get("proxy_cpu_pct", 0),
            lat.get("50") or 0, lat.get("99") or 0, lat.get("99.99") or 0, e.get("peak_rss_kib"),
            e["errors"] + e["non_2xx"], "  wrk %.0f" % e["wrk"]["req_per_s"] if "wrk" in e else "",
            "  [machine busy %s%%, client %s%%, origin %s%%, other %s%%]" % (
                mc.get("busy_pct"), mc.get("client_pct"), mc.get("origin_pct"), mc.get("other_pct"))
            if mc else "",
            "  servers with conns %s" % e["servers_with_conns"] if "servers_with_conns" in e else ""))
    if e.get("tls") and (e["tls"].get("full") or 0) + (e["tls"].get("resumed") or 0) > 0.5 * e["responses"]:
        t = e["tls"]
        log("   %-8s tls: %s handshakes/s (%s full, %s resumed), cpu %s us/handshake, handshake p50 %s ms%s" % (
            "", f0(t.get("per_s")), t.get("full"), t.get("resumed"), t.get("cpu_us_per_handshake"),
            f3((t.get("lat_ms") or {}).get("50")),
            "; negotiated " + negotiated_str(e["negotiated"]) if e.get("negotiated") else ""))


# --------------------------------------------------------------------------
# aggregation

def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def aggregate(case, key="proxy"):
    """Per-proxy medians across rounds."""
    out = {}
    names = []
    for r in case.get("runs", []):
        if r.get(key) not in names:
            names.append(r.get(key))
    for name in names:
        rs = [r for r in case["runs"] if r.get(key) == name and "error" not in r]
        errs = [r for r in case["runs"] if r.get(key) == name and "error" in r]
        if not rs:
            out[name] = {"rounds_ok": 0, "rounds_failed": len(errs),
                         "first_error": errs[0]["error"][:500] if errs else None}
            continue
        m = {
            "rounds_ok": len(rs),
            "rounds_failed": len(errs) + sum(1 for r in rs if not r.get("proxy_alive", True)),
            "req_per_s": med([r["req_per_s"] for r in rs]),
            "req_per_s_all": [round(r["req_per_s"]) for r in rs],
            "conn_per_s": med([r.get("conn_per_s") for r in rs]),
            "gbit_per_s": med([r["bytes_per_s"] * 8 / 1e9 for r in rs if r.get("bytes_per_s")]),
            "cpu_us_per_req": med([r.get("cpu_us_per_req") for r in rs]),
            "cpu_us_per_req_all": [r.get("cpu_us_per_req") for r in rs],
            "cpu_user_us_per_req": med([r.get("cpu_user_us_per_req") for r in rs]),
            "cpu_sys_us_per_req": med([r.get("cpu_sys_us_per_req") for r in rs]),
            "proxy_cpu_pct": med([r.get("proxy_cpu_pct") for r in rs]),
            "peak_rss_kib": med([r.get("peak_rss_kib") for r in rs]),
            "errors": sum(r["errors"] + r["non_2xx"] for r in rs),
            "lat_ms": {p: med([r["lat_ms"].get(p) for r in rs]) for p in PCTS},
        }
        m.update(fbmetrics.aggregate_extra(rs, med))
        if any("wrk" in r for r in rs):
            m["wrk_req_per_s"] = med([r["wrk"]["req_per_s"] for r in rs if "wrk" in r])
        if any(r.get("tls") for r in rs):
            t = [r["tls"] for r in rs if r.get("tls")]
            full, resumed = sum(x.get("full") or 0 for x in t), sum(x.get("resumed") or 0 for x in t)
            m["tls"] = {
                "hs_per_s": med([x.get("per_s") for x in t]),
                "hs_per_s_all": [round(x["per_s"]) if x.get("per_s") is not None else None for x in t],
                "cpu_us_per_hs": med([x.get("cpu_us_per_handshake") for x in t]),
                "cpu_us_per_hs_all": [x.get("cpu_us_per_handshake") for x in t],
                "full": full, "resumed": resumed,
                "resumed_pct": round(100.0 * resumed / (full + resumed), 1) if full + resumed else None,
                "hs_lat_ms": {p: med([(x.get("lat_ms") or {}).get(p) for x in t]) for p in ("50", "90", "99")},
            }
        neg = [r.get("negotiated") for r in rs if r.get("negotiated")]
        if neg:
            m["negotiated"] = neg[0]
            m["negotiated_all_same"] = all(negotiated_str(x) == negotiated_str(neg[0]) for x in neg)
        if errs:
            m["first_error"] = errs[0]["error"][:500]
        out[name] = m
    case["summary"] = out
    return out


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


# --------------------------------------------------------------------------
# result files

def new_result(ctx, scenario, params):
    return {
        "scenario": scenario,
        "started": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "python3 bench/fairbench.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "machine": machine(ctx),
        "params": params,
        "cases": [],
    }


def save_result(res):
    os.makedirs(RESULTS, exist_ok=True)
    ts = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    res["finished"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    path = os.path.join(RESULTS, "%s-%s.json" % (res["scenario"], ts))
    with open(path, "w") as f:
        json.dump(res, f, indent=1, sort_keys=False)
        f.write("\n")
    log("result written to", os.path.relpath(path, ROOT))
    return path


def latest(scenario):
    if not os.path.isdir(RESULTS):
        return None
    files = sorted(f for f in os.listdir(RESULTS)
                   if f.startswith(scenario + "-") and f.endswith(".json")
                   and re.match(r"%s-\d{8}-\d{6}\.json$" % re.escape(scenario), f))
    return os.path.join(RESULTS, files[-1]) if files else None


def print_summary(case):
    s = case.get("summary", {})
    print("\n== %s ==" % case["name"])
    print("%-9s %11s %11s %7s %9s %9s %9s %10s %6s" % (
        "proxy", "req/s", "cpu us/req", "cpu %", "p50 ms", "p99 ms", "p99.99", "peak RSS", "errs"))
    for name, m in s.items():
        if not m.get("rounds_ok"):
            print("%-9s FAILED: %s" % (name, m.get("first_error")))
            continue
        print("%-9s %11.0f %11.2f %7.1f %9.3f %9.3f %9.3f %8.1fMi %6d" % (
            name, m["req_per_s"], m["cpu_us_per_req"] or 0, m["proxy_cpu_pct"] or 0, m["lat_ms"]["50"] or 0,
            m["lat_ms"]["99"] or 0, m["lat_ms"]["99.99"] or 0, (m["peak_rss_kib"] or 0) / 1024,
            m["errors"]))
    for name, m in s.items():
        if m.get("tls") and case.get("close"):
            t = m["tls"]
            print("%-9s TLS: %s handshakes/s (%s full, %s resumed), %s cpu us/handshake, handshake p50 %s ms; "
                  "%s" % (name, f0(t["hs_per_s"]), t["full"], t["resumed"], f2(t["cpu_us_per_hs"]),
                          f3(t["hs_lat_ms"]["50"]), negotiated_str(m.get("negotiated"))))
    f = s.get("fairlead", {})
    for other in ("haproxy", "nginx"):
        o = s.get(other, {})
        if f.get("rounds_ok") and o.get("rounds_ok"):
            print("Fairlead/%s: req/s x%.2f, cpu/req x%s" % (
                PRETTY[other], ratio(f["req_per_s"], o["req_per_s"]),
                fmt_ratio(ratio(f["cpu_us_per_req"], o["cpu_us_per_req"]))))


def fmt_ratio(r):
    return "n/a" if r is None else "%.2f" % r


# --------------------------------------------------------------------------
# scenarios

def compare_build(ctx):
    """The --compare-bin-dir build: its build.json and binary id."""
    d = ctx.compare_bin_dir
    b = None
    try:
        with open(os.path.join(d, "build.json")) as f:
            b = json.load(f)
    except (OSError, ValueError):
        pass
    return {"bin_dir": os.path.relpath(d, ROOT) if os.path.abspath(d).startswith(ROOT) else d,
            "build": b, "fairlead": binary_id(os.path.join(d, "fairlead")),
            "version": _first_line([os.path.join(d, "fairlead"), "-v"])}


def paired_ratios(case, a, b, key="cpu_us_per_req"):
    """Per-round a/b of key (the two runs of a round are back to back), with median, min, max."""
    by = {}
    for r in case.get("runs", []):
        if "error" not in r and r.get(key) is not None:
            by.setdefault(r["round"], {})[r["proxy"]] = r[key]
    rs = [v[a] / v[b] for _, v in sorted(by.items()) if a in v and b in v and v[b]]
    if not rs:
        return None
    return {"per_round": [round(x, 4) for x in rs], "median": round(statistics.median(rs), 4),
            "min": round(min(rs), 4), "max": round(max(rs), 4)}


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
                    log("   %-8s base %d KiB, with %d conns %d KiB: %.2f KiB/conn, %d still open, "
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
        case["summary"] = summ
    return res


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


def negotiated_str(n):
    if not n:
        return "–"
    if n.get("error"):
        return "probe failed: %s" % n["error"]
    return "%s %s, %s%s" % (n.get("version"), n.get("cipher"), n.get("group") or "?",
                            " (HelloRetryRequest)" if n.get("hrr") else "")


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
                log("   %-8s base %d KiB, with %d TLS conns %d KiB: %.2f KiB/conn, %d still open, %d fds, "
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
        res["scan"] = [scan_proxy(ctx, name, certs) for name in ctx.proxies]
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


# --------------------------------------------------------------------------
# rules: HAProxy's rule layer (ACLs, maps, http-request, use_backend) at scale

RULES_HOSTS = ("www.example.com", "api.example.com", "site000500.example.org", "old.legacy.example.net")
RULES_PATHS = ("/static/css/site.css", "/img/logo.png", "/api/v1/users/42", "/catalog/p00500/item",
               "/catalog/x/item", "/index.html")
RULES_BACKENDS = ("be_app", "be_api", "be_static", "be_catalog")


def rules_files(ctx, map_n, path_n, ip_n):
    """Writes (once) the map, the path pattern list and the IP list into the temp dir; returns
    their paths. Deterministic (fixed seed). The request mix's hosts and paths are in every size."""
    import random
    out = {}
    mp = ctx.path("hosts-%d.map" % map_n)
    if not os.path.exists(mp):
        rng = random.Random(1)
        lines = ["www.example.com be_app", "api.example.com be_api", "static.example.com be_static",
                 "shop.example.com be_catalog"]
        keys = ["site%06d.example.org" % i for i in range(map_n - len(lines))]
        rng.shuffle(keys)
        lines += ["%s %s" % (k, RULES_BACKENDS[i % len(RULES_BACKENDS)]) for i, k in enumerate(keys)]
        with open(mp, "w") as f:
            f.write("# host backend (%d entries)\n" % len(lines) + "\n".join(lines) + "\n")
    out["map"] = mp
    pp = ctx.path("paths-%d.lst" % path_n)
    if not os.path.exists(pp):
        rng = random.Random(2)
        pats = ["/catalog/p%05d/" % i for i in range(path_n)]
        rng.shuffle(pats)
        with open(pp, "w") as f:
            f.write("\n".join(pats) + "\n")
    out["paths"] = pp
    ip = ctx.path("ips-%d.lst" % ip_n)
    if not os.path.exists(ip):
        # /24s and single addresses outside the private ranges, then the client's own address
        rng = random.Random(3)
        nets = set()
        while len(nets) < ip_n - 1:
            a, b, c = rng.randrange(1, 224), rng.randrange(256), rng.randrange(256)
            if a in (10, 127, 172, 192):
                continue
            nets.add("%d.%d.%d.0/24" % (a, b, c) if rng.random() < 0.5 else
                     "%d.%d.%d.%d" % (a, b, c, rng.randrange(1, 255)))
        with open(ip, "w") as f:
            f.write("\n".join(sorted(nets)) + "\n127.0.0.1\n")
    out["ips"] = ip
    return out


def rules_cfg(ctx, files, maxconn=9500):
    """The HAProxy-syntax file loaded by Fairlead and HAProxy: 10 ACLs, 5 http-request header rules,
    3 use_backend rules (one on the map), 4 backends on the same origin."""
    lines = [
        "# generated by bench/fairbench.py (rules); loaded as is by both Fairlead and HAProxy",
        "global",
        "    nbthread %d" % ctx.threads,
        "    maxconn %d" % maxconn,
        "",
        "defaults",
        "    mode http",
        "    timeout connect 5s",
        "    timeout client 60s",
        "    timeout server 60s",
        "    timeout http-request 10s",
        "    timeout http-keep-alive 60s",
        "    option http-keep-alive",
        "",
        "frontend fe",
        "    bind %s:%d" % (ctx.proxy_host, ctx.proxy_port),
        "    acl host_www     hdr(host) -i www.example.com",
        "    acl host_api     hdr(host) -i api.example.com",
        "    acl dom_example  hdr_dom(host) -i example.com",
        "    acl dom_legacy   hdr_dom(host) -i legacy.example.net",
        "    acl p_static     path_beg /static/ /assets/ /img/",
        "    acl p_api        path_beg /api/",
        "    acl p_images     path_end .png .jpg .gif .webp .css .js",
        "    acl p_listed     path_beg -f %s" % files["paths"],
        "    acl src_private  src 10.0.0.0/8 172.16.0.0/12 192.168.0.0/16",
        "    acl src_listed   src -f %s" % files["ips"],
        "    http-request set-header X-Forwarded-Proto http",
        "    http-request set-header X-Client-IP %[src]",
        "    http-request add-header X-Via fairbench if dom_example || dom_legacy",
        "    http-request del-header X-Debug if !src_listed",
        "    http-request set-header X-Site %[req.hdr(host),lower] if host_www || host_api p_api",
        "    use_backend be_static if p_static || p_images",
        "    use_backend be_catalog if p_listed !src_private",
        "    use_backend %%[req.hdr(host),lower,map(%s,be_app)]" % files["map"],
        "    default_backend be_app",
        "",
    ]
    for be in RULES_BACKENDS:
        lines += ["backend %s" % be, "    balance roundrobin",
                  "    server o1 %s:%d" % (ctx.origin_host, ctx.origin_port), ""]
    return "\n".join(lines)


def rules_loader(hosts, paths):
    """A run_load replacement: one fairlead-load per Host header (-H), all at once on the client
    CPUs, the connections split between them, each cycling through every path (fairlead-load takes
    several URLs, round-robin, but sends the URL's authority as Host). The summaries are merged:
    counts and rates add up, each latency percentile is the worst of the clients'."""
    def load(ctx, url, conns, duration, rate=None, close=False, ramp=0.0, extra=None):
        base = url.rstrip("/")
        urls = [base + p + "?s=64" for p in paths]
        per = max(1, conns // len(hosts))
        procs = []
        shown = None
        for i, h in enumerate(hosts):
            ctx.seq += 1
            jp = ctx.path("load-%d.json" % ctx.seq)
            cmd = load_cmd(ctx, urls[0], per, duration, rate=rate / len(hosts) if rate else None,
                           close=close, ramp=ramp, jsonpath=jp, extra=["-H", "Host: " + h] + urls[1:])
            if shown is None:
                shown = " ".join(shlex.quote(a) for a in (
                    ["taskset", "-c", ctx.client_cpus, "fairlead-load"]
                    + [a for a in cmd[1:] if a != jp and a != "--json"]))
            procs.append((subprocess.Popen(["taskset", "-c", ctx.client_cpus] + cmd, stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT, text=True), jp, h))
        outs = []
        for p, jp, h in procs:
            try:
                o, _ = p.communicate(timeout=duration + ramp + 30)
            except subprocess.TimeoutExpired:
                for q, _, _ in procs:
                    q.kill()
                raise BenchError("fairlead-load did not finish in time (Host %s)" % h)
            if p.returncode != 0 or not os.path.exists(jp):
                raise BenchError("fairlead-load failed (rc %d, Host %s): %s" % (p.returncode, h, (o or "")[-2000:]))
            with open(jp) as f:
                outs.append(json.load(f))
        m = {"req_per_s": 0.0, "conn_per_s": 0.0, "bytes_per_s": 0.0, "responses": 0, "errors": {}, "status": {},
             "elapsed_s": max(x["elapsed_s"] for x in outs),
             "ttlb": {"percentiles_ms": {}, "max_ms": max((x.get("ttlb") or {}).get("max_ms") or 0 for x in outs)}}
        for x in outs:
            for k in ("req_per_s", "conn_per_s", "bytes_per_s", "responses"):
                m[k] += x.get(k) or 0
            for k, v in x["errors"].items():
                m["errors"][k] = m["errors"].get(k, 0) + v
            for k, v in x["status"].items():
                m["status"][k] = m["status"].get(k, 0) + v
            for k, v in ((x.get("ttlb") or {}).get("percentiles_ms") or {}).items():
                if v is not None:
                    m["ttlb"]["percentiles_ms"][k] = max(v, m["ttlb"]["percentiles_ms"].get(k) or 0)
        shown += "  (x%d, one per Host: %s)" % (len(hosts), ", ".join(hosts))
        return m, shown
    return load


def rules_check(ctx, hosts, paths):
    """Every (host, path) of the mix once through the running proxy: all must answer 200."""
    bad = []
    for h in hosts:
        for p in paths:
            try:
                s = socket.create_connection((ctx.proxy_host, ctx.proxy_port), timeout=2.0)
                s.sendall(("GET %s?s=64 HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (p, h)).encode())
                line = s.makefile("rb").readline().decode("latin-1").strip()
                s.close()
            except OSError as e:
                line = str(e)
            if " 200 " not in line + " ":
                bad.append("%s %s: %s" % (h, p, line))
    return bad


def sc_rules(ctx, args):
    sets = []
    for part in args.sets.split(","):
        m, _, p = part.partition(":")
        sets.append((int(float(m)), int(float(p or m))))
    hosts = [h.strip() for h in args.hosts.split(",") if h.strip()]
    paths = [q.strip() for q in args.paths.split(",") if q.strip()]
    if args.conns < len(hosts):
        raise BenchError("-c must be at least the number of hosts (%d)" % len(hosts))
    res = new_result(ctx, "rules", {"rounds": args.rounds, "duration_s": args.duration, "conns": args.conns,
                                    "warmup_s": args.warmup, "sets": [list(x) for x in sets], "ips": args.ips,
                                    "hosts": hosts, "paths": paths})
    ctx.start_origin()
    cases = {}
    for mn, pn in sets:
        files = rules_files(ctx, mn, pn, args.ips)
        cfg = rules_cfg(ctx, files)
        c = {"name": "rules-map%d-paths%d" % (mn, pn), "mode": "http", "map_entries": mn, "path_patterns": pn,
             "ip_entries": args.ips, "path": "(mix)", "conns": args.conns, "runs": [],
             "config_file": ("bench-rules-%d-%d.cfg" % (mn, pn), cfg),
             "files": {k: {"name": os.path.basename(v), "lines": sum(1 for _ in open(v)),
                           "head": open(v).read(400).splitlines()[:4]} for k, v in files.items()}}
        cases[(mn, pn)] = c
        res["cases"].append(c)
    loader = rules_loader(hosts, paths)
    url = ctx.proxy_url("/")
    # within a round each proxy runs every set back to back (the size ratio is taken seconds apart);
    # the set order alternates between rounds
    for rnd in range(1, args.rounds + 1):
        for name in ctx.proxies:
            for key in (sets if rnd % 2 else sets[::-1]):
                case = cases[key]
                entry = {"round": rnd, "proxy": name}
                log("rules map=%d paths=%d round %d/%d: %s" % (key[0], key[1], rnd, args.rounds, name))
                proxy = None
                try:
                    t0 = time.monotonic()
                    proxy = RunningProxy(ctx, name, "http", 9500, config=case["config_file"])
                    entry["start_s"] = round(time.monotonic() - t0, 2)
                    entry["start_rss_kib"] = proxy.rss_kib()
                    case.setdefault("configs", {})[name] = proxy.config_text
                    case.setdefault("proxy_cmds", {})[name] = " ".join(
                        ["taskset", "-c", ctx.proxy_cpus] + [os.path.basename(proxy.cmdline[0])]
                        + [os.path.basename(a) if a.startswith(ctx.tmp) else a for a in proxy.cmdline[1:]])
                    bad = rules_check(ctx, hosts, paths)
                    if bad:
                        entry["check_failed"] = bad
                        log("   check: %d of %d requests not 200: %s" % (len(bad), len(hosts) * len(paths), bad[0]))
                    entry.update(clean_run(ctx, proxy, entry, url, args.conns, args.duration,
                                           warmup=args.warmup, loader=loader))
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
    for c in res["cases"]:
        c.pop("config_file", None)
        aggregate(c)
        for name, m in c["summary"].items():
            rs = [r for r in c["runs"] if r["proxy"] == name and "error" not in r]
            m["start_s"] = med([r.get("start_s") for r in rs])
            m["start_rss_kib"] = med([r.get("start_rss_kib") for r in rs])
    # big/small per proxy: of the medians, and paired by round
    big, small = max(sets), min(sets)
    scaling = {}
    if big != small:
        for name in ctx.proxies:
            cb, cs = cases[big], cases[small]
            mb, ms = cb["summary"].get(name, {}), cs["summary"].get(name, {})
            if not (mb.get("rounds_ok") and ms.get("rounds_ok")):
                continue
            paired = []
            for rb in cb["runs"]:
                for rs_ in cs["runs"]:
                    if rb["proxy"] == rs_["proxy"] == name and rb["round"] == rs_["round"] \
                            and rb.get("cpu_us_per_req") and rs_.get("cpu_us_per_req"):
                        paired.append(round(rb["cpu_us_per_req"] / rs_["cpu_us_per_req"], 3))
            scaling[name] = {"big": list(big), "small": list(small),
                             "cpu": ratio(mb["cpu_us_per_req"], ms["cpu_us_per_req"]),
                             "user": ratio(mb.get("cpu_user_us_per_req"), ms.get("cpu_user_us_per_req")),
                             "sys": ratio(mb.get("cpu_sys_us_per_req"), ms.get("cpu_sys_us_per_req")),
                             "cpu_paired": paired, "cpu_paired_median": med(paired),
                             "req_per_s": ratio(mb["req_per_s"], ms["req_per_s"])}
    res["scaling"] = scaling
    for c in res["cases"]:
        print_summary(c)
        for name, m in c["summary"].items():
            if m.get("rounds_ok"):
                print("%-16s user %s + sys %s us/req; start %s s, RSS after start %s" % (
                    name, f2(m.get("cpu_user_us_per_req")), f2(m.get("cpu_sys_us_per_req")), m.get("start_s"),
                    mib(m.get("start_rss_kib"))))
    for name, v in scaling.items():
        print("%s: map %d/paths %d vs map %d/paths %d: cpu/req x%s (paired %s)" % (
            name, big[0], big[1], small[0], small[1], fmt_ratio(v["cpu"]),
            ", ".join("%.2f" % x for x in v["cpu_paired"])))
    return res


def sc_crosscheck(ctx, args):
    """fairlead-load vs wrk with the target as the bottleneck.

    The target (the origin alone, or a proxy and the origin) is pinned to its own CPU(s), each
    client gets the client CPU(s) alone, and both clients use the same connections and threads.
    Rounds alternate the order (load, wrk / wrk, load, ...), each run after a short warm-up of the
    same client. Then the counts are validated against an origin that counts what it serves."""
    targets = [t.strip() for t in args.targets.split(",")]
    tcpus = args.target_cpus or ctx.proxy_cpus
    threads = ctx.client_threads
    res = new_result(ctx, "crosscheck", {"rounds": args.rounds, "duration_s": args.duration,
                                         "conns": args.conns, "path": args.path, "targets": targets,
                                         "warmup_s": args.warmup, "target_cpus": tcpus,
                                         "client_cpus": ctx.client_cpus, "client_threads": threads,
                                         "origin_threads": 1})
    if not ctx.wrk:
        raise BenchError("wrk not installed (apt-get install -y wrk)")
    ctx.start_origin(cpus=tcpus, threads=1)
    res["params"]["origin_cmd"] = "taskset -c %s fairlead-term -t 1 -n o1 %s:%d" % (
        tcpus, ctx.origin_host, ctx.origin_port)

    def client_cpu():
        ch = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ch.ru_utime + ch.ru_stime

    for t in targets:
        case = {"name": "crosscheck-%s" % t, "target": t, "runs": []}
        res["cases"].append(case)
        proxy = None
        cap = None
        try:
            if t in ("origin", "origin-capped"):
                url = ctx.origin_url(args.path)
                if t == "origin-capped":
                    cap = CpuCap(args.cap_pct)
                    cap.add(ctx.origin.pid)
                    case["cap"] = cap.desc
                    log("origin capped: %s" % cap.desc)
            else:
                if t not in PROXIES:
                    raise BenchError("unknown target %s" % t)
                proxy = RunningProxy(ctx, t, "http", 9500, cpus=tcpus)
                case.setdefault("configs", {})[t] = proxy.config_text
                url = ctx.proxy_url(args.path)

            def target_cpu():
                return ctx.origin_cpu_s() + (proxy.cpu_s() if proxy is not None else 0.0)

            for rnd in range(1, args.rounds + 1):
                order = ["load", "wrk"] if rnd % 2 else ["wrk", "load"]
                run = {"round": rnd, "order": order, "loadavg1": [loadavg1()]}
                for who in order:
                    if args.warmup > 0:
                        if who == "load":
                            run_load(ctx, url, args.conns, args.warmup)
                        else:
                            run_wrk(ctx, url, args.conns, args.warmup)
                    c0, k0, t0 = target_cpu(), client_cpu(), time.monotonic()
                    if who == "load":
                        s, shown = run_load(ctx, url, args.conns, args.duration)
                        ls = summarize_load(s)
                        rps, n, errs = ls["req_per_s"], ls["responses"], ls["errors"] + ls["non_2xx"]
                        run["load_cmd"] = shown
                    else:
                        w, shown = run_wrk(ctx, url, args.conns, args.duration)
                        rps, n = w["req_per_s"], w.get("requests")
                        errs = w["non_2xx"] + (1 if w.get("socket_errors") else 0)
                        run["wrk"] = w
                        run["wrk_cmd"] = shown
                    wall = time.monotonic() - t0
                    tc, kc = target_cpu() - c0, client_cpu() - k0
                    run[who + "_req_per_s"] = rps
                    run[who + "_errors"] = errs
                    run[who + "_target_cpu_pct"] = round(100 * tc / wall, 1)
                    run[who + "_client_cpu_pct"] = round(100 * kc / wall, 1)
                    run[who + "_target_cpu_us_per_req"] = round(1e6 * tc / n, 2) if n else None
                    run[who + "_client_cpu_us_per_req"] = round(1e6 * kc / n, 2) if n else None
                run["ratio"] = round(run["load_req_per_s"] / run["wrk_req_per_s"], 3)
                run["loadavg1"].append(loadavg1())
                case["runs"].append(run)
                log("crosscheck %s round %d: fairlead-load %.0f req/s (target CPU %.0f%%), wrk %.0f req/s "
                    "(target CPU %.0f%%), ratio %.3f" % (t, rnd, run["load_req_per_s"],
                                                         run["load_target_cpu_pct"], run["wrk_req_per_s"],
                                                         run["wrk_target_cpu_pct"], run["ratio"]))
        except BenchError as e:
            case["error"] = str(e)
            log("ERROR:", e)
        finally:
            if proxy is not None:
                proxy.stop()
            if cap is not None:
                cap.remove()
        rs = [r["ratio"] for r in case["runs"]]
        summ = {"ratio": med(rs), "ratios": rs, "noisy": bool(rs) and (max(rs) - min(rs) > 0.2)}
        for who in ("load", "wrk"):
            for k in ("req_per_s", "target_cpu_pct", "client_cpu_pct", "target_cpu_us_per_req",
                      "client_cpu_us_per_req"):
                summ["%s_%s" % (who, k)] = med([r.get("%s_%s" % (who, k)) for r in case["runs"]])
        summ["ratio_of_medians"] = ratio(summ["load_req_per_s"], summ["wrk_req_per_s"])
        case["summary"] = summ
        if summ["ratio"] is not None:
            print("crosscheck %s: fairlead-load %.0f req/s, wrk %.0f req/s, median paired ratio %.3f (%s); "
                  "target CPU %.0f%% / %.0f%%" % (
                      t, summ["load_req_per_s"], summ["wrk_req_per_s"], summ["ratio"],
                      "within 10%" if abs(summ["ratio"] - 1) <= 0.10 else "OUTSIDE 10%",
                      summ["load_target_cpu_pct"], summ["wrk_target_cpu_pct"]))
    if args.validate_n:
        res["validation"] = validate_counts(ctx, args, tcpus)
    return res


class CpuCap:
    """A CPU quota (CFS bandwidth) on a set of processes, through a cgroup made for the purpose
    and removed afterwards: the only way, on a 2-CPU machine, to make a target that costs less
    per request than the client the bottleneck. cgroup v2 (cpu.max) or v1 (cpu.cfs_quota_us)."""

    def __init__(self, pct, period_us=10000):
        self.pct = pct
        quota = int(period_us * pct / 100.0)
        v2 = "/sys/fs/cgroup"
        v1 = "/sys/fs/cgroup/cpu"
        name = "fairbench-%d" % os.getpid()
        try:
            with open(os.path.join(v2, "cgroup.controllers")) as f:
                has_v2 = "cpu" in f.read().split()
        except OSError:
            has_v2 = False
        try:
            if has_v2:
                self.dir = os.path.join(v2, name)
                os.mkdir(self.dir)
                with open(os.path.join(self.dir, "cpu.max"), "w") as f:
                    f.write("%d %d" % (quota, period_us))
                self.parent = v2
            elif os.path.isdir(v1):
                self.dir = os.path.join(v1, name)
                os.mkdir(self.dir)
                with open(os.path.join(self.dir, "cpu.cfs_period_us"), "w") as f:
                    f.write(str(period_us))
                with open(os.path.join(self.dir, "cpu.cfs_quota_us"), "w") as f:
                    f.write(str(quota))
                self.parent = v1
            else:
                raise BenchError("no cgroup cpu controller")
        except OSError as e:
            raise BenchError("cannot make a CPU-capped cgroup (%s): run as root, or drop the "
                             "origin-capped target" % e)
        self.desc = "%s: %d µs every %d µs (%g%% of one CPU)" % (self.dir, quota, period_us, pct)

    def add(self, pid):
        with open(os.path.join(self.dir, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def remove(self):
        try:
            with open(os.path.join(self.dir, "cgroup.procs")) as f:
                left = [l.strip() for l in f if l.strip()]
            for pid in left:
                try:
                    with open(os.path.join(self.parent, "cgroup.procs"), "w") as f:
                        f.write(pid)
                except OSError:
                    pass
            os.rmdir(self.dir)
        except OSError as e:
            log("could not remove %s: %s" % (self.dir, e))


def validate_counts(ctx, args, tcpus):
    """Counts checked against an origin that counts the requests it answers (count-origin, below)."""
    port = ctx.origin_port + 50
    if not port_free(ctx.origin_host, port):
        raise BenchError("port %s:%d is busy" % (ctx.origin_host, port))
    cmd = [sys.executable, os.path.abspath(__file__), "count-origin", "%s:%d" % (ctx.origin_host, port)]
    p = ctx.procs.spawn(cmd, ctx.path("count-origin.log"), tcpus)
    out = {"origin": "python3 bench/fairbench.py count-origin %s:%d (pinned to CPU %s)" % (
        ctx.origin_host, port, tcpus), "checks": []}
    try:
        wait_ready(ctx.origin_host, port, "/__count", 5.0, p)

        def served():
            with socket.create_connection((ctx.origin_host, port), timeout=5) as s:
                s.sendall(b"GET /__count HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
                data = b""
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            return int(data.split(b"\r\n\r\n", 1)[1])

        url = "http://%s:%d%s" % (ctx.origin_host, port, args.path)
        n = args.validate_n
        for label, kind, arg in [("fairlead-load -n %d" % n, "n", n),
                                 ("fairlead-load -n %d" % (n + 37), "n", n + 37),
                                 ("fairlead-load -d 3", "d", 3), ("wrk -d 3", "wrk", 3)]:
            before = served()
            if kind == "n":
                cmd = ["taskset", "-c", ctx.client_cpus, ctx.bin("fairlead-load"), "-c", str(args.conns),
                       "-t", str(min(ctx.client_threads, args.conns)), "-n", str(arg), "-q",
                       "--json", ctx.path("validate.json"), url]
                subprocess.run(cmd, capture_output=True, text=True, timeout=120)
                with open(ctx.path("validate.json")) as f:
                    counted = json.load(f)["responses"]
            elif kind == "d":
                s, _ = run_load(ctx, url, args.conns, arg)
                counted = s["responses"]
            else:
                w, _ = run_wrk(ctx, url, args.conns, arg)
                counted = w.get("requests")
            time.sleep(0.3)
            got = served() - before - 0
            chk = {"client": label, "client_counted": counted, "origin_served": got,
                   "served_minus_counted": None if counted is None else got - counted}
            if kind == "n":
                chk["expected"] = arg
                chk["ok"] = (got == arg and counted == arg)
            else:
                # a timed run may stop with requests in flight: served, not counted (at most one per
                # connection)
                chk["ok"] = counted is not None and 0 <= got - counted <= args.conns
            out["checks"].append(chk)
            log("validate %s: client counted %s, origin served %d%s" % (
                label, counted, got, "" if chk["ok"] else "  MISMATCH"))
    except (BenchError, OSError, ValueError, subprocess.TimeoutExpired) as e:
        out["error"] = str(e)
        log("ERROR in validation:", e)
    finally:
        ctx.procs.stop(p)
    return out


def count_origin(addr):
    """A minimal HTTP/1.1 keep-alive origin that counts the requests it answers (GET, no body).
    GET /__count answers the count (not counted). Used only to validate the clients' counts."""
    import asyncio
    host, port = addr.rsplit(":", 1)
    count = [0]
    body = b"x" * 64
    resp = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body

    async def handle(reader, writer):
        buf = b""
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                buf += data
                out = []
                close = False
                while True:
                    i = buf.find(b"\r\n\r\n")
                    if i < 0:
                        break
                    head, buf = buf[:i], buf[i + 4:]
                    line = head.split(b"\r\n", 1)[0]
                    if b" /__count" in line:
                        b = str(count[0]).encode()
                        out.append(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(b) + b)
                    else:
                        count[0] += 1
                        out.append(resp)
                    if b"\r\nconnection: close" in head.lower():
                        close = True
                if out:
                    writer.write(b"".join(out))
                    await writer.drain()
                if close:
                    break
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def main():
        srv = await asyncio.start_server(handle, host, int(port), backlog=1024)
        async with srv:
            await srv.serve_forever()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    print("served %d" % count[0], flush=True)
    return 0


def cmd_build(args):
    """cargo build --release, then a private copy of the three binaries with their provenance.

    The target directory is shared (other people rebuild it while benchmarks run); measuring
    from a copy guarantees that every scenario of a series uses the very same binaries."""
    import hashlib
    before = git_state()
    cargo = ["cargo", "build", "--release", "-p", "fairlead", "-p", "fairlead-term", "-p", "fairlead-load"]
    cwd, env, release = ROOT, dict(os.environ), RELEASE
    export = args.from_head or args.commit
    if args.commit:
        rp = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", args.commit + "^{commit}"],
                            capture_output=True, text=True)
        if rp.returncode != 0:
            log("ERROR: unknown commit %r: %s" % (args.commit, rp.stderr.strip()))
            return 1
        before["commit"] = rp.stdout.strip()
    if export:
        # the working tree is shared with people editing it: build exactly HEAD (or --commit),
        # from an export, in a target directory of its own (shared by the exports, so that a
        # second commit reuses the compiled dependencies; each export has its own source path)
        commit = before["commit"]
        cwd = os.path.join(ROOT, "target", "fairbench", "src-" + commit[:10])
        if not os.path.isdir(cwd):
            os.makedirs(cwd)
            arch = subprocess.run(["git", "-C", ROOT, "archive", "--format=tar", commit], capture_output=True)
            if arch.returncode != 0:
                log("ERROR: git archive failed: %s" % arch.stderr.decode()[-500:])
                return 1
            subprocess.run(["tar", "-x", "-C", cwd], input=arch.stdout, check=True)
        env["CARGO_TARGET_DIR"] = os.path.join(ROOT, "target", "fairbench", "target")
        release = os.path.join(env["CARGO_TARGET_DIR"], "release")
        log("building commit %s from an export in %s" % (commit[:10], os.path.relpath(cwd, ROOT)))
    log("building:", " ".join(cargo))
    t0 = time.monotonic()
    p = subprocess.run(cargo, cwd=cwd, env=env)
    if p.returncode != 0:
        log("ERROR: cargo failed with status %d" % p.returncode)
        return 1
    after = git_state()
    if export:
        worktree = after
        after = {"commit": before["commit"], "dirty": False, "dirty_paths": [], "dirty_outside_bench": []}
    elif after != before:
        log("WARNING: the repository changed during the build; recording the state after it")
    diff = b""
    if after["dirty_outside_bench"]:
        diff = subprocess.run(["git", "-C", ROOT, "diff", "HEAD", "--"] + after["dirty_outside_bench"],
                              capture_output=True).stdout
    ts = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    name = "%s%s-%s" % (after["commit"][:10], "-dirty" if after["dirty_outside_bench"] else "", ts)
    dest = args.bin_dir or os.path.join(ROOT, "target", "fairbench", name)
    os.makedirs(dest, exist_ok=True)
    for b in ("fairlead", "fairlead-term", "fairlead-load"):
        shutil.copy2(os.path.join(release, b), os.path.join(dest, b))
    info = {
        "built": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "build_s": round(time.monotonic() - t0, 1),
        "command": " ".join(cargo),
        "commit": after["commit"],
        "dirty": after["dirty"],
        "dirty_paths": after["dirty_paths"],
        "dirty_outside_bench": after["dirty_outside_bench"],
        "diff_sha256": hashlib.sha256(diff).hexdigest()[:16] if diff else None,
        "binaries": {b: binary_id(os.path.join(dest, b)) for b in ("fairlead", "fairlead-term", "fairlead-load")},
        "source": ("git archive %s (exactly the commit; the shared working tree had uncommitted changes "
                   "in %d tracked file(s) at build time, not built)" % (after["commit"][:10],
                                                                         len(worktree["dirty_paths"]))
                   if export else "working tree %s" % ROOT),
    }
    with open(os.path.join(dest, "build.json"), "w") as f:
        json.dump(info, f, indent=1)
        f.write("\n")
    link = os.path.join(ROOT, "target", "fairbench", "latest")
    if args.commit and after["commit"] != worktree["commit"]:
        link = None     # an older commit: "latest" stays the newest build of HEAD or the tree
    if not args.bin_dir and link:
        try:
            if os.path.islink(link):
                os.remove(link)
            os.symlink(name, link)
        except OSError:
            pass
    print(dest)
    log("binaries copied to %s (commit %s%s); use --bin-dir %s" % (
        dest, after["commit"][:10], ", source differs from it in: " + ", ".join(after["dirty_outside_bench"])
        if after["dirty_outside_bench"] else ", clean",
        os.path.relpath(link if link and not args.bin_dir else dest, ROOT)))
    return 0


def wait_quiet(threshold, max_s, every=30.0):
    """Polls the 1-minute load average until it is below threshold, at most max_s seconds."""
    t0 = time.monotonic()
    seen = []
    while True:
        l1 = loadavg1()
        seen.append(round(l1, 2) if l1 is not None else None)
        waited = time.monotonic() - t0
        if l1 is not None and l1 < threshold:
            log("load %.2f < %.2f after %.0f s of waiting: starting" % (l1, threshold, waited))
            return {"threshold": threshold, "waited_s": round(waited), "quiet": True, "load1_seen": seen}
        if waited >= max_s:
            log("load still %.2f after %.0f s: starting anyway (noted in the result)" % (l1 or -1, waited))
            return {"threshold": threshold, "waited_s": round(waited), "quiet": False, "load1_seen": seen}
        log("load %.2f >= %.2f: waiting (%.0f s so far, at most %.0f)" % (l1 or -1, threshold, waited, max_s))
        time.sleep(min(every, max(1.0, max_s - waited)))


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


# --------------------------------------------------------------------------
# report

def f0(v):
    return "–" if v is None else "{:,.0f}".format(v)


def f1(v):
    return "–" if v is None else "%.1f" % v


def f2(v):
    return "–" if v is None else "%.2f" % v


def f3(v):
    return "–" if v is None else "%.3f" % v


def fr(v):
    return "–" if v is None else "×%.2f" % v


def mib(kib):
    return "–" if kib is None else "%.1f MiB" % (kib / 1024.0)


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
        row = [PRETTY[name], f0(m["req_per_s"]), f2(m["cpu_us_per_req"]), f1(m["proxy_cpu_pct"]),
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
    f = summary.get("fairlead", {})
    for other in (BEFORE, "haproxy", "nginx"):
        o = summary.get(other, {})
        if not (f.get("rounds_ok") and o.get("rounds_ok")):
            continue
        row = ["**Fairlead/%s**" % PRETTY[other], fr(ratio(f["req_per_s"], o["req_per_s"])),
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
    return ("%s × %s, kernel %s; %s; %s; %s (%s); CPUs proxy %s / client %s / origin %s, "
            "proxy threads %s; load average at start %s." % (
                m["nproc"], m["cpu_model"] or "?", m["kernel"], m["haproxy"], m["nginx"],
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


DISTURBED_PCT = 25.0  # "other" CPU above this (% of one CPU) during a run: someone else was busy


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
    if "fairlead" in cfgs or "haproxy" in cfgs:
        out += ["<details><summary>configuration (the same file for Fairlead and HAProxy)</summary>", "",
                "```haproxy", (cfgs.get("fairlead") or cfgs.get("haproxy")).rstrip(), "```", ""]
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
    if svg_bars(os.path.join(RESULTS, cn), "keep-alive: req/s (median)", "req/s", ["req/s"], list(s), vals):
        cn2 = chart_name(path, "cpu")
        svg_bars(os.path.join(RESULTS, cn2), "keep-alive: proxy CPU µs per request (median)", "µs/req",
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
    names = [n for n in PROXIES if any(n in c.get("summary", {}) for c in res["cases"])]
    cols = ["size", "conns"] + ["%s hits/s" % PRETTY[n] for n in names] + \
           ["%s Gbit/s" % PRETTY[n] for n in names]
    if "fairlead" in names:
        cols += ["Fairlead/%s hits" % PRETTY[o] for o in names if o != "fairlead"]
    md += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for case in res["cases"]:
        s = case["summary"]
        row = [case["size"], str(case["conns"])]
        row += [f0(s.get(n, {}).get("req_per_s")) for n in names]
        row += [f2(s.get(n, {}).get("gbit_per_s")) for n in names]
        if "fairlead" in names:
            row += [fr(ratio(s.get("fairlead", {}).get("req_per_s"), s.get(o, {}).get("req_per_s")))
                    for o in names if o != "fairlead"]
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
    svg_lines(os.path.join(RESULTS, c1), "hits/s vs object size", "object size (log)", "hits/s (log)",
              hits, logx=True, logy=True, xticks=ticks)
    svg_lines(os.path.join(RESULTS, c2), "Gbit/s vs object size", "object size (log)", "Gbit/s",
              gb, logx=True, xticks=ticks)
    md += ["", "![hits/s](bench/results/%s)" % c1, "", "![Gbit/s](bench/results/%s)" % c2, ""]
    md += header_block(res, path) + config_block(res["cases"][0])


def report_idle(path, res, md):
    md += ["## Idle keep-alive connections", ""]
    md += ["N connections opened from Python through the proxy; each sends one `GET %s`, reads the "
           "response and stays idle. Memory per connection = (VmRSS with N − VmRSS before) / N, "
           "of the proxy process (nginx: its worker). Kernel socket buffers are not in RSS. %s round(s)."
           % (res["params"]["path"], res["params"]["rounds"]), ""]
    cols = ["N", "proxy", "RSS before", "RSS with N", "KiB per connection", "still open", "proxy fds",
            "Fairlead/this"]
    md += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    groups, vals = [], {}
    for case in res["cases"]:
        s = case["summary"]
        g = "N=%d" % case["conns"]
        groups.append(g)
        vals[g] = {}
        fk = s.get("fairlead", {}).get("kib_per_conn")
        for name in PROXIES:
            m = s.get(name)
            if m is None:
                continue
            if not m.get("rounds_ok"):
                md.append("| %d | %s | **failed**: %s |" % (case["conns"], PRETTY[name],
                                                         _esc((m.get("first_error") or "").splitlines()[0])))
                continue
            vals[g][name] = m["kib_per_conn"]
            md.append("| %d | %s | %s | %s | %.2f | %d/%d | %s | %s |" % (
                case["conns"], PRETTY[name], mib(m["rss_base_kib"]), mib(m["rss_with_n_kib"]),
                m["kib_per_conn"], m["still_open"], case["conns"], f0(m["proxy_fds"]),
                "" if name == "fairlead" else fr(ratio(fk, m["kib_per_conn"]))))
    cn = chart_name(path, "kib")
    if svg_bars(os.path.join(RESULTS, cn), "RSS per idle keep-alive connection", "KiB/conn", groups,
                [n for n in PROXIES if any(n in v for v in vals.values())], vals):
        md += ["", "![KiB per connection](bench/results/%s)" % cn]
    md += [""] + header_block(res, path) + config_block(res["cases"][0])


def pct_x(p):
    return 1.0 / (1.0 - float(p) / 100.0)


def report_tail(path, res, md):
    md += ["## Tail latency at a fixed rate", ""]
    md += ["Open-loop load (`fairlead-load -R`, latency from the intended send time) at %s of each proxy's "
           "median keep-alive maximum (from `%s`), %d connections, %s s ramp-up then %s s measured, "
           "%s rounds. Each proxied run is paired with a direct run at the same rate straight to the origin "
           "(the reference); *added* = proxied − direct. Medians across rounds; latencies in ms (TTLB)." % (
               " and ".join("%g%%" % lv for lv in res["params"]["levels_pct"]),
               res["params"].get("rates_from"), res["params"]["conns"], res["params"]["ramp_s"],
               res["params"]["duration_s"], res["params"]["rounds"]), ""]
    for case in res["cases"]:
        s, ref = case["summary"], case.get("direct_summary", {})
        md += ["### %g%% of max" % case["level_pct"], ""]
        cols = ["proxy", "target req/s", "achieved req/s (incl. ramp-up)", "direct p50", "direct p99", "direct p99.99",
                "proxied p50", "proxied p99", "proxied p99.9", "proxied p99.99", "added p99",
                "added p99.99", "proxy CPU µs/req", "errors"]
        md += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for name in PROXIES:
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
                PRETTY[name], f0(m.get("rate")), f0(m["req_per_s"]), f3(dl.get("50")), f3(dl.get("99")),
                f3(dl.get("99.99")), f3(pl["50"]), f3(pl["99"]), f3(pl["99.9"]), f3(pl["99.99"]),
                f3(add("99")), f3(add("99.99")), f2(m["cpu_us_per_req"]),
                str(m["errors"] + d.get("errors", 0))]) + " |")
        f = s.get("fairlead", {})
        for other in ("haproxy", "nginx"):
            o = s.get(other, {})
            if f.get("rounds_ok") and o.get("rounds_ok"):
                md.append("| **Fairlead/%s** | %s | | | | | %s | %s | %s | %s | | | %s | |" % (
                    PRETTY[other], fr(ratio(f.get("rate"), o.get("rate"))),
                    fr(ratio(f["lat_ms"]["50"], o["lat_ms"]["50"])), fr(ratio(f["lat_ms"]["99"], o["lat_ms"]["99"])),
                    fr(ratio(f["lat_ms"]["99.9"], o["lat_ms"]["99.9"])),
                    fr(ratio(f["lat_ms"]["99.99"], o["lat_ms"]["99.99"])),
                    fr(ratio(f["cpu_us_per_req"], o["cpu_us_per_req"]))))
        series = []
        for name in PROXIES:
            m = s.get(name)
            if m and m.get("rounds_ok"):
                series.append(("%s @%s" % (PRETTY[name], f0(m.get("rate"))), COLORS[name], False,
                               [(pct_x(p), m["lat_ms"][p]) for p in PCTS]))
                d = ref.get(name)
                if d:
                    series.append(("direct @%s" % f0(m.get("rate")), COLORS[name], True,
                                   [(pct_x(p), d["lat_ms"][p]) for p in PCTS]))
        cn = chart_name(path, "p%g" % case["level_pct"])
        if svg_lines(os.path.join(RESULTS, cn), "latency percentiles at %g%% of max (dashed: direct)"
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
        for name in PROXIES:
            v = sc.get("%s/%s" % (a, name))
            if not v:
                continue
            ml = cases[(a, lo)]["summary"][name]
            mh = cases[(a, hi)]["summary"][name]
            md.append("| %s | %s | %s | %s | **%s** | %s | %s | %s |" % (
                a, PRETTY[name], f2(ml["cpu_us_per_req"]), f2(mh["cpu_us_per_req"]), fr(v["cpu"]),
                ", ".join("%.2f" % x for x in v["cpu_paired"]), fr(v["req_per_s"]), fr(v["p99"])))
    md += ["", "### Fairlead/HAProxy and Fairlead/nginx per backend", ""]
    cols = ["algorithm", "servers", "CPU µs/req F/H", "CPU µs/req F/n", "req/s F/H", "req/s F/n",
            "p99 F/H", "p99 F/n"]
    md += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for a in p["algos"]:
        for n in p["counts"]:
            s = cases[(a, n)]["summary"]
            f, h, g = s.get("fairlead", {}), s.get("haproxy", {}), s.get("nginx", {})
            def rr(k, o):
                if not (f.get("rounds_ok") and o.get("rounds_ok")):
                    return "–"
                if k == "p99":
                    return fr(ratio(f["lat_ms"]["99"], o["lat_ms"]["99"]))
                return fr(ratio(f[k], o[k]))
            md.append("| %s | %d | %s | %s | %s | %s | %s | %s |" % (
                a, n, rr("cpu_us_per_req", h), rr("cpu_us_per_req", g), rr("req_per_s", h),
                rr("req_per_s", g), rr("p99", h), rr("p99", g)))
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
                name = next((nm for nm in PROXIES if row.startswith("| %s |" % PRETTY[nm])), None)
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


def report_crosscheck(path, res, md):
    p = res["params"]
    md += ["## Cross-check: fairlead-load vs wrk", ""]
    if "target_cpus" not in p:
        md += ["(old-style result: client-bound; rerun `crosscheck`)", ""] + header_block(res, path)
        return
    md += ["Issue requirement: on the same target in the same run, fairlead-load's req/s must agree with "
           "wrk's within 10%%. That only tests the clients' counting when **the target is the bottleneck**; "
           "when the client is, the ratio measures which client is cheaper. So: the target is pinned to "
           "CPU %s (`%s`; for a proxy target, the proxy with it), each client runs alone on CPU %s, both with "
           "%d connections and %d thread(s), `GET %s`; each measured %s s run follows a %s s warm-up of the "
           "same client; %d rounds alternate the order (fairlead-load first in odd rounds, wrk first in even "
           "ones). *Target CPU %%* is the target's CPU over the run (100%% = saturated = the bottleneck); "
           "*origin-capped* runs the origin under a CPU quota (%s) so that it is the bottleneck for sure: "
           "the bare origin costs less per request than either client." % (
               p["target_cpus"], p.get("origin_cmd"), p["client_cpus"], p["conns"], p["client_threads"],
               p["path"], p["duration_s"], p["warmup_s"], p["rounds"],
               next((c.get("cap") for c in res["cases"] if c.get("cap")), "not run")), ""]
    cols = ["target", "fairlead-load req/s", "wrk req/s", "**median ratio**", "per-round ratios",
            "target CPU % (load / wrk)", "client CPU % (load / wrk)", "client CPU µs/req (load / wrk)",
            "verdict"]
    md += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for case in res["cases"]:
        s = case.get("summary", {})
        r = s.get("ratio")
        bound = (s.get("load_target_cpu_pct") or 0) >= 90 and (s.get("wrk_target_cpu_pct") or 0) >= 90
        client_sat = max(s.get("load_client_cpu_pct") or 0, s.get("wrk_client_cpu_pct") or 0) >= 90
        capped = case["target"] == "origin-capped"
        verdict = case.get("error", "") or (
            ("within 10%" if r is not None and abs(r - 1) <= 0.1 else "**outside 10%**")
            + (" (the clients were saturated too, client CPU %.0f%% / %.0f%%: the ratio follows the clients' "
               "cost per request, not their counting)" % (s.get("load_client_cpu_pct") or 0,
                                                          s.get("wrk_client_cpu_pct") or 0) if client_sat else
               "" if bound or capped else " (client-bound: not a test of the counts)")
            + (" (noisy rounds: spread over 0.2)" if s.get("noisy") else ""))
        md.append("| %s | %s | %s | **%s** | %s | %s / %s | %s / %s | %s / %s | %s |" % (
            case["target"], f0(s.get("load_req_per_s")), f0(s.get("wrk_req_per_s")), f3(r),
            ", ".join("%.3f" % x for x in s.get("ratios", [])),
            f0(s.get("load_target_cpu_pct")), f0(s.get("wrk_target_cpu_pct")),
            f0(s.get("load_client_cpu_pct")), f0(s.get("wrk_client_cpu_pct")),
            f2(s.get("load_client_cpu_us_per_req")), f2(s.get("wrk_client_cpu_us_per_req")), verdict))
    v = res.get("validation")
    if v:
        md += ["", "Counts checked against an origin that counts what it answers (`%s`, a 64-byte response, "
               "answers `GET /__count` uncounted): a `-n N` run must make exactly N requests; a timed run may "
               "end with at most one request per connection answered but not counted." % v["origin"], ""]
        md += ["| client run | client counted | origin served | served − counted | ok |", "|---|---|---|---|---|"]
        for c in v.get("checks", []):
            md.append("| `%s` | %s | %s | %s | %s |" % (c["client"], f0(c["client_counted"]),
                                                       f0(c["origin_served"]), c["served_minus_counted"],
                                                       "yes" if c["ok"] else "**no**"))
        if v.get("error"):
            md.append("\nValidation error: %s" % v["error"])
    md += [""] + header_block(res, path)
    cfg = next((c for c in res["cases"] if c.get("configs")), None)
    if cfg:
        md += config_block(cfg)


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
        neg = ["%s %s" % (PRETTY[n], negotiated_str(s[n].get("negotiated"))) for n in PROXIES
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
            for name in PROXIES:
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
                    label, PRETTY[name], f0(rate),
                    ("%s / %s%s" % (f0(t.get("full")), f0(t.get("resumed")),
                                    " (%.0f%% resumed)" % t["resumed_pct"] if t.get("resumed_pct") is not None
                                    and kind == "resumed" else "")) if t else "–",
                    f2(cpu), f1(m["proxy_cpu_pct"]), f3((t.get("hs_lat_ms") or {}).get("50")),
                    f3((t.get("hs_lat_ms") or {}).get("99")), f3(m["lat_ms"]["99"]), mib(m["peak_rss_kib"]),
                    str(m["errors"]) + (" (%d failed rounds)" % m["rounds_failed"] if m.get("rounds_failed") else ""),
                    negotiated_str(m.get("negotiated")) if t else "–"]) + " |")
            f = s.get("fairlead", {})
            for other in ("haproxy", "nginx"):
                o = s.get(other, {})
                if f.get("rounds_ok") and o.get("rounds_ok"):
                    md.append("| %s | **Fairlead/%s** | %s | | %s | | | | | %s | | |" % (
                        label, PRETTY[other], fr(ratio(rate_v[label].get("fairlead"), rate_v[label].get(other))),
                        fr(ratio(cpu_v[label].get("fairlead"), cpu_v[label].get(other))),
                        fr(ratio(f["peak_rss_kib"], o["peak_rss_kib"]))))
        md += [""]
        for kind in hs_kinds:
            s = cases[kind]["summary"]
            per = []
            for name in PROXIES:
                t = (s.get(name) or {}).get("tls")
                if t:
                    per.append("%s %s hs/s, %s µs" % (PRETTY[name], ", ".join(f0(v) for v in t["hs_per_s_all"]),
                                                       ", ".join(f1(v) for v in t["cpu_us_per_hs_all"])))
            if per:
                md.append("Per round, %s: %s." % (kind, "; ".join(per)))
            ol = other_line(cases[kind])
            if ol:
                md.append(ol.replace("Per round (", "Per round, %s (" % kind, 1))
        names = [n for n in PROXIES if any(n in v for v in rate_v.values())]
        c1, c2 = chart_name(path, "hs"), chart_name(path, "hscpu")
        if svg_bars(os.path.join(RESULTS, c1), "TLS handshakes/s (one request per connection, median)",
                    "handshakes/s", groups, names, rate_v):
            svg_bars(os.path.join(RESULTS, c2), "proxy CPU µs per handshake (median)", "µs/handshake",
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
        cols = ["N", "proxy", "RSS before", "RSS with N", "KiB per TLS connection", "still open", "proxy fds",
                "Fairlead/this"]
        md += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        groups, vals = [], {}
        for case in idle:
            s = case["summary"]
            g = "N=%d" % case["conns"]
            groups.append(g)
            vals[g] = {}
            fk = s.get("fairlead", {}).get("kib_per_conn")
            for name in PROXIES:
                m = s.get(name)
                if m is None:
                    continue
                if not m.get("rounds_ok"):
                    md.append("| %d | %s | **failed**: %s |" % (case["conns"], PRETTY[name],
                                                             fail_reason(m.get("first_error"))))
                    continue
                vals[g][name] = m["kib_per_conn"]
                md.append("| %d | %s | %s | %s | %.2f | %d/%d | %s | %s |" % (
                    case["conns"], PRETTY[name], mib(m["rss_base_kib"]), mib(m["rss_with_n_kib"]),
                    m["kib_per_conn"], m["still_open"], case["conns"], f0(m["proxy_fds"]),
                    "" if name == "fairlead" else fr(ratio(fk, m["kib_per_conn"]))))
        cn = chart_name(path, "idlekib")
        if svg_bars(os.path.join(RESULTS, cn), "RSS per idle TLS connection", "KiB/conn", groups,
                    [n for n in PROXIES if any(n in v for v in vals.values())], vals):
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


def report_rules(path, res, md):
    p = res["params"]
    cases = {(c["map_entries"], c["path_patterns"]): c for c in res["cases"]}
    big, small = max(cases), min(cases)
    md += ["## Rules: ACLs, maps, http-request, use_backend", ""]
    md += ["The same HAProxy-syntax file for Fairlead and HAProxy (below): 10 ACLs on the Host header "
           "(`hdr(host) -i`, `hdr_dom(host) -i`), the path (`path_beg`, `path_end`, and `path_beg -f` a "
           "list of N patterns) and the source (`src` private ranges, `src -f` a list of %d addresses and "
           "/24s); 5 `http-request` header rules (`set-header` with a constant and with `%%[src]` and "
           "`%%[req.hdr(host),lower]`, `add-header`, `del-header`; three of them conditional); 3 routing "
           "rules (two `use_backend ... if`, one `use_backend %%[req.hdr(host),lower,map(hosts.map,be_app)]` "
           "on a `map_str` file of M entries); 4 backends on the same origin. Keep-alive, %d connections "
           "in total, %s rounds × %s s per proxy and size, medians across rounds. The generated files are "
           "deterministic (fixed seeds); every host and path of the mix is in every size." % (
               p["ips"], p["conns"], p["rounds"], p["duration_s"]), "",
           "Request mix: fairlead-load sends the URL's authority as `Host`, so the mix is %d fairlead-load "
           "processes at once, one per Host header (`-H`): %s; each cycles (round-robin, request by request) "
           "through the paths %s (each with `?s=64`: 64-byte bodies). `www.example.com`, `api.example.com` and "
           "`site000500.example.org` are in the map, `old.legacy.example.net` is not (default backend); "
           "`/catalog/p00500/` is in the pattern list, `/catalog/x/` is not; the client's address "
           "(127.0.0.1) is the last line of the IP list. Latency percentiles are the worst of the %d "
           "clients'." % (len(p["hosts"]), ", ".join("`%s`" % h for h in p["hosts"]),
                          ", ".join("`%s`" % q for q in p["paths"]), len(p["hosts"])), ""]
    sc = res.get("scaling", {})
    if sc:
        md += ["### %s-entry map and %s path patterns vs %s and %s" % (
            "{:,}".format(big[0]), "{:,}".format(big[1]), "{:,}".format(small[0]), "{:,}".format(small[1])), "",
            "Does a lookup cost more when the map and the pattern list grow? ×1.00 = flat. Each proxy runs "
            "both sizes back to back in every round.", ""]
        cols = ["proxy", "CPU µs/req, small", "CPU µs/req, big", "**CPU big/small**", "per-round big/small",
                "user big/small", "sys big/small", "start-up small → big", "RSS after start small → big"]
        md += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for name in NAMES:
            v = sc.get(name)
            if not v:
                continue
            ms, mb = cases[small]["summary"][name], cases[big]["summary"][name]
            md.append("| %s | %s | %s | **%s** | %s | %s | %s | %s s → %s s | %s → %s |" % (
                PRETTY[name], f2(ms["cpu_us_per_req"]), f2(mb["cpu_us_per_req"]), fr(v["cpu"]),
                ", ".join("%.2f" % x for x in v["cpu_paired"]), fr(v.get("user")), fr(v.get("sys")),
                f2(ms.get("start_s")), f2(mb.get("start_s")), mib(ms.get("start_rss_kib")),
                mib(mb.get("start_rss_kib"))))
        md += ["", "*Start-up*: from spawning the proxy to its first answered GET (loading and indexing the "
               "files); *RSS after start*: VmRSS then. System time (sockets) cannot depend on the lists: "
               "its big/small ratio (%s) shows how much this series moves by noise alone." % ", ".join(
                   "%s %s" % (PRETTY[n], fr(v.get("sys"))) for n, v in sc.items()), ""]
    for key in sorted(cases, reverse=True):
        c = cases[key]
        md += ["### Map of %s entries, %s path patterns, %s addresses" % (
            "{:,}".format(key[0]), "{:,}".format(key[1]), "{:,}".format(c["ip_entries"])), ""]
        md += proxy_table(c["summary"], split=True)
        md += ["", rounds_line(c["summary"], "cpu_us_per_req_all", "CPU µs/req"), rounds_line(c["summary"]),
               other_line(c), ""] + saturation_note(c["summary"])
        bad = [r for r in c["runs"] if r.get("check_failed")]
        if bad:
            md += ["**Routing check failed** in %d run(s): %s" % (len(bad), _esc(bad[0]["check_failed"][0])), ""]
    if client_cmd_of(res["cases"][0]):
        md += ["Client: `%s`" % client_cmd_of(res["cases"][0]), ""]
    md += header_block(res, path)
    c = cases[big]
    md += ["<details><summary>configuration (the same file for Fairlead and HAProxy; map %s entries, "
           "%s patterns) and the first lines of the generated files</summary>" % (
               "{:,}".format(big[0]), "{:,}".format(big[1])), ""]
    blk = config_block(c)
    md += blk[2:-2] if len(blk) > 4 else []
    for k, f in sorted(c.get("files", {}).items()):
        md += ["`%s` (%d lines):" % (f["name"], f["lines"]), "", "```", "\n".join(f["head"]), "...", "```", ""]
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
    for f in sorted(os.listdir(RESULTS)):
        q = os.path.join(RESULTS, f)
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


REPORTERS = [("keepalive", report_keepalive), ("close", report_close), ("sizes", report_sizes),
             ("idle", report_idle), ("tail", report_tail), ("servers", report_servers),
             ("crosscheck", report_crosscheck), ("tls", report_tls), ("tlsscan", report_tlsscan),
             ("rules", report_rules), ("keepalive-ab", report_keepalive_ab),
             ("h2", lambda path, res, md: h2bench.report_h2(sys.modules[__name__], path, res, md)),
             ("stick", lambda path, res, md: stickbench.report_stick(sys.modules[__name__], path, res, md))]


def series_block():
    """How to read, the machine, and one line per scenario: when, which binary, which load."""
    got = []
    for scen, _ in REPORTERS:
        p = latest(scen)
        if p:
            with open(p) as f:
                got.append((scen, p, json.load(f)))
    if not got:
        return []
    out = ["## How to read", "",
           "* **Ratios within one run matter; absolute numbers don't.** Every table compares proxies "
           "measured in alternation under the same conditions, minutes apart at most. The same proxy's "
           "req/s moves by tens of percent from one run to the next on this machine; a ratio within "
           "±10% is a tie.",
           "* **The proxy has one CPU to itself; the client and the origin share the other one.** In the "
           "keep-alive scenarios they, not the proxy, are usually the bottleneck (*proxy CPU %* well below "
           "100), so req/s says more about the client and origin than about the proxy. *Proxy CPU µs per "
           "request* does not depend on who the bottleneck was: it is the number to compare.",
           "* The machine has 2 vCPUs and is shared: the load average and the CPU used by anything else "
           "than the benchmark (*other CPU*) are recorded around every run (below, and in each section's "
           "*Load* line). A run with *other* above %g%% of one CPU was *disturbed*: someone else's work "
           "took CPU from the client, the origin or the proxy; its req/s is lower and its CPU µs/req "
           "somewhat higher (cache and scheduling interference), which is why every number is a median "
           "across rounds. Look at the per-round values in the JSON before drawing conclusions from a "
           "small difference." % DISTURBED_PCT,
           "* The `crosscheck` section validates the client itself (fairlead-load against wrk with the "
           "target as the bottleneck, and its counts against a counting origin).", ""]
    m0 = got[0][2]["machine"]
    out += ["## This series", "",
            "Machine: " + machine_line(m0).rsplit("; load average at start", 1)[0] + "; %s, %s." % (
                m0.get("mem_total", "?") + " RAM", m0.get("wrk", "wrk ?")), ""]
    if m0.get("cpu_vulnerabilities"):
        out += [fbmetrics.vulnerabilities_line(m0["cpu_vulnerabilities"]), ""]
    builds = {json.dumps(r["machine"].get("build"), sort_keys=True) for _, _, r in got}
    shas = {(r["machine"].get("binaries") or {}).get("fairlead", {}).get("sha256") for _, _, r in got}
    if len(builds) == 1 and len(shas) == 1:
        out += [build_line(m0) + " The same binaries for every scenario below.", ""]
    else:
        out += ["**The scenarios below did not all run the same binaries**: see each one's *Binaries* line.", ""]
    b = m0.get("build")
    if b:
        frm = "git archive" in (b.get("source") or "")
        out += ["Build: `python3 bench/fairbench.py build%s`: `%s`%s, then a private copy of the three binaries "
                "so that a rebuild of the shared `target/` during the series cannot change them." % (
                    " --from-head" if frm else "", b.get("command", "cargo build --release"),
                    " on a `git archive` export of the commit (the shared working tree held other people's "
                    "uncommitted work)" if frm else ""), ""]
    cols = ["scenario", "started (UTC)", "commit", "fairlead sha256", "load at start",
            "1-min load during runs", "other CPU (median)", "disturbed runs", "command"]
    out += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for scen, p, r in got:
        m = r["machine"]
        bb = m.get("build") or {}
        ls = load_summary(r)
        commit = (bb.get("commit") or (m.get("repo_at_run") or {}).get("commit") or "")[:10] \
            or m.get("fairlead_git", "?")
        dirty = bool(bb.get("dirty_outside_bench")) if bb else "dirty" in str(m.get("fairlead_git", ""))
        out.append("| %s | %s | `%s`%s | %s | %s | %s | %s | %s | `%s` |" % (
            scen, r["started"], commit, " (dirty)" if dirty and "dirty" not in commit else "",
            ((m.get("binaries") or {}).get("fairlead") or m.get("fairlead_binary") or {}).get("sha256", "?"),
            " ".join(ls["start"] or []),
            "%.2f–%.2f" % (ls["l1_min"], ls["l1_max"]) if ls["l1_min"] is not None else "–",
            "%.0f%%" % ls["other_med"] if ls["other_med"] is not None else "–",
            "%d/%d" % (ls["disturbed"], ls["runs_acct"]) if ls["runs_acct"] else "–", r["command"]))
    out += [""]
    return out


def _has_scan(path):
    try:
        with open(path) as f:
            return bool(json.load(f).get("scan"))
    except (OSError, ValueError):
        return False


def cmd_report(args):
    md = ["# Benchmarks", "",
          "<!-- generated by `python3 bench/fairbench.py report` from bench/results/*.json; do not edit -->",
          "",
          "Fairlead, HAProxy and nginx side by side, with the same client, the same origin "
          "(`fairlead-term`) and, for Fairlead and HAProxy, the very same configuration file. "
          "Each proxy runs one thread pinned to its own CPU; the client and the origin share the other "
          "CPU(s). Rounds are interleaved (Fairlead, HAProxy, nginx, Fairlead, ...) and every number is "
          "the median across rounds. The machine is small, shared and noisy: read the "
          "**Fairlead/HAProxy** and **Fairlead/nginx** ratios (×1.00 = equal; above 1 is better for "
          "req/s, below 1 is better for CPU, latency and memory), not the absolute numbers. "
          "*Proxy CPU µs/req* is utime+stime of the proxy process(es) over the measured window divided "
          "by the responses in it; *proxy CPU %* shows whether the proxy was the bottleneck (100% = "
          "its CPU was saturated). How to run: [bench/README.md](bench/README.md).", ""]
    md += series_block()
    fbcosts.report_all(sys.modules[__name__], md)
    found = False
    for scen, fn in REPORTERS:
        p = latest(scen)
        if scen == "tlsscan":
            # `tls` runs the same check: show the separate one only when it is the newer
            t = latest("tls")
            if not p or (t and os.path.basename(t)[4:] > os.path.basename(p)[8:] and _has_scan(t)):
                continue
        if not p:
            md += ["## %s" % scen, "", "No result yet: `python3 bench/fairbench.py %s`." % scen, ""]
            continue
        with open(p) as f:
            res = json.load(f)
        found = True
        try:
            fn(p, res, md)
        except (KeyError, TypeError, ValueError) as e:
            md += ["", "(could not render %s: %s)" % (os.path.relpath(p, ROOT), e), ""]
    out = args.out or os.path.join(ROOT, "BENCHMARKS.md")
    with open(out, "w") as f:
        f.write("\n".join(md).rstrip() + "\n")
    log("wrote", out, "" if found else "(no results yet)")
    return 0


# --------------------------------------------------------------------------
# command line

def enter_netns():
    """Runs this script again under `unshare --net` with the loopback up (does not return)."""
    if not shutil.which("unshare"):
        raise SystemExit("--netns: unshare not found")
    inner = "ip link set lo up && exec \"$@\""
    os.environ[NETNS_ENV] = "1"
    argv = [sys.executable, os.path.abspath(__file__)] + sys.argv[1:]
    os.execvp("unshare", ["unshare", "--net", "--", "sh", "-c", inner, "sh"] + argv)


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for want in (max(hard, 65536), hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
            return
        except (ValueError, OSError):
            continue


def add_common(p, rounds=3, duration=5.0, conns=100, path="/?s=64", warmup=1.0):
    p.add_argument("--rounds", type=int, default=rounds, help="interleaved rounds (default %(default)s)")
    p.add_argument("-d", "--duration", type=float, default=duration,
                   help="measured seconds per run (default %(default)s)")
    p.add_argument("-c", "--conns", type=int, default=conns, help="client connections (default %(default)s)")
    p.add_argument("--path", default=path, help="request path (default %(default)s)")
    p.add_argument("--warmup", type=float, default=warmup,
                   help="unmeasured client run before each measured one, seconds (default %(default)s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--proxies", default=",".join(PROXIES), help="comma list (default %(default)s)")
    ap.add_argument("--proxy-cpus", help="taskset list for the proxy (env FAIRBENCH_PROXY_CPUS, default 1)")
    ap.add_argument("--client-cpus", help="taskset list for the client (env FAIRBENCH_CLIENT_CPUS, default 0)")
    ap.add_argument("--origin-cpus", help="taskset list for the origin (env FAIRBENCH_ORIGIN_CPUS, default 0)")
    ap.add_argument("--threads", type=int, help="proxy threads: nbthread / worker_processes "
                                                "(env FAIRBENCH_THREADS, default 1)")
    ap.add_argument("--client-threads", type=int, help="fairlead-load/wrk threads (default: number of client CPUs)")
    ap.add_argument("--origin-threads", type=int, help="fairlead-term threads (default: number of origin CPUs)")
    ap.add_argument("--origin-host", default="127.0.0.2")
    ap.add_argument("--origin-port", type=int, default=18100)
    ap.add_argument("--proxy-host", default="127.0.0.3")
    ap.add_argument("--proxy-port", type=int, default=18200)
    ap.add_argument("--bin-dir", help="directory with fairlead, fairlead-term and fairlead-load (env "
                                      "FAIRBENCH_BIN_DIR, default target/release); `build` makes a private "
                                      "copy, target/fairbench/latest")
    ap.add_argument("--compare-bin-dir", metavar="DIR",
                    help="a second Fairlead build (DIR/fairlead, e.g. from `build --commit REV`) run as one "
                         "more proxy, `fairlead-before`, right after `fairlead` in every round; keepalive "
                         "then saves a `keepalive-ab` result (builds alternate A B, B A...)")
    ap.add_argument("--quiet-load", type=float, help="before measuring, wait until the 1-minute load "
                                                     "average is below this (polled every 30 s)")
    ap.add_argument("--quiet-max", type=float, default=1200.0,
                    help="wait at most this many seconds for --quiet-load (default %(default)s); "
                         "the result records the load it started with")
    ap.add_argument("--retries", type=int, help="measure a run again, at most this many times, when other "
                                                "processes took more than %g%% of a CPU during it (env "
                                                "FAIRBENCH_RETRIES, default 2; 0: never)" % DISTURBED_PCT)
    ap.add_argument("--netns", action="store_true",
                    help="run in a private network namespace (unshare --net, loopback only; needs root), so "
                         "that the TCP counters (/proc/net/snmp) count the benchmark's sockets alone")
    ap.add_argument("--keep-tmp", action="store_true", help="keep configs, logs and raw client JSON")
    ap.add_argument("--no-save", action="store_true", help="do not write a result file")
    ap.add_argument("--results-dir", default=os.environ.get("FAIRBENCH_RESULTS"),
                    help="where result files are written and `report` reads them (env FAIRBENCH_RESULTS, "
                         "default bench/results); for trial runs that must not reach BENCHMARKS.md")
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("keepalive", help="small responses over keep-alive (the main scenario)")
    add_common(p)
    p.add_argument("--wrk", action="store_true", help="also run wrk after each measured run (cross-check)")
    p = sub.add_parser("close", help="one request per connection, TCP and HTTP modes")
    add_common(p)
    p.add_argument("--mode", choices=["tcp", "http", "both"], default="both")
    p = sub.add_parser("sizes", help="object size sweep, hits/s and Gbit/s")
    add_common(p, rounds=2, duration=3.0, conns=0)
    p.add_argument("--big", action="store_true", help="add a 100 MiB object")
    p.add_argument("--sizes", help="comma list among 64,1k,16k,256k,1m,16m,100m")
    p = sub.add_parser("idle", help="memory per idle keep-alive connection")
    p.add_argument("--counts", default="2000,5000", help="comma list of N (default %(default)s)")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--path", default="/?s=64")
    p.add_argument("--settle", type=float, default=1.0, help="seconds to wait before reading RSS")
    p = sub.add_parser("tail", help="latency at a fixed rate vs a direct run")
    add_common(p, warmup=0)
    p.add_argument("--levels", default="50,80", help="percent of each proxy's max (default %(default)s)")
    p.add_argument("--rate", type=float, help="use this rate (req/s) for every proxy instead")
    p.add_argument("--ramp", type=float, default=1.0, help="ramp-up seconds (-s), left out of percentiles")
    p = sub.add_parser("servers", help="server selection cost: backends of 10 and 100 servers, "
                                       "roundrobin and leastconn")
    add_common(p)
    p.add_argument("--counts", default="10,100", help="backend sizes (default %(default)s)")
    p.add_argument("--algos", default="roundrobin,leastconn", help="balance algorithms (default %(default)s)")
    p = sub.add_parser("crosscheck", help="fairlead-load vs wrk on the same target (the target is "
                                          "the bottleneck)")
    add_common(p, rounds=6, warmup=1.0)
    p.add_argument("--targets", default="origin,origin-capped,fairlead",
                   help="origin, origin-capped (the origin under a CPU quota) and/or proxies "
                        "(default %(default)s)")
    p.add_argument("--cap-pct", type=float, default=35.0,
                   help="origin-capped: CPU quota in %% of one CPU (default %(default)s)")
    p.add_argument("--target-cpus", help="CPUs of the target: the origin (1 thread) and the proxy "
                                         "(default: the proxy CPUs); the client gets --client-cpus alone")
    p.add_argument("--validate-n", type=int, default=20000,
                   help="-n run checked against a counting origin (0: skip; default %(default)s)")
    p = sub.add_parser("rules", help="ACLs, maps, http-request rules, use_backend: Fairlead and HAProxy "
                                     "with the same rule set, and with small and big maps/pattern lists")
    add_common(p, conns=100)
    p.add_argument("--sets", default="100000:10000,1000:1000",
                   help="MAP_ENTRIES:PATH_PATTERNS per size, comma-separated (default %(default)s)")
    p.add_argument("--ips", type=int, default=1000, help="entries of the `src -f` list (default %(default)s)")
    p.add_argument("--hosts", default=",".join(RULES_HOSTS),
                   help="Host headers of the mix, one fairlead-load each (default %(default)s)")
    p.add_argument("--paths", default=",".join(RULES_PATHS),
                   help="paths of the mix, cycled by every client (default %(default)s)")
    p = sub.add_parser("build", help="cargo build --release and a private copy of the binaries "
                                     "(target/fairbench/COMMIT-TIME, linked as target/fairbench/latest)")
    p.add_argument("--from-head", action="store_true",
                   help="build exactly HEAD from a `git archive` export (target/fairbench/src-COMMIT) "
                        "instead of the working tree, with its own target directory")
    p.add_argument("--commit", metavar="REV",
                   help="build exactly REV (e.g. 1acb563) the same way, from a `git archive` export in "
                        "target/fairbench/src-COMMIT; nothing is checked out, `latest` is left alone")
    p = sub.add_parser("count-origin", help=argparse.SUPPRESS)
    p.add_argument("addr")
    p = sub.add_parser("tls", help="TLS termination: keep-alive HTTPS, full (ECDSA, RSA) and resumed "
                                   "handshakes, memory per idle TLS connection, sslscan check")
    add_common(p, rounds=2, duration=3.0)
    p.add_argument("--cases", default=TLS_DEFAULT_CASES,
                   help="comma list among keepalive, full-ecdsa, full-rsa, resumed, idle, scan, and the "
                        "plain-HTTP references plain-keepalive, plain-close (default %(default)s)")
    p.add_argument("--counts", default="2000,4000", help="idle: numbers of TLS connections (default %(default)s)")
    p.add_argument("--idle-rounds", type=int, default=1, help="idle: rounds (default %(default)s)")
    p.add_argument("--settle", type=float, default=1.0, help="idle: seconds to wait before reading RSS")
    p.add_argument("--tls-version", choices=["1.2", "1.3"],
                   help="fairlead-load --tls-version (default: both offered, TLS 1.3 negotiated)")
    sub.add_parser("tlsscan", help="sslscan check (bench/sslscan_check.py) of each proxy's TLS listener")
    h2bench.add_parser(sub, add_common)
    stickbench.add_parser(sub, add_common)
    fbcosts.add_parser(sub, add_common)
    p = sub.add_parser("report", help="regenerate BENCHMARKS.md from the latest results")
    p.add_argument("--out", help="write the markdown here instead of BENCHMARKS.md (charts still go to "
                                 "the results directory)")
    args = ap.parse_args()
    if args.results_dir:
        global RESULTS
        RESULTS = os.path.abspath(args.results_dir)

    if args.cmd == "report":
        return cmd_report(args)
    if args.cmd == "build":
        return cmd_build(args)
    if args.netns and args.cmd not in ("report", "build") and not os.environ.get(NETNS_ENV):
        enter_netns()
    if args.cmd == "count-origin":
        signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
        return count_origin(args.addr)

    def on_signal(signum, frame):
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, on_signal)
    raise_nofile()
    ctx = None
    try:
        ctx = Ctx(args)
        ctx.check_bins()
        # keep the orchestrator itself off the proxy's CPU
        try:
            os.sched_setaffinity(0, set(cpu_list(ctx.client_cpus)) | set(cpu_list(ctx.origin_cpus)))
        except OSError:
            pass
        fn = {"keepalive": sc_keepalive, "close": sc_close, "sizes": sc_sizes, "idle": sc_idle,
              "tail": sc_tail, "servers": sc_servers, "crosscheck": sc_crosscheck, "tls": sc_tls,
              "tlsscan": sc_tlsscan, "rules": sc_rules,
              "h2": lambda c, a: h2bench.sc_h2(sys.modules[__name__], c, a),
              "stick": lambda c, a: stickbench.sc_stick(sys.modules[__name__], c, a),
              "costs": lambda c, a: fbcosts.sc_costs(sys.modules[__name__], c, a)}[args.cmd]
        if args.quiet_load:
            ctx.quiet_wait = wait_quiet(args.quiet_load, args.quiet_max)
        res = fn(ctx, args)
        if ctx.quiet_wait:
            res["quiet_wait"] = ctx.quiet_wait
        if not args.no_save:
            save_result(res)
        return 0
    except BenchError as e:
        log("ERROR:", e)
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        if ctx is not None:
            ctx.cleanup()


if __name__ == "__main__":
    sys.exit(main())
