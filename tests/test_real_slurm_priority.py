"""``xce schedule --job`` against a real Slurm's ``sprio -l`` (issue 28; docs/real-slurm.md,
"The priority profile").

``.ci/slurm/start.sh DIR priority`` starts Debian's Slurm 22.05 with accounting (MariaDB
and slurmdbd in DIR) and ``priority/multifactor`` with non-zero age, fair-share (Fair
Tree), job-size, partition and QOS weights, a recalculation every minute, three
accounts of different shares, five users (one in two accounts) and two QOS. The live
test (marked ``slurm`` and ``slow``: about 6 minutes) creates the Unix users where
missing, runs a warm-up wave right after a recalculation (usage, charged at each
recalculation), fills the cluster, submits ``WAVE_A``, captures right after the next
recalculation, submits ``WAVE_B``, and captures again three recalculations later,
having submitted ``LATE`` since the last one (sprio shows its submission's factors).

Each capture (``capture-N/``: squeue and sinfo JSON, ``scontrol show partition`` and
``config``, ``sshare -a -l -P``, ``scontrol show assoc_mgr flags=assoc``, ``sacctmgr
show qos``, ``sprio -l``, and ``last-decay.txt``: ``PriorityLastDecayRan=`` from
``StateSaveLocation/priority_last_decay_ran``) is imported with ``xce import slurm
CAPDIR --now TIME``; for every job ``sprio -l`` lists, ``xce schedule STATE --job ID
--json --now T`` (T: the state's ``priority.usage_time``, the recalculation sprio's
factors are from) must print sprio's AGE, FAIRSHARE, JOBSIZE, PARTITION, QOS, NICE
(and SITE, ASSOC, TRES) exactly, and its PRIORITY exactly, also where the exact sum of
the weighted factors lands on an integer, exactly too (xce reproduces Slurm's wire
arithmetic: :func:`near_integer`, docs/real-slurm.md).

The same comparison runs, without Slurm and unmarked, over the captures committed in
``tests/data/slurm/local-22.05.8-priority-v0.0.38/`` (README.md there).
"""

from __future__ import annotations

import json
import math
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from test_real_slurm import Cluster, _env, _require_slurm, _run, _stop, cluster_processes
from xce.cli.main import app

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / ".ci" / "slurm"
DATA = ROOT / "tests" / "data" / "slurm" / "local-22.05.8-priority-v0.0.38"
USERS = ("xce_alice", "xce_bob", "xce_carol", "xce_dave", "xce_erin")
# sprio -l's columns (22.05): the second PARTITION is the weighted partition factor
SPRIO = ("JOBID", "PARTITION_NAME", "USER", "PRIORITY", "SITE", "AGE", "ASSOC",
         "FAIRSHARE", "JOBSIZE", "PARTITION", "QOS", "NICE", "TRES")  # fmt: skip
COLUMNS = ("AGE", "FAIRSHARE", "JOBSIZE", "PARTITION", "QOS", "NICE", "SITE", "ASSOC", "TRES")
WIRE = 1e-5  # how near an integer the exact sum is when the wire arithmetic decides
MIN_ROWS = (6, 10)  # jobs sprio lists at capture 1, 2, at least
CALC_TIMEOUT = 150.0  # s: bound on waiting for a recalculation (PriorityCalcPeriod=1)
WARMUP_TIMEOUT = 240.0  # s: the warm-up's longest job sleeps 100 s
LATER_PASSES = 3  # capture 2 is this many recalculations after capture 1


@dataclass(frozen=True)
class Job:
    """One sbatch: who, which account (None: the user's default), partition, CPUs,
    and further options; how long it sleeps."""

    user: str
    partition: str
    cpus: int
    options: tuple[str, ...] = ()
    account: str | None = None
    sleep: int = 600
    limit: int = 10

    def args(self) -> list[str]:
        out = ["sbatch", "--parsable", f"--uid={self.user}", "-p", self.partition]
        out += ["-n", str(self.cpus), "--mem-per-cpu=100", "-t", str(self.limit)]
        out += ["-o", "/dev/null", "-D", "/", *self.options]
        if self.account:
            out.append(f"--account={self.account}")
        return [*out, "--wrap", f"sleep {self.sleep}"]


