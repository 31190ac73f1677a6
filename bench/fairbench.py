#!/usr/bin/env python3
"""fairbench: side-by-side benchmarks of Fairlead, HAProxy and nginx.

One subcommand per scenario (keepalive, close, sizes, idle, tail, servers,
crosscheck, tls) plus `build` (a private, recorded copy of the binaries) and
`report`, which regenerates BENCHMARKS.md from the latest result of each
scenario. Python 3 standard library only. See bench/README.md. The scenarios live
in modules: fbscen (HTTP), fbtls, fbrules (rules, crosscheck), h2bench, stickbench
and fbcosts; fbcore, fbconf and fbfmt hold what they share.

Every scenario starts one origin (fairlead-term) and then runs the proxies
one after another in interleaved rounds (fairlead, haproxy, nginx, fairlead,
...), each started fresh for its round, with the same client command. Fairlead
and HAProxy load the very same configuration file; nginx gets the equivalent
nginx.conf. All children are killed at the end, even on error.
"""


import argparse
import datetime
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time

import fbcore  # shared machinery (bench/fbcore.py)
import fbcosts  # the `costs` scenario (bench/fbcosts.py)
import fbmetrics  # TCP counters, thread scheduling, strace counts, CPU mitigations
import h2bench  # the `h2` scenario (bench/h2bench.py)
import stickbench  # the `stick` scenario (bench/stickbench.py)
# The names below are also the API of the scenario modules that receive this module as `fb`.
from fbcore import (BEFORE, BenchError, Ctx, DISTURBED_PCT, KNOWN, NAMES, NETNS_ENV, PRETTY, PROXIES,
                    RELEASE, RESULTS, ROOT, URING, RunningProxy, aggregate, binary_id, brief, clean_run,
                    compare_build, cpu_list, f0, f1, f2, f3, fmt_ratio, fr, git_state, latest,
                    loadavg1, log, med, mib, new_result, pair_label, paired_ratios, print_summary,
                    proxied_rounds, ratio, ratio_pairs, run_load, save_result)
from fbconf import haproxy_cfg
from fbfmt import (_esc, build_line, client_cmd_of, config_block, header_block, load_summary,
                   machine_line, other_line, proxy_label, rounds_line)
from fbtls import (TLS_DEFAULT_CASES, make_certs, report_tls, report_tlsscan, sc_tls, sc_tlsscan,
                   still_open_tls, tls_idle_case)
from fbscen import (report_close, report_idle, report_keepalive, report_keepalive_ab,
                    report_servers, report_sizes, report_tail, sc_close, sc_idle, sc_keepalive,
                    sc_servers, sc_sizes, sc_tail)
from fbrules import (RULES_HOSTS, RULES_PATHS, count_origin, report_crosscheck, report_rules,
                     sc_crosscheck, sc_rules)



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


def sc_idle_all(ctx, args):
    """`idle`: memory per idle keep-alive connection; with --tls-counts also per idle TLS
    connection (the `tls` scenario's idle case), in the same result, so that one run measures
    both without replacing the `tls` scenario's latest result."""
    tls_counts = [int(x) for x in (args.tls_counts or "").split(",") if x.strip()]
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if tls_counts and 2 * max(tls_counts) + 500 > nofile:
        raise BenchError("N=%d TLS needs more than the %d file descriptors allowed" % (max(tls_counts), nofile))
    res = sc_idle(ctx, args)
    if tls_counts:
        certs = make_certs(ctx)
        res["params"].update({"tls_counts": tls_counts, "alpn": "http/1.1",
                              "certs": {"ecdsa": {k: certs["ecdsa"][k] for k in ("command", "sha256_fingerprint")}}})
        args.idle_rounds = args.rounds
        for n in tls_counts:
            tls_idle_case(ctx, args, res, certs, n)
    return res


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
    ap.add_argument("--proxies", default=",".join(PROXIES),
                    help="comma list among %s (default %%(default)s); %s is the same fairlead binary and "
                         "configuration file started with %s=1 (io_uring)" % (
                             ",".join(KNOWN), URING, fbcore.URING_ENV))
    ap.add_argument("--proxy-cpus", help="taskset list for the proxy (env FAIRBENCH_PROXY_CPUS, default 1)")
    ap.add_argument("--client-cpus", help="taskset list for the client (env FAIRBENCH_CLIENT_CPUS, default 0)")
    ap.add_argument("--origin-cpus", help="taskset list for the origin (env FAIRBENCH_ORIGIN_CPUS, default 0)")
    ap.add_argument("--threads", type=int, help="proxy threads: nbthread / worker_processes "
                                                "(env FAIRBENCH_THREADS, default 1)")
    ap.add_argument("--http-reuse", choices=("never", "safe", "aggressive", "always"),
                    help="`http-reuse MODE` in the backend of every HTTP-mode configuration (Fairlead and "
                         "HAProxy; nginx always reuses its upstream connections). Default: none written, "
                         "which is `safe` for both")
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
    ap.add_argument("--compare-uring", action="store_true",
                    help="run fairlead-before with %s=1 (an io_uring A/B: compare it with "
                         "fairlead-uring)" % fbcore.URING_ENV)
    ap.add_argument("--quiet-load", type=float, help="before measuring, wait until the 1-minute load "
                                                     "average is below this (polled every 30 s)")
    ap.add_argument("--quiet-max", type=float, default=1200.0,
                    help="wait at most this many seconds for --quiet-load (default %(default)s); "
                         "the result records the load it started with")
    ap.add_argument("--retries", type=int, help="measure a run again, at most this many times, when other "
                                                "processes took more than %g%%%% of a CPU during it (env "
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
    p.add_argument("--tls-counts", help="also N idle TLS connections (ECDSA P-256, as `tls --cases idle`), "
                                        "comma list, e.g. 2000")
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
        RESULTS = fbcore.RESULTS = os.path.abspath(args.results_dir)

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
        fn = {"keepalive": sc_keepalive, "close": sc_close, "sizes": sc_sizes, "idle": sc_idle_all,
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
