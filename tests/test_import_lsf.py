"""xce import lsf: bjobs / bhosts / lshosts / bqueues / lsload -json of LSF 10.1 -> a state.

Every sample imports, loads and is pinned (golden/); each mapping rule and each bad
input has its own case (docs/import-lsf.md)."""

from __future__ import annotations

import calendar
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from goldens import check_golden
from xce.cluster import state_from_dict
from xce.errors import InputError
from xce.importers.lsf import import_lsf, read_lsf_documents
from xce.importers.report import ImportReport

DATA = Path(__file__).parent / "data" / "lsf"
GOLDEN = DATA / "golden"
SAMPLES = sorted(p.name for p in DATA.iterdir() if p.is_dir() and p != GOLDEN)
NOW = calendar.timegm((2024, 11, 12, 10, 30, 0))  # the reference clock of every case here


def load(folder: str) -> tuple[dict[str, Any], ImportReport]:
    report = ImportReport()
    files = sorted((DATA / folder).glob("*.json"))
    docs = read_lsf_documents([(str(f.relative_to(DATA)), f.read_text()) for f in files])
    return import_lsf(docs, report, now=NOW).state, report


def doc(command: str, *records: dict[str, Any]) -> dict[str, Any]:
    key = {"bjobs": "JOBS", "bqueues": "QUEUES"}.get(command, "HOSTS")
    return {"COMMAND": command, key: len(records), "RECORDS": list(records)}


def one(*bodies: dict[str, Any]) -> tuple[dict[str, Any], ImportReport]:
    """Import documents given as dicts; the state must load."""
    report = ImportReport()
    texts = [(f"d{i}.json", json.dumps(body)) for i, body in enumerate(bodies)]
    state = import_lsf(read_lsf_documents(texts), report, now=NOW).state
    state_from_dict(state, "<test>")
    return state, report


def bhost(name: str = "h1", status: str = "ok", max_: str = "8", run: str = "0") -> dict[str, str]:
    return {
        "HOST_NAME": name,
        "STATUS": status,
        "MAX": max_,
        "NJOBS": run,
        "RUN": run,
        "SSUSP": "0",
        "USUSP": "0",
        "RSV": "0",
    }


def lshost(name: str = "h1", **extra: str) -> dict[str, str]:
    base = {
        "HOST_NAME": name,
        "type": "X86_64",
        "model": "XeonGold",
        "cpuf": "60.0",
        "ncpus": "8",
        "maxmem": "32G",
        "maxswp": "4G",
        "server": "Yes",
        "RESOURCES": "()",
    }
    return {**base, **extra}


def job(job_id: str = "7", stat: str = "PEND", **extra: str) -> dict[str, str]:
    base = {
        "JOBID": job_id,
        "STAT": stat,
        "USER": "alice",
        "QUEUE": "normal",
        "PROJ_NAME": "default",
        "JOB_NAME": "j",
        "SUBMIT_TIME": "Nov 12 10:00",
        "NREQ_SLOT": "1",
        "COMBINED_RESREQ": "select[type == local] order[r15s:pg] ",
    }
    return {**base, **extra}


HOSTS = (doc("bhosts", bhost("h1"), bhost("h2")), doc("lshosts", lshost("h1"), lshost("h2")))


def pending(**fields: str) -> dict[str, Any]:
    state, _ = one(*HOSTS, doc("bjobs", job(**fields)))
    return dict(state["jobs"][0])


# --- every sample: imports, loads, and its state is pinned ------------------------------


@pytest.mark.parametrize("folder", SAMPLES)
def test_sample_imports_loads_and_matches_its_golden(folder: str) -> None:
    state, report = load(folder)
    state_from_dict(state, folder)
    check_golden(GOLDEN / f"{folder}.yaml", yaml.safe_dump(state, sort_keys=False))
    check_golden(GOLDEN / f"{folder}.report.txt", "\n".join(report.lines()) + "\n")


def test_every_sample_has_provenance() -> None:
    text = (DATA / "PROVENANCE.md").read_text()
    for folder in SAMPLES:
        assert f"`{folder}/`" in text, folder


