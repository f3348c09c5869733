#!/usr/bin/env bash
# `make demo`: explain a few requirements, then schedule the example cluster.
set -euo pipefail
xce="${1:-xce}"
cd "$(dirname "$0")/.."
cluster=examples/cluster.yaml

say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

say xce resreq "select[type==X86_64 && mem>4000] rusage[mem=2000]" --cluster $cluster
"$xce" resreq "select[type==X86_64 && mem>4000] rusage[mem=2000]" --cluster $cluster

say xce resreq "{2*{select[fast]} + 2*{-}} || {4*{select[mem>100]}}"
"$xce" resreq "{2*{select[fast]} + 2*{-}} || {4*{select[mem>100]}}"

say xce resreq "select[foo>1]" --cluster $cluster "   # a bad one: exit 2, with a caret"
"$xce" resreq "select[foo>1]" --cluster $cluster || echo "(exit $?)"

say xce schedule $cluster --explain
"$xce" schedule $cluster --explain
