"""The simulator against careless or hostile input (issue 10, "Nothing lost, nothing
hangs"): session intervals that once hung, bounded and located trace and jobs-file
errors, one utilisation figure, and the shortcuts a picker declares rather than a name.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Sequence

import pytest

from xce.cli.simulate_cmd import uniform_cluster
from xce.cluster import ClusterState, PendingJob, Queue
from xce.core.pickers import (
    FcfsPicker,
    PickerTraits,
    QueueCursor,
    StrictPicker,
    default_pickers,
    picker_traits,
)
from xce.errors import InputError
from xce.sim.engine import (
    MIN_INTERVAL,
    SimOptions,
    SimResult,
    Simulation,
    next_session_time,
    verify,
)
from xce.sim.model import SimJob

# --- sessions every --interval -------------------------------------------------------------

_RUN_WITH_INTERVAL = """
import sys
from xce.cli.simulate_cmd import uniform_cluster
from xce.sim.engine import SimOptions, Simulation, verify
from xce.sim.model import SimJob
jobs = [SimJob(str(i), float(i), 7.0, 1 + i % 2) for i in range(60)]
result = Simulation(uniform_cluster(2, 1), jobs, SimOptions(interval=float(sys.argv[1]))).run()
verify(result, jobs)
print(sum(r.start is not None for r in result.records))
"""


@pytest.mark.parametrize("interval", [3.3, 0.7, 1.1])
def test_interval_replay_ends(interval: float) -> None:
    """Issue 10, hang: ``--interval 3.3`` (0.7, 1.1) never ended, as the next session
    time ``(floor(now/iv)+1)*iv`` rounded back to ``now``. The replay runs in a child
    process so that a hang fails this test (after a generous guard) instead of the suite."""
    done = subprocess.run(
        [sys.executable, "-c", _RUN_WITH_INTERVAL, str(interval)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["60"]


@pytest.mark.parametrize("interval", [3.3, 0.7, 1.1, 10.0, MIN_INTERVAL, 1e9])
def test_session_times_strictly_increase(interval: float) -> None:
    """Issue 10, hang: every session time is a whole multiple of the interval and
    strictly after the time it follows, at every session time (where rounding bit) and
    between them."""
    for k in range(3000):
        for now in (k * interval, k * interval + interval / 3):
            after = next_session_time(now, interval)
            assert after > now
            assert after <= now + interval * 1.000001
            assert after == round(after / interval) * interval


def test_session_times_past_float_resolution_still_advance() -> None:
    """Issue 10, hang: an interval finer than the float resolution of ``now`` still gives
    a later time (the multiple grows until it is past ``now``)."""
    now = 1e15  # its float resolution is 0.125 s
    assert next_session_time(now, MIN_INTERVAL) > now


@pytest.mark.parametrize(
    ("interval", "message"),
    [
        (math.nan, "finite"),
        (math.inf, "finite"),
        (-math.inf, "finite"),
        (0.0, "at least"),
        (-5.0, "at least"),
        (1e-300, "at least"),
    ],
)
def test_bad_interval_is_input_error(interval: float, message: str) -> None:
    """Issue 10, hang: ``--interval nan/inf`` raised ValueError and ``1e-300`` an internal
    error; from the API too, a non-finite or too small interval is an InputError."""
    jobs = [SimJob("a", 0, 5, 1)]
    with pytest.raises(InputError, match=message):
        Simulation(uniform_cluster(1, 1), jobs, SimOptions(interval=interval))


# --- shortcuts a picker declares ----------------------------------------------------------


class _DeclaredFcfs:
    """A plugin picker ordering as fcfs and saying so."""

    name = "declared-fcfs"
    monotone_in_session = True
    blocks_queue_at_head = False

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return FcfsPicker().start(queue, jobs, state)


class _PlainFcfs:
    """The same order, with nothing declared."""

    name = "plain-fcfs"

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return FcfsPicker().start(queue, jobs, state)


class _DeclaredStrict:
    name = "declared-strict"
    monotone_in_session = True
    blocks_queue_at_head = True

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return StrictPicker().start(queue, jobs, state)


class _PlainStrict:
    name = "plain-strict"

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return StrictPicker().start(queue, jobs, state)


class _BlocksOnly:
    """Claims to block at its head but not to be monotone: no shortcut at all."""

    name = "blocks-only"
    monotone_in_session = False
    blocks_queue_at_head = True

    def start(self, queue: Queue, jobs: Sequence[PendingJob], state: ClusterState) -> QueueCursor:
        return StrictPicker().start(queue, jobs, state)


def test_picker_traits() -> None:
    """Issue 10, policy knowledge in the policy: the builtins declare what they promise;
    an undeclared (or non-True) attribute promises nothing; blocking alone gives nothing."""
    builtins = default_pickers(plugins=False)
    assert picker_traits(builtins.get("fcfs")) == PickerTraits(True, False)
    assert picker_traits(builtins.get("strict")) == PickerTraits(True, True)
    assert picker_traits(builtins.get("fairshare")) == PickerTraits(False, False)
    assert picker_traits(_PlainFcfs()) == PickerTraits(False, False)
    assert picker_traits(_BlocksOnly()) == PickerTraits(False, False)


def _busy_workload() -> list[SimJob]:
    """A long job holds the cluster while many more arrive, one at a time."""
    jobs = [SimJob("long", 0, 500, 2)]
    jobs += [SimJob(f"j{i}", 1 + i, 20 + i % 7, 1 + i % 2) for i in range(60)]
    return jobs


def _replay(picker: object, jobs: list[SimJob]) -> tuple[SimResult, dict[str, float]]:
    registry = default_pickers(plugins=False)
    registry.register(picker)  # type: ignore[arg-type]
    sim = Simulation(
        uniform_cluster(2, 1),
        jobs,
        SimOptions(picker=picker.name, single_queue=True),  # type: ignore[attr-defined]
        pickers=registry,
    )
    result = sim.run()
    verify(result, jobs)
    return result, {r.job.id: r.start for r in result.records if r.start is not None}


@pytest.mark.parametrize(
    ("declared", "plain", "builtin"),
    [(_DeclaredFcfs(), _PlainFcfs(), "fcfs"), (_DeclaredStrict(), _PlainStrict(), "strict")],
    ids=["fcfs-like", "strict-like"],
)
def test_plugin_picker_gets_the_shortcut_it_declares(
    declared: object, plain: object, builtin: str
) -> None:
    """Issue 10, policy knowledge in the policy: the engine once special-cased the names
    ``fcfs``/``strict``. A plugin picker declaring ``monotone_in_session`` (and
    ``blocks_queue_at_head``) gets the exact shortcuts: the same schedule as the builtin
    and the undeclared twin, with the same (fewer) decisions as the builtin; the
    undeclared twin is tried in full every session."""
    jobs = _busy_workload()
    fast, fast_starts = _replay(declared, jobs)
    slow, slow_starts = _replay(plain, jobs)
    reference = Simulation(
        uniform_cluster(2, 1), jobs, SimOptions(picker=builtin, single_queue=True)
    ).run()
    assert fast_starts == slow_starts
    assert fast_starts == {r.job.id: r.start for r in reference.records if r.start is not None}
    assert fast.stats.decisions == reference.stats.decisions
    assert fast.stats.decisions < slow.stats.decisions


def test_blocking_without_monotone_gets_no_shortcut() -> None:
    """Issue 10, policy knowledge in the policy: ``blocks_queue_at_head`` without
    ``monotone_in_session`` promises nothing the engine can use."""
    jobs = _busy_workload()
    blocks, _ = _replay(_BlocksOnly(), jobs)
    plain, _ = _replay(_PlainStrict(), jobs)
    assert blocks.stats.decisions == plain.stats.decisions