# --- hosts --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "want"),
    [
        ("ok", "ok"),
        ("closed_Adm", "closed"),
        ("closed_Busy", "closed"),
        ("closed_Excl", "closed"),
        ("closed_cu_excl", "closed"),
        ("closed_Full", "closed"),
        ("closed_LIM", "closed"),
        ("closed_Lock", "closed"),
        ("closed_Wind", "closed"),
        ("closed_RC", "closed"),
        ("closed_EGO", "closed"),
        ("unavail", "unavail"),
        ("unreach", "unavail"),
        ("unlicensed", "unavail"),
    ],
)
def test_bhosts_status(status: str, want: str) -> None:
    state, report = one(doc("bhosts", bhost(status=status)))
    assert state["hosts"][0]["status"] == want
    assert not report.warnings.get("unknown host status (read as ok)")


@pytest.mark.parametrize(
    ("status", "want", "warning"),
    [
        ("closed_Future", "closed", "unknown host status (read as closed)"),
        ("weird", "ok", "unknown host status (read as ok)"),
    ],
)
def test_an_unknown_status_is_warned(status: str, want: str, warning: str) -> None:
    state, report = one(doc("bhosts", bhost(status=status)))
    assert state["hosts"][0]["status"] == want
    assert report.warnings[warning] == [f"d0.json: RECORDS[0] (h1): {status}"]


def test_host_merges_bhosts_lshosts_and_lsload() -> None:
    load = {
        "HOST_NAME": "h1",
        "status": "ok",
        "r15s": "0.5",
        "ut": "12%",
        "pg": "2.0",
        "it": "30",
        "mem": "20G",
    }
    state, report = one(
        doc("bhosts", bhost(max_="12")),
        doc("lshosts", lshost(RESOURCES="(fs gpu vendor=intel nrack=4)", maxtmp="100G")),
        doc("lsload", load),
    )
    assert state["hosts"][0] == {
        "name": "h1",
        "slots": 12,  # bhosts MAX, not ncpus
        "resources": {"mem": 32768, "swp": 4096, "tmp": 102400},
        "attributes": {
            "type": "X86_64",
            "model": "XeonGold",
            "cpuf": 60,
            "ncpus": 8,
            "fs": True,
            "gpu": True,
            "vendor": "intel",
            "nrack": 4,
            "r15s": 0.5,
            "ut": 0.12,
            "pg": 2,
            "it": 30,
        },
        "status": "ok",
    }
    assert report.mapped["hosts with load indices"] == 1
    assert state["resources"]["mem"] == {"kind": "consumable", "reservation": "per_host"}


def test_slots_from_ncpus_without_bhosts() -> None:
    state, report = one(doc("lshosts", lshost(ncpus="24"), lshost("c1", server="No")))
    assert [(h["name"], h["slots"]) for h in state["hosts"]] == [("h1", 24)]
    assert report.mapped["client hosts (not mapped)"] == 1
    assert "host's slots from lshosts ncpus (no bhosts record)" in report.warnings


def test_lshosts_host_without_bhosts_record_is_left_out() -> None:
    state, report = one(doc("bhosts", bhost()), doc("lshosts", lshost(), lshost("login")))
    assert [h["name"] for h in state["hosts"]] == ["h1"]
    assert "lshosts host not in bhosts (not a batch host: left out)" in report.warnings


def test_host_memory_unknown_is_reported() -> None:
    state, report = one(doc("bhosts", bhost()))
    assert "resources" not in state["hosts"][0]
    assert "host memory unknown (no lshosts maxmem): jobs asking for mem cannot run there" in (
        report.warnings
    )


# --- queues ---------------------------------------------------------------------------------


def test_queue_priority_runlimits_and_status() -> None:
    queues = doc(
        "bqueues",
        {
            "QUEUE_NAME": "short",
            "PRIORITY": "40",
            "STATUS": "Open:Active",
            "RUNLIMIT": "60.0 min",
            "DEFAULT_RUNLIMIT": "10.0 min",
        },
        {"QUEUE_NAME": "night", "PRIORITY": "20", "STATUS": "Open:Inact_Win", "JL_U": "8"},
        {"QUEUE_NAME": "old", "PRIORITY": "1", "STATUS": "Closed:Active"},
    )
    state, report = one(queues)
    assert state["queues"] == {
        "short": {"priority": 40, "max_runtime": 3600, "default_runtime": 600},
        "night": {"priority": 20},
        "old": {"priority": 1},
    }
    assert "inactive queue (LSF dispatches nothing from it; xce does)" in report.warnings
    assert report.warnings["queue slot limit not mapped"] == ["d0.json: RECORDS[1] (night): JL_U=8"]
    assert report.mapped["closed queues (no new submissions; their jobs are scheduled)"] == 1


