"""The victim-set iterator (issue 11): the ``lowest_priority_first`` preemptor against
probes whose answers are computed here, and the preemptor registry.

The probes model what the engine's probe answers: a job wanting ``need`` tasks, either
anywhere (the released slots add up) or on one host (``span[hosts=1]``: only one host's
release counts). Sufficiency is monotone in both, as the engine's is.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xce.errors import InputError, RegistryError
from xce.preempt import (
    LowestPriorityFirst,
    PreemptorRegistry,
    Victim,
    default_preemptors,
    preference,
)


@dataclass
class Probe:
    """``need`` tasks; ``free[h]`` slots free now; victims free their slots on their
    hosts (spread evenly). ``one_host``: the tasks must fit on one host."""

    need: int
    free: list[int]
    one_host: bool = False
    calls: int = 0
    bounds: int = 0
    asked: list[tuple[str, ...]] = field(default_factory=list)

    def _per_host(self, victims: Sequence[Victim]) -> list[int]:
        room = list(self.free)
        for v in victims:
            share, extra = divmod(v.slots, len(v.hosts))
            for k, h in enumerate(v.hosts):
                room[h] += share + (1 if k < extra else 0)
        return room

    def sufficient(self, victims: Sequence[Victim]) -> bool:
        self.calls += 1
        self.asked.append(tuple(v.id for v in victims))
        assert len({v.id for v in victims}) == len(victims), "a victim asked twice"
        room = self._per_host(victims)
        return max(room) >= self.need if self.one_host else sum(room) >= self.need

    def may_suffice(self, victims: Sequence[Victim]) -> bool:
        self.bounds += 1
        return sum(self.free) + sum(v.slots for v in victims) >= self.need


def victim(
    id: str, priority: int = 10, start: float = 0.0, slots: int = 1, hosts: tuple[int, ...] = (0,)
) -> Victim:
    return Victim(id, "low", priority, start, slots, hosts)


def sets(candidates: Sequence[Victim], probe: Probe) -> list[tuple[str, ...]]:
    return [tuple(v.id for v in s) for s in LowestPriorityFirst().victim_sets(candidates, probe)]


# -- table tests --------------------------------------------------------------------------


def test_one_big_low_priority_job_is_preferred_to_several_small_ones() -> None:
    """issue 11 (table): fewest victims first — one 8-slot job rather than four 2-slot
    jobs of the same priority, although the small ones are younger (ranked first)."""
    candidates = [victim("big", start=0, slots=8)] + [
        victim(f"s{i}", start=100 + i, slots=2) for i in range(4)
    ]
    probe = Probe(need=8, free=[0])
    assert sets(candidates, probe)[0] == ("big",)


def test_among_single_victims_the_lowest_priority_then_the_youngest_is_first() -> None:
    """issue 11 (preference): ties of size go to the lowest priority, then the latest
    start, then the id."""
    candidates = [
        victim("old", priority=10, start=0, slots=4),
        victim("young", priority=10, start=50, slots=4),
        victim("lower", priority=5, start=0, slots=4),
        victim("b", priority=5, start=0, slots=4),
    ]
    assert sets(candidates, Probe(need=4, free=[0])) == [("b",), ("lower",), ("young",), ("old",)]


def test_several_victims_are_minimal_and_lowest_priority_first() -> None:
    """issue 11: no single job frees enough; the set is the lowest-priority victims,
    with none that the others can do without."""
    candidates = [
        victim("p1", priority=1, slots=2),
        victim("p2", priority=2, slots=2),
        victim("p3", priority=3, slots=2),
        victim("p9", priority=9, slots=2),
    ]
    assert sets(candidates, Probe(need=5, free=[0]))[0] == ("p1", "p2", "p3")


def test_no_set_when_even_every_candidate_is_not_enough() -> None:
    """issue 11: the whole candidate set is asked once; if it is not sufficient, nothing
    is offered and no other set is tried."""
    probe = Probe(need=10, free=[1])
    assert sets([victim("a", slots=3), victim("b", slots=3)], probe) == []
    assert probe.calls == 0  # the cheap bound already said no


def test_no_candidates_no_set() -> None:
    assert sets([], Probe(need=1, free=[0])) == []


def test_the_release_must_land_where_the_job_can_use_it() -> None:
    """issue 11: with span[hosts=1], two victims on different hosts do not add up; the
    set is the two on one host."""
    candidates = [
        victim("a", slots=2, hosts=(0,), start=3),
        victim("b", slots=2, hosts=(1,), start=2),
        victim("c", slots=2, hosts=(1,), start=1),
    ]
    got = sets(candidates, Probe(need=4, free=[0, 0], one_host=True))
    assert got[0] == ("b", "c")


# -- properties ---------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[Victim], Probe]:
    n_hosts = draw(st.integers(1, 4))
    n = draw(st.integers(0, 7))
    candidates = [
        Victim(
            f"j{i}",
            "low",
            draw(st.integers(0, 3)),
            float(draw(st.integers(0, 5))),
            draw(st.integers(1, 6)),
            tuple(sorted(draw(st.sets(st.integers(0, n_hosts - 1), min_size=1)))),
        )
        for i in range(n)
    ]
    free = draw(st.lists(st.integers(0, 3), min_size=n_hosts, max_size=n_hosts))
    one_host = draw(st.booleans())
    # the engine asks only for a job that does not fit with no victim
    least = (max(free) if one_host else sum(free)) + 1
    need = draw(st.integers(least, least + 12))
    return candidates, Probe(need, free, one_host)


def _sufficient(probe: Probe, victims: Sequence[Victim]) -> bool:
    room = probe._per_host(victims)
    return max(room) >= probe.need if probe.one_host else sum(room) >= probe.need


@given(cases())
def test_every_set_offered_is_sufficient_minimal_and_distinct(
    case: tuple[list[Victim], Probe],
) -> None:
    """issue 11 (property): every set offered is non-empty, made of distinct candidates,
    sufficient, and minimal (dropping any one victim leaves it insufficient); a set is
    offered whenever some set is sufficient; the first set has the fewest victims of any
    sufficient set when one victim can do it; the answer is deterministic."""
    candidates, probe = case
    by_id = {v.id: v for v in candidates}
    got = sets(candidates, probe)
    for ids in got:
        assert ids
        assert len(set(ids)) == len(ids)
        members = [by_id[i] for i in ids]
        assert _sufficient(probe, members)
        for k in range(len(members)):
            assert not _sufficient(probe, members[:k] + members[k + 1 :]), (ids, k)
    assert len(set(got)) == len(got)
    assert bool(got) == _sufficient(probe, candidates)
    singles = sorted(((v,) for v in candidates if _sufficient(probe, [v])), key=preference)
    if singles and got:
        assert got[0] == (singles[0][0].id,)
    again = Probe(probe.need, probe.free, probe.one_host)
    assert sets(candidates, again) == got


@given(cases())
def test_offered_sets_come_in_preference_order(case: tuple[list[Victim], Probe]) -> None:
    """issue 11: best first, by the documented preference."""
    candidates, probe = case
    by_id = {v.id: v for v in candidates}
    keys = [preference(by_id[i] for i in ids) for ids in sets(candidates, probe)]
    assert keys == sorted(keys)


def test_fewest_victims_is_exact_for_small_cases() -> None:
    """issue 11: on every case of four victims of 1, 2 or 4 slots and every task count
    they can free, some set is offered, and it is a single victim whenever one
    suffices."""
    for slots in itertools.product((1, 2, 4), repeat=4):
        candidates = [victim(f"v{i}", slots=s, start=i) for i, s in enumerate(slots)]
        for need in range(1, sum(slots) + 1):
            got = sets(candidates, Probe(need=need, free=[0]))
            assert got, (slots, need)
            if max(slots) >= need:
                assert len(got[0]) == 1, (slots, need, got)


# -- registry -----------------------------------------------------------------------------


def test_registry_knows_the_builtin_and_refuses_duplicates_and_unknown_names() -> None:
    """issue 11: a registry like the pickers' and allocators' (entry-point group
    ``xce.preemptors``)."""
    registry = default_preemptors()
    assert "lowest_priority_first" in registry.names()
    assert isinstance(registry.get("lowest_priority_first"), LowestPriorityFirst)
    with pytest.raises(RegistryError):
        registry.register(LowestPriorityFirst())
    with pytest.raises(InputError, match="unknown preemptor 'nope'"):
        registry.get("nope")
    with pytest.raises(RegistryError):
        PreemptorRegistry().register(object())  # type: ignore[arg-type]
