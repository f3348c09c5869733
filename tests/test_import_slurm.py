"""xce import slurm: Slurm's JSON of seven data_parser versions -> a state file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from xce.cli.import_cmd import import_app
from xce.cluster import state_from_dict
from xce.errors import InputError
from xce.importers import ImportReport, import_slurm, read_slurm_documents, units
from xce.importers.hostlist import expand

DATA = Path(__file__).parent / "data" / "slurm"
SAMPLES = sorted(p.name for p in DATA.iterdir() if p.is_dir() and any(p.glob("*.json")))


def load(folder: str) -> tuple[dict[str, Any], ImportReport]:
    report = ImportReport()
    files = sorted((DATA / folder).glob("*.json"))
    docs = read_slurm_documents([(str(f), f.read_text()) for f in files], report)
    return import_slurm(docs, report).state, report


def doc(version: str = "data_parser/v0.0.42", **body: Any) -> str:
    return json.dumps({"meta": {"plugin": {"data_parser": version}}, **body})


def one(text: str) -> tuple[dict[str, Any], ImportReport]:
    report = ImportReport()
    return import_slurm(read_slurm_documents([("t.json", text)], report), report).state, report


NO_PARTITIONS = (
    "no partitions in the input: queues made from the nodes' and jobs' partitions, tiers "
    "unknown (all 0; import scontrol show partitions --json or /partitions)"
)


def problems(report: ImportReport) -> dict[str, list[str]]:
    """The report's warnings but the one every capture without partitions has."""
    return {k: v for k, v in report.warnings.items() if k != NO_PARTITIONS}


# --- every sample: imports, loads through xce's own loader, pinned counts -------------

GOLDEN = {
    "cli-21.08.5-v0.0.37-rivos": {"hosts": 4, "hosts unavail": 1, "pending": 1},
    "local-22.05.8-v0.0.38": {"hosts": 6, "pending": 2, "running": 4},
    "slurmrestd-22.05.5-v0.0.38-firecrest": {"hosts": 1, "queues": 3},
    "slurmrestd-23.02-v0.0.39": {"hosts": 50, "pending": 26, "queues": 3, "running": 2},
    "slurmrestd-23.11-v0.0.40": {
        "hosts": 6,
        "hosts closed": 1,
        "hosts unavail": 1,
        "pending": 2,
        "queues": 1,
        "running": 5,
    },
    "slurmrestd-24.05-v0.0.41": {"hosts": 50, "pending": 1, "queues": 4, "running": 3},
    "slurmrestd-24.11-v0.0.42": {
        "hosts": 6,
        "hosts closed": 1,
        "hosts unavail": 1,
        "pending": 2,
        "queues": 2,
        "running": 7,
    },
    "slurmrestd-24.11.3-v0.0.40-firecrest": {"pending": 1},
    "slurmrestd-24.11.3-v0.0.42-firecrest": {},
    "slurmrestd-25.05-v0.0.43": {
        "hosts": 6,
        "hosts closed": 1,
        "hosts unavail": 1,
        "pending": 2,
        "queues": 2,
        "running": 6,
    },
}


def test_golden_covers_every_sample() -> None:
    assert sorted(GOLDEN) == SAMPLES


@pytest.mark.parametrize("folder", SAMPLES)
def test_sample_imports_and_loads(folder: str) -> None:
    state, report = load(folder)
    state_from_dict(state, folder)
    counts = {
        k: v
        for k, v in report.mapped.items()
        if k in {"hosts", "hosts closed", "hosts unavail", "pending", "queues", "running"}
    }
    assert counts == GOLDEN[folder]


def test_gpu_sample_hosts_and_reasons() -> None:
    state, report = load("slurmrestd-24.11-v0.0.42")
    ia1 = next(h for h in state["hosts"] if h["name"] == "ia1")
    assert ia1["slots"] == 32
    assert ia1["resources"] == {"mem": 524288, "gpu": 6, "gpu_h100": 2, "gpu_h200": 4}
    assert ia1["attributes"] == {"partition_ia": True}
    assert state["resources"]["gpu_h100"] == {"kind": "consumable", "reservation": "per_host"}
    assert state["queues"]["standard"] == {"priority": 1, "max_runtime": 7200}
    assert report.reasons["6370"] == "BeginTime"
    assert "Resources" in report.reasons.values()