# --- running jobs and what bhosts says is taken ---------------------------------------------------


def test_running_job_on_its_exec_hosts() -> None:
    run = job(
        "5",
        "RUN",
        EXEC_HOST="4*h1:2*h2",
        START_TIME="Nov 12 10:02",
        RUNTIMELIMIT="600.0 min",
        COMBINED_RESREQ="rusage[mem=2048.00] span[ptile=4]",
    )
    state, _ = one(
        doc("bhosts", bhost("h1", run="4"), bhost("h2", run="2")), HOSTS[1], doc("bjobs", run)
    )
    (entry,) = state["running"]
    assert entry["start_time"] == calendar.timegm((2024, 11, 12, 10, 2, 0))
    assert entry["requested_time"] == 36000
    assert entry["alloc"] == [
        {"host": "h1", "slots": 4, "resources": {"mem": 2048}},  # LSF reserves per host
        {"host": "h2", "slots": 2, "resources": {"mem": 2048}},
    ]


@pytest.mark.parametrize("stat", ["RUN", "USUSP", "SSUSP"])
def test_suspended_jobs_keep_their_slots(stat: str) -> None:
    state, _ = one(doc("bhosts", bhost(run="1")), doc("bjobs", job("5", stat, EXEC_HOST="h1")))
    assert [r["id"] for r in state["running"]] == ["5"]


def test_unattributed_slots_become_running_work() -> None:
    queues = doc("bqueues", {"QUEUE_NAME": "normal", "PRIORITY": "30", "RUNLIMIT": "60.0 min"})
    state, report = one(
        doc("bhosts", bhost("h1", run="6"), bhost("h2", run="0")),
        queues,
        doc("bjobs", job("5", "RUN", EXEC_HOST="2*h1")),
    )
    assert state["running"][1] == {
        "id": "lsf:h1:unattributed",
        "user": "unknown",
        "queue": "normal",
        "start_time": NOW,
        "alloc": [{"host": "h1", "slots": 4}],
        "requested_time": 3600,
    }
    assert report.mapped["unattributed allocations (bhosts slots no captured job holds)"] == 1


def test_jobs_holding_more_than_bhosts_says_are_kept_and_reported() -> None:
    state, report = one(
        doc("bhosts", bhost(run="1")), doc("bjobs", job("5", "RUN", EXEC_HOST="2*h1"))
    )
    assert [r["id"] for r in state["running"]] == ["5"]
    assert (
        "host's running jobs hold more slots than bhosts says (the jobs' kept)" in report.warnings
    )


@pytest.mark.parametrize(
    ("exec_host", "warning"),
    [
        ("", "running job without EXEC_HOST (skipped)"),
        ("elsewhere", "running job on a host not in the input (skipped)"),
        ("9*h1", "running job over a host's capacity (skipped)"),
    ],
)
def test_running_job_that_cannot_be_placed_is_skipped(exec_host: str, warning: str) -> None:
    state, report = one(doc("bhosts", bhost()), doc("bjobs", job("5", "RUN", EXEC_HOST=exec_host)))
    assert "running" not in state
    assert warning in report.warnings


def test_running_array_element() -> None:
    state, _ = one(
        doc("bhosts", bhost(run="1")),
        doc("bjobs", job("412", "RUN", JOB_NAME="scan[7]", JOBINDEX="7", EXEC_HOST="h1")),
    )
    assert state["running"][0]["id"] == "412_7"
    assert state["running"][0]["array_job"] == "412"
    assert state["running"][0]["name"] == "scan"


# --- pending jobs -------------------------------------------------------------------------------