# Warm-up, submitted right after a recalculation: each job runs across the next one
# (70-100 s, from a minute's period) and ends before the one after, so it is charged
# about a minute of its CPUs. Usage for every user but erin (bio stays unused: its
# LevelFS is infinite, as root/root's, a Fair Tree tie); CPU counts differ, so no two
# users' LevelFS tie by chance (Fair Tree compares them exactly; the usage printed has
# two decimals).
WARMUP = (
    Job("xce_alice", "batch", 4, sleep=75),
    Job("xce_bob", "prio", 3, sleep=90),
    Job("xce_carol", "batch", 2, sleep=100),
    Job("xce_carol", "batch", 1, account="phys", sleep=70),
    Job("xce_dave", "prio", 16, sleep=85),
)
# The cluster filled (64 CPUs, each job pinned to its nodes): nothing pending can start.
# In chem, carol used less than dave and now uses twice his CPUs: she ranks above him at
# capture 1 (about 20 s of the fill charged, 80 s at worst), below him at capture 2
# (three minutes later); they cross at about 100 s.
FILL = (
    Job("xce_alice", "batch", 16, ("-N", "2", "-w", "n[1-2]"), sleep=1200, limit=30),
    Job("xce_bob", "batch", 16, ("-N", "2", "-w", "n[3-4]"), sleep=1200, limit=30),
    Job("xce_carol", "prio", 16, ("-w", "g1"), sleep=1200, limit=30),
    Job("xce_dave", "prio", 8, ("-w", "g2"), sleep=1200, limit=30),
    Job("xce_carol", "prio", 8, ("-w", "g2"), account="phys", sleep=1200, limit=30),
)
WAVE_A = (
    # at capture 2 (AGE at its cap, fair share 1: erin ties root/root) its weighted
    # factors sum to an integer: 1000 + 5000 + 291.66... + 333.33... + 1000 = 7625
    Job("xce_erin", "batch", 8),
    Job("xce_alice", "batch", 2, ("--qos=high",)),
    Job("xce_bob", "prio", 8, ("--nice=100",)),
    Job("xce_carol", "batch", 4, ("-N", "2"), account="phys"),
    Job("xce_dave", "batch", 1, ("-c", "2")),  # 1 task of 2 CPUs
    Job("xce_carol", "prio", 16, ("--qos=high",)),
    Job("xce_alice", "batch", 6, ("-N", "3")),
    Job("xce_bob", "prio", 24, ("--nice=50", "--qos=high")),
)
WAVE_B = (
    Job("xce_erin", "prio", 2, ("--qos=high",)),
    Job("xce_dave", "batch", 32),
    Job("xce_carol", "batch", 1, ("--nice=10000",)),  # PRIORITY 1: never below
    Job("xce_alice", "batch", 2, ("-H",)),  # held: sprio leaves it out
    Job("xce_dave", "prio", 4, ("--begin=now+3600",)),  # not yet eligible: left out
    Job("xce_bob", "prio", 4, ("-N", "2")),
)
LATE = Job("xce_alice", "prio", 3, ("--nice=7",))  # after capture 2's recalculation


# --- the comparison (live and committed) ----------------------------------------------


def cli(*args: str) -> str:
    done = CliRunner().invoke(app, list(args))
    if done.exit_code != 0:
        raise AssertionError(f"xce {' '.join(args)}: exit {done.exit_code}\n{done.output}")
    return done.stdout


def sprio_rows(text: str) -> list[dict[str, str]]:
    """``sprio -l``'s rows by :data:`SPRIO` (an empty TRES is "")."""
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines, "empty sprio -l output"
    assert lines[0].split()[0] == "JOBID", "not sprio -l output"
    rows = []
    for line in lines[1:]:
        cells = line.split()
        rows.append(dict(zip(SPRIO, cells + [""] * (len(SPRIO) - len(cells)), strict=True)))
    return rows


def _slurm_sum(weighted: dict[str, float], nice: int) -> float:
    """PRIORITY as sprio computes it from the factors it receives (each weighted
    double packed times 10^6, unpacked divided: pack.c), in its order of additions
    (site 0; the profile weighs no TRES)."""
    total = 0.0
    for name in ("AGE", "ASSOC", "FAIRSHARE", "JOBSIZE", "PARTITION", "QOS"):
        total += (weighted[name] * 1e6) / 1e6
    return total - nice