def test_running_job_allocation_from_job_resources() -> None:
    state, _ = load("slurmrestd-24.11-v0.0.42")
    job = next(r for r in state["running"] if r["id"] == "6365")
    assert job["alloc"] == [
        {"host": "cn1", "slots": 44, "resources": {"mem": 22528}},
        {"host": "cn2", "slots": 64, "resources": {"mem": 32768}},
        {"host": "cn3", "slots": 20, "resources": {"mem": 10240}},
    ]
    assert (job["requested_time"], job["user"], job["project"]) == (120, "jbeck", "biology")


def running_v038(row: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A running job as 22.05's squeue --json prints it, on node n1."""
    job = {
        "job_id": 9,
        "job_state": "RUNNING",
        "cpus": 4,
        "nodes": "n1",
        "job_resources": {"nodes": "n1", "allocated_nodes": [{"nodename": "n1", **row}]},
    }
    return {**job, **fields}


def test_allocation_without_cpu_counts_is_spread_and_warned() -> None:
    row = {"cpus_used": 0, "memory_allocated": 0}
    state, report = one(doc("data_parser/v0.0.38", nodes=[NODE], jobs=[running_v038(row)]))
    assert state["running"][0]["alloc"] == [{"host": "n1", "slots": 4}]
    assert report.counts["allocation spread evenly (job_resources without CPU counts)"] == 1


def test_allocation_from_the_cores_marked_allocated() -> None:
    """v0.0.37/38 print a node's CPUs for a job only as cores marked allocated when
    ``cpus_used`` is 0 (22.05 does): those are counted, memory from
    ``memory_allocated``; nothing is spread (the real-Slurm suite's ``-n 20`` over a
    16-CPU and a 4-CPU share)."""
    cores = {"0": {"cores": {"0": "allocated", "1": "allocated", "2": "idle"}}}
    row = {"cpus_used": 0, "memory_allocated": 700, "sockets": cores}
    node = {**NODE, "alloc_cpus": 2}
    state, report = one(doc("data_parser/v0.0.38", nodes=[node], jobs=[running_v038(row)]))
    assert state["running"][0]["alloc"] == [{"host": "n1", "slots": 2, "resources": {"mem": 700}}]
    assert not problems(report)
    state, report = load("local-22.05.8-v0.0.38")
    job = next(r for r in state["running"] if r["id"] == "3")  # -N 2 -n 16 --mem=1000
    assert [(a["slots"], a["resources"]) for a in job["alloc"]] == [(8, {"mem": 1000})] * 2
    assert "allocation spread evenly (job_resources without CPU counts)" not in report.counts


def test_v037_squeue_already_has_flagged_numbers() -> None:
    # 21.08's squeue --json prints some job numbers as {"set", "infinite", "number"}
    state, report = load("cli-21.08.5-v0.0.37-rivos")
    (job,) = state["jobs"]
    # its partition hw-m has no imported node: it cannot run on them (reported)
    assert (job["tasks"], job["resreq"]) == (1, "select[partition_hw_m] rusage[mem=131072]")
    assert report.counts["running job on a node not in the input (skipped)"] == 1


# --- units and sentinels ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (5, 5),
        ({"set": True, "infinite": False, "number": 60}, 60),
        ({"set": False, "infinite": False, "number": 0}, None),
        ({"set": False, "infinite": True, "number": 0}, None),
        (4294967294, None),
        (4294967295, None),
        (65534, None),
        (None, None),
        (True, None),
    ],
)
def test_number(value: Any, expected: Any) -> None:
    assert units.number(value) == expected


def test_number_refuses_text() -> None:
    with pytest.raises(ValueError, match="expected a number"):
        units.number("12")


@pytest.mark.parametrize(
    ("text", "mib"),
    [
        ("128G", 131072),
        ("500000M", 500000),
        ("62.50G", 64000),
        ("16", 16),
        ("1T", 1048576),
        ("2048K", 2),
    ],
)
def test_mebibytes(text: str, mib: float) -> None:
    assert units.mebibytes(text) == mib


