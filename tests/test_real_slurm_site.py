"""A real Slurm with a site's configuration as the test partner (issue 25; docs/real-slurm.md,
"The site profile").

``.ci/slurm/start.sh DIR site`` starts Debian's Slurm 22.05 with priority/multifactor,
two overlapping partitions of different tiers and GPUs on g1-g2. The live tests
(marked ``slurm``) submit ``WORKLOAD`` in two stages (what should run first, then the
deep queue), take ``CAPTURES`` captures each after a new backfill cycle, check that
Slurm does what the workload is built to make it do (the premise), then import each
capture with ``xce import slurm`` and compare ``xce schedule --json --backfill POLICY
--now T`` (``slurm``, the policy that plans as sched/backfill, else ``conservative``)
with Slurm, job by job: a job Slurm pends pends in xce, and
Slurm's expected start (``squeue --start``) is xce's ``planned_start`` within
bf_resolution.

The job ``unseen`` runs on n1 but is taken out of the captured ``squeue.json`` (Slurm's
own output is kept as ``raw/squeue.json``): its CPUs and memory on n1 are "an
allocation the capture does not show", which sinfo's ``alloc_cpus`` still counts.

The same comparison runs, without Slurm and unmarked, over the captures committed in
``tests/data/slurm/local-22.05.8-site-v0.0.38/capture-N/``.

A comparison that fails while a feature it needs is missing from the import (detected
in the imported state, ``FEATURES``) is an xfail naming those features; once they are
all there, a failure is a failure. The premise checks are plain assertions.
"""

from __future__ import annotations

import http.client
import json
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from test_real_slurm import Cluster, _env, _require_slurm, _run, _stop, cluster_processes
from xce.backfill import default_backfills

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / ".ci" / "slurm"
XCE = Path(sys.executable).parent / "xce"
DATA = ROOT / "tests" / "data" / "slurm" / "local-22.05.8-site-v0.0.38"
BF_RESOLUTION = 60  # s: Slurm's default bf_resolution
CAPTURES = 3
STAGE_TIMEOUT = 60.0  # s: bound on waiting for stage 1 to run, or for a backfill cycle
UNSEEN = "unseen"  # runs, but is left out of the captured squeue.json
# The backfill policy the comparisons use: Slurm's own when xce has it (whole-node plans,
# docs/backfill.md), else conservative (which plans every job, but slots, not nodes).
POLICY: str = "slurm" if "slurm" in default_backfills().names() else "conservative"


@dataclass(frozen=True)
class Sub:
    """One ``sbatch`` of the workload: its name, options (``{c1}`` is the job id of
    c1), its stage, and what Slurm does with it: ``R`` runs, else the reason it pends
    (``wait`` for Resources or Priority)."""

    name: str
    args: tuple[str, ...]
    stage: int
    slurm: str


