"""xce import slurm reads ``scontrol show partition`` text (issue 25): Slurm 22.05's
``sinfo --json`` has no partitions and its scontrol no ``--json``, so the partitions'
tiers, whose order Slurm serves jobs in, come from the text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xce.cli.main import app
from xce.errors import InputError
from xce.importers import ImportReport, import_slurm, read_slurm_documents
from xce.importers.slurm_text import is_partition_text, minutes, read_partitions

SITE = Path(__file__).parent / "data" / "slurm" / "local-22.05.8-site-v0.0.38" / "capture-1"

TEXT = """PartitionName=batch
   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL
   AllocNodes=ALL Default=YES QoS=N/A
   DefaultTime=00:30:00 DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO
   MaxNodes=UNLIMITED MaxTime=01:00:00 MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED
   Nodes=n[1-4]
   PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO
   OverTimeLimit=NONE PreemptMode=OFF

PartitionName=prio
   DefaultTime=NONE MaxTime=UNLIMITED
   Nodes=g[1-2],n[3-4]
   PriorityJobFactor=2 PriorityTier=2 PreemptMode=REQUEUE
"""


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("60", 60),
        ("30:00", 30),  # minutes:seconds
        ("30:30", 31),  # rounded up to whole minutes
        ("01:00:00", 60),
        ("2-12", 2 * 1440 + 12 * 60),
        ("2-12:30", 2 * 1440 + 12 * 60 + 30),
        ("1-00:00:30", 1441),
        ("UNLIMITED", -1),
        ("NONE", -1),
    ],
)
def test_time_limits_read_as_slurm_writes_them(text: str, want: int) -> None:
    assert minutes(text) == want


def test_each_partition_with_its_tier_limits_and_mode() -> None:
    got = read_partitions("p.txt", TEXT)
    assert got == [
        {
            "name": "batch",
            "default_time_limit": 30,
            "max_time_limit": 60,
            "nodes": "n[1-4]",
            "priority_tier": 1,
            "preemption_mode": ["OFF"],
        },
        {
            "name": "prio",
            "default_time_limit": -1,
            "max_time_limit": -1,
            "nodes": "g[1-2],n[3-4]",
            "priority_tier": 2,
            "preemption_mode": ["REQUEUE"],
        },
    ]
    assert is_partition_text(TEXT)
    assert not is_partition_text('{"meta": {}}')


def test_the_text_gives_the_queues_their_tiers() -> None:
    """With the text beside the JSON, queues have Slurm's tiers and limits; without,
    the tiers are unknown (0) and that is warned."""
    nodes = {
        "meta": {"plugin": {"type": "openapi/v0.0.38"}},
        "nodes": [{"name": "n1", "cpus": 4, "real_memory": 1000, "state": "idle",
                   "partitions": ["batch", "prio"]}],
    }  # fmt: skip
    texts = [("nodes.json", json.dumps(nodes)), ("p.txt", TEXT)]
    report = ImportReport()
    state = import_slurm(read_slurm_documents(texts, report), report).state
    assert state["queues"]["batch"] == {"priority": 1, "max_runtime": 3600, "default_runtime": 1800}
    assert state["queues"]["prio"]["priority"] == 2
    assert not [k for k in report.warnings if "tiers unknown" in k]


def test_a_bad_value_is_located_at_its_line() -> None:
    text = TEXT.replace("MaxTime=01:00:00", "MaxTime=soon")
    with pytest.raises(InputError, match="MaxTime: not a time limit") as info:
        read_partitions("p.txt", text)
    assert (info.value.source, info.value.line) == ("p.txt", 5)
    assert info.value.column == text.splitlines()[4].find("MaxTime=") + 1


def test_a_directory_takes_the_text_and_leaves_other_text_files() -> None:
    """``xce import slurm DIR`` reads every ``*.json`` and each ``*.txt`` that is
    scontrol's partition text; other text files of a capture (sdiag, sprio) are left
    alone."""
    result = CliRunner().invoke(app, ["import", "slurm", str(SITE)])
    assert result.exit_code == 0, result.output
    assert "tiers unknown" not in result.stderr
    assert "  batch:\n    priority: 1\n" in result.stdout
    assert "  prio:\n    priority: 2\n" in result.stdout


def test_a_field_before_any_partition_is_an_error() -> None:
    with pytest.raises(InputError, match="before any PartitionName") as info:
        read_partitions("p.txt", "Nodes=n1\nPartitionName=x\n")
    assert info.value.line == 1


SPRIO = """          JOBID PARTITION     USER   PRIORITY       SITE        AGE  PARTITION
             24 prio          root       4291          0          0       4000
             24 batch         root       2291          0          0       2000
             25 batch         root       2197          0          0       2000
"""


def test_sprio_rows_give_each_partitions_priority() -> None:
    from xce.importers.slurm_text import is_priority_text, read_priorities

    assert is_priority_text(SPRIO)
    assert not is_priority_text(TEXT)
    assert read_priorities("sprio.txt", SPRIO) == [
        {"job_id": "24", "partition": "prio", "priority": 4291},
        {"job_id": "24", "partition": "batch", "priority": 2291},
        {"job_id": "25", "partition": "batch", "priority": 2197},
    ]


def test_a_bad_sprio_row_is_located() -> None:
    from xce.importers.slurm_text import read_priorities

    with pytest.raises(InputError, match="not a row of sprio") as info:
        read_priorities("sprio.txt", SPRIO.replace("2197", "high"))
    assert info.value.line == 4


def test_a_job_of_two_partitions_keeps_both_with_their_priorities() -> None:
    """``-p prio,batch``: the job's queue is prio with sprio's 4291 there, and
    ``also_queues`` has batch with 2291 and the requirement it has there."""
    nodes = {
        "meta": {"plugin": {"type": "openapi/v0.0.38"}},
        "nodes": [
            {"name": "n1", "cpus": 8, "real_memory": 1000, "state": "idle",
             "partitions": ["batch"]},
            {"name": "n3", "cpus": 8, "real_memory": 1000, "state": "idle",
             "partitions": ["batch", "prio"]},
            {"name": "g1", "cpus": 8, "real_memory": 1000, "state": "idle",
             "partitions": ["prio"]},
        ],
        "jobs": [{"job_id": 24, "job_state": "PENDING", "partition": "prio,batch",
                  "user_name": "u", "num_tasks": 8, "priority": 2291,
                  "state_reason": "Priority"}],
    }  # fmt: skip
    texts = [("nodes.json", json.dumps(nodes)), ("p.txt", TEXT), ("sprio.txt", SPRIO)]
    report = ImportReport()
    state = import_slurm(read_slurm_documents(texts, report), report).state
    (job,) = state["jobs"]
    assert (job["queue"], job["priority"], job["resreq"]) == (
        "prio",
        4291,
        "select[partition_prio]",
    )
    assert job["also_queues"] == [
        {"queue": "batch", "priority": 2291, "resreq": "select[partition_batch]"}
    ]
    without = [t for t in texts if t[0] != "sprio.txt"]
    report = ImportReport()
    state = import_slurm(read_slurm_documents(without, report), report).state
    assert state["jobs"][0]["also_queues"] == [
        {"queue": "batch", "resreq": "select[partition_batch]"}
    ]
    assert [k for k in report.warnings if "further partition unknown" in k]
