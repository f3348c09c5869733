"""``xce schedule`` on an imported state (top-level ``scheduler``): every decided job's
agreement with the scheduler, the likely cause, the summary line and the JSON (issue 25,
"Agreement shown"). One small state file per case, run through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from xce.cli.agreement import REASONS, category, label
from xce.cli.main import app

T0 = 1796126400  # 2026-12-01T12:00:00Z
HOSTS = [{"name": "n1", "slots": 4}, {"name": "n2", "slots": 4}]
FULL = {"id": "r", "user": "bob", "alloc": [{"host": "n1", "slots": 4}, {"host": "n2", "slots": 4}],
        "start_time": T0 - 600, "requested_time": 3600}  # fmt: skip
HIDDEN = {"id": "slurm:n1:unattributed", "user": "unknown", "alloc": [{"host": "n1", "slots": 2}],
          "start_time": T0}  # fmt: skip


def _job(job_id: str = "j", tasks: int = 2, **extra: Any) -> dict[str, Any]:
    return {"id": job_id, "user": "alice", "tasks": tasks, "submit_time": T0 - 60,
            "requested_time": 1800, **extra}  # fmt: skip


def _write(tmp_path: Path, jobs: list[dict[str, Any]], **top: Any) -> Path:
    state: dict[str, Any] = {"now": T0, "scheduler": "Slurm", "hosts": HOSTS, "jobs": jobs}
    state.update(top)
    path = tmp_path / "state.yaml"
    path.write_text(yaml.safe_dump(state, sort_keys=False))
    return path


def _run(path: Path, *args: str) -> Any:
    result = CliRunner(env={"COLUMNS": "250"}).invoke(app, ["schedule", str(path), *args])
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def _decisions(path: Path, *args: str) -> dict[str, Any]:
    info: dict[str, Any] = json.loads(_run(path, "--json", *args).stdout)
    return info


def _agreement(info: dict[str, Any], job: str) -> dict[str, Any]:
    entry = next(e for e in info["dispatched"] + info["pending"] if e["job"] == job)
    found: dict[str, Any] = entry["agreement"]
    return found


# -- what the scheduler's reasons say ----------------------------------------------------


@pytest.mark.parametrize(("reason", "expected"), sorted(REASONS.items()))
def test_every_slurm_reason_of_the_table(reason: str, expected: str) -> None:
    assert category(reason) == expected


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        (None, "none"),
        ("", "none"),
        ("  ", "none"),
        ("QOSMaxJobsPerUserLimit", "limit"),
        ("QOSGrpCpuLimit", "limit"),
        ("AssocGrpCpuLimit", "limit"),
        ("AssocMaxJobsLimit", "limit"),
        ("ReqNodeNotAvail, UnavailableNodes:n[1-3]", "nodes"),
        ("ReqNodeNotAvail, Reserved for maintenance", "reservation"),
        ("SomethingNew", "other"),
        # free text: PBS comments, LSF pending reasons
        ("Not Running: Insufficient amount of resource: ncpus (R: 4 A: 0 T: 8)", "resources"),
        ("Not Running: User has reached server running job limit.", "limit"),
        ("Job held by user", "hold"),
        ("Not Running: Job would conflict with reservation or top job", "reservation"),
        ("Not Running: Draining system to allow starving job to run", "priority"),
        ("Job dependency condition not satisfied", "dependency"),
    ],
)
def test_reasons_by_prefix_and_word(reason: str | None, expected: str) -> None:
    """Slurm's QOS…/Assoc… reasons are limits; the first word before a comma decides;
    free text is read by its words."""
    assert category(reason) == expected


@pytest.mark.parametrize(
    ("name", "shown"), [("Slurm", "Slurm"), ("slurm", "Slurm"), ("PBS", "PBS"), ("lsf", "LSF"),
                        ("Flux", "Flux"), (None, "scheduler")]
)  # fmt: skip
def test_scheduler_names(name: str | None, shown: str) -> None:
    assert label(name) == shown


# -- xce starts it; does the scheduler? ------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "running", "kind", "in_cause"),
    [
        ({}, [], None, None),  # Slurm's "None": it would start it too
        ({"reason": "None"}, [], None, None),
        ({"reason": "Priority", "scheduler_start": T0 + 30}, [], None, None),  # within 60 s
        ({"reason": "QOSMaxJobsPerUserLimit"}, [], "dispatched_pending",
         "a limit the state does not model"),
        ({"reason": "AssocGrpCpuLimit"}, [], "dispatched_pending", "AssocGrpCpuLimit"),
        ({"reason": "Resources"}, [HIDDEN], "dispatched_pending", "slurm:n1:unattributed"),
        ({"reason": "Resources"}, [], "dispatched_pending", "allocations xce cannot see"),
        ({"reason": "Dependency"}, [], "dispatched_pending",
         "a dependency the state does not give"),
        ({"reason": "BeginTime"}, [], "dispatched_pending", "a begin time the state does not give"),
        ({"reason": "JobHeldUser"}, [], "dispatched_pending", "a hold the state does not record"),
        ({"reason": "ReqNodeNotAvail, UnavailableNodes:n1"}, [], "dispatched_pending",
         "node availability"),
        ({"reason": "Licenses"}, [], "dispatched_pending", "licences"),
        ({"reason": "PartitionNodeLimit"}, [], "dispatched_pending", "node count"),
        ({"reason": "Reservation"}, [], "dispatched_pending", "a reservation"),
        ({"reason": "SomethingNew"}, [], "dispatched_pending", "a reason xce does not model"),
        ({"scheduler_start": T0 + 3600}, [], "dispatched_pending", "expects to start it at "
         "2026-12-01 13:00:00 UTC (in 1 h)"),
    ],
)  # fmt: skip
def test_a_job_xce_starts(
    tmp_path: Path,
    extra: dict[str, Any],
    running: list[dict[str, Any]],
    kind: str | None,
    in_cause: str | None,
) -> None:
    """xce dispatches ``j``: a disagreement exactly when the scheduler's reason keeps a
    job waiting (or it expects the start later than now + 60 s), with the cause read
    from the reason and what the state holds."""
    path = _write(tmp_path, [_job(**extra)], running=running)
    info = _decisions(path)
    assert [d["job"] for d in info["dispatched"]] == ["j"]
    found = _agreement(info, "j")
    assert found["kind"] == kind
    assert found["agrees"] is (kind is None)
    if in_cause is None:
        assert found["cause"] is None
    else:
        assert in_cause in found["cause"]
    assert found["scheduler_start"] == extra.get("scheduler_start")


def test_priority_names_the_job_slurm_puts_first(tmp_path: Path) -> None:
    """Reason Priority, and a job of higher priority waits in xce (it is too wide now):
    the cause names it and both priorities."""
    jobs = [
        _job("big", tasks=8, priority=900, submit_time=T0 - 30),
        _job("j", reason="Priority", priority=100),
    ]
    running = [{"id": "r", "user": "bob", "alloc": [{"host": "n1", "slots": 2}],
                "start_time": T0 - 60, "requested_time": 600}]  # fmt: skip
    info = _decisions(_write(tmp_path, jobs, running=running))
    found = _agreement(info, "j")
    assert found["kind"] == "dispatched_pending"
    assert "priority order: Slurm puts job big (priority 900 against 100) first" in found["cause"]


# -- xce keeps it waiting; does the scheduler? ------------------------------------------


@pytest.mark.parametrize(
    ("extra", "in_cause"),
    [
        ({}, "resources xce counts held now that Slurm finds free"),
        ({"hold": True}, "its hold, which Slurm finds satisfied"),
        ({"begin_time": T0 + 7200}, "its begin time, which Slurm finds satisfied"),
    ],
)
def test_a_job_the_scheduler_starts_now(
    tmp_path: Path, extra: dict[str, Any], in_cause: str
) -> None:
    """The scheduler expects to start ``j`` now (scheduler_start <= now + 60 s) and xce
    keeps it waiting: ``pending_starting``, the cause from xce's own reason."""
    path = _write(tmp_path, [_job(scheduler_start=T0 + 60, **extra)], running=[FULL])
    info = _decisions(path)
    found = _agreement(info, "j")
    assert found["kind"] == "pending_starting"
    assert in_cause in found["cause"]


