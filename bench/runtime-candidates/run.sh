#!/usr/bin/env bash
# Event-loop candidate comparison for Fairlead (see docs/architecture.md,
# "Event loop choice").
#
# Starts nginx (origin, 127.0.0.2:19080) and four single-threaded TCP
# forwarders on 127.0.0.1:
#   19001 haproxy (mode tcp, nbthread 1)   19002 fwd-tokio (current_thread)
#   19003 fwd-mio (epoll loop)             19004 fwd-uring (io_uring loop)
# then runs interleaved rounds of `wrk -t1 -c$CONNS -d${DURATION}s` against
# each, in keep-alive mode and in connection-per-request mode
# (`Connection: close`). CPU per request = delta(utime+stime of the proxy
# process, /proc/PID/stat) / requests completed (wrk).
#
# Loopback only; every load run is bounded by -d. Everything started here is
# stopped on exit.
#
# Env: ROUNDS (5) DURATION (5) CONNS (50) PROXY_CPU (1) LOAD_CPU (0) OUT (dir)
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROUNDS="${ROUNDS:-5}"
DURATION="${DURATION:-5}"
CONNS="${CONNS:-50}"
PROXY_CPU="${PROXY_CPU:-1}"
LOAD_CPU="${LOAD_CPU:-0}"
TMP=/tmp/fairlead-rt-bench
OUT="${OUT:-$TMP/results-$(date +%Y%m%d-%H%M%S)}"
BACKEND=127.0.0.2:19080
CLK_TCK="$(getconf CLK_TCK)"

mkdir -p "$TMP/nginx" "$OUT"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

echo "== build"
(cd "$HERE" && cargo build --release --quiet)
BIN="$HERE/target/release"

{
    echo "date: $(date -u +%FT%TZ)"
    echo "nproc: $(nproc)"
    echo "kernel: $(uname -r)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "io_uring_disabled: $(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo n/a)"
    echo "haproxy: $(haproxy -v | head -1)"
    echo "nginx: $(nginx -v 2>&1)"
    echo "wrk: $(wrk --version 2>&1 | head -1 || true)"
    echo "rounds=$ROUNDS duration=${DURATION}s conns=$CONNS proxy_cpu=$PROXY_CPU load_cpu=$LOAD_CPU"
} | tee "$OUT/machine.txt"

wait_port() { # host:port
    for _ in $(seq 1 50); do
        if (exec 3<>"/dev/tcp/${1%:*}/${1#*:}") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    return 1
}

echo "== start origin + proxies"
taskset -c "$LOAD_CPU" nginx -p "$TMP/nginx" -e stderr -c "$HERE/nginx.conf" \
    -g 'daemon off;' 2>"$OUT/nginx.err" &
PIDS+=($!)
wait_port "$BACKEND"

declare -A PID PORT
NAMES=(haproxy tokio mio uring)
PORT[haproxy]=19001; PORT[tokio]=19002; PORT[mio]=19003; PORT[uring]=19004

taskset -c "$PROXY_CPU" haproxy -f "$HERE/haproxy.cfg" -db 2>"$OUT/haproxy.err" &
PID[haproxy]=$!
for n in tokio mio uring; do
    taskset -c "$PROXY_CPU" "$BIN/fwd-$n" "127.0.0.1:${PORT[$n]}" "$BACKEND" 2>"$OUT/$n.err" &
    PID[$n]=$!
done
ACTIVE=()
for n in "${NAMES[@]}"; do
    PIDS+=("${PID[$n]}")
    if wait_port "127.0.0.1:${PORT[$n]}" && kill -0 "${PID[$n]}" 2>/dev/null; then
        ACTIVE+=("$n")
        echo "$n: pid ${PID[$n]} $(taskset -cp "${PID[$n]}" | sed 's/.*: /cpus /')"
    else
        echo "$n: NOT AVAILABLE ($(head -c 300 "$OUT/$n.err"))" | tee -a "$OUT/machine.txt"
    fi
done