def test_tres() -> None:
    assert units.tres("cpu=64,mem=128G,billing=64") == {"cpu": "64", "mem": "128G", "billing": "64"}
    with pytest.raises(ValueError):
        units.tres("cpu")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("N/A", {}),
        ("(null)", {}),
        ("gpu:2", {"gpu": 2}),
        ("gpu:h100:2,gpu:h200:4", {"gpu": 6, "gpu_h100": 2, "gpu_h200": 4}),
        ("gpu:a100:4(S:0-1)", {"gpu": 4, "gpu_a100": 4}),
        ("gpu:a100:3(IDX:0-1,3)", {"gpu": 3, "gpu_a100": 3}),
        ("gpu:1g.5gb:7", {"gpu": 7, "gpu_1g_5gb": 7}),
        ("gres/gpu=2", {"gpu": 2}),
        ("gres/gpu:h100=1", {"gpu": 1, "gpu_h100": 1}),
        ("mps:100", {"mps": 100}),
    ],
)
def test_gres(text: str, expected: dict[str, int]) -> None:
    assert units.gres(text) == expected


@pytest.mark.parametrize(
    ("text", "select"),
    [
        ("a", "a"),
        ("a&b|c", "a && b || c"),
        ("(a|b)&c", "(a || b) && c"),
        ("a100-80gb&preemptible", "a100_80gb && preemptible"),
    ],
)
def test_constraint(text: str, select: str) -> None:
    assert units.constraint(text) == select


def test_constraint_matching_or_is_refused() -> None:
    with pytest.raises(ValueError, match="matching OR"):
        units.constraint("[rack1|rack2]")


@pytest.mark.parametrize(
    ("state", "flags", "status"),
    [
        (["IDLE"], None, "ok"),
        (["MIXED"], None, "ok"),
        (["ALLOCATED"], None, "ok"),
        (["IDLE", "DRAIN"], None, "closed"),
        (["MIXED", "MAINTENANCE"], None, "ok"),
        (["MIXED", "DRAIN"], None, "closed"),
        (["IDLE", "FAIL"], None, "closed"),
        (["DOWN"], None, "unavail"),
        (["IDLE", "NOT_RESPONDING"], None, "unavail"),
        ("mixed", [], "ok"),
        ("idle+drain", None, "closed"),
        ("down*", None, "unavail"),
        ("idle*", None, "unavail"),
        ("idle", ["DRAIN"], "closed"),
    ],
)
def test_node_state(state: Any, flags: Any, status: str) -> None:
    assert units.host_status(units.node_states(state, flags))[0] == status


def test_unknown_node_state_flag_is_reported() -> None:
    node = {"name": "n1", "cpus": 4, "real_memory": 100, "state": ["IDLE", "STRANGE"]}
    state, report = one(doc(nodes=[node]))
    assert state["hosts"][0]["status"] == "ok"
    assert report.counts["unknown node state flag (read as ok)"] == 1


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("cn1", ["cn1"]),
        ("cn[052-054]", ["cn052", "cn053", "cn054"]),
        ("a[1,3],b", ["a1", "a3", "b"]),
    ],
)
def test_hostlist(text: str, names: list[str]) -> None:
    assert expand(text) == names


# --- versions and bad input --------------------------------------------------------------


@pytest.mark.parametrize(
    ("plugin", "version"),
    [
        ({"type": "openapi/v0.0.37", "name": "Slurm OpenAPI v0.0.37"}, "v0.0.37"),
        ({"type": "openapi/dbv0.0.38"}, "v0.0.38"),
        ({"type": "openapi/v0.0.39", "data_parser": "v0.0.39"}, "v0.0.39"),
        ({"type": "openapi/slurmctld", "data_parser": "data_parser/v0.0.40"}, "v0.0.40"),
    ],
)
def test_version_from_meta_plugin(plugin: dict[str, str], version: str) -> None:
    report = ImportReport()
    (d,) = read_slurm_documents(
        [("t", json.dumps({"meta": {"plugin": plugin}, "nodes": []}))], report
    )
    assert d.version == version


