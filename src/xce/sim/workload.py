"""Loading a workload: an SWF trace, or a jobs file (YAML/JSON/JSONL).

A jobs file is the ``jobs`` list of a state file (design §4) where every job also has a
``runtime`` (and may have a ``requested_time``): ``{"jobs": [...]}`` in YAML or JSON,
or one job object per line in JSONL. Errors name the file, the path and the line.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from xce.cluster import PendingJob, state_from_dict, state_from_text
from xce.errors import InputError
from xce.sim.model import SimJob
from xce.sim.swf import SwfTrace, read_swf

__all__ = [
    "JOBS_FILE_SUFFIXES",
    "is_swf",
    "job_to_dict",
    "load_jobs_file",
    "load_workload",
    "write_jobs_file",
]


def _no_check(text: str, low: int | None, high: int | None) -> None:
    """Requirements are checked against the simulated cluster when jobs arrive."""


def is_swf(path: str) -> bool:
    return path.endswith((".swf", ".swf.gz"))


def _sim_job(job: PendingJob, source: str, where: str) -> SimJob:
    if job.runtime is None:
        raise InputError(
            f"job {job.id!r} needs a runtime to be simulated", source=source, path=where
        )
    for name, value in (
        ("submit_time", job.submit_time),
        ("runtime", job.runtime),
        ("requested_time", job.requested_time),
    ):
        if value is not None and not math.isfinite(value):
            raise InputError(
                f"job {job.id!r}: {name} must be a finite number",
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
    )


def load_jobs_file(path: str | os.PathLike[str]) -> list[SimJob]:
    """Jobs of a ``.yaml``/``.yml``/``.json``/``.jsonl`` jobs file, in file order."""
    source = os.fspath(path)
    if not source.endswith((".json", ".jsonl", ".yaml", ".yml")):
        raise InputError(
            "unknown jobs file type: expected .yaml, .yml, .json or .jsonl", source=source
        )
    try:
        with open(source, encoding="utf-8") as f:
            text = f.read()
    except OSError as err:
        raise InputError(
            f"cannot read the jobs file: {err.strerror or err}", source=source
        ) from err
    if source.endswith(".jsonl"):
        return _jsonl(text, source)
    fmt: Literal["json", "yaml"] = "json" if source.endswith(".json") else "yaml"
    state = state_from_text(text, source, fmt, check_resreq=_no_check)
    try:
        return [_sim_job(j, source, f"jobs[{i}]") for i, j in enumerate(state.jobs)]
    except InputError as err:
        index = int((err.path or "jobs[0]").split("[")[1].split("]")[0])
        line = _line_of_job(text, index)
        raise err.located(line=line, text=text.split("\n")[line - 1] if line else None) from None


def _line_of_job(text: str, index: int) -> int | None:
    """The 1-based line where ``jobs[index]`` starts (YAML composes JSON too)."""
    import yaml

    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return None
    for key, value in getattr(root, "value", []):
        if getattr(key, "value", None) == "jobs" and index < len(value.value):
            return int(value.value[index].start_mark.line) + 1
    return None


def _jsonl(text: str, source: str) -> list[SimJob]:
    jobs: list[SimJob] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(
                f"not JSON: {err.msg}", source=source, line=number, column=err.colno, text=line
            ) from None
        try:
            state = state_from_dict({"jobs": [item]}, source, check_resreq=_no_check)
        except InputError as err:
            path = (err.path or "").replace("jobs[0]", "job", 1)
            raise InputError(
                err.message, source=source, path=path or None, line=number, text=line
            ) from None
        jobs.append(_sim_job(state.jobs[0], source, f"line {number}"))
    ids = [j.id for j in jobs]
    if len(set(ids)) != len(ids):
        raise InputError("job ids must be unique", source=source)
    return jobs


def load_workload(
    path: str | os.PathLike[str], **swf: object
) -> tuple[list[SimJob], SwfTrace | None]:
    """Jobs of an SWF trace (with the trace, for its header and skip counts) or a jobs file."""
    source = os.fspath(path)
    if is_swf(source):
        trace = read_swf(source, **swf)  # type: ignore[arg-type]
        return trace.jobs, trace
    return load_jobs_file(source), None


# -- writing a jobs file -------------------------------------------------------------

JOBS_FILE_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")


def job_to_dict(job: SimJob) -> dict[str, Any]:
    """A job as an entry of a jobs file: the state-file job keys plus ``runtime`` and
    ``requested_time``; ``tasks`` left out when the requirement fixes it."""
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
