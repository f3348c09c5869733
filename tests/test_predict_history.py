"""Job history files (sacct --json, qstat -x -f -F json, bjobs -a -json) read as finished
jobs for runtime prediction (xce.predict.history_json).

Real captures come from tests/data/{slurm,pbs,lsf} (provenance beside them); the other
samples are written here in the shape the schedulers print (Slurm's from
src/plugins/openapi/dbv0.0.38/parse.c of 22.05 and data_parser/v0.0.40/parsers.c)."""

from __future__ import annotations

import calendar
import copy
import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xce.errors import InputError
from xce.predict.history_json import read_json_history
from xce.predict.protocol import FinishedJob

DATA = Path(__file__).parent / "data"
SLURM_42 = DATA / "slurm/slurmrestd-24.11.3-v0.0.42-firecrest/slurmdb-jobs-by-name.json"
SLURM_38_LABEL = DATA / "slurm/slurmrestd-22.05.5-v0.0.38-firecrest/slurmdb-jobs-dbv0.0.38.json"
SLURM_CTLD = DATA / "slurm/slurmrestd-24.11.3-v0.0.42-firecrest/jobs-by-name.json"
PBS_OPEN = DATA / "pbs/openpbs-23.06.06-firecrest/qstat-F-json-f-x.json"
PBS_AURORA = DATA / "pbs/pbspro-2022.1.7-alcf-aurora/qstat-x-f-F-json_jobs.json"
LSF_EUPHORIA = DATA / "lsf/batcheuphoria-10.1/convertBJobsResultLinesToResultMapTest.json"

T0 = 1_700_000_000  # 2023-11-14 22:13:20 UTC


def utc(text: str) -> int:
    """``2024-11-12 10:30:00`` (UTC) in Unix seconds."""
    return calendar.timegm(time.strptime(text, "%Y-%m-%d %H:%M:%S"))


def read(data: Any, **kwargs: Any) -> list[FinishedJob]:
    return read_json_history("history.json", json.dumps(data), **kwargs)


def by_id(jobs: list[FinishedJob]) -> dict[str, FinishedJob]:
    return {j.id: j for j in jobs}


def failure(data: Any, **kwargs: Any) -> InputError:
    text = data if isinstance(data, str) else json.dumps(data)
    with pytest.raises(InputError) as info:
        read_json_history("history.json", text, **kwargs)
    assert info.value.source == "history.json"
    return info.value


# --- Slurm samples ----------------------------------------------------------------------------


def job38(**over: Any) -> dict[str, Any]:
    """A job of 22.05's sacct --json (openapi/dbv0.0.38): bare numbers, null for
    NO_VAL/INFINITE, the state a string."""
    job: dict[str, Any] = {
        "account": "chem",
        "comment": {"administrator": None, "job": None, "system": None},
        "allocation_nodes": 1,
        "array": {
            "job_id": 0,
            "limits": {"max": {"running": {"tasks": 0}}},
            "task": None,
            "task_id": None,
        },
        "association": {
            "account": "chem",
            "cluster": "c1",
            "partition": None,
            "user": "alice",
            "id": 6,
        },
        "cluster": "c1",
        "derived_exit_code": {"status": "SUCCESS", "return_code": 0},
        "time": {
            "elapsed": 3000,
            "eligible": T0,
            "end": T0 + 3100,
            "start": T0 + 100,
            "submission": T0,
            "suspended": 0,
            "system": {"seconds": 1, "microseconds": 0},
            "limit": 60,
            "total": {"seconds": 2, "microseconds": 0},
            "user": {"seconds": 1, "microseconds": 0},
        },
        "exit_code": {"status": "SUCCESS", "return_code": 0},
        "flags": ["CLEAR_SCHEDULING", "STARTED_ON_SCHEDULE"],
        "group": "users",
        "het": {"job_id": 0, "job_offset": None},
        "job_id": 101,
        "name": "sim",
        "mcs": {"label": None},
        "nodes": "n1",
        "partition": "batch",
        "priority": 4294,
        "qos": "normal",
        "required": {"CPUs": 8, "memory": 8000},
        "kill_request_user": None,
        "reservation": {"id": 0, "name": 0},
        "state": {"current": "COMPLETED", "reason": "None"},
        "steps": [{"step": {"job_id": 101, "id": "batch", "name": "batch"}, "state": "COMPLETED"}],
        "tres": {
            "allocated": [{"type": "cpu", "name": None, "id": 1, "count": 8}],
            "requested": [{"type": "cpu", "name": None, "id": 1, "count": 8}],
        },
        "user": "alice",
        "wckey": {"wckey": None, "flags": []},
        "working_directory": "/home/alice",
    }
    return _merged(job, over)


