"""Reading a results directory for ``xce report`` (:func:`load_results`): what ``xce
simulate --out`` writes (a *replay*), what ``xce compare --out`` writes (a *comparison*),
a sweep's ``results.csv``, or a directory whose subdirectories are replays; and, for
calendar time and logged waits, the SWF trace they replayed.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from xce.errors import InputError
from xce.inputs import MAX_DEPTH, read_input_text
from xce.sim.files import COMPARE_JOBS
from xce.sim.model import JobRecord, SimJob
from xce.sim.swf import MAX_TRACE_BYTES

__all__ = [
    "CELLS",
    "Kind",
    "Results",
    "Run",
    "finite",
    "load_results",
    "read_trace_facts",
]

Kind = Literal["replay", "replays", "compare", "sweep"]

DAY = 86400.0
HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class Run:
    """One policy's replay: its metrics object (``metrics.json``) and, when the
    directory has them, its per-job records (``jobs.csv``)."""

    policy: str
    metrics: dict[str, Any]
    records: tuple[JobRecord, ...] | None


@dataclass(frozen=True, slots=True)
class Results:
    """What a results directory holds, read and checked."""

    kind: Kind
    directory: Path
    workload: str
    runs: tuple[Run, ...]
    plot_files: tuple[Path, ...] = ()  # plots already there (a comparison's overlays)
    sweep: tuple[tuple[str, ...], ...] = ()  # results.csv: the header, then the rows
    calendar_start: float | None = None  # the trace's UnixStartTime
    logged: dict[str, float] | None = None  # the trace's logged wait of each job id
    trace_note: str = ""  # why there is no calendar time or logged wait


# -- reading ---------------------------------------------------------------------------


def load_results(
    directory: Path, *, trace: Path | None = None, policy: str | None = None
) -> Results:
    """Read ``directory`` (see the module docstring). ``trace``: the SWF trace replayed,
    for its ``UnixStartTime`` and logged waits (default: the one the results name, when
    it is there). ``policy``: the name of a replay's policy (default: ``metrics.json``'s
    ``policy``). A directory with none of the expected files, or a corrupt one, is an
    :class:`InputError` naming the file."""
    if not directory.is_dir():
        raise InputError(f"RESULTS {directory}: not a directory")
    kind, workload, runs, extra = _read_kind(directory, policy)
    if policy is not None and kind != "replay":
        raise InputError(
            f"--policy names one replay's policy, and RESULTS {directory} holds {_KINDS[kind]},"
            " whose runs name their own"
        )
    named = Path(workload) if workload.endswith((".swf", ".swf.gz")) else None
    start, logged, note = _trace_facts(trace, named, directory)
    return Results(
        kind,
        directory,
        Path(workload).name,
        tuple(runs),
        tuple(extra.get("plots", ())),
        tuple(extra.get("sweep", ())),
        start,
        logged,
        note,
    )


_KINDS: dict[Kind, str] = {
    "sweep": "a sweep (results.csv)",
    "compare": "a comparison (compare.json)",
    "replays": "a directory of replays",
}
"""What each kind of RESULTS but a lone replay is, for a message."""


def _read_kind(directory: Path, policy: str | None) -> tuple[Kind, str, list[Run], dict[str, Any]]:
    if (directory / "results.csv").is_file():
        return _read_sweep(directory / "results.csv")
    if (directory / "compare.json").is_file():
        return _read_compare(directory)
    if (directory / "metrics.json").is_file():
        run, workload = _read_replay(directory, policy)
        return "replay", workload, [run], {}
    subs = sorted(d for d in directory.iterdir() if (d / "metrics.json").is_file())
    if subs:
        pairs = [_read_replay(d, d.name) for d in subs]
        return "replays", pairs[0][1], [run for run, _ in pairs], {}
    raise InputError(
        f"RESULTS {directory}: none of results.csv (xce sweep), compare.json (xce compare "
        "--out), metrics.json and jobs.csv (xce simulate --out), nor subdirectories of replays"
    )


def _read_json(path: Path) -> dict[str, Any]:
    return _parse_json(read_input_text(path), str(path))


def _parse_json(text: str, source: str, line: int = 1, what: str = "") -> dict[str, Any]:
    """The JSON object ``text`` (of ``source``, starting at its ``line``), refused
    located when it is not JSON, not an object or nests deeper than MAX_DEPTH (which
    the decoder would meet with a RecursionError). ``what`` prefixes the messages."""
    deep = _too_deep(text)
    if deep is not None:
        at, column = deep
        raise InputError(
            f"{what}nested deeper than {MAX_DEPTH} levels (lists and objects inside each other)",
            source=source,
            line=line + at - 1,
            column=column if at > 1 or line == 1 else None,
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        lines = text.split("\n")  # the line after a last newline is one too (empty)
        raise InputError(
            f"{what}not valid JSON: {err.msg}",
            source=source,
            line=line + err.lineno - 1,
            column=err.colno if line == 1 else None,
            text=lines[err.lineno - 1].rstrip("\r")
            if line == 1 and err.lineno <= len(lines)
            else None,
        ) from None
    if not isinstance(data, dict):
        raise InputError(f"{what}expected a JSON object", source=source, line=line)
    return data


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
"""A JSON string (skipped: it may hold brackets) or a bracket."""


def _too_deep(text: str) -> tuple[int, int] | None:
    """(line, column) of the first list or object of ``text`` nested deeper than
    MAX_DEPTH, if any. Results nest a few levels; a text with fewer brackets than the
    limit is not scanned."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return None
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH:
                at = match.start()
                return text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
        elif token in ("]", "}"):
            depth -= 1
    return None