def test_unknown_newer_version_is_read_with_a_warning() -> None:
    node = {"name": "n1", "cpus": 4, "real_memory": 100, "state": ["IDLE"]}
    state, report = one(doc("data_parser/v0.0.44", nodes=[node]))
    assert state["hosts"][0]["slots"] == 4
    assert report.counts["unknown newer version, read best effort"] == 1


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        ('{"nodes": [', None, "not JSON"),
        ("[]", "$", "expected a JSON object"),
        ('{"nodes": []}', "meta.plugin", "not a Slurm JSON document"),
        (doc("data_parser/v0.0.36", nodes=[]), "meta.plugin", "not supported"),
        (doc(other=1), "$", "none of nodes"),
        (doc(nodes={}), "nodes", "expected a list"),
        (doc(nodes=[{"cpus": 1}]), "nodes[0]", "without a name"),
        (doc(nodes=[{"name": "n", "state": 3}]), "nodes[0]", "node state"),
        (doc(jobs=[{"job_id": 1}]), "jobs[0]", "no job_state"),
    ],
)
def test_bad_input_is_located(text: str, path: str | None, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        one(text)
    assert info.value.source == "t.json"
    assert info.value.path == path


# --- jobs ---------------------------------------------------------------------------------


def pending(**fields: Any) -> dict[str, Any]:
    job = {
        "job_id": 7,
        "job_state": ["PENDING"],
        "user_name": "u",
        "account": "acc",
        "partition": "q",
        "state_reason": "Priority",
        "submit_time": {"set": True, "infinite": False, "number": 100},
        "time_limit": {"set": True, "infinite": False, "number": 30},
    }
    return {**job, **fields}


NODE = {
    "name": "n1",
    "cpus": 8,
    "real_memory": 8000,
    "state": ["IDLE"],
    "gres": "gpu:a100:2",
    "features": ["fast", "ib"],
    "partitions": ["p", "q"],
}


@pytest.mark.parametrize(
    ("fields", "tasks", "resreq"),
    [
        ({}, 1, None),
        ({"num_tasks": 4, "cpus_per_task": 2}, 8, None),
        (
            {"num_tasks": 2, "memory_per_cpu": {"set": True, "infinite": False, "number": 500}},
            2,
            "rusage[mem=500]",
        ),
        (
            {"num_tasks": 4, "node_count": 1, "memory_per_node": 1000},
            4,
            "rusage[mem=250]",
        ),
        ({"num_tasks": 4, "node_count": 2}, 4, None),  # Slurm's estimate: no -N
        (
            {"num_tasks": 4, "node_count": 2, "max_nodes": 2, "tres_req_str": "node=2"},
            4,
            "span[ptile=2]",
        ),
        ({"features": "fast&ib"}, 1, "select[(fast && ib)]"),
        ({"tres_per_node": "gres/gpu:a100=1"}, 1, "rusage[gpu=1:gpu_a100=1]"),
        ({"memory_per_node": 0x8000000000000000 | 300}, 1, "rusage[mem=300]"),
    ],
)
def test_pending_job(fields: dict[str, Any], tasks: int, resreq: str | None) -> None:
    state, report = one(doc(nodes=[NODE], jobs=[pending(**fields)]))
    (job,) = state["jobs"]
    assert job["tasks"] == tasks
    assert job.get("resreq") == resreq
    assert (job["id"], job["user"], job["project"], job["queue"]) == ("7", "u", "acc", "q")
    assert (job["submit_time"], job["requested_time"]) == (100, 1800)
    assert report.reasons == {"7": "Priority"}
    state_from_dict(state)


def test_node_features_and_partitions_become_tags() -> None:
    state, _ = one(doc(nodes=[NODE]))
    assert state["hosts"][0]["attributes"] == {
        "fast": True,
        "ib": True,
        "partition_p": True,
        "partition_q": True,
    }
    old = {**NODE, "features": "fast,ib", "state": "idle"}
    state, _ = one(doc("openapi/v0.0.37", nodes=[old]))
    assert state["hosts"][0]["attributes"]["ib"] is True


def test_partition_tiers_and_preemption_v038() -> None:
    parts = [
        {"name": "low", "priority_tier": 1, "preemption_mode": ["off"], "max_time_limit": 60},
        {
            "name": "high",
            "priority_tier": 5,
            "preemption_mode": ["requeue"],
            "default_time_limit": 10,
            "max_time_limit": 4294967295,
        },
    ]
    state, _ = one(
        json.dumps({"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "partitions": parts})
    )
    assert state["queues"] == {
        "low": {"priority": 1, "max_runtime": 3600},
        "high": {"priority": 5, "default_runtime": 600, "preempts": ["low"]},
    }


def test_finished_jobs_are_counted_not_mapped() -> None:
    state, report = one(doc(jobs=[pending(job_state=["COMPLETED"])]))
    assert "jobs" not in state
    assert report.mapped["finished jobs (not mapped)"] == 1


# --- the command -------------------------------------------------------------------------


def run(*args: str, stdin: str | None = None) -> Any:
    return CliRunner().invoke(import_app, ["slurm", *args], input=stdin)


def test_cli_directory_to_stdout() -> None:
    result = run(str(DATA / "slurmrestd-25.05-v0.0.43"))
    assert result.exit_code == 0, result.output
    assert "import: " in result.stderr
    state = yaml.safe_load(result.stdout)
    state_from_dict(state)
    assert len(state["hosts"]) == 6


def test_cli_stdin_and_output_file(tmp_path: Path) -> None:
    text = (DATA / "cli-21.08.5-v0.0.37-rivos" / "sinfo--json.json").read_text()
    out = tmp_path / "state.json"
    result = run("-", "-o", str(out), stdin=text)
    assert result.exit_code == 0, result.output
    assert len(json.loads(out.read_text())["hosts"]) == 4
    assert run("-", "-o", str(out), stdin=text).exit_code == 2  # exists: --force needed
    assert run("-", "-o", str(out), "--force", stdin=text).exit_code == 0


def test_cli_never_writes_onto_an_input(tmp_path: Path) -> None:
    src = tmp_path / "nodes.json"
    src.write_text(doc(nodes=[]))
    result = run(str(src), "-o", str(src), "--force")
    assert result.exit_code == 2
    assert src.read_text() == doc(nodes=[])


def test_cli_bad_input_exits_2_located(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(doc(nodes=[{"name": "n", "state": 3}]))
    result = run(str(bad))
    assert result.exit_code == 2
    assert f"{bad}: nodes[0]:" in result.stderr


def test_cli_strict_refuses_what_is_not_mapped() -> None:
    folder = str(DATA / "cli-21.08.5-v0.0.37-rivos")
    assert run(folder).exit_code == 0
    result = run(folder, "--strict")
    assert result.exit_code == 2
    assert f"--strict: {NO_PARTITIONS}" in result.stderr
    assert run(str(DATA / "slurmrestd-22.05.5-v0.0.38-firecrest"), "--strict").exit_code == 0


@pytest.mark.parametrize("folder", SAMPLES)
def test_schedule_runs_on_every_import(folder: str, tmp_path: Path) -> None:
    from xce.cli.main import app

    out = tmp_path / "state.yaml"
    assert run(str(DATA / folder), "-o", str(out)).exit_code == 0
    result = CliRunner().invoke(app, ["schedule", str(out)])
    assert result.exit_code == 0, result.output


def test_pending_job_keeps_to_its_partition() -> None:
    """A job keeps to its partition's nodes (no select when every node is in it); a job
    whose partition has no imported node cannot run on them, reported."""
    other = {**NODE, "name": "n2", "partitions": ["q"]}
    state, report = one(doc(nodes=[NODE, other], jobs=[pending(partition="p", features="fast")]))
    assert state["jobs"][0]["resreq"] == "select[partition_p && (fast)]"
    state_from_dict(state)
    state, _ = one(doc(nodes=[NODE, other], jobs=[pending(partition="q")]))
    assert "resreq" not in state["jobs"][0]
    state, report = one(doc(nodes=[NODE], jobs=[pending(partition="gone")]))
    assert state["jobs"][0]["resreq"] == "select[partition_gone]"
    assert state["resources"]["partition_gone"] == {"kind": "boolean"}
    warned = report.warnings["job's partition has no imported node (it cannot run on them)"]
    assert warned == ["t.json: jobs[0]"]
    loaded = state_from_dict(state)
    assert not loaded.hosts.tags["partition_gone"].any()


def test_local_slurm_capture_pends_where_slurm_does() -> None:
    # squeue/sinfo --json of .ci/slurm/start.sh's cluster (Debian 22.05.8), six jobs
    state, report = load("local-22.05.8-v0.0.38")
    assert report.reasons == {"5": "Resources", "6": "Resources"}
    jobs = {j["id"]: j["resreq"] for j in state["jobs"]}
    assert jobs["6"] == "select[partition_batch && (ib && intel)] rusage[mem=500]"
    assert {r["id"] for r in state["running"]} == {"1", "2", "3", "4"}


# --- advance reservations, QOS, Slurm's own reasons ------------------------------------

FLAGGED = {"set": True, "infinite": False}


def reservation(**fields: Any) -> dict[str, Any]:
    """A reservation as slurmrestd v0.0.40 on prints it (flagged times)."""
    resv = {
        "name": "maint",
        "node_list": "n1",
        "start_time": {**FLAGGED, "number": 1000},
        "end_time": {**FLAGGED, "number": 5000},
        "users": "alice,bob",
        "accounts": "",
        "flags": ["MAINT", "SPEC_NODES"],
        "core_count": 0,
    }
    return {**resv, **fields}


def test_reservation_maps_name_hosts_and_window() -> None:
    """issue 13: /reservations -> reservations (no consumer list: in Slurm only jobs
    asking for a reservation use it), and a pending job's resv_name -> its reservation;
    the state loads and the job is planned inside the window."""
    text = doc(nodes=[NODE], reservations=[reservation()], jobs=[pending(resv_name="maint")])
    state, report = one(text)
    assert state["reservations"] == [{"name": "maint", "start": 1000, "end": 5000, "hosts": ["n1"]}]
    assert state["jobs"][0]["reservation"] == "maint"
    assert report.mapped["reservations"] == 1
    assert not problems(report)
    loaded = state_from_dict(state)
    assert loaded.reservations[0].hosts == (0,)


def test_reservation_v038_bare_numbers_and_string_flags() -> None:
    resv = reservation(start_time=1000, end_time=5000, flags="MAINT,DAILY")
    state, report = one(doc("data_parser/v0.0.38", nodes=[NODE], reservations=[resv]))
    assert state["reservations"][0]["end"] == 5000
    assert "reservation flags not modelled" in " ".join(report.warnings)
    assert "DAILY" in report.warnings[next(k for k in report.warnings if "flags" in k)][0]


@pytest.mark.parametrize(
    ("fields", "warning"),
    [
        ({"end_time": {"set": False, "infinite": True, "number": 0}}, "without a finite window"),
        ({"start_time": {**FLAGGED, "number": 6000}}, "without a finite window"),
        ({"node_list": "x[1-2]"}, "without an imported node"),
        ({"name": ""}, "without a name"),
    ],
)
def test_reservation_that_cannot_be_mapped_is_reported(
    fields: dict[str, Any], warning: str
) -> None:
    state, report = one(doc(nodes=[NODE], reservations=[reservation(**fields)]))
    assert "reservations" not in state
    kind = next(k for k in report.warnings if warning in k)
    assert "t.json: reservations[0]" in report.warnings[kind][0]


def test_reservation_partly_outside_the_input_and_of_cores() -> None:
    resv = reservation(node_list="n[1-2]", core_count=4)
    state, report = one(doc(nodes=[NODE], reservations=[resv, reservation()]))
    assert state["reservations"] == [{"name": "maint", "start": 1000, "end": 5000, "hosts": ["n1"]}]
    kinds = " | ".join(report.warnings)
    assert "reservation node not in the input" in kinds
    assert "reservation of cores mapped as whole hosts" in kinds
    assert "reservation listed twice" in kinds


def test_job_naming_a_reservation_not_imported_is_kept_without_it() -> None:
    state, report = one(doc(nodes=[NODE], jobs=[pending(resv_name="gone")]))
    assert "reservation" not in state["jobs"][0]
    kind = next(k for k in report.warnings if "job's reservation not in the input" in k)
    assert report.warnings[kind] == ["t.json: jobs[0]: gone"]


def test_qos_with_limits_or_preemption_is_reported_not_mapped() -> None:
    """issue 13: a QOS has no state-file counterpart; one setting a limit or preempting
    is reported with its path (an error under --strict), one setting nothing is counted."""
    _, report = load("slurmrestd-25.05-v0.0.43")
    assert report.mapped["QOS read (no state-file counterpart)"] == 2
    kind = next(k for k in report.warnings if k.startswith("QOS limits not mapped"))
    (example,) = report.warnings[kind]
    assert "slurm-qos.json: qos[1] (study): " in example
    assert "max.jobs.per.user" in example
    assert not any("(normal)" in e for examples in report.warnings.values() for e in examples)
    qos = {"name": "hi", "preempt": {"list": ["low"], "mode": ["REQUEUE"]}, "limits": {}}
    _, report = one(doc(qos=[qos]))
    assert report.warnings["QOS preemption not mapped"] == ["t.json: qos[0] (hi): preempts ['low']"]


def test_slurm_reason_is_kept_on_the_job_and_the_state_names_slurm() -> None:
    state, _ = one(doc(nodes=[NODE], jobs=[pending(), pending(job_id=8, state_reason="None")]))
    assert state["scheduler"] == "Slurm"
    assert state["jobs"][0]["reason"] == "Priority"
    assert "reason" not in state["jobs"][1]  # "None": Slurm gives no reason
    loaded = state_from_dict(state)
    assert loaded.scheduler == "Slurm"
    assert [j.reason for j in loaded.jobs] == ["Priority", None]


def test_schedule_shows_slurms_reason_beside_xces(tmp_path: Path) -> None:
    """issue 13: on an import, the JSON and the table give Slurm's reason next to
    xce's (``Slurm says``); ``--job`` too."""
    from xce.cli.main import app

    out = tmp_path / "state.yaml"
    assert run(str(DATA / "slurmrestd-24.11-v0.0.42"), "-o", str(out)).exit_code == 0
    result = CliRunner().invoke(app, ["schedule", str(out), "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["scheduler"] == "Slurm"
    theirs = {p["job"]: p["scheduler_reason"] for p in info["pending"]}
    theirs.update({d["job"]: d["scheduler_reason"] for d in info["dispatched"]})
    assert theirs["6370"] == "BeginTime"
    assert "Resources" in theirs.values()
    table = CliRunner().invoke(app, ["schedule", str(out)], env={"COLUMNS": "200"})
    assert "Slurm says" in table.stdout
    assert "BeginTime" in table.stdout
    one_job = CliRunner().invoke(app, ["schedule", str(out), "--job", "6370"])
    assert "Slurm says  BeginTime" in one_job.stdout


def test_schedule_json_without_imported_reasons_is_unchanged(tmp_path: Path) -> None:
    from xce.cli.main import app

    state, _ = one(doc(nodes=[NODE], jobs=[pending(state_reason="None")]))
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(state))
    info = json.loads(CliRunner().invoke(app, ["schedule", str(path), "--json"]).stdout)
    assert "scheduler" not in info
    assert all("scheduler_reason" not in e for e in info["dispatched"] + info["pending"])


def test_running_memory_from_the_request_when_job_resources_gives_none() -> None:
    """Where job_resources gives no memory per allocated node, a running job's --mem
    (per node) or --mem-per-cpu (times its CPUs there) is charged instead, reported."""
    row = {"cpus_used": 4, "memory_allocated": 0}
    job = running_v038(row, memory_per_node=1000)
    state, report = one(doc("data_parser/v0.0.38", nodes=[NODE], jobs=[job]))
    assert state["running"][0]["alloc"] == [{"host": "n1", "slots": 4, "resources": {"mem": 1000}}]
    kind = "running job's memory from its request (job_resources gives none)"
    assert report.counts[kind] == 1


def test_a_job_state_of_the_wrong_type_is_named() -> None:
    with pytest.raises(
        InputError, match=r"expected job_state as a string or a list of flags, got 3"
    ):
        one(doc(nodes=[NODE], jobs=[pending(job_state=3)]))
    with pytest.raises(InputError, match="no job_state in this job"):
        one(doc(nodes=[NODE], jobs=[{"job_id": 1}]))


def test_nodes_whose_running_jobs_hold_more_than_slurm_says_are_reported() -> None:
    """The 23.11 sample's nodes file and jobs file disagree (captured apart): a node
    whose jobs hold more than Slurm allocates there is reported (the jobs' are kept); one
    where Slurm allocates more gets unattributed running work."""
    state, report = load("slurmrestd-23.11-v0.0.40")
    kind = (
        "node's running jobs hold more than Slurm allocates there (inconsistent capture: "
        "the jobs' are kept)"
    )
    assert report.counts[kind] == 2
    assert any("(cn1): slots Slurm 0, jobs" in e for e in report.warnings[kind])
    extra = {r["id"]: r["alloc"] for r in state["running"] if r["id"].endswith(":unattributed")}
    assert extra["slurm:cn2:unattributed"] == [
        {"host": "cn2", "slots": 45, "resources": {"mem": 23040}}
    ]
    _, report = load("local-22.05.8-v0.0.38")  # captured at once: consistent
    assert kind not in report.counts
    assert "unattributed allocations" not in report.mapped
