#!/usr/bin/env bash
# bench/series.sh: the one-commit series of issue 13, epoll and io_uring against HAProxy and nginx.
#
#   bench/series.sh [options] [-- GLOBAL FAIRBENCH OPTIONS]
#
# Builds HEAD once (`fairbench.py build --from-head`, a private copy of the binaries), then runs
# every scenario of the series with that one --bin-dir and the proxies
# fairlead,fairlead-uring,haproxy,nginx (fairlead-uring: the same binary and configuration file,
# started with FAIRLEAD_IO_URING=1), then `report`:
#
#   keepalive           keep-alive at saturation (req/s, CPU/req, latency percentiles: the tail at
#                       saturation); its medians are the maxima `tail` takes its rates from
#   costs --netns       ka (saturated), ka50 (open loop at 50% of HAProxy's ka), tcp, close (HTTP),
#                       1m (1 MiB objects): user/sys CPU, segments, context switches, syscalls
#   close --mode both   one request per connection, mode tcp and mode http
#   sizes               the object sweep 64 B .. 16 MiB (1 MiB included): hits/s, Gbit/s; at most 2
#                       rounds (the whole sweep keeps the sizes section of the report complete)
#   tail --levels 80    open loop at 80% of each proxy's keep-alive maximum, paired direct runs
#                       (at least 5 s per run: -d includes the 1 s ramp-up)
#   idle --tls-counts   memory per idle keep-alive connection (N = 2000, 5000) and per idle TLS
#                       connection (N = 2000) in one result (the `tls` scenario's full result,
#                       handshakes and sslscan, stays the one the report shows)
#   report              BENCHMARKS.md (or $FAIRBENCH_RESULTS/BENCHMARKS.md, see below)
#
# Options:
#   -d SECONDS     measured seconds per run (default 3)
#   -r ROUNDS      interleaved rounds (default 3)
#   -c CONNS       client connections for keepalive, costs, close and tail (default: each
#                  scenario's own, 100)
#   --proxies L    default fairlead,fairlead-uring,haproxy,nginx
#   --bin-dir DIR  use these binaries instead of building HEAD (DIR/fairlead, fairlead-term,
#                  fairlead-load; a `fairbench.py build` directory records its commit)
#   --quiet-load L before each scenario wait (at most 120 s) for the 1-minute load to drop below L
#   --retries N    measure a disturbed run again at most N times (default 1), as long as the
#                  budget allows it
#   --budget MIN   minutes the measurements may take (default 25): a step whose re-measured runs
#                  could overrun it runs with --retries 0
#   --no-netns     costs without its own network namespace (needed when not root)
#   --dry-run      print the estimate and the commands, run nothing
# Everything after `--` goes to every fairbench.py command before the scenario: the machine
# layout, e.g. -- --threads 8 --proxy-cpus 2-9 --origin-cpus 10-17 --client-cpus 18-31.
#
# FAIRBENCH_RESULTS=DIR writes the results under DIR and the report to DIR/BENCHMARKS.md (a trial
# series that must not reach BENCHMARKS.md). Exits 1 if any step failed (the others still run).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
fb=(python3 "$here/fairbench.py")
dur=3
rounds=3
conns=""
proxies="fairlead,fairlead-uring,haproxy,nginx"
bin_dir=""
quiet=""
retries=1
budget_min=25
netns=1
dry=0
glob=()

usage() { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
        -d) dur=$2; shift 2 ;;
        -r) rounds=$2; shift 2 ;;
        -c) conns=$2; shift 2 ;;
        --proxies) proxies=$2; shift 2 ;;
        --bin-dir) bin_dir=$2; shift 2 ;;
        --quiet-load) quiet=$2; shift 2 ;;
        --retries) retries=$2; shift 2 ;;
        --budget) budget_min=$2; shift 2 ;;
        --no-netns) netns=0; shift ;;
        --dry-run) dry=1; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; glob=("$@"); break ;;
        *) echo "series.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

for v in "$dur" "$rounds" "$retries" "$budget_min" ${conns:+"$conns"}; do
    case "$v" in ''|*[!0-9]*) echo "series.sh: not a whole number: $v" >&2; exit 2 ;; esac