def _read_csv(path: Path, *, whole_lines: bool = False) -> list[list[str]]:
    """The rows of a CSV file, each as long as its header; ``whole_lines``: a last line
    without its newline (a row still being appended) is left out."""
    text = read_input_text(path)
    if whole_lines:
        text = text[: text.rfind("\n") + 1]
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows or not rows[0]:
        raise InputError("an empty table: expected a header line", source=str(path), line=1)
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(rows[0]):
            raise InputError(
                f"{len(row)} fields where the header has {len(rows[0])}",
                source=str(path),
                line=number,
            )
    return rows


CELLS = "cells"
"""A sweep's kept jobs (``xce sweep --keep-jobs``): ``OUT/cells/<cell>/jobs.csv``, where
``<cell>`` is the row's ``cell`` column (the cell id)."""

_SWEEP_NEEDED = ("cell", "policy", "metrics")
_SWEEP_TEXT = ("cell", "workload", "cluster", "policy", "options", "metrics")
"""The columns of a sweep's results.csv the report needs, and those that hold text;
every other column holds a number (or nothing)."""

_CELL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _read_sweep(path: Path) -> tuple[Kind, str, list[Run], dict[str, Any]]:
    """A sweep's results table (``xce sweep --out``): its rows as they are, and a run
    per cell, named by its ``cell`` column, with the cell's ``metrics.json`` object (the
    ``metrics`` column) and, when the sweep kept them, its jobs (:data:`CELLS`)."""
    table = _read_csv(path, whole_lines=True)
    header = table[0]
    missing = [c for c in _SWEEP_NEEDED if c not in header]
    if missing:
        raise InputError(
            f"not a results table of xce sweep: the header lacks {', '.join(missing)}",
            source=str(path),
            line=1,
        )
    at = header.index("metrics")
    varying = {
        c for k, c in enumerate(header) if c != "policy" and len({r[k] for r in table[1:]}) > 1
    }
    runs = []
    for number, row in enumerate(table[1:], start=2):
        named = dict(zip(header, row, strict=True))
        for column, text in named.items():
            if column not in _SWEEP_TEXT and text and finite(text) is None:
                raise InputError(
                    f"{column} {text!r} is not a number", source=str(path), line=number
                )
        metrics = _parse_json(row[at], str(path), number, "the metrics column: ")
        _check_metrics(metrics, str(path), "metrics.", number)
        label = _cell_label(named, varying) or f"row {number}"
        runs.append(Run(label, metrics, _cell_jobs(path.parent, named["cell"])))
    table = [row[:at] + row[at + 1 :] for row in table]
    return "sweep", _sweep_workload(table), runs, {"sweep": [tuple(r) for r in table]}


def _cell_jobs(directory: Path, cell: str) -> tuple[JobRecord, ...] | None:
    """The kept jobs of a sweep's ``cell``, or None when the sweep did not keep them
    (a cell column that is not a plain name is never made a path)."""
    if not _CELL_NAME.fullmatch(cell):
        return None
    jobs = directory / CELLS / cell / "jobs.csv"
    return _records(jobs) if jobs.is_file() else None


