"""xce import pbs: pbsnodes / qstat / qstat -Q JSON of OpenPBS and PBS Pro -> a state file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from goldens import check_golden
from xce.cli.import_cmd import import_app
from xce.cluster import state_from_dict
from xce.errors import InputError
from xce.importers import ImportReport, import_pbs, pbs, read_pbs_documents

DATA = Path(__file__).parent / "data" / "pbs"
GOLDEN = DATA / "golden"
SAMPLES = sorted(p.name for p in DATA.iterdir() if p.is_dir() and p != GOLDEN)


def load(folder: str) -> tuple[dict[str, Any], ImportReport]:
    report = ImportReport()
    files = sorted((DATA / folder).glob("*.json"))
    docs = read_pbs_documents([(str(f.relative_to(DATA)), f.read_text()) for f in files])
    return import_pbs(docs, report).state, report


def one(*bodies: dict[str, Any]) -> tuple[dict[str, Any], ImportReport]:
    """Import documents given as dicts (each gets PBS's header)."""
    report = ImportReport()
    texts = [
        (f"d{i}.json", json.dumps({"pbs_version": "23.06.06", "pbs_server": "srv", **body}))
        for i, body in enumerate(bodies)
    ]
    state = import_pbs(read_pbs_documents(texts), report).state
    state_from_dict(state, "<test>")
    return state, report


def node(ncpus: int = 8, mem: str = "16gb", state: str = "free", **extra: Any) -> dict[str, Any]:
    avail = {"ncpus": ncpus, "mem": mem, **extra.pop("avail", {})}
    return {"state": state, "resources_available": avail, **extra}


def job(state: str = "Q", **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "job_state": state,
        "Job_Owner": "alice@login1",
        "queue": "workq",
        "qtime": "Thu Jun 19 21:27:51 2025",
        "Resource_List": {"select": "1:ncpus=1", "walltime": "00:05:00"},
    }
    return {**base, **extra}


NODES = {"nodes": {"n1": node(), "n2": node()}}


def pending(**resources: Any) -> dict[str, Any]:
    """The one pending job of a select, placed on two 8-CPU nodes."""
    state, _ = one(NODES, {"Jobs": {"7.srv": job(Resource_List=resources)}})
    return dict(state["jobs"][0])


# --- every sample: imports, loads, and its state is pinned ------------------------------


@pytest.mark.parametrize("folder", SAMPLES)
def test_sample_imports_and_matches_golden(folder: str) -> None:
    state, report = load(folder)
    state_from_dict(state, folder)
    check_golden(GOLDEN / f"{folder}.yaml", yaml.safe_dump(state, sort_keys=False))
    check_golden(GOLDEN / f"{folder}.report.txt", "\n".join(report.lines()) + "\n")


def test_every_golden_has_its_sample() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.yaml")) == SAMPLES
    assert sorted(p.name for p in GOLDEN.glob("*.report.txt")) == [
        f"{s}.report.txt" for s in SAMPLES
    ]


def test_samples_are_those_of_the_shared_set_and_ours() -> None:
    shared = {"openpbs-23.06.06-firecrest", "pbspro-2022.1.7-alcf-aurora"}
    assert shared <= set(SAMPLES)
    provenance = (DATA / "PROVENANCE.md").read_text()
    assert all(folder in provenance for folder in SAMPLES)


def test_firecrest_sample() -> None:
    state, report = load("openpbs-23.06.06-firecrest")
    assert state["hosts"] == [
        {
            "name": "pbs",
            "slots": 1,
            "resources": {"mem": 1024},
            "attributes": {"arch": "linux"},
            "status": "ok",
        }
    ]
    (running,) = state["running"]
    assert running["id"] == "1006"
    assert running["alloc"] == [{"host": "pbs", "slots": 1}]
    assert report.mapped["finished jobs (not mapped)"] == 2
    # qstat-f-F-json-single.json was printed at another time: its job would over-fill pbs
    assert report.counts["running job over a node's capacity (skipped)"] == 1


def test_aurora_sample_queues_and_held_job() -> None:
    state, report = load("pbspro-2022.1.7-alcf-aurora")
    assert state["queues"]["debug"] == {"priority": 11, "max_runtime": 3600}
    assert state["queues"]["run_next"] == {"priority": 100}
    assert "prod" not in state["queues"]  # a route queue
    assert report.mapped["route queues (not mapped)"] == 5
    assert report.counts["run limit not mapped"] == 7
    (held,) = state["jobs"]  # held by its user (Hold_Types u): pends HELD, never planned
    assert (held["id"], held["hold"], held["name"]) == ("4905472", True, "nekRS_pink")
    assert held["reason"].startswith("Job held by mmin")


def test_handmade_sample_reasons_and_requirements() -> None:
    state, report = load("handmade-openpbs-shape")
    jobs = {j["id"]: j for j in state["jobs"]}
    assert jobs["103"]["resreq"] == "select[queue_gpuq] rusage[mem=4096:gpu=4] span[hosts=1]"
    assert report.reasons["102"].startswith("Not Running: Insufficient amount of resource")
    assert {r["id"] for r in state["running"]} == {"100", "101"}


# --- values ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "mib"),
    [
        ("1024mb", 1024),
        ("384000000kb", 375000),
        ("514260mb", 514260),
        ("8gb", 8192),
        ("1tb", 1048576),
        ("2GB", 2048),
        ("1048576", 1),  # bytes
        ("1048576b", 1),
        ("131072kw", 1024),  # words of 8 bytes
        (2097152, 2),
    ],
)
def test_mebibytes(text: Any, mib: float) -> None:
    assert pbs.mebibytes(text) == mib