def test_pending_job_fields() -> None:
    entry = pending(
        RUNTIMELIMIT="30.0 min",
        JOB_PRIORITY="80",
        PEND_REASON="Not enough job slot(s);",
        ESTIMATED_START_TIME="Nov 12 20:02",
        PROJ_NAME="chem",
    )
    assert entry == {
        "id": "7",
        "user": "alice",
        "queue": "normal",
        "project": "chem",
        "name": "j",
        "requested_time": 1800,
        "tasks": 1,
        "resreq": "select[type == local] order[r15s:pg]",
        "submit_time": calendar.timegm((2024, 11, 12, 10, 0, 0)),
        "scheduler_start": calendar.timegm((2024, 11, 12, 20, 2, 0)),
        "priority": 80,
        "reason": "Not enough job slot(s);",
    }


def test_a_priority_makes_the_picker_priority() -> None:
    state, _ = one(*HOSTS, doc("bjobs", job(JOB_PRIORITY="50")))
    assert state["picker"] == "priority"
    state, _ = one(*HOSTS, doc("bjobs", job()))
    assert "picker" not in state


@pytest.mark.parametrize(
    ("fields", "want"),
    [
        ({"NREQ_SLOT": "4"}, {"tasks": 4}),
        ({"MIN_REQ_PROC": "2", "MAX_REQ_PROC": "2", "NREQ_SLOT": "2"}, {"tasks": 2}),
        (
            {"MIN_REQ_PROC": "4", "MAX_REQ_PROC": "8", "NREQ_SLOT": "8"},
            {"min_tasks": 4, "max_tasks": 8},
        ),
        ({"NREQ_SLOT": "", "SLOTS": "3"}, {"tasks": 3}),
        ({"NREQ_SLOT": ""}, {"tasks": 1}),
    ],
)
def test_task_counts(fields: dict[str, str], want: dict[str, int]) -> None:
    entry = pending(**fields)
    assert {k: entry[k] for k in ("tasks", "min_tasks", "max_tasks") if k in entry} == want


@pytest.mark.parametrize(
    ("resreq", "kept"),
    [
        ("select[type == local] order[r15s:pg] rusage[mem=512.00]", True),
        ("select[type==any && mem>1000] span[hosts=1]", True),
        ("rusage[tmp=1048576.00:swp=1024.00:mem=512.00]", True),  # tmp/swp declared by LSF
        ("select[nosuch > 1]", False),
        ("select[", False),
    ],
)
def test_requirement_kept_when_xce_reads_it(resreq: str, kept: bool) -> None:
    state, report = one(*HOSTS, doc("bjobs", job(COMBINED_RESREQ=resreq)))
    assert ("resreq" in state["jobs"][0]) is kept
    assert ("requirement not valid in xce (job kept without it)" in report.warnings) is not kept


def test_requirement_falls_back_to_effective_then_user() -> None:
    assert (
        pending(COMBINED_RESREQ="", EFFECTIVE_RESREQ="span[hosts=1]")["resreq"] == "span[hosts=1]"
    )
    assert pending(COMBINED_RESREQ="", RESREQ="order[-slots]")["resreq"] == "order[-slots]"


def test_psusp_is_held() -> None:
    assert pending(STAT="PSUSP")["hold"] is True


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("done(12)", "afterok:12"),
        ("done(12) && ended(13)", "afterok:12,afterany:13"),
        ("done(12) || exit(13)", "afterok:12?afternotok:13"),
        ("started(12[3])", "after:12_3"),
    ],
)
def test_dependency_in_the_contracts_syntax(text: str, want: str) -> None:
    assert pending(DEPENDENCY=text)["dependency"] == want


@pytest.mark.parametrize(
    "text",
    [
        "!done(12)",
        "done(12) && (ended(13) || exit(14))",
        "done(myjob)",
        "exit(12, >1)",
        "post_done(12)",
        "numdone(12, 3)",
        "done(12) && ended(13) || exit(14)",
    ],
)
def test_dependency_without_an_equivalent_is_reported(text: str) -> None:
    state, report = one(*HOSTS, doc("bjobs", job(DEPENDENCY=text)))
    assert "dependency" not in state["jobs"][0]
    assert "dependency not mapped (job kept without it)" in report.warnings