@pytest.mark.parametrize(
    ("theirs", "kind", "stale"),
    [
        (T0 - 30, "pending_starting", False),  # within the resolution: now
        (T0 - 61, None, True),  # past: the scheduler did not act on it
        (T0 - 6 * 86400, None, True),
    ],
)
def test_an_expected_start_already_past_is_stale(
    tmp_path: Path, theirs: float, kind: str | None, stale: bool
) -> None:
    """A ``scheduler_start`` before now - resolution is not "starts now": the job still
    pends there, so the estimate is stale (captured files of different times); marked,
    kept in the JSON, shown, and not compared."""
    path = _write(tmp_path, [_job(reason="Resources", scheduler_start=theirs)], running=[FULL])
    found = _agreement(_decisions(path), "j")
    assert (found["kind"], found["scheduler_start_stale"]) == (kind, stale)
    assert found["scheduler_start"] == theirs
    text = " ".join(_run(path).stdout.split())
    assert ("(stale: past, not started)" in text) is stale


def test_unattributed_allocations_are_named_when_xce_waits(tmp_path: Path) -> None:
    running = [{**FULL, "alloc": [{"host": "n2", "slots": 4}]}, {**HIDDEN, "alloc": [
        {"host": "n1", "slots": 4}]}]  # fmt: skip
    info = _decisions(_write(tmp_path, [_job(scheduler_start=T0)], running=running))
    assert "slurm:n1:unattributed" in _agreement(info, "j")["cause"]


