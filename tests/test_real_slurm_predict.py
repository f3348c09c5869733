"""``xce predict`` against a real Slurm's own start estimates (issue 27; docs/real-slurm.md,
"The predict profile").

``.ci/slurm/start.sh DIR predict`` starts Debian's Slurm 22.05 with accounting (MariaDB
and slurmdbd in DIR), so that ``sacct --json`` gives the finished jobs. The live test
(marked ``slurm`` and ``slow``: it takes about 8 minutes, so ``make test-slurm`` runs it
and ``make test`` does not) creates the Unix users of ``TYPES`` where missing, submits
a warm-up wave as those users (``sbatch --uid``) and waits for it to end — it is the
history — then the main wave at once, a deep queue. While jobs pend it takes
``CAPTURES`` captures (``squeue --json``, ``sinfo --json``, ``scontrol show partition``,
``sprio -l``, ``squeue --start``, and ``sacct --json`` of the jobs ended before the
capture as ``history.json``); after every job has ended, ``sacct --json`` once more for
the actual starts.

Per capture, for every job pending in it that later started: Slurm's estimate (the
pending job's ``start_time`` in ``squeue --json``, what ``squeue --start`` prints, where
set) against the actual start, and ``xce predict``'s (``xce import slurm CAPDIR --now
T``, then ``xce predict STATE --history CAPDIR/history.json --predictor history
--backfill slurm --json``) against it. Pooled over the captures, xce's mean absolute
error must be at most ``MAX_RATIO`` of Slurm's, and no prediction may be earlier than the
capture or the job's begin time.

The same comparison runs, without Slurm and unmarked, over the captures committed in
``tests/data/slurm/local-22.05.8-predict-v0.0.38/`` (README.md there).
"""

from __future__ import annotations

