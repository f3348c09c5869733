"""Small helpers shared by the benchmark scripts (not part of the package)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Result:
    """One measured figure, with the target it is held against (if any)."""

    name: str
    value: float
    unit: str
    target: float | None = None  # higher is better when set
    at_most: float | None = None  # lower is better when set (a time budget)

    @property
    def verdict(self) -> str:
        if self.at_most is not None:
            return "ok" if self.value <= self.at_most else "OVER BUDGET"
        if self.target is None:
            return ""
        return "ok" if self.value >= self.target else "BELOW TARGET"


def best_of(repeats: int, fn: Callable[[], object]) -> float:
    """The fastest of ``repeats`` wall-clock timings of ``fn()``, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best