done
if [ "$netns" = 1 ] && [ "$(id -u)" != 0 ]; then
    echo "series.sh: not root: costs runs without --netns (its TCP counters then include other loopback traffic)" >&2
    netns=0
fi

# ---------------------------------------------------------------- estimate
# Per measured run: a 1 s warm-up, the run, and about 0.5 s to start, check and stop the proxy;
# one strace run per costs case and proxy: about 4 s. Calibrated on the 2-vCPU VM (-r 1 -d 1:
# keepalive 18 s, costs 126 s, close 17 s, sizes 57 s, tail 40 s, idle 38 s, 5 min in all).
# A disturbed run (someone else took CPU) is measured again, up to --retries times.
nprox=$(awk -F, '{print NF}' <<<"$proxies")
est=$(awk -v d="$dur" -v r="$rounds" -v p="$nprox" 'BEGIN {
    run = 1 + d + 0.5
    ka = r * p * run
    costs = 5 * r * p * run + 5 * p * 4                 # 5 cases, then one strace run per case and proxy
    cls = 2 * r * p * run
    sizes = 6 * (r < 2 ? r : 2) * p * run               # 64 1k 16k 256k 1m 16m
    td = d < 5 ? 5 : d
    tail = r * p * (2 * td + 0.5)                       # a direct and a proxied run each
    idle = p * 5                                        # N = 2000 and 5000
    tlsidle = p * 4 + 2                                 # N = 2000 TLS connections, certificates
    total = ka + costs + cls + sizes + tail + idle + tlsidle + 6 * 3   # origin and start-up per scenario
    printf "%d %d %d %d %d %d %d %d %d\n", total, ka, costs, cls, sizes, tail, idle, tlsidle, 5 * r * p * run
}')
# e_costs_runs: the part of costs that clean_run may measure again (not the strace runs)
read -r total e_ka e_costs e_close e_sizes e_tail e_idle e_tls e_costs_runs <<<"$est"
# keepalive, costs, close and sizes measure a disturbed run again; tail and idle never do
worst=$(( total + (e_ka + e_costs_runs + e_close + e_sizes) * retries ))
if [ -n "$quiet" ]; then worst=$(( worst + 6 * 120 )); fi
budget=$(( budget_min * 60 ))
if [ "$worst" -gt "$budget" ]; then worst=$(( total > budget ? total : budget )); fi
if [ "$total" -gt "$budget" ]; then
    echo "series.sh: WARNING: the estimate exceeds the budget of $budget_min min (--budget): disturbed runs are measured again only while time is left" >&2
fi
printf 'series.sh: %s rounds x %s s, proxies %s%s\n' "$rounds" "$dur" "$proxies" \
    "${glob[*]:+, global options: ${glob[*]}}"
printf 'estimate: about %d min %02d s of measurement (keepalive %ds, costs %ds, close %ds, sizes %ds, tail %ds, idle %ds + TLS %ds);\n' \
    $(( total / 60 )) $(( total % 60 )) "$e_ka" "$e_costs" "$e_close" "$e_sizes" "$e_tail" "$e_idle" "$e_tls"
printf '          at most about %d min if runs are disturbed and measured again (--retries %s while the %d min budget allows)%s\n' \
    $(( (worst + 59) / 60 )) "$retries" "$budget_min" "${quiet:+ or scenarios wait for a quiet machine}"
if [ -z "$bin_dir" ]; then
    printf '          plus the build of HEAD (a few seconds when target/fairbench/target is warm, 10-15 min cold on 2 CPUs)\n'
fi

# ---------------------------------------------------------------- the steps
failed=()
step() {
    # step NAME COMMAND...: runs it (or prints it with --dry-run), remembers a failure
    local name=$1; shift
    printf '\n== %s: %s\n' "$name" "$*" >&2
    [ "$dry" = 1 ] && return 0
    local t0=$SECONDS
    if "$@"; then
        printf '== %s done in %d s\n' "$name" $(( SECONDS - t0 )) >&2
    else
        printf '== %s FAILED (status %d) after %d s\n' "$name" $? $(( SECONDS - t0 )) >&2
        failed+=("$name")
    fi
}