# batch: n1-n4 (tier 1); prio: n3-n4, g1-g2 (tier 2); n*: 8 CPUs 16000 MiB intel,ib;
# g*: 16 CPUs 64000 MiB amd,gpu, 4 GPUs. Stage 1 runs first (unseen alone before it, so
# that it gets n1), then stage 2 makes the deep queue.
WORKLOAD = (
    Sub(UNSEEN, ("-p", "batch", "-w", "n1", "-n", "4", "--mem", "4000", "-t", "60"), 0, "R"),
    # Two elements run, the record of the other 18 pends at its %2 limit.
    Sub("arr", ("-p", "batch", "-a", "1-20%2", "-n", "2", "--mem", "1000", "-t", "10"), 1,
        "JobArrayTaskLimit"),
    Sub("c1", ("-p", "batch", "-n", "2", "--mem", "1000", "-t", "10"), 1, "R"),
    Sub("gpus2", ("-p", "prio", "--gpus=2", "-n", "2", "--mem", "2000", "-t", "30"), 1, "R"),
    Sub("gpn", ("-p", "prio", "-N", "2", "--gres=gpu:1", "-n", "2", "--mem", "2000",
                "-t", "30"), 1, "R"),
    # 12 CPUs without -N on 8-CPU nodes: spread over two or three.
    Sub("spread", ("-p", "batch", "-n", "12", "--mem-per-cpu", "500", "-t", "20"), 1, "R"),
    Sub("c2", ("-p", "batch", "-n", "2", "--mem", "1000", "-t", "10", "-d", "afterok:{c1}"),
        2, "Dependency"),
    Sub("c3", ("-p", "batch", "-n", "2", "--mem", "1000", "-t", "10", "-d", "afterok:{c2}"),
        2, "Dependency"),
    Sub("later", ("-p", "batch", "--begin=now+10minutes", "-n", "1", "--mem", "500",
                  "-t", "10"), 2, "BeginTime"),
    Sub("held", ("-p", "batch", "-H", "-n", "1", "--mem", "500", "-t", "10"), 2,
        "JobHeldUser"),
    Sub("gwide", ("-p", "prio", "-N", "2", "-n", "32", "--mem", "8000", "-t", "60"), 2, "wait"),
    # CPUs are free on g2, 4 GPUs on one node are not.
    Sub("gpu4", ("-p", "prio", "--gpus=4", "-n", "1", "--mem", "1000", "-t", "10"), 2, "wait"),
    Sub("gpn2", ("-p", "prio", "-N", "2", "--gres=gpu:2", "-n", "2", "--mem", "1000",
                 "-t", "30"), 2, "wait"),
    # Backfilled at once on a g node (it ends before gwide can start).
    Sub("gfill", ("-p", "prio", "-C", "amd", "-n", "2", "--mem", "1000", "-t", "20"), 2, "R"),
    # Reserves n3-n4 with n4 idle: n4 is PLANNED.
    Sub("pint", ("-p", "prio", "-C", "intel", "-N", "2", "-n", "16", "--mem", "4000",
                 "-t", "30"), 2, "wait"),
    Sub("big8", ("-p", "batch", "-N", "1", "-n", "8", "--mem", "8000", "-t", "60"), 2, "wait"),
    # The same request with and without -N 1 (FIELDS.md: max_nodes tells them apart).
    Sub("n1job", ("-p", "batch", "-N", "1", "-n", "4", "--mem", "2000", "-t", "30"), 2, "wait"),
    Sub("n0job", ("-p", "batch", "-n", "4", "--mem", "2000", "-t", "30"), 2, "wait"),
    Sub("spread2", ("-p", "batch", "-n", "12", "--mem-per-cpu", "500", "-t", "30"), 2, "wait"),
    Sub("pair2", ("-p", "batch", "-N", "2", "-n", "8", "--mem", "2000", "-t", "30"), 2, "wait"),
    # In both partitions: runs in prio (a g node has room); both2 pends in both.
    Sub("both", ("-p", "batch,prio", "-n", "4", "--mem", "2000", "-t", "20"), 2, "R"),
    Sub("both2", ("-p", "batch,prio", "-n", "8", "--mem", "2000", "-t", "40"), 2, "wait"),
    *(
        Sub(f"q{i}", ("-p", "batch", "-n", str(2 * i), "--mem", "1000", "-t", str(10 * i)),
            2, "wait")
        for i in range(1, 5)
    ),
)  # fmt: skip
BY_NAME = {s.name: s for s in WORKLOAD}
PENDING = [s.name for s in WORKLOAD if s.slurm != "R"]
GPU_JOBS = {"gpus2", "gpn", "gpu4", "gpn2"}
MIN_PLANNED = 8  # pending jobs Slurm gives an expected start, at least, in each capture


# --- what the import must model: features detected in the imported state --------------


@dataclass(frozen=True)
class Feature:
    """A thing the import must carry for a job's comparison to hold; ``present`` tells
    from the imported state whether it does."""

    name: str
    present: Callable[[dict[str, Any], Capture], bool]


def _pending_entry(state: dict[str, Any], cap: Capture, name: str) -> dict[str, Any]:
    job_id = cap.id_of(name)
    found = [j for j in state.get("jobs", []) if str(j.get("id")) == job_id]
    return found[0] if found else {}


def _host(state: dict[str, Any], name: str) -> dict[str, Any]:
    found = [h for h in state.get("hosts", []) if h.get("name") == name]
    return found[0] if found else {}