def _cell_label(row: dict[str, str], varying: set[str]) -> str:
    """A sweep cell's name in titles and legends: its policy and what else tells it
    from the other cells (``fcfs+easy on 3x4, seed 1, interval 60``: only the columns
    that vary); its ``cell`` id when nothing else is there."""
    parts = [row.get("policy", "")]
    if row.get("cluster") and "cluster" in varying:
        parts[0] += f" on {row['cluster']}"
    if row.get("workload") and "workload" in varying:
        parts.append(Path(row["workload"]).name)
    if row.get("seed") and "seed" in varying:
        parts.append(f"seed {row['seed']}")
    if row.get("options") not in (None, "", "-") and "options" in varying:
        parts.append(row["options"])
    if row.get("repetition") not in (None, "", "0") and "repetition" in varying:
        parts.append(f"repetition {row['repetition']}")
    return ", ".join(p for p in parts if p) or row.get("cell", "")


def _sweep_workload(table: list[list[str]]) -> str:
    if "workload" not in table[0]:
        return "sweep"
    column = table[0].index("workload")
    names = sorted({Path(row[column]).name for row in table[1:]})
    return ", ".join(names) if names else "sweep"


def _read_compare(directory: Path) -> tuple[Kind, str, list[Run], dict[str, Any]]:
    path = directory / "compare.json"
    data = _read_json(path)
    policies = data.get("policies")
    if not isinstance(data.get("workload"), str) or not isinstance(policies, list):
        raise InputError('expected "workload" (a string) and "policies" (a list)', source=str(path))
    runs = []
    for k, entry in enumerate(policies):
        if not (isinstance(entry, dict) and isinstance(entry.get("metrics"), dict)):
            raise InputError(
                "expected a policy with its metrics", source=str(path), path=f"policies[{k}]"
            )
        _check_metrics(entry["metrics"], str(path), f"policies[{k}].metrics.")
        runs.append(Run(str(entry.get("policy", f"policy {k + 1}")), entry["metrics"], None))
    jobs = directory / COMPARE_JOBS
    if jobs.is_file():  # written since xce compare --out keeps every policy's jobs
        by_policy = _records_by_policy(jobs)
        missing = [r.policy for r in runs if r.policy not in by_policy]
        if missing:
            raise InputError(f"no jobs of policy {missing[0]!r} of compare.json", source=str(jobs))
        runs = [Run(r.policy, r.metrics, by_policy[r.policy]) for r in runs]
    files = sorted(
        p
        for p in directory.iterdir()
        if p.name.startswith("compare_") and p.suffix in (".png", ".svg")
    )
    return "compare", data["workload"], runs, {"plots": files}


def _read_replay(directory: Path, policy: str | None) -> tuple[Run, str]:
    """A replay's run; its policy as given, else as its metrics name it (``policy``,
    which ``xce simulate`` writes; older results lack it)."""
    metrics = _read_json(directory / "metrics.json")
    _check_metrics(metrics, str(directory / "metrics.json"))
    named = metrics.get("policy")
    policy = policy or (named if isinstance(named, str) else "not recorded (see --policy)")
    jobs = directory / "jobs.csv"
    if not jobs.is_file():
        raise InputError(
            f"{directory}: metrics.json without jobs.csv (xce simulate --out writes both)"
        )
    records = _records(jobs)
    trace = metrics.get("trace")
    source = trace.get("source") if isinstance(trace, dict) else None
    workload = source if isinstance(source, str) else _swf_workload(directory) or directory.name
    return Run(policy, metrics, records), workload


_GROUP_NUMBERS = ("jobs", "mean_wait_s", "median_wait_s", "p95_wait_s", "mean_bsld")


def _check_metrics(
    metrics: dict[str, Any], source: str, prefix: str = "", line: int | None = None
) -> None:
    """Refuse, at its JSON path, what the page reads from a metrics object and cannot
    use: ``total_slots`` not a positive number, ``by_queue``/``by_user`` not objects of objects
    of numbers (or nulls)."""

    def bad(path: str, expected: str) -> InputError:
        return InputError(f"expected {expected}", source=source, path=prefix + path, line=line)

    slots = metrics.get("total_slots")
    if slots is not None and not (_is_number(slots) and slots > 0):
        raise bad("total_slots", "a positive number (the cluster's slots)")
    for key in ("by_queue", "by_user"):
        groups = metrics.get(key)
        if groups is None:
            continue
        if not isinstance(groups, dict):
            raise bad(key, "an object (a queue or user each)")
        for name, group in groups.items():
            if not isinstance(group, dict):
                raise bad(f"{key}.{name}", "an object of numbers")
            for field in _GROUP_NUMBERS:
                value = group.get(field)
                if value is not None and not _is_number(value):
                    raise bad(f"{key}.{name}.{field}", "a number or null")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _swf_workload(directory: Path) -> str | None:
    """The workload named in schedule.swf's header (``; Computer: the xce replay of W``)."""
    swf = directory / "schedule.swf"
    if not swf.is_file():
        return None
    with swf.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith(";"):
                break
            if line.startswith("; Computer: the xce replay of "):
                return line.removeprefix("; Computer: the xce replay of ").strip()
    return None


