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
#   predict  accounting, so that sacct works: MariaDB (its database in DIR/db, on
#            127.0.0.1:16838 only) and slurmdbd (DIR/slurmdbd.conf, port 16839),
#            started before slurmctld; the cluster and the account xce added with
#            sacctmgr. Otherwise site's priorities and partitions without GPUs:
#            priority/multifactor (the age weight counts here: slurmdbd runs), batch
#            (n1-n4, tier 1) and prio (n3-n4, g1-g2, tier 2)
#            (tests/test_real_slurm_predict.py). Its own ports. DIR/pids-accounting
#            lists slurmdbd and mariadbd, which stop.sh stops after the rest.
#   priority predict's accounting (its own ports), and multifactor priorities with
#            every factor xce compares with sprio -l: age, fair share (Fair Tree),
#            job size, partition and QOS weights, PriorityMaxAge=3, a recalculation
#            every minute (PriorityCalcPeriod=1), PriorityDecayHalfLife=30; partitions
#            batch (n1-n4, PriorityJobFactor=1) and prio (n3-n4, g1-g2,
#            PriorityJobFactor=3), both tier 1; once slurmctld runs, sacctmgr adds
#            the accounts phys, chem, bio (Fairshare 50, 30, 20), their users
#            (xce_alice, xce_bob (Fairshare 2) in phys; xce_carol in chem and
#            phys; xce_dave in chem; xce_erin in bio) and the QOS high (Priority 30;
#            normal's set to 10) (tests/test_real_slurm_priority.py).
# Writes DIR/slurm.conf (and DIR/gres.conf), DIR/env (source it for SLURM_CONF) and
# DIR/pids (one process id a line), which stop.sh reads. Run as root.
set -euo pipefail
dir=$(realpath -m "${1:?usage: start.sh DIR [default|site|predict|priority]}")
profile=${2:-default}
case $profile in
    default) port=16817 node_ports=16901-16906 ;;
    site) port=16827 node_ports=16911-16916 ;;
    predict) port=16837 node_ports=16921-16926 db_port=16838 dbd_port=16839 ;;
    priority) port=16847 node_ports=16931-16936 db_port=16848 dbd_port=16849 ;;
    *) echo "start.sh: unknown profile $profile (default, site, predict, priority)" >&2
       exit 2 ;;
esac
accounting=0
case $profile in predict|priority) accounting=1 ;; esac
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
CONF
if [ "$accounting" = 1 ]; then
    cat >> "$dir/slurm.conf" <<CONF
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=$host
AccountingStoragePort=$dbd_port
AccountingStoragePass=$dir/munge/munge.socket
CONF
else
    echo "AccountingStorageType=accounting_storage/none" >> "$dir/slurm.conf"
fi
if [ "$profile" = default ]; then
    cat >> "$dir/slurm.conf" <<CONF
NodeName=n[1-4] NodeHostname=$host CPUs=8 RealMemory=16000 Feature=intel,ib Port=[$first-$((first + 3))]
NodeName=g[1-2] NodeHostname=$host CPUs=16 RealMemory=64000 Feature=amd,gpu Port=[$((first + 4))-$((first + 5))]
PartitionName=batch Nodes=n[1-4] Default=YES MaxTime=60 PriorityTier=1 State=UP
PartitionName=big Nodes=g[1-2] MaxTime=120 PriorityTier=2 State=UP
CONF
elif [ "$profile" = predict ]; then
    cat >> "$dir/slurm.conf" <<CONF
DebugFlags=Backfill
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightJobSize=2000
PriorityWeightPartition=4000
PriorityWeightFairshare=0
PriorityWeightQOS=0
PriorityMaxAge=2
PriorityCalcPeriod=1
NodeName=n[1-4] NodeHostname=$host CPUs=8 RealMemory=16000 Feature=intel,ib Port=[$first-$((first + 3))]
NodeName=g[1-2] NodeHostname=$host CPUs=16 RealMemory=64000 Feature=amd,gpu Port=[$((first + 4))-$((first + 5))]
PartitionName=batch Nodes=n[1-4] Default=YES MaxTime=60 PriorityTier=1 PriorityJobFactor=1 State=UP
PartitionName=prio Nodes=n[3-4],g[1-2] MaxTime=120 PriorityTier=2 PriorityJobFactor=2 State=UP
CONF
elif [ "$profile" = priority ]; then
    # No AccountingStorageEnforce: with limits, slurmctld would also charge usage when
    # a job ends (priority_p_job_end), between its recalculations, and the usage
    # captured after a recalculation would no longer be the one it ranked by.
    cat >> "$dir/slurm.conf" <<CONF