FEATURES = {
    "priority": Feature(
        "Slurm's job priority and the priority picker (jobs[].priority, picker: priority)",
        lambda s, c: s.get("picker") == "priority" and "priority" in _pending_entry(s, c, "gwide"),
    ),
    "tiers": Feature(
        "partition tiers (queues batch below prio, from slurmrestd's /partitions: "
        "22.05's sinfo --json has none)",
        lambda s, c: _tiers_known(s),
    ),
    "unattributed": Feature(
        "an allocation the capture does not show (running slurm:n1:unattributed)",
        lambda s, c: any(r.get("id") == "slurm:n1:unattributed" for r in s.get("running", [])),
    ),
    "planned": Feature(
        "a PLANNED idle node open for plans (n4 not closed)",
        lambda s, c: _host(s, "n4").get("status", "ok") in ("ok", "open"),
    ),
    "gpu": Feature(
        "GPUs on nodes and running jobs' GPUs (resources.gpu of g1, gres_detail)",
        lambda s, c: "gpu" in (_host(s, "g1").get("resources") or {}),
    ),
    "gpu_per_job": Feature(
        "--gpus=N as a per-job amount (rusage[gpu=N/job])",
        lambda s, c: "/job" in str(_pending_entry(s, c, "gpu4").get("resreq", "")),
    ),
    "array": Feature(
        "job arrays with their %N limit (jobs[].array)",
        lambda s, c: "array" in _pending_entry(s, c, "arr"),
    ),
    "dependency": Feature(
        "dependencies (jobs[].dependency)",
        lambda s, c: "dependency" in _pending_entry(s, c, "c2"),
    ),
    "begin_time": Feature(
        "--begin (jobs[].begin_time)",
        lambda s, c: "begin_time" in _pending_entry(s, c, "later"),
    ),
    "hold": Feature(
        "held jobs (jobs[].hold)", lambda s, c: bool(_pending_entry(s, c, "held").get("hold"))
    ),
    "whole_nodes": Feature(
        "backfill plans that hold whole nodes: Slurm 22.05's sched/backfill reserves every "
        "node of a job it plans for that job's window (its node_space map, logged by "
        "DebugFlags=BackfillMap); xce's conservative policy only the slots (the backfill "
        "policy 'slurm' does)",
        lambda s, c: POLICY == "slurm",
    ),
    "two_partitions": Feature(
        "a job in two partitions (both2, -p batch,prio) planned in each, as Slurm does "
        "(a reservation in prio on n4 and one in batch on n2)",
        lambda s, c: _in_both(_pending_entry(s, c, "both2")),
    ),
    "node_count": Feature(
        "no node count where -N was not given (n0job without span[])",
        lambda s, c: "span[" not in str(_pending_entry(s, c, "spread2").get("resreq", "")),
    ),
}


def _tiers_known(state: dict[str, Any]) -> bool:
    queues = state.get("queues") or {}
    if not isinstance(queues, dict) or not {"batch", "prio"} <= set(queues):
        return False
    return bool(queues["prio"].get("priority", 0) > queues["batch"].get("priority", 0))


def _in_both(job: dict[str, Any]) -> bool:
    """The imported both2 may run in batch and in prio (a list of queues, or both
    partitions' tags in its requirement)."""
    queue, resreq = job.get("queue"), str(job.get("resreq", ""))
    two_queues = isinstance(queue, list) and {"batch", "prio"} <= set(queue)
    return two_queues or ("partition_batch" in resreq and "partition_prio" in resreq)


# Every comparison depends on the order (priority, tiers) and on the nodes' free capacity
# (PLANNED n4; the unseen job on n1 for jobs that may use n1; the GPUs on the g nodes
# for jobs that may use them); some jobs on one feature of their own.
COMMON = ("priority", "tiers", "planned")
OWN = {
    "arr": ("array",),
    "c2": ("dependency",),
    "c3": ("dependency",),
    "later": ("begin_time",),
    "held": ("hold",),
    "gpu4": ("gpu_per_job",),
    "n0job": ("node_count",),
    "spread2": ("node_count",),
}
# Start comparisons also need Slurm's way of planning, and those of jobs that may use
# batch's nodes both2's reservation there.
PLANNING = ("whole_nodes",)


def _needs(name: str, start: bool) -> tuple[str, ...]:
    """The features ``name``'s comparison needs: whether xce pends it, or (``start``)
    also when it plans it."""
    partitions = set(BY_NAME[name].args[1].split(","))  # every Sub starts with -p
    side = (("unattributed",) if "batch" in partitions else ()) + (
        ("gpu",) if "prio" in partitions else ()
    )
    planning = PLANNING + (("two_partitions",) if "batch" in partitions else ())
    return COMMON + side + OWN.get(name, ()) + (planning if start else ())


# --- a capture and its comparison ------------------------------------------------------


@dataclass
class Capture:
    """A capture (a directory of squeue.json, sinfo.json, live ones partitions.json,
    squeue-start.txt, time), what xce made of it, or why it could not."""

    dir: Path
    now: int
    jobs: list[dict[str, Any]]
    nodes: dict[str, dict[str, Any]]
    starts: dict[str, int]  # Slurm's expected start by job id (squeue --start)
    state: dict[str, Any] = field(default_factory=dict)
    decisions: dict[str, Any] = field(default_factory=dict)
    failed: str = ""  # the import or the schedule failed: how

    def id_of(self, name: str) -> str:
        """The job id of ``name``; the array record's is its array job id."""
        for job in self.jobs:
            if job["name"] == name and (name != "arr" or job["job_state"] == "PENDING"):
                return str(job["job_id"])
        raise AssertionError(f"{name} is not in the capture {self.dir}")

    def job(self, name: str) -> dict[str, Any]:
        job_id = self.id_of(name)
        return next(j for j in self.jobs if str(j["job_id"]) == job_id)