_NEEDED = ("job", "submit", "start", "end", "runtime", "tasks", "queue", "user", "hosts")
_NUMBERS = (
    "submit",
    "start",
    "end",
    "wait",
    "runtime",
    "tasks",
    "bsld",
    "killed",
    "preempted",
    "backfilled",
    "planned_start",
)
"""The columns of ``jobs.csv`` that hold a number or nothing: each is checked when the
header has it, whether or not a figure reads it (a table with ``planned_start=abc`` is
not one ``xce simulate`` wrote)."""


def _records(path: Path) -> tuple[JobRecord, ...]:
    """The rows of a ``jobs.csv`` as records (enough of them for every figure)."""
    return tuple(record for _, record in _rows_of(path, ()))


def _records_by_policy(path: Path) -> dict[str, tuple[JobRecord, ...]]:
    """A comparison's ``compare_jobs.csv``: each policy's records, in workload order."""
    out: dict[str, list[JobRecord]] = {}
    for (policy,), record in _rows_of(path, ("policy",)):
        out.setdefault(policy, []).append(record)
    return {policy: tuple(records) for policy, records in out.items()}


def _rows_of(path: Path, keys: tuple[str, ...]) -> list[tuple[tuple[str, ...], JobRecord]]:
    """Each row of a jobs table as (its ``keys`` columns, its record)."""
    rows = _read_csv(path)
    header = rows[0]
    missing = [c for c in (*keys, *_NEEDED) if c not in header]
    if missing:
        raise InputError(f"the header lacks {', '.join(missing)}", source=str(path), line=1)
    at = {c: header.index(c) for c in _NEEDED}
    numbers = [(c, header.index(c)) for c in _NUMBERS if c in header]
    key_at = [header.index(k) for k in keys]
    out = []
    for number, row in enumerate(rows[1:], start=2):
        for column, i in numbers:
            if row[i] and finite(row[i]) is None:
                raise InputError(
                    f"{column} {row[i]!r} is not a number", source=str(path), line=number
                )
        out.append((tuple(row[i] for i in key_at), _record(row, at)))
    return out


def _record(row: list[str], at: dict[str, int]) -> JobRecord:
    """A checked row (:data:`_NUMBERS`) as a record."""

    def number(column: str) -> float | None:
        text = row[at[column]]
        return float(text) if text else None

    tasks = int(number("tasks") or 0)
    job = SimJob(
        row[at["job"]],
        number("submit") or 0.0,
        number("runtime") or 0.0,
        tasks or None,
        user=row[at["user"]],
        queue=row[at["queue"]],
    )
    return JobRecord(
        job, number("start"), number("end"), tuple(row[at["hosts"]].split()), slots=tasks
    )


def _trace_facts(
    given: Path | None, named: Path | None, directory: Path
) -> tuple[float | None, dict[str, float] | None, str]:
    """(UnixStartTime, logged waits by job id, a note when either is missing)."""
    path = given
    if path is None and named is not None:
        candidates = [named, directory / named.name]
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            return (
                None,
                None,
                f"The trace {named} is not here: pass --trace for calendar time and logged waits.",
            )
    if path is None:
        return None, None, "Not an SWF trace: simulated time, no logged waits."
    start, logged = read_trace_facts(path)
    return start, logged or None, "" if logged else f"{path.name} logs no waits."


def read_trace_facts(path: Path) -> tuple[float | None, dict[str, float]]:
    """An SWF trace's ``UnixStartTime`` header and the logged wait (field 3) of each job
    whose wait is known, by job id as ``xce simulate`` names it."""
    text = read_input_text(path, max_bytes=MAX_TRACE_BYTES, what="trace")
    start: float | None = None
    logged: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(";"):
            key, _, value = line.lstrip(";").partition(":")
            if key.strip() == "UnixStartTime":
                start = finite(value.split()[0] if value.split() else "")
            continue
        fields = line.split()
        wait = finite(fields[2]) if len(fields) == 18 else None
        job = finite(fields[0]) if len(fields) == 18 else None
        if wait is not None and wait >= 0 and job is not None:
            logged[str(int(job))] = wait
    return start, logged


def finite(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
