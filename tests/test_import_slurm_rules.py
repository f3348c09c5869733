"""xce import slurm, issue 25: one test per mapping rule — node states, capacity as Slurm
sees it, partitions, priority, job structure (holds, begin times, dependencies, arrays,
node counts, expected starts), TRES — and the state's now."""

from __future__ import annotations

import json
from typing import Any

import pytest

from xce.cluster import state_from_dict
from xce.errors import InputError
from xce.importers import ImportReport, import_slurm, read_slurm_documents, slurm_flow, units

FLAGGED = {"set": True, "infinite": False}


def doc(version: str = "data_parser/v0.0.42", **body: Any) -> str:
    return json.dumps({"meta": {"plugin": {"data_parser": version}}, **body})


def one(*texts: str, now: float | None = None) -> tuple[dict[str, Any], ImportReport]:
    report = ImportReport()
    named = [(f"t{i}.json", t) for i, t in enumerate(texts)]
    docs = read_slurm_documents(named, report)
    return import_slurm(docs, report, now=now).state, report


def node(name: str = "n1", **fields: Any) -> dict[str, Any]:
    base = {"name": name, "cpus": 8, "real_memory": 8000, "state": ["IDLE"], "partitions": ["q"]}
    return {**base, **fields}


def pending(job_id: int = 7, **fields: Any) -> dict[str, Any]:
    job = {
        "job_id": job_id,
        "job_state": ["PENDING"],
        "user_name": "u",
        "partition": "q",
        "submit_time": {**FLAGGED, "number": 100},
        "priority": {**FLAGGED, "number": 50},
    }
    return {**job, **fields}


def running(
    job_id: int = 9, host: str = "n1", cpus: int = 2, mem: int = 1000, **fields: Any
) -> dict[str, Any]:
    """A running job as v0.0.42 prints it (job_resources.nodes.allocation)."""
    row = {"name": host, "cpus": {"count": cpus}, "memory": {"allocated": mem}}
    job = {
        "job_id": job_id,
        "job_state": ["RUNNING"],
        "user_name": "u",
        "partition": "q",
        "start_time": {**FLAGGED, "number": 200},
        "job_resources": {"nodes": {"allocation": [row]}},
    }
    return {**job, **fields}


PARTITION = {"name": "q", "maximums": {"time": {**FLAGGED, "number": 60}}}


def warned(report: ImportReport, words: str) -> list[str]:
    return [e for kind, examples in report.warnings.items() if words in kind for e in examples]


# --- node states: every flag on purpose ----------------------------------------------------


@pytest.mark.parametrize(("flag", "status"), [(f, s) for f, (s, _) in units.NODE_STATES.items()])
def test_every_slurm_node_flag_has_a_status(flag: str, status: str) -> None:
    base = "DOWN" if flag in {"DOWN"} else "IDLE"
    states = [base] if flag == base else [base, flag]
    got, unknown = units.host_status(units.node_states(states))
    assert unknown == []
    assert got == status if flag != "IDLE" else got == "ok"


def test_the_flag_table_covers_slurms_own_lists() -> None:
    """Every base state and flag of slurm_protocol_defs.c's node_states[] and
    node_state_flags[] (Slurm 25.05), and the data_parser's extras, are decided."""
    slurm = {
        "DOWN", "IDLE", "ALLOCATED", "ERROR", "MIXED", "FUTURE", "UNKNOWN",
        "BLOCKED", "CLOUD", "COMPLETING", "DRAIN", "DYNAMIC_FUTURE", "DYNAMIC_NORM",
        "EXTERNAL", "INVALID_REG", "FAIL", "MAINTENANCE", "POWER_DOWN", "POWER_UP",
        "POWERED_DOWN", "REBOOT_REQUESTED", "REBOOT_ISSUED", "RESERVED", "RESUME",
        "NOT_RESPONDING", "PLANNED", "POWERING_UP", "POWERING_DOWN",
        "UNDRAIN", "REBOOT_CANCELED", "POWER_DRAIN",
    }  # fmt: skip
    assert slurm <= set(units.NODE_STATES)