@pytest.mark.parametrize("text", ["", "8 gigs", "1.5gb", "-1kb", None, True])
def test_mebibytes_refuses(text: Any) -> None:
    with pytest.raises(ValueError, match="not a PBS size"):
        pbs.mebibytes(text)


@pytest.mark.parametrize(
    ("text", "secs"),
    [
        ("00:05:00", 300),
        ("01:00:00", 3600),
        ("120:00:00", 432000),
        ("05:30", 330),
        ("3600", 3600),
        (7200, 7200),
        ("00:00:10.5", 10),
    ],
)
def test_seconds(text: Any, secs: int) -> None:
    assert pbs.seconds(text) == secs


@pytest.mark.parametrize("text", ["1h", "", "1:2:3:4", None])
def test_seconds_refuses(text: Any) -> None:
    with pytest.raises(ValueError, match="not a PBS duration"):
        pbs.seconds(text)


@pytest.mark.parametrize(
    ("text", "unix"),
    [
        ("Thu Jun 19 21:27:51 2025", 1750368471),
        ("Sun Jul  6 01:02:03 2025", 1751763723),  # ctime pads the day with a space
        (1750368487, 1750368487),
    ],
)
def test_timestamp(text: Any, unix: int) -> None:
    assert pbs.timestamp(text) == unix


@pytest.mark.parametrize("text", ["2025-06-19T21:27:51", "Thu Jun 31 21:27:51 2025", 1.5])
def test_timestamp_refuses(text: Any) -> None:
    with pytest.raises(ValueError, match="not a PBS time"):
        pbs.timestamp(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:ncpus=1", [(1, {"ncpus": "1"})]),
        (
            "2:ncpus=4:mem=8gb+1:ncpus=1",
            [(2, {"ncpus": "4", "mem": "8gb"}), (1, {"ncpus": "1"})],
        ),
        ("ncpus=2:ngpus=1", [(1, {"ncpus": "2", "ngpus": "1"})]),
        (40, [(40, {})]),  # qstat prints a select of default chunks as a count
        ("40", [(40, {})]),
    ],
)
def test_chunks(text: Any, expected: Any) -> None:
    assert pbs.chunks(text) == expected


@pytest.mark.parametrize("text", ["", "2:ncpus", "0:ncpus=1", "1:=4", None])
def test_chunks_refuses(text: Any) -> None:
    with pytest.raises(ValueError):
        pbs.chunks(text)


