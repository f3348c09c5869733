"""xce import slurm reads Slurm's multifactor priority inputs (issue 28): the settings
of ``scontrol show config``, the association tree of ``sshare -a -l -P`` with usage
from ``scontrol show assoc_mgr flags=assoc``, QOS priorities (``sacctmgr show qos``),
partitions' PriorityJobFactor, each job's QOS, nice, minimum nodes and accrue time,
and the time of slurmctld's last recalculation; bad text exits 2 at file:line:column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from xce.cli.main import app
from xce.cluster import state_from_dict
from xce.errors import InputError
from xce.importers import ImportReport, import_slurm, read_slurm_documents
from xce.importers.slurm_priority import derive_recalculation, job_fields
from xce.importers.slurm_priority_text import (
    USE_PARENT,
    is_priority_input_text,
    read_assoc_mgr,
    read_config,
    read_job_factors,
    read_last_decay,
    read_qos,
    read_sprio_ages,
    read_sshare,
)

CONFIG = """Configuration data as of 1796223179
AccountingStorageEnforce = none
ClusterName             = xce
FairShareDampeningFactor = 1
PriorityParameters      = (null)
PriorityDecayHalfLife   = 00:30:00
PriorityCalcPeriod      = 00:01:00
PriorityFavorSmall      = No
PriorityFlags           = 
PriorityMaxAge          = 00:03:00
PriorityUsageResetPeriod = NONE
PriorityType            = priority/multifactor
PriorityWeightAge       = 1000
PriorityWeightAssoc     = 0
PriorityWeightFairShare = 5000
PriorityWeightJobSize   = 2000
PriorityWeightPartition = 1000
PriorityWeightQOS       = 3000
PriorityWeightTRES      = (null)
StateSaveLocation       = /var/spool/slurmctld

Cgroup Support Configuration:
AllowedDevicesFile      = /etc/slurm/cgroup_allowed_devices_file.conf

Slurmctld(primary) at vm is UP
"""  # noqa: W291 (scontrol prints the blank flags with a trailing space)

SSHARE = """Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|GrpTRESMins|TRESRunMins
root|||0.000000|1520||1.000000||||cpu=0
 root|root|1|0.009901|0|0.000000|0.000000|1.000000|inf||cpu=0
 bio||20|0.198020|0|0.000000|0.000000||inf||cpu=0
  bio|xce_erin|1|1.000000|0|0.000000|0.000000|1.000000|inf||cpu=0
 chem||30|0.297030|1177|0.774194|0.774194||0.383663||cpu=0
  chem|xce_carol|1|0.500000|392|0.258065|0.333333|0.285714|1.500000||cpu=0
  chem|xce_dave|1|0.500000|784|0.516129|0.666667|0.142857|0.750000||cpu=0
 phys||50|0.495050|343|0.225806|0.225806||2.192362||cpu=0
  phys|xce_alice|1|0.250000|196|0.129032|0.571429|0.428571|0.437500||cpu=0
  phys|xce_bob|2|0.500000|98|0.064516|0.285714|0.714286|1.750000||cpu=0
  phys|xce_carol|1|0.250000|49|0.032258|0.142857|0.714286|1.750000||cpu=0
"""  # noqa: E501

_RECORD = """ClusterName=xce Account={account} UserName={user} Partition= Priority={priority} ID=1
    SharesRaw/Norm/Level/Factor={shares}/0.50/4/1.00
    UsageRaw/Norm/Efctv={usage}/0.06/0.29
    ParentAccount={parent} Lft=5 DefAssoc=Yes
    GrpJobs=N(0) GrpJobsAccrue=N(0)