cpu_ticks() { # "utime stime" (fields 14, 15, clock ticks) and on-CPU ns (schedstat, all threads)
    local ns
    ns=$(cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f", s }')
    awk -v ns="$ns" '{ sub(/^.*\) /, ""); print $12, $13, ns }' "/proc/$1/stat"
}

echo "== warm-up"
for n in "${ACTIVE[@]}"; do
    taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d1s "http://127.0.0.1:${PORT[$n]}/" >/dev/null
done

CSV="$OUT/runs.csv"
echo "round,mode,candidate,requests,seconds,rps,cpu_us,usr_us,sys_us,sched_us,cpu_us_per_req,errors" >"$CSV"
N=${#ACTIVE[@]}
for r in $(seq 1 "$ROUNDS"); do
    for mode in keepalive close; do
        hdr=()
        [ "$mode" = close ] && hdr=(-H 'Connection: close')
        for k in $(seq 0 $((N - 1))); do
            # Rotate the starting candidate each round to spread position bias.
            n="${ACTIVE[$(((k + r - 1) % N))]}"
            p="${PID[$n]}"
            read -r u0 s0 n0 < <(cpu_ticks "$p")
            out=$(taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNS" -d"${DURATION}s" "${hdr[@]}" \
                "http://127.0.0.1:${PORT[$n]}/")
            read -r u1 s1 n1 < <(cpu_ticks "$p")
            req=$(echo "$out" | awk '/requests in/ { print $1 }')
            secs=$(echo "$out" | awk '/requests in/ { sub(/s,$/, "", $4); print $4 }')
            rps=$(echo "$out" | awk '/Requests\/sec/ { print $2 }')
            errs=$(echo "$out" | awk '/Socket errors/ { gsub(/,/, ""); s = $4 + $6 + $8 + $10 } /Non-2xx/ { s += $NF } END { print s + 0 }')
            usr_us=$(((u1 - u0) * 1000000 / CLK_TCK))
            sys_us=$(((s1 - s0) * 1000000 / CLK_TCK))
            cpu_us=$((usr_us + sys_us))
            sched_us=$(((n1 - n0) / 1000))
            per=$(awk -v c="$cpu_us" -v q="$req" 'BEGIN { printf "%.3f", (q > 0 ? c / q : 0) }')
            echo "$r,$mode,$n,$req,$secs,$rps,$cpu_us,$usr_us,$sys_us,$sched_us,$per,$errs" | tee -a "$CSV"
            sleep 0.5
        done
    done
done

echo "== summary ($CSV)"
python3 - "$CSV" <<'EOF' | tee "$OUT/summary.md"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cands = []
for r in rows:
    if r["candidate"] not in cands:
        cands.append(r["candidate"])
order = [c for c in ["haproxy", "tokio", "mio", "uring"] if c in cands]
def fmt(v, d):
    return f"{statistics.median(v):.{d}f} ({min(v):.{d}f}-{max(v):.{d}f})"
for mode in ["keepalive", "close"]:
    rs = [r for r in rows if r["mode"] == mode]
    base = {r["round"]: float(r["cpu_us_per_req"]) for r in rs if r["candidate"] == "haproxy"}
    print(f"\n### {mode} (median of {len(base)} rounds, min-max in parentheses)\n")
    print("| candidate | req/s | CPU us/req | user us/req | sys us/req | schedstat us/req | proxy CPU busy | CPU us/req / HAProxy (same round) | errors |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in order:
        cr = [r for r in rs if r["candidate"] == c]
        rps = [float(r["rps"]) for r in cr]
        cpu = [float(r["cpu_us_per_req"]) for r in cr]
        ratio = [float(r["cpu_us_per_req"]) / base[r["round"]] for r in cr if base.get(r["round"])]
        usr = [float(r["usr_us"]) / float(r["requests"]) for r in cr]
        sy = [float(r["sys_us"]) / float(r["requests"]) for r in cr]
        sched = [float(r["sched_us"]) / float(r["requests"]) for r in cr]
        busy = [float(r["cpu_us"]) / (float(r["seconds"]) * 1e6) * 100 for r in cr]
        errs = sum(int(r["errors"]) for r in cr)
        rtxt = fmt(ratio, 3) if ratio else "n/a"
        print(f"| {c} | {fmt(rps, 0)} | {fmt(cpu, 2)} | {statistics.median(usr):.2f} | {statistics.median(sy):.2f} | {statistics.median(sched):.2f} | {statistics.median(busy):.0f}% | {rtxt} | {errs} |")
EOF