def test_exec_vnode_and_exec_host() -> None:
    assert pbs.vnodes("(n1:ncpus=4:mem=8gb)+(n2:ncpus=2+n3:ncpus=2)") == [
        ("n1", {"ncpus": "4", "mem": "8gb"}),
        ("n2", {"ncpus": "2"}),
        ("n3", {"ncpus": "2"}),
    ]
    assert pbs.exec_hosts("n1/0*4+n2/0*4+n3/1") == [("n1", 4), ("n2", 4), ("n3", 1)]
    with pytest.raises(ValueError):
        pbs.exec_hosts("n1*4")
    with pytest.raises(ValueError):
        pbs.vnodes("(:ncpus=1)")


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("free", "ok"),
        ("job-busy", "ok"),
        ("job-exclusive", "ok"),
        ("resv-exclusive", "closed"),
        ("job-sharing", "ok"),
        ("offline_by_mom", "closed"),
        ("Stale", "unavail"),
        ("offline", "closed"),
        ("maintenance", "closed"),
        ("busy", "closed"),
        ("down", "unavail"),
        ("down,offline", "unavail"),
        ("state-unknown,down", "unavail"),
        ("stale", "unavail"),
        ("unknown", "unavail"),
        ("job-busy,offline", "closed"),
    ],
)
def test_host_status(text: str, status: str) -> None:
    assert pbs.host_status(text) == (status, [])


def test_unknown_node_state_is_ok_and_reported() -> None:
    state, report = one({"nodes": {"n1": node(state="hovering")}})
    assert state["hosts"][0]["status"] == "ok"
    assert report.warnings["unknown node state (read as ok)"] == ['d0.json: nodes["n1"]: hovering']


# --- nodes ---------------------------------------------------------------------------------


def test_node_resources_tags_and_queue() -> None:
    extra = {"ngpus": 4, "arch": "linux", "ib": "True", "broken": "False", "vmem": "32gb"}
    state, report = one({"nodes": {"g1": node(64, "514260mb", queue="gpuq", avail=extra)}})
    (host,) = state["hosts"]
    assert host["slots"] == 64
    assert host["resources"] == {"mem": 514260, "gpu": 4}
    assert host["attributes"] == {
        "arch": "linux",
        "ib": True,
        "broken": False,
        "queue_gpuq": True,
    }
    assert state["resources"]["gpu"] == {"kind": "consumable", "reservation": "per_host"}
    assert state["resources"]["mem"] == {"kind": "consumable", "reservation": "per_task"}
    assert report.counts["node resource not mapped"] == 1  # vmem: a size


def test_node_states_counted() -> None:
    nodes = {"a": node(state="down"), "b": node(state="offline"), "c": node()}
    state, report = one({"nodes": nodes})
    assert [h["status"] for h in state["hosts"]] == ["unavail", "closed", "ok"]
    assert (report.mapped["hosts unavail"], report.mapped["hosts closed"]) == (1, 1)


def test_node_attribute_named_like_xce_resource_is_reported() -> None:
    state, report = one({"nodes": {"a": node(avail={"gpu": "a100", "slots": 3})}})
    assert state["hosts"][0]["attributes"] == {}
    assert report.counts["node resource named like an xce one (not mapped)"] == 2


def test_node_attribute_of_two_kinds_is_dropped() -> None:
    nodes = {"a": node(avail={"fast": "True"}), "b": node(avail={"fast": "yes"})}
    state, report = one({"nodes": nodes})
    assert [h["attributes"] for h in state["hosts"]] == [{}, {}]
    assert report.warnings["node resource of several kinds (not mapped)"] == ["fast"]


def test_node_listed_twice_keeps_the_first() -> None:
    state, report = one({"nodes": {"a": node(4)}}, {"nodes": {"a": node(8)}})
    assert [h["slots"] for h in state["hosts"]] == [4]
    assert report.counts["node listed twice (first kept)"] == 1


def test_node_without_memory_is_reported() -> None:
    state, report = one({"nodes": {"a": {"state": "free", "resources_available": {"ncpus": 2}}}})
    assert state["hosts"][0]["resources"] == {"mem": 0}
    assert report.counts["node memory unknown (no resources_available.mem)"] == 1


# --- queues --------------------------------------------------------------------------------


def test_queue_priority_and_walltimes() -> None:
    queues = {
        "workq": {
            "queue_type": "Execution",
            "Priority": 50,
            "resources_max": {"walltime": "24:00:00", "nodect": 4},
            "resources_default": {"walltime": "01:00:00"},
        },
        "plain": {"queue_type": "Execution"},
        "route": {"queue_type": "Route", "route_destinations": "workq"},
    }
    state, report = one({"Queue": queues})
    assert state["queues"] == {
        "workq": {"priority": 50, "max_runtime": 86400, "default_runtime": 3600},
        "plain": {"priority": 0},
    }
    assert report.mapped["route queues (not mapped)"] == 1