def near_integer(weighted: dict[str, float], nice: int) -> bool:
    """Whether the exact sum of the weighted factors is so near an integer that only
    Slurm's own wire arithmetic (each double times 10^6 and back, pack.c) decides on
    which side PRIORITY's truncation lands: the case the profile makes on purpose."""
    exact = math.fsum(weighted.values()) - nice
    return abs(exact - round(exact)) < WIRE


@dataclass
class Row:
    """One job of a capture: sprio's columns and xce's."""

    job: str
    slurm: dict[str, str]
    xce: dict[str, str]
    reproduced: int  # sprio's arithmetic (_slurm_sum) on xce's weighted factors
    at_integer: bool = False  # near_integer(): the wire arithmetic decides PRIORITY

    def differences(self) -> dict[str, tuple[str, str]]:
        out = {c: (self.slurm[c], self.xce[c]) for c in COLUMNS if self.slurm[c] != self.xce[c]}
        if int(self.slurm["PRIORITY"]) != int(self.xce["PRIORITY"]):
            out["PRIORITY"] = (self.slurm["PRIORITY"], self.xce["PRIORITY"])
        return out


@dataclass
class Result:
    name: str
    usage_time: float
    rows: list[Row] = field(default_factory=list)
    report: str = ""

    def summary(self) -> dict[str, Any]:
        """Jobs compared, how many equal in every column, the largest difference per
        column (numbers; TRES: 0 or 1 for differing text)."""
        most = {}
        for col in (*COLUMNS, "PRIORITY"):
            diffs = [_diff(r.slurm[col], r.xce[col]) for r in self.rows]
            most[col] = max(diffs, default=0)
        return {
            "capture": self.name,
            "usage_time": self.usage_time,
            "jobs": len(self.rows),
            "equal": sum(1 for r in self.rows if all(r.slurm[c] == r.xce[c]
                                                       for c in (*COLUMNS, "PRIORITY"))),
            "max_difference": most,
            "priority_off_by_one": sum(1 for r in self.rows
                                       if r.slurm["PRIORITY"] != r.xce["PRIORITY"]),
        }  # fmt: skip


def _diff(a: str, b: str) -> float:
    try:
        return abs(float(a or 0) - float(b or 0))
    except ValueError:
        return float(a != b)


def _state(snap: Path, work: Path) -> tuple[Path, dict[str, Any], str]:
    now = (snap / "time").read_text().strip()
    state = work / f"{snap.name}-state.yaml"
    done = CliRunner().invoke(
        app, ["import", "slurm", str(snap), "-o", str(state), "--force", "--now", now]
    )
    assert done.exit_code == 0, done.output
    return state, yaml.safe_load(state.read_text()), done.stderr


def compare(snap: Path, work: Path) -> Result:
    """Import ``snap`` (state in ``work``) and compare every row of its ``sprio.txt``
    with ``xce schedule --job ID --json --now T``."""
    state, doc, report = _state(snap, work)
    when = float(doc["priority"]["usage_time"])
    result = Result(snap.name, when, report=report)
    for row in sprio_rows((snap / "sprio.txt").read_text()):
        out = json.loads(cli("schedule", str(state), "--job", row["JOBID"], "--json",
                             "--now", str(int(when))))  # fmt: skip
        prio = out["priority"]
        mine = {k: str(v) for k, v in prio["sprio"].items()}
        result.rows.append(
            Row(row["JOBID"], row, mine,
                int(max(_slurm_sum(prio["weighted"], prio["nice"]), 1.0)),
                near_integer(prio["weighted"], prio["nice"]))
        )  # fmt: skip
    return result


def _print(title: str, results: list[Result], path: Path) -> None:
    summaries = [r.summary() for r in results]
    path.write_text(json.dumps(summaries, indent=1) + "\n")
    print(f"\n{title} (also {path})")
    for res, s in zip(results, summaries, strict=True):
        print(f"  {s['capture']}: {s['jobs']} jobs, {s['equal']} equal in every column; "
              f"largest differences {s['max_difference']}")  # fmt: skip
        for row in res.rows:
            if row.differences() or row.slurm["PRIORITY"] != row.xce["PRIORITY"]:
                print(f"    job {row.job}: sprio {row.slurm} xce {row.xce}")


