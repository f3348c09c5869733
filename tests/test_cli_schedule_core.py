"""``xce schedule STATE --picker NAME --threads --snapshot PATH`` and the session
statistics (issue 4: "`xce schedule STATE --picker NAME` and `--threads`; session
statistics ... in the table and the JSON `stats`"; snapshots "that `xce schedule`
replays")."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from builders import ClusterBuilder
from xce.cli.main import app
from xce.cluster import load_state

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "cluster.yaml"
PICKERS = ("fcfs", "strict", "fairshare")
STATS_KEYS = {
    "jobs",
    "dispatched",
    "pending",
    "pending_by_reason",
    "cache_hits",
    "plans_tried",
    "host_tries",
    "threads",
}
TIMING = ("threads",)  # what may differ between otherwise identical runs


def schedule(*args: str | Path) -> Any:
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, ["schedule", *map(str, args)])


def schedule_json(*args: str | Path) -> dict[str, Any]:
    result = schedule(*map(str, args), "--json")
    assert result.exit_code == 0, result.stderr
    info: dict[str, Any] = json.loads(result.stdout)
    return info


def decisions_only(info: dict[str, Any]) -> dict[str, Any]:
    """The decisions JSON without the timing stats."""
    stats = {k: v for k, v in info["stats"].items() if k not in TIMING}
    return {**info, "stats": stats}


def blocking_state(tmp_path: Path, **top: Any) -> Path:
    """Queue ``q``: head h1 cannot start now (r0 holds half of h0; on the empty cluster it
    would run, so it waits for resources), q2 could; strict blocks q2, fcfs runs it."""
    doc = (
        ClusterBuilder()
        .host("h0", slots=4)
        .running("r0", {"h0": 2})
        .queue("q", priority=10)
        .job("h1", 4, queue="q", submit_time=0)
        .job("q2", 1, queue="q", submit_time=1)
        .job("o1", 1, queue="other", submit_time=0)
        .to_dict()
    )
    path = tmp_path / "blocking.json"
    path.write_text(json.dumps(doc | top))
    return path


def fairshare_state(tmp_path: Path) -> Path:
    """Queue ``fs`` with shares alice 3, bob 1; bob submitted first; 1 slot each job."""
    doc = ClusterBuilder().host("h0", slots=3).queue("fs", shares={"alice": 3, "bob": 1})
    for i, user in enumerate(["bob", "bob", "alice", "alice"]):
        doc.job(f"{user[0]}{i}", user=user, queue="fs", submit_time=i)
    path = tmp_path / "fairshare.yaml"
    path.write_text(json.dumps(doc.to_dict()))  # JSON is YAML
    return path


def reasons(info: dict[str, Any]) -> dict[str, str]:
    out = {d["job"]: "run" for d in info["dispatched"]}
    out.update({p["job"]: p["reason"] for p in info["pending"]})
    return out


# --- --picker --------------------------------------------------------------------------
@pytest.mark.parametrize("picker", PICKERS)
def test_each_builtin_picker_schedules_the_example(picker: str) -> None:
    """``xce schedule examples/cluster.yaml --picker NAME``: exit 0, every job decided once."""
    info = schedule_json(EXAMPLE, "--picker", picker)
    jobs = [d["job"] for d in info["dispatched"]] + [p["job"] for p in info["pending"]]
    assert sorted(jobs) == sorted(j.id for j in load_state(EXAMPLE).jobs)
    assert info["stats"]["jobs"] == len(jobs)


@pytest.mark.parametrize(
    ("args", "top", "q2"),
    [
        ((), {}, "run"),
        (("--picker", "fcfs"), {}, "run"),
        (("--picker", "strict"), {}, "QUEUE_BLOCKED"),
        ((), {"picker": "strict"}, "QUEUE_BLOCKED"),
        (("--picker", "fcfs"), {"picker": "strict"}, "run"),
    ],
    ids=["default", "fcfs", "strict", "file says strict", "--picker overrides the file"],
)
def test_picker_option_sets_the_default_picker(
    tmp_path: Path, args: tuple[str, ...], top: dict[str, str], q2: str
) -> None:
    """``--picker`` is the default picker for queues naming none; it overrides the state
    file's top-level ``picker:``; the strict picker's blocked job says whom it waits for."""
    info = schedule_json(blocking_state(tmp_path, **top), *args)
    assert reasons(info) == {"h1": "NOT_ENOUGH_SLOTS", "q2": q2, "o1": "run"}
    if q2 == "QUEUE_BLOCKED":
        (blocked,) = (p for p in info["pending"] if p["job"] == "q2")
        assert "h1" in blocked["message"]


def test_picker_fairshare_orders_by_shares(tmp_path: Path) -> None:
    """``--picker fairshare``: alice (share 3) before bob (share 1) despite bob's earlier
    jobs; 3 slots, so bob's second job pends. ``fcfs`` runs bob's two first."""
    path = fairshare_state(tmp_path)
    fair = schedule_json(path, "--picker", "fairshare")
    # alice 3/1 > bob 1/1 -> a2; alice 3/2 > 1 -> a3; alice done -> b0; no slot for b1
    assert [d["job"] for d in fair["dispatched"]] == ["a2", "a3", "b0"]
    fcfs = schedule_json(path, "--picker", "fcfs")
    assert [d["job"] for d in fcfs["dispatched"]] == ["b0", "b1", "a2"]


def test_an_unknown_picker_exits_2_listing_the_known_ones() -> None:
    """``--picker nope``: exit 2, nothing on stdout, stderr names it and every builtin."""
    result = schedule(EXAMPLE, "--picker", "nope")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "unknown picker 'nope'" in result.stderr
    from xce.core import default_pickers

    names = default_pickers().names()  # every registered one (issue 25 adds priority)
    assert f"known: {', '.join(sorted(names))}" in result.stderr
    assert {"fairshare", "fcfs", "strict"} <= set(names)


def test_an_unknown_picker_in_the_state_file_is_located(tmp_path: Path) -> None:
    """Design §4: bad input exits 2 "with the file and the path in it" — a queue's
    ``picker: nope`` should say which file and ``queues.q.picker``."""
    path = tmp_path / "state.yaml"
    path.write_text("hosts: [{name: h, slots: 2}]\nqueues: {q: {picker: nope}}\n")
    result = schedule(path)
    assert result.exit_code == 2
    assert "unknown picker 'nope'" in result.stderr
    assert str(path) in result.stderr
    assert "queues.q.picker" in result.stderr


# --- --threads -------------------------------------------------------------------------
@pytest.mark.parametrize("picker", PICKERS)
@pytest.mark.parametrize("state", ["example", "blocking", "fairshare"])
def test_threads_give_the_same_decisions(tmp_path: Path, picker: str, state: str) -> None:
    """``--threads``: the same decisions JSON as one thread (the threads
    count aside); stats.threads says which mode ran."""
    path = {
        "example": lambda: EXAMPLE,
        "blocking": lambda: blocking_state(tmp_path),
        "fairshare": lambda: fairshare_state(tmp_path),
    }[state]()
    one = schedule_json(path, "--picker", picker)
    two = schedule_json(path, "--picker", picker, "--threads")
    assert decisions_only(two) == decisions_only(one)
    assert (one["stats"]["threads"], two["stats"]["threads"]) == (1, 2)


# --- --snapshot ------------------------------------------------------------------------
def running_ids(path: Path) -> set[str]:
    return {r.id for r in load_state(path).running}


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
@pytest.mark.parametrize("picker", PICKERS)
def test_snapshot_writes_the_state_after_the_session(
    tmp_path: Path, suffix: str, picker: str
) -> None:
    """``--snapshot out.json|out.yaml``: a state file ``xce schedule`` loads, in which the
    dispatched jobs run (holding what they were given) and the pending ones still pend;
    queues, and the default picker in effect, are kept."""
    out = tmp_path / f"out{suffix}"
    info = schedule_json(EXAMPLE, "--picker", picker, "--snapshot", out)
    dispatched = {d["job"]: d for d in info["dispatched"]}
    pending = {p["job"] for p in info["pending"]}
    assert dispatched
    assert pending

    before, after = load_state(EXAMPLE), load_state(out)
    assert {r.id for r in after.running} == {r.id for r in before.running} | set(dispatched)
    assert {j.id for j in after.jobs} == pending
    assert after.default_picker == picker
    assert {n: (q.priority, q.picker) for n, q in after.queues.items()} == {
        n: (q.priority, q.picker) for n, q in before.queues.items()
    }
    for run in after.running:
        if run.id in dispatched:
            held = Counter[str]()
            for a in run.alloc:
                held[a.host] += a.slots
            given = Counter[str]()
            for a in dispatched[run.id]["allocation"]:
                given[a["host"]] += a["slots"]
            assert held == given, run.id


def test_a_snapshot_replays_to_the_jobs_still_pending(tmp_path: Path) -> None:
    """``xce schedule`` on the snapshot decides exactly the jobs left pending, and (fcfs:
    every job now finds at most what it found before) dispatches none of them."""
    out = tmp_path / "out.json"
    first = schedule_json(blocking_state(tmp_path), "--snapshot", out)
    again = schedule_json(out)
    assert {p["job"] for p in again["pending"]} == {p["job"] for p in first["pending"]}
    assert again["dispatched"] == []
    assert running_ids(out) == {"r0"} | {d["job"] for d in first["dispatched"]}


def test_a_snapshot_of_a_snapshot_is_the_same_file(tmp_path: Path) -> None:
    """Snapshot, then snapshot the snapshot (nothing more dispatches): the same state."""
    one, two = tmp_path / "one.yaml", tmp_path / "two.yaml"
    schedule_json(EXAMPLE, "--snapshot", one)
    again = schedule_json(one, "--snapshot", two)
    assert again["dispatched"] == []
    assert two.read_text() == one.read_text()


# --- stats -----------------------------------------------------------------------------
@pytest.mark.parametrize("threads", [(), ("--threads",)], ids=["sync", "threads"])
def test_json_stats_has_every_session_statistic(threads: tuple[str, ...]) -> None:
    """JSON ``stats``: jobs, dispatched, pending, pending_by_reason, cache_hits,
    plans_tried, host_tries, threads — consistent with the decisions."""
    info = schedule_json(EXAMPLE, *threads)
    s = info["stats"]
    assert set(s) >= STATS_KEYS
    for key in STATS_KEYS - {"pending_by_reason"}:
        assert isinstance(s[key], int), key
        assert s[key] >= 0
    assert s["dispatched"] == len(info["dispatched"])
    assert s["pending"] == len(info["pending"])
    assert s["jobs"] == s["dispatched"] + s["pending"]
    assert s["pending_by_reason"] == dict(Counter(p["reason"] for p in info["pending"]))
    assert s["cache_hits"] == sum(p["cached"] for p in info["pending"])
    assert s["plans_tried"] >= 1
    assert s["host_tries"] >= s["dispatched"]
    assert s["threads"] == (2 if threads else 1)


STATS_LINE = re.compile(
    r"(?P<jobs>\d+) jobs: (?P<dispatched>\d+) dispatched, (?P<pending>\d+) pending"
    r"(?: \((?P<reasons>[^)]*)\))?; (?P<plans_tried>\d+) plans, (?P<host_tries>\d+) host tries,"
    r" cache (?P<cache_hits>\d+) hits / \d+ misses; [\d.]+ ms"
)


@pytest.mark.parametrize(
    ("state", "picker"), [("example", "fcfs"), ("blocking", "strict")], ids=["example", "strict"]
)
def test_table_output_shows_the_stats_line(tmp_path: Path, state: str, picker: str) -> None:
    """The table output ends with the stats: jobs, dispatched, pending by reason, plans,
    host tries, cache hits, time — the same counts as the JSON ``stats``."""
    path = EXAMPLE if state == "example" else blocking_state(tmp_path)
    s = schedule_json(path, "--picker", picker)["stats"]
    result = schedule(path, "--picker", picker)
    assert result.exit_code == 0, result.stderr
    match = STATS_LINE.search(result.stdout)
    assert match is not None, result.stdout
    for key in ("jobs", "dispatched", "pending", "plans_tried", "host_tries", "cache_hits"):
        assert int(match[key]) == s[key], key
    shown = dict(r.rsplit(" ", 1) for r in (match["reasons"] or "").split(", ") if r)
    assert {k: int(v) for k, v in shown.items()} == s["pending_by_reason"]


# -- issue 9: --lenient with the pickers and threads ------------------------------------------


def lenient_state(tmp_path: Path) -> Path:
    """Strict queue ``q``: its first entry is malformed (tasks 0), then q1 and q2 take
    h0's two slots; o1 waits for one (it would run on the empty cluster)."""
    doc = (
        ClusterBuilder()
        .host("h0", slots=2)
        .queue("q", priority=10)
        .job("bad", queue="q", submit_time=0)
        .job("q1", 1, queue="q", submit_time=1)
        .job("q2", 1, queue="q", submit_time=2)
        .job("o1", 1, queue="other", submit_time=0)
        .to_dict()
    )
    doc["jobs"][0]["tasks"] = 0
    path = tmp_path / "lenient.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("picker", PICKERS)
def test_lenient_invalid_entry_never_reaches_the_picker(tmp_path: Path, picker: str) -> None:
    """issue 9: an invalid entry is left out of the session, so it heads no queue (a
    strict queue is not blocked by it); it pends INVALID before the session's decisions."""
    path = lenient_state(tmp_path)
    assert schedule(path, "--json", "--picker", picker).exit_code == 2
    info = schedule_json(path, "--lenient", "--picker", picker)
    assert [d["job"] for d in info["dispatched"]] == ["q1", "q2"]
    first = info["pending"][0]
    assert (first["job"], first["reason"]) == ("bad", "INVALID")
    assert reasons(info)["o1"] == "NOT_ENOUGH_SLOTS"
    assert info["stats"]["pending_by_reason"]["INVALID"] == 1


@pytest.mark.parametrize("picker", PICKERS)
def test_lenient_threads_give_the_same_decisions(tmp_path: Path, picker: str) -> None:
    """issue 9: ``--lenient`` with ``--threads``: the same decisions as one thread."""
    path = lenient_state(tmp_path)
    one = schedule_json(path, "--lenient", "--picker", picker)
    two = schedule_json(path, "--lenient", "--picker", picker, "--threads")
    assert decisions_only(two) == decisions_only(one)