if [ -z "$bin_dir" ]; then
    if [ "$dry" = 1 ]; then
        bin_dir="target/fairbench/<commit>-<time>"
        step build "${fb[@]}" build --from-head
    else
        printf '\n== build: %s build --from-head\n' "${fb[*]}" >&2
        # the last line of stdout is the directory of the copied binaries
        bin_dir=$("${fb[@]}" build --from-head | tail -n 1)
        if [ -z "$bin_dir" ] || [ ! -x "$bin_dir/fairlead" ]; then
            echo "series.sh: build failed: nothing measured" >&2
            exit 1
        fi
    fi
fi
case "$bin_dir" in /*) ;; *) bin_dir="$root/$bin_dir" ;; esac
if [ "$dry" != 1 ] && [ ! -x "$bin_dir/fairlead" ]; then
    echo "series.sh: $bin_dir/fairlead missing" >&2
    exit 1
fi

g=(--bin-dir "$bin_dir" --proxies "$proxies")
if [ -n "$quiet" ]; then g+=(--quiet-load "$quiet" --quiet-max 120); fi
g+=("${glob[@]}")
common=(--rounds "$rounds" -d "$dur")
c=()
if [ -n "$conns" ]; then c=(-c "$conns"); fi
ns=()
if [ "$netns" = 1 ]; then ns=(--netns); fi

# the budget: the estimates of the steps still to run, plus this step's re-measured runs, must fit
# in what is left of it; otherwise this step measures every run once
t_start=$SECONDS
remaining=$total
r_for() {
    # r_for EST RETRYABLE: sets r, the --retries of a step estimated at EST s, RETRYABLE s of which
    # may be measured again, and counts the step off the remaining estimate (no subshell: it
    # updates `remaining`)
    local left=$(( budget - (SECONDS - t_start) ))
    r=$retries
    if [ "$retries" -gt 0 ] && [ $(( remaining + $2 * retries )) -gt "$left" ]; then
        r=0
        printf '\n(series.sh: %d s of the budget left, %d s of steps to go: the next step runs with --retries 0)\n' \
            "$left" "$remaining" >&2
    fi
    remaining=$(( remaining - $1 ))
}

r_for "$e_ka" "$e_ka"
step keepalive "${fb[@]}" "${g[@]}" --retries "$r" keepalive "${common[@]}" "${c[@]}"
r_for "$e_costs" "$e_costs_runs"
step costs "${fb[@]}" "${g[@]}" --retries "$r" "${ns[@]}" costs --cases ka,ka50,tcp,close,1m "${common[@]}" "${c[@]}"
r_for "$e_close" "$e_close"
step close "${fb[@]}" "${g[@]}" --retries "$r" close --mode both "${common[@]}" "${c[@]}"
r_for "$e_sizes" "$e_sizes"
step sizes "${fb[@]}" "${g[@]}" --retries "$r" sizes --rounds $(( rounds < 2 ? rounds : 2 )) -d "$dur"
# the rates come from the newest keepalive result: the one above (unless it failed); -d counts the
# 1 s ramp-up, which the percentiles leave out: at least 5 s so that p99.99 rests on some samples
step tail "${fb[@]}" "${g[@]}" tail --levels 80 --rounds "$rounds" -d $(( dur < 5 ? 5 : dur )) "${c[@]}"
step idle "${fb[@]}" "${g[@]}" idle --counts 2000,5000 --tls-counts 2000
if [ -n "${FAIRBENCH_RESULTS:-}" ]; then
    step report "${fb[@]}" report --out "$FAIRBENCH_RESULTS/BENCHMARKS.md"
else
    step report "${fb[@]}" report
fi

[ "$dry" = 1 ] && exit 0
el=$(( SECONDS - t_start ))
printf '\nseries.sh: %d min %02d s (estimate %d min %02d s plus the build); binaries %s\n' \
    $(( el / 60 )) $(( el % 60 )) $(( total / 60 )) $(( total % 60 )) "$bin_dir" >&2
if [ ${#failed[@]} -gt 0 ]; then
    echo "series.sh: FAILED steps: ${failed[*]}" >&2
    exit 1
fi