def test_waiting_on_both_sides_without_a_start_agrees(tmp_path: Path) -> None:
    """Both keep it waiting and neither gives a start to compare: agreement."""
    path = _write(tmp_path, [_job(reason="Resources")], running=[FULL])
    found = _agreement(_decisions(path), "j")
    assert (found["agrees"], found["kind"], found["cause"]) == (True, None, None)


# -- planned starts ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("theirs", "top", "kind", "in_cause"),
    [
        (T0 + 3000, {}, None, None),  # planned at T0 + 3000 (r ends): the same
        (T0 + 3060, {}, None, None),  # 60 s: Slurm's default resolution
        (T0 + 3061, {}, "start_differs", "xce plans it 1 min 1 s earlier than Slurm"),
        (T0 + 2000, {}, "start_differs", "xce plans it 16 min 40 s later than Slurm"),
        (T0 + 3300, {"scheduler_resolution": 600}, None, None),
        (T0 + 3002, {"scheduler": "PBS"}, "start_differs", "2 s earlier than PBS"),
        (T0 + 3001, {"scheduler": "PBS"}, None, None),  # other schedulers: 1 s
    ],
)
def test_planned_starts_against_the_schedulers(
    tmp_path: Path, theirs: float, top: dict[str, Any], kind: str | None, in_cause: str | None
) -> None:
    """Under backfill both give a start: they differ when by more than the state's
    ``scheduler_resolution`` (default 60 s for Slurm, 1 s for others)."""
    path = _write(
        tmp_path, [_job(reason="Resources", scheduler_start=theirs)], running=[FULL], **top
    )
    info = _decisions(path, "--backfill", "conservative")
    pending = next(p for p in info["pending"] if p["job"] == "j")
    assert pending["planned_start"] == T0 + 3000
    found = _agreement(info, "j")
    assert found["kind"] == kind
    if in_cause is not None:
        assert in_cause in found["cause"]
    assert info["stats"]["agreement"]["resolution_s"] == top.get(
        "scheduler_resolution", 60 if top.get("scheduler", "Slurm") == "Slurm" else 1
    )