@pytest.mark.parametrize(
    ("dependency", "finished", "held"),
    [
        ("done(5)", "EXIT", True),  # done() of a job that failed: never
        ("done(5)", "DONE", False),  # met: the finished job is not in the state
        ("exit(5)", "DONE", True),
        ("done(5) || done(6)", "EXIT", False),  # 6 may still finish well
    ],
)
def test_a_dependency_that_can_never_be_met_holds(
    dependency: str, finished: str, held: bool
) -> None:
    state, _ = one(*HOSTS, doc("bjobs", job("5", finished), job(DEPENDENCY=dependency)))
    assert state["jobs"][0].get("hold", False) is held


def test_begin_time_only_in_the_future() -> None:
    assert pending(SPECIFIED_START_TIME="Nov 12 22:00")["begin_time"] == calendar.timegm(
        (2024, 11, 12, 22, 0, 0)
    )
    assert "begin_time" not in pending(SPECIFIED_START_TIME="Nov 12 09:00")


def test_pending_array_elements_become_one_record() -> None:
    elements = [job("104", JOB_NAME=f"scan[{i}]", JOBINDEX=str(i)) for i in (1, 2, 3, 7)]
    state, report = one(*HOSTS, doc("bjobs", *elements))
    (entry,) = state["jobs"]
    assert (entry["id"], entry["array"], entry["name"]) == ("104", "1-3,7", "scan")
    assert report.mapped["pending arrays"] == 1


def test_array_summary_keeps_its_index_list_and_limit() -> None:
    entry = pending(JOB_NAME="sweep[1-99999:2,100000]%50")
    assert entry["array"] == "1-99999:2,100000%50"


# --- dates and values ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "past", "want"),
    [
        ("Nov 12 10:02", True, (2024, 11, 12, 10, 2, 0)),
        ("Dec 28 19:56 L", True, (2023, 12, 28, 19, 56, 0)),  # a past time: last December
        ("Dec 28 19:56", False, (2024, 12, 28, 19, 56, 0)),  # an estimate: the nearest
        ("Jan  3 08:00", False, (2025, 1, 3, 8, 0, 0)),
        ("Nov 13 09:00", True, (2024, 11, 13, 9, 0, 0)),  # within a day ahead: clock skew
        ("Nov 12 10:02:33 2021", True, (2021, 11, 12, 10, 2, 33)),
        ("2024/11/12-10:02:33", False, (2024, 11, 12, 10, 2, 33)),
        ("Feb 29 12:00", True, (2024, 2, 29, 12, 0, 0)),
    ],
)
def test_dates(text: str, past: bool, want: tuple[int, ...]) -> None:
    from xce.importers.lsf_values import timestamp

    assert timestamp(text, NOW, past=past) == calendar.timegm((*want, 0, 0, 0))


def test_dates_in_a_zone() -> None:
    from zoneinfo import ZoneInfo

    state, _ = one(*HOSTS, doc("bjobs", job()))
    report = ImportReport()
    texts = [("b.json", json.dumps(doc("bjobs", job())))]
    berlin = import_lsf(read_lsf_documents(texts), report, now=NOW, zone=ZoneInfo("Europe/Berlin"))
    assert state["jobs"][0]["submit_time"] - berlin.state["jobs"][0]["submit_time"] == 3600


@pytest.mark.parametrize(
    ("function", "text", "want"),
    [
        ("duration", "360.0 min", 21600),
        ("duration", "60", 3600),
        ("duration", "10:00", 36000),
        ("duration", "00:10:00", 600),
        ("duration", "60.0 min of hostA", 3600),
        ("duration", "-", None),
        ("mebibytes", "5.2 Gbytes", 5.2 * 1024),
        ("mebibytes", "522 MBytes", 522),
        ("mebibytes", "900K", 900 / 1024),
        ("mebibytes", "16384", 16384),
        ("percent", "12%", 0.12),
        ("percent", "0.5", 0.5),
    ],
)
def test_values(function: str, text: str, want: float | None) -> None:
    from xce.importers import lsf_values

    assert getattr(lsf_values, function)(text) == pytest.approx(want)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("4*hostA:2*hostB", [("hostA", 4), ("hostB", 2)]),
        ("hostA:hostA:hostB", [("hostA", 2), ("hostB", 1)]),
        ("hostA", [("hostA", 1)]),
        ("", []),
    ],
)
def test_exec_hosts(text: str, want: list[tuple[str, int]]) -> None:
    from xce.importers.lsf_values import exec_hosts

    assert exec_hosts(text) == want


