#!/usr/bin/env bash
# Install Debian's Slurm (22.05 on bookworm) and munge, without starting their
# services: the test suite starts its own daemons in a temporary directory.
set -euo pipefail
# The daemons (slurmrestd for the site profile; slurmdbd and MariaDB's for the predict
# and priority profiles' accounting), and the client commands the tests run.
have() { for c in "$@"; do command -v "$c" >/dev/null || return 1; done; }
if have slurmctld slurmd slurmrestd slurmdbd munged sbatch squeue sinfo scancel scontrol \
    sdiag sprio sshare sacct sacctmgr mariadbd mariadb-install-db mariadb-admin; then
    exit 0
fi
[ "$(id -u)" = 0 ] || { echo "install.sh: run as root" >&2; exit 2; }
# A policy-rc.d answering 101 keeps the packages' scripts from starting services.
made_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    made_policy=1
fi
trap '[ "$made_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d' EXIT
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    slurmctld slurmd slurmrestd slurmdbd slurm-client munge mariadb-server >/dev/null