"""
ASSOC = [
    ("root", "", "1", "1520.44", ""),
    ("root", "root(0)", "1", "0.00", ""),
    ("bio", "", "20", "0.00", "root(1)"),
    ("bio", "xce_erin(992)", "1", "0.00", ""),
    ("chem", "", "30", "1177.12", "root(1)"),
    ("chem", "xce_carol(994)", "1", "392.37", ""),
    ("chem", "xce_dave(993)", "1", "784.74", ""),
    ("phys", "", "50", "343.33", "root(1)"),
    ("phys", "xce_alice(999)", "1", "196.19", ""),
    ("phys", "xce_bob(995)", "2", "98.10", ""),
    ("phys", "xce_carol(994)", "1", "49.05", ""),
]


def assoc_mgr(rows: list[tuple[str, str, str, str, str]] = ASSOC, priority: str = "0") -> str:
    body = "".join(
        _RECORD.format(account=a, user=u, shares=s, usage=us, parent=p, priority=priority)
        for a, u, s, us, p in rows
    )
    return f"Current Association Manager state\n\nAssociation Records\n\n{body}"


QOS = "Name|Priority\nnormal|10\nhigh|30\n"
PARTITIONS = """PartitionName=batch
   Nodes=n[1-2]
   PriorityJobFactor=1 PriorityTier=1 PreemptMode=OFF
PartitionName=prio
   Nodes=n[1-2]
   PriorityJobFactor=3 PriorityTier=1 PreemptMode=OFF
"""
META = {"plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"}}


def _job(job_id: int, user: str, account: str, **extra: Any) -> dict[str, Any]:
    job = {
        "job_id": job_id, "job_state": "PENDING", "user_name": user, "account": account,
        "partition": "batch", "tasks": 2, "cpus": 2, "cpus_per_task": None, "qos": "normal",
        "nice": None, "accrue_time": 1796223100, "eligible_time": 1796223100,
        "submit_time": 1796223100, "tres_req_str": "cpu=2,mem=200M,node=1,billing=2",
        "priority": 2000, "state_reason": "Priority", "time_limit": 10,
    }  # fmt: skip
    job.update(extra)
    return job


def capture(**texts: str) -> list[tuple[str, str]]:
    """A capture's (source, text) pairs: nodes and jobs JSON, then ``texts``."""
    nodes = [
        {"name": f"n{i}", "cpus": 8, "real_memory": 16000, "state": "idle",
         "partitions": ["batch", "prio"]}
        for i in (1, 2)
    ]  # fmt: skip
    jobs = [
        _job(7, "xce_dave", "chem", nice=100),
        _job(8, "xce_carol", "phys", qos="high", tres_req_str="cpu=4,node=2", tasks=4, cpus=4),
        _job(9, "xce_erin", "bio", accrue_time=0, cpus=4),  # one task of 4 CPUs (-c 4)
    ]
    out = [
        ("sinfo.json", json.dumps({"meta": META, "nodes": nodes})),
        ("squeue.json", json.dumps({"meta": META, "jobs": jobs})),
    ]
    return out + list(texts.items())


ALL = {
    "config.txt": CONFIG,
    "sshare.txt": SSHARE,
    "assoc.txt": assoc_mgr(),
    "qos.txt": QOS,
    "partitions.txt": PARTITIONS,
    "last.txt": "PriorityLastDecayRan=1796223169\n",
}


def imported(
    texts: list[tuple[str, str]], now: float = 1796223179
) -> tuple[dict[str, Any], ImportReport]:
    report = ImportReport()
    state = import_slurm(read_slurm_documents(texts, report), report, now=now).state
    state_from_dict(state, "<test>")  # xce's loader takes what the importer builds
    return state, report


# -- the readers --------------------------------------------------------------------------


def test_config_settings_by_name_with_their_lines() -> None:
    got = read_config("c.txt", CONFIG)
    assert got["PriorityWeightFairShare"][:2] == ("5000", 15)
    assert got["PriorityWeightTRES"][0] == ""  # (null)
    assert got["PriorityFlags"][0] == ""
    assert got["ClusterName"][0] == "xce"
    assert "Slurmctld" not in got


def test_sshare_tree_by_depth_in_its_order() -> None:
    rows = read_sshare("s.txt", SSHARE)
    assert [(r.account, r.user, r.parent) for r in rows[:4]] == [
        ("root", None, None),
        ("root", "root", None),
        ("bio", None, "root"),
        ("bio", "xce_erin", None),
    ]
    carol = rows[-1]
    assert (carol.account, carol.user, carol.shares, carol.usage, carol.fairshare) == (
        "phys", "xce_carol", 1.0, 49.0, 0.714286,
    )  # fmt: skip
    assert rows[0].shares == 1.0  # root prints no shares