# --- bad input: exit 2 with the file and the JSON path -------------------------------------------


def run(text: str) -> None:
    import_lsf(read_lsf_documents([("bad.json", text)]), ImportReport(), now=NOW)


def bad(text: str) -> InputError:
    with pytest.raises(InputError) as err:
        run(text)
    assert err.value.source == "bad.json"
    return err.value


def records(*items: Any, command: str = "bhosts") -> str:
    return json.dumps({"COMMAND": command, "HOSTS": len(items), "RECORDS": list(items)})


@pytest.mark.parametrize(
    ("text", "path", "words"),
    [
        ('{"COMMAND": "bhosts", "RECORDS": [', None, "not JSON"),
        ("[" * 5000 + "]" * 5000, None, "nested deeper"),
        ('{"COMMAND": "bhosts", "HOSTS": NaN, "RECORDS": []}', "HOSTS", "not a finite number"),
        ('{"COMMAND": "bhosts", "COMMAND": "bjobs", "RECORDS": []}', "COMMAND", "duplicate key"),
        ("[]", "$", "expected a JSON object"),
        ('{"RECORDS": []}', "COMMAND", "not an LSF -json document"),
        ('{"COMMAND": "bacct", "RECORDS": []}', "COMMAND", "is not read"),
        ('{"meta": {"plugin": {}}, "nodes": []}', "meta", "xce import slurm"),
        ('{"pbs_version": "23", "Jobs": {}}', "pbs_version", "xce import pbs"),
        ('{"COMMAND": "bhosts", "RECORDS": {}}', "RECORDS", "expected a list"),
        ('{"COMMAND": "bhosts", "HOSTS": [1], "RECORDS": []}', "HOSTS", "expected a count"),
        (records("h1"), "RECORDS[0]", "expected an object"),
        (records({"HOST_NAME": ["h1"]}), "RECORDS[0].HOST_NAME", "expected a string"),
        (records({"HOST_NAME": "h1", "MAX": True}), "RECORDS[0].MAX", "expected a string"),
        (records({"HOST_NAME": "h1", "type": "a", "TYPE": "b"}), "RECORDS[0].TYPE", "twice"),
        (records({"HOST_NAME": ""}), "RECORDS[0].HOST_NAME", "an empty HOST_NAME"),
        (records({"HOST_NAME": "  "}), "RECORDS[0].HOST_NAME", "an empty HOST_NAME"),
        (records({"STATUS": "ok"}), "RECORDS[0]", "without HOST_NAME"),
        (records({"HOST_NAME": "h1", "MAX": "nan"}), "RECORDS[0]", "not a number"),
        (records({"HOST_NAME": "h1", "MAX": "1e999"}), "RECORDS[0]", "not a finite number"),
        (records({"HOST_NAME": "h1", "MAX": "-5"}), "RECORDS[0]", "MAX: expected a count"),
        (records({"HOST_NAME": "h1", "MAX": "2.5"}), "RECORDS[0]", "MAX: expected a count"),
        (records({"HOST_NAME": "h1", "MAX": "-"}), "RECORDS[0]", "no job slot count"),
        (
            records({"HOST_NAME": "h1", "maxmem": "lots"}, command="lshosts"),
            "RECORDS[0]",
            "not a size",
        ),
        (records({"HOST_NAME": "h1", "ut": "x%"}, command="lsload"), "RECORDS[0]", "not a number"),
        (records({"QUEUE_NAME": ""}, command="bqueues"), "RECORDS[0].QUEUE_NAME", "empty"),
        (
            records({"QUEUE_NAME": "q", "RUNLIMIT": "forever"}, command="bqueues"),
            "RECORDS[0]",
            "not a duration",
        ),
        (records({"JOBID": "", "STAT": "PEND"}, command="bjobs"), "RECORDS[0]", "JOBID"),
        (records({"STAT": "PEND"}, command="bjobs"), "RECORDS[0]", "JOBID"),
        (
            records({"JOBID": "7", "STAT": "PEND", "SUBMIT_TIME": "yesterday"}, command="bjobs"),
            "RECORDS[0]",
            "not an LSF date",
        ),
        (
            records({"JOBID": "7", "STAT": "RUN", "EXEC_HOST": "0*h1"}, command="bjobs"),
            "RECORDS[0]",
            "cannot read EXEC_HOST",
        ),
        (
            records({"JOBID": "7", "STAT": "PEND", "JOB_NAME": "a[9-1]"}, command="bjobs"),
            "RECORDS[0]",
            "runs backwards",
        ),
        # slot counts the loader refuses were an internal error (the state failed it),
        # and a fraction was cut to a whole number without a word
        *(
            (
                records({"JOBID": "7", "STAT": "PEND", field: value}, command="bjobs"),
                "RECORDS[0]",
                f"{field}: expected a whole number of slots, 0 to ",
            )
            for field, value in [
                ("NREQ_SLOT", "-2"),
                ("NREQ_SLOT", "2.5"),
                ("SLOTS", "99999999999999999999"),
                ("MIN_REQ_PROC", "-1"),
            ]
        ),
        (
            records(
                {"JOBID": "7", "STAT": "PEND", "MIN_REQ_PROC": "8", "MAX_REQ_PROC": "2"},
                command="bjobs",
            ),
            "RECORDS[0]",
            "MIN_REQ_PROC 8 is more than MAX_REQ_PROC 2",
        ),
    ],
)
def test_bad_input_is_located(text: str, path: str | None, words: str) -> None:
    err = bad(text)
    assert words in str(err)
    if path is not None:
        assert err.path == path


