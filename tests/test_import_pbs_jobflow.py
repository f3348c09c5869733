"""xce import pbs: job structure — priority, holds, begin times, dependencies, arrays,
names and PBS's own estimated start, each mapped rule with a test, and what xce
schedule then says of such jobs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from test_import_pbs import NODES, job, node, one
from xce.importers import pbs_values

NOW = "Thu Jun 19 22:00:00 2025"  # 1750370400
NOW_S = 1750370400


def jobs_of(*entries: tuple[str, dict[str, Any]], nodes: Any = None) -> dict[str, Any]:
    """The state of ``entries`` (qstat names, bodies) on two 8-CPU nodes, captured at NOW."""
    body = {"timestamp": NOW_S, "Jobs": dict(entries)}
    state, _ = one(nodes or NODES, body)
    return state


def pending_of(*entries: tuple[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {j["id"]: j for j in jobs_of(*entries).get("jobs", [])}


# --- priority, name, estimated start -------------------------------------------------------


def test_priority_name_and_scheduler_start() -> None:
    extra = {"Priority": -5, "Job_Name": "sim", "estimated": {"start_time": NOW}}
    state = jobs_of(("1.srv", job(**extra)))
    (entry,) = state["jobs"]
    assert (entry["priority"], entry["name"], entry["scheduler_start"]) == (-5, "sim", NOW_S)
    assert state["picker"] == "priority"


def test_no_priority_no_picker() -> None:
    assert "picker" not in jobs_of(("1.srv", job()))


def test_running_job_keeps_its_name() -> None:
    state = jobs_of(("1.srv", job("R", exec_vnode="(n1:ncpus=1)", Job_Name="sim")))
    assert state["running"][0]["name"] == "sim"


# --- holds ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hold_types", "depend", "held"),
    [
        ("u", None, True),  # qhold / qsub -h by the user
        ("o", None, True),  # by an operator
        ("s", None, True),  # a system hold with nothing to wait for
        ("us", "afterok:2.srv", True),  # a user hold too: held whatever the dependency
        ("s", "afterok:2.srv", False),  # PBS holds a job for its dependency: not a hold
    ],
)
def test_held_jobs(hold_types: str, depend: str | None, held: bool) -> None:
    extra: dict[str, Any] = {"Hold_Types": hold_types, "comment": "Job held by alice"}
    if depend:
        extra["depend"] = depend
    jobs = pending_of(("1.srv", job("H", **extra)), ("2.srv", job()))
    assert jobs["1"].get("hold", False) is held
    assert jobs["1"]["reason"] == "Job held by alice"


def test_queued_job_is_not_held_whatever_hold_types_say() -> None:
    assert "hold" not in pending_of(("1.srv", job("Q", Hold_Types="n")))["1"]


# --- begin times -------------------------------------------------------------------------------


def test_waiting_job_begins_at_its_execution_time() -> None:
    later = "Thu Jun 19 23:00:00 2025"
    assert pending_of(("1.srv", job("W", Execution_Time=later)))["1"]["begin_time"] == (
        NOW_S + 3600
    )


@pytest.mark.parametrize("extra", [{}, {"Execution_Time": "Thu Jun 19 21:00:00 2025"}])
def test_waiting_job_without_a_future_time_is_queued_and_reported(extra: dict[str, Any]) -> None:
    body = {"timestamp": NOW_S, "Jobs": {"1.srv": job("W", **extra)}}
    state, report = one(NODES, body)
    assert "begin_time" not in state["jobs"][0]
    assert report.counts["waiting job (W) without a future Execution_Time (mapped as queued)"] == 1


# --- dependencies ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("depend", "dependency"),
    [
        ("afterok:2.srv", "afterok:2"),
        ("afterok:2.srv:3.srv", "afterok:2:3"),
        ("afterany:2.srv,afternotok:3.srv", "afterany:2,afternotok:3"),
        ("after:2.srv@srv", "after:2"),  # @server routing dropped
        ("afterok:9.other", "afterok:9.other"),  # another server's job: as given
        ("afterok:12[].srv", "afterok:12"),  # an array: its record's id
    ],
)
def test_after_dependencies(depend: str, dependency: str) -> None:
    jobs = pending_of(("1.srv", job(depend=depend)), ("2.srv", job()), ("3.srv", job()))
    assert jobs["1"]["dependency"] == dependency


@pytest.mark.parametrize(
    ("before", "after"),
    [("beforeok", "afterok"), ("beforeany", "afterany"), ("beforenotok", "afternotok"),
     ("before", "after")],
)  # fmt: skip
def test_before_dependency_is_the_other_jobs_after(before: str, after: str) -> None:
    """``qsub -W depend=beforeok:B`` on A: B (submitted with ``on:1``) runs after A."""
    jobs = pending_of(
        ("1.srv", job(depend=f"{before}:2.srv")),
        ("2.srv", job("H", Hold_Types="s", depend="on:1")),
    )
    assert "dependency" not in jobs["1"]
    assert jobs["2"]["dependency"] == f"{after}:1"
    assert "hold" not in jobs["2"]  # its system hold is the dependency


def test_before_of_a_running_job_counts_and_of_a_finished_one_not() -> None:
    jobs = pending_of(
        ("1.srv", job("R", exec_vnode="(n1:ncpus=1)", depend="beforeok:3.srv")),
        ("2.srv", job("F", depend="beforeok:3.srv")),
        ("3.srv", job(depend="afterany:4.srv")),
    )
    assert jobs["3"]["dependency"] == "afterany:4,afterok:1"


def test_unknown_dependency_kind_is_reported() -> None:
    body = {"Jobs": {"1.srv": job(depend="runone:2.srv,afterok:3.srv")}}
    state, report = one(NODES, body)
    assert state["jobs"][0]["dependency"] == "afterok:3"
    assert report.warnings["dependency kind not mapped"] == ['d1.json: Jobs["1.srv"]: runone']


def test_depend_parser() -> None:
    assert pbs_values.depend("afterok:1.s:2.s@s,on:2") == [
        ("afterok", ["1.s", "2.s"]),
        ("on", ["2"]),
    ]
    for text in ["", "afterok", "afterok:", ":1", 3]:
        with pytest.raises(ValueError):
            pbs_values.depend(text)


# --- arrays ------------------------------------------------------------------------------------


def array(state: str = "Q", **extra: Any) -> dict[str, Any]:
    base = {"array": "True", "array_indices_submitted": "0-99"}
    return job(state, **{**base, **extra})


@pytest.mark.parametrize(
    ("extra", "indices"),
    [
        ({}, "0-99"),  # none started: the submitted indices
        ({"array_indices_remaining": "2-99"}, "2-99"),
        ({"array_indices_remaining": "3,5,7-99:2"}, "3,5,7-99:2"),
        ({"array_indices_remaining": "4-99", "max_run_subjobs": 5}, "4-99%5"),
        ({"array_indices_submitted": "0-99%2", "array_indices_remaining": "9-99"}, "9-99%2"),
        ({"array_indices_submitted": "1-100000"}, "1-100000"),  # never expanded
    ],
)
def test_array_record_is_one_entry_of_its_remaining_indices(
    extra: dict[str, Any], indices: str
) -> None:
    (entry,) = jobs_of(("12[].srv", array(**extra)))["jobs"]
    assert (entry["id"], entry["array"], entry["tasks"]) == ("12", indices, 1)


def test_begun_array_with_running_subjobs() -> None:
    state = jobs_of(
        ("12[].srv", array("B", array_indices_remaining="2-99", max_run_subjobs=2)),
        ("12[0].srv", job("R", exec_vnode="(n1:ncpus=1)", array_id="12[].srv", array_index=0)),
        ("12[1].srv", job("R", exec_vnode="(n2:ncpus=1)")),  # qstat -t without array_id
        ("12[2].srv", job("Q", array_id="12[].srv")),  # queued subjob: in the record
    )
    assert [(r["id"], r["array_job"]) for r in state["running"]] == [
        ("12[0]", "12"),
        ("12[1]", "12"),
    ]
    (record,) = state["jobs"]
    assert (record["id"], record["array"]) == ("12", "2-99%2")


def test_array_with_nothing_left_to_start_has_no_pending_entry() -> None:
    body = {"Jobs": {"12[].srv": array("B", array_indices_remaining="-")}}
    state, report = one(NODES, body)
    assert "jobs" not in state
    assert report.mapped["array records with no subjob left to start"] == 1


def test_array_running_subjobs_missing_from_the_capture_are_reported() -> None:
    record = array("B", array_indices_remaining="5-99", array_state_count="Queued:95 Running:3")
    _, report = one(NODES, {"Jobs": {"12[].srv": record}})
    (example,) = report.warnings["array's running subjobs not in the capture (qstat -t lists them)"]
    assert example.endswith("3 running, 0 captured")


@pytest.mark.parametrize(
    ("text", "ranges"),
    [
        ("0-99", [(0, 99, 1)]),
        ("1,3,5-9:2", [(1, 1, 1), (3, 3, 1), (5, 9, 2)]),
        ("7-9,1", [(1, 1, 1), (7, 9, 1)]),
        ("0-9%3", [(0, 9, 1)]),
        ("-", []),
    ],
)
def test_index_ranges(text: str, ranges: list[tuple[int, int, int]]) -> None:
    assert pbs_values.index_ranges(text) == ranges


@pytest.mark.parametrize("text", ["9-1", "1-5,3-7", "a-b", "1-9:0", 5, "1-99999999999"])
def test_index_ranges_refuses(text: Any) -> None:
    with pytest.raises(ValueError):
        pbs_values.index_ranges(text)


# --- node counts: nothing invents a split ------------------------------------------------------


@pytest.mark.parametrize(
    ("resources", "resreq"),
    [
        ({"select": "1:ncpus=8", "nodect": 4}, "span[hosts=1]"),  # nodect is PBS's count
        ({"ncpus": 16, "nodect": 2}, "span[hosts=1]"),  # -l ncpus: one chunk, one host
        ({"select": "4:ncpus=2"}, ""),  # free chunks: no ptile made up
        ({"select": "4:ncpus=2", "place": "scatter"}, "span[ptile=2]"),  # asked for
    ],
)
def test_no_split_the_user_did_not_ask_for(resources: dict[str, Any], resreq: str) -> None:
    (entry,) = jobs_of(("1.srv", job(Resource_List=resources)))["jobs"]
    assert entry.get("resreq", "") == resreq


# --- what xce schedule says of them ----------------------------------------------------------


def test_schedule_pends_held_begin_dependency_and_array_limit(tmp_path: Path) -> None:
    from xce.cli.import_cmd import import_app
    from xce.cli.main import app

    later = "Thu Jun 19 23:00:00 2025"
    jobs = {
        "1.srv": job("H", Hold_Types="u"),
        "2.srv": job("W", Execution_Time=later),
        "3.srv": job(
            "R", exec_vnode="(n1:ncpus=1)", stime=NOW, Resource_List={"walltime": "1:00:00"}
        ),
        "4.srv": job(depend="afterok:3.srv"),
        "12[].srv": array("B", array_indices_remaining="1-9", max_run_subjobs=1),
        "12[0].srv": job("R", exec_vnode="(n2:ncpus=1)", array_id="12[].srv"),
    }
    doc = {"pbs_version": "23.06.06", "pbs_server": "srv", "timestamp": NOW_S, "Jobs": jobs}
    (tmp_path / "jobs.json").write_text(json.dumps(doc))
    (tmp_path / "nodes.json").write_text(json.dumps({"pbs_version": "23.06.06", **NODES}))
    out = tmp_path / "state.yaml"  # not a .json the import of tmp_path reads
    result = CliRunner().invoke(import_app, ["pbs", str(tmp_path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    decisions = json.loads(CliRunner().invoke(app, ["schedule", str(out), "--json"]).stdout)
    reasons = {p["job"]: p["reason"] for p in decisions["pending"]}
    assert reasons == {
        "1": "HELD",
        "2": "BEGIN_TIME",
        "4": "DEPENDENCY",
        "12": "ARRAY_LIMIT",
    }
    assert decisions["dispatched"] == []


def test_nodes_fixture_has_no_assignment() -> None:
    """The builders' nodes say nothing of resources_assigned: no unattributed work."""
    assert "resources_assigned" not in node()


def test_jobflow_sample_pends_as_pbs_says(tmp_path: Path) -> None:
    """The handmade jobflow sample end to end: each waiting job pends for the reason PBS
    gives it, and the priority-100 job goes first onto what the unattributed work leaves."""
    from xce.cli.import_cmd import import_app
    from xce.cli.main import app

    sample = Path(__file__).parent / "data" / "pbs" / "handmade-openpbs-jobflow"
    out = tmp_path / "state.json"
    assert CliRunner().invoke(import_app, ["pbs", str(sample), "-o", str(out)]).exit_code == 0
    decisions = json.loads(CliRunner().invoke(app, ["schedule", str(out), "--json"]).stdout)
    reasons = {p["job"]: p["reason"] for p in decisions["pending"]}
    assert reasons == {
        "200": "ARRAY_LIMIT",  # two subjobs run, %2
        "202": "DEPENDENCY",  # afterok:201 (PBS's system hold)
        "203": "BEGIN_TIME",
        "204": "HELD",
        "207": "DEPENDENCY",  # 206's beforeok
    }
    assert [d["job"] for d in decisions["dispatched"]] == ["205", "206"]