def check(results: list[Result]) -> None:
    """Every job's columns equal, PRIORITY included, and sprio's own arithmetic on xce's
    weighted factors gives sprio's PRIORITY."""
    assert len(results) == 2, [r.name for r in results]
    for res, least in zip(results, MIN_ROWS, strict=True):
        assert len(res.rows) >= least, f"{res.name}: {len(res.rows)} jobs, fewer than {least}"
        bad = {r.job: r.differences() for r in res.rows if r.differences()}
        assert not bad, f"{res.name}: xce differs from sprio -l: {bad}"
        unlike = {r.job: (r.slurm["PRIORITY"], r.reproduced) for r in res.rows
                  if int(r.slurm["PRIORITY"]) != r.reproduced}  # fmt: skip
        assert not unlike, f"{res.name}: sprio's sum of xce's factors is not sprio's: {unlike}"


def check_premise(results: list[Result], snaps: list[Path]) -> None:
    """What makes the comparison worth having: several fair-share values, QOS and
    partition factors, nice values, ages both below and at PriorityMaxAge (capture 2),
    and the imported usage giving sshare's fair share for every user association."""
    for res, snap in zip(results, snaps, strict=True):
        column = {c: {r.slurm[c] for r in res.rows} for c in COLUMNS}
        assert len(column["FAIRSHARE"]) >= 3, column["FAIRSHARE"]
        assert len(column["QOS"]) >= 2, column
        assert len(column["PARTITION"]) == 2, column
        assert len(column["NICE"]) >= 2, column
        assert len(column["JOBSIZE"]) >= 4, column
        assert "differs from sshare's FairShare" not in res.report, res.report
        assert "fair share is sshare's" in res.report, res.report
        listed = {r.job for r in res.rows}
        jobs = json.loads((snap / "squeue.json").read_text())["jobs"]
        pending = {str(j["job_id"]) for j in jobs if j["job_state"] == "PENDING"}
        assert listed <= pending, listed - pending
    first = {r.job: r.slurm["FAIRSHARE"] for r in results[0].rows}
    moved = [r.job for r in results[1].rows if first.get(r.job, r.slurm["FAIRSHARE"])
             != r.slurm["FAIRSHARE"]]  # fmt: skip
    assert moved, "no job's fair share changed between the captures"
    assert len({r.slurm["AGE"] for r in results[0].rows}) >= 2
    ages = {int(r.slurm["AGE"]) for r in results[1].rows}
    assert 1000 in ages, ages
    assert any(0 < a < 1000 for a in ages), ages
    assert any(r.slurm["PRIORITY"] == "1" for r in results[1].rows)
    assert any(r.at_integer for r in results[1].rows), "no PRIORITY at an integer sum"


# --- the committed captures (no Slurm needed) --------------------------------------------

COMMITTED = sorted(p for p in DATA.glob("capture-*") if p.is_dir())


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory) -> list[Result]:
    work = tmp_path_factory.mktemp("priority-captures")
    results = [compare(snap, work) for snap in COMMITTED]
    _print(f"xce vs sprio -l, committed captures ({DATA.name})", results, work / "report.json")
    return results


def test_committed_captures_are_there() -> None:
    assert [p.name for p in COMMITTED] == ["capture-1", "capture-2"], COMMITTED


def test_committed_factors_are_sprios(committed: list[Result]) -> None:
    check(committed)


def test_committed_premise(committed: list[Result]) -> None:
    check_premise(committed, COMMITTED)


def test_committed_priority_at_an_integer_sum(committed: list[Result]) -> None:
    """Where the weighted factors sum to an integer, sprio's PRIORITY is that integer
    (its arithmetic on them, :func:`_slurm_sum`, says so too); xce's should be."""
    rows = [r for res in committed for r in res.rows if r.at_integer]
    assert rows, "no job of the committed captures sums to an integer"
    assert all(int(r.slurm["PRIORITY"]) == r.reproduced for r in rows)
    assert [r.xce["PRIORITY"] for r in rows] == [r.slurm["PRIORITY"] for r in rows]


def test_committed_usage_time_is_the_recalculation(committed: list[Result]) -> None:
    """The imported ``usage_time`` is slurmctld's last recalculation (last-decay.txt);
    without that file it is derived from sprio's AGE and squeue's accrue times, and is
    the same second."""
    for res, snap in zip(committed, COMMITTED, strict=True):
        text = (snap / "last-decay.txt").read_text()
        assert res.usage_time == float(text.split("=", 1)[1])
        assert_derived_time(snap, res.usage_time)


