"""The fewest victims, by an exact search within a budget (issue 26).

Why: the greedy sets of :mod:`xce.preempt.lowest` are minimal but not always the fewest
(in 4 of 15,000 random states one job more; a 7-task ``span[ptile=4]`` job preempted
three jobs where two would do). Finding the fewest is a set-cover problem, so the search
is bounded: it tries every set of ``k`` candidates for ``k = 2, 3, ...`` below the
greedy's size, while the sets of each size number at most :data:`MAX_SETS` in all and
the sufficiency probes (one allocation attempt each) at most :data:`MAX_PROBES`; beyond
that it gives up and the greedy sets stand.

Within a size, sets are probed in the documented preference order, so the first
sufficient one is the most preferred set of the fewest victims; it is minimal because
every smaller set was found insufficient. The cheap bound (``may_suffice``) rules sets
out without a probe.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from xce.preempt.protocol import VictimProbe
from xce.preempt.victims import Victim, preference, rank

__all__ = ["MAX_PROBES", "MAX_SETS", "fewer_victims"]

MAX_SETS = 4096
"""Candidate sets enumerated at most (all sizes together): C(91, 2) = 4095, so every
pair of up to 91 candidates, or every triple of up to 30."""

MAX_PROBES = 64
"""Sufficiency probes at most (each one allocation attempt on a view of the books): every
set of two to five of six candidates is 56, so up to six candidates the search is always
exact."""


def fewer_victims(
    candidates: Sequence[Victim],
    probe: VictimProbe,
    than: int,
    *,
    max_sets: int = MAX_SETS,
    max_probes: int = MAX_PROBES,
) -> tuple[Victim, ...] | None:
    """The most preferred sufficient set of fewer than ``than`` victims and of the fewest
    possible, in rank order; None when there is none, or when the budget ran out before
    the search could tell (no single victim suffices: the search starts at two)."""
    sets_left, probes_left = max_sets, max_probes
    for k in range(2, than):
        count = math.comb(len(candidates), k)
        if count > sets_left:
            return None
        sets_left -= count
        hopeful = [s for s in itertools.combinations(candidates, k) if probe.may_suffice(s)]
        hopeful.sort(key=preference)
        for victims in hopeful:
            if probes_left == 0:
                return None
            probes_left -= 1
            if probe.sufficient(victims):
                return tuple(sorted(victims, key=rank))
    return None
