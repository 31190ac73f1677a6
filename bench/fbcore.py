"""Shared machinery of bench/fairbench.py: constants, process and CPU accounting, the proxies'
configurations, running a proxy and the load client, medians and ratios, and result files.
"""

import datetime
import json
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

import fbmetrics
from fbconf import (haproxy_cfg, nginx_conf)


BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
RESULTS = os.path.join(BENCH, "results")
RELEASE = os.path.join(ROOT, "target", "release")
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

PROXIES = ("fairlead", "haproxy", "nginx")   # the default --proxies
# the same fairlead binary and configuration file, started with FAIRLEAD_IO_URING=1 in its
# environment: the io_uring worker instead of epoll, for the whole process
URING = "fairlead-uring"
URING_ENV = "FAIRLEAD_IO_URING"
KNOWN = ("fairlead", URING, "haproxy", "nginx")   # what --proxies accepts (with BEFORE: see below)
# --compare-bin-dir DIR: a second Fairlead build (DIR/fairlead) run as one more "proxy"
BEFORE = "fairlead-before"
NAMES = ("fairlead", URING, BEFORE, "haproxy", "nginx")   # display order
FAIRLEADS = ("fairlead", URING)   # the numerators of the ratio rows (Fairlead/X, Fairlead-uring/X)
HAPROXY_SYNTAX = ("fairlead", URING, BEFORE, "haproxy")   # loaded from the same HAProxy-syntax file
PRETTY = {"fairlead": "Fairlead", URING: "Fairlead-uring", "haproxy": "HAProxy", "nginx": "nginx",
          "direct": "direct (no proxy)", BEFORE: "Fairlead (before)"}
COLORS = {"fairlead": "#d62728", URING: "#9467bd", "haproxy": "#1f77b4", "nginx": "#2ca02c",
          "direct": "#555555", BEFORE: "#ff9896"}


def ratio_pairs(names):
    """The (a, b) pairs of the a/b ratio rows among the proxies present: Fairlead/Fairlead (before),
    Fairlead/HAProxy, Fairlead/nginx, then Fairlead-uring/Fairlead (io_uring against epoll, same
    binary), Fairlead-uring/HAProxy, Fairlead-uring/nginx."""
    out = []
    for a in FAIRLEADS:
        if a not in names:
            continue
        for b in (BEFORE, "fairlead", "haproxy", "nginx"):
            # Fairlead-uring/Fairlead (before) only without epoll Fairlead (--compare-uring)
            if b != a and b in names and not (a == URING and b == BEFORE and "fairlead" in names):
                out.append((a, b))
    return out


def pair_label(a, b):
    return "%s/%s" % (PRETTY[a], PRETTY[b])


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
        "http_reuse": ctx.http_reuse,
        "nofile": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
        "cpu_vulnerabilities": fbmetrics.vulnerabilities(),
        "netns": bool(os.environ.get(NETNS_ENV)),
        "io_uring_disabled": io_uring_disabled(),
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


def io_uring_count(pids):
    """io_uring instances held by the processes: file descriptors that are `anon_inode:[io_uring]`
    (a ring whose fd was closed after IORING_REGISTER_RING_FDS still shows in /proc/PID/maps).
    0 for a fairlead-uring run means the binary ran without io_uring (it ignored
    FAIRLEAD_IO_URING=1, or the kernel refused: /proc/sys/kernel/io_uring_disabled)."""
    n = 0
    for pid in pids:
        d = "/proc/%d/fd" % pid
        try:
            fds = os.listdir(d)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(os.path.join(d, fd)) == "anon_inode:[io_uring]":
                    n += 1
            except OSError:
                pass
        if n == 0:
            try:
                with open("/proc/%d/maps" % pid) as f:
                    if any("[io_uring]" in line for line in f):
                        n += 1
            except OSError:
                pass
    return n


def io_uring_disabled():
    """/proc/sys/kernel/io_uring_disabled (0: allowed, 1: only for a group, 2: off); None: no knob."""
    try:
        with open("/proc/sys/kernel/io_uring_disabled") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
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

    def spawn(self, cmd, logpath, cpus=None, env=None):
        if cpus:
            cmd = ["taskset", "-c", cpus] + cmd
        logf = open(logpath, "ab")
        p = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env,
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
# context: options, binaries, addresses

