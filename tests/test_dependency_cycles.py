"""Pending jobs whose dependencies wait for each other in a cycle (xce.cluster.deadlock):
none of them could ever start, so a state file holding one is bad input, located at the
first job of the cycle; a lenient load leaves that entry out (INVALID), and the jobs
waiting for it never start. An any-of dependency with an alternative that can start is
no cycle. A property checks the finder against starting the jobs one by one."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xce.alloc import Pending, PendReason
from xce.cluster import load_state, state_from_dict
from xce.cluster.deadlock import dependency_cycle
from xce.core import Session
from xce.errors import StateError

XCE = Path(sys.executable).parent / "xce"


def doc(*jobs: tuple[str, str | None], array: dict[str, str] | None = None) -> dict[str, object]:
    entries = []
    for job_id, dependency in jobs:
        entry: dict[str, object] = {"id": job_id, "tasks": 1, "requested_time": 60}
        if dependency is not None:
            entry["dependency"] = dependency
        if array and job_id in array:
            entry["array"] = array[job_id]
        entries.append(entry)
    return {"hosts": [{"name": "n1", "slots": 4}], "jobs": entries}


def refusal(data: dict[str, object]) -> str:
    with pytest.raises(StateError) as err:
        state_from_dict(data, "<cycle>")
    return str(err.value)


def test_two_jobs_waiting_for_each_other_are_refused_at_the_first() -> None:
    message = refusal(doc(("c", None), ("a", "afterok:b"), ("b", "afterany:a")))
    assert "jobs[1].dependency" in message
    assert "jobs wait for each other in a cycle: a -> b -> a" in message


def test_a_job_waiting_for_itself_is_refused() -> None:
    assert "its dependency names the job itself" in refusal(doc(("a", "after:a")))


def test_a_job_waiting_for_a_cycle_is_not_blamed_for_it() -> None:
    """d waits for a, which waits with b in a cycle: the error is at a's entry, and the
    cycle it names is a and b alone."""
    message = refusal(doc(("d", "afterok:a"), ("a", "afterok:b"), ("b", "afterok:a")))
    assert "jobs[1].dependency" in message
    assert "a -> b -> a" in message


def test_an_any_of_dependency_with_a_free_alternative_is_no_cycle() -> None:
    """a waits for b or c; b waits for a; c waits for nobody: when c ends, a may start,
    then b. With c gone from the alternatives, a and b deadlock."""
    state = state_from_dict(doc(("a", "afterok:b?afterok:c"), ("b", "afterok:a"), ("c", None)), "x")
    assert [j.id for j in state.jobs] == ["a", "b", "c"]
    assert "a -> b -> a" in refusal(doc(("a", "afterok:b?afterok:b"), ("b", "afterok:a")))


def test_waiting_for_a_task_of_a_pending_array_record_waits_for_the_record() -> None:
    message = refusal(doc(("412", "afterok:a"), ("a", "afterok:412_3"), array={"412": "1-5"}))
    assert "a cycle: 412 -> a -> 412" in message
    assert "cycle" in refusal(
        doc(("412", "afterok:a"), ("a", "afterany:412_*"), array={"412": "1-5"})
    )


def test_jobs_waiting_for_running_or_ended_jobs_are_no_cycle() -> None:
    data = doc(("a", "afterok:r1"), ("b", "afterok:a,afterok:gone"))
    data["running"] = [{"id": "r1", "alloc": [{"host": "n1", "slots": 1}]}]
    state_from_dict(data, "<ok>")


def test_a_lenient_load_leaves_out_the_first_job_of_each_cycle(tmp_path: Path) -> None:
    """Two cycles: a/b and x/y. a and x are INVALID with the strict error; b and y wait
    for an INVALID entry, which never runs; c runs."""
    path = tmp_path / "cycles.yaml"
    path.write_text(
        "hosts: [{name: n1, slots: 4}]\n"
        "jobs:\n"
        "  - {id: a, tasks: 1, dependency: 'afterok:b'}\n"
        "  - {id: b, tasks: 1, dependency: 'afterok:a'}\n"
        "  - {id: c, tasks: 1}\n"
        "  - {id: x, tasks: 1, dependency: 'afterok:y'}\n"
        "  - {id: y, tasks: 1, dependency: 'afterok:x'}\n",
        encoding="utf-8",
    )
    state, invalid = load_state(path, lenient=True)
    assert [(i.id, "a cycle" in str(i.error)) for i in invalid] == [("a", True), ("x", True)]
    got = {d.job: d for d in Session(state).run().decisions}
    assert not isinstance(got["c"], Pending)
    for job in ("b", "y"):
        decision = got[job]
        assert isinstance(decision, Pending)
        assert decision.info.reason is PendReason.DEPENDENCY
        assert "INVALID entry" in decision.info.message


def test_the_cli_says_where_with_a_caret_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "cycle.yaml"
    path.write_text(
        "hosts: [{name: n1, slots: 4}]\n"
        "jobs:\n"
        "  - {id: a, tasks: 1, dependency: 'afterok:b'}\n"
        "  - {id: b, tasks: 1, dependency: 'afterok:a'}\n",
        encoding="utf-8",
    )
    done = subprocess.run([str(XCE), "schedule", str(path)], capture_output=True, text=True)
    assert done.returncode == 2
    assert f"{path}:3:" in done.stderr
    assert "jobs[0].dependency" in done.stderr
    assert "^" in done.stderr
    assert "a -> b -> a" in done.stderr


# --- the finder against starting jobs one by one -------------------------------------


@st.composite
def graphs(draw: st.DrawFn) -> list[tuple[str, str | None]]:
    """Up to 7 jobs, each waiting for nothing, or all of / any of a few others (some
    not pending: ended jobs)."""
    n = draw(st.integers(1, 7))
    names = [f"j{i}" for i in range(n)]
    jobs: list[tuple[str, str | None]] = []
    for name in names:
        targets = draw(st.lists(st.sampled_from([*names, "gone"]), max_size=3, unique=True))
        if not targets:
            jobs.append((name, None))
            continue
        joiner = draw(st.sampled_from((",", "?")))
        jobs.append((name, joiner.join(f"afterok:{t}" for t in targets)))
    return jobs


def startable(jobs: list[tuple[str, str | None]]) -> set[str]:
    """The jobs that start, starting one at a time any job whose dependency holds once
    the jobs it names have started (an ended job has)."""
    pending = {j for j, _ in jobs}
    started: set[str] = set()
    changed = True
    while changed:
        changed = False
        for job, text in jobs:
            if job in started:
                continue
            named = (
                [] if text is None else [p.split(":")[1] for p in text.replace("?", ",").split(",")]
            )
            ok = [t not in pending or t in started for t in named]
            if not named or (any(ok) if text and "?" in text else all(ok)):
                started.add(job)
                changed = True
    return started


@given(graphs())
def test_a_cycle_is_found_exactly_when_some_job_never_starts(
    jobs: list[tuple[str, str | None]],
) -> None:
    found = dependency_cycle(jobs)
    stuck = {j for j, _ in jobs} - startable(jobs)
    assert (found is None) == (not stuck)
    if found is not None:
        i, message = found
        assert jobs[i][0] in stuck
        if "names the job itself" in message:
            assert f"afterok:{jobs[i][0]}" in str(jobs[i][1])
            return
        ring = message.split(": ", 1)[1].split(" -> ")
        assert ring[0] == ring[-1] == jobs[i][0]
        assert set(ring) <= stuck
        waits = dict(jobs)
        for a, b in itertools.pairwise(ring):
            text = waits[a]
            assert text is not None
            assert f"afterok:{b}" in text.replace("?", ",").split(",")
