"""Loading a workload: an SWF trace, or a jobs file (YAML/JSON/JSONL).

A jobs file is the ``jobs`` list of a state file (design §4) where every job also has a
``runtime`` (and may have a ``requested_time``): ``{"jobs": [...]}`` in YAML or JSON,
or one job object per line in JSONL. Errors name the file, the path and the line. A job's
``dependency`` (Slurm's syntax) and ``name`` are a state file's; ``failed: true`` (a
jobs file's own key, :mod:`xce.sim.jobkeys`) says it ends unsuccessfully (issue 28:
:mod:`xce.sim.flow`). Its gates and priority inputs (``hold``, ``begin_time``,
``priority``, ``qos``, ``nice``, ``nodes``, ``accrue_time``) are kept for the core to
honour; what a replay cannot model (a range of task counts, an array record, further
queues, a reservation) is refused at its key, never dropped (docs/simulation.md).

Every requirement is parsed, and its task counts bound, when the file is loaded: a bad
one is an error at its line, with a caret under the column. Given the cluster's catalog,
the names it uses are checked too; else the simulation checks them before it starts
(:class:`~xce.sim.engine.Simulation`), naming the job's file (``SimJob.source``) and,
for JSONL, whose lines cost nothing to tell, its line (``SimJob.line``). The file is read
through :mod:`xce.inputs`: a regular file of at most ``MAX_INPUT_BYTES``.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from xce.cluster import (
    PendingJob,
    RequirementCheck,
    ResourceCatalog,
    state_from_dict,
    state_from_text,
)
from xce.errors import InputError, clip
from xce.inputs import read_input_text
from xce.sim.checks import qos_problem
from xce.sim.files import SYNTHETIC
from xce.sim.flow import FlowError, check_flow
from xce.sim.jobkeys import (
    as_written,
    expected_keys,
    take_failed,
    take_failed_item,
    with_expected_keys,
)
from xce.sim.model import KEPT_FOR_THE_CORE, SimJob
from xce.sim.swf import SwfTrace, read_swf

if TYPE_CHECKING:
    from xce.cluster import ClusterState

__all__ = [
    "JOBS_FILE_SUFFIXES",
    "is_swf",
    "job_to_dict",
    "load_jobs_file",
    "load_workload",
    "replay_jobs",
    "synthetic_count",
    "write_jobs_file",
]


def _load_check(catalog: ResourceCatalog | None) -> RequirementCheck:
    """The check of a requirement at load time: its syntax and task counts, and with
    ``catalog`` the names it uses (else they are checked when the simulation starts)."""
    from xce.resreq import requirement_for_job  # late: resreq imports cluster modules

    def check(text: str, low: int | None, high: int | None) -> None:
        requirement_for_job(text, catalog, low, high)

    return check


def synthetic_count(spec: str) -> int:
    """N of ``synthetic:N``, within 0..MAX_GENERATED_JOBS."""
    from xce.sim.generate import MAX_GENERATED_JOBS

    try:
        count = int(spec[len(SYNTHETIC) :])
    except ValueError:
        count = -1
    if not 0 <= count <= MAX_GENERATED_JOBS:
        raise InputError(
            f"--workload {spec!r}: expected synthetic:N with a whole number N "
            f"from 0 to {MAX_GENERATED_JOBS:,}"
        )
    return count


def replay_jobs(
    spec: str, cluster: ClusterState | None, seed: int, limit: int | None, lenient: bool
) -> tuple[list[SimJob], SwfTrace | None]:
    """The jobs of a replay's workload as ``xce simulate --workload SPEC`` reads them
    for ``cluster`` (None: not known yet; names are then checked when the simulation
    starts): ``synthetic:N`` generated with ``seed``, an SWF trace (with the trace:
    its header and skip counts), or a jobs file; ``limit`` jobs at most."""
    if spec.startswith(SYNTHETIC):
        from xce.sim.generate import generate_workload  # late: it imports this module

        return generate_workload(synthetic_count(spec), seed=seed, cluster=cluster), None
    has_mem = cluster is not None and "mem" in cluster.hosts.capacity
    options: dict[str, object] = (
        {"limit": limit, "lenient": lenient, "memory": has_mem} if is_swf(spec) else {}
    )
    if is_swf(spec):
        jobs, trace = load_workload(spec, **options)
    else:  # a jobs file: requirements checked against the cluster's names at load
        catalog = cluster.catalog if cluster is not None else None
        known = cluster.priority.qos if cluster is not None and cluster.priority else {}
        jobs, trace = load_jobs_file(spec, catalog=catalog, qos=known), None
    if limit is not None and trace is None:
        jobs = jobs[:limit]
    return jobs, trace


def is_swf(path: str) -> bool:
    return path.endswith((".swf", ".swf.gz"))


def _sim_job(
    job: PendingJob, source: str, where: str, line: int | None = None, failed: bool = False
) -> SimJob:
    if job.runtime is None:
        raise InputError(
            f"job {clip(job.id)!r} needs a runtime to be simulated", source=source, path=where
        )
    if job.reservation is not None:  # a SimJob has nowhere to keep it: refuse, not drop
        raise InputError(
            f"job {clip(job.id)!r} names reservation {clip(job.reservation)!r}, but a "
            "replay's job cannot name one (the --cluster file's reservations hold in a "
            "replay: list the job's user, queue or project on the reservation instead)",
            source=source,
            path=f"{where}.reservation",
        )
    _refuse_unreplayed(job, source, where)
    for name, value in (
        ("submit_time", job.submit_time),
        ("begin_time", job.begin_time),
        ("accrue_time", job.accrue_time),
        ("runtime", job.runtime),
        ("requested_time", job.requested_time),
    ):
        if value is not None and not math.isfinite(value):
            raise InputError(
                f"job {clip(job.id)!r}: {name} must be a finite number",
                source=source,
                path=f"{where}.{name}",
            )
    return SimJob(
        id=job.id,
        submit=job.submit_time,
        runtime=job.runtime,
        tasks=job.max_tasks if job.tasks_given else None,
        user=job.user,
        queue=job.queue,
        project=job.project,
        resreq=job.resreq,
        requested_time=job.requested_time,
        dependency=job.dependency,
        name=job.name,
        failed=failed,
        source=source,
        line=line,
        **{f: getattr(job, f) for f, _ in KEPT_FOR_THE_CORE},
    )


def _check_qos(job: SimJob, known: Collection[str], source: str, where: str) -> None:
    """``job``'s QOS is one of the cluster's (``known``; none: any), at ``where.qos``."""
    problem = qos_problem(job, known)
    if problem is not None:
        raise InputError(problem, source=source, path=f"{where}.qos")


def _refuse_unreplayed(job: PendingJob, source: str, where: str) -> None:
    """Refuse, rather than drop, what a state file's job may say and a replay cannot
    model: a range of task counts (the replay runs a job on one count, and its runtime is
    for that count), an array record (a replay's jobs are single jobs: its tasks are
    jobs of their own), further queues (a replay's job is in one queue)."""
    refused: tuple[str, str] | None = None
    if job.tasks_given and job.min_tasks != job.max_tasks:
        refused = (
            "max_tasks",
            f"asks for {job.min_tasks} to {job.max_tasks} tasks, but a replay runs a job on "
            "one task count (its runtime is for that count): give tasks: N",
        )
    elif job.array is not None:
        refused = (
            "array",
            f"is an array record (array: {clip(job.array.text())}), but a replay's jobs are "
            "single jobs: give each task as a job of its own",
        )
    elif job.also_queues:
        refused = (
            "also_queues",
            "may run in further queues (also_queues), but a replay puts each job in one "
            "queue: give it only its queue",
        )
    if refused is not None:
        key, why = refused
        raise InputError(f"job {clip(job.id)!r} {why}", source=source, path=f"{where}.{key}")


def load_jobs_file(
    path: str | os.PathLike[str],
    *,
    catalog: ResourceCatalog | None = None,
    qos: Collection[str] = (),
) -> list[SimJob]:
    """Jobs of a ``.yaml``/``.yml``/``.json``/``.jsonl`` jobs file, in file order. Every
    requirement is checked here (against ``catalog`` too, when given), and each QOS
    against the cluster's names ``qos`` (none: any); a bad one is an :class:`InputError`
    at its line and column."""
    source = os.fspath(path)
    if not source.endswith((".json", ".jsonl", ".yaml", ".yml")):
        raise InputError(
            "unknown jobs file type: expected .yaml, .yml, .json or .jsonl", source=source
        )
    text = read_input_text(source, compressed=False, what="jobs file")
    check = _load_check(catalog)
    if source.endswith(".jsonl"):
        return _jsonl(text, source, check, qos)
    fmt: Literal["json", "yaml"] = "json" if source.endswith(".json") else "yaml"
    written, (text, failed) = text, take_failed(text, source)
    try:
        state = state_from_text(text, source, fmt, check_resreq=check)
    except InputError as err:
        shown = with_expected_keys(err if text is written else as_written(err, written, text))
        if shown is err:
            raise
        raise shown from None
    try:
        jobs = [
            _sim_job(j, source, f"jobs[{i}]", failed=failed.get(i, False))
            for i, j in enumerate(state.jobs)
        ]
        for i, job in enumerate(jobs):
            _check_qos(job, qos, source, f"jobs[{i}]")
        check_flow(jobs)  # who waits for whom, now that the lines can still be told
    except FlowError as err:
        index = next(i for i, j in enumerate(jobs) if j is err.job)
        raise _at_job(err, index, text, written, len(jobs)) from None
    except InputError as err:
        index = int((err.path or "jobs[0]").split("[")[1].split("]")[0])
        raise _at_job(err, index, text, written, len(state.jobs)) from None
    return jobs


def _at_job(err: InputError, index: int, text: str, written: str, count: int) -> InputError:
    """``err`` at the line where job ``index`` starts (``text`` as read, ``written`` as
    the file has it), or, when it names a key of the job (``jobs[1].array``), at that
    key's line and column."""
    nodes = _job_nodes(text, count)  # slow (PyYAML): only for an error
    if nodes is None:
        return err
    node = nodes[index]
    line, column = int(node.start_mark.line) + 1, None
    found = _key_mark(node, err.path)
    if found is not None:
        line, column = found
    shown = written.split("\n")[line - 1]
    return err.located(line=line, column=column, text=shown)


def _job_nodes(text: str, count: int) -> list[Any] | None:
    """The composed node of each of the ``count`` jobs (YAML composes JSON too); None if
    they cannot be told."""
    import yaml

    try:
        root = yaml.compose(text)
    except (yaml.YAMLError, RecursionError):
        return None
    for key, value in getattr(root, "value", []):
        if getattr(key, "value", None) == "jobs" and len(value.value) == count:
            return list(value.value)
    return None


def _key_mark(node: Any, path: str | None) -> tuple[int, int] | None:
    """The 1-based (line, column) in a job's composed ``node`` of the key ``path`` ends
    in (``jobs[1].array``: ``array``); None when the path names no key of it."""
    if path is None or "." not in path:
        return None
    key = path.rsplit(".", 1)[1]
    for name, _ in getattr(node, "value", []):
        if getattr(name, "value", None) == key:
            return int(name.start_mark.line) + 1, int(name.start_mark.column) + 1
    return None


def _line_node(line: str) -> Any:
    """One JSONL line composed (YAML composes JSON), or None if it cannot be."""
    import yaml

    try:
        return yaml.compose(line)
    except (yaml.YAMLError, RecursionError):
        return None


def _jsonl(text: str, source: str, check: RequirementCheck, qos: Collection[str]) -> list[SimJob]:
    jobs: list[SimJob] = []
    seen: dict[str, int] = {}  # job id -> its line
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        item, failed = take_failed_item(_json_line(line, source, number), source, number, line)
        try:
            state = state_from_dict({"jobs": [item]}, source, check_resreq=check)
        except InputError as err:
            raise _jsonl_error(err, line, item, number, source) from None
        try:
            job = _sim_job(state.jobs[0], source, "jobs[0]", number, failed)
            _check_qos(job, qos, source, "jobs[0]")
        except InputError as err:
            raise _jsonl_error(err, line, item, number, source) from None
        first = seen.setdefault(job.id, number)
        if first != number:
            raise InputError(
                f"job ids must be unique: job {clip(job.id)!r} is on line {first} already",
                source=source,
                path="job.id",
                line=number,
                text=line,
            )
        jobs.append(job)
    check_flow(jobs)  # (its errors name the job's line)
    return jobs


def _json_line(line: str, source: str, number: int) -> object:
    """One JSONL line parsed; a duplicate key, nesting too deep for the parser or an
    integer too long to convert is refused as JSON errors are."""
    try:
        return json.loads(line, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as err:
        raise InputError(
            f"not JSON: {err.msg}", source=source, line=number, column=err.colno, text=line
        ) from None
    except (ValueError, RecursionError) as err:
        why = "nested too deeply" if isinstance(err, RecursionError) else str(err)
        raise InputError(f"not a job: {why}", source=source, line=number, text=line) from None


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise ValueError(f"key {clip(key)!r} appears twice")
        seen.add(key)
    return dict(pairs)


def _jsonl_error(err: InputError, line: str, item: object, number: int, source: str) -> InputError:
    """A state-loader error on one JSONL job, at its line: a requirement error with a
    caret under its column in the line (or in the requirement, if it is escaped there)."""
    path = (err.path or "").replace("jobs[0]", "job", 1) or None
    column: int | None = None
    text: str | None = line
    if path == "job.resreq" and err.column is not None:
        column = _column_in_line(line, item, err)
        if column is None:
            column, text = err.column, err.text
    else:  # the key's column in the line (slow, PyYAML: only for an error)
        found = _key_mark(_line_node(line), path)
        column = found[1] if found is not None else None
    message = expected_keys(err.message)
    return InputError(message, source=source, path=path, line=number, column=column, text=text)


def _column_in_line(line: str, item: object, err: InputError) -> int | None:
    """Where in the JSONL ``line`` a requirement error's column (into the requirement)
    falls, when the requirement is written there as is (no escapes); else None."""
    resreq = item.get("resreq") if isinstance(item, dict) else None
    if not isinstance(resreq, str) or err.column is None:
        return None
    for found in re.finditer(r'"resreq"\s*:\s*"', line):
        start = found.end()
        if line[start : start + len(resreq) + 1] == resreq + '"':
            return start + err.column
    return None


def load_workload(
    path: str | os.PathLike[str], **swf: object
) -> tuple[list[SimJob], SwfTrace | None]:
    """Jobs of an SWF trace (with the trace, for its header and skip counts) or a jobs
    file (names in requirements are checked when the simulation starts)."""
    source = os.fspath(path)
    if is_swf(source):
        trace = read_swf(source, **swf)  # type: ignore[arg-type]
        return trace.jobs, trace
    return load_jobs_file(source), None


# -- writing a jobs file -------------------------------------------------------------

JOBS_FILE_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")


def job_to_dict(job: SimJob) -> dict[str, Any]:
    """A job as an entry of a jobs file: the state-file job keys plus ``runtime`` and
    ``requested_time``; ``tasks`` left out when the requirement fixes it; ``dependency``,
    ``name``, ``failed``, ``hold``, ``begin_time`` and the priority inputs only when
    set. (SWF feedback has no jobs-file key: a replay of the file submits such a job at
    its submit time.)"""
    entry: dict[str, Any] = {
        "id": int(job.id) if job.id.isdigit() and str(int(job.id)) == job.id else job.id,
        "user": job.user,
        "queue": job.queue,
        "project": job.project,
    }
    if job.tasks is not None:
        entry["tasks"] = job.tasks
    entry["resreq"] = job.resreq
    entry["submit_time"] = _number(job.submit)
    entry["runtime"] = _number(job.runtime)
    if job.requested_time is not None:
        entry["requested_time"] = _number(job.requested_time)
    if job.dependency is not None:
        entry["dependency"] = job.dependency.text
    if job.name is not None:
        entry["name"] = job.name
    if job.failed:
        entry["failed"] = True
    for key, default in KEPT_FOR_THE_CORE:  # its gates and priority inputs, when set
        value = getattr(job, key)
        if value != default:
            entry[key] = _number(value) if isinstance(value, float) else value
    return entry


def _number(x: float) -> int | float:
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else float(x)


def write_jobs_file(jobs: Sequence[SimJob], path: str | os.PathLike[str]) -> None:
    """Write ``jobs`` as YAML (``.yaml``/``.yml``) or JSON (``.json``), a document
    ``{"jobs": [...]}`` with one job a line, or as JSONL (``.jsonl``, one job object a
    line). Raises :class:`InputError` for another suffix; OSError as ``open`` does."""
    target = os.fspath(path)
    suffix = os.path.splitext(target)[1].lower()
    entries = [job_to_dict(job) for job in jobs]
    if suffix in (".yaml", ".yml"):
        body = "".join(f"  - {_yaml_flow(e)}\n" for e in entries)
        text = f"jobs:\n{body}" if entries else "jobs: []\n"
    elif suffix == ".json":
        lines = ",\n".join(f"  {_json(e)}" for e in entries)
        text = f'{{"jobs": [\n{lines}\n]}}\n' if entries else '{"jobs": []}\n'
    elif suffix == ".jsonl":
        text = "".join(f"{_json(e)}\n" for e in entries)
    else:
        raise InputError(
            f"unknown jobs file type: expected {', '.join(JOBS_FILE_SUFFIXES)}", source=target
        )
    with open(target, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def _json(entry: Mapping[str, Any]) -> str:
    return json.dumps(entry, ensure_ascii=False, separators=(", ", ": "))


def _yaml_flow(entry: Mapping[str, Any]) -> str:
    """A flow mapping, one job a line (PyYAML's emitter is ~50x slower)."""
    return "{" + ", ".join(f"{k}: {_yaml_scalar(v)}" for k, v in entry.items()) + "}"


def _yaml_scalar(value: object) -> str:
    """Plain when unambiguous, else double-quoted (JSON strings are valid YAML)."""
    if isinstance(value, str):
        plain = _PLAIN.match(value) and value.lower() not in _YAML_WORDS
        return value if plain else json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        text = repr(value)  # YAML 1.1 (PyYAML) wants a dot in a float: 1.0e-05, not 1e-05
        return text.replace("e", ".0e") if "e" in text and "." not in text else text
    return str(value)


_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*\Z")
_YAML_WORDS = {"y", "n", "yes", "no", "true", "false", "on", "off", "null"}
