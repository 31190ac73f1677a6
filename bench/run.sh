#!/bin/sh
# bench/run.sh SCENARIO [options]: thin wrapper around bench/fairbench.py
# (keepalive, close, sizes, idle, tail, servers, crosscheck, tls, build, report).
# Global options (--proxies, --proxy-cpus, ...) go in FAIRBENCH_* variables
# or directly: python3 bench/fairbench.py [global options] SCENARIO [options].
exec python3 "$(dirname "$0")/fairbench.py" "$@"
