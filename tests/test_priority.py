"""Slurm's multifactor priority (``xce.priority``, issue 28): settings by Slurm's names,
the association tree, Fair Tree and classic fair share on hand-computed cases, usage
decay, each factor, the ``multifactor`` picker's order, the core charging usage, the
state file (errors located, a snapshot keeps it) and ``xce schedule --job``'s factors.

Acceptance (issue 28), properties: "priorities are deterministic; usage decays to half
in one half-life; with all weights zero but age, the order is fcfs"; and, where
accounting cannot be compared, "check fairshare against the documented formula on
hand-computed cases".
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from xce.alloc import Dispatched
from xce.cli.main import app
from xce.cluster import ClusterState, state_from_dict
from xce.core import JobFinished, JobStarted, SchedulerCore, state_to_dict
from xce.errors import InputError
from xce.priority import (
    Association,
    AssocTree,
    UsageBook,
    config_from_mapping,
    config_from_slurm_conf,
    run_usage,
)
from xce.priority.multifactor import MultifactorPicker, sprio_row

NOW = 1_000_000.0
DAY = 86400.0


def state_of(
    jobs: list[dict[str, Any]],
    priority: dict[str, Any],
    *,
    hosts: int = 2,
    slots: int = 8,
    running: list[dict[str, Any]] | None = None,
    queues: dict[str, Any] | None = None,
) -> ClusterState:
    data: dict[str, Any] = {
        "now": NOW,
        "picker": "multifactor",
        "hosts": [{"name": f"n{i}", "slots": slots} for i in range(hosts)],
        "jobs": jobs,
        "priority": priority,
    }
    if running:
        data["running"] = running
    if queues:
        data["queues"] = queues
    return state_from_dict(data, "<test>")


def factors(state: ClusterState, job_id: str, at: float = NOW) -> Any:
    job = next(j for j in state.jobs if j.id == job_id)
    return MultifactorPicker().book(state, at).factors(job)


def session_order(state: ClusterState) -> list[str]:
    return [d.job for d in SchedulerCore(state).run_session().decisions]


# --- settings --------------------------------------------------------------------------


def test_settings_by_slurm_names_and_defaults() -> None:
    """Weights, times as Slurm writes them (days-h:m:s, or minutes), flags; Slurm
    22.05's defaults for the rest (7-day max age and half-life, Fair Tree on)."""
    cfg = config_from_mapping(
        {
            "PriorityWeightAge": 1000,
            "PriorityWeightFairshare": "10000",
            "PriorityMaxAge": "1-12:00:00",
            "PriorityDecayHalfLife": 60,
            "PriorityFavorSmall": "YES",
            "PriorityFlags": "NO_FAIR_TREE,ACCRUE_ALWAYS",
        }
    )
    assert (cfg.age, cfg.fairshare, cfg.jobsize) == (1000, 10000, 0)
    assert cfg.max_age == 1.5 * DAY
    assert cfg.half_life == 3600.0
    assert cfg.favor_small
    assert not cfg.fair_tree
    assert cfg.accrue_always
    default = config_from_mapping({})
    assert (default.max_age, default.half_life, default.fair_tree) == (7 * DAY, 7 * DAY, True)


def test_slurm_conf_lines_give_the_same_settings() -> None:
    """slurm.conf lines: other settings skipped, comments dropped, keys any case."""
    conf = """
    # scheduling
    SchedulerType=sched/backfill
    PriorityType=priority/multifactor
    priorityweightage=1000   PriorityWeightJobSize=500
    PriorityMaxAge=2-0  # two days
    """
    cfg = config_from_slurm_conf(conf.splitlines())
    assert (cfg.age, cfg.jobsize, cfg.max_age) == (1000, 500, 2 * DAY)


