"""What an import mapped and what it could not: counts and a few examples of each."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from xce.errors import InputError

EXAMPLES = 3


@dataclass(slots=True)
class ImportReport:
    """Counts of mapped items and, per kind of problem, its count and first examples.

    A skipped item is never silently dropped: it is counted under ``skipped`` with its
    location (file and JSON path)."""

    mapped: Counter[str] = field(default_factory=Counter)
    warnings: dict[str, list[str]] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    reasons: dict[str, str] = field(default_factory=dict)  # job id -> the scheduler's reason

    def count(self, what: str, n: int = 1) -> None:
        self.mapped[what] += n

    def warn(self, kind: str, example: str) -> None:
        self.counts[kind] += 1
        examples = self.warnings.setdefault(kind, [])
        if len(examples) < EXAMPLES:
            examples.append(example)

    def lines(self) -> list[str]:
        """The report as text lines (for stderr)."""
        out = ["import: " + ", ".join(f"{n} {what}" for what, n in sorted(self.mapped.items()))]
        for kind, examples in self.warnings.items():
            out.append(f"warning: {kind}: {self.counts[kind]} (e.g. {'; '.join(examples)})")
        return out


def empty_state(scheduler: str) -> dict[str, Any]:
    """The state-file dict an importer fills: memory declared consumable per task
    (per CPU), the sections in the state file's order, and the scheduler's name (the
    label of its jobs' reasons). Empty sections are dropped at the end
    (:meth:`ImportResult.of`)."""
    return {
        "resources": {"mem": {"kind": "consumable", "reservation": "per_task"}},
        "hosts": [],
        "queues": {},
        "running": [],
        "jobs": [],
        "reservations": [],
        "scheduler": scheduler,
    }


def settle_now(state: dict[str, Any], report: ImportReport, *, given: bool) -> None:
    """A state holds only jobs submitted and started by its ``now`` (the loader refuses
    others). A capture whose own time is before one of its jobs' (documents taken
    apart, clocks apart) is reported and given the latest of those times as its now;
    a time the user gave (``given``) is refused, naming the job."""
    now = state.get("now")
    if now is None:
        return
    late = [(float(j.get("submit_time", 0)), f"job {j['id']!r} submitted") for j in state["jobs"]]
    late += [(float(r.get("start_time", 0)), f"job {r['id']!r} started") for r in state["running"]]
    after = [(t, what) for t, what in late if t > now]
    if not after:
        return
    latest, what = max(after)
    if given:
        raise InputError(
            f"the given now (--now) {now:.17g} is before {what} at {latest:.17g}: a state "
            "holds only the jobs submitted and started by its now"
        )
    report.warn(
        "jobs submitted or started after the capture's time (now taken as the latest)",
        f"{what} at {latest:.17g}, {latest - now:.6g} s after {now:.17g}",
    )
    state["now"] = latest


@dataclass(frozen=True, slots=True)
class ImportResult:
    """A state-file dict and the report of how it was made."""

    state: dict[str, Any]
    report: ImportReport

    @classmethod
    def of(cls, state: dict[str, Any], report: ImportReport) -> ImportResult:
        """The result of a filled :func:`empty_state`: its empty sections dropped."""
        return cls({k: v for k, v in state.items() if v}, report)