def _starts(text: str) -> dict[str, int]:
    """{job id: start} of ``squeue --start -h -o '%i %S %Y %r'`` (epoch seconds); an
    array record's id ``2_[3-20%2]`` is given as ``2``."""
    out = {}
    for line in text.splitlines():
        job_id, start = line.split()[:2]
        if start.isdigit():
            out[job_id.split("_")[0]] = int(start)
    return out


def _last_line(text: str) -> str:
    """The message of a failed xce command (its last line; the traceback above it)."""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:400] if lines else "(no message)"


def load_capture(snap: Path) -> Capture:
    """Read a capture directory and run xce on it: import, then a session with
    backfill POLICY at the capture's time."""
    cap = Capture(
        dir=snap,
        now=int((snap / "time").read_text()),
        jobs=json.loads((snap / "squeue.json").read_text())["jobs"],
        nodes={n["name"]: n for n in json.loads((snap / "sinfo.json").read_text())["nodes"]},
        starts=_starts((snap / "squeue-start.txt").read_text()),
    )
    out = snap.parent / f"{snap.name}-state.json"
    done = subprocess.run(
        [str(XCE), "import", "slurm", str(snap), "-o", str(out), "--force"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        cap.failed = f"xce import slurm exits {done.returncode}: {_last_line(done.stderr)}"
        return cap
    cap.state = json.loads(out.read_text())
    schedule = [str(XCE), "schedule", str(out), "--json", "--backfill", POLICY]
    done = subprocess.run(
        [*schedule, "--now", str(cap.now)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        cap.failed = f"xce schedule exits {done.returncode}: {_last_line(done.stderr)}"
        return cap
    cap.decisions = json.loads(done.stdout)
    return cap


@dataclass(frozen=True)
class Verdict:
    """One job's comparison: does xce pend it as Slurm does, and (where Slurm gives an
    expected start) plan it then; what differs."""

    name: str
    pends: bool
    start: bool | None  # None: Slurm gives no expected start
    detail: str


def compare(cap: Capture, name: str) -> Verdict:
    """xce's decisions on ``name`` against Slurm's. An array record's elements are
    ``ID_N`` in xce: all must pend. A job pending BeginTime agrees when xce plans it
    no earlier than its begin time (Slurm's "expected start" of it is that time, not a
    plan)."""
    job_id = cap.id_of(name)

    def ours(entry: dict[str, Any]) -> bool:
        return str(entry["job"]) == job_id or str(entry["job"]).startswith(f"{job_id}_")

    dispatched = [e for e in cap.decisions.get("dispatched", []) if ours(e)]
    pending = [e for e in cap.decisions.get("pending", []) if ours(e)]
    pends = bool(pending) and not dispatched
    slurm = cap.starts.get(job_id)
    planned = [e.get("planned_start") for e in pending]
    first = min((p for p in planned if p is not None), default=None)
    if slurm is None or first is None:
        start = None if slurm is None else False
    elif cap.job(name)["state_reason"] == "BeginTime":
        # Slurm's expected start of a job before its begin time is the begin time
        # itself (no backfill plan: SCHEDNODES (null)); xce must not plan it earlier.
        start = first >= slurm
    else:
        start = abs(first - slurm) <= BF_RESOLUTION
    detail = (
        f"{name} ({job_id}): Slurm pends it ({cap.job(name)['state_reason']}), expects it at "
        f"{slurm}; xce: {len(dispatched)} dispatched "
        f"{[e.get('allocation') for e in dispatched][:2]}, {len(pending)} pending, "
        f"planned_start {first}"
        + (f" ({first - slurm:+.0f} s)" if first is not None and slurm is not None else "")
    )
    return Verdict(name, pends, start, detail)


def _missing(cap: Capture, name: str, start: bool) -> list[str]:
    needs = _needs(name, start)
    return [FEATURES[f].name for f in needs if not FEATURES[f].present(cap.state, cap)]


def _verdict_or_xfail(cap: Capture, name: str) -> Verdict:
    if cap.failed:
        pytest.xfail(f"no comparison: {cap.failed} (see test_capture_imports)")
    return compare(cap, name)


def _expect(cap: Capture, name: str, ok: bool, detail: str, start: bool) -> None:
    """Assert ``ok``; a failure while a feature the comparison needs is missing is an
    xfail naming them."""
    missing = _missing(cap, name, start) if not ok else []
    if missing:
        pytest.xfail(f"{detail}; missing: {'; '.join(missing)}")
    assert ok, detail


def agreement(cap: Capture) -> tuple[int, int, int, int, list[str]]:
    """(jobs pending in both, jobs Slurm pends, expected starts agreed, expected starts
    Slurm gives, what differs) over the capture's pending jobs."""
    pends = starts = given = 0
    differ = []
    names = [n for n in PENDING if n in {j["name"] for j in cap.jobs}]
    for name in names:
        verdict = compare(cap, name)
        pends += verdict.pends
        given += verdict.start is not None
        starts += bool(verdict.start)
        if not verdict.pends or verdict.start is False:
            differ.append(verdict.detail)
    return pends, len(names), starts, given, differ


def _check_agreement(cap: Capture) -> None:
    if cap.failed:
        pytest.xfail(f"no comparison: {cap.failed} (see test_capture_imports)")
    pends, of, starts, given, differ = agreement(cap)
    line = (
        f"{cap.dir.name}: xce (--backfill {POLICY}) pends {pends} of the {of} jobs Slurm pends; "
        f"planned starts agree on {starts} of the {given} expected starts Slurm gives"
    )
    print(line)
    for row in differ:
        print("  " + row)
    verdicts = [compare(cap, n) for n in PENDING if n in {j["name"] for j in cap.jobs}]
    missing = sorted(
        {m for v in verdicts if not v.pends or v.start is False for m in
         _missing(cap, v.name, start=v.pends)}
    )  # fmt: skip
    if differ and missing:
        pytest.xfail(f"{line}; missing: {'; '.join(missing)}")
    assert not differ, line + "\n" + "\n".join(differ)


# --- the committed captures (no Slurm needed) --------------------------------------------

COMMITTED = sorted(p for p in DATA.glob("capture-*") if p.is_dir())


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Capture]:
    """Each committed capture imported and scheduled (in a copy: the import writes its
    state file beside the capture)."""
    out = {}
    root = tmp_path_factory.mktemp("site-captures")
    for snap in COMMITTED:
        shutil.copytree(snap, root / snap.name, ignore=shutil.ignore_patterns("raw"))
        out[snap.name] = load_capture(root / snap.name)
    return out


def test_committed_captures_are_there() -> None:
    assert len(COMMITTED) >= CAPTURES, f"fewer than {CAPTURES} captures in {DATA}"


@pytest.mark.parametrize("snap", [p.name for p in COMMITTED])
def test_committed_capture_imports(committed: dict[str, Capture], snap: str) -> None:
    assert not committed[snap].failed, committed[snap].failed


@pytest.mark.parametrize("snap", [p.name for p in COMMITTED])
def test_committed_capture_agreement(committed: dict[str, Capture], snap: str) -> None:
    """Per capture: how many jobs xce pends as Slurm does and plans when Slurm expects
    them (printed); all must."""
    _check_agreement(committed[snap])


@pytest.mark.parametrize("name", PENDING)
@pytest.mark.parametrize("snap", [p.name for p in COMMITTED])
def test_committed_job_pends_in_xce(committed: dict[str, Capture], snap: str, name: str) -> None:
    cap = committed[snap]
    verdict = _verdict_or_xfail(cap, name)
    _expect(cap, name, verdict.pends, verdict.detail, start=False)


def _committed_starts() -> list[tuple[str, str]]:
    """(capture, job name) of every pending job a committed capture's squeue --start
    gives an expected start."""
    cases = []
    for snap in COMMITTED:
        jobs = json.loads((snap / "squeue.json").read_text())["jobs"]
        starts = _starts((snap / "squeue-start.txt").read_text())
        names = {str(j["job_id"]): j["name"] for j in jobs if j["job_state"] == "PENDING"}
        cases += [(snap.name, names[i]) for i in starts if i in names]
    return cases


@pytest.mark.parametrize(("snap", "name"), _committed_starts())
def test_committed_expected_start(committed: dict[str, Capture], snap: str, name: str) -> None:
    """Slurm's expected start (squeue --start) is xce's planned_start within
    bf_resolution."""
    cap = committed[snap]
    verdict = _verdict_or_xfail(cap, name)
    _expect(cap, name, bool(verdict.start), verdict.detail, start=True)


def test_unseen_job_left_out_of_committed_captures() -> None:
    """The committed squeue.json has no unseen job; raw/squeue.json (Slurm's) has it."""
    for snap in COMMITTED:
        shown = {j["name"] for j in json.loads((snap / "squeue.json").read_text())["jobs"]}
        raw = {j["name"] for j in json.loads((snap / "raw" / "squeue.json").read_text())["jobs"]}
        assert UNSEEN not in shown
        assert shown | {UNSEEN} == raw


# --- the live run ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    _require_slurm()
    running = Cluster(tmp_path_factory.mktemp("slurm-site").resolve(), {})
    try:
        _run(["bash", str(SCRIPTS / "start.sh"), str(running.dir), "site"], timeout=60)
        running.seen.update(cluster_processes(running.dir))
        yield running
    finally:
        _stop(running.dir, running.seen)


ACTIVE = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED"}


def _squeue(env: dict[str, str]) -> list[dict[str, Any]]:
    """The jobs not yet ended (22.05's squeue --json also lists ended ones for
    MinJobAge, 300 s: cancelled, completed)."""
    jobs: list[dict[str, Any]] = json.loads(_run(["squeue", "--json"], env))["jobs"]
    return [j for j in jobs if j["job_state"] in ACTIVE]


def _submit(cluster: Path, stage: int, ids: dict[str, str]) -> None:
    """sbatch the stage's jobs (sleeping 300 s), adding {name: job id} to ``ids``."""
    env = _env(cluster)
    for sub in (s for s in WORKLOAD if s.stage == stage):
        args = [a.format(**ids) for a in sub.args]
        head = ["sbatch", "--parsable", "-J", sub.name, "-o", "/dev/null", "-D", str(cluster)]
        ids[sub.name] = _run([*head, *args, "--wrap", "sleep 300"], env).strip().split(";")[0]


def _until(what: str, ok: Callable[[], bool]) -> None:
    deadline = time.monotonic() + STAGE_TIMEOUT
    while not ok():
        if time.monotonic() > deadline:
            raise AssertionError(f"Slurm: {what} not within {STAGE_TIMEOUT} s")
        time.sleep(0.5)


def _all_run(env: dict[str, str]) -> bool:
    """Every job runs, but an array record at its limit."""
    return all(
        j["job_state"] == "RUNNING" or j["state_reason"] == "JobArrayTaskLimit"
        for j in _squeue(env)
    )


def _last_backfill(env: dict[str, str]) -> int:
    found = re.search(
        r"Backfilling stats.*?Last cycle when:.*?\((\d+)\)", _run(["sdiag"], env), re.S
    )
    return int(found.group(1)) if found else 0


class _UnixHTTP(http.client.HTTPConnection):
    """HTTP over slurmrestd's unix socket (start.sh: DIR/rest.sock)."""

    def __init__(self, path: Path) -> None:
        super().__init__("localhost", timeout=30)
        self._path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self._path)


def _rest(cluster: Path, path: str) -> str:
    """GET ``path`` from the cluster's slurmrestd."""
    conn = _UnixHTTP(cluster / "rest.sock")
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        body = answer.read().decode()
    finally:
        conn.close()
    if answer.status != 200:
        raise AssertionError(f"slurmrestd GET {path}: {answer.status}\n{body[:2000]}")
    return body


def _take(cluster: Path, snap: Path, after: int) -> int:
    """Wait for a backfill cycle that began after ``after`` and after every job's
    submission or start, then keep what Slurm says; returns the cycle's time."""
    env = _env(cluster)

    def latest() -> int:
        times = [
            j["start_time"] if j["job_state"] == "RUNNING" else j["submit_time"]
            for j in _squeue(env)
        ]
        return int(max(times))

    _until("a new backfill cycle", lambda: _last_backfill(env) > max(after, latest()))
    now = int(time.time())
    (snap / "raw").mkdir(parents=True)
    commands = {
        "raw/squeue.json": ["squeue", "--json"],
        "sinfo.json": ["sinfo", "--json"],
        "squeue-start.txt": ["squeue", "--start", "-h", "-o", "%i %S %Y %r"],
        "scontrol-job.txt": ["scontrol", "show", "job", "-d"],
        "scontrol-partition.txt": ["scontrol", "show", "partition"],
        "sprio.txt": ["sprio", "-l"],
        "sdiag.txt": ["sdiag"],
    }
    for name, command in commands.items():
        (snap / name).write_text(_run(command, env))
    # 22.05's CLI prints no partitions as JSON: the tiers only from slurmrestd.
    (snap / "partitions.json").write_text(_rest(cluster, "/slurm/v0.0.38/partitions"))
    (snap / "time").write_text(f"{now}\n")
    raw = json.loads((snap / "raw" / "squeue.json").read_text())
    raw["jobs"] = [j for j in raw["jobs"] if j["name"] != UNSEEN]
    (snap / "squeue.json").write_text(json.dumps(raw, indent=2) + "\n")
    return _last_backfill(env)


@pytest.fixture(scope="module")
def live(site: Cluster) -> list[Capture]:
    """Submit the workload, take CAPTURES captures a backfill cycle apart, import and
    schedule each (after the cluster's processes are recorded for the stop check)."""
    env = _env(site.dir)
    ids: dict[str, str] = {}
    _submit(site.dir, 0, ids)
    _until("unseen runs", lambda: _all_run(env))
    _submit(site.dir, 1, ids)
    _until("stage 1 runs", lambda: _all_run(env))
    _submit(site.dir, 2, ids)
    snaps, cycle = [], 0
    for i in range(1, CAPTURES + 1):
        snap = site.dir / f"capture-{i}"
        cycle = _take(site.dir, snap, cycle)
        snaps.append(snap)
    site.seen.update(cluster_processes(site.dir))
    return [load_capture(s) for s in snaps]


LIVE = list(range(CAPTURES))


def _raw(cap: Capture) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = json.loads((cap.dir / "raw" / "squeue.json").read_text())["jobs"]
    return jobs


@pytest.mark.slurm
@pytest.mark.parametrize("i", LIVE)
def test_slurm_runs_and_pends_the_workload(live: list[Capture], i: int) -> None:
    """The premise: Slurm runs, holds, pends on dependencies, the begin time, the
    array limit, Resources and Priority what WORKLOAD says, with 2 array elements
    running and the unseen job running on n1 (left out of squeue.json)."""
    cap = live[i]
    seen = {}
    for job in cap.jobs:
        if job["name"] == "arr" and job["job_state"] == "RUNNING":
            continue
        reason = job["state_reason"]
        seen[job["name"]] = "R" if job["job_state"] == "RUNNING" else (
            "wait" if reason in ("Resources", "Priority") else reason
        )  # fmt: skip
    assert seen == {s.name: s.slurm for s in WORKLOAD if s.name != UNSEEN}
    elements = [j for j in cap.jobs if j["name"] == "arr" and j["job_state"] == "RUNNING"]
    assert sorted(j["array_task_id"] for j in elements) == [1, 2]
    unseen = [j for j in _raw(cap) if j["name"] == UNSEEN]
    assert [(j["job_state"], j["nodes"]) for j in unseen] == [("RUNNING", "n1")]
    reasons = {j["state_reason"] for j in cap.jobs if j["job_state"] == "PENDING"}
    assert {"Resources", "Priority"} <= reasons


@pytest.mark.slurm
@pytest.mark.parametrize("i", LIVE)
def test_slurm_job_structure_as_submitted(live: list[Capture], i: int) -> None:
    """Array record, dependency chain, begin time and hold as FIELDS.md says."""
    cap = live[i]
    record = cap.job("arr")
    assert (record["array_task_string"], record["array_max_tasks"]) == ("3-20%2", 2)
    c1, c2 = cap.id_of("c1"), cap.id_of("c2")
    assert cap.job("c2")["dependency"] == f"afterok:{c1}(unfulfilled)"
    assert cap.job("c3")["dependency"] == f"afterok:{c2}(unfulfilled)"
    later = cap.job("later")
    assert later["eligible_time"] >= later["submit_time"] + 590
    assert cap.starts[cap.id_of("later")] == later["eligible_time"]
    assert cap.job("held")["priority"] == 0
    assert all(s not in cap.starts for s in map(cap.id_of, ("arr", "c2", "c3", "held")))


@pytest.mark.slurm
@pytest.mark.parametrize("i", LIVE)
def test_slurm_gpus_and_node_counts(live: list[Capture], i: int) -> None:
    """GPU requests as FIELDS.md says; gpu4 pends although a g node has idle CPUs (its
    GPUs are taken); -N given is max_nodes, Slurm's estimate is not."""
    cap = live[i]
    assert cap.job("gpus2")["tres_per_job"] == "gres:gpu:2"
    assert cap.job("gpn")["tres_per_node"] == "gres:gpu:1"
    assert len(cap.job("gpn")["gres_detail"]) == 2
    assert cap.job("gpu4")["tres_per_job"] == "gres:gpu:4"
    assert max(cap.nodes[g]["idle_cpus"] for g in ("g1", "g2")) >= 1
    assert all(cap.nodes[g]["gres_used"] != "gpu:0" for g in ("g1", "g2"))
    assert (cap.job("n1job")["max_nodes"], cap.job("n0job")["max_nodes"]) == (1, 0)
    assert (cap.job("spread2")["node_count"], cap.job("spread2")["max_nodes"]) == (2, 0)


@pytest.mark.slurm
@pytest.mark.parametrize("i", LIVE)
def test_slurm_plans_the_deep_queue(live: list[Capture], i: int) -> None:
    """Slurm gives expected starts to the deep queue, keeps an idle node PLANNED for
    pint, and its multifactor priorities put prio above batch and vary with size; its
    /partitions gives the tiers."""
    cap = live[i]
    planned = [n for n in PENDING if cap.id_of(n) in cap.starts]
    assert len(planned) >= MIN_PLANNED, planned
    assert (cap.nodes["n4"]["state"], cap.nodes["n4"]["state_flags"]) == ("idle", ["PLANNED"])
    prio = [cap.job(n)["priority"] for n in ("gwide", "gpu4", "gpn2", "pint")]
    batch = [cap.job(n)["priority"] for n in ("big8", "n0job", "spread2", "pair2", "q1")]
    assert min(prio) > max(batch)
    assert len(set(batch)) > 1
    partitions = json.loads((cap.dir / "partitions.json").read_text())["partitions"]
    assert {p["name"]: p["priority_tier"] for p in partitions} == {"batch": 1, "prio": 2}


@pytest.mark.slurm
@pytest.mark.parametrize("i", LIVE)
def test_capture_shows_less_than_slurm_allocates(live: list[Capture], i: int) -> None:
    """With the unseen job left out, n1's alloc_cpus exceeds the captured jobs' CPUs on
    n1 by the unseen job's 4."""
    cap = live[i]
    held = 0
    for job in cap.jobs:
        for node in (job.get("job_resources") or {}).get("allocated_nodes", []):
            if node["nodename"] == "n1":
                cores = [c for s in node["sockets"].values() for c in s["cores"].values()]
                held += cores.count("allocated")
    assert cap.nodes["n1"]["alloc_cpus"] == held + 4


@pytest.mark.slurm
@pytest.mark.parametrize("i", LIVE)
def test_capture_imports(live: list[Capture], i: int) -> None:
    assert not live[i].failed, live[i].failed


@pytest.mark.slurm
@pytest.mark.parametrize("i", LIVE)
def test_agreement_with_slurm(live: list[Capture], i: int) -> None:
    """Per capture: how many jobs xce pends as Slurm does and plans when Slurm expects
    them (printed; -s shows it); all must."""
    _check_agreement(live[i])


@pytest.mark.slurm
@pytest.mark.parametrize("name", PENDING)
@pytest.mark.parametrize("i", LIVE)
def test_slurm_pending_job_pends_in_xce(live: list[Capture], i: int, name: str) -> None:
    cap = live[i]
    verdict = _verdict_or_xfail(cap, name)
    _expect(cap, name, verdict.pends, verdict.detail, start=False)


@pytest.mark.slurm
@pytest.mark.parametrize("name", PENDING)
@pytest.mark.parametrize("i", LIVE)
def test_expected_start_is_xces_planned_start(live: list[Capture], i: int, name: str) -> None:
    """Where Slurm gives an expected start, xce's planned_start is within bf_resolution."""
    cap = live[i]
    verdict = _verdict_or_xfail(cap, name)
    if verdict.start is None:
        pytest.skip(f"Slurm gives {name} no expected start in capture {i + 1}")
    _expect(cap, name, verdict.start, verdict.detail, start=True)


@pytest.mark.slurm
def test_slurm_backfill_reserves_whole_nodes(site: Cluster, live: list[Capture]) -> None:
    """Why the expected starts differ (FEATURES["whole_nodes"]), shown on its own after
    the captures: n1-n4 full, A holding n1 (8 CPUs) for 10 min; B and C, 4 CPUs each,
    pend. B is planned on n1 at A's end; C, which fits beside B on n1, is planned only
    at B's end (bf_resolution-rounded): Slurm's plan for B held all of n1."""
    env = _env(site.dir)
    jobs = [str(j["job_id"]) for j in _squeue(env)]
    if jobs:
        _run(["scancel", *jobs], env)
    _until("the queue empties", lambda: not _squeue(env))
    _until(
        "n1-n4 idle",
        lambda: _run(["sinfo", "-h", "-p", "batch", "-t", "idle", "-o", "%D"], env).strip() == "4",
    )
    ids: dict[str, str] = {}
    head = ["sbatch", "--parsable", "-o", "/dev/null", "-D", str(site.dir), "-p", "batch"]
    for name, node, limit in (
        ("A", "n1", "10"),
        ("F2", "n2", "60"),
        ("F3", "n3", "60"),
        ("F4", "n4", "60"),
    ):
        args = [*head, "-J", name, "-w", node, "-n", "8", "--mem", "1000", "-t", limit]
        ids[name] = _run([*args, "--wrap", "sleep 300"], env).strip()
    _until("A and the fillers run", lambda: _all_run(env))
    for name in ("B", "C"):
        args = [*head, "-J", name, "-n", "4", "--mem", "1000", "-t", "30"]
        ids[name] = _run([*args, "--wrap", "sleep 300"], env).strip()
    submitted = int(time.time())
    _until("a backfill cycle after B and C", lambda: _last_backfill(env) > submitted)
    starts = _starts(_run(["squeue", "--start", "-h", "-o", "%i %S %Y %r"], env))
    a_end = next(j["end_time"] for j in _squeue(env) if str(j["job_id"]) == ids["A"])
    b, c = starts[ids["B"]], starts[ids["C"]]
    assert b == a_end
    assert c == (b + 30 * 60) // BF_RESOLUTION * BF_RESOLUTION, (
        f"C expected at {c}: slot-granular plans would put it beside B at {b}"
    )