@pytest.mark.parametrize(
    ("settings_", "message"),
    [
        ({"PriorityWeightAge": -1}, "whole number"),
        ({"PriorityWeightAge": 1.5}, "whole number"),
        ({"PriorityMaxAge": "a week"}, "Slurm time"),
        ({"PriorityFlags": "FAIR_TREE,BOGUS"}, "unknown flag 'BOGUS'"),
        ({"PriorityFlags": "MAX_TRES"}, "does not model yet"),
        ({"PriorityType": "priority/basic"}, "use the fcfs picker"),
        ({"PriorityWightAge": 1}, "unknown setting"),
        ({"PriorityWeightTRES": "GRES/gpu=100"}, "cpu and node"),
    ],
)
def test_bad_settings_say_which(settings_: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        config_from_mapping(settings_)


def test_a_bad_slurm_conf_line_says_its_number() -> None:
    with pytest.raises(InputError, match=r"slurm.conf:3: PriorityWeightAge"):
        config_from_slurm_conf(["ClusterName=x", "", "PriorityWeightAge=lots"])


# --- Fair Tree and classic, hand-computed ------------------------------------------------


def fair_tree(*assocs: Association) -> dict[tuple[str, str | None], float]:
    tree = AssocTree(assocs)
    usage = tree.raw_usage({a.key: a.usage for a in assocs if a.usage is not None})
    return tree.fair_tree(usage)


def test_fair_tree_ties_keep_the_last_rank_given() -> None:
    """Slurm 22.05's Fair Tree on unused accounts A and B (LevelFS infinite, tied):
    u1, u2 under A and v1 under B all get rank 3 of 3 (a tie keeps the rank)."""
    got = fair_tree(
        Association("A"),
        Association("B"),
        Association("A", "u1", usage=0),
        Association("A", "u2", usage=0),
        Association("B", "v1", usage=0),
    )
    assert got == {("A", "u1"): 1.0, ("A", "u2"): 1.0, ("B", "v1"): 1.0}


def test_fair_tree_a_tied_account_carries_on_from_the_last_rank() -> None:
    """u2 used something (LevelFS 0.5 under A, which still ties B at infinity? no: A's
    usage makes A's LevelFS 0.5/1 = 0.5, B's infinite): B first, v1 rank 3; then A's u1
    (infinite) rank 2, u2 rank 1. Factors rank / 3."""
    got = fair_tree(
        Association("A"),
        Association("B"),
        Association("A", "u1", usage=0),
        Association("A", "u2", usage=10),
        Association("B", "v1", usage=0),
    )
    assert got == {("B", "v1"): 1.0, ("A", "u1"): 2 / 3, ("A", "u2"): 1 / 3}


def test_fair_tree_user_ties_within_an_account_and_the_next_account_inherits() -> None:
    """Under root: A (usage) and B (no usage, infinite) — B first. In B: w1 and w2 both
    unused (tied) get rank 4, w3 (used) rank 2 (two ranks were handed out). In A:
    x1 rank 1. Four users: factors rank / 4."""
    got = fair_tree(
        Association("A", shares=1),
        Association("B", shares=1),
        Association("B", "w1", usage=0),
        Association("B", "w2", usage=0),
        Association("B", "w3", usage=0),  # B is unused as a whole: see below
        Association("A", "x1", usage=50),
    )
    # B has no usage: every user in it has U = 0 (infinite LevelFS): all tied at 4
    assert got[("B", "w1")] == got[("B", "w2")] == got[("B", "w3")] == 1.0
    assert got[("A", "x1")] == 1 / 4


def test_fair_tree_orders_by_level_fs_users_before_accounts() -> None:
    """Siblings under root: user r (shares 1, usage 30 of 100: LevelFS (1/3)/(0.3)) and
    account P (shares 2, usage 70: (2/3)/0.7); P's users p1 (usage 70) and p2 (0). r's
    LevelFS 1.111 beats P's 0.952: r rank 3; then p2 (infinite) 2, p1 1."""
    got = fair_tree(
        Association("P", shares=2),
        Association("root", "r", shares=1, usage=30),
        Association("P", "p1", usage=70),
        Association("P", "p2", usage=0),
    )
    assert got == {("root", "r"): 1.0, ("P", "p2"): 2 / 3, ("P", "p1"): 1 / 3}


def test_classic_fair_share_is_two_to_the_minus_usage_over_shares() -> None:
    """Classic (NO_FAIR_TREE), two accounts under root (shares 3 and 1), one user
    each: S = 0.75 and 0.25; usage 60 and 40 of 100: UE(account) = 0.6 and 0.4, the
    user's UE = UN + (UE_parent - UN) * 1/1 = the parent's; F = 2^-(UE/S)."""
    tree = AssocTree(
        [
            Association("A", shares=3),
            Association("B", shares=1),
            Association("A", "a", usage=60),
            Association("B", "b", usage=40),
        ]
    )
    usage = tree.raw_usage({("A", "a"): 60.0, ("B", "b"): 40.0})
    got = tree.classic(usage, dampening=1)
    assert got[("A", "a")] == pytest.approx(2 ** -(0.6 / 0.75))
    assert got[("B", "b")] == pytest.approx(2 ** -(0.4 / 0.25))
    damped = tree.classic(usage, dampening=2)
    assert damped[("B", "b")] == pytest.approx(2 ** -(0.4 / 0.25 / 2))


def test_association_errors() -> None:
    with pytest.raises(InputError, match="account 'nope' is not declared"):
        AssocTree([Association("nope", "u")])
    with pytest.raises(InputError, match="given twice"):
        AssocTree([Association("A"), Association("A")])
    with pytest.raises(InputError, match="cycle"):
        AssocTree([Association("A", parent="B"), Association("B", parent="A")])


# --- usage and decay ---------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(st.floats(60, 365 * DAY), st.floats(1, 1e9))
def test_usage_decays_to_half_in_one_half_life(half_life: float, usage: float) -> None:
    """Property: usage left alone for one half-life is half what it was."""
    cfg = config_from_mapping({"PriorityDecayHalfLife": half_life / 60})
    tree = AssocTree([Association("A"), Association("A", "u", usage=usage)])
    book = UsageBook(tree, 0.0, cfg.decay)
    later = book.at(cfg.half_life, [])[("A", "u")]
    assert later == pytest.approx(usage / 2, rel=1e-6)


def test_running_work_is_charged_as_the_decayed_integral() -> None:
    """``b`` slots over ``[s, e]`` add ``b * (1 - decay**(e - s)) / -ln(decay)``; no
    decay: ``b * (e - s)``; a numeric integral agrees."""
    decay = 2 ** (-1 / 3600)
    got = run_usage(4, 100, 2000, decay)
    steps = 100_000
    dt = 1900 / steps
    numeric = sum(4 * decay ** (2000 - (100 + (i + 0.5) * dt)) * dt for i in range(steps))
    assert got == pytest.approx(numeric, rel=1e-6)
    assert run_usage(4, 100, 2000, 1.0) == 4 * 1900


def test_the_core_charges_finished_work_to_the_user_and_its_accounts() -> None:
    """A job of alice (physics) runs 8 slots for an hour: her association and physics
    and root gain the decayed integral; the input state's book is left alone."""
    prio = {
        "PriorityWeightFairshare": 1000,
        "PriorityDecayHalfLife": "7-0",
        "associations": [
            {"account": "physics"},
            {"account": "physics", "user": "alice", "usage": 0},
            {"account": "physics", "user": "bob", "usage": 0},
        ],
    }
    state = state_of([{"id": "a", "user": "alice", "project": "physics", "tasks": 8}], prio)
    core = SchedulerCore(state)
    d = core.run_session().decisions[0]
    assert isinstance(d, Dispatched)
    core.apply(JobStarted("a", d.allocation, NOW))
    core.apply(JobFinished("a", NOW + 3600))
    decay = state.priority.config.decay if state.priority else 1.0
    want = run_usage(8, NOW, NOW + 3600, decay)
    book = core.state.priority.usage if core.state.priority else None
    assert book is not None
    usage = book.at(NOW + 3600, [])
    assert usage[("physics", "alice")] == pytest.approx(want)
    assert usage[("physics", None)] == pytest.approx(want)
    assert usage[("root", None)] == pytest.approx(want)
    assert usage[("physics", "bob")] == 0
    assert state.priority is not None
    assert state.priority.usage.at(NOW + 3600, [])[("physics", "alice")] == 0


# --- factors -----------------------------------------------------------------------------


PRIO = {
    "PriorityWeightAge": 1000,
    "PriorityWeightJobSize": 1000,
    "PriorityWeightPartition": 1000,
    "PriorityWeightQOS": 1000,
    "PriorityWeightFairshare": 1000,
    "PriorityMaxAge": "1-0",
    "qos": {"normal": {"priority": 10}, "high": {"priority": 40}},
    "associations": [
        {"account": "a"},
        {"account": "a", "user": "u1", "usage": 0},
        {"account": "a", "user": "u2", "usage": 100},
    ],
}


def test_each_factor_as_slurm_documents_it() -> None:
    """Age: 6 h of a 1-day max; job size: (1 node / 2 + 4 slots / 16) / 2; partition:
    2 over the largest 4; QOS: 10 over 40; fair share: u1 unused ranks 2 of 2; nice
    taken off; the total truncated."""
    state = state_of(
        [
            {
                "id": "j",
                "user": "u1",
                "project": "a",
                "tasks": 4,
                "qos": "normal",
                "queue": "q2",
                "nice": 7,
                "submit_time": NOW - 6 * 3600,
            }
        ],
        PRIO,
        queues={"q2": {"priority_job_factor": 2}, "q4": {"priority_job_factor": 4}},
    )
    f = factors(state, "j")
    assert f.age == 0.25
    assert f.jobsize == (1 / 2 + 4 / 16) / 2
    assert f.partition == 0.5
    assert f.qos == 0.25
    assert f.fairshare == 1.0
    total = 0.25 * 1000 + 1.0 * 1000 + f.jobsize * 1000 + 0.5 * 1000 + 0.25 * 1000 - 7
    assert f.priority == int(total)
    row = sprio_row(f)
    assert row["AGE"] == "250"
    assert row["FAIRSHARE"] == "1000"
    assert row["NICE"] == "7"
    assert row["PRIORITY"] == int(total)


def test_age_counts_from_accrue_or_eligible_time_and_stops_at_the_max() -> None:
    """A given accrue time wins; else the begin time when later than submit; a held
    job has no age; past PriorityMaxAge the factor is 1."""
    jobs = [
        {"id": "acc", "submit_time": NOW - DAY, "accrue_time": NOW - 3600},
        {"id": "beg", "submit_time": NOW - DAY, "begin_time": NOW - 7200},
        {"id": "held", "submit_time": NOW - DAY, "hold": True},
        {"id": "old", "submit_time": NOW - 3 * DAY},
    ]
    state = state_of(jobs, {"PriorityWeightAge": 1000, "PriorityMaxAge": "1-0"})
    assert factors(state, "acc").age == 3600 / DAY
    assert factors(state, "beg").age == 7200 / DAY
    assert factors(state, "held").age == 0.0
    assert factors(state, "old").age == 1.0


def test_favor_small_and_small_relative_to_time() -> None:
    """PriorityFavorSmall: ((N - m)/N + (C - c)/C) / 2; SMALL_RELATIVE_TO_TIME:
    max(m*C/N, c) / minutes / C."""
    job = {"id": "j", "tasks": 4, "requested_time": 3600}
    small = state_of([job], {"PriorityWeightJobSize": 1, "PriorityFavorSmall": "YES"})
    assert factors(small, "j").jobsize == ((2 - 1) / 2 + (16 - 4) / 16) / 2
    rel = state_of([job], {"PriorityWeightJobSize": 1, "PriorityFlags": "SMALL_RELATIVE_TO_TIME"})
    assert factors(rel, "j").jobsize == max(1 * 16 / 2, 4) / 60 / 16


# --- the picker --------------------------------------------------------------------------


def test_the_session_tries_jobs_by_priority() -> None:
    """QOS weighs most here: the high-QOS job first, then fair share (u1 unused,
    1000, before u2, 500) over age (a day: 100)."""
    prio = dict(PRIO, PriorityWeightQOS=100_000, PriorityWeightAge=100)
    jobs = [
        {"id": "old_u2", "user": "u2", "project": "a", "submit_time": NOW - DAY},
        {"id": "new_u1", "user": "u1", "project": "a", "submit_time": NOW - 60},
        {"id": "high", "user": "u2", "project": "a", "submit_time": NOW, "qos": "high"},
    ]
    state = state_of(jobs, prio, hosts=1, slots=0)
    assert session_order(state) == ["high", "new_u1", "old_u2"]


def job_lists() -> st.SearchStrategy[list[dict[str, Any]]]:
    job = st.fixed_dictionaries(
        {
            "user": st.sampled_from(["u1", "u2"]),
            "tasks": st.integers(1, 8),
            "submit_time": st.integers(0, 10_000).map(lambda s: NOW - s),
            "qos": st.sampled_from(["normal", "high"]),
            "nice": st.integers(0, 50),
        }
    )
    return st.lists(job, min_size=1, max_size=12).map(
        lambda js: [dict(j, id=f"j{i}", project="a") for i, j in enumerate(js)]
    )


@settings(max_examples=40, deadline=None)
@given(job_lists())
def test_with_only_the_age_weight_the_order_is_fcfs(jobs: list[dict[str, Any]]) -> None:
    """Property: all weights zero but age (nice 0), the multifactor order is fcfs's."""
    plain = [dict(j, nice=0) for j in jobs]
    state = state_of(plain, {"PriorityWeightAge": 1000, "PriorityMaxAge": "7-0"}, slots=0)
    fcfs = state_from_dict(dict(state_to_dict(state), picker="fcfs"), "<fcfs>")
    assert session_order(state) == session_order(fcfs)


@settings(max_examples=30, deadline=None)
@given(job_lists())
def test_priorities_are_deterministic(jobs: list[dict[str, Any]]) -> None:
    """Property: the same state, loaded twice, gives every job the same factors and
    the session the same order."""
    one = state_of(jobs, PRIO, slots=0)
    two = state_of(jobs, PRIO, slots=0)
    assert [factors(one, j["id"]) for j in jobs] == [factors(two, j["id"]) for j in jobs]
    assert session_order(one) == session_order(two)


@settings(max_examples=40, deadline=None)
@given(
    job_lists(),
    st.lists(st.integers(0, 3 * int(DAY)), min_size=1, max_size=4),
    st.sampled_from([{}, {"PriorityWeightTRES": "cpu=500,node=300"}, {"PriorityWeightAssoc": 70}]),
)
def test_a_priority_alone_is_the_one_its_factors_give(
    jobs: list[dict[str, Any]], later: list[int], extra: dict[str, Any]
) -> None:
    """Property: the order's priority, worked out without the factors and with the jobs'
    time-free factors kept by the picker from one time to the next, is the total of the
    factors a fresh picker gives at that time."""
    running = [
        {
            "id": "r",
            "user": "u1",
            "project": "a",
            "alloc": [{"host": "n0", "slots": 2}],
            "start_time": NOW - 500,
        }
    ]
    state = state_of(jobs, dict(PRIO, **extra), running=running)
    kept = MultifactorPicker()
    for step in later:
        at = NOW + step
        book = kept.book(state, at)
        alone = [book.priority(j) for j in state.jobs]  # before any factors are asked
        fresh = MultifactorPicker().book(state, at)
        assert alone == [fresh.factors(j).priority for j in state.jobs]
        assert alone == [book.factors(j).priority for j in state.jobs]


# --- the state file ----------------------------------------------------------------------


def test_a_snapshot_keeps_the_priority_section_and_the_usage_at_its_time() -> None:
    """state_to_dict writes the settings, the tree and the usage at the state's time
    (running work charged up to it); loading it gives the same factors."""
    running = [
        {
            "id": "r",
            "user": "u2",
            "project": "a",
            "start_time": NOW - 3600,
            "alloc": [{"host": "n0", "slots": 8}],
        }
    ]
    jobs = [{"id": "p", "user": "u1", "project": "a"}, {"id": "q", "user": "u2", "project": "a"}]
    state = state_of(jobs, PRIO, running=running)
    again = state_from_dict(json.loads(json.dumps(state_to_dict(state))), "<again>")
    for job_id in ("p", "q"):
        assert factors(again, job_id).priority == factors(state, job_id).priority
        assert factors(again, job_id).fairshare == factors(state, job_id).fairshare


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "state.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("snippet", "where"),
    [
        ("priority:\n  PriorityWeightAge: -3\n", "priority.PriorityWeightAge"),
        ("priority:\n  PriorityFlags: BOGUS\n", "priority.PriorityFlags"),
        ("priority:\n  PriorityWightAge: 1\n", "PriorityWightAge"),
        (
            "priority:\n  associations:\n    - {account: x, user: u, parent: y}\n"
            "    - {account: ghost, user: v}\n",
            "priority.associations",
        ),
        (
            "priority:\n  qos: {normal: {priority: 1}}\njobs:\n  - {id: 1, qos: nope}\n",
            "jobs[0].qos",
        ),
        ("priority:\n  slurm_conf: |\n    PriorityWeightAge=x\n", "slurm_conf line:1"),
    ],
)
def test_bad_priority_sections_exit_2_with_a_location(
    tmp_path: Path, snippet: str, where: str
) -> None:
    path = write(tmp_path, "hosts: [{name: n, slots: 1}]\n" + snippet)
    result = CliRunner().invoke(app, ["schedule", path])
    assert result.exit_code == 2, result.output
    assert where in result.output
    assert "state.yaml" in result.output