import json
import os
import pwd
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from test_real_slurm import Cluster, _env, _require_slurm, _run, _stop, cluster_processes

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / ".ci" / "slurm"
XCE = Path(sys.executable).parent / "xce"
DATA = ROOT / "tests" / "data" / "slurm" / "local-22.05.8-predict-v0.0.38"
SEED = 27
CAPTURES = 3
CAPTURE_AT = (0.0, 40.0, 80.0)  # s after the main wave is in, at the earliest
MAX_RATIO = 0.6  # xce's pooled mean absolute error, at most this share of Slurm's
MIN_COMPARED = 10  # jobs compared in each capture, at least
WARMUP_TIMEOUT = 240.0  # s: the warm-up wave's longest job sleeps 105 s
DRAIN_TIMEOUT = 540.0  # s: the main wave ends in about 5 minutes
CYCLE_TIMEOUT = 60.0  # s: bound on waiting for a backfill cycle
ACTIVE = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED"}
ENDED = {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY"}


@dataclass(frozen=True)
class JobType:
    """A kind of job one user submits: its name, time limit (minutes), partition, and
    the share of the limit it typically runs."""

    user: str
    name: str
    limit: int
    partition: str
    share: float


# batch: n1-n4 (8 CPUs each, tier 1); prio: n3-n4, g1-g2 (8, 8, 16, 16 CPUs, tier 2).
# Each user's jobs run a typical share of their limit (alice little of it, carol most).
TYPES = (
    JobType("xce_alice", "a-sim", 5, "batch", 0.20),
    JobType("xce_alice", "a-post", 2, "batch", 0.25),
    JobType("xce_bob", "b-fit", 3, "batch", 0.50),
    JobType("xce_bob", "b-scan", 1, "prio", 0.50),
    JobType("xce_carol", "c-md", 2, "prio", 0.85),
    JobType("xce_carol", "c-prep", 1, "batch", 0.90),
    JobType("xce_dave", "d-train", 4, "prio", 0.35),
    JobType("xce_dave", "d-eval", 2, "prio", 0.40),
    JobType("xce_erin", "e-mesh", 2, "prio", 0.65),
    JobType("xce_erin", "e-solve", 5, "batch", 0.30),
)
USERS = sorted({t.user for t in TYPES})
WARMUP_PER_TYPE = 2  # finished jobs of each (user, name) before the main wave
MAIN_JOBS = 40
DELAYED = 3  # main-wave jobs with --begin=now+BEGIN_DELAY
BEGIN_DELAY = 120  # s
CPUS = (1, 2, 4, 8, 16, 32)
CPU_WEIGHTS = (5, 5, 4, 3, 2, 1)
NOISE = 0.15  # a job's share is its type's times U(1 - NOISE, 1 + NOISE), in [0.1, 0.95]


@dataclass(frozen=True)
class Submission:
    """One sbatch: the job's kind, CPUs, how long it sleeps, and a begin delay (s)."""

    type: JobType
    cpus: int
    sleep: int
    begin: int = 0

    def args(self) -> list[str]:
        t = self.type
        out = ["sbatch", "--parsable", f"--uid={t.user}", "-J", t.name, "-p", t.partition]
        out += ["-n", str(self.cpus), "--mem-per-cpu=100", "-t", str(t.limit)]
        out += ["-o", "/dev/null", "-D", "/"]
        if self.begin:
            out.append(f"--begin=now+{self.begin}")
        return [*out, "--wrap", f"sleep {self.sleep}"]


def _sleep(rng: random.Random, t: JobType) -> int:
    share = min(max(t.share * rng.uniform(1 - NOISE, 1 + NOISE), 0.10), 0.95)
    return max(1, round(share * t.limit * 60))


def workload(seed: int = SEED) -> tuple[list[Submission], list[Submission]]:
    """(warm-up, main wave): the same every run."""
    rng = random.Random(seed)
    warmup = [
        Submission(t, rng.choice((1, 2, 4)), _sleep(rng, t))
        for t in TYPES
        for _ in range(WARMUP_PER_TYPE)
    ]
    main = []
    for i in range(MAIN_JOBS):
        t = rng.choice(TYPES)
        cpus = rng.choices(CPUS, CPU_WEIGHTS)[0]
        main.append(Submission(t, cpus, _sleep(rng, t), BEGIN_DELAY if i < DELAYED else 0))
    rng.shuffle(main)
    return warmup, main


# --- the comparison (live and committed) ----------------------------------------------


@dataclass(frozen=True)
class Row:
    """One pending job of a capture: when it started, Slurm's and xce's estimates."""

    job: str
    actual: float
    slurm: float | None
    xce: float | None
    earliest: float  # the capture's time, or the job's begin time if later
    limit: float | None = None  # xce predict --predictor limit: the replay alone


@dataclass
class Result:
    """One capture's comparison."""

    name: str
    now: float
    rows: list[Row] = field(default_factory=list)
    failed: str = ""
    predict: dict[str, Any] = field(default_factory=dict)

    def compared(self) -> list[Row]:
        """The rows with Slurm's estimate (xce's may be missing: counted as a miss)."""
        return [r for r in self.rows if r.slurm is not None]

    def errors(self) -> tuple[list[float], list[float], list[float]]:
        """Absolute start errors (s) of Slurm, xce, and xce's replay with every job
        running to its limit, over the rows both Slurm and xce estimate."""
        rows = [r for r in self.compared() if r.xce is not None]
        slurm = [abs(r.slurm - r.actual) for r in rows if r.slurm is not None]
        xce = [abs(r.xce - r.actual) for r in rows if r.xce is not None]
        return slurm, xce, [abs(r.limit - r.actual) for r in rows if r.limit is not None]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:400] if lines else "(no message)"


