"""The study API (issue 14): ``Simulation`` takes picker, preemptor and allocator-plugin
*objects* as well as names, so a researcher tries a policy without packaging it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from builders import ClusterBuilder
from xce.alloc import ParJobAllocator
from xce.core.pickers import StrictPicker
from xce.errors import InputError
from xce.preempt import Victim, VictimProbe
from xce.sim.engine import SimOptions, Simulation, verify
from xce.sim.model import SimJob


def _cluster() -> Any:
    return (
        ClusterBuilder()
        .queue("high", 50, preempts=["low"])
        .queue("low", 10)
        .hosts(2, slots=4)
        .build()
    )


JOBS = [
    SimJob("l1", 0, 100, 4, queue="low"),
    SimJob("l2", 1, 100, 4, queue="low"),
    SimJob("h", 10, 20, 4, queue="high"),
    SimJob("l3", 11, 5, 2, queue="low"),
    SimJob("l4", 12, 5, 8, queue="low"),
]


def _starts(options: SimOptions) -> dict[str, float | None]:
    result = Simulation(_cluster(), JOBS, options).run()
    verify(result, JOBS)
    return {r.job.id: r.start for r in result.records}


class MyStrict(StrictPicker):
    """strict under another name: a researcher's copy."""

    name = "my_strict"


def test_a_picker_object_is_used_as_its_name_would_be() -> None:
    """issue 14: ``SimOptions(picker=obj)`` schedules as the same picker by name: on one
    4-slot host, c (1 task) fits beside a at t=2 but waits behind b under strict."""
    cluster = ClusterBuilder().hosts(1, slots=4).build()
    jobs = [SimJob("a", 0, 100, 2), SimJob("b", 1, 10, 4), SimJob("c", 2, 10, 1)]

    def starts(picker: Any) -> dict[str, float | None]:
        result = Simulation(cluster, jobs, SimOptions(picker=picker)).run()
        return {r.job.id: r.start for r in result.records}

    assert starts(MyStrict()) == starts("strict") == {"a": 0, "b": 100, "c": 110}
    assert starts("fcfs") == {"a": 0, "b": 100, "c": 2}


def test_a_picker_object_may_not_shadow_a_registered_one() -> None:
    """issue 14: an object named like a registered picker but not it is refused."""

    class Fake(StrictPicker):
        name = "fcfs"

    with pytest.raises(InputError, match="already registered"):
        Simulation(_cluster(), JOBS, SimOptions(picker=Fake()))


class Never:
    """A preemptor that offers no victim set, and counts how often it is asked."""

    name = "never"

    def __init__(self) -> None:
        self.asked = 0

    def victim_sets(
        self, candidates: Sequence[Victim], probe: VictimProbe
    ) -> Iterator[tuple[Victim, ...]]:
        self.asked += 1
        return iter(())


def test_a_preemptor_object_decides_the_victims() -> None:
    """issue 14: ``SimOptions(preemptor=obj)``: with one that never offers a set, h waits
    for l1 to end instead of preempting l2."""
    never = Never()
    result = Simulation(_cluster(), JOBS, SimOptions(preemptor=never)).run()
    verify(result, JOBS)
    assert never.asked > 0
    assert result.stats.preemptions == 0
    default = Simulation(_cluster(), JOBS).run()
    assert default.stats.preemptions == 1


class CountingPar(ParJobAllocator):
    """The builtin parallel allocator's plans under another name, counting what it
    elects. Its prepare hook adds nothing: every plugin's hook runs for every host try
    (spec Req 4 AC 6), and the builtin one already adds the bucket's want."""

    name = "counting_par"

    def __init__(self) -> None:
        self.elected = 0

    def elect(self, primary: Any) -> bool:
        chosen = super().elect(primary)
        self.elected += chosen
        return chosen

    def prepare(self, ctx: Any) -> None:
        return None


def test_allocator_plugin_objects_are_tried_first() -> None:
    """issue 14: ``SimOptions(allocators=(obj,))``: the plugin elects the parallel
    primaries before the builtins, and the schedule is the builtin one (it is a copy)."""
    plugin = CountingPar()
    with_plugin = _starts(SimOptions(allocators=(plugin,)))
    assert plugin.elected > 0
    assert with_plugin == _starts(SimOptions())