@pytest.mark.parametrize(
    ("state", "flags", "status"),
    [
        (["IDLE", "PLANNED"], None, "ok"),  # 22.05: earmarked by backfill, not closed
        (["IDLE", "COMPLETING"], None, "ok"),
        (["IDLE", "RESERVED"], None, "ok"),
        (["IDLE", "POWERED_DOWN"], None, "ok"),  # power saving: Slurm boots it for a job
        (["IDLE", "POWERING_DOWN"], None, "closed"),
        (["IDLE", "POWER_DOWN"], None, "closed"),
        (["DOWN", "POWERED_DOWN"], None, "unavail"),
        (["IDLE", "POWERED_DOWN", "DRAIN"], None, "closed"),
        (["IDLE", "REBOOT_ISSUED"], None, "closed"),
        (["IDLE", "INVALID_REG"], None, "unavail"),
        (["IDLE", "DYNAMIC_FUTURE"], None, "unavail"),
        ("idle~", None, "ok"),
        ("allocated+", None, "ok"),
        ("drained$", None, "closed"),
        ("idle", ["PLANNED"], "ok"),
        ("mixed#", None, "ok"),
        ("idle%", None, "closed"),
        ("inval", None, "unavail"),
    ],
)
def test_node_state_decisions(state: Any, flags: Any, status: str) -> None:
    assert units.host_status(units.node_states(state, flags)) == (status, [])


def test_node_string_suffixes_name_their_flags() -> None:
    assert units.node_states("allocated+") == ["COMPLETING", "ALLOCATED"]
    assert units.node_states("drained*") == ["NOT_RESPONDING", "DRAIN"]


def test_an_unknown_flag_is_ok_with_a_warning_never_a_silent_close() -> None:
    state, report = one(doc(nodes=[node(state=["IDLE", "SOMETHING_NEW"])]))
    assert state["hosts"][0]["status"] == units.UNKNOWN_STATUS == "ok"
    assert warned(report, "unknown node state flag") == ["t0.json: nodes[0]: SOMETHING_NEW"]


def test_a_reserved_node_without_its_reservation_is_reported() -> None:
    _, report = one(doc(nodes=[node(state=["IDLE", "RESERVED"])]))
    assert warned(report, "node in a reservation not in the input") == [
        "t0.json: nodes[0] (n1): RESERVED"
    ]


# --- capacity as Slurm sees it --------------------------------------------------------------


def test_allocation_beyond_the_captured_jobs_is_unattributed_running_work() -> None:
    """n1: Slurm allocates 6 CPUs, 3000 MiB and 2 GPUs; the one captured job holds 2 CPUs
    and 1000 MiB: the rest runs as slurm:n1:unattributed from now for the partition's
    MaxTime; the state loads."""
    n1 = node(gres="gpu:2", alloc_cpus=6, alloc_memory=3000, gres_used="gpu:2(IDX:0-1)")
    texts = [doc(nodes=[n1]), doc(partitions=[PARTITION]), doc(jobs=[running()])]
    state, report = one(*texts, now=1000)
    extra = state["running"][1]
    assert extra == {
        "id": "slurm:n1:unattributed",
        "user": "unknown",
        "queue": "q",
        "start_time": 1000,
        "requested_time": 3600,
        "alloc": [{"host": "n1", "slots": 4, "resources": {"mem": 2000, "gpu": 2}}],
    }
    assert report.mapped["unattributed allocations"] == 1
    assert warned(report, "beyond its captured jobs") == [
        "t0.json: nodes[0] (n1): 4 CPUs, mem 2000, gpu 2"
    ]
    state_from_dict(state)


@pytest.mark.parametrize(
    ("fields", "alloc"),
    [
        ({"alloc_cpus": 0, "alloc_memory": 0}, None),
        (
            {"alloc_cpus": 8, "tres_used": "cpu=8,mem=4G,gres/gpu=1", "gres": "gpu:1"},
            [{"host": "n1", "slots": 8, "resources": {"gpu": 1}}],
        ),
        (
            {"alloc_cpus": 0, "alloc_memory": 500},
            [{"host": "n1", "slots": 1, "resources": {"mem": 500}}],
        ),
        ({"alloc_cpus": 99}, [{"host": "n1", "slots": 8}]),  # capped at the host
    ],
)
def test_unattributed_amounts(fields: dict[str, Any], alloc: Any) -> None:
    """Only what exceeds the jobs; memory with no CPU left over takes one free slot;
    never more than the host has; no MaxTime known: no requested_time."""
    state, _ = one(doc(nodes=[node(**fields)]))
    entries = [r for r in state.get("running", []) if r["id"] == "slurm:n1:unattributed"]
    assert [e["alloc"] for e in entries] == ([alloc] if alloc else [])
    assert all("requested_time" not in e for e in entries)
    state_from_dict(state)