def test_queue_default_above_max_is_left_out() -> None:
    body = {"resources_max": {"walltime": "01:00:00"}, "resources_default": {"walltime": "2:00:00"}}
    state, _ = one({"Queue": {"q": body}})
    assert state["queues"]["q"] == {"priority": 0, "max_runtime": 3600}


def test_queue_walltime_of_zero_is_no_limit() -> None:
    body = {"resources_max": {"walltime": "00:00:00"}, "resources_default": {"walltime": 0}}
    state, _ = one({"Queue": {"q": body}})
    assert state["queues"]["q"] == {"priority": 0}


def test_node_number_beyond_a_state_file_is_reported() -> None:
    state, report = one({"nodes": {"a": node(avail={"serial": 10**16, "rack": 7})}})
    assert state["hosts"][0]["attributes"] == {"rack": 7}
    assert report.counts["node resource not mapped"] == 1


def test_queue_and_server_limits_are_reported() -> None:
    queue = {"max_run": "[u:PBS_GENERIC=1]", "max_run_res": {"nodect": "[o:PBS_ALL=32]"}}
    server = {"srv": {"max_run": "[u:PBS_GENERIC=10]", "server_state": "Scheduling"}}
    _, report = one({"Queue": {"q": queue}}, {"Server": server})
    examples = report.warnings["run limit not mapped"]
    assert examples[0] == 'd0.json: Queue["q"].max_run: [u:PBS_GENERIC=1]'
    assert examples[2] == 'd1.json: Server["srv"].max_run: [u:PBS_GENERIC=10]'
    assert report.mapped["server objects (only their limits read)"] == 1


def test_stopped_queue_is_reported() -> None:
    _, report = one({"Queue": {"q": {"started": "False"}}})
    assert report.counts["stopped queue (started=False; xce dispatches from it)"] == 1


# --- jobs ----------------------------------------------------------------------------------


def test_pending_job_fields() -> None:
    extra = {"project": "climate", "Priority": 10, "comment": "Not Running: Draining system"}
    state, report = one(NODES, {"Jobs": {"7.srv": job(**extra)}})
    assert state["scheduler"] == "PBS"
    assert state["jobs"] == [
        {
            "id": "7",
            "user": "alice",
            "project": "climate",
            "queue": "workq",
            "requested_time": 300,
            "submit_time": 1750368471,
            "tasks": 1,
            "resreq": "span[hosts=1]",
            "priority": 10,
            "reason": "Not Running: Draining system",
        }
    ]
    assert state["picker"] == "priority"
    assert report.reasons == {"7": "Not Running: Draining system"}


def test_user_and_project_fallbacks() -> None:
    extra = {"euser": "bob", "project": "_pbs_project_default", "Account_Name": "acct"}
    del_qtime = job(**extra)
    del del_qtime["qtime"]
    del_qtime["ctime"] = "Thu Jun 19 21:27:50 2025"
    state, _ = one(NODES, {"Jobs": {"7.other": del_qtime}})
    (entry,) = state["jobs"]
    assert (entry["id"], entry["user"], entry["project"]) == ("7.other", "bob", "acct")
    assert entry["submit_time"] == 1750368470  # ctime when there is no qtime


@pytest.mark.parametrize(
    ("resources", "tasks", "resreq"),
    [
        ({"select": "1:ncpus=4:mem=8gb"}, 4, "rusage[mem=2048] span[hosts=1]"),
        ({"select": "2:ncpus=4", "place": "scatter"}, 8, "span[ptile=4]"),
        ({"select": "2:ncpus=4", "place": "vscatter"}, 8, "span[ptile=4]"),
        ({"select": "2:ncpus=4", "place": "pack"}, 8, "span[hosts=1]"),
        ({"select": "2:ncpus=4", "place": "free"}, 8, ""),
        ({"select": "2:ncpus=4"}, 8, ""),
        (
            {"select": "2:ncpus=4:mem=8gb+1:ncpus=1", "place": "scatter"},
            9,
            "8*{rusage[mem=2048] span[ptile=4]} + 1*{span[hosts=1]}",
        ),
        ({"select": "2:ncpus=2:mpiprocs=2"}, 4, ""),
        ({"ncpus": 3, "mem": "3gb"}, 3, "rusage[mem=1024] span[hosts=1]"),
        ({"select": "2", "ncpus": 16}, 16, ""),  # default chunks: the job's ncpus shared
        ({"select": "2"}, 2, ""),
        ({"select": "1:ncpus=2:host=n2"}, 2, "select[hname=='n2'] span[hosts=1]"),
    ],
)
def test_select_statements(resources: dict[str, Any], tasks: int, resreq: str) -> None:
    entry = pending(**resources)
    assert entry["tasks"] == tasks
    assert entry.get("resreq", "") == resreq