def test_assoc_mgr_gives_usage_to_two_decimals_priority_and_parents() -> None:
    rows = read_assoc_mgr("a.txt", assoc_mgr(priority="5"))
    chem = rows[4]
    assert (chem.account, chem.user, chem.parent, chem.shares, chem.usage) == (
        "chem", None, "root", 30.0, 1177.12,
    )  # fmt: skip
    bob = rows[9]
    assert (bob.user, bob.usage, bob.priority) == ("xce_bob", 98.10, 5)
    assert rows[1].user == "root"


def test_assoc_mgr_one_line_records() -> None:
    text = assoc_mgr().replace("\n    ", " ")
    assert [r.usage for r in read_assoc_mgr("a.txt", text)] == [float(u) for _, _, _, u, _ in ASSOC]


def test_qos_job_factors_last_decay_and_ages() -> None:
    assert read_qos("q.txt", QOS) == {"normal": 10, "high": 30}
    wide = "Name|Priority|GraceTime|UsageFactor\nnormal|0|00:00:00|1.000000\n"
    assert read_qos("q.txt", wide) == {"normal": 0}
    assert read_job_factors("p.txt", PARTITIONS) == {"batch": 1, "prio": 3}
    od = "PriorityLastDecayRan=           1796223169\n"  # od -An -tu8 pads the number
    assert read_last_decay("l.txt", od) == 1796223169.0
    sprio = (
        "          JOBID PARTITION     USER   PRIORITY       SITE        AGE      ASSOC\n"
        "              7 batch     xce_dave       2680          0         50          0\n"
    )
    assert read_sprio_ages("sprio.txt", sprio) == {("7", "batch"): 50}


def test_each_text_is_recognised_and_no_other() -> None:
    for text in ALL.values():
        assert is_priority_input_text(text) or text is PARTITIONS
    for other in ('{"meta": {}}', "JOBID PARTITION PRIORITY\n", "Name Priority\n", "hello"):
        assert not is_priority_input_text(other)


# -- bad text: exit 2 at file:line:column ------------------------------------------------------


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("|98|", "|lots|", "raw usage 'lots' is not a number"),
        ("|98|", "|-98|", "out of range"),
        ("|98|", "|nan|", "out of range"),
        ("|98|", "|1e400|", "out of range"),
        ("|2|0.500000|98", "|two|0.500000|98", "shares 'two' are not a whole number"),
        ("|0.714286|1.750000", "|1.5|1.750000", "FairShare '1.5'"),
        ("|0.714286|1.750000", "|0.714286|1.75|x", "fields where sshare's header has"),
        ("  phys|xce_bob", "  chem|xce_bob", "not the account above it"),
        (" phys||50", "   phys||50", "at depth 3 under no account"),
        (" phys||50", "phys||50", "at depth 0 under no account"),
    ],
)
def test_bad_sshare_is_located(old: str, new: str, message: str) -> None:
    text = SSHARE.replace(old, new, 1)
    with pytest.raises(InputError, match=message) as info:
        read_sshare("s.txt", text)
    err = info.value
    assert err.source == "s.txt"
    assert err.line == _line_of(text, new)
    assert err.column is not None
    assert err.text is not None


def test_bad_sshare_column_points_at_the_field() -> None:
    text = SSHARE.replace("|98|", "|lots|")
    with pytest.raises(InputError) as info:
        read_sshare("s.txt", text)
    line = text.splitlines()[info.value.line - 1]
    assert line[info.value.column - 1 :].startswith("lots")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("Efctv=98.10", "Efctv=many", "raw usage 'many' is not a number"),
        ("Factor=2/", "Factor=x/", "shares 'x' are not a whole number"),
        ("Priority=0 ID=1\n    SharesRaw/Norm/Level/Factor=2", "Priority=high ID=1\n"
         "    SharesRaw/Norm/Level/Factor=2", "Priority 'high'"),
    ],
)  # fmt: skip
def test_bad_assoc_mgr_is_located(old: str, new: str, message: str) -> None:
    text = assoc_mgr().replace(old, new, 1)
    with pytest.raises(InputError, match=message) as info:
        read_assoc_mgr("a.txt", text)
    assert info.value.line == _line_of(text, new.split("\n")[0])
    assert info.value.column is not None


