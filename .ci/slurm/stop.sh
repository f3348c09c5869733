#!/usr/bin/env bash
# Stop what start.sh DIR started, by the process ids it wrote (never by name).
set -uo pipefail
dir=${1:?usage: stop.sh DIR}
[ -f "$dir/pids" ] || exit 0
# Jobs first, while the daemons run: slurmd leaves its job steps (slurmstepd and the
# job's processes) running when it stops.
export SLURM_CONF=$dir/slurm.conf
jobs=$(squeue -h -o %i 2>/dev/null || true)
if [ -n "$jobs" ]; then
    # shellcheck disable=SC2086
    scancel $jobs 2>/dev/null
    for _ in $(seq 100); do
        [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
        sleep 0.1
    done
fi
pids=$(cat "$dir/pids")
# shellcheck disable=SC2086
kill $pids 2>/dev/null
for _ in $(seq 50); do
    alive=0
    for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && exit 0
    sleep 0.1
done
# shellcheck disable=SC2086
kill -9 $pids 2>/dev/null
exit 0
