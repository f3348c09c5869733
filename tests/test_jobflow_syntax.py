"""Slurm's dependency and array syntax in a state file (issue 25 contract, xce.cluster.
jobflow): what each string means, what is refused and where the error points, and that
a huge array stays a few ranges (never expanded) through load, ``without`` and a
snapshot.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import ClusterBuilder
from flow_states import flow_doc, flow_state
from xce.cluster import state_from_dict, state_from_text
from xce.cluster.jobflow import (
    ArrayIndices,
    DependencyItem,
    DepKind,
    SyntaxProblem,
    parse_array,
    parse_dependency,
)
from xce.core import state_to_dict
from xce.errors import StateError

# ------------------------------------------------------------------------ dependencies
# text -> (any_of, items as (kind, job, delay seconds))
DEPENDENCIES: dict[str, tuple[bool, list[tuple[DepKind, str | None, float]]]] = {
    "after:12": (False, [(DepKind.AFTER, "12", 0.0)]),
    "afterany:12": (False, [(DepKind.AFTERANY, "12", 0.0)]),
    "afterok:12": (False, [(DepKind.AFTEROK, "12", 0.0)]),
    "afternotok:12": (False, [(DepKind.AFTERNOTOK, "12", 0.0)]),
    "aftercorr:12": (False, [(DepKind.AFTERCORR, "12", 0.0)]),
    "afterburstbuffer:12": (False, [(DepKind.AFTERBURSTBUFFER, "12", 0.0)]),
    "singleton": (False, [(DepKind.SINGLETON, None, 0.0)]),
    "after:12+10": (False, [(DepKind.AFTER, "12", 600.0)]),
    "after:12+0": (False, [(DepKind.AFTER, "12", 0.0)]),
    "after:12+10:13": (False, [(DepKind.AFTER, "12", 600.0), (DepKind.AFTER, "13", 0.0)]),
    "afterok:12:13,afterany:14": (
        False,
        [(DepKind.AFTEROK, "12", 0.0), (DepKind.AFTEROK, "13", 0.0), (DepKind.AFTERANY, "14", 0.0)],
    ),
    "afterok:12?afterany:14": (
        True,
        [(DepKind.AFTEROK, "12", 0.0), (DepKind.AFTERANY, "14", 0.0)],
    ),
    "afterok:12?singleton": (True, [(DepKind.AFTEROK, "12", 0.0), (DepKind.SINGLETON, None, 0.0)]),
    "afterany:412_7,afterok:r1": (
        False,
        [(DepKind.AFTERANY, "412_7", 0.0), (DepKind.AFTEROK, "r1", 0.0)],
    ),
    "AfterOK:12": (False, [(DepKind.AFTEROK, "12", 0.0)]),
}


@pytest.mark.parametrize(
    ("text", "any_of", "items"),
    [(t, a, i) for t, (a, i) in DEPENDENCIES.items()],
    ids=list(DEPENDENCIES),
)
def test_dependency_meaning(
    text: str, any_of: bool, items: list[tuple[DepKind, str | None, float]]
) -> None:
    """Every kind parses to its items; ``,`` joins items that must all hold, ``?`` items of
    which one is enough; ``+N`` is a delay of N minutes (after only); the text is kept
    as written (a snapshot writes it back)."""
    dep = parse_dependency(text)
    assert dep.any_of is any_of
    assert dep.items == tuple(DependencyItem(k, j, d) for k, j, d in items)
    assert dep.text == text


def test_dependency_names_each_job_once_in_order() -> None:
    """``jobs()`` lists the ids a dependency names, first mention first, once each
    (singleton names none)."""
    assert parse_dependency("afterok:3:1,afterany:3:2,singleton").jobs() == ("3", "1", "2")
    assert parse_dependency("singleton").jobs() == ()


# text -> (a word of the message, the text from the column on starts with)
BAD_DEPENDENCIES = {
    "empty": ("", "empty", ""),
    "blank": ("   ", "empty", ""),
    "unknown kind": ("afterok:1,bogus:2", "bogus", "bogus"),
    "unknown kind first": ("before:1", "before", "before"),
    "no ids": ("afterok", "at least one job id", ""),
    "no ids after colon": ("afterany:", "job id", ""),
    "empty id": ("afterok:12:", "job id", ""),
    "singleton with ids": ("singleton:12", "singleton", ":12"),
    "both joiners": ("afterok:1,afterany:2?after:3", "not both", "?after"),
    "delay on afterok": ("afterok:12+10", "delay", "+10"),
    "delay not a number": ("after:12+x", "delay", "+x"),
    "bad id in second item": ("afterok:1,afterok:1:%%", "not a job id", "%%"),
    "space in id": ("afterok:1 2", "not a job id", "1 2"),
}


@pytest.mark.parametrize(
    ("text", "word", "at"), list(BAD_DEPENDENCIES.values()), ids=list(BAD_DEPENDENCIES)
)
def test_bad_dependency_is_refused_where_it_is(text: str, word: str, at: str) -> None:
    """A dependency that is not Slurm's syntax is a SyntaxProblem whose column (from 1)
    points at the offending part of the string (for a missing part: its end)."""
    with pytest.raises(SyntaxProblem) as info:
        parse_dependency(text)
    err = info.value
    assert word in err.message
    assert 1 <= err.column <= len(text) + 1
    assert text[err.column - 1 :].startswith(at), (err.column, text)


# ------------------------------------------------------------------------------ arrays
# text -> (indices, limit)
ARRAYS: dict[str, tuple[list[int], int | None]] = {
    "5": ([5], None),
    "0": ([0], None),
    "1-5": ([1, 2, 3, 4, 5], None),
    "1-10:2": ([1, 3, 5, 7, 9], None),
    "1-10:3": ([1, 4, 7, 10], None),
    "0-9:4": ([0, 4, 8], None),
    "1,3,5-9:2%4": ([1, 3, 5, 7, 9], 4),
    "10-12%50": ([10, 11, 12], 50),
    "7,1-3": ([1, 2, 3, 7], None),
    "3-3": ([3], None),
    "1-2:5": ([1], None),
}


@pytest.mark.parametrize(
    ("text", "indices", "limit"), [(t, i, n) for t, (i, n) in ARRAYS.items()], ids=list(ARRAYS)
)
def test_array_meaning(text: str, indices: list[int], limit: int | None) -> None:
    """Ranges ``a-b``, steps ``a-b:s`` (the last index is the last the step reaches),
    single indices and commas, in any order; ``%N`` the limit. The indices iterate in
    order, ``len`` counts them, ``in`` tests them, ``first`` is the smallest."""
    array = parse_array(text)
    assert list(array) == indices
    assert len(array) == len(indices)
    assert array.limit == limit
    assert array.first == indices[0]
    for i in range(min(indices) - 2, max(indices) + 3):
        assert (i in array) is (i in indices), i


@pytest.mark.parametrize("text", list(ARRAYS))
def test_array_text_round_trip(text: str) -> None:
    """``text()`` is Slurm's syntax for the same indices and limit: parsing it gives the
    same value (a snapshot writes it back)."""
    array = parse_array(text)
    assert parse_array(array.text()) == array


BAD_ARRAYS = {
    "empty": ("", "not an index range", ""),
    "letters": ("a-b", "not an index range", "a-b"),
    "empty part": ("1,,3", "not an index range", ",3"),
    "descending": ("1,10-2", "index range", "10-2"),
    "step 0": ("1-10:0", "step", "1-10:0"),
    "negative": ("-1-3", "not an index range", "-1-3"),
    "limit 0": ("1-10%0", "%N", "0"),
    "limit not a number": ("1-10%x", "%N", "x"),
    "limit empty": ("1-10%", "%N", ""),
    "overlap": ("1-20,5-7", "overlap", "5-7"),
    "overlap single": ("1-20,15", "overlap", "15"),
    "same index twice": ("3,3", "overlap", "3"),
    "interleaved steps": ("1-9:2,2-8:2", "overlap", "2-8"),
    "too large": ("1-99999999999", "<=", "1-99999999999"),
}


@pytest.mark.parametrize(("text", "word", "at"), list(BAD_ARRAYS.values()), ids=list(BAD_ARRAYS))
def test_bad_array_is_refused_where_it_is(text: str, word: str, at: str) -> None:
    """An array that is not Slurm's syntax, or whose ranges overlap (each index is one
    task), is a SyntaxProblem pointing into the string."""
    with pytest.raises(SyntaxProblem) as info:
        parse_array(text)
    err = info.value
    assert word in err.message
    assert 1 <= err.column <= len(text) + 1
    assert text[err.column - 1 :].startswith(at), (err.column, text)


def test_a_huge_array_stays_compact() -> None:
    """``1-100000`` is one range: its length, its first indices, ``without`` and ``text``
    work on ranges (a record of 100,000 tasks loads, and loses a task, at once)."""
    array = parse_array("1-100000%50")
    assert len(array.ranges) == 1
    assert len(array) == 100_000
    assert list(itertools.islice(array, 4)) == [1, 2, 3, 4]
    assert array.limit == 50
    first = array.without(1)
    assert (len(first), first.first, first.text()) == (99_999, 2, "2-100000%50")
    middle = array.without(500)
    assert len(middle) == 99_999
    assert 500 not in middle
    assert 499 in middle
    assert 501 in middle
    assert middle.text() == "1-499,501-100000%50"
    assert len(middle.ranges) == 2
    last = array.without(100_000)
    assert last.text() == "1-99999%50"
    assert parse_array(middle.text()) == middle


@pytest.mark.parametrize(
    ("text", "index", "after"),
    [
        ("1-10:2", 5, "1-3:2,7-9:2"),
        ("1-10:2", 1, "3-9:2"),
        ("1-10:2", 9, "1-7:2"),
        ("1-10:2", 3, "1,5-9:2"),
        ("1,3", 1, "3"),
        ("1-3", 2, "1,3"),
        ("4%2", 4, "%2"),
    ],
)
def test_without_one_index(text: str, index: int, after: str) -> None:
    """``without(i)`` is the same indices less ``i``, the limit kept (Slurm's text of
    what is left; nothing left is an empty array)."""
    left = parse_array(text).without(index)
    assert list(left) == [i for i in parse_array(text) if i != index]
    assert left.limit == parse_array(text).limit
    if list(left):
        assert left.text() == after


@st.composite
def arrays(draw: st.DrawFn) -> ArrayIndices:
    """Disjoint ranges with steps, drawn left to right, and maybe a limit."""
    parts: list[str] = []
    at = draw(st.integers(0, 5))
    for _ in range(draw(st.integers(1, 4))):
        step = draw(st.integers(1, 4))
        count = draw(st.integers(1, 5))
        last = at + step * (count - 1)
        parts.append(str(at) if count == 1 else f"{at}-{last}" + (f":{step}" if step > 1 else ""))
        at = last + draw(st.integers(1, 6))
    draw(st.randoms()).shuffle(parts)
    limit = draw(st.none() | st.integers(1, 9))
    return parse_array(",".join(parts) + (f"%{limit}" if limit else ""))


@given(arrays(), st.data())
def test_array_operations_agree_with_the_set_of_indices(
    array: ArrayIndices, data: st.DataObject
) -> None:
    """Whatever the ranges: ``len`` is the number of indices iterated, they iterate in
    increasing order, ``text()`` round-trips, and taking indices out one by one (any
    order) leaves exactly the others, ending empty."""
    indices = list(array)
    assert indices == sorted(set(indices))
    assert len(array) == len(indices)
    assert parse_array(array.text()) == array
    left = array
    for index in data.draw(st.permutations(indices)):
        left = left.without(index)
        assert index not in left
        if len(left):
            assert parse_array(left.text()) == left
    assert len(left) == 0
    assert list(left) == []


# ------------------------------------------------------- located errors in a state file


def _yaml(job: str) -> str:
    return f"hosts:\n  - {{name: h0, slots: 4}}\njobs:\n  - {{id: 1}}\n  - {job}\n"


# job entry (YAML flow mapping) -> (path, the line's text from the column on starts with)
LOCATED = {
    "unknown kind": ('{id: 2, dependency: "afterok:1,bogus:3"}', "jobs[1].dependency", "bogus"),
    "delay on afterok": ('{id: 2, dependency: "afterok:1+5"}', "jobs[1].dependency", "+5"),
    "both joiners": ('{id: 2, dependency: "afterok:1,after:1?after:1"}', "jobs[1].dependency", "?"),
    "bad range": ('{id: 2, array: "1-10,x"}', "jobs[1].array", "x"),
    "overlap": ('{id: 2, array: "1-10,5-7"}', "jobs[1].array", "5-7"),
    "bad limit": ('{id: 2, array: "1-10%0"}', "jobs[1].array", "0"),
}


@pytest.mark.parametrize(("job", "path", "at"), list(LOCATED.values()), ids=list(LOCATED))
def test_yaml_error_is_located_in_the_string(job: str, path: str, at: str) -> None:
    """A bad dependency or array refuses the state with file:line:col, the JSON path, and a
    caret under the bad part of the string (not just the start of the value)."""
    with pytest.raises(StateError) as info:
        state_from_text(_yaml(job), "s.yaml")
    err = info.value
    assert err.path == path
    assert err.line == 5
    assert err.text == "  - " + job
    assert err.column is not None
    assert err.text[err.column - 1 :].startswith(at), (err.column, err.text)
    first = str(err).splitlines()
    assert first[0].startswith(f"s.yaml:5:{err.column}: {path}: ")
    assert first[1:] == [f"  {err.text}", " " * (err.column + 1) + "^"]
    assert isinstance(err, ValueError)


@pytest.mark.parametrize(("job", "path", "at"), list(LOCATED.values()), ids=list(LOCATED))
def test_json_error_is_located_in_the_string(job: str, path: str, at: str) -> None:
    """The same in a JSON document: line and column of the bad part, inside the string."""
    entry = _entry(job)
    text = '{"hosts": [{"name": "h0", "slots": 4}],\n "jobs": [{"id": 1},\n  '
    text += json.dumps(entry) + "]}\n"
    with pytest.raises(StateError) as info:
        state_from_text(text, "s.json", "json")
    err = info.value
    assert err.path == path
    assert err.line == 3
    assert err.column is not None
    assert err.text is not None
    assert err.text[err.column - 1 :].startswith(at), (err.column, err.text)
    assert str(err).startswith(f"s.json:3:{err.column}: {path}: ")
    assert str(err).endswith("\n" + " " * (err.column + 1) + "^")


def _entry(flow: str) -> dict[str, Any]:
    import yaml

    value = yaml.safe_load(flow)
    assert isinstance(value, dict)
    return value


# doc changes -> the path of the error
COLLISIONS = {
    "running task of a held index": ({"running": "412_7"}, "running[0].id"),
    "pending job with a task's id": ({"job": "412_3"}, "jobs[1].id"),
}


@pytest.mark.parametrize(("ids", "path"), list(COLLISIONS.values()), ids=list(COLLISIONS))
def test_array_task_id_colliding_with_a_job_is_refused(ids: dict[str, str], path: str) -> None:
    """Task ``412_7`` of record 412 is a job of its own: a running or pending job with the
    id of a task the record still holds is refused, located at that job's id."""
    b = ClusterBuilder().host("h0", slots=4).job("412")
    if "running" in ids:
        b.running(ids["running"], {"h0": 1})
    if "job" in ids:
        b.job(ids["job"])
    doc = flow_doc(b, {"412": {"array": "1-9:2"}})
    with pytest.raises(StateError) as info:
        state_from_dict(doc, "s.yaml")
    assert info.value.path == path
    assert "412" in str(info.value)


