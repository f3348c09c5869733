#!/usr/bin/env bash
# `make demo`: explain a requirement, schedule the example cluster once, then replay the
# bundled synthetic workload (3,000 jobs) on it and write out/ with the plots.
set -euo pipefail
xce="${1:-xce}"
cd "$(dirname "$0")/.."
cluster=examples/cluster.yaml

say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

say xce resreq "{2*{select[fast]} + 2*{-}} || {4*{select[mem>100]}}" --cluster $cluster
"$xce" resreq "{2*{select[fast]} + 2*{-}} || {4*{select[mem>100]}}" --cluster $cluster

say xce schedule $cluster --explain
"$xce" schedule $cluster --explain

say xce simulate --workload examples/workload.jsonl --cluster $cluster --out out --force
"$xce" simulate --workload examples/workload.jsonl --cluster $cluster --out out --force