def compare(snap: Path, actual: dict[str, float], work: Path) -> Result:
    """Import ``snap`` and predict it (state files in ``work``); compare with ``actual``
    ({job id: start})."""
    now = float((snap / "time").read_text())
    result = Result(snap.name, now)
    jobs = json.loads((snap / "squeue.json").read_text())["jobs"]
    state = work / f"{snap.name}-state.yaml"
    done = subprocess.run(
        [str(XCE), "import", "slurm", str(snap), "-o", str(state), "--force",
         "--now", str(int(now))],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        result.failed = f"xce import slurm exits {done.returncode}: {_last_line(done.stderr)}"
        return result
    starts = {}
    for predictor in ("history", "limit"):
        done = subprocess.run(
            [str(XCE), "predict", str(state), "--history", str(snap / "history.json"),
             "--predictor", predictor, "--backfill", "slurm", "--json"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            result.failed = (
                f"xce predict --predictor {predictor} exits {done.returncode}: "
                f"{_last_line(done.stderr)}"
            )
            return result
        doc = json.loads(done.stdout)
        result.predict.setdefault(predictor, doc)
        starts[predictor] = {str(j["job"]): j.get("start") for j in doc["jobs"]}
    xce, limit = starts["history"], starts["limit"]
    for job in jobs:
        job_id = str(job["job_id"])
        if job["job_state"] != "PENDING" or job_id not in actual:
            continue
        slurm = float(job["start_time"]) if job.get("start_time") else None
        begin = float(job.get("eligible_time") or 0)
        result.rows.append(
            Row(job_id, actual[job_id], slurm, xce.get(job_id), max(now, begin), limit.get(job_id))
        )
    return result


def report(results: list[Result]) -> dict[str, Any]:
    """Per capture and pooled: jobs compared, mean absolute errors (s), their ratio."""
    out: dict[str, Any] = {"captures": []}
    pooled_slurm: list[float] = []
    pooled_xce: list[float] = []
    pooled_limit: list[float] = []
    for res in results:
        slurm, xce, limit = res.errors()
        pooled_slurm += slurm
        pooled_xce += xce
        pooled_limit += limit
        out["captures"].append({
            "capture": res.name,
            "now": res.now,
            "pending_that_started": len(res.rows),
            "with_slurm_estimate": len(res.compared()),
            "compared": len(xce),
            "slurm_mae": round(_mean(slurm), 1),
            "xce_mae": round(_mean(xce), 1),
            "ratio": round(_mean(xce) / _mean(slurm), 3) if slurm else None,
            "xce_limit_mae": round(_mean(limit), 1),
            "xce_mae_all": round(
                _mean([abs(r.xce - r.actual) for r in res.rows if r.xce is not None]), 1
            ),
            "failed": res.failed,
        })  # fmt: skip
    out["pooled"] = {
        "compared": len(pooled_xce),
        "slurm_mae": round(_mean(pooled_slurm), 1),
        "xce_mae": round(_mean(pooled_xce), 1),
        "ratio": round(_mean(pooled_xce) / _mean(pooled_slurm), 3) if pooled_slurm else None,
        "xce_limit_mae": round(_mean(pooled_limit), 1),
    }
    return out


def _print_report(title: str, rep: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(rep, indent=2) + "\n")
    print(f"\n{title} (also {path})")
    print(
        f"  {'capture':<10} {'jobs':>5} {'Slurm MAE s':>12} {'xce MAE s':>10} {'ratio':>6}"
        f" {'xce limit MAE s':>16}"
    )
    for c in [*rep["captures"], {**rep["pooled"], "capture": "pooled", "failed": ""}]:
        print(
            f"  {c['capture']:<10} {c['compared']:>5} {c['slurm_mae']:>12} {c['xce_mae']:>10} "
            f"{c['ratio']!s:>6} {c['xce_limit_mae']:>16}"
            + (f"  FAILED: {c['failed']}" if c["failed"] else "")
        )


def check(results: list[Result]) -> None:
    """The acceptance: every capture compared, xce never before a job's earliest start,
    a prediction for every job Slurm estimates, the pooled error ratio."""
    assert len(results) >= CAPTURES, f"{len(results)} captures, fewer than {CAPTURES}"
    for res in results:
        assert not res.failed, f"{res.name}: {res.failed}"
        early = [r for r in res.rows if r.xce is not None and r.xce < r.earliest]
        assert not early, f"{res.name}: xce predicts starts before the earliest: {early}"
        missing = [r.job for r in res.compared() if r.xce is None]
        assert not missing, f"{res.name}: xce predicts no start for {missing}"
        assert len(res.compared()) >= MIN_COMPARED, (
            f"{res.name}: {len(res.compared())} jobs with Slurm's estimate compared, "
            f"fewer than {MIN_COMPARED}"
        )
    rep = report(results)["pooled"]
    assert rep["xce_mae"] <= MAX_RATIO * rep["slurm_mae"], (
        f"xce's pooled mean absolute start error {rep['xce_mae']} s is more than "
        f"{MAX_RATIO} of Slurm's {rep['slurm_mae']} s (over {rep['compared']} jobs)"
    )
    # Part of the gain is the replay itself (Slurm's estimate is one backfill plan, which
    # holds whole nodes for each planned job; a replay plans again at every event): the
    # learned runtimes must do better than the replay with every job at its limit.
    assert rep["xce_mae"] < rep["xce_limit_mae"], (
        f"xce's error with learned runtimes ({rep['xce_mae']} s) is no smaller than with "
        f"every job at its limit ({rep['xce_limit_mae']} s)"
    )


# --- the committed captures (no Slurm needed) --------------------------------------------

COMMITTED = sorted(p for p in DATA.glob("capture-*") if p.is_dir())


def _actual(path: Path) -> dict[str, float]:
    return {k: float(v["start"]) for k, v in json.loads(path.read_text())["jobs"].items()}


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory) -> list[Result]:
    work = tmp_path_factory.mktemp("predict-captures")
    actual = _actual(DATA / "actual-starts.txt")
    results = [compare(snap, actual, work) for snap in COMMITTED]
    _print_report(
        f"xce predict vs Slurm's estimates, committed captures ({DATA.name})",
        report(results), work / "report.json",
    )  # fmt: skip
    return results


def test_committed_captures_are_there() -> None:
    assert len(COMMITTED) >= CAPTURES, f"fewer than {CAPTURES} captures in {DATA}"
    assert (DATA / "actual-starts.txt").is_file()


def test_committed_slurm_estimates_are_late() -> None:
    """The premise, without xce: Slurm plans with the limits, so its estimates of the
    committed captures' jobs are mostly later than the actual starts."""
    actual = _actual(DATA / "actual-starts.txt")
    late = early = 0
    for snap in COMMITTED:
        for job in json.loads((snap / "squeue.json").read_text())["jobs"]:
            start = actual.get(str(job["job_id"]))
            if job["job_state"] == "PENDING" and job.get("start_time") and start is not None:
                late += job["start_time"] > start
                early += job["start_time"] < start
    assert late > 3 * early, (late, early)


def test_committed_predictions_beat_slurm(committed: list[Result]) -> None:
    check(committed)


# --- the live run ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def users() -> Iterator[list[str]]:
    """The workload's Unix users; those this fixture had to create are removed after."""
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
def predict_cluster(
    tmp_path_factory: pytest.TempPathFactory, users: list[str]
) -> Iterator[Cluster]:
    """The predict profile's cluster. It runs in a directory of its own under /tmp,
    mode 711: the workload's users must reach their job scripts in its spool (pytest's
    base directory is root's alone, and every job would exit 13 there at once). When
    it has stopped, what is worth keeping (logs, captures, the report) is copied into
    pytest's temporary directory and the rest (the database, the spool) removed."""
    base = Path(tempfile.mkdtemp(prefix="xce-slurm-predict-"))
    base.chmod(0o711)
    keep = tmp_path_factory.mktemp("slurm-predict")
    running = Cluster(base, {})
    try:
        _run(["bash", str(SCRIPTS / "start.sh"), str(base), "predict"], timeout=120)
        running.seen.update(cluster_processes(base))
        env = _env(base)
        for user in users:
            _run(["sacctmgr", "-i", "add", "user", user, "account=xce"], env)
        yield running
    finally:
        try:
            _stop(base, running.seen)
        finally:
            skip = shutil.ignore_patterns("db", "spool", "state", "munge", "*.sock")
            shutil.copytree(base, keep, ignore=skip, dirs_exist_ok=True)
            shutil.rmtree(base, ignore_errors=True)
            print(f"\nthe predict cluster's logs and captures: {keep}")


def _sacct_env(cluster: Path) -> dict[str, str]:
    # sacct fails on its own default start time under SLURM_TIME_FORMAT=%s ("Invalid
    # time specification"); its JSON has epoch seconds anyway.
    env = _env(cluster)
    env.pop("SLURM_TIME_FORMAT", None)
    return env


def _sacct(cluster: Path) -> dict[str, Any]:
    """``sacct --json`` of every job of the cluster (its database is new), steps left
    out (they double the size and say nothing of a job's start or end)."""
    doc: dict[str, Any] = json.loads(
        _run(["sacct", "--json", "-a", "-S", "2020-01-01"], _sacct_env(cluster))
    )
    for job in doc["jobs"]:
        job.pop("steps", None)
    return doc


def _squeue(env: dict[str, str]) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = json.loads(_run(["squeue", "--json"], env))["jobs"]
    return [j for j in jobs if j["job_state"] in ACTIVE]


def _last_backfill(env: dict[str, str]) -> int:
    for line in _run(["sdiag"], env).split("Backfilling stats", 1)[-1].splitlines():
        if "Last cycle when:" in line and "(" in line:
            return int(line.rsplit("(", 1)[1].rstrip(")"))
    return 0


def _until(what: str, ok: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        if time.monotonic() > deadline:
            raise AssertionError(f"Slurm: {what} not within {timeout} s")
        time.sleep(1.0)


def _compact(doc: dict[str, Any]) -> str:
    return json.dumps(doc, separators=(",", ":")) + "\n"


def _take(cluster: Path, snap: Path) -> None:
    """A capture, right after a backfill cycle that began after this call: the inputs
    of ``xce import slurm`` (ended jobs left out of squeue's JSON), squeue --start,
    and sacct's jobs ended by then as ``history.json``."""
    env = _env(cluster)
    asked = int(time.time())
    _until("a new backfill cycle", lambda: _last_backfill(env) > asked, CYCLE_TIMEOUT)
    snap.mkdir(parents=True)
    now = int(time.time())
    squeue = json.loads(_run(["squeue", "--json"], env))
    squeue["jobs"] = [j for j in squeue["jobs"] if j["job_state"] in ACTIVE]
    (snap / "squeue.json").write_text(_compact(squeue))
    texts = {
        "squeue-start.txt": ["squeue", "--start", "-h", "-o", "%i %S %Y %r"],
        "scontrol-partition.txt": ["scontrol", "show", "partition"],
        "sprio.txt": ["sprio", "-l"],
    }
    for name, command in texts.items():
        (snap / name).write_text(_run(command, env))
    (snap / "sinfo.json").write_text(_compact(json.loads(_run(["sinfo", "--json"], env))))
    history = _sacct(cluster)
    history["jobs"] = [
        j for j in history["jobs"]
        if j["state"]["current"] in ENDED and 0 < j["time"]["end"] <= now
    ]  # fmt: skip
    (snap / "history.json").write_text(_compact(history))
    (snap / "time").write_text(f"{now}\n")


def _actual_starts(doc: dict[str, Any], main: dict[str, Submission]) -> dict[str, Any]:
    """{job id: name, user, start, end, limit, sleep} of the main wave's jobs."""
    out = {}
    for job in doc["jobs"]:
        job_id = str(job["job_id"])
        if job_id in main and job["time"]["start"]:
            out[job_id] = {
                "name": job["name"],
                "user": job["user"],
                "start": job["time"]["start"],
                "end": job["time"]["end"],
                "limit_min": job["time"]["limit"],
                "sleep": main[job_id].sleep,
                "state": job["state"]["current"],
            }
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


@dataclass
class Live:
    dir: Path
    snaps: list[Path]
    actual: dict[str, Any]
    seconds: float


@pytest.fixture(scope="module")
def live(predict_cluster: Cluster) -> Live:
    """The warm-up wave until it has ended, the main wave, CAPTURES captures, the main
    wave until it has ended, sacct's actual starts (DIR/actual-starts.json)."""
    began = time.monotonic()
    cluster = predict_cluster.dir
    env = _env(cluster)
    warmup, main = workload()
    for sub in warmup:
        _run(sub.args(), env)
    _until("the warm-up wave ends", lambda: not _squeue(env), WARMUP_TIMEOUT)
    ids: dict[str, Submission] = {}
    for sub in main:
        ids[_run(sub.args(), env).strip().split(";")[0]] = sub
    submitted = time.monotonic()
    snaps = []
    for i, at in enumerate(CAPTURE_AT[:CAPTURES], start=1):
        time.sleep(max(0.0, submitted + at - time.monotonic()))
        snap = cluster / f"capture-{i}"
        _take(cluster, snap)
        snaps.append(snap)
    predict_cluster.seen.update(cluster_processes(cluster))
    _until("the main wave ends", lambda: not _squeue(env), DRAIN_TIMEOUT)

    def recorded() -> bool:
        ended = {
            str(j["job_id"]) for j in _sacct(cluster)["jobs"] if j["state"]["current"] in ENDED
        }
        return set(ids) <= ended

    _until("sacct has every job's end", recorded, 60.0)
    actual = {"jobs": _actual_starts(_sacct(cluster), ids)}
    (cluster / "actual-starts.json").write_text(json.dumps(actual, indent=1) + "\n")
    return Live(cluster, snaps, actual["jobs"], time.monotonic() - began)


@pytest.mark.slurm
@pytest.mark.slow
def test_live_workload_ran(live: Live) -> None:
    """The premise: every main-wave job ran to its end as submitted (none hit its
    limit), each capture has jobs pending with Slurm's estimates, and its history only
    jobs ended before it."""
    _, main = workload()
    assert len(live.actual) == len(main)
    assert {a["state"] for a in live.actual.values()} == {"COMPLETED"}
    for snap in live.snaps:
        now = int((snap / "time").read_text())
        jobs = json.loads((snap / "squeue.json").read_text())["jobs"]
        estimated = [j for j in jobs if j["job_state"] == "PENDING" and j["start_time"]]
        assert len(estimated) >= MIN_COMPARED, snap.name
        history = json.loads((snap / "history.json").read_text())["jobs"]
        assert len(history) >= WARMUP_PER_TYPE * len(TYPES)
        assert all(0 < j["time"]["end"] <= now for j in history)
    print(f"\nlive run: {live.seconds:.0f} s from the warm-up to the last sacct ({live.dir})")


@pytest.mark.slurm
@pytest.mark.slow
def test_live_predictions_beat_slurm(live: Live) -> None:
    actual = {k: float(v["start"]) for k, v in live.actual.items()}
    results = [compare(snap, actual, live.dir) for snap in live.snaps]
    _print_report(
        f"xce predict vs Slurm's estimates, live ({live.dir})",
        report(results), live.dir / "report.json",
    )  # fmt: skip
    check(results)


def _copy_for_commit(live: Live, to: Path) -> None:  # pragma: no cover - a helper
    """Copy a live run's captures as committed data (XCE_SAVE_PREDICT_CAPTURES=DIR)."""
    to.mkdir(parents=True, exist_ok=True)
    for snap in live.snaps:
        shutil.copytree(snap, to / snap.name, dirs_exist_ok=True)
    shutil.copy(live.dir / "actual-starts.json", to / "actual-starts.txt")
    shutil.copy(live.dir / "slurm.conf", to / "slurm.conf")


@pytest.mark.slurm
@pytest.mark.slow
def test_live_save_captures(live: Live) -> None:
    """With XCE_SAVE_PREDICT_CAPTURES=DIR, the run's captures are copied to DIR (how
    the committed ones were made)."""
    target = os.environ.get("XCE_SAVE_PREDICT_CAPTURES")
    if not target:
        pytest.skip("XCE_SAVE_PREDICT_CAPTURES not set")
    _copy_for_commit(live, Path(target))