def assert_derived_time(snap: Path, when: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / snap.name
        shutil.copytree(snap, copy, ignore=shutil.ignore_patterns("last-decay.txt"))
        _, doc, report = _state(copy, Path(tmp))
    assert doc["priority"]["usage_time"] == when, report
    assert "usage_time derived from sprio's AGE" in report, report


def test_committed_picker_is_multifactor(tmp_path: Path) -> None:
    _, doc, _ = _state(COMMITTED[0], tmp_path)
    assert doc["picker"] == "multifactor"
    assert {q: v.get("priority_job_factor") for q, v in doc["queues"].items()} == {
        "batch": 1,
        "prio": 3,
    }


# --- the live run ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def users() -> Iterator[tuple[str, ...]]:
    """The workload's Unix users (before the cluster starts: slurmctld resolves an
    association's uid when it is added); those made here are removed after."""
    _require_slurm()
    made = []
    for user in USERS:
        try:
            pwd.getpwnam(user)
        except KeyError:
            _run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                  user])  # fmt: skip
            made.append(user)
    try:
        yield USERS
    finally:
        for user in made:
            subprocess.run(["userdel", user], capture_output=True, check=False)


@pytest.fixture(scope="module")
def priority_cluster(
    tmp_path_factory: pytest.TempPathFactory, users: tuple[str, ...]
) -> Iterator[Cluster]:
    """The priority profile's cluster, in a directory of its own under /tmp (mode 711:
    the users' jobs read their scripts in its spool); its logs and captures are copied
    into pytest's temporary directory when it has stopped, the rest removed."""
    base = Path(tempfile.mkdtemp(prefix="xce-slurm-priority-"))
    base.chmod(0o711)
    keep = tmp_path_factory.mktemp("slurm-priority")
    running = Cluster(base, {})
    try:
        _run(["bash", str(SCRIPTS / "start.sh"), str(base), "priority"], timeout=120)
        running.seen.update(cluster_processes(base))
        yield running
    finally:
        try:
            _stop(base, running.seen)
        finally:
            skip = shutil.ignore_patterns("db", "spool", "munge", "*.sock")
            shutil.copytree(base, keep, ignore=skip, dirs_exist_ok=True)
            shutil.rmtree(base, ignore_errors=True)
            print(f"\nthe priority cluster's logs and captures: {keep}")


def _last_decay(cluster: Path) -> int:
    """slurmctld's last recalculation: the first big-endian 64-bit time of
    StateSaveLocation/priority_last_decay_ran (0 before the first)."""
    try:
        data = (cluster / "state" / "priority_last_decay_ran").read_bytes()
    except OSError:
        return 0
    return int.from_bytes(data[:8], "big") if len(data) >= 8 else 0


