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
# marked_pids DIR: processes holding a file of DIR/log open, and processes whose
# environment has SLURM_CONF=DIR/slurm.conf and a SLURM_JOB_ID.
marked_pids() {
    local real conf f pid
    real=$(realpath -m "$1")
    conf=$real/slurm.conf
    find /proc/[0-9]*/fd -maxdepth 1 -lname "$real/log/*" 2>/dev/null | cut -d/ -f3
    for f in $(grep -lzx "SLURM_CONF=$conf" /proc/[0-9]*/environ 2>/dev/null); do
        pid=${f#/proc/}
        pid=${pid%/environ}
        grep -qz '^SLURM_JOB_ID=' "$f" 2>/dev/null && echo "$pid"
    done
}
pids=$(cat "$dir/pids")
# And what the jobs left: a slurmstepd (it keeps a log file of DIR/log open; its
# environment is empty) and a job's processes (this SLURM_CONF and a SLURM_JOB_ID in
# their environment). Found by those marks, stopped by process id.
pids="$pids $(marked_pids "$dir")"
# alive PID: the process exists and is no zombie (kill -0 succeeds on a zombie, which
# is dead but not yet reaped by its parent).
alive() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [ "${stat%% *}" != Z ]
}
# gone: wait (up to 5 s) until none of $pids is alive.
gone() {
    local pid left
    for _ in $(seq 50); do
        left=0
        for pid in $pids; do alive "$pid" && left=1; done
        [ "$left" = 0 ] && return 0
        sleep 0.1
    done
    return 1
}
# The predict profile's accounting (DIR/pids-accounting: mariadbd, then slurmdbd) stops
# after the rest, slurmdbd before the database it writes to: those pids are left out
# here and stopped in reverse order below.
later=""
if [ -f "$dir/pids-accounting" ]; then
    later=$(cat "$dir/pids-accounting")
    rest=""
    for pid in $pids; do
        # shellcheck disable=SC2086
        case " $(echo $later) " in *" $pid "*) ;; *) rest="$rest $pid" ;; esac
    done
    pids=$rest
fi
# shellcheck disable=SC2086
kill $pids 2>/dev/null
if ! gone; then
    # shellcheck disable=SC2086
    kill -9 $pids 2>/dev/null
    # Until SIGKILL has taken effect, so that whoever checks next finds nothing alive.
    gone
fi
[ -n "$later" ] || exit 0
for pid in $(echo "$later" | tac); do
    pids=$pid
    kill "$pid" 2>/dev/null
    # A database shuts down in a second or two here; up to 30 s before SIGKILL.
    for _ in 1 2 3 4 5 6; do gone && continue 2; done
    kill -9 "$pid" 2>/dev/null
    gone
done
exit 0