def test_jobs_holding_more_than_slurm_says_keep_a_warning() -> None:
    state, report = one(doc(nodes=[node(alloc_cpus=1)], jobs=[running(cpus=2)]))
    assert [r["id"] for r in state["running"]] == ["9"]
    assert warned(report, "hold more than Slurm allocates") == [
        "t0.json: nodes[0] (n1): slots Slurm 1, jobs 2"
    ]


def test_running_jobs_gres_are_charged_to_the_host() -> None:
    n1 = node(gres="gpu:a100:4")
    job = running(gres_detail=["gpu:a100:2(IDX:0-1)"])
    state, _ = one(doc(nodes=[n1], jobs=[job]))
    assert state["running"][0]["alloc"][0]["resources"] == {"mem": 1000, "gpu": 2, "gpu_a100": 2}
    job = running(tres_alloc_str="cpu=2,mem=1000M,node=1,gres/gpu=3")
    state, _ = one(doc(nodes=[n1], jobs=[job]))
    assert state["running"][0]["alloc"][0]["resources"] == {"mem": 1000, "gpu": 3}
    state_from_dict(state)


# --- partitions, priority, now ----------------------------------------------------------------


def test_queues_from_partition_names_when_the_capture_has_none() -> None:
    state, report = one(doc(nodes=[node(partitions=["a", "b"])], jobs=[pending(partition="c")]))
    assert state["queues"] == {"a": {"priority": 0}, "b": {"priority": 0}, "c": {"priority": 0}}
    assert warned(report, "no partitions in the input") == ["a, b, c"]
    state, report = one(doc(nodes=[node()], partitions=[PARTITION]))
    assert not warned(report, "no partitions in the input")


def test_pending_jobs_keep_slurms_priority_and_the_picker_is_priority() -> None:
    state, report = one(doc(nodes=[node()], jobs=[pending(), pending(8, priority=4294901755)]))
    assert [j["priority"] for j in state["jobs"]] == [50, 4294901755]
    assert state["picker"] == "priority"
    assert "priorities read (kept in the report)" not in report.mapped
    state, _ = one(doc(nodes=[node()]))
    assert "picker" not in state


@pytest.mark.parametrize(
    ("extra", "now", "expected"),
    [
        ({}, None, None),  # v0.0.39 and older say nothing
        ({"last_update": {**FLAGGED, "number": 500}}, None, 500),
        (
            {
                "last_update": {**FLAGGED, "number": 500},
                "last_backfill": {**FLAGGED, "number": 700},
            },
            None,
            700,
        ),
        ({"last_update": {**FLAGGED, "number": 500}}, 900, 900),  # --now wins
    ],
)
def test_now_from_the_capture(extra: dict[str, Any], now: float | None, expected: Any) -> None:
    state, _ = one(doc(nodes=[node()], **extra), now=now)
    assert state.get("now") == expected
    assert state["scheduler_resolution"] == 60


def test_unattributed_start_is_the_latest_time_of_the_capture_without_now() -> None:
    expected = {**FLAGGED, "number": 9000}  # a pending job's start_time: Slurm's estimate
    job = pending(submit_time=300, start_time=expected)
    state, _ = one(doc(nodes=[node(alloc_cpus=4)], jobs=[job]))
    assert "now" not in state
    assert state["running"][0]["start_time"] == 300


