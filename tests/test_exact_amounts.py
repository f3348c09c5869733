"""Exact resource arithmetic (issue 9): amounts counted in units of a per-resource
resolution, so no sum drifts and no comparison needs a tolerance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import ClusterBuilder
from xce.alloc import Claim, Dispatched, JobAllocation, Pending
from xce.cluster import PendingJob, load_state, state_from_dict
from xce.cluster.units import check_resolution, grid_error
from xce.core import JobFinished, JobStarted, JobSubmitted, SchedulerCore, Session
from xce.errors import EventError, InputError


def _decisions(doc: dict[str, object]) -> dict[str, object]:
    return {d.job: d for d in Session(state_from_dict(doc)).run().decisions}


def test_subtraction_does_not_drift_into_a_select() -> None:
    """Issue 9 (E2_float_drift_in_select): 4000 - 2000 - 3 x 333.3 - 0.1 is exactly 1000,
    so select[mem>=1000] dispatches the last job."""
    doc = {
        "hosts": [{"name": "h", "slots": 8, "resources": {"mem": 4000}}],
        "jobs": [
            {"id": "j1", "resreq": "rusage[mem=2000]"},
            {"id": "j2", "tasks": 3, "resreq": "rusage[mem=333.3]"},
            {"id": "j3", "resreq": "rusage[mem=0.1]"},
            {"id": "j4", "resreq": "select[mem>=1000] rusage[mem=1000]"},
            {"id": "j5", "resreq": "rusage[mem=0.000001]"},
        ],
    }
    got = _decisions(doc)
    assert all(isinstance(got[j], Dispatched) for j in ("j1", "j2", "j3", "j4"))
    assert isinstance(got["j5"], Pending)  # exactly nothing is left, not 1e-13
    j2 = got["j2"]
    assert isinstance(j2, Dispatched)
    assert j2.allocation.claims[0].amounts == (("mem", 999.9),)  # no 999.9000000000001


@pytest.mark.parametrize(
    ("capacity", "resolution", "message"),
    [
        (0.25, 0.1, "finer than its resolution 0.1"),
        (0.99999999925, None, "finer than its resolution 1e-06"),
        (1e12, None, "too large to count exactly"),
    ],
)
def test_an_amount_off_its_grid_is_refused_where_it_is(
    capacity: float, resolution: float | None, message: str
) -> None:
    """Issue 9: an amount the resolution cannot count exactly is an input error naming
    where it is (never silently rounded)."""
    doc: dict[str, object] = {"hosts": [{"name": "h", "slots": 1, "resources": {"mem": capacity}}]}
    if resolution is not None:
        doc["resources"] = {"mem": {"kind": "consumable", "resolution": resolution}}
    with pytest.raises(InputError) as err:
        state_from_dict(doc)
    assert message in str(err.value)
    assert "hosts[0].resources.mem" in str(err.value)


def test_a_declared_resolution_counts_finer_amounts(tmp_path: Path) -> None:
    """Issue 9 (eps_bounds): with resolution 1e-11, 0.99999999925 is exact, and 2 tasks of
    0.5 do not fit it (they would with the old 1e-9 slack): the job takes 1+1+1+1."""
    doc = {
        "resources": {"mem": {"kind": "consumable", "resolution": 1e-11}},
        "hosts": [
            {"name": "h1", "slots": 2, "resources": {"mem": 0.99999999925}},
            {"name": "h2", "slots": 1, "resources": {"mem": 0.5}},
            {"name": "h3", "slots": 1, "resources": {"mem": 0.5}},
        ],
        "jobs": [{"id": "j1", "tasks": 3, "resreq": "rusage[mem=0.5]"}],
    }
    path = tmp_path / "state.json"
    path.write_text(json.dumps(doc))
    (d,) = Session(load_state(path)).run().decisions
    assert isinstance(d, Dispatched)
    assert [(c.host, c.slots) for c in d.allocation.claims] == [(0, 1), (1, 1), (2, 1)]


def test_a_rusage_finer_than_the_resolution_is_a_located_requirement_error() -> None:
    """Issue 9: a requirement's amount off its resource's grid is refused at submission."""
    doc = {
        "resources": {"mem": {"kind": "consumable", "resolution": 0.1}},
        "hosts": [{"name": "h", "slots": 1, "resources": {"mem": 10}}],
        "jobs": [{"id": "j", "resreq": "rusage[mem=0.05]"}],
    }
    with pytest.raises(InputError) as err:
        Session(state_from_dict(doc)).run()
    assert "finer than its resolution 0.1" in str(err.value)


@pytest.mark.parametrize(
    ("value", "ok"),
    [(1.0, True), (0.1, True), (1e-12, True), (1e-13, False), (0.5, False), (10.0, False)],
)
def test_resolutions_are_powers_of_ten(value: float, ok: bool) -> None:
    """Issue 9: a resolution is a power of ten from 1e-12 to 1."""
    assert (check_resolution(value) is None) is ok


def test_a_bad_declared_resolution_names_its_path() -> None:
    """Issue 9: a bad resolution is an input error at resources.<name>.resolution."""
    doc = {"resources": {"mem": {"kind": "consumable", "resolution": 0.3}}, "hosts": []}
    with pytest.raises(InputError) as err:
        state_from_dict(doc)
    assert "resources.mem.resolution" in str(err.value)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([333.3, 0.1, 0.25, 2.5, 1.7, 1000.0]), min_size=1, max_size=40))
def test_starting_and_ending_jobs_leaves_exactly_nothing_held(amounts: list[float]) -> None:
    """Issue 9 (float drift in the core): any sequence of fractional holdings started and
    ended gives back exactly the empty host, whatever the order."""
    state = ClusterBuilder().host("h", slots=64, mem=100_000).build()
    core = SchedulerCore(state)
    for i, amount in enumerate(amounts):
        core.apply(_submitted(f"j{i}"))
        alloc = JobAllocation((Claim(0, 1, (("mem", amount),)),))
        core.apply(JobStarted(f"j{i}", alloc, time=0.0))
    assert core.state.held("mem")[0] == pytest.approx(sum(amounts))
    for i in reversed(range(len(amounts))):
        core.apply(JobFinished(f"j{i}", 1.0))
    assert core.state.used["mem"][0] == 0.0  # exactly: units
    assert core.state.free("mem")[0] == 100_000.0


def _submitted(job_id: str) -> JobSubmitted:
    return JobSubmitted(PendingJob(job_id, "u", "normal", "default", 1, 1, "", 0.0, None, 0))


def test_an_event_amount_off_the_grid_is_refused() -> None:
    """Issue 9: JobStarted with an amount the resolution cannot count is an EventError and
    changes nothing."""
    state = (
        ClusterBuilder()
        .resource("mem", "consumable")
        .host("h", slots=4, mem=100)
        .job("j", 1)
        .build()
    )
    core = SchedulerCore(state)
    bad = JobAllocation((Claim(0, 1, (("mem", 1e-9),)),))
    with pytest.raises(EventError, match="finer than its resolution"):
        core.apply(JobStarted("j", bad, time=0.0))
    assert core.running("j") is None
    assert core.state.used["mem"][0] == 0.0


def test_grid_error_messages() -> None:
    """Issue 9: what an off-grid or too large amount is told."""
    assert grid_error(333.3, 1e6, "mem") is None
    assert "finer" in str(grid_error(0.0000005, 1e6, "mem"))
    assert "too large" in str(grid_error(1e10, 1e6, "mem"))
    assert "finite" in str(grid_error(float("inf"), 1e6, "mem"))


def test_grid_error_on_numbers_beyond_any_float() -> None:
    """Issue 10 (fuzzer: crash-amount-overflows-units): amounts whose units overflow a
    float, or ints beyond any float, are 'too large', never an OverflowError."""
    assert "too large" in str(grid_error(1e303, 1e6, "mem"))
    assert "too large" in str(grid_error(10**400, 1e6, "mem"))  # type: ignore[arg-type]
    assert "400 digits" in str(grid_error(10**399, 1.0, "mem"))  # type: ignore[arg-type]


def test_a_job_of_more_tasks_than_any_float_pends() -> None:
    """Issue 9/10 (fuzzer: crash-huge-int-job-tasks): a job submitted through the core
    with 10**100 tasks pends (NEVER_RUNNABLE), it does not crash the session."""
    core = SchedulerCore(ClusterBuilder().host("h", slots=2).build())
    huge = PendingJob("j", "u", "normal", "default", 10**100, 10**100, "", 0.0, None, 0)
    core.apply(JobSubmitted(huge))
    (d,) = core.run_session().decisions
    assert isinstance(d, Pending)
    assert d.info.cause is not None
    assert d.info.hosts == {"NOT_ENOUGH_SLOTS": 1}
