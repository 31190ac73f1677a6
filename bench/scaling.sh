#!/usr/bin/env bash
# bench/scaling.sh: how CPU per request and req/s move as the proxies get more threads, on a
# machine with enough cores for the proxy, the origin and the client to have CPUs of their own.
#
#   bench/scaling.sh --bin-dir DIR [--threads "1 2 4 8"] [--cases ka,tcp] [-r 3] [-d 4] [-c 400]
#                    [--proxies L] [--results-dir DIR] [-- GLOBAL FAIRBENCH OPTIONS]
#
# For each N of --threads it runs `fairbench.py costs --no-strace` once with --threads N (nbthread
# for Fairlead and HAProxy, worker_processes for nginx) and this layout, from the CPUs online:
#   proxy   CPUs 1..N (CPU 0 is left to interrupts and housekeeping)
#   origin  the next half of the rest (at least 1), fairlead-term with one thread per CPU
#   client  the CPUs after that (the larger half), fairlead-load with one thread per CPU
# then writes RESULTS/scaling.md (bench/fbscaling.py): per proxy and case, req/s, CPU µs per
# request (user + system) and the proxy's CPU % for each N, and the ratio to N = the first one.
# A proxy whose CPU % stays well below 100 × N was not saturated: the client or the origin was
# the limit (look at their CPU % in the JSON: machine_cpu). Needs N + 2 CPUs at least.
#
# Options:
#   --threads L     thread counts (default "1 2 4 8", those that fit)
#   --cases L       costs cases (default ka,tcp; ka50, close and 1m work too)
#   -r ROUNDS       interleaved rounds (default 3)
#   -d SECONDS      measured seconds per run (default 4)
#   -c CONNS        client connections (default 400)
#   --proxies L     default fairlead,fairlead-uring,haproxy,nginx
#   --bin-dir DIR   the binaries (a `fairbench.py build` directory); required
#   --results-dir D where the results and scaling.md go (default bench/results/scaling-DATE)
# Exits 1 if a step failed (the others still run).
set -u

here=$(cd "$(dirname "$0")" && pwd)
threads="1 2 4 8"
cases="ka,tcp"
rounds=3
dur=4
conns=400
proxies="fairlead,fairlead-uring,haproxy,nginx"
bin_dir=""
out=""
glob=()
while [ $# -gt 0 ]; do
    case "$1" in
        --threads) threads=$2; shift 2 ;;
        --cases) cases=$2; shift 2 ;;
        -r) rounds=$2; shift 2 ;;
        -d) dur=$2; shift 2 ;;
        -c) conns=$2; shift 2 ;;
        --proxies) proxies=$2; shift 2 ;;
        --bin-dir) bin_dir=$2; shift 2 ;;
        --results-dir) out=$2; shift 2 ;;
        --) shift; glob=("$@"); break ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "scaling.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ -n "$bin_dir" ] || { echo "scaling.sh: --bin-dir DIR is required" >&2; exit 2; }
[ -n "$out" ] || out="$here/results/scaling-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$out"
ncpu=$(nproc)
status=0
for n in $threads; do
    rest=$((ncpu - 1 - n))
    if [ "$rest" -lt 2 ]; then
        echo "scaling.sh: skipping $n threads: $ncpu CPUs leave $rest for the origin and the client" >&2
        continue
    fi
    norigin=$((rest / 2)); [ "$norigin" -ge 1 ] || norigin=1
    proxy_cpus="1-$n"; [ "$n" -eq 1 ] && proxy_cpus=1
    origin_cpus="$((n + 1))-$((n + norigin))"; [ "$norigin" -eq 1 ] && origin_cpus=$((n + 1))
    client_cpus="$((n + norigin + 1))-$((ncpu - 1))"
    echo "== $n thread(s): proxy $proxy_cpus, origin $origin_cpus, client $client_cpus" >&2
    python3 "$here/fairbench.py" --bin-dir "$bin_dir" --proxies "$proxies" --threads "$n" \
        --proxy-cpus "$proxy_cpus" --origin-cpus "$origin_cpus" --client-cpus "$client_cpus" \
        --results-dir "$out/t$n" "${glob[@]}" \
        costs --no-strace --cases "$cases" --rounds "$rounds" -d "$dur" -c "$conns" || status=1
    python3 "$here/fbscaling.py" "$out" > "$out/scaling.md" || status=1
done
cat "$out/scaling.md" 2>/dev/null
exit $status