# --- job structure -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"state_reason": "JobHeldUser"}, {"hold": True}),
        ({"state_reason": "JobHeldAdmin", "priority": 0}, {"hold": True}),
        ({"hold": True}, {"hold": True}),
        ({"priority": {**FLAGGED, "number": 0}}, {"hold": True}),
        ({"state_reason": "Priority"}, {}),
        # begin time: eligible_time after now, or the reason says so
        ({"eligible_time": {**FLAGGED, "number": 5000}}, {"begin_time": 5000}),
        ({"eligible_time": {**FLAGGED, "number": 50}}, {}),
        ({"eligible_time": 50, "state_reason": "BeginTime"}, {"begin_time": 50}),
        # Slurm's expected start: a start_time set, not the submit time
        ({"start_time": {**FLAGGED, "number": 4000}}, {"scheduler_start": 4000}),
        ({"start_time": {**FLAGGED, "number": 100}}, {}),
        ({"start_time": 0}, {}),
        ({"name": "step1"}, {"name": "step1"}),
        # dependencies in the contract's syntax, states stripped
        ({"dependency": "afterok:12(unfulfilled),afterany:14_*(unfulfilled)"},
         {"dependency": "afterok:12,afterany:14_*"}),
        ({"dependency": "afterok:12(unfulfilled)?afternotok:13(unfulfilled)"},
         {"dependency": "afterok:12?afternotok:13"}),
        ({"dependency": "singleton(unfulfilled)"}, {"dependency": "singleton"}),
        ({"dependency": "after:12+10(unfulfilled)"}, {"dependency": "after:12+10"}),
        # a failed item can never hold: left out (held when it had to hold)
        ({"dependency": "afterok:12(failed)", "state_reason": "DependencyNeverSatisfied"},
         {"hold": True}),
        ({"dependency": "afterok:12(failed),afterok:13(unfulfilled)"},
         {"dependency": "afterok:13", "hold": True}),
        ({"dependency": "afterok:12(failed)?afterok:13(unfulfilled)"},
         {"dependency": "afterok:13"}),
        ({"dependency": ""}, {}),
    ],
)  # fmt: skip
def test_pending_job_flow(fields: dict[str, Any], expected: dict[str, Any]) -> None:
    state, _ = one(doc(nodes=[node()], jobs=[pending(**fields)]), now=1000)
    job = state["jobs"][0]
    keys = ("hold", "begin_time", "scheduler_start", "name", "dependency")
    assert {k: job[k] for k in keys if k in job} == expected
    state_from_dict(state)


@pytest.mark.parametrize(
    ("fields", "entry_id", "array"),
    [
        ({"array_job_id": 412, "array_task_string": "10-9999%50", "array_max_tasks": 50}, "412",
         "10-9999%50"),
        ({"array_job_id": 412, "array_task_string": "1,3,5-9:2", "array_max_tasks": 4}, "412",
         "1,3,5-9:2%4"),
        ({"array_job_id": 412, "array_task_string": "1-100000"}, "412", "1-100000"),
        ({"array_job_id": 412, "array_task_string": "0x2E"}, "412", "1-3,5"),
        ({"array_job_id": 412, "array_task_id": 7, "array_task_string": ""}, "412_7", None),
        ({"array_job_id": 0, "array_task_string": ""}, "412", None),
    ],
)  # fmt: skip
def test_array_record_is_one_entry_of_its_remaining_tasks(
    fields: dict[str, Any], entry_id: str, array: str | None
) -> None:
    state, _ = one(doc(nodes=[node()], jobs=[pending(412, **fields)]))
    (job,) = state["jobs"]
    assert (job["id"], job.get("array")) == (entry_id, array)
    state_from_dict(state)


def test_array_list_cut_by_slurm_keeps_what_it_shows() -> None:
    job = pending(412, array_job_id=412, array_task_string="1,3,5,7,9,11,...")
    state, report = one(doc(nodes=[node()], jobs=[job]))
    assert state["jobs"][0]["array"] == "1,3,5,7,9"
    assert warned(report, "array task list cut by Slurm")


def test_running_array_element_names_its_array_job() -> None:
    job = running(420, array_job_id=412, array_task_id=3)
    state, _ = one(
        doc(nodes=[node()], jobs=[job, pending(412, array_job_id=412, array_task_string="4-9%2")])
    )
    assert (state["running"][0]["id"], state["running"][0]["array_job"]) == ("412_3", "412")
    state_from_dict(state)


