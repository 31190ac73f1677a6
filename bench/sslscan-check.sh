#!/bin/sh
# sslscan-check.sh HOST:PORT [--sni NAME] [--strict-groups] [--json FILE] [--xml FILE]
# Fails (exit 1) unless the TLS listener at HOST:PORT matches Mozilla's "intermediate" profile:
# TLS 1.2+ only, intermediate ciphers only, no weak key exchange. Exit 2: no verdict.
# See bench/sslscan_check.py (the implementation) and bench/README.md.
exec python3 "$(dirname "$0")/sslscan_check.py" "$@"
