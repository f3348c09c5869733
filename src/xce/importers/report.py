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


@dataclass(frozen=True, slots=True)
class ImportResult:
    """A state-file dict and the report of how it was made."""

    state: dict[str, Any]
    report: ImportReport