def test_select_custom_resources_need_the_hosts_to_have_them() -> None:
    nodes = {"nodes": {"n1": node(avail={"ib": "True", "arch": "linux"})}}
    select = "1:ncpus=1:ib=True:arch=linux:broken=False:color=red"
    res = {"select": select}
    state, report = one(nodes, {"Jobs": {"1.srv": job(Resource_List=res)}})
    assert state["jobs"][0]["resreq"] == "select[ib && arch=='linux'] span[hosts=1]"
    assert report.counts["chunk resource not mapped"] == 2
    res = {"select": "1:ncpus=1:ib=false"}
    state, _ = one(nodes, {"Jobs": {"1.srv": job(Resource_List=res)}})
    assert state["jobs"][0]["resreq"] == "select[!ib] span[hosts=1]"


def test_memory_per_chunk_rounded_up_per_cpu() -> None:
    state, report = one(
        NODES, {"Jobs": {"1.srv": job(Resource_List={"select": "ncpus=3:mem=1gb"})}}
    )
    assert state["jobs"][0]["resreq"] == "rusage[mem=342] span[hosts=1]"
    assert report.counts["memory per chunk rounded up per CPU"] == 1


def test_gpus_per_chunk_declare_gpu_even_without_gpu_nodes() -> None:
    state, _ = one(NODES, {"Jobs": {"1.srv": job(Resource_List={"select": "1:ncpus=2:ngpus=1"})}})
    assert state["jobs"][0]["resreq"] == "rusage[gpu=1] span[hosts=1]"
    assert state["resources"]["gpu"] == {"kind": "consumable", "reservation": "per_host"}


@pytest.mark.parametrize("place", ["scatter:excl", "pack:group=switch", "exclhost"])
def test_place_excl_and_group_are_reported(place: str) -> None:
    state, report = one(
        NODES, {"Jobs": {"1.srv": job(Resource_List={"select": "2", "place": place})}}
    )
    assert report.counts["place not mapped"] == 1
    assert state["jobs"][0]["tasks"] == 2


def test_pending_job_keeps_to_its_queue_nodes() -> None:
    nodes = {"nodes": {"n1": node(queue="gpuq"), "n2": node()}}
    jobs = {"1.srv": job(queue="gpuq"), "2.srv": job(queue="workq")}
    state, _ = one(nodes, {"Jobs": jobs})
    assert [j.get("resreq") for j in state["jobs"]] == [
        "select[queue_gpuq] span[hosts=1]",
        "select[!queue_gpuq] span[hosts=1]",  # a queue's nodes run only its jobs
    ]


def test_running_job_from_exec_vnode() -> None:
    running = job(
        "R",
        stime="Thu Jun 19 21:28:51 2025",
        exec_host="n1/0*4+n2/0*2",
        exec_vnode="(n1:ncpus=4:mem=8gb)+(n2:ncpus=2:mem=1gb+n2:ncpus=1)",
    )
    state, report = one(NODES, {"Jobs": {"9.srv": running}})
    (entry,) = state["running"]
    assert entry["alloc"] == [
        {"host": "n1", "slots": 4, "resources": {"mem": 8192}},
        {"host": "n2", "slots": 3, "resources": {"mem": 1024}},
    ]
    assert entry["start_time"] == 1750368531
    assert report.mapped["running"] == 1


def test_running_job_from_exec_host_only() -> None:
    state, _ = one(NODES, {"Jobs": {"9.srv": job("R", exec_host="n1/0*4+n2/0*4")}})
    assert state["running"][0]["alloc"] == [{"host": "n1", "slots": 4}, {"host": "n2", "slots": 4}]


@pytest.mark.parametrize("flag", ["E", "S", "U"])
def test_exiting_and_suspended_jobs_hold_their_nodes(flag: str) -> None:
    state, _ = one(NODES, {"Jobs": {"9.srv": job(flag, exec_host="n1/0")}})
    assert state["running"][0]["alloc"] == [{"host": "n1", "slots": 1}]


