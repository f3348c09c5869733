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
    hosts (spread evenly). ``one_host``: the tasks must fit on one host; ``ptile``: at
    most that many per host, all hosts but one full."""

    need: int
    free: list[int]
    one_host: bool = False
    ptile: int | None = None
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
        return _fits(self, self._per_host(victims))

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


def _fits(probe: Probe, room: list[int]) -> bool:
    """``need`` tasks on hosts of ``room``: on one host, in tiles of ``ptile`` per host
    (the last host fewer), or anywhere."""
    if probe.ptile is not None:
        full, rest = divmod(probe.need, probe.ptile)
        tiles = sum(r >= probe.ptile for r in room)
        return tiles >= full and (rest == 0 or sum(r >= rest for r in room) >= full + 1)
    return max(room) >= probe.need if probe.one_host else sum(room) >= probe.need


def _sufficient(probe: Probe, victims: Sequence[Victim]) -> bool:
    return _fits(probe, probe._per_host(victims))


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


# -- the fewest victims (issue 26) ----------------------------------------------------------


def _fewest(candidates: Sequence[Victim], probe: Probe) -> int | None:
    """The fewest victims any sufficient set has, by brute force."""
    for k in range(1, len(candidates) + 1):
        if any(_sufficient(probe, s) for s in itertools.combinations(candidates, k)):
            return k
    return None


@st.composite
def shaped_cases(draw: st.DrawFn) -> tuple[list[Victim], Probe]:
    """:func:`cases`, or the same with the tasks in tiles of ``span[ptile=p]``."""
    candidates, probe = draw(cases())
    ptile = draw(st.sampled_from([None, 2, 3, 4]))
    if ptile is not None:
        probe = Probe(probe.need, probe.free, ptile=ptile)
        if _sufficient(probe, []):
            probe.need += ptile * len(probe.free)  # the engine asks only when it does not fit
    return candidates, probe


@given(shaped_cases())
def test_the_first_set_has_the_fewest_victims_on_small_cases(
    case: tuple[list[Victim], Probe],
) -> None:
    """issue 26 (property): with up to six candidates (the bounded search covers all their
    sets) the first set offered has the fewest victims any sufficient set has (brute
    force); when the greedy sets were larger, it is the most preferred set of that size."""
    candidates, probe = case
    candidates = candidates[:6]
    got = sets(candidates, probe)
    fewest = _fewest(candidates, probe)
    if fewest is None:
        assert got == []
        return
    assert len(got[0]) == fewest, (got, fewest)
    by_id = {v.id: v for v in candidates}
    best = min(
        (s for s in itertools.combinations(candidates, fewest) if _sufficient(probe, s)),
        key=preference,
    )
    greedy = LowestPriorityFirst(fewest=False).victim_sets(
        candidates, Probe(probe.need, probe.free, probe.one_host, probe.ptile)
    )
    if len(next(iter(greedy))) == fewest:
        return  # the greedy set was the fewest already: it stands, as before
    assert preference(by_id[i] for i in got[0]) == preference(best)


def test_a_pair_is_found_where_the_greedy_sets_take_three() -> None:
    """issue 26 (table): 7 tasks at ``span[ptile=4]``: a host of 4 and one of 3. Rank
    order (z, p, q, r, s) stops at z, p, q (hosts 0 and 1 freed) and largest first
    (r, z, p, ...) at r, z, p (hosts 2 and 0): minimal sets of three; r and s free host
    2 (4) and host 3 (3 with its free slot): two."""
    candidates = [
        victim("z", slots=4, start=9, hosts=(0, 1)),
        victim("p", slots=2, start=8, hosts=(0,)),
        victim("q", slots=2, start=7, hosts=(1,)),
        victim("r", slots=4, start=2, hosts=(2,)),
        victim("s", slots=2, start=1, hosts=(3,)),
    ]
    got = sets(candidates, Probe(need=7, free=[0, 0, 0, 1], ptile=4))
    assert got[0] == ("r", "s")
    assert [len(s) for s in got[1:]] == [3, 3]


def test_the_search_gives_up_beyond_its_budget() -> None:
    """issue 26: with more candidates than the budget covers, the greedy sets stand
    (a budget of one probe: the pair is not found)."""
    from xce.preempt.fewest import fewer_victims

    candidates = [victim(f"v{i}", slots=2, start=i) for i in range(6)]
    probe = Probe(need=4, free=[0])
    assert fewer_victims(candidates, probe, 3) is not None
    assert fewer_victims(candidates, Probe(need=4, free=[0]), 3, max_sets=5) is None
    assert fewer_victims(candidates, Probe(need=6, free=[0]), 4, max_probes=0) is None