@pytest.mark.parametrize(
    ("fields", "span"),
    [
        ({"node_count": 2}, None),  # Slurm's estimate (no -N): max_nodes 0
        ({"node_count": 2, "max_nodes": 2, "tres_req_str": "cpu=8,node=2"}, "span[ptile=4]"),
        ({"node_count": 1, "max_nodes": 1, "tres_req_str": "cpu=8,node=1"}, "span[hosts=1]"),
        ({"node_count": 2, "max_nodes": 4, "tres_req_str": "cpu=8,node=2"}, None),  # -N 2-4
        ({"node_count": 3, "max_nodes": 3, "tres_req_str": "cpu=8,node=3"}, None),  # uneven
        ({"max_nodes": 2, "minimum_nodes": 2}, "span[ptile=4]"),
    ],
)
def test_span_only_for_a_node_count_the_user_gave(fields: dict[str, Any], span: str | None) -> None:
    state, report = one(doc(nodes=[node()], jobs=[pending(num_tasks=8, **fields)]))
    resreq = state["jobs"][0].get("resreq", "")
    assert (span in resreq) if span else ("span[" not in resreq)
    if fields.get("node_count") == 3:
        assert warned(report, "node count not mapped")


def test_local_22_05_job_without_n_gets_no_invented_span() -> None:
    from pathlib import Path

    folder = Path(__file__).parent / "data" / "slurm" / "local-22.05.8-v0.0.38"
    texts = [p.read_text() for p in sorted(folder.glob("*.json"))]
    state, _ = one(*texts)
    job5 = next(j for j in state["jobs"] if j["id"] == "5")  # -n 32 -p big, no -N
    assert job5["resreq"] == "select[partition_big]"


# --- TRES --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "rusage"),
    [
        ({"tres_per_job": "gres/gpu:4"}, "rusage[gpu=4/job]"),
        ({"tres_per_job": "gres:gpu:a100:2"}, "rusage[gpu=2/job:gpu_a100=2/job]"),
        ({"tres_per_node": "gres/gpu:2"}, "rusage[gpu=2]"),
        ({"tres_per_task": "gres/gpu:1", "num_tasks": 2}, "rusage[gpu=1/task]"),
        ({"tres_per_task": "cpu=2,gres/gpu:1", "num_tasks": 2, "cpus_per_task": 2},
         "rusage[gpu=2/job]"),  # xce tasks are CPUs: per Slurm task = its total per job
        ({"tres_per_socket": "gres/gpu:1"}, "rusage[gpu=2]"),  # x the nodes' 2 sockets
        ({"tres_req_str": "cpu=1,mem=1G,node=1,gres/gpu=3"}, "rusage[gpu=3/job]"),
    ],
)  # fmt: skip
def test_gres_requests(fields: dict[str, Any], rusage: str) -> None:
    n1 = node(gres="gpu:a100:4", sockets=2)
    state, _ = one(doc(nodes=[n1], jobs=[pending(**fields)]))
    assert state["jobs"][0]["resreq"].endswith(rusage)
    state_from_dict(state)


def test_a_gres_no_node_has_is_declared_never_dropped() -> None:
    state, report = one(doc(nodes=[node()], jobs=[pending(tres_per_job="gres/gpu:4")]))
    assert state["jobs"][0]["resreq"] == "rusage[gpu=4/job]"
    assert state["resources"]["gpu"] == {"kind": "consumable", "reservation": "per_host"}
    assert warned(report, "GRES no imported node has")
    state_from_dict(state)


def test_unmapped_tres_is_reported() -> None:
    _, report = one(doc(nodes=[node()], jobs=[pending(tres_per_job="license/x=1")]))
    assert warned(report, "job TRES not mapped") == ["t0.json: jobs[0]: tres_per_job license/x=1"]


# --- values ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "negative_unset", "expected"),
    [(-1, True, None), (-2, True, None), (-1, False, ValueError), (-5, True, ValueError),
     (float("nan"), False, ValueError), (2e15, False, ValueError), (10**15, False, 10**15)],
)  # fmt: skip
def test_number_ranges(value: float, negative_unset: bool, expected: Any) -> None:
    if expected is ValueError:
        with pytest.raises(ValueError):
            units.number(value, negative_unset=negative_unset)
    else:
        assert units.number(value, negative_unset=negative_unset) == expected