# -- the summary, the table, --job ------------------------------------------------------

MIXED = [
    _job("ok"),
    _job("qos", reason="QOSMaxJobsPerUserLimit"),
    _job("wide", tasks=16, reason="Resources", scheduler_start=T0 + 20),
]


def test_stats_count_the_agreement(tmp_path: Path) -> None:
    info = _decisions(_write(tmp_path, MIXED))
    assert info["stats"]["agreement"] == {
        "scheduler": "Slurm",
        "jobs": 3,
        "agree": 1,
        "by_kind": {"dispatched_pending": 1, "pending_starting": 1},
        "with_scheduler_start": 1,
        "scheduler_start_stale": 0,
        "resolution_s": 60,
        "now": T0,
        "now_iso": "2026-12-01T12:00:00+00:00",
    }
    wide = _agreement(info, "wide")
    assert wide["scheduler_start_iso"] == "2026-12-01T12:00:20+00:00"
    assert wide["scheduler_reason"] == "Resources"


def test_the_table_marks_each_disagreement_and_sums_up(tmp_path: Path) -> None:
    text = _run(_write(tmp_path, MIXED, timezone="Europe/Berlin")).stdout
    assert "agrees with Slurm" in text
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if line.count("│") > 3}
    assert "│ yes" in rows["ok"]
    assert "NO: xce starts it, Slurm waits" in rows["qos"]
    assert "NO: Slurm starts it now, xce waits" in rows["wide"]
    assert "Resources; expects 2026-12-01 13:00:20 CET (in 20 s)" in rows["wide"]
    assert (
        "agrees with Slurm on 1 of 3 jobs (1 xce starts it, Slurm waits; 1 Slurm starts it "
        "now, xce waits); 1 expected start(s) from Slurm compared with xce's only where xce "
        "plans" in " ".join(text.split())
    )


def test_job_shows_the_agreement(tmp_path: Path) -> None:
    path = _write(tmp_path, MIXED)
    info: dict[str, Any] = json.loads(_run(path, "--job", "qos", "--json").stdout)
    assert info["scheduler"] == "Slurm"
    assert info["agreement"]["kind"] == "dispatched_pending"
    text = _run(path, "--job", "qos").stdout
    assert "Slurm says  QOSMaxJobsPerUserLimit" in text
    assert "agrees       NO: xce starts it, Slurm waits: a limit" in " ".join(text.split("\n"))


def test_a_plain_state_shows_nothing_new(tmp_path: Path) -> None:
    """Without ``scheduler`` there is no agreement: no keys, no column, no summary."""
    path = _write(tmp_path, [_job()], scheduler=None)
    info = _decisions(path)
    assert "agreement" not in info["stats"]
    assert all("agreement" not in e for e in info["dispatched"] + info["pending"])
    text = _run(path).stdout
    assert "agrees" not in text
    assert "says" not in text
    detail = json.loads(_run(path, "--job", "j", "--json").stdout)
    assert "agreement" not in detail


def test_an_array_task_shares_its_records_reason(tmp_path: Path) -> None:
    """An array record's tasks (``a_1``, ``a_2``) are judged with the record's reason."""
    path = _write(tmp_path, [_job("a", tasks=1, array="1-2", reason="QOSMaxJobsPerUserLimit")])
    info = _decisions(path)
    ids = sorted(d["job"] for d in info["dispatched"])
    assert ids == ["a_1", "a_2"]
    for job in ids:
        found = _agreement(info, job)
        assert found["kind"] == "dispatched_pending"
        assert found["scheduler_reason"] == "QOSMaxJobsPerUserLimit"