def test_schedule_job_shows_each_factor_as_sprio(tmp_path: Path) -> None:
    """``xce schedule --job ID --json``: the factors, weighted values and sprio's row;
    the text view prints the sprio columns."""
    state = state_of(
        [{"id": "j", "user": "u1", "project": "a", "submit_time": NOW - 6 * 3600}], PRIO
    )
    path = tmp_path / "s.json"
    path.write_text(json.dumps(state_to_dict(state)))
    out = CliRunner().invoke(app, ["schedule", str(path), "--job", "j", "--json"])
    assert out.exit_code == 0, out.output
    info = json.loads(out.output)["priority"]
    assert info["factors"]["age"] == 0.25
    assert info["sprio"]["AGE"] == "250"
    assert info["association"] == {"account": "a", "user": "u1"}
    assert info["priority"] == factors(state, "j").priority
    text = CliRunner().invoke(app, ["schedule", str(path), "--job", "j"])
    assert text.exit_code == 0
    assert "sprio" in text.output
    assert "250" in text.output


def test_the_multifactor_picker_needs_a_priority_section(tmp_path: Path) -> None:
    path = write(tmp_path, "picker: multifactor\nhosts: [{name: n, slots: 1}]\njobs: [{id: 1}]\n")
    result = CliRunner().invoke(app, ["schedule", path])
    assert result.exit_code == 2, result.output
    assert "priority section" in result.output
    assert f"the cluster ({path}) has none" in result.output