def test_running_jobs_that_cannot_be_placed_are_skipped_and_reported() -> None:
    jobs = {
        "1.srv": job("R", exec_host="elsewhere/0"),
        "2.srv": job("R"),
        "3.srv": job("R", exec_vnode="(n1:ncpus=6)"),
        "4.srv": job("R", exec_vnode="(n1:ncpus=6)"),  # 12 CPUs on an 8-CPU node
    }
    state, report = one(NODES, {"Jobs": jobs})
    assert [r["id"] for r in state["running"]] == ["3"]
    assert report.counts["running job on a node not in the input (skipped)"] == 1
    assert report.counts["running job without exec_vnode or exec_host (skipped)"] == 1
    assert report.counts["running job over a node's capacity (skipped)"] == 1


@pytest.mark.parametrize("flag", ["B", "T", "Z"])
def test_other_job_states_are_reported_not_mapped(flag: str) -> None:
    state, report = one(NODES, {"Jobs": {"1.srv": job(flag)}})
    assert "jobs" not in state
    assert report.counts["job state not mapped"] == 1


def test_finished_jobs_are_counted() -> None:
    _, report = one({"Jobs": {"1.srv": job("F"), "2.srv": job("X"), "3.srv": job("M")}})
    assert report.mapped["finished jobs (not mapped)"] == 3


def test_missing_jobs_key_is_no_jobs() -> None:
    state, report = one(NODES, {"timestamp": 1750397593})
    assert "jobs" not in state
    assert report.mapped["hosts"] == 2
    assert report.mapped["pending"] == 0


def test_job_listed_twice_keeps_the_first() -> None:
    state, report = one(NODES, {"Jobs": {"1.srv": job()}}, {"Jobs": {"1.srv": job()}})
    assert len(state["jobs"]) == 1
    assert report.counts["job listed twice (first kept)"] == 1


# --- bad input ------------------------------------------------------------------------------


def bad(text: str) -> InputError:
    with pytest.raises(InputError) as info:
        import_pbs(read_pbs_documents([("b.json", text)]))
    return info.value


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        ({"nodes": {"n1": {"resources_available": {}}}}, 'nodes["n1"]', "ncpus"),
        ({"nodes": {"n1": node(ncpus="8")}}, 'nodes["n1"]', "expected a count"),  # type: ignore[arg-type]
        ({"nodes": {"n1": node(mem="lots")}}, 'nodes["n1"]', "not a PBS size"),
        ({"nodes": {"n1": 3}}, 'nodes["n1"]', "expected an object"),
        ({"nodes": []}, "nodes", "expected an object keyed by name"),
        ({"Jobs": {"1.srv": {"queue": "q"}}}, 'Jobs["1.srv"]', "job_state"),
        (
            {"Jobs": {"1.srv": job(Resource_List={"select": "1:ncpus=x"})}},
            'Jobs["1.srv"]',
            "chunk ncpus: expected a count",
        ),
        ({"Jobs": {"1.srv": job(qtime="yesterday")}}, 'Jobs["1.srv"]', "not a PBS time"),
        ({"Queue": {"q": {"Priority": "high"}}}, 'Queue["q"]', "expected a whole number"),
        ({"Jobs": {}, "Queue": {}}, "$", "both Jobs and Queue"),
        ({"meta": {"plugin": {"data_parser": "v0.0.42"}}, "nodes": []}, "meta.plugin", "Slurm"),
        ({"hello": 1}, "$", "not a PBS document"),
    ],
)
def test_bad_documents_are_located(body: dict[str, Any], path: str, message: str) -> None:
    err = bad(json.dumps(body))
    assert (err.source, err.path) == ("b.json", path)
    assert message in err.message


def test_truncated_json_has_line_and_column() -> None:
    err = bad('{"nodes": {"n1": ')
    assert (err.source, err.line, err.column) == ("b.json", 1, 18)


# --- the command -----------------------------------------------------------------------------


def run(*args: str, stdin: str | None = None) -> Any:
    return CliRunner().invoke(import_app, ["pbs", *args], input=stdin)


