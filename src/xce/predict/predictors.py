"""The builtin runtime predictors: ``limit``, ``fraction`` and ``history``.

- ``limit``: a job runs to its limit (what ``squeue --start`` and every backfill plan
  assume). No spread.
- ``fraction[:F]``: a job runs ``F`` of its limit (default 0.5). No spread.
- ``history[:Q]``: Tsafrir, Etsion and Feitelson, "Backfilling using system-generated
  predictions rather than user runtime estimates" (IEEE TPDS 18(6), 2007): the mean of
  the runtimes of the user's last two finished jobs, capped at the job's limit; of the
  same user and job name when two such jobs are known (a name is a better key where the
  scheduler has one); the limit when the user has no finished job. Its spread is
  calibrated: every finished job's runtime is compared with what the predictor would
  have said of it just before it ended, and a draw is the point prediction times one of
  the user's last ratios (the site's, while the user has fewer than
  :data:`MIN_OWN_RATIOS`). With ``Q`` (a quantile, ``0 < Q < 1``) the point prediction
  is the base times the ``Q`` quantile of those ratios instead (``history:0.5``: the
  calibrated median).

A prediction a running job has outlived is raised as Tsafrir et al. do: by the first of
:data:`RAISES` that takes it past the time the job has run, capped at its limit.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable

import numpy as np

from xce.errors import InputError
from xce.predict.protocol import Asked, FinishedJob, RuntimePredictor, bounded

__all__ = [
    "MIN_OWN_RATIOS",
    "RAISES",
    "FractionPredictor",
    "HistoryPredictor",
    "LimitPredictor",
    "learn",
    "raised",
]

RAISES = (60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 18000.0, 36000.0, 72000.0, 180000.0)
"""Seconds added to a prediction a running job has outlived, tried in turn (1 min, 5 min,
15 min, 30 min, 1 h, 2 h, 5 h, 10 h, 20 h, 50 h); past the last, the job's limit."""

MIN_OWN_RATIOS = 8
"""A user's spread is their own once this many of their jobs have been calibrated."""

_KEEP_OWN = 64  # ratios kept per user
_KEEP_SITE = 2048  # ratios kept for the site


def raised(predicted: float, job: Asked) -> float:
    """``predicted``, raised past ``job.elapsed`` when the job has outlived it (a job
    that has not run yet has outlived nothing: a prediction of 0 s stays 0)."""
    if predicted > job.elapsed or predicted >= job.limit or job.elapsed == 0:
        return bounded(predicted, job)
    for step in RAISES:
        if predicted + step > job.elapsed:
            return bounded(predicted + step, job)
    return job.limit


def learn(predictor: RuntimePredictor, history: Iterable[FinishedJob]) -> RuntimePredictor:
    """``predictor`` after observing ``history`` in order of end time (ties: as given)."""
    for job in sorted(history, key=lambda j: j.end):
        predictor.observe(job)
    return predictor


def _no_option(name: str, option: str | None) -> None:
    if option is not None:
        raise InputError(f"predictor {name!r} takes no option (got {option!r})")


def _option_number(name: str, option: str, what: str) -> float:
    try:
        value = float(option)
    except ValueError:
        value = math.nan
    if not (0.0 < value < 1.0):
        raise InputError(
            f"predictor {name!r}: {what} must be a number between 0 and 1 "
            f"(exclusive), not {option!r}"
        )
    return value


class LimitPredictor:
    """Every job runs to its limit."""

    name = "limit"

    def fresh(self, option: str | None = None) -> LimitPredictor:
        _no_option(self.name, option)
        return LimitPredictor()

    def observe(self, job: FinishedJob) -> None:
        del job

    def predict(self, job: Asked) -> float:
        return job.limit

    def sample(self, job: Asked, rng: np.random.Generator) -> float:
        del rng
        return job.limit


class FractionPredictor:
    """Every job runs a fixed share of its limit."""

    name = "fraction"

    def __init__(self, share: float = 0.5) -> None:
        self.share = share

    def fresh(self, option: str | None = None) -> FractionPredictor:
        if option is None:
            return FractionPredictor(self.share)
        return FractionPredictor(_option_number(self.name, option, "the share of the limit"))

    def observe(self, job: FinishedJob) -> None:
        del job

    def predict(self, job: Asked) -> float:
        return raised(self.share * job.limit, job)

    def sample(self, job: Asked, rng: np.random.Generator) -> float:
        del rng
        return self.predict(job)


class HistoryPredictor:
    """The user's last two runtimes (see the module docstring)."""

    name = "history"

    def __init__(self, quantile: float | None = None) -> None:
        self.quantile = quantile
        self._user: dict[str, deque[float]] = {}
        self._named: dict[tuple[str, str], deque[float]] = {}
        self._own: dict[str, deque[float]] = {}  # user -> runtime / base prediction
        self._site: deque[float] = deque(maxlen=_KEEP_SITE)

    def fresh(self, option: str | None = None) -> HistoryPredictor:
        if option is None:
            return HistoryPredictor(self.quantile)
        return HistoryPredictor(_option_number(self.name, option, "the quantile"))

    # -- learning ---------------------------------------------------------------------
    def observe(self, job: FinishedJob) -> None:
        runtime = max(job.runtime, 0.0)
        limit = job.limit if job.limit is not None and job.limit > 0 else math.inf
        base = self._base(job.user, job.name, limit)
        if math.isfinite(base) and base > 0:
            ratio = runtime / base
            self._own.setdefault(job.user, deque(maxlen=_KEEP_OWN)).append(ratio)
            self._site.append(ratio)
        self._user.setdefault(job.user, deque(maxlen=2)).append(runtime)
        if job.name is not None:
            self._named.setdefault((job.user, job.name), deque(maxlen=2)).append(runtime)

    # -- predicting -------------------------------------------------------------------
    def predict(self, job: Asked) -> float:
        base = self._base(job.user, job.name, job.limit)
        if self.quantile is not None and math.isfinite(base):
            ratios = self._ratios(job.user)
            if ratios:
                base *= float(np.quantile(np.asarray(ratios), self.quantile))
        return raised(base, job)

    def sample(self, job: Asked, rng: np.random.Generator) -> float:
        base = self._base(job.user, job.name, job.limit)
        ratios = self._ratios(job.user)
        if not ratios or not math.isfinite(base):
            return raised(base, job)
        return raised(base * ratios[int(rng.integers(len(ratios)))], job)

    def _base(self, user: str, name: str | None, limit: float) -> float:
        """The mean of the last two runtimes (same name first), capped at ``limit``."""
        last = self._named.get((user, name)) if name is not None else None
        if last is None or len(last) < 2:
            last = self._user.get(user)
        if not last:
            return limit
        return min(sum(last) / len(last), limit)

    def _ratios(self, user: str) -> list[float] | deque[float]:
        own = self._own.get(user)
        if own is not None and len(own) >= MIN_OWN_RATIOS:
            return own
        return self._site