def test_no_factor_is_nan() -> None:
    """A cluster without hosts' slots or usage anywhere gives finite factors."""
    state = state_of([{"id": "j"}], PRIO, hosts=1, slots=0)
    f = factors(state, "j")
    assert all(math.isfinite(v) for v in f.weighted.values())


# --- the picker's option: the same site under other settings -----------------------------


def test_a_picker_option_is_the_state_with_those_settings() -> None:
    """``multifactor:PriorityWeightQOS=0 PriorityFlags=NO_FAIR_TREE`` orders a session
    exactly as the state whose priority section says so."""
    jobs = [
        {"id": "old_u2", "user": "u2", "project": "a", "submit_time": NOW - DAY},
        {"id": "new_u1", "user": "u1", "project": "a", "submit_time": NOW - 60},
        {"id": "high", "user": "u2", "project": "a", "submit_time": NOW, "qos": "high"},
    ]
    prio = dict(PRIO, PriorityWeightQOS=100_000, PriorityWeightAge=100)
    state = state_of(jobs, prio, hosts=1, slots=0)
    option = "multifactor:PriorityWeightQOS=0 PriorityFlags=NO_FAIR_TREE"
    got = [d.job for d in SchedulerCore(state, picker=option).run_session().decisions]
    edited = dict(prio, PriorityWeightQOS=0, PriorityFlags="NO_FAIR_TREE")
    want = session_order(state_of(jobs, edited, hosts=1, slots=0))
    assert got == want
    assert got != session_order(state)  # the option did change the order