DebugFlags=Priority
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightFairshare=5000
PriorityWeightJobSize=2000
PriorityWeightPartition=1000
PriorityWeightQOS=3000
PriorityMaxAge=3
PriorityCalcPeriod=1
PriorityDecayHalfLife=30
NodeName=n[1-4] NodeHostname=$host CPUs=8 RealMemory=16000 Feature=intel,ib Port=[$first-$((first + 3))]
NodeName=g[1-2] NodeHostname=$host CPUs=16 RealMemory=64000 Feature=amd,gpu Port=[$((first + 4))-$((first + 5))]
PartitionName=batch Nodes=n[1-4] Default=YES MaxTime=60 PriorityTier=1 PriorityJobFactor=1 State=UP
PartitionName=prio Nodes=n[3-4],g[1-2] MaxTime=120 PriorityTier=1 PriorityJobFactor=3 State=UP
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

if [ "$accounting" = 1 ]; then
    # MariaDB in DIR/db, as root, on 127.0.0.1 only (slurmdbd connects over TCP; the
    # socket in DIR is for the set-up below), none of /etc/mysql read (--no-defaults).
    : > "$dir/pids-accounting"
    mariadb-install-db --no-defaults --datadir="$dir/db" --user=root \
        --auth-root-authentication-method=socket --skip-test-db \
        >"$dir/log/mariadb-install.log" 2>&1
    mariadbd --no-defaults --datadir="$dir/db" --user=root --bind-address=127.0.0.1 \
        --port="$db_port" --socket="$dir/mariadb.sock" --pid-file="$dir/mariadb.pid" \
        --log-error="$dir/log/mariadb.log" --skip-name-resolve \
        --innodb-buffer-pool-size=64M --innodb-log-file-size=16M \
        --innodb-lock-wait-timeout=900 \
        </dev/null >/dev/null 2>&1 &
    echo $! | tee -a "$dir/pids" >> "$dir/pids-accounting"
    up=0
    for _ in $(seq 150); do
        mariadb-admin --no-defaults --socket="$dir/mariadb.sock" -u root ping \
            >/dev/null 2>&1 && up=1 && break
        sleep 0.2
    done
    [ "$up" = 1 ] || { echo "start.sh: MariaDB did not start; see $dir/log" >&2; exit 1; }
    mariadb --no-defaults --socket="$dir/mariadb.sock" -u root <<'SQL'
CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'xce-test';
GRANT ALL ON xce_acct_db.* TO 'slurm'@'127.0.0.1';
SQL
    # slurmdbd reads slurmdbd.conf beside SLURM_CONF; it must be SlurmUser's, mode 600.
    cat > "$dir/slurmdbd.conf" <<CONF
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
DbdHost=$host
DbdPort=$dbd_port
SlurmUser=root
LogFile=$dir/log/slurmdbd.log
PidFile=$dir/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=slurm
StoragePass=xce-test
StorageLoc=xce_acct_db
CONF
    chmod 600 "$dir/slurmdbd.conf"
    slurmdbd
    # (The clients reach slurmdbd with munge's socket as AccountingStoragePass.) A
    # failing sacctmgr takes seconds: the wait is bounded in time, 30 s.
    up=0
    deadline=$((SECONDS + 30))
    while [ "$SECONDS" -lt "$deadline" ]; do
        [ -s "$dir/slurmdbd.pid" ] && sacctmgr -n list cluster >/dev/null 2>&1 && up=1 && break
        sleep 0.2
    done
    [ "$up" = 1 ] || { echo "start.sh: slurmdbd did not answer; see $dir/log" >&2; exit 1; }
    tee -a "$dir/pids" < "$dir/slurmdbd.pid" >> "$dir/pids-accounting"
    sacctmgr -i add cluster xce >/dev/null
    if [ "$profile" = predict ]; then
        sacctmgr -i add account xce Cluster=xce Description=test Organization=xce >/dev/null
    fi
fi

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
if [ "$profile" = priority ]; then
    # The association tree and QOS, added while slurmctld runs: slurmctld then orders
    # each account's children as sshare and scontrol show assoc_mgr print them (users
    # first, then by name), which settles Fair Tree's ties. (Loaded at its start, they
    # would stay in the database's order until the next change.)
    sacctmgr -i modify qos normal set Priority=10 >/dev/null
    sacctmgr -i add qos high Priority=30 >/dev/null
    sacctmgr -i add account phys,chem,bio Cluster=xce Description=test Organization=xce \
        >/dev/null
    sacctmgr -i modify account phys set Fairshare=50 >/dev/null
    sacctmgr -i modify account chem set Fairshare=30 >/dev/null
    sacctmgr -i modify account bio set Fairshare=20 >/dev/null
    sacctmgr -i add user xce_alice Account=phys >/dev/null
    sacctmgr -i add user xce_bob Account=phys Fairshare=2 >/dev/null
    sacctmgr -i add user xce_carol Account=chem,phys DefaultAccount=chem >/dev/null
    sacctmgr -i add user xce_dave Account=chem >/dev/null
    sacctmgr -i add user xce_erin Account=bio >/dev/null
    # Until slurmctld has every user association (slurmdbd sends it the changes).
    for _ in $(seq 100); do
        [ "$(scontrol show assoc_mgr flags=assoc 2>/dev/null | grep -c 'UserName=xce_')" = 6 ] \
            && exit 0
        sleep 0.2
    done
    echo "start.sh: slurmctld did not get the associations; see $dir/log" >&2
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