def doc38(*jobs: dict[str, Any], release: str = "22.05.8") -> dict[str, Any]:
    major, minor, micro = (int(p) for p in release.split("."))
    return {
        "meta": {
            "plugin": {"type": "openapi/dbv0.0.38", "name": "Slurm OpenAPI DB v0.0.38"},
            "Slurm": {
                "version": {"major": major, "micro": micro, "minor": minor},
                "release": release,
            },
        },
        "errors": [],
        "jobs": list(jobs),
    }


def number(value: int, *, infinite: bool = False, set_: bool = True) -> dict[str, Any]:
    return {"set": set_, "infinite": infinite, "number": value}


def job40(**over: Any) -> dict[str, Any]:
    """A job of 23.11's sacct --json (data_parser v0.0.40): flagged numbers, the state a
    list of flags."""
    job = job38()
    job["array"] = {
        "job_id": 0,
        "limits": {"max": {"running": {"tasks": 0}}},
        "task_id": number(0, set_=False),
        "task": "",
    }
    job["het"] = {"job_id": 0, "job_offset": number(0, set_=False)}
    job["priority"] = number(4294)
    job["state"] = {"current": ["COMPLETED"], "reason": "None"}
    job["time"]["limit"] = number(60)
    job["time"]["planned"] = number(100)
    job["required"] = {
        "CPUs": 8,
        "memory_per_cpu": number(0, set_=False),
        "memory_per_node": number(8000),
    }
    return _merged(job, over)


