"""Kernel-side measurements for bench/fairbench.py (issue 13, "measure first").

Taken around every measured client run (cheap /proc reads, no tracing):

* TCP counters of the network namespace (`/proc/net/snmp`, the numbers
  `nstat` shows): segments sent and received, active and passive opens,
  retransmissions. Per request, and backend connects per client connection
  (ActiveOpens minus the client's own connects, over the client's
  connects). Exact only when nothing else uses TCP in the namespace: run
  fairbench with `--netns` (a private network namespace with its own
  loopback; needs root), otherwise other people's loopback traffic counts.
* The proxy's threads (`/proc/PID/task/*`): utime and stime per thread,
  voluntary and involuntary context switches (`status`) and run delay, the
  time a runnable thread waited for a CPU (`schedstat`, second field). The
  *worker* is the thread that ran longest during the run; helper threads'
  CPU is summed apart.

And once per proxy and case, in a separate unmeasured run:

* `strace -f -c` attached to the proxy (nginx: master and workers) for a
  short client run: calls per request and per client connection of every
  system call, `epoll_wait` (and `epoll_pwait`) in particular. strace slows
  every system call down, so the request rate is much lower than in the
  measured run; the counts per request are what to read.

Also the CPU vulnerability mitigations in force
(`/sys/devices/system/cpu/vulnerabilities`), which set the price of a
system call.
"""

import os
import re
import signal
import subprocess
import time

VULN_DIR = "/sys/devices/system/cpu/vulnerabilities"
TCP_KEYS = ("ActiveOpens", "PassiveOpens", "InSegs", "OutSegs", "RetransSegs", "OutRsts", "EstabResets")
EPOLL_WAITS = ("epoll_wait", "epoll_pwait", "epoll_pwait2")


def vulnerabilities():
    """{name: state} of /sys/devices/system/cpu/vulnerabilities (empty if absent)."""
    out = {}
    try:
        names = sorted(os.listdir(VULN_DIR))
    except OSError:
        return out
    for n in names:
        try:
            with open(os.path.join(VULN_DIR, n)) as f:
                out[n] = f.read().strip()
        except OSError:
            pass
    return out


def vulnerabilities_line(v):
    """One line for the report: the mitigations in force and anything vulnerable."""
    if not v:
        return "CPU vulnerability mitigations: not recorded."
    mit = ["%s (%s)" % (k, s.split(":", 1)[1].strip() if ":" in s else s)
           for k, s in v.items() if s.startswith("Mitigation")]
    vul = [k for k, s in v.items() if s.startswith("Vulnerable")]
    na = sum(1 for s in v.values() if s.startswith("Not affected"))
    return "CPU vulnerability mitigations in force: %s; vulnerable: %s; not affected: %d of %d." % (
        "; ".join(mit) or "none", ", ".join(vul) or "none", na, len(v))


# --------------------------------------------------------------------------
# TCP counters (nstat's source)

def tcp_counters():
    """The Tcp: line of /proc/net/snmp as a dict of ints."""
    with open("/proc/net/snmp") as f:
        rows = [l.split() for l in f if l.startswith("Tcp:")]
    if len(rows) < 2:
        return {}
    return {k: int(v) for k, v in zip(rows[0][1:], rows[1][1:]) if k in TCP_KEYS}


def tcp_delta(before, after, responses, client_conns):
    """Per-request TCP numbers over a run; client_conns: connections the client opened."""
    d = {k: after.get(k, 0) - before.get(k, 0) for k in TCP_KEYS}
    out = {"delta": d}
    if responses:
        out["segs_per_req"] = round(d["OutSegs"] / responses, 3)
        out["retrans_per_req"] = round(d["RetransSegs"] / responses, 5)
    if client_conns:
        backend = d["ActiveOpens"] - client_conns
        out["client_conns"] = client_conns
        out["backend_connects"] = backend
        out["backend_per_client_conn"] = round(backend / client_conns, 4)
    return out


# --------------------------------------------------------------------------
# threads of the proxy

def _read(path):
    with open(path) as f:
        return f.read()


def thread_snapshot(pids):
    """{(pid, tid): {...}} for every thread of the given processes."""
    snap = {}
    for pid in pids:
        try:
            tids = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for t in tids:
            base = "/proc/%d/task/%s/" % (pid, t)
            try:
                stat = _read(base + "stat")
                status = _read(base + "status")
                sched = _read(base + "schedstat").split()
            except OSError:
                continue
            comm = stat[stat.find("(") + 1:stat.rfind(")")]
            fields = stat.rsplit(")", 1)[1].split()
            ctx = dict(re.findall(r"^(voluntary_ctxt_switches|nonvoluntary_ctxt_switches):\s+(\d+)",
                                  status, re.M))
            snap[(pid, int(t))] = {
                "comm": comm, "utime": int(fields[11]), "stime": int(fields[12]),
                "run_ns": int(sched[0]) if sched else 0, "delay_ns": int(sched[1]) if len(sched) > 1 else 0,
                "vcsw": int(ctx.get("voluntary_ctxt_switches", 0)),
                "nvcsw": int(ctx.get("nonvoluntary_ctxt_switches", 0)),
            }
    return snap