def test_assoc_mgr_record_missing_a_field() -> None:
    text = assoc_mgr().replace("    UsageRaw/Norm/Efctv=0.00/0.06/0.29\n", "", 1)
    with pytest.raises(InputError, match="without UsageRaw/Norm/Efctv="):
        read_assoc_mgr("a.txt", text)
    with pytest.raises(InputError, match="no association records"):
        read_assoc_mgr("a.txt", "Current Association Manager state\n\nUser Records\n\n")


@pytest.mark.parametrize(
    ("text", "message", "line", "column"),
    [
        ("Name|Priority\nnormal|ten\n", "priority 'ten' is not a whole number", 2, 8),
        ("Name|Priority\nnormal|1\nnormal|2\n", "listed twice", 3, None),
        ("Name|Priority\n|1\n", "without a name", 2, None),
        ("Name|Priority\nnormal|1|x\n", "fields where the header has", 2, 10),
    ],
)
def test_bad_qos_is_located(text: str, message: str, line: int, column: int | None) -> None:
    with pytest.raises(InputError, match=message) as info:
        read_qos("q.txt", text)
    assert (info.value.line, info.value.column) == (line, column)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("PriorityLastDecayRan=soon\n", "not a time in Unix seconds"),
        ("PriorityLastDecayRan=0\n", "not a time in Unix seconds"),
        ("PriorityLastDecayRan=-5\n", "not a time in Unix seconds"),
    ],
)
def test_bad_last_decay(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        read_last_decay("l.txt", text)
    assert (info.value.line, info.value.column) == (1, 21)


def test_bad_job_factor_is_located() -> None:
    text = PARTITIONS.replace("PriorityJobFactor=3", "PriorityJobFactor=high")
    with pytest.raises(InputError, match="PriorityJobFactor 'high'") as info:
        read_job_factors("p.txt", text)
    assert (info.value.line, info.value.column) == (6, 4)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("PriorityWeightAge       = 1000", "PriorityWeightAge       = lots",
         "PriorityWeightAge: a number"),
        ("PriorityMaxAge          = 00:03:00", "PriorityMaxAge          = soon",
         "PriorityMaxAge: a Slurm time"),
        ("PriorityFlags           = ", "PriorityFlags           = FAIR_TREE,BOGUS",
         "unknown flag 'BOGUS'"),
        ("PriorityWeightTRES      = (null)", "PriorityWeightTRES      = cpu",
         "'cpu' is not TYPE=WEIGHT"),
        ("PriorityFavorSmall      = No", "PriorityFavorSmall      = Maybe",
         "PriorityFavorSmall: YES or NO"),
    ],
)  # fmt: skip
def test_bad_setting_is_located_at_its_value(old: str, new: str, message: str) -> None:
    config = CONFIG.replace(old, new)
    with pytest.raises(InputError, match=message) as info:
        imported(capture(**{**ALL, "config.txt": config}))
    err = info.value
    assert (err.source, err.line) == ("config.txt", _line_of(config, new))
    assert err.column is not None
    assert err.text == new


def test_bad_job_fields_are_located_at_the_job() -> None:
    texts = capture(**ALL)
    jobs = json.loads(texts[1][1])
    jobs["jobs"][0]["nice"] = "lots"
    texts[1] = ("squeue.json", json.dumps(jobs))
    with pytest.raises(InputError, match="nice 'lots'") as info:
        imported(texts)
    assert (info.value.source, info.value.path) == ("squeue.json", "jobs[0]")