class Ctx:
    def __init__(self, args):
        env = os.environ.get
        self.args = args
        self.proxy_cpus = args.proxy_cpus or env("FAIRBENCH_PROXY_CPUS", "1")
        self.client_cpus = args.client_cpus or env("FAIRBENCH_CLIENT_CPUS", "0")
        self.origin_cpus = args.origin_cpus or env("FAIRBENCH_ORIGIN_CPUS", "0")
        self.threads = args.threads or int(env("FAIRBENCH_THREADS", "1"))
        self.http_reuse = getattr(args, "http_reuse", None)
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
        self.compare_uring = getattr(args, "compare_uring", False)
        if self.compare_bin_dir and BEFORE not in self.proxies:
            # the second build runs right after the first in every round
            i = self.proxies.index("fairlead") + 1 if "fairlead" in self.proxies else 0
            self.proxies.insert(i, BEFORE)
        for p in self.proxies:
            if p not in KNOWN and not (p == BEFORE and self.compare_bin_dir):
                raise BenchError("unknown proxy %r (choose from %s%s)" % (
                    p, ",".join(KNOWN), "" if self.compare_bin_dir else "; %s needs --compare-bin-dir" % BEFORE))
        if len(set(self.proxies)) != len(self.proxies):
            raise BenchError("--proxies names a proxy twice: %s" % ",".join(self.proxies))
        self.uring_warned = False
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
        env, self.env_shown = None, ""
        if name in (FAIRLEADS + (BEFORE,)):
            # fairlead-uring: the same binary and file, io_uring switched on for the whole process by
            # the environment (a `global io-uring on` would need a second file); the others run
            # without the variable even if this script inherited it
            env = {k: v for k, v in os.environ.items() if k != URING_ENV}
            if name == URING or (name == BEFORE and ctx.compare_uring):
                env[URING_ENV] = "1"
                self.env_shown = "%s=1" % URING_ENV
        if name in FAIRLEADS:
            cmd = [ctx.bin("fairlead"), "-f", cfg, "-q"]
        elif name == BEFORE:
            cmd = [os.path.join(ctx.compare_bin_dir, "fairlead"), "-f", cfg, "-q"]
        elif name == "haproxy":
            cmd = [ctx.haproxy, "-f", cfg, "-db"]
        with open(cfg, "w") as f:
            f.write(self.config_text)
        self.cfg = cfg
        self.proc = ctx.procs.spawn(cmd, ctx.path(tag + ".log"), cpus or ctx.proxy_cpus, env=env)
        self.cmdline = cmd
        try:
            wait_ready(ctx.proxy_host, ctx.proxy_port, "/?s=64", 8.0, self.proc, tls=bool(tls))
        except BenchError as e:
            out = "\n".join(tail_of(self.proc.logpath))
            ctx.procs.stop(self.proc)
            raise BenchError("%s failed to start: %s\n%s" % (name, e, out))
        # after the first request: whether the process holds io_uring instances (see io_uring_count)
        self.io_uring = io_uring_count(self.pids()) if name in FAIRLEADS + (BEFORE,) else None
        if name == URING and not self.io_uring and not ctx.uring_warned:
            ctx.uring_warned = True
            log("WARNING: %s holds no io_uring instance after serving a request: the binary ignored "
                "%s=1 (or the kernel refused io_uring, io_uring_disabled=%s); its numbers are epoll "
                "Fairlead's (recorded per run as io_uring=0)" % (name, URING_ENV, io_uring_disabled()))
        elif name != URING and self.io_uring and not (name == BEFORE and ctx.compare_uring):
            log("WARNING: %s holds %d io_uring instance(s) without %s=1" % (name, self.io_uring, URING_ENV))

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
    if getattr(proxy, "io_uring", None) is not None:
        # counted again after the run: a worker that creates its ring with its first connection
        # has one by now (one ring per worker thread: nbthread N shows N)
        r["io_uring"] = io_uring_count(proxy.pids()) if alive else proxy.io_uring
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
                    ([proxy.env_shown] if proxy.env_shown else [])
                    + ["taskset", "-c", ctx.proxy_cpus] + [os.path.basename(proxy.cmdline[0])]
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
    log("   %-14s %9.0f req/s  cpu %6s us/req (%5.1f%%)  p50 %.3f p99 %.3f p99.99 %.3f ms  "
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
        log("   %-14s tls: %s handshakes/s (%s full, %s resumed), cpu %s us/handshake, handshake p50 %s ms%s" % (
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
        if any("io_uring" in r for r in rs):
            m["io_uring"] = min(r.get("io_uring") or 0 for r in rs)   # 0: some round ran without it
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
    print("%-15s %11s %11s %7s %9s %9s %9s %10s %6s" % (
        "proxy", "req/s", "cpu us/req", "cpu %", "p50 ms", "p99 ms", "p99.99", "peak RSS", "errs"))
    for name, m in s.items():
        if not m.get("rounds_ok"):
            print("%-15s FAILED: %s" % (name, m.get("first_error")))
            continue
        print("%-15s %11.0f %11.2f %7.1f %9.3f %9.3f %9.3f %8.1fMi %6d" % (
            name, m["req_per_s"], m["cpu_us_per_req"] or 0, m["proxy_cpu_pct"] or 0, m["lat_ms"]["50"] or 0,
            m["lat_ms"]["99"] or 0, m["lat_ms"]["99.99"] or 0, (m["peak_rss_kib"] or 0) / 1024,
            m["errors"]))
    for name, m in s.items():
        if m.get("tls") and case.get("close"):
            t = m["tls"]
            print("%-15s TLS: %s handshakes/s (%s full, %s resumed), %s cpu us/handshake, handshake p50 %s ms; "
                  "%s" % (name, f0(t["hs_per_s"]), t["full"], t["resumed"], f2(t["cpu_us_per_hs"]),
                          f3(t["hs_lat_ms"]["50"]), negotiated_str(m.get("negotiated"))))
    for a, b in ratio_pairs(s):
        f, o = s[a], s[b]
        if f.get("rounds_ok") and o.get("rounds_ok") and b != BEFORE:
            print("%s: req/s x%s, cpu/req x%s" % (
                pair_label(a, b), fmt_ratio(ratio(f["req_per_s"], o["req_per_s"])),
                fmt_ratio(ratio(f["cpu_us_per_req"], o["cpu_us_per_req"]))))
    if s.get(URING, {}).get("rounds_ok") and not s[URING].get("io_uring"):
        print("NOTE: %s ran without io_uring (no io_uring instance in the process): epoll numbers" % URING)


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


def negotiated_str(n):
    if not n:
        return "–"
    if n.get("error"):
        return "probe failed: %s" % n["error"]
    return "%s %s, %s%s" % (n.get("version"), n.get("cipher"), n.get("group") or "?",
                            " (HelloRetryRequest)" if n.get("hrr") else "")


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


DISTURBED_PCT = 25.0  # "other" CPU above this (% of one CPU) during a run: someone else was busy
