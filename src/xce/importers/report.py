"""What an import mapped and what it could not: counts and a few examples of each."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

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


@dataclass(frozen=True, slots=True)
class ImportResult:
    """A state-file dict and the report of how it was made."""

    state: dict[str, Any]
    report: ImportReport

    @classmethod
    def of(cls, state: dict[str, Any], report: ImportReport) -> ImportResult:
        """The result of a filled :func:`empty_state`: its empty sections dropped."""
        return cls({k: v for k, v in state.items() if v}, report)