def test_a_tree_cut_short_is_an_error_at_its_file() -> None:
    rows = [r for r in ASSOC if r[0] != "phys" or r[1]]  # phys's users, no phys
    texts = capture(**{**ALL, "assoc.txt": assoc_mgr(rows)})
    texts = [t for t in texts if t[0] != "sshare.txt"]
    with pytest.raises(InputError, match="account 'phys' is not declared") as info:
        imported(texts)
    assert info.value.source == "assoc.txt"


@given(st.lists(st.text(alphabet="|abc 0123456789.-\n", max_size=40), max_size=6))
def test_hostile_sshare_only_located_errors(lines: list[str]) -> None:
    """Whatever follows the header, the reader returns rows or raises InputError at a
    line of the text (never another exception)."""
    text = SSHARE.splitlines()[0] + "\n" + "\n".join(lines)
    err = _raised(lambda: read_sshare("s.txt", text))
    if err is not None:
        assert err.source == "s.txt"
        assert err.line is None or 1 <= err.line <= len(text.splitlines())


@given(st.text(alphabet="=/() \nabcUsageRawSharesClusterNameAccount0123456789.", max_size=300))
def test_hostile_assoc_mgr_only_located_errors(body: str) -> None:
    text = "Current Association Manager state\n\nAssociation Records\n\n" + body
    err = _raised(lambda: read_assoc_mgr("a.txt", text))
    assert err is None or err.source == "a.txt"


def _raised(read: Any) -> InputError | None:
    """The InputError ``read()`` raises, or None (any other exception propagates)."""
    try:
        read()
    except InputError as err:
        return err
    return None


# -- the import -----------------------------------------------------------------------------


def test_the_priority_section_from_a_capture() -> None:
    state, report = imported(capture(**ALL))
    section = state["priority"]
    assert state["picker"] == "multifactor"
    assert section["PriorityType"] == "priority/multifactor"
    assert section["PriorityWeightFairshare"] == 5000  # scontrol's FairShare
    assert section["PriorityMaxAge"] == "00:03:00"
    assert "PriorityFlags" not in section  # none given: Fair Tree, Slurm's default
    assert section["usage_time"] == 1796223169
    assert section["qos"] == {"normal": {"priority": 10}, "high": {"priority": 30}}
    first = section["associations"][:4]
    assert first == [
        {"account": "root", "usage": 1520.44},
        {"account": "root", "user": "root", "shares": 1, "usage": 0},
        {"account": "bio", "shares": 20, "usage": 0},
        {"account": "bio", "user": "xce_erin", "shares": 1, "usage": 0},
    ]
    bob = section["associations"][9]
    assert bob == {"account": "phys", "user": "xce_bob", "shares": 2, "usage": 98.1}
    assert state["queues"]["prio"]["priority_job_factor"] == 3
    assert not report.warnings, report.warnings


def test_job_fields() -> None:
    state, _ = imported(capture(**ALL))
    jobs = {j["id"]: j for j in state["jobs"]}
    assert (jobs["7"]["qos"], jobs["7"]["nice"], jobs["7"]["nodes"]) == ("normal", 100, 1)
    assert (jobs["8"]["qos"], jobs["8"]["nodes"], jobs["8"]["project"]) == ("high", 2, "phys")
    assert "nice" not in jobs["8"]
    assert jobs["7"]["accrue_time"] == 1796223100
    assert jobs["9"]["accrue_time"] == 1796223179  # 0: the scheduler has not seen it yet
    assert jobs["9"]["tasks"] == 4  # v0.0.38 prints cpus_per_task null: cpus / tasks


def test_job_fields_hold_begin_and_negative_nice() -> None:
    job = _job(1, "u", "a", accrue_time=0, nice=-5, minimum_nodes={"set": True, "number": 3})
    assert job_fields(job, {"hold": True}, 100.0) == {"qos": "normal", "nice": -5, "nodes": 3}
    assert "accrue_time" not in job_fields(job, {"begin_time": 200.0}, 100.0)
    assert job_fields(job, {"begin_time": 50.0}, 100.0)["accrue_time"] == 100.0
    with pytest.raises(ValueError, match="out of Slurm's range"):
        job_fields({**job, "nice": 2**40}, {}, 100.0)
    with pytest.raises(ValueError, match="node count"):
        job_fields({**job, "minimum_nodes": 2.5}, {}, 100.0)