@pytest.mark.parametrize("text", ["afterok", "afterok:x(unfulfilled)", "bogus:12", "singleton:3"])
def test_a_dependency_slurm_never_prints_is_refused_located(text: str) -> None:
    with pytest.raises(InputError, match="cannot read dependency") as info:
        one(doc(nodes=[node()], jobs=[pending(dependency=text)]))
    assert info.value.path == "jobs[0]"


def test_dependency_expand_is_reported() -> None:
    report = ImportReport()
    assert slurm_flow.dependency("expand:12(unfulfilled)", None, "w", report) == (None, False)
    assert report.counts["dependency expand: not modelled (left out)"] == 1


# --- features named as resources ---------------------------------------------------------


def test_a_feature_named_as_a_gres_becomes_its_own_tag() -> None:
    """Sites tag GPU nodes with a feature ``gpu`` and give them GRES ``gpu`` (the real
    22.05 site capture does): the feature is the tag ``feature_gpu`` on every host and in
    constraints, reported; the state loads (it failed xce's loader: a tag and a
    consumable of one name)."""
    nodes = [
        node("g1", features=["amd", "gpu"], gres="gpu:4"),
        node("n1", features=["intel"]),
    ]
    job = pending(features="gpu&amd")
    state, report = one(doc(nodes=nodes, partitions=[PARTITION]), doc(jobs=[job]))
    state_from_dict(state, "<test>")
    g1 = next(h for h in state["hosts"] if h["name"] == "g1")
    assert g1["attributes"]["feature_gpu"] is True
    assert "gpu" not in g1["attributes"]
    assert g1["resources"]["gpu"] == 4
    assert "(feature_gpu && amd)" in state["jobs"][0]["resreq"]
    assert warned(report, "feature named as a resource") == ["gpu -> feature_gpu"]


def test_a_constraint_on_a_feature_no_node_has_is_declared_and_reported() -> None:
    """``-C abc`` where no imported node has ``abc``: the tag is declared, so the job
    cannot run on the imported nodes (as in Slurm), and the report says so; the state
    loads (it failed xce's own loader: an internal error, found by a review's fuzzing)."""
    nodes = [node("n1", features=["intel"])]
    state, report = one(
        doc(nodes=nodes, partitions=[PARTITION]), doc(jobs=[pending(features="abc")])
    )
    state_from_dict(state, "<test>")
    assert state["resources"]["abc"] == {"kind": "boolean"}
    assert "(abc)" in state["jobs"][0]["resreq"]
    assert warned(report, "feature no imported node has")


def test_a_fractional_partition_tier_is_refused_at_its_path() -> None:
    part = {**PARTITION, "priority": {"tier": 3.5}}
    with pytest.raises(InputError, match=r"priority tier 3\.5 is not a whole number") as info:
        one(doc(nodes=[node()], partitions=[part]))
    assert info.value.path == "partitions[0]"


def test_a_failed_item_of_an_any_one_dependency_is_left_out() -> None:
    """``afterok:3(unfulfilled)?afterok:99(failed)``: 99 can never hold, so the job waits
    for 3 (the failed item was kept, and 99, not in the state, read as ended: the job
    ran at once; found by a review)."""
    jobs = [running(3), pending(10, dependency="afterok:3(unfulfilled)?afterok:99(failed)")]
    state, _ = one(doc(nodes=[node()], partitions=[PARTITION]), doc(jobs=jobs))
    (job,) = state["jobs"]
    assert job["dependency"] == "afterok:3"
    assert "hold" not in job


def test_running_jobs_that_overfill_a_node_are_capped_and_reported() -> None:
    """Memory not configured (``real_memory`` 1500 here, 1 on many sites) or fewer CPUs
    than the jobs hold: the jobs are charged what the node has left, reported; the state
    loads (it failed xce's own loader: an internal error, found by a review)."""
    nodes = [node("n1", cpus=4, real_memory=1500)]
    jobs = [running(3, cpus=2, mem=1000), running(4, cpus=4, mem=1000)]
    state, report = one(doc(nodes=nodes, partitions=[PARTITION]), doc(jobs=jobs))
    state_from_dict(state, "<test>")
    allocs = [r["alloc"][0] for r in state["running"] if not r["id"].startswith("slurm:")]
    assert [a["slots"] for a in allocs] == [2, 2]
    assert [a["resources"]["mem"] for a in allocs] == [1000, 500]
    assert warned(report, "hold more than a node has")
