#!/usr/bin/env bash
# Start a one-machine Slurm in DIR (created): munged, slurmctld, and one slurmd -N per
# node; six nodes of two shapes (n1-n4: 8 CPUs 16000 MiB, features intel,ib;
# g1-g2: 16 CPUs 64000 MiB, features amd,gpu); backfill every 5 s (bf_interval=5) so
# a test need not wait 30 s. PROFILE (default "default"):
#   default  priority/basic; partitions batch (n*, default) and big (g*, higher tier)
#            that share no node (tests/test_real_slurm.py).
#   site     priority/multifactor with age, job size and partition weights (22.05
#            ignores the age weight without slurmdbd, which this has not);
#            g1-g2 have 4 GPUs each (gres.conf: a count, and four stand-in device
#            files, which 22.05 requires); partitions batch (n1-n4, default, tier 1)
#            and prio (n3-n4, g1-g2, tier 2) overlap on n3-n4
#            (tests/test_real_slurm_site.py); slurmrestd on DIR/rest.sock. Other
#            ports than default's, so the two can run at once.
# Writes DIR/slurm.conf (and DIR/gres.conf), DIR/env (source it for SLURM_CONF) and
# DIR/pids (one process id a line), which stop.sh reads. Run as root.
set -euo pipefail
dir=$(realpath -m "${1:?usage: start.sh DIR [default|site]}")
profile=${2:-default}
case $profile in
    default) port=16817 node_ports=16901-16906 ;;
    site) port=16827 node_ports=16911-16916 ;;
    *) echo "start.sh: unknown profile $profile (default, site)" >&2; exit 2 ;;
esac
mkdir -p "$dir"/{state,spool,log,munge}
chmod 700 "$dir/munge"
host=$(hostname -s)
: > "$dir/pids"

dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/seed" --force
sleep 0.5
cat "$dir/munge/munged.pid" >> "$dir/pids"

first=${node_ports%-*}
cat > "$dir/slurm.conf" <<CONF
ClusterName=xce
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdSpoolDir=$dir/spool/%n
StateSaveLocation=$dir/state
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=5
SlurmdParameters=config_overrides
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
CONF
if [ "$profile" = default ]; then
    cat >> "$dir/slurm.conf" <<CONF
NodeName=n[1-4] NodeHostname=$host CPUs=8 RealMemory=16000 Feature=intel,ib Port=[$first-$((first + 3))]
NodeName=g[1-2] NodeHostname=$host CPUs=16 RealMemory=64000 Feature=amd,gpu Port=[$((first + 4))-$((first + 5))]
PartitionName=batch Nodes=n[1-4] Default=YES MaxTime=60 PriorityTier=1 State=UP
PartitionName=big Nodes=g[1-2] MaxTime=120 PriorityTier=2 State=UP
CONF
else
    cat >> "$dir/slurm.conf" <<CONF
DebugFlags=Backfill,BackfillMap
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightJobSize=2000
PriorityWeightPartition=4000
PriorityWeightFairshare=0
PriorityWeightQOS=0
PriorityMaxAge=2
PriorityCalcPeriod=1
GresTypes=gpu
NodeName=n[1-4] NodeHostname=$host CPUs=8 RealMemory=16000 Feature=intel,ib Port=[$first-$((first + 3))]
NodeName=g[1-2] NodeHostname=$host CPUs=16 RealMemory=64000 Feature=amd,gpu Gres=gpu:4 Port=[$((first + 4))-$((first + 5))]
PartitionName=batch Nodes=n[1-4] Default=YES MaxTime=60 PriorityTier=1 PriorityJobFactor=1 State=UP
PartitionName=prio Nodes=n[3-4],g[1-2] MaxTime=120 PriorityTier=2 PriorityJobFactor=2 State=UP
CONF
    # Counts, no autodetection. 22.05's slurmd drops a GPU without File= ("Removing
    # file-less GPU gpu:(null) from final GRES list", then slurmctld sets the node
    # INVAL: "gres/gpu count reported lower than configured (0 < 4)"; Flags=CountOnly
    # does not help), and refuses a File= that is no character or block device: so
    # each GPU is a character device node in DIR/dev with /dev/null's numbers.
    mkdir -p "$dir/dev"
    for i in 0 1 2 3; do mknod "$dir/dev/gpu$i" c 1 3; done
    cat > "$dir/gres.conf" <<CONF
AutoDetect=off
NodeName=g[1-2] Name=gpu Count=4 File=$dir/dev/gpu[0-3]
CONF
fi
echo "export SLURM_CONF=$dir/slurm.conf" > "$dir/env"
export SLURM_CONF=$dir/slurm.conf

slurmctld -i -f "$SLURM_CONF"
for node in n1 n2 n3 n4 g1 g2; do
    mkdir -p "$dir/spool/$node"
    slurmd -N "$node" -f "$SLURM_CONF"
done
for _ in $(seq 50); do
    [ -s "$dir/slurmctld.pid" ] && [ "$(ls "$dir"/slurmd-*.pid 2>/dev/null | wc -l)" = 6 ] && break
    sleep 0.2
done
cat "$dir/slurmctld.pid" "$dir"/slurmd-*.pid >> "$dir/pids"
# Every node idle (a node still registering shows unknown), not just the first.
idle=0
for _ in $(seq 100); do
    [ "$(sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)" = 6 ] && idle=1 && break
    sleep 0.2
done
if [ "$idle" = 0 ]; then
    echo "start.sh: not all six nodes idle; see $dir/log" >&2
    sinfo -N >&2 || true
    exit 1
fi
[ "$profile" = site ] || exit 0
# slurmrestd on DIR/rest.sock, for what 22.05's CLI has no JSON of (/partitions: the
# tiers). It refuses to run as root unless told to (SLURMRESTD_SECURITY); rest_auth/
# local authenticates the caller by the socket's peer.
SLURMRESTD_SECURITY=disable_user_check slurmrestd -f "$SLURM_CONF" -a rest_auth/local \
    -s openapi/v0.0.38 "unix:$dir/rest.sock" </dev/null >"$dir/log/slurmrestd.log" 2>&1 &
echo $! >> "$dir/pids"
for _ in $(seq 50); do
    [ -S "$dir/rest.sock" ] && exit 0
    sleep 0.2
done
echo "start.sh: slurmrestd did not listen on $dir/rest.sock; see $dir/log" >&2
exit 1
