"""The synthetic workload generator (``xce.sim.generate``) and ``xce workload generate``:
determinism, the documented mix, validity and runnability on the cluster, jobs files.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from typer.testing import CliRunner

from builders import ClusterBuilder
from xce.cli.workload_cmd import job_kind, workload_app
from xce.cluster import ClusterState, load_state, state_from_dict
from xce.core import SchedulerCore
from xce.errors import InputError
from xce.resreq import parse, requirement_for_job
from xce.sim.generate import WorkloadModel, default_cluster, generate_workload
from xce.sim.model import SimJob
from xce.sim.workload import job_to_dict, write_jobs_file

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "cluster.yaml"
SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")
FILE_KEYS = {
    "id",
    "user",
    "queue",
    "project",
    "tasks",
    "resreq",
    "submit_time",
    "runtime",
    "requested_time",
}


@pytest.fixture(scope="module")
def example() -> ClusterState:
    return load_state(EXAMPLE)


@pytest.fixture(scope="module")
def big() -> list[SimJob]:
    """5,000 jobs on the default (example) cluster."""
    return generate_workload(5000, seed=7)


def _tasks(job: SimJob) -> int:
    return job.tasks if job.tasks is not None else parse(job.resreq).total_tasks


# -- determinism ---------------------------------------------------------------------------


def test_same_seed_same_jobs() -> None:
    assert generate_workload(300, seed=3) == generate_workload(300, seed=3)
    assert generate_workload(300, seed=3) != generate_workload(300, seed=4)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_same_seed_byte_identical_file(tmp_path: Path, suffix: str) -> None:
    a, b = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    write_jobs_file(generate_workload(500, seed=11), a)
    write_jobs_file(generate_workload(500, seed=11), b)
    assert a.read_bytes() == b.read_bytes()
    assert len(a.read_bytes()) > 1000


def test_changing_the_load_keeps_the_jobs() -> None:
    """Arrivals have their own random stream: only the submit times change."""
    slow = generate_workload(400, seed=5, model=WorkloadModel(mean_interarrival=120))
    fast = generate_workload(400, seed=5, model=WorkloadModel(mean_interarrival=10))
    assert [(j.resreq, j.tasks, j.user, j.runtime) for j in slow] == [
        (j.resreq, j.tasks, j.user, j.runtime) for j in fast
    ]
    assert slow[-1].submit > 5 * fast[-1].submit


def test_no_cluster_means_the_example_cluster(example: ClusterState) -> None:
    assert generate_workload(1500, seed=2) == generate_workload(1500, seed=2, cluster=example)


def test_default_cluster_matches_the_example_file(example: ClusterState) -> None:
    default = default_cluster()
    ok = example.hosts.ok()
    assert default.hosts.names == example.hosts.names
    assert list(default.hosts.ok()) == list(ok)
    for name in ("slots", "mem"):
        assert list(default.hosts.capacity[name]) == list(example.hosts.capacity[name])
    assert list(default.hosts.strings["type"]) == list(example.hosts.strings["type"])
    for tag in ("fast", "gpu"):
        assert list(default.hosts.tags[tag]) == list(example.hosts.tags[tag])
    assert default.shared_total == example.shared_total
    assert default.limits == example.limits
    assert default.queues == example.queues
    for name in ("slots", "mem"):
        assert list(default.used[name]) == list(example.used[name])
    assert default.shared_used == example.shared_used
    assert all(r.runtime is None for r in (*default.running, *example.running))


# -- the model -----------------------------------------------------------------------------


def test_mix_is_as_documented(big: list[SimJob]) -> None:
    kinds = Counter(job_kind(j) for j in big)
    n = len(big)
    assert kinds["sequential"] / n == pytest.approx(0.60, abs=0.03)
    assert kinds["parallel"] / n == pytest.approx(0.30, abs=0.03)
    assert kinds["compound"] / n == pytest.approx(0.05, abs=0.015)
    assert kinds["alternative"] / n == pytest.approx(0.05, abs=0.015)


def test_requirement_features_all_appear(big: list[SimJob]) -> None:
    def share(text: str) -> float:
        return sum(text in j.resreq for j in big) / len(big)

    assert share("select[type==X86_64") > 0.1
    assert share("type==ARM") > 0.01
    assert share("select[fast") > 0.03
    assert share("select[gpu") > 0.003
    assert share("select[mem>") > 0.005
    assert share("rusage[mem=") > 0.5
    assert 0.005 < share("lic_x=1") < 0.06
    assert share("span[ptile=") > 0.02
    assert share("span[hosts=1]") > 0.01
    assert share("*{-}") > 0.01
    assert share("} || {") > 0.03


def test_parallel_sizes_mostly_powers_of_two(big: list[SimJob]) -> None:
    sizes = [j.tasks for j in big if job_kind(j) == "parallel"]
    assert all(s is not None and 2 <= s <= 64 for s in sizes)
    powers = sum(s in (2, 4, 8, 16, 32, 64) for s in sizes)
    assert powers / len(sizes) > 0.6


def test_submit_times_sorted_whole_seconds_and_poisson(big: list[SimJob]) -> None:
    submits = [j.submit for j in big]
    assert submits == sorted(submits)
    assert submits[0] >= 0
    assert all(s == int(s) for s in submits)
    gaps = [b - a for a, b in itertools.pairwise(submits)]
    assert statistics.mean(gaps) == pytest.approx(WorkloadModel().mean_interarrival, rel=0.05)
    # exponential gaps: the standard deviation is about the mean
    assert statistics.stdev(gaps) == pytest.approx(statistics.mean(gaps), rel=0.1)


def test_runtimes_positive_capped_log_normal(big: list[SimJob]) -> None:
    runtimes = [j.runtime for j in big]
    assert all(1 <= r <= 86400 and r == int(r) for r in runtimes)
    assert statistics.median(runtimes) == pytest.approx(600, rel=0.1)


def test_requested_time_covers_the_runtime_in_whole_minutes(big: list[SimJob]) -> None:
    for j in big:
        assert j.requested_time is not None
        assert j.runtime <= j.requested_time <= math.ceil(j.runtime * 3 / 60) * 60
        assert j.requested_time % 60 == 0


def test_users_zipf_like_and_queues(big: list[SimJob]) -> None:
    users = Counter(j.user for j in big).most_common()
    assert len(users) == 20
    assert users[0][0] == "alice"
    assert users[0][1] > 3 * users[5][1]
    queues = Counter(j.queue for j in big)
    assert queues["normal"] / len(big) == pytest.approx(0.80, abs=0.03)
    assert queues["low"] / len(big) == pytest.approx(0.05, abs=0.015)
    assert set(queues) == {"normal", "high", "low"}


def test_daily_cycle_peaks_at_the_peak_hour() -> None:
    model = WorkloadModel(daily_amplitude=0.8, peak_hour=14.0, mean_interarrival=30)
    jobs = generate_workload(8000, seed=1, model=model)
    hours = Counter(int(j.submit // 3600) % 24 for j in jobs)
    assert hours[13] + hours[14] > 3 * (hours[1] + hours[2])
    two_days = sum(j.submit < 2 * 86400 for j in jobs)  # whole cycles: the mean rate holds
    assert two_days == pytest.approx(2 * 86400 / 30, rel=0.05)


def test_load_sets_the_arrival_rate(example: ClusterState) -> None:
    jobs = generate_workload(4000, seed=3, model=WorkloadModel(load=0.9))
    work = sum(_tasks(j) * j.runtime for j in jobs)
    open_slots = float(example.hosts.capacity["slots"][example.hosts.ok()].sum())
    assert work / jobs[-1].submit / open_slots == pytest.approx(0.9, rel=0.1)


# -- valid and runnable ----------------------------------------------------------------------


def test_every_requirement_validates_on_the_example(
    big: list[SimJob], example: ClusterState
) -> None:
    for j in big:
        requirement_for_job(j.resreq, example.catalog, j.tasks, j.tasks)


def _cluster_doc(builder: ClusterBuilder) -> dict[str, Any]:
    return builder.to_dict()


ODD_CLUSTERS = {
    "tiny hosts, aggregate limits": ClusterBuilder()
    .hosts(3, slots=2, mem=3000, type="x86-64")
    .hosts(2, prefix="p", slots=2, mem=3000, type="POWER 9", fast=True)
    .limit("agg", slots=6, resources={"mem": 5000})
    .limit("bob_per_host", users=["bob"], per_host=True, slots=1),
    "memory per host, one licence": ClusterBuilder()
    .resource("mem", "consumable", "per_host")
    .host("h1", slots=8, mem=10000)
    .host("h2", slots=8, mem=40000)
    .shared("lic", 1)
    .shared("none_left", 0),
    "one slot": ClusterBuilder().host("only", slots=1),
    "work that never ends": ClusterBuilder()
    .host("a", slots=8, mem=8000, type="X86_64")
    .host("b", slots=8, mem=8000, type="ARM")
    .shared("lic", 2)
    .limit("carol", users=["carol"], slots=10, jobs=2, resources={"mem": 20000})
    .limit("carol_per_host", users=["carol"], per_host=True, slots=6)
    .running("f1", on={"a": 6}, rusage={"mem": 1000}, shared={"lic": 1}, user="carol")
    .running("f2", on={"b": 2}, rusage={"mem": 2000}, user="carol", runtime=100)
    .running("f3", on={"b": 4}, rusage={"mem": 500}, user="dave"),
    "no memory, closed big host": ClusterBuilder()
    .hosts(3, slots=4, scratch=100, gpu=True)
    .host("big", slots=64, status="closed"),
}


def _runnable_alone(doc: dict[str, Any], jobs: Sequence[SimJob]) -> list[str]:
    """Jobs that do not start when each is alone on the empty cluster."""
    doc = {k: v for k, v in doc.items() if k != "jobs"}
    # work with a runtime ends in the simulator; work without holds its share for ever
    doc["running"] = [r for r in doc.get("running", []) if r.get("runtime") is None]
    entries = [{k: v for k, v in job_to_dict(j).items() if k != "requested_time"} for j in jobs]
    state = state_from_dict({**doc, "jobs": entries})
    core = SchedulerCore(state)
    return [
        f"{pj.id} {pj.user}/{pj.queue}: {pj.resreq!r} x{pj.min_tasks}"
        for pj in state.jobs
        if core.run_session(jobs=[pj]).stats.dispatched != 1
    ]


def test_every_job_runs_on_the_example_cluster() -> None:
    doc = yaml.safe_load(EXAMPLE.read_text())
    jobs = generate_workload(2000, seed=13)
    assert _runnable_alone(doc, jobs) == []


@pytest.mark.parametrize("name", sorted(ODD_CLUSTERS))
def test_every_job_runs_on_odd_clusters(name: str) -> None:
    doc = _cluster_doc(ODD_CLUSTERS[name])
    jobs = generate_workload(800, seed=21, cluster=state_from_dict(doc))
    assert _runnable_alone(doc, jobs) == []


def test_type_values_are_written_as_the_language_reads_them() -> None:
    """A host type outside bare words is quoted in the quotes it does not hold (the
    requirement language has no escapes): Greek letters as they are (they were written
    as JSON's \\u0391, which no host has, so those jobs never ran), ``it's`` in double
    quotes, ``a"b`` in single ones; one holding both quotes cannot be written and is
    never selected. Every job runs alone."""
    odd = ("ΑΒΓ", "it's", 'a"b', "q'\"q")
    builder = ClusterBuilder()
    for i, value in enumerate(odd):
        builder.host(f"h{i}", slots=4, mem=4000, type=value)
    doc = _cluster_doc(builder)
    jobs = generate_workload(600, seed=3, cluster=state_from_dict(doc))
    text = " ".join(j.resreq for j in jobs)
    assert 'type=="ΑΒΓ"' in text
    assert 'type=="it\'s"' in text
    assert "type=='a\"b'" in text
    assert "q'" not in text
    assert _runnable_alone(doc, jobs) == []


def test_names_come_from_the_cluster() -> None:
    state = ODD_CLUSTERS["tiny hosts, aggregate limits"].build()
    jobs = generate_workload(500, seed=1, cluster=state)
    text = " ".join(j.resreq for j in jobs)
    assert 'type=="POWER 9"' in text
    assert 'type=="x86-64"' in text
    assert "X86_64" not in text
    assert "lic_x" not in text
    assert max(_tasks(j) for j in jobs) <= 6


def test_a_cluster_that_runs_nothing_is_an_input_error() -> None:
    state = ClusterBuilder().host("down", slots=4, status="unavail").build()
    with pytest.raises(InputError, match="no open host"):
        generate_workload(10, seed=0, cluster=state)


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ({"mean_interarrival": 0}, "mean_interarrival"),
        ({"runtime_cap": 0.5}, "runtime_cap"),
        ({"daily_amplitude": 1.5}, "daily_amplitude"),
        ({"sequential": 0.8, "parallel": 0.3}, "parallel"),
        ({"load": -1.0}, "load"),
        ({"max_tasks": 1}, "max_tasks"),
        ({"queues": ()}, "queues"),
    ],
)
def test_bad_model_is_an_input_error(knobs: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        generate_workload(10, seed=0, model=WorkloadModel(**knobs))


# -- jobs files ------------------------------------------------------------------------------


def _read(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines()]
    doc = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    assert set(doc) == {"jobs"}
    entries: list[dict[str, Any]] = doc["jobs"]
    return entries


def _from_entry(e: dict[str, Any]) -> SimJob:
    return SimJob(
        id=str(e["id"]),
        submit=float(e["submit_time"]),
        runtime=float(e["runtime"]),
        tasks=e.get("tasks"),
        user=e["user"],
        queue=e["queue"],
        project=e["project"],
        resreq=e["resreq"],
        requested_time=e.get("requested_time"),
    )


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_file_round_trip(tmp_path: Path, suffix: str) -> None:
    jobs = generate_workload(1000, seed=9)
    path = tmp_path / f"w{suffix}"
    write_jobs_file(jobs, path)
    entries = _read(path)
    assert all(set(e) <= FILE_KEYS for e in entries)
    assert all(
        ("tasks" in e) == (job_kind(j) != "compound") for e, j in zip(entries, jobs, strict=True)
    )
    assert [_from_entry(e) for e in entries] == jobs


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_the_simulator_reads_what_the_generator_writes(tmp_path: Path, suffix: str) -> None:
    from xce.sim.workload import load_jobs_file

    jobs = generate_workload(1000, seed=10)
    path = tmp_path / f"w{suffix}"
    write_jobs_file(jobs, path)
    assert load_jobs_file(path) == jobs


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_awkward_values_round_trip(tmp_path: Path, suffix: str) -> None:
    odd = [
        SimJob("007", 0.5, 1e-05, 2, user="no", queue="on", project="null", resreq='a"b'),
        SimJob("x: y", 1.0, 12.25, None, user="Ünïcode", queue="-dash", resreq="2*{-} + 1*{-}"),
        SimJob("3", 2.0, 3.0, 1, user="yes", project="1e3", resreq="select[x=='it''s']"),
    ]
    path = tmp_path / f"odd{suffix}"
    write_jobs_file(odd, path)
    assert [_from_entry(e) for e in _read(path)] == odd


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_empty_workload_file(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"empty{suffix}"
    write_jobs_file([], path)
    assert _read(path) == []


def test_unknown_suffix_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="jsonl"):
        write_jobs_file(generate_workload(3, seed=0), tmp_path / "w.csv")


# -- the command line ----------------------------------------------------------------------


def _xce(*args: str) -> Any:
    """``xce workload ...`` as main.py registers it."""
    root = typer.Typer()

    @root.callback()
    def _root() -> None:
        """xce."""

    root.add_typer(workload_app, name="workload")
    return CliRunner().invoke(root, ["workload", *args])


def test_cli_writes_what_the_library_writes(tmp_path: Path) -> None:
    out = tmp_path / "w.yaml"
    result = _xce("generate", "--jobs", "200", "--out", str(out), "--seed", "4")
    assert result.exit_code == 0, result.output
    assert "wrote 200 jobs" in result.output
    lib = tmp_path / "lib.yaml"
    write_jobs_file(generate_workload(200, seed=4), lib)
    assert out.read_bytes() == lib.read_bytes()


def test_cli_knobs_and_cluster(tmp_path: Path) -> None:
    out = tmp_path / "w.jsonl"
    cluster = tmp_path / "c.yaml"
    cluster.write_text(yaml.safe_dump(ODD_CLUSTERS["one slot"].to_dict()))
    result = _xce(
        "generate", "-n", "50", "-o", str(out), "--cluster", str(cluster),
        "--mean-interarrival", "5", "--daily-cycle", "0.5", "--runtime-median", "60",
        "--runtime-cap", "600", "--users", "3", "--queues", "batch=1, debug=0.5",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    entries = _read(out)
    assert len(entries) == 50
    assert all(e.get("tasks") == 1 and e["runtime"] <= 600 for e in entries)
    assert {e["user"] for e in entries} <= {"alice", "bob", "carol"}
    assert {e["queue"] for e in entries} == {"batch", "debug"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--jobs", "0"], "--jobs"),
        (["--out", "{tmp}/w.csv"], "--out"),
        (["--out", "{tmp}/missing/w.yaml"], "missing"),
        (["--cluster", "{tmp}/nope.yaml"], "nope.yaml"),
        (["--mean-interarrival", "-1"], "--mean-interarrival"),
        (["--daily-cycle", "2"], "--daily-cycle"),
        (["--load", "0"], "--load"),
        (
            ["--load", "0.5", "--mean-interarrival", "10"],
            "--mean-interarrival and --load: give one",
        ),
        (["--queues", "normal"], "--queues"),
        (["--queues", "a=1,b=x"], "--queues"),
        (["--queues", "a=0"], "--queues"),
        (["--queues", "normal=1,normal=2"], "--queues: queue 'normal' is given twice"),
        (["--cluster", "{tmp}/full.yaml"], "the cluster ({tmp}/full.yaml) has no open host"),
    ],
)
def test_cli_bad_input_exits_2(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "full.yaml").write_text("hosts: [{name: h0, slots: 1, status: closed}]\n")
    message = message.format(tmp=tmp_path)
    base = {"--jobs": "10", "--out": f"{tmp_path}/w.yaml"}
    given = dict(zip(args[::2], (a.format(tmp=tmp_path) for a in args[1::2]), strict=True))
    argv = [x for k, v in {**base, **given}.items() for x in (k, v)]
    result = _xce("generate", *argv)
    assert result.exit_code == 2
    assert message in result.output


def test_cli_usage_error_exits_2() -> None:
    assert _xce("generate", "--jobs", "many").exit_code == 2


def test_registered_in_the_xce_command(tmp_path: Path) -> None:
    from xce.cli.main import app

    out = tmp_path / "w.json"
    result = CliRunner().invoke(app, ["workload", "generate", "-n", "20", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert len(_read(out)) == 20
    assert (
        CliRunner().invoke(app, ["workload", "generate", "-n", "0", "-o", str(out)]).exit_code == 2
    )