def test_the_fair_share_is_checked_against_sshares() -> None:
    """The imported usage ranks every user as sshare's FairShare says; rounded usage
    that loses a Fair Tree tie (98.10 = 2 x 49.05 printed, exactly 2:1 in Slurm) is
    reported."""
    _, report = imported(capture(**ALL))
    assert report.mapped["user associations whose fair share is sshare's"] == 7
    rows = [r if r[1] != "xce_bob(995)" else (*r[:3], "98.09", "") for r in ASSOC]
    _, report = imported(capture(**{**ALL, "assoc.txt": assoc_mgr(rows)}))
    (kind,) = [k for k in report.warnings if "differs from sshare's FairShare" in k]
    assert "phys/xce_carol: 0.571429 (sshare 0.714286)" in report.warnings[kind]


def test_without_assoc_mgr_sshares_integer_usage() -> None:
    texts = [t for t in capture(**ALL) if t[0] != "assoc.txt"]
    state, _ = imported(texts)
    bob = state["priority"]["associations"][9]
    assert bob["usage"] == 98


def test_assoc_mgr_alone_gives_the_tree() -> None:
    texts = [t for t in capture(**ALL) if t[0] != "sshare.txt"]
    state, _ = imported(texts)
    names = [
        (a["account"], a.get("user"), a.get("parent")) for a in state["priority"]["associations"]
    ]
    assert names[4:7] == [("chem", None, None), ("chem", "xce_carol", None),
                          ("chem", "xce_dave", None)]  # fmt: skip


def test_usage_time_derived_from_sprio_or_warned() -> None:
    sprio = (
        "          JOBID PARTITION     USER   PRIORITY       SITE        AGE\n"
        "              7 batch     xce_dave       2680          0        383\n"
    )
    # (T - 1796223100) / 180 * 1000 rounds to 383: T in 1796223168.85 .. 1796223169.03
    texts = [t for t in capture(**ALL) if t[0] != "last.txt"] + [("sprio.txt", sprio)]
    state, report = imported(texts)
    assert state["priority"]["usage_time"] == 1796223169
    assert report.mapped["usage_time derived from sprio's AGE"] == 1
    texts = [t for t in texts if t[0] != "sprio.txt"]
    state, report = imported(texts)
    assert "usage_time" not in state["priority"]
    assert [k for k in report.warnings if "last priority recalculation unknown" in k]


def test_derive_recalculation_skips_new_and_capped_jobs() -> None:
    settings = {"PriorityWeightAge": 1000, "PriorityMaxAge": "00:03:00"}
    ages = {("1", "a"): 500, ("2", "a"): 0, ("3", "a"): 1000}
    accrue = {"1": 1000.0, "2": 1080.0, "3": 500.0}
    assert derive_recalculation(ages, accrue, settings) == (1089.91, 1090.09)
    assert derive_recalculation({("2", "a"): 0}, accrue, settings) is None
    assert derive_recalculation(ages, accrue, {"PriorityWeightAge": 0}) is None


def test_unmodelled_flags_and_tres_are_reported_not_fatal() -> None:
    config = CONFIG.replace(
        "PriorityFlags           = ", "PriorityFlags           = INCR_ONLY,ACCRUE_ALWAYS"
    )
    config = config.replace(
        "PriorityWeightTRES      = (null)", "PriorityWeightTRES      = CPU=100,Mem=2G,GRES/gpu=50"
    )
    state, report = imported(capture(**{**ALL, "config.txt": config}))
    assert state["priority"]["PriorityFlags"] == "ACCRUE_ALWAYS"
    assert state["priority"]["PriorityWeightTRES"] == "CPU=100"
    assert [k for k in report.warnings if "flag xce does not model" in k]
    assert report.counts["TRES weight xce does not model (left out)"] == 2