@pytest.mark.parametrize("other", ["412_2", "412_11", "412_x", "4121", "412_7_1"])
def test_ids_that_are_not_a_held_task_load(other: str) -> None:
    """Only a task the record still holds collides: 412_2 (not in 1-9:2), 412_11 (out of
    range) and ids that are not task ids load."""
    b = ClusterBuilder().host("h0", slots=4).job("412").running(other, {"h0": 1})
    state = flow_state(b, {"412": {"array": "1-9:2"}})
    assert {r.id for r in state.running} == {other}


# ----------------------------------------------------------------------- snapshot keys


def test_flow_keys_survive_a_snapshot() -> None:
    """Every job-flow key loads into the job and a snapshot writes it back as written
    (the array as its compact text), so the snapshot loads to the same jobs."""
    b = ClusterBuilder().host("h0", slots=4).at(100)
    b.job("a").job("b").job("big")
    b.running("r1", {"h0": 1}, user="alice")
    jobs: dict[str, dict[str, Any]] = {
        "a": {"priority": 7.5, "hold": True, "name": "x"},
        "b": {"begin_time": 500, "dependency": "afterok:r1?after:a+2", "scheduler_start": 900},
        "big": {"array": "1-100000:3%50"},
    }
    running = {"r1": {"name": "x", "array_job": "99"}}
    state = flow_state(b, jobs, running)
    got = {j.id: j for j in state.jobs}
    assert (got["a"].priority, got["a"].hold, got["a"].name) == (7.5, True, "x")
    assert got["b"].begin_time == 500
    assert got["b"].dependency is not None
    assert got["b"].dependency.any_of
    assert got["b"].scheduler_start == 900
    assert got["big"].array is not None
    assert len(got["big"].array) == 33_334
    assert (state.running[0].name, state.running[0].array_job) == ("x", "99")
    doc = state_to_dict(state)
    written = {str(j["id"]): j for j in doc["jobs"]}
    for job_id, keys in jobs.items():
        for key, value in keys.items():
            assert written[job_id][key] == value, (job_id, key)
    assert doc["running"][0]["name"] == "x"
    assert doc["running"][0]["array_job"] == "99"
    again = state_to_dict(state_from_dict(doc, "<snapshot>"))
    assert again == doc