def doc40(*jobs: dict[str, Any]) -> dict[str, Any]:
    return {
        "jobs": list(jobs),
        "meta": {
            "plugin": {
                "type": "",
                "name": "",
                "data_parser": "data_parser/v0.0.40",
                "accounting_storage": "accounting_storage/slurmdbd",
            },
            "client": {"source": "/dev/pts/0", "user": "alice", "group": "users"},
            "command": ["sacct", "--json"],
            "slurm": {
                "version": {"major": "23", "micro": "10", "minor": "11"},
                "release": "23.11.10",
                "cluster": "c1",
            },
        },
        "errors": [],
        "warnings": [],
    }


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` merged in: a dict merges into a dict, anything else (and
    ``{}``) replaces."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and value and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


# --- Slurm --------------------------------------------------------------------------------------


def test_slurm_real_v0042_capture() -> None:
    jobs = read_json_history(str(SLURM_42), SLURM_42.read_text())
    assert [j.id for j in jobs] == ["10", "11", "12", "13", "14"]
    assert jobs[-1] == FinishedJob(
        id="14",
        user="fireuser",
        start=1787141530,
        end=1787142131,
        limit=7200 * 60,
        name="wrap",
        queue="part01",
        tasks=1,
        submit=1787141488,
    )
    assert jobs[-1].runtime == 601  # time.elapsed


def test_slurm_real_capture_labelled_v0038() -> None:
    """firecrest's mock says 22.05.5/dbv0.0.38 but has the v0.0.40 shape (flagged
    limit, the state a list): read by its shape."""
    jobs = read_json_history(str(SLURM_38_LABEL), SLURM_38_LABEL.read_text())
    assert [(j.id, j.user, j.runtime, j.limit) for j in jobs] == [
        ("1", "fireuser", 100, 432000),
        ("4", "firesrv", 101, 432000),
    ]


def test_slurm_v0038_fields() -> None:
    (job,) = read(doc38(job38()))
    assert job == FinishedJob(
        id="101",
        user="alice",
        start=T0 + 100,
        end=T0 + 3100,
        limit=3600,
        name="sim",
        queue="batch",
        tasks=8,
        submit=T0,
    )


ENDED = [
    "COMPLETED",
    "FAILED",
    "TIMEOUT",
    "CANCELLED",
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "REQUEUED",
    "RESIZING",
]


@pytest.mark.parametrize("state", ENDED)
def test_slurm_every_ended_state_is_kept(state: str) -> None:
    assert len(read(doc38(job38(state={"current": state})))) == 1
    assert len(read(doc40(job40(state={"current": [state]})))) == 1


def test_slurm_jobs_that_did_not_run_and_end_are_skipped() -> None:
    jobs = [
        job38(job_id=1, state={"current": "PENDING"}, time={"start": 0, "end": 0}),
        job38(job_id=2, state={"current": "RUNNING"}, time={"end": 0}),
        job38(job_id=3, state={"current": "CANCELLED"}, time={"start": 0}),  # before start
        job38(job_id=4, state={"current": "SUSPENDED"}),
        job38(job_id=5, state={"current": "CANCELLED"}, time={"start": 0, "end": 0}),
        job38(job_id=6),
    ]
    assert [j.id for j in read(doc38(*jobs))] == ["6"]
    # sacct -T (truncate) gives a job cancelled while pending its end as start
    cancelled = job40(
        job_id=7,
        state={"current": ["CANCELLED"]},
        steps=[],
        time={"start": T0 + 50, "end": T0 + 50, "elapsed": 0},
    )
    ran_zero = job40(job_id=8, time={"start": T0 + 50, "end": T0 + 50, "elapsed": 0})
    assert [j.id for j in read(doc40(cancelled, ran_zero))] == ["8"]


def test_slurm_array_tasks_and_het_components() -> None:
    jobs = [
        job38(job_id=413, array={"job_id": 412, "task_id": 7}),
        job40(job_id=420, array={"job_id": 412, "task_id": number(8)}),
        job40(job_id=412, array={"job_id": 412, "task_id": number(0)}),  # task 0
        job40(job_id=500, het={"job_id": 500, "job_offset": number(0)}),
        job40(job_id=501, het={"job_id": 500, "job_offset": number(1)}),
        job38(job_id=502, het={"job_id": 502, "job_offset": 0}),
    ]
    assert [j.id for j in read(doc40(*jobs))] == [
        "412_7",
        "412_8",
        "412_0",
        "500+0",
        "500+1",
        "502+0",
    ]


def test_slurm_limits() -> None:
    jobs = [
        job38(job_id=1, time={"limit": None}),  # v0.0.38: NO_VAL/INFINITE print null
        job38(job_id=2, time={"limit": 4294967295}),  # an old INFINITE, bare
        job40(job_id=3, time={"limit": number(0, infinite=True)}),
        job40(job_id=4, time={"limit": number(0, set_=False)}),
        job40(job_id=5, time={"limit": number(0)}),
        job40(job_id=6, time={"limit": number(90)}),
        job38(job_id=7, time={"limit": 1440}),
    ]
    assert [j.limit for j in read(doc40(*jobs))] == [None, None, None, None, None, 5400, 86400]


def test_slurm_22_05_eligible_as_start() -> None:
    """Slurm 22.05.0-22.05.7 printed time.eligible as time.start (fixed by 5df85553a1,
    22.05.8): the start is then the end less elapsed and suspended time."""
    buggy = job38(
        time={"eligible": T0, "start": T0, "end": T0 + 3100, "elapsed": 2900, "suspended": 100}
    )
    (job,) = read(doc38(buggy, release="22.05.5"))
    assert (job.start, job.end, job.submit) == (T0 + 100, T0 + 3100, T0)
    # a job that started when it became eligible is left as it is
    prompt = job38(time={"eligible": T0, "start": T0, "end": T0 + 3000, "elapsed": 3000})
    (job,) = read(doc38(prompt))
    assert (job.start, job.end) == (T0, T0 + 3000)


def test_slurm_user_and_cpus_fallbacks() -> None:
    job = job38(
        user=None,
        required={"CPUs": 0},
        tres={"allocated": [{"type": "node", "count": 1}, {"type": "cpu", "count": 16}]},
    )
    (found,) = read(doc38(job))
    assert (found.user, found.tasks) == ("alice", 16)
    bare = job38(required=None, tres=None, name="", partition=None, time={"submission": None})
    (found,) = read(doc38(bare))
    assert (found.tasks, found.name, found.queue, found.submit) == (None, None, None, None)


def test_slurm_empty_history() -> None:
    assert read(doc40()) == []
    assert read({"jobs": []}) == []


def test_slurmctld_jobs_are_refused_with_a_pointer_to_sacct() -> None:
    with pytest.raises(InputError) as info:
        read_json_history(str(SLURM_CTLD), SLURM_CTLD.read_text())
    assert info.value.path == "jobs[0]"
    assert "sacct --json" in info.value.message


# --- PBS ----------------------------------------------------------------------------------------


def pbs_job(**over: Any) -> dict[str, Any]:
    """A finished job of OpenPBS's qstat -x -f -F json."""
    job = {
        "Job_Name": "relax",
        "Job_Owner": "carol@login1",
        "resources_used": {
            "cpupercent": 97,
            "cput": "00:59:00",
            "mem": "5652kb",
            "ncpus": 4,
            "vmem": "9904kb",
            "walltime": "01:00:05",
        },
        "job_state": "F",
        "queue": "workq",
        "server": "srv",
        "ctime": "Mon Nov  3 09:58:00 2025",
        "exec_host": "n1/0*4",
        "exec_vnode": "(n1:ncpus=4)",
        "mtime": "Mon Nov  3 11:00:10 2025",
        "qtime": "Mon Nov  3 09:58:01 2025",
        "Resource_List": {
            "ncpus": 4,
            "nodect": 1,
            "place": "pack",
            "select": "1:ncpus=4",
            "walltime": "02:00:00",
        },
        "stime": "Mon Nov  3 10:00:00 2025",
        "obittime": "Mon Nov  3 11:00:06 2025",
        "substate": 92,
        "Exit_status": 0,
        "comment": "Job run at Mon Nov 03 at 10:00 on (n1:ncpus=4) and finished",
        "etime": "Mon Nov  3 09:58:01 2025",
        "Submit_arguments": "job.sh",
        "history_timestamp": 1762167606,
    }
    return _merged(job, over)


def pbs_doc(jobs: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": 1762170000, "pbs_version": "23.06.06", "pbs_server": "srv", "Jobs": jobs}


def test_pbs_real_openpbs_capture() -> None:
    jobs = read_json_history(str(PBS_OPEN), PBS_OPEN.read_text())
    start = utc("2025-06-19 10:36:47")
    assert jobs == [
        FinishedJob(
            id="1004",
            user="fireuser",
            start=start,
            end=start + 30,
            limit=300,
            name="hello_pbs",
            queue="workq",
            tasks=1,
            submit=start,
        ),
        FinishedJob(
            id="1005",
            user="fireuser",
            start=utc("2025-06-19 21:27:51"),
            end=utc("2025-06-19 21:27:51") + 30,
            limit=300,
            name="hello_pbs",
            queue="workq",
            tasks=1,
            submit=utc("2025-06-19 21:27:51"),
        ),
    ]  # 1006 runs: left out


def test_pbs_real_pbspro_capture_uses_walltime() -> None:
    jobs = read_json_history(str(PBS_AURORA), PBS_AURORA.read_text())
    assert [j.id for j in jobs] == ["6617175", "6617182", "6631289"]  # 4905472 is held
    first = jobs[0]
    assert first.start == utc("2025-07-23 15:35:36")
    assert first.runtime == 6 * 3600 + 84  # resources_used.walltime, not obittime - stime
    assert (first.user, first.tasks, first.limit, first.queue) == ("wendyrw", 8320, 21600, "tiny")


def test_pbs_fields_and_skips() -> None:
    jobs = {
        "1.srv": pbs_job(),
        "2.srv": pbs_job(job_state="R", obittime=None),
        "3.srv": pbs_job(stime=None),  # deleted while queued
        "4[].srv": pbs_job(array="True", job_state="F"),  # the array record
        "4[1].srv": pbs_job(job_state="X", array_id="4[].srv", euser="dave"),
        "5.srv": pbs_job(resources_used=None, obittime=None),  # end: mtime
        "6.srv": pbs_job(resources_used={}, Resource_List={"walltime": 3600}),  # end: obittime
        "7.other@other": pbs_job(job_state="M"),
        "8.srv": pbs_job(Resource_List=None, Job_Name=None, queue=None, qtime=None),
    }
    found = by_id(read(pbs_doc(jobs)))
    assert list(found) == ["1", "4[1]", "5", "6", "8"]
    start = utc("2025-11-03 10:00:00")
    assert found["1"] == FinishedJob(
        id="1",
        user="carol",
        start=start,
        end=start + 3605,
        limit=7200,
        name="relax",
        queue="workq",
        tasks=4,
        submit=utc("2025-11-03 09:58:01"),
    )
    assert found["4[1]"].user == "dave"
    assert found["5"].end == utc("2025-11-03 11:00:10")
    assert (found["6"].end, found["6"].limit) == (utc("2025-11-03 11:00:06"), 3600)
    assert (found["8"].limit, found["8"].name, found["8"].queue) == (None, None, None)
    assert found["8"].submit == utc("2025-11-03 09:58:00")  # ctime


def test_pbs_unix_seconds_and_no_jobs() -> None:
    (job,) = read(pbs_doc({"9.srv": pbs_job(stime=T0, obittime=T0 + 60, resources_used={})}))
    assert (job.start, job.end) == (T0, T0 + 60)
    assert read({"timestamp": T0, "pbs_version": "23.06.06", "pbs_server": "srv"}) == []


def test_pbs_local_times_in_a_timezone() -> None:
    doc = pbs_doc(
        {
            "1.srv": pbs_job(),  # November: CET, UTC+1
            "2.srv": pbs_job(
                stime="Thu Jul 10 10:00:00 2025",
                obittime="Thu Jul 10 11:00:06 2025",
                qtime="Thu Jul 10 09:00:00 2025",
            ),  # July: CEST, UTC+2
        }
    )
    utc_jobs = read(doc)
    berlin = read(doc, timezone="Europe/Berlin")
    assert [u.start - b.start for u, b in zip(utc_jobs, berlin, strict=True)] == [3600, 7200]
    assert [b.runtime for b in berlin] == [3605, 3605]
    assert berlin[1].submit == utc("2025-07-10 07:00:00")
    (job,) = read(pbs_doc({"1.srv": pbs_job()}), timezone="America/New_York")
    assert job.start == utc("2025-11-03 15:00:00")  # EST, UTC-5


# --- LSF ----------------------------------------------------------------------------------------

NOW = utc("2024-11-12 10:30:00")


def lsf_record(**over: str) -> dict[str, str]:
    """A record of bjobs -a -json -o "jobid jobindex user stat queue job_name submit_time
    start_time finish_time run_time runtimelimit nreq_slot" (LSF 10.1)."""
    record = {
        "JOBID": "1201",
        "JOBINDEX": "0",
        "USER": "bob",
        "STAT": "DONE",
        "QUEUE": "normal",
        "JOB_NAME": "prep",
        "SUBMIT_TIME": "Nov 12 08:58",
        "START_TIME": "Nov 12 09:00",
        "FINISH_TIME": "Nov 12 10:00 L",
        "RUN_TIME": "3605 second(s)",
        "RUNTIMELIMIT": "120.0 min",
        "NREQ_SLOT": "4",
    }
    record.update(over)
    return record


def lsf_doc(*records: dict[str, Any]) -> dict[str, Any]:
    return {"COMMAND": "bjobs", "JOBS": len(records), "RECORDS": list(records)}


def test_lsf_fields() -> None:
    (job,) = read(lsf_doc(lsf_record()), now=NOW)
    start = utc("2024-11-12 09:00:00")
    assert job == FinishedJob(
        id="1201",
        user="bob",
        start=start,
        end=start + 3605,
        limit=7200,
        name="prep",
        queue="normal",
        tasks=4,
        submit=utc("2024-11-12 08:58:00"),
    )


def test_lsf_states_arrays_limits() -> None:
    records = [
        lsf_record(JOBID="1", STAT="EXIT", RUN_TIME="", FINISH_TIME="Nov 12 09:30 L"),
        lsf_record(JOBID="2", STAT="EXIT", START_TIME="-", FINISH_TIME="Nov 12 09:01"),
        lsf_record(JOBID="3", STAT="RUN", FINISH_TIME="Nov 12 11:00 E"),
        lsf_record(JOBID="4", STAT="PEND", START_TIME="", FINISH_TIME=""),
        lsf_record(JOBID="1300[4]", JOB_NAME="sweep[4]", RUNTIMELIMIT="UNLIMITED"),
        lsf_record(JOBID="1300", JOBINDEX="5", RUNTIMELIMIT="-"),
        lsf_record(JOBID="5", STAT="POST_DONE", RUNTIMELIMIT="00:10:00", NREQ_SLOT="-", SLOTS="2"),
        {"ERROR": "Job <77> is not found"},
    ]
    found = by_id(read(lsf_doc(*records), now=NOW))
    assert list(found) == ["1", "1300_4", "1300_5", "5"]
    assert found["1"].runtime == 30 * 60  # no RUN_TIME: FINISH_TIME - START_TIME
    assert (found["1300_4"].limit, found["1300_5"].limit) == (None, None)
    assert found["1300_4"].name == "sweep[4]"
    assert (found["5"].limit, found["5"].tasks) == (600, 2)


def test_lsf_dates_without_a_year() -> None:
    """A job that ran over New Year, printed in January: its start is last December."""
    record = lsf_record(
        SUBMIT_TIME="Dec 31 22:00",
        START_TIME="Dec 31 23:00",
        FINISH_TIME="Jan  1 01:00 L",
        RUN_TIME="7200 second(s)",
    )
    (job,) = read(lsf_doc(record), now=utc("2025-01-05 00:00:00"))
    assert (job.submit, job.start, job.end) == (
        utc("2024-12-31 22:00:00"),
        utc("2024-12-31 23:00:00"),
        utc("2025-01-01 01:00:00"),
    )
    full = lsf_record(
        START_TIME="2023/06/01-12:00:00", FINISH_TIME="Jun  1 13:00 2023", RUN_TIME=""
    )
    (job,) = read(lsf_doc(full), now=NOW)
    assert (job.start, job.runtime) == (utc("2023-06-01 12:00:00"), 3600)


def test_lsf_run_time_without_finish_time() -> None:
    record = lsf_record()
    del record["FINISH_TIME"]
    (job,) = read(lsf_doc(record), now=NOW)
    assert job.runtime == 3605


def test_lsf_local_times_in_a_timezone() -> None:
    (job,) = read(lsf_doc(lsf_record()), now=NOW, timezone="Asia/Tokyo")
    assert job.start == utc("2024-11-12 00:00:00")  # 09:00 JST
    assert job.runtime == 3605


def test_lsf_real_capture_without_start_times() -> None:
    """BatchEuphoria asked bjobs for no start_time: its finished jobs cannot be read."""
    with pytest.raises(InputError) as info:
        read_json_history(str(LSF_EUPHORIA), LSF_EUPHORIA.read_text(), now=NOW)
    assert (info.value.source, info.value.path) == (str(LSF_EUPHORIA), "RECORDS[0]")
    assert "START_TIME" in info.value.message


def test_lsf_empty_history() -> None:
    assert read({"COMMAND": "bjobs", "JOBS": 0, "RECORDS": []}) == []
    assert read({"COMMAND": "bjobs", "JOBS": 0}) == []


# --- bad input ----------------------------------------------------------------------------------


def slurm_bad(**over: Any) -> dict[str, Any]:
    return doc40(job40(**over))


def pbs_bad(**over: Any) -> dict[str, Any]:
    return pbs_doc({"1.srv": pbs_job(**over)})


def lsf_bad(**over: str) -> dict[str, Any]:
    return lsf_doc(lsf_record(**over))


BAD: list[tuple[Any, str, str]] = [
    # the document
    ([], "$", "expected a job history"),
    ("3", "$", "expected a job history"),
    ({"nodes": []}, "$", "got an object with keys nodes"),
    ('{"jobs": [], "jobs": []}', "jobs", "duplicate key"),
    ('{"jobs": [{"job_id": NaN}]}', "jobs[0].job_id", "not a finite number"),
    ('{"jobs": [{"job_id": 1e999}]}', "jobs[0].job_id", "not a finite number"),
    # Slurm
    ({"jobs": {}}, "jobs", "expected a list of jobs"),
    ({"jobs": [3]}, "jobs[0]", "expected a job"),
    (slurm_bad(time=None), "jobs[0].time", "expected sacct's time"),
    (slurm_bad(state=None), "jobs[0].state", "expected the job's state"),
    (slurm_bad(state={"current": 3}), "jobs[0].state.current", "expected a state"),
    (slurm_bad(state={"current": ["COMPLETED", 1]}), "jobs[0].state.current", "expected a state"),
    (slurm_bad(time={"start": "soon"}), "jobs[0].time.start", "expected a number"),
    (slurm_bad(time={"start": -5}), "jobs[0].time.start", "negative"),
    (slurm_bad(time={"end": 10**16}), "jobs[0].time.end", "too large"),
    (slurm_bad(time={"end": T0}), "jobs[0].time.end", "before the job's start"),
    (slurm_bad(time={"limit": number(10**14)}), "jobs[0].time.limit", "beyond"),
    (slurm_bad(time={"limit": "1:00:00"}), "jobs[0].time.limit", "expected a number"),
    (
        slurm_bad(time={"submission": True, "eligible": [1]}),
        "jobs[0].time.eligible",
        "expected a number",
    ),
    (slurm_bad(job_id="x"), "jobs[0].job_id", "expected a number"),
    (slurm_bad(job_id=1.5), "jobs[0].job_id", "whole number"),
    (slurm_bad(job_id=None), "jobs[0].job_id", "expected a job id"),
    (slurm_bad(array={"job_id": 4, "task_id": number(-1)}), "jobs[0].array.task_id", "negative"),
    (slurm_bad(array=[]), "jobs[0].array", "expected the job's array"),
    (slurm_bad(user=None, association=None), "jobs[0].user", "expected the job's user"),
    (slurm_bad(user=7), "jobs[0].user", "expected a string"),
    (slurm_bad(name=["a"]), "jobs[0].name", "expected a string"),
    (slurm_bad(required={"CPUs": -1}), "jobs[0].required.CPUs", "negative"),
    (
        slurm_bad(required={"CPUs": 0}, tres={"allocated": [{"type": "cpu", "count": 2.5}]}),
        "jobs[0].tres.allocated[0].count",
        "whole number",
    ),
    # PBS
    ({"pbs_version": "23", "Jobs": []}, "Jobs", "expected the jobs keyed by id"),
    (pbs_doc({"1.srv": "F"}), 'Jobs["1.srv"]', "expected a job"),
    (pbs_bad(job_state=3), 'Jobs["1.srv"].job_state', "expected a state letter"),
    (pbs_bad(stime="yesterday"), 'Jobs["1.srv"].stime', "not a PBS time"),
    (pbs_bad(stime=-1), 'Jobs["1.srv"].stime', "not a PBS time"),
    (
        pbs_bad(obittime="Mon Nov  3 09:00:00 2025"),
        'Jobs["1.srv"].obittime',
        "before the job's start",
    ),
    (pbs_bad(obittime=None, mtime=None), 'Jobs["1.srv"]', "without obittime or mtime"),
    (
        pbs_bad(resources_used={"walltime": "an hour"}),
        'Jobs["1.srv"].resources_used.walltime',
        "not a PBS duration",
    ),
    (pbs_bad(resources_used=[1]), 'Jobs["1.srv"].resources_used', "expected the resources"),
    (
        pbs_bad(Resource_List={"walltime": -60}),
        'Jobs["1.srv"].Resource_List.walltime',
        "not a PBS duration",
    ),
    (pbs_bad(Resource_List={"ncpus": -4}), 'Jobs["1.srv"].Resource_List.ncpus', "expected a count"),
    (pbs_bad(Job_Owner=None), 'Jobs["1.srv"].Job_Owner', "expected the job's owner"),
    (pbs_bad(Job_Owner="@host"), 'Jobs["1.srv"].Job_Owner', "expected the job's owner"),
    (pbs_bad(Job_Name=12), 'Jobs["1.srv"].Job_Name', "expected a string"),
    (pbs_bad(qtime="later"), 'Jobs["1.srv"].qtime', "not a PBS time"),
    # LSF
    ({"COMMAND": "bhosts", "HOSTS": 0, "RECORDS": []}, "COMMAND", "bjobs -a -json"),
    ({"RECORDS": []}, "COMMAND", "bjobs -a -json"),
    ({"COMMAND": "bjobs", "RECORDS": {}}, "RECORDS", "expected a list of records"),
    ({"COMMAND": "bjobs", "RECORDS": ["x"]}, "RECORDS[0]", "expected a bjobs record"),
    (lsf_doc({"STAT": "DONE", "stat": "DONE"}), "RECORDS[0].stat", "given twice"),
    (lsf_doc({"STAT": ["DONE"]}), "RECORDS[0].STAT", "expected a string"),
    (lsf_doc({"JOBID": "1"}), "RECORDS[0]", "no STAT"),
    (lsf_doc({"JOBID": "1", "STAT": "DONE"}), "RECORDS[0]", "no START_TIME"),
    (
        lsf_doc({"JOBID": "1", "STAT": "DONE", "START_TIME": "Nov 12 09:00"}),
        "RECORDS[0]",
        "no FINISH_TIME or RUN_TIME",
    ),
    (lsf_bad(START_TIME="yesterday"), "RECORDS[0].START_TIME", "not an LSF date"),
    (lsf_bad(FINISH_TIME="Nov 12 08:00"), "RECORDS[0].FINISH_TIME", "before the job's start"),
    (
        lsf_bad(FINISH_TIME="1969/12/31-23:00", START_TIME="1969/12/31-22:00"),
        "RECORDS[0]",
        "out of range",
    ),
    (lsf_bad(RUN_TIME="a while"), "RECORDS[0].RUN_TIME", "not a run time"),
    (lsf_bad(RUN_TIME="1e20 second(s)"), "RECORDS[0].RUN_TIME", "not a run time"),
    (lsf_bad(RUNTIMELIMIT="forever"), "RECORDS[0].RUNTIMELIMIT", "not a duration"),
    (lsf_bad(JOBID="12.3"), "RECORDS[0].JOBID", "expected a job id"),
    (lsf_bad(JOBINDEX="x"), "RECORDS[0].JOBINDEX", "expected an array index"),
    (lsf_bad(USER="-"), "RECORDS[0].USER", "expected the job's user"),
    (lsf_bad(NREQ_SLOT="-4"), "RECORDS[0].NREQ_SLOT", "expected a slot count"),
    (lsf_bad(NREQ_SLOT="2.5"), "RECORDS[0].NREQ_SLOT", "whole number"),
    (lsf_bad(SUBMIT_TIME="Nov 31 08:00"), "RECORDS[0].SUBMIT_TIME", "not an LSF date"),
]


@pytest.mark.parametrize(("data", "path", "message"), BAD)
def test_bad_input_is_located(data: Any, path: str, message: str) -> None:
    err = failure(data, now=NOW)
    assert err.path == path, str(err)
    assert message in err.message, str(err)


def test_not_json_is_located_at_its_line() -> None:
    err = failure('{"jobs": [\n  {"job_id": 1,}\n]}')
    assert (err.line, err.path) == (2, None)
    assert "not JSON" in err.message
    err = failure("JobID|State\n1|COMPLETED\n")
    assert err.line == 1


def test_bad_options() -> None:
    with pytest.raises(InputError, match="unknown time zone 'Mars/Olympus'"):
        read(doc40(), timezone="Mars/Olympus")
    with pytest.raises(InputError, match="not a time in Unix seconds"):
        read(doc40(), now=-1.0)
    with pytest.raises(InputError, match="not a time in Unix seconds"):
        read(doc40(), now=math.nan)


# --- properties ---------------------------------------------------------------------------------

KEYS = sorted(
    {k for d in (job40(), job38(), pbs_job(), lsf_record()) for k in d}
    | {
        "jobs",
        "Jobs",
        "RECORDS",
        "COMMAND",
        "pbs_server",
        "pbs_version",
        "time",
        "state",
        "current",
        "start",
        "end",
        "limit",
        "set",
        "infinite",
        "number",
        "task_id",
        "job_id",
        "walltime",
        "ncpus",
        "CPUs",
        "allocated",
        "type",
        "count",
        "eligible",
        "elapsed",
    }
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**65), max_value=2**65)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(
        [
            "F",
            "X",
            "DONE",
            "EXIT",
            "bjobs",
            "COMPLETED",
            "CANCELLED",
            "-",
            "Nov 12 09:00",
            "Mon Nov  3 10:00:00 2025",
            "01:00:00",
            "12[3].srv",
            "3605 second(s)",
            "9999/12/31-23:59",
            "Feb 29 10:00",
        ]
    )
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=5)
    ),
    max_leaves=30,
)
DOCUMENTS = [
    doc38(job38(), job38(job_id=2, array={"job_id": 1, "task_id": 4})),
    doc40(job40(), job40(job_id=3, state={"current": ["CANCELLED"]}, steps=[])),
    pbs_doc({"1.srv": pbs_job(), "2[1].srv": pbs_job(job_state="X", stime=T0, obittime=T0)}),
    lsf_doc(lsf_record(), lsf_record(JOBID="7[2]", FINISH_TIME="", RUN_TIME="60 second(s)")),
]


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*at, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += _paths(item, (*at, i))
    return out


def _replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    out = copy.deepcopy(doc)
    node = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


def _reads_or_refuses(text: str, **kwargs: Any) -> None:
    """The text reads as good jobs, or is refused with an InputError naming the file."""
    try:
        jobs = read_json_history("random.json", text, now=NOW, **kwargs)
    except InputError as err:
        error = err
    else:
        for job in jobs:
            assert isinstance(job, FinishedJob)
            assert 0 <= job.start <= job.end <= 1e15
            assert job.limit is None or 0 < job.limit <= 1e15
            assert job.id
            assert job.user
        return
    assert error.source == "random.json"
    assert error.message


@given(JSON)
def test_any_json_value_reads_or_raises_input_error(value: Any) -> None:
    _reads_or_refuses(json.dumps(value))


@given(
    st.sampled_from(DOCUMENTS).flatmap(
        lambda doc: st.tuples(st.just(doc), st.sampled_from(_paths(doc)), JSON)
    ),
    st.sampled_from([None, "Europe/Berlin", "America/New_York"]),
)
def test_any_document_with_a_part_replaced_reads_or_raises_input_error(
    case: tuple[Any, tuple[Any, ...], Any], timezone: str | None
) -> None:
    doc, path, value = case
    _reads_or_refuses(json.dumps(_replaced(doc, path, value)), timezone=timezone)


@given(st.text(max_size=60))
def test_any_text_reads_or_raises_input_error(text: str) -> None:
    _reads_or_refuses(text)


def test_the_samples_read() -> None:
    """The documents the properties mutate are good ones."""
    assert [len(read(doc, now=NOW)) for doc in DOCUMENTS] == [2, 2, 2, 2]