def test_priority_basic_writes_no_section() -> None:
    config = "Configuration data as of 1\nPriorityType            = priority/basic\n"
    state, report = imported(capture(**{**ALL, "config.txt": config}))
    assert "priority" not in state
    assert state["picker"] == "priority"
    assert "qos" not in state["jobs"][0]
    assert "priority_job_factor" not in state["queues"]["prio"]
    assert [k for k in report.warnings if "not priority/multifactor" in k]


def test_a_missing_input_keeps_slurms_priorities() -> None:
    texts = [t for t in capture(**ALL) if t[0] not in ("sshare.txt", "assoc.txt")]
    state, report = imported(texts)
    assert state["picker"] == "priority"
    assert "associations" not in state["priority"]
    (kind,) = [k for k in report.warnings if "multifactor input missing" in k]
    assert "associations" in report.warnings[kind][0]


def test_a_jobs_qos_not_listed_gets_priority_zero() -> None:
    state, report = imported(capture(**{**ALL, "qos.txt": "Name|Priority\nnormal|10\n"}))
    assert state["priority"]["qos"]["high"] == {"priority": 0}
    assert [k for k in report.warnings if "QOS not in the QOS list" in k]


def test_partition_and_twice_listed_associations_keep_their_ranks() -> None:
    """sshare -m: a partition association is a user association of its own (Slurm
    counts it among the users, so every rank depends on it)."""
    lines = SSHARE.splitlines()
    head = lines[0].replace("Account|User|", "Account|User|Partition|")
    body = ["|".join([*cells[:2], "", *cells[2:]]) for cells in (x.split("|") for x in lines[1:])]
    body.append("  phys|xce_bob|prio|1|0.2|0|0|0|0.5|inf||cpu=0")
    text = "\n".join([head, *body]) + "\n"
    texts = [t for t in capture(**{**ALL, "sshare.txt": text}) if t[0] != "assoc.txt"]
    state, report = imported(texts)
    users = [a.get("user") for a in state["priority"]["associations"] if "user" in a]
    assert "xce_bob@prio" in users
    assert [k for k in report.warnings if "partition association" in k]


def test_use_parent_shares_are_reported() -> None:
    text = SSHARE.replace("|xce_dave|1|", "|xce_dave|parent|")
    texts = [t for t in capture(**{**ALL, "sshare.txt": text}) if t[0] != "assoc.txt"]
    state, report = imported(texts)
    assert [k for k in report.warnings if "shares 'parent' not modelled" in k]
    assert read_sshare("s.txt", text)[6].shares == USE_PARENT
    assert state["priority"]["associations"][6]["shares"] == 1


# -- the CLI ---------------------------------------------------------------------------------


def _write(tmp: Path, texts: list[tuple[str, str]]) -> Path:
    for name, text in texts:
        (tmp / name).write_text(text)
    return tmp


def test_cli_reads_the_texts_of_a_directory(tmp_path: Path) -> None:
    folder = _write(tmp_path / "cap", []) if (tmp_path / "cap").mkdir() is None else tmp_path
    _write(folder, capture(**ALL))
    result = CliRunner().invoke(app, ["import", "slurm", str(folder), "--now", "1796223179"])
    assert result.exit_code == 0, result.output
    assert "picker: multifactor" in result.stdout
    assert "usage_time: 1796223169" in result.stdout


def test_cli_bad_text_exits_2_at_file_line_column(tmp_path: Path) -> None:
    texts = capture(**{**ALL, "sshare.txt": SSHARE.replace("|98|", "|lots|")})
    _write(tmp_path, texts)
    result = CliRunner().invoke(
        app, ["import", "slurm", str(tmp_path), "-o", str(tmp_path / "s.yaml")]
    )
    assert result.exit_code == 2, result.output
    line = _line_of(SSHARE.replace("|98|", "|lots|"), "|lots|")
    assert f"sshare.txt:{line}:" in result.stderr
    assert "raw usage 'lots' is not a number" in result.stderr
    assert not (tmp_path / "s.yaml").exists()
