"""Summary of a bench/scaling.sh directory: one markdown table per costs case.

    python3 bench/fbscaling.py DIR        (DIR/tN/costs-*.json, one directory per thread count)

For each proxy and thread count: req/s, CPU µs per request (user + system), the proxy's CPU %
(saturated near 100 × threads), and req/s and CPU/req relative to the smallest thread count.
Also the Fairlead/HAProxy CPU-per-request ratio per thread count, the medians of the rounds
as `costs` computes them."""
import glob
import json
import os
import sys

ORDER = ("fairlead", "fairlead-before", "fairlead-uring", "haproxy", "nginx")


def load(d):
    """{threads: result} from DIR/t*/costs-*.json (the latest file of each directory)."""
    out = {}
    for sub in glob.glob(os.path.join(d, "t*")):
        files = sorted(glob.glob(os.path.join(sub, "costs-*.json")))
        if not files:
            continue
        with open(files[-1]) as f:
            res = json.load(f)
        out[int(res["machine"]["threads"]["proxy"])] = res
    return out


def case_table(key, by_threads):
    first = min(by_threads)
    rows, title = [], key
    for name in ORDER:
        base = None
        for n in sorted(by_threads):
            case = next((c for c in by_threads[n]["cases"] if c["key"] == key), None)
            s = (case or {}).get("summary", {}).get(name)
            if not s or not s.get("rounds_ok"):
                continue
            title = case.get("title", key)
            if n == first:
                base = s
            rel = ("×%.2f / ×%.2f" % (s["req_per_s"] / base["req_per_s"],
                                      s["cpu_us_per_req"] / base["cpu_us_per_req"])) if base else ""
            cpus = by_threads[n]["machine"]["cpus"]
            rows.append("| %s | %d | %s | %s | %s | %.2f (%.2f + %.2f) | %.0f | %s | %s |" % (
                name, n, cpus["proxy"], "{:,.0f}".format(s["req_per_s"]),
                "{:,.0f}".format(s["req_per_s"] / n), s["cpu_us_per_req"],
                s["cpu_user_us_per_req"], s["cpu_sys_us_per_req"], s["proxy_cpu_pct"],
                others_pct(case, name), rel))
    head = ["### %s" % title, "",
            "| proxy | threads | proxy CPUs | req/s | req/s per thread | CPU µs/req (user + sys) "
            "| proxy CPU %% | client / origin CPU %% | req/s, CPU/req vs %d thread(s) |" % first,
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    return head + rows + [""] + ratios(key, by_threads) + [""]


def others_pct(case, name):
    """Median client and origin CPU % over the proxy's rounds (machine_cpu of each run)."""
    vals = [r.get("machine_cpu") for r in case.get("runs", []) if r.get("proxy") == name]
    vals = [v for v in vals if v]
    if not vals:
        return ""
    med = lambda xs: sorted(xs)[len(xs) // 2]
    return "%.0f / %.0f" % (med([v["client_pct"] for v in vals]), med([v["origin_pct"] for v in vals]))


def ratios(key, by_threads):
    out = []
    for n in sorted(by_threads):
        case = next((c for c in by_threads[n]["cases"] if c["key"] == key), None)
        summ = (case or {}).get("summary", {})
        h = summ.get("haproxy")
        if not h or not h.get("rounds_ok"):
            continue
        parts = ["%s ×%.2f" % (name, summ[name]["cpu_us_per_req"] / h["cpu_us_per_req"])
                 for name in ("fairlead", "fairlead-before", "fairlead-uring", "nginx")
                 if summ.get(name, {}).get("rounds_ok")]
        out.append("- %d thread(s), CPU per request against HAProxy: %s" % (n, ", ".join(parts)))
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    by_threads = load(argv[1])
    if not by_threads:
        print("no costs results under %s/t*" % argv[1], file=sys.stderr)
        return 1
    any_res = by_threads[min(by_threads)]
    m = any_res["machine"]
    keys = [c["key"] for c in any_res["cases"]]
    md = ["## Scaling with proxy threads", "",
          "%d CPUs (%s), kernel %s; Fairlead %s; %s; %s." % (
              m["nproc"], m.get("cpu_model", "?"), m.get("kernel", "?"), m.get("fairlead_git", "?"),
              m.get("haproxy", "?"), m.get("nginx", "?")),
          "Rounds %s × %s s, %s connections." % (
              any_res["params"]["rounds"], any_res["params"]["duration_s"], any_res["params"]["conns"]),
          ""]
    for n in sorted(by_threads):
        c = by_threads[n]["machine"]["cpus"]
        md.append("- %d thread(s): proxy on %s, origin on %s, client on %s" % (
            n, c["proxy"], c["origin"], c["client"]))
    md.append("")
    for k in keys:
        md += case_table(k, by_threads)
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