def _until(what: str, ok: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        if time.monotonic() > deadline:
            raise AssertionError(f"Slurm: {what} not within {timeout} s")
        time.sleep(0.5)


def _next_pass(cluster: Path, after: int) -> int:
    _until(f"a recalculation after {after}", lambda: _last_decay(cluster) > after, CALC_TIMEOUT)
    return _last_decay(cluster)


def _last_backfill(env: dict[str, str]) -> int:
    for line in _run(["sdiag"], env).split("Backfilling stats", 1)[-1].splitlines():
        if "Last cycle when:" in line and "(" in line:
            return int(line.rsplit("(", 1)[1].rstrip(")"))
    return 0


def _submit(jobs: tuple[Job, ...], env: dict[str, str]) -> list[str]:
    return [_run(job.args(), env).strip().split(";")[0] for job in jobs]


def _squeue(env: dict[str, str]) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = json.loads(_run(["squeue", "--json"], env))["jobs"]
    return [j for j in jobs if j["job_state"] in ("PENDING", "RUNNING", "CONFIGURING")]


CAPTURE = {
    "scontrol-partition.txt": ["scontrol", "show", "partition"],
    "scontrol-config.txt": ["scontrol", "show", "config"],
    "sshare.txt": ["sshare", "-a", "-l", "-P"],
    "assoc-mgr.txt": ["scontrol", "show", "assoc_mgr", "flags=assoc"],
    "qos.txt": ["sacctmgr", "show", "qos", "-P", "format=name,priority"],
    "sprio.txt": ["sprio", "-l"],
}


def _take(cluster: Path, snap: Path, recalculated: int) -> bool:
    """A capture of the moment after recalculation ``recalculated``; False (and
    nothing kept) when another recalculation came while it was taken."""
    env = _env(cluster)
    snap.mkdir(parents=True)
    squeue = json.loads(_run(["squeue", "--json"], env))
    squeue["jobs"] = [j for j in squeue["jobs"] if j["job_state"] in ("PENDING", "RUNNING")]
    (snap / "squeue.json").write_text(json.dumps(squeue, separators=(",", ":")) + "\n")
    sinfo = json.loads(_run(["sinfo", "--json"], env))
    (snap / "sinfo.json").write_text(json.dumps(sinfo, separators=(",", ":")) + "\n")
    for name, command in CAPTURE.items():
        (snap / name).write_text(_run(command, env))
    (snap / "last-decay.txt").write_text(f"PriorityLastDecayRan={recalculated}\n")
    (snap / "time").write_text(f"{int(time.time())}\n")
    if _last_decay(cluster) != recalculated:
        shutil.rmtree(snap)
        return False
    return True


def _capture(cluster: Path, snap: Path, after: int, then: Any = None) -> int:
    """Wait for the first recalculation after ``after``, run ``then`` (a submission),
    and capture; again at the next one if a recalculation interrupts it."""
    for _ in range(3):
        when = _next_pass(cluster, after)
        if then is not None:
            then()
            time.sleep(3)  # the scheduler sees the submission (its accrue time)
        if _take(cluster, snap, when):
            return when
        after = when
    raise AssertionError("three captures in a row interrupted by a recalculation")


@dataclass
class Live:
    dir: Path
    snaps: list[Path]
    seconds: float


@pytest.fixture(scope="module")
def live(priority_cluster: Cluster) -> Live:
    began = time.monotonic()
    cluster = priority_cluster.dir
    env = _env(cluster)
    _next_pass(cluster, _last_decay(cluster))
    warm = {int(i) for i in _submit(WARMUP, env)}
    _until("the warm-up ends", lambda: not {j["job_id"] for j in _squeue(env)} & warm,
           WARMUP_TIMEOUT)  # fmt: skip
    _submit(FILL, env)
    _until("the cluster is full", lambda: sum(j["job_state"] == "RUNNING" for j in _squeue(env))
           == len(FILL), 60.0)  # fmt: skip
    half = len(WAVE_A) // 2
    _submit(WAVE_A[:half], env)
    time.sleep(3)  # two accrue times
    _submit(WAVE_A[half:], env)
    submitted = int(time.time())
    _until("a backfill cycle after the submissions", lambda: _last_backfill(env) > submitted, 60.0)
    first = _capture(cluster, cluster / "capture-1", _last_decay(cluster))
    time.sleep(5)  # wave B's AGE below its cap at capture 2, three minutes on
    _submit(WAVE_B, env)
    later = first
    for _ in range(LATER_PASSES - 1):
        later = _next_pass(cluster, later)
    _capture(cluster, cluster / "capture-2", later, lambda: _submit((LATE,), env))
    priority_cluster.seen.update(cluster_processes(cluster))
    return Live(cluster, [cluster / "capture-1", cluster / "capture-2"], time.monotonic() - began)


@pytest.mark.slurm
@pytest.mark.slow
def test_live_factors_are_sprios(live: Live) -> None:
    results = [compare(snap, live.dir) for snap in live.snaps]
    _print(f"xce vs sprio -l, live ({live.dir})", results, live.dir / "report.json")
    print(f"live run: {live.seconds:.0f} s from the warm-up to the last capture")
    check(results)
    check_premise(results, live.snaps)
    for res, snap in zip(results, live.snaps, strict=True):
        assert_derived_time(snap, res.usage_time)


@pytest.mark.slurm
@pytest.mark.slow
def test_live_save_captures(live: Live) -> None:
    """With XCE_SAVE_PRIORITY_CAPTURES=DIR, the run's captures and slurm.conf are
    copied to DIR (how the committed ones were made)."""
    target = os.environ.get("XCE_SAVE_PRIORITY_CAPTURES")
    if not target:
        pytest.skip("XCE_SAVE_PRIORITY_CAPTURES not set")
    to = Path(target)
    to.mkdir(parents=True, exist_ok=True)
    for snap in live.snaps:
        shutil.copytree(snap, to / snap.name, dirs_exist_ok=True)
    shutil.copy(live.dir / "slurm.conf", to / "slurm.conf")