def test_cli_directory_to_stdout() -> None:
    result = run(str(DATA / "openpbs-23.06.06-firecrest"))
    assert result.exit_code == 0, result.output
    assert "import: 2 finished jobs (not mapped), 1 hosts, 1 queues, 1 running" in result.stderr
    assert yaml.safe_load(result.stdout)["hosts"][0]["name"] == "pbs"


def test_cli_stdin_and_output_file(tmp_path: Path) -> None:
    text = (DATA / "openpbs-23.06.06-firecrest" / "pbsnodes-a-F-json.json").read_text()
    out = tmp_path / "state.json"
    assert run("-", "-o", str(out), stdin=text).exit_code == 0
    assert json.loads(out.read_text())["hosts"][0]["slots"] == 1
    assert run("-", "-o", str(out), stdin=text).exit_code == 2  # exists: --force needed
    assert run("-", "-o", str(out), "--force", stdin=text).exit_code == 0


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"nodes": {"n1": {"state": "fr', "t.json:1:"),
        ('{"nodes": {"n1": {"state": "free"}}}', 't.json: nodes["n1"]:'),
        ('{"meta": {"plugin": {"data_parser": "v0.0.40"}}, "jobs": []}', "t.json: meta.plugin:"),
    ],
)
def test_cli_bad_input_exits_2_located(text: str, where: str, tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(text)
    result = run(str(path))
    assert result.exit_code == 2
    assert f"{tmp_path}/{where}" in result.stderr


def test_cli_slurm_sample_given_to_import_pbs() -> None:
    slurm = Path(__file__).parent / "data" / "slurm" / "local-22.05.8-v0.0.38"
    result = run(str(slurm))
    assert result.exit_code == 2
    assert "meta.plugin: a Slurm document: read it with xce import slurm" in result.stderr


def test_cli_strict_refuses_what_is_not_mapped() -> None:
    folder = str(DATA / "pbspro-2022.1.7-alcf-aurora")
    assert run(folder).exit_code == 0
    result = run(folder, "--strict")
    assert result.exit_code == 2
    assert "--strict: run limit not mapped" in result.stderr
    nodes = str(DATA / "openpbs-23.06.06-firecrest" / "pbsnodes-a-F-json.json")
    assert run(nodes, "--strict").exit_code == 0


@pytest.mark.parametrize("folder", SAMPLES)
def test_schedule_runs_on_every_import(folder: str, tmp_path: Path) -> None:
    from xce.cli.main import app

    out = tmp_path / "state.yaml"
    assert run(str(DATA / folder), "-o", str(out)).exit_code == 0
    result = CliRunner().invoke(app, ["schedule", str(out), "--json"])
    assert result.exit_code == 0, result.output
    decisions = json.loads(result.stdout)
    assert decisions["stats"]["jobs"] == len(yaml.safe_load(out.read_text()).get("jobs", []))


def test_jobs_pbs_pends_on_resources_pend_in_xce_too(tmp_path: Path) -> None:
    from xce.cli.main import app

    out = tmp_path / "state.json"
    assert run(str(DATA / "handmade-openpbs-shape"), "-o", str(out)).exit_code == 0
    result = CliRunner().invoke(app, ["schedule", str(out), "--json"])
    decisions = json.loads(result.stdout)
    assert decisions["scheduler"] == "PBS"
    pending = {p["job"]: (p["reason"], p["scheduler_reason"]) for p in decisions["pending"]}
    assert pending == {
        "102": (
            "NOT_ENOUGH_SLOTS",
            "Not Running: Insufficient amount of resource: ncpus (R: 32 A: 16 T: 64)",
        ),
        "103": ("NOT_ENOUGH_RESOURCE", "Not Running: Insufficient amount of resource: ngpus"),
        "105": ("HELD", "Job held by dave on Thu Jun 19 21:32:00 2025"),  # PBS state H
    }
    assert [d["job"] for d in decisions["dispatched"]] == ["104"]


def test_running_job_using_all_of_a_node_memory_fits() -> None:
    # sizes not a whole number of MiB are rounded down alike on the node and the job
    nodes = {"nodes": {"n1": node(mem="1048500kb")}}
    state, _ = one(nodes, {"Jobs": {"9.srv": job("R", exec_vnode="(n1:ncpus=8:mem=1048500kb)")}})
    assert state["running"][0]["alloc"] == [{"host": "n1", "slots": 8, "resources": {"mem": 1023}}]
