"""xce import pbs: capacity as PBS sees it — a node's ``resources_assigned`` beyond what
the captured running jobs hold is running work of its own (``pbs:NODE:unattributed``);
less than they hold is an inconsistent capture, warned."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from test_import_pbs import job, node, one

NOW_S = 1750370400
UNATTRIBUTED = "node allocation no captured job holds (running as pbs:NODE:unattributed)"
SHORT = "node's resources_assigned below what its captured jobs hold (inconsistent capture)"


def nodes(*states: str, **assigned: Any) -> dict[str, Any]:
    """n1 (8 CPUs, 16 GiB, 2 GPUs) with ``assigned`` as its resources_assigned."""
    body = node(8, "16gb", state=states[0] if states else "free", avail={"ngpus": 2})
    if assigned:
        body["resources_assigned"] = assigned
    return {"timestamp": NOW_S, "nodes": {"n1": body}}


def unattributed(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in state.get("running", []) if r["id"].endswith(":unattributed")]


@pytest.mark.parametrize(
    ("assigned", "jobs", "alloc"),
    [
        # nothing captured: all of it is someone's
        ({"ncpus": 4, "mem": "8gb", "ngpus": 1}, {}, {"slots": 4, "mem": 8192, "gpu": 1}),
        # a captured job holds part of it
        (
            {"ncpus": 6, "mem": "10gb"},
            {"1.srv": job("R", exec_vnode="(n1:ncpus=2:mem=2gb)")},
            {"slots": 4, "mem": 8192},
        ),
        # memory only: held with one CPU (a running entry holds a slot)
        ({"ncpus": 0, "mem": "4gb"}, {}, {"slots": 1, "mem": 4096}),
    ],
)
def test_assigned_beyond_the_jobs_is_unattributed_work(
    assigned: dict[str, Any], jobs: dict[str, Any], alloc: dict[str, int]
) -> None:
    state, report = one(nodes(**assigned), {"Jobs": jobs})
    (entry,) = unattributed(state)
    assert entry["id"] == "pbs:n1:unattributed"
    assert (entry["user"], entry["queue"], entry["start_time"]) == ("unknown", "normal", NOW_S)
    assert "requested_time" not in entry  # no queue bounds a walltime: no end
    (item,) = entry["alloc"]
    assert {"slots": item["slots"], **item.get("resources", {})} == alloc
    (example,) = report.warnings[UNATTRIBUTED]
    assert example.startswith('d0.json: nodes["n1"].resources_assigned: ')


@pytest.mark.parametrize(
    ("assigned", "jobs"),
    [
        ({}, {}),  # nothing assigned, nothing captured
        ({"ncpus": 2, "mem": "2gb"}, {"1.srv": job("R", exec_vnode="(n1:ncpus=2:mem=2gb)")}),
        ({"ncpus": 4, "mem": "1gb"}, {"1.srv": job("R", exec_host="n1/0*4")}),  # mem unknown
    ],
)
def test_assigned_as_the_jobs_hold_is_nothing_more(
    assigned: dict[str, Any], jobs: dict[str, Any]
) -> None:
    state, report = one(nodes(**assigned) if assigned else nodes(), {"Jobs": jobs})
    assert unattributed(state) == []
    assert UNATTRIBUTED not in report.warnings
    assert SHORT not in report.warnings


def test_node_without_resources_assigned_is_not_compared() -> None:
    state, report = one({"nodes": {"n1": node()}}, {"Jobs": {}})
    assert unattributed(state) == []
    assert not report.warnings


def test_jobs_holding_more_than_the_node_says_is_warned_and_they_are_kept() -> None:
    jobs = {"1.srv": job("R", exec_vnode="(n1:ncpus=4:mem=8gb)")}
    state, report = one(nodes(ncpus=2, mem="8gb"), {"Jobs": jobs})
    assert [r["id"] for r in state["running"]] == ["1"]
    assert report.warnings[SHORT] == [
        'd0.json: nodes["n1"].resources_assigned: 2 CPUs assigned, 4 held'
    ]


def test_sizes_that_are_not_whole_mib_compare_exactly() -> None:
    """Two pieces of 1.5 MiB are 3 MiB, as the node says: nothing unattributed."""
    jobs = {"1.srv": job("R", exec_vnode="(n1:ncpus=1:mem=1536kb+n1:ncpus=1:mem=1536kb)")}
    state, report = one(nodes(ncpus=2, mem="3072kb"), {"Jobs": jobs})
    assert unattributed(state) == []
    assert not report.warnings


@pytest.mark.parametrize(
    ("queues", "requested"),
    [
        ({"a": {"resources_max": {"walltime": "24:00:00"}},
          "b": {"resources_max": {"walltime": "48:00:00"}}}, 172800),  # the longest
        ({"a": {"resources_max": {"walltime": "24:00:00"}}, "b": {}}, None),  # b: no bound
        ({"a": {"resources_max": {"walltime": "24:00:00"}}, "r": {"queue_type": "Route"}},
         86400),  # a route queue runs nothing
    ],
)  # fmt: skip
def test_unattributed_work_ends_at_the_longest_walltime_of_the_nodes_queues(
    queues: dict[str, Any], requested: int | None
) -> None:
    state, _ = one(nodes(ncpus=8), {"Queue": queues})
    (entry,) = unattributed(state)
    assert entry.get("requested_time") == requested


def test_server_walltime_bounds_queues_without_their_own() -> None:
    server = {"srv": {"resources_max": {"walltime": "12:00:00"}}}
    state, _ = one(nodes(ncpus=8), {"Queue": {"a": {}}}, {"Server": server})
    assert unattributed(state)[0]["requested_time"] == 43200


def test_node_of_a_queue_takes_that_queues_walltime() -> None:
    body = nodes(ncpus=8)
    body["nodes"]["n1"]["queue"] = "gpuq"
    queues = {
        "gpuq": {"resources_max": {"walltime": "02:00:00"}},
        "workq": {"resources_max": {"walltime": "99:00:00"}},
    }
    state, _ = one(body, {"Queue": queues})
    (entry,) = unattributed(state)
    assert (entry["queue"], entry["requested_time"]) == ("gpuq", 7200)


def test_job_busy_node_has_every_cpu_in_use() -> None:
    jobs = {"1.srv": job("R", exec_vnode="(n1:ncpus=2)")}
    state, _ = one(nodes("job-busy"), {"Jobs": jobs})
    assert unattributed(state)[0]["alloc"] == [{"host": "n1", "slots": 6}]


def test_job_exclusive_node_is_held_whole_by_its_job() -> None:
    jobs = {"1.srv": job("R", exec_vnode="(n1:ncpus=2:mem=1gb)")}
    state, report = one(nodes("job-exclusive"), {"Jobs": jobs})
    assert unattributed(state) == []
    assert state["running"][0]["alloc"] == [
        {"host": "n1", "slots": 8, "resources": {"mem": 16384, "gpu": 2}}
    ]
    assert report.mapped["job-exclusive nodes held whole by their job"] == 1


def test_job_exclusive_node_without_its_job_is_unattributed() -> None:
    state, _ = one(nodes("job-exclusive"), {"Jobs": {}})
    assert unattributed(state)[0]["alloc"] == [{"host": "n1", "slots": 8}]


def test_schedule_does_not_dispatch_onto_unattributed_cpus(tmp_path: Path) -> None:
    """PBS says 8 of n1's 8 CPUs are assigned; the capture has no job there: the
    pending job waits, as in PBS."""
    from xce.cli.import_cmd import import_app
    from xce.cli.main import app

    header = {"pbs_version": "23.06.06", "pbs_server": "srv"}
    (tmp_path / "nodes.json").write_text(json.dumps({**header, **nodes(ncpus=8)}))
    pending = job(Resource_List={"select": "1:ncpus=1"})
    (tmp_path / "jobs.json").write_text(json.dumps({**header, "Jobs": {"2.srv": pending}}))
    out = tmp_path / "state.yaml"  # not a .json the import of tmp_path reads
    result = CliRunner().invoke(import_app, ["pbs", str(tmp_path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "pbs:NODE:unattributed): 1" in result.stderr
    decisions = json.loads(CliRunner().invoke(app, ["schedule", str(out), "--json"]).stdout)
    assert decisions["dispatched"] == []
    assert [p["job"] for p in decisions["pending"]] == ["2"]