# --- the command ----------------------------------------------------------------------------


def test_xce_import_lsf_writes_a_state_that_schedules(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from xce.cli.main import app

    out = tmp_path / "state.yaml"
    folder = str(DATA / "handmade-lsf-10.1-shape")
    args = ["import", "lsf", folder, "--now", str(NOW), "--timezone", "Europe/Berlin", "-o"]
    result = CliRunner().invoke(app, [*args, str(out)])
    assert result.exit_code == 0, result.output
    state = yaml.safe_load(out.read_text())
    assert (state["scheduler"], state["timezone"], state["now"]) == ("LSF", "Europe/Berlin", NOW)
    scheduled = CliRunner().invoke(app, ["schedule", str(out), "--json"])
    assert scheduled.exit_code == 0, scheduled.output
    reasons = {p["job"]: p["reason"] for p in json.loads(scheduled.stdout)["pending"]}
    assert (reasons["102"], reasons["103"], reasons["107"]) == ("DEPENDENCY", "HELD", "BEGIN_TIME")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--timezone", "Mars/Olympus"], "unknown time zone"),
        (["--now", "-1"], "--now"),
        (["--strict"], "--strict"),
    ],
)
def test_xce_import_lsf_refuses_bad_options(args: list[str], words: str) -> None:
    from typer.testing import CliRunner

    from xce.cli.main import app

    folder = str(DATA / "handmade-lsf-10.1-shape")
    result = CliRunner().invoke(app, ["import", "lsf", folder, "--now", str(NOW), *args])
    assert result.exit_code == 2
    assert words in result.output


def test_an_array_at_its_limit_takes_the_running_elements_as_its_limit() -> None:
    """bjobs prints no ``%N`` on pending elements but says when the array is at its slot
    limit: the record's limit is then as many elements as run (LSF holds the rest)."""
    state, report = load("handmade-lsf-10.1-shape")
    (record,) = [j for j in state["jobs"] if j["id"] == "104"]
    assert record["array"].endswith("%1")
    assert any("array limit taken from the running elements" in k for k in report.warnings)


def test_a_failed_item_of_an_or_dependency_is_left_out() -> None:
    """``done(99) || done(101)`` where 99 exited: 99 can never be done, so the job waits
    for 101 alone (99, not in the state, was read as ended: the job ran at once)."""
    jobs = doc(
        "bjobs",
        job("99", "EXIT"),
        job("101", "PEND"),
        job("108", "PEND", DEPENDENCY="done(99) || done(101)"),
    )
    state, _ = one(*HOSTS, jobs)
    (got,) = [j for j in state["jobs"] if j["id"] == "108"]
    assert got["dependency"] == "afterok:101"
    assert "hold" not in got