def thread_delta(before, after, wall_s, responses, clk_tck):
    """The worker (the thread that ran longest) and the helpers, over the run."""
    rows = []
    for key, a in after.items():
        b = before.get(key)
        if b is None:
            b = dict(a, utime=0, stime=0, run_ns=0, delay_ns=0, vcsw=0, nvcsw=0)
        rows.append({"tid": key[1], "comm": a["comm"],
                     "run_ms": (a["run_ns"] - b["run_ns"]) / 1e6,
                     "delay_ms": (a["delay_ns"] - b["delay_ns"]) / 1e6,
                     "cpu_ms": 1000.0 * (a["utime"] + a["stime"] - b["utime"] - b["stime"]) / clk_tck,
                     "vcsw": a["vcsw"] - b["vcsw"], "nvcsw": a["nvcsw"] - b["nvcsw"]})
    if not rows:
        return {}
    rows.sort(key=lambda r: -r["run_ms"])
    w = rows[0]
    helpers = rows[1:]
    out = {"threads": len(rows),
           "worker": {"comm": w["comm"], "run_ms": round(w["run_ms"], 1), "delay_ms": round(w["delay_ms"], 2),
                      "nvcsw": w["nvcsw"], "vcsw": w["vcsw"]},
           "helpers_run_ms": round(sum(r["run_ms"] for r in helpers), 2),
           "helpers_delay_ms": round(sum(r["delay_ms"] for r in helpers), 2),
           "helpers_nvcsw": sum(r["nvcsw"] for r in helpers)}
    if wall_s > 0:
        out["worker"]["nvcsw_per_s"] = round(w["nvcsw"] / wall_s, 1)
        out["worker"]["vcsw_per_s"] = round(w["vcsw"] / wall_s, 1)
        out["worker"]["delay_pct"] = round(100.0 * w["delay_ms"] / 1000.0 / wall_s, 3)
    if responses:
        out["worker"]["delay_us_per_req"] = round(1000.0 * w["delay_ms"] / responses, 4)
        out["worker"]["vcsw_per_req"] = round(w["vcsw"] / responses, 4)
    return out


class RunProbe:
    """Snapshots around one measured run: start() before, finish() after."""

    def __init__(self, pids):
        self.pids = list(pids)
        self.t0 = time.monotonic()
        self.tcp0 = tcp_counters()
        self.th0 = thread_snapshot(self.pids)

    def finish(self, responses, client_conns, clk_tck):
        wall = time.monotonic() - self.t0
        return {"tcp": tcp_delta(self.tcp0, tcp_counters(), responses, client_conns),
                "sched": thread_delta(self.th0, thread_snapshot(self.pids), wall, responses, clk_tck)}


# --------------------------------------------------------------------------
# strace -f -c

STRACE_ROW = re.compile(r"^\s*([\d.]+)\s+([\d.]+)\s+(\d+)\s+(\d+)\s+(\d+)?\s*([a-z_0-9]+)\s*$")


def parse_strace_c(text):
    """{syscall: calls} from `strace -c` output (the table's rows, without the total)."""
    calls = {}
    for line in text.splitlines():
        m = STRACE_ROW.match(line)
        if m and m.group(6) != "total":
            calls[m.group(6)] = calls.get(m.group(6), 0) + int(m.group(4))
    return calls


def strace_run(pids, logpath, run, attach_timeout=5.0):
    """Attaches `strace -f -c` to pids, calls run() (a client run returning its load summary),
    detaches and returns (calls per syscall, summary). None if strace is missing."""
    cmd = ["strace", "-f", "-c", "-o", logpath]
    for p in pids:
        cmd += ["-p", str(p)]
    try:
        st = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    except OSError:
        return None
    try:
        # strace prints one "Process N attached" line per thread; wait for at least one per pid
        seen, deadline = 0, time.monotonic() + attach_timeout
        while seen < len(pids) and time.monotonic() < deadline:
            line = st.stderr.readline()
            if not line:
                break
            seen += "attached" in line
        summary = run()
    finally:
        st.send_signal(signal.SIGINT)
        try:
            st.wait(timeout=20)
        except subprocess.TimeoutExpired:
            st.kill()
            st.wait()
    with open(logpath) as f:
        return parse_strace_c(f.read()), summary


def syscall_rates(calls, responses, conns):
    """Calls per request and per client connection, total and by syscall (sorted, top ones)."""
    total = sum(calls.values())
    ep = sum(calls.get(k, 0) for k in EPOLL_WAITS)
    # the io_uring worker's wait and submit call (fairlead-uring); 0 for an epoll proxy
    ue = calls.get("io_uring_enter", 0)
    per = lambda n, d: round(n / d, 4) if d else None
    top = sorted(calls.items(), key=lambda kv: -kv[1])
    return {"responses": responses, "client_conns": conns, "total_calls": total,
            "per_req": per(total, responses), "per_conn": per(total, conns),
            "epoll_wait_per_req": per(ep, responses), "epoll_wait_per_conn": per(ep, conns),
            "io_uring_enter_per_req": per(ue, responses),
            "by_syscall_per_req": {k: per(v, responses) for k, v in top[:16]},
            "calls": dict(top)}


def aggregate_extra(rs, med):
    """Medians across rounds of the kernel-side numbers of measured runs rs."""
    def g(r, *path):
        for k in path:
            r = (r or {}).get(k)
        return r
    keys = {"segs_per_req": ("tcp", "segs_per_req"), "retrans_per_req": ("tcp", "retrans_per_req"),
            "backend_per_client_conn": ("tcp", "backend_per_client_conn"),
            "worker_nvcsw_per_s": ("sched", "worker", "nvcsw_per_s"),
            "worker_vcsw_per_req": ("sched", "worker", "vcsw_per_req"),
            "worker_delay_pct": ("sched", "worker", "delay_pct"),
            "worker_delay_us_per_req": ("sched", "worker", "delay_us_per_req"),
            "helpers_run_ms": ("sched", "helpers_run_ms")}
    out = {}
    for name, path in keys.items():
        v = med([g(r, *path) for r in rs])
        if v is not None:
            out[name] = v
    return out