@pytest.mark.parametrize(
    ("picker", "message"),
    [
        ("multifactor:Bogus=1", "'Bogus=1' is not a priority setting"),
        ("multifactor:PriorityDecayHalfLife=10", "accounting"),
        ("multifactor:PriorityWeightAge=lots", "PriorityWeightAge"),
        ("fcfs:x", "takes no option"),
        ("nope:x", "unknown picker"),
    ],
)
def test_bad_picker_options_exit_2(tmp_path: Path, picker: str, message: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(state_to_dict(state_of([{"id": "j"}], PRIO))))
    result = CliRunner().invoke(app, ["schedule", str(path), "--picker", picker])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_tres_factors_divide_by_the_partitions_totals() -> None:
    """PriorityWeightTRES=CPU=1000,Node=100: a 8-task job of partition batch (hosts
    tagged partition_batch: 2 of 4, 16 slots) gets 8/16 of the cpu weight and 1/2 of
    the node weight, not the cluster's 8/32 and 1/4; a job of an untagged queue
    divides by the whole cluster's."""
    data: dict[str, Any] = {
        "now": NOW,
        "resources": {"partition_batch": {"kind": "boolean"}},
        "hosts": [
            {"name": f"n{i}", "slots": 8, "attributes": {"partition_batch": i < 2}}
            for i in range(4)
        ],
        "jobs": [
            {"id": "b", "queue": "batch", "tasks": 8},
            {"id": "o", "queue": "other", "tasks": 8},
        ],
        "priority": {"PriorityWeightTRES": "CPU=1000,Node=100"},
    }
    state = state_from_dict(data, "<tres>")
    b, o = factors(state, "b"), factors(state, "o")
    assert b.tres == {"cpu": 0.5, "node": 0.5}
    assert b.weighted_tres == {"cpu": 500.0, "node": 50.0}
    assert o.tres == {"cpu": 0.25, "node": 0.25}


def test_sprio_keeps_a_sum_that_lands_on_an_integer() -> None:
    """sprio re-adds the weighted factors after Slurm's wire format (x * 1e6 / 1e6 in
    doubles): 1000 + 5000 + 291.666... + 333.333... + 1000 sums to 7625, as sprio
    printed for such a job on a real Slurm 22.05 (truncating on the wire gave 7624)."""
    from xce.priority.multifactor import Factors

    weighted = {
        "AGE": 1000.0,
        "ASSOC": 0.0,
        "FAIRSHARE": 5000.0,
        "JOBSIZE": 291.66666666666663,
        "PARTITION": 333.3333333333333,
        "QOS": 1000.0,
    }
    f = Factors(0, 0, 0, 0, 0, 0, {}, 0, weighted, {}, 7625, None)
    assert sprio_row(f)["PRIORITY"] == 7625
