"""Slurm's trackable resources (TRES) of a job -> rusage items and allocated amounts.

A pending job asks for GRES in up to four places, each with its own scope, and every
release prints them in the same fields (``tres_per_*``; ``gres/gpu:4``, ``gres:gpu:4``,
``gres/gpu:h100=2`` all read): ``tres_per_node`` (``--gres``, ``--gpus-per-node``) is
per host, ``tres_per_job`` (``--gpus``) per job (``gpu=4/job``), ``tres_per_task``
(``--gpus-per-task``) per task (``gpu=1/task``), ``tres_per_socket``
(``--gpus-per-socket``) per host times its sockets (estimated). ``tres_req_str``
(``gres/gpu=4``: the job's total) is the fallback where none of them names a GRES.
Nothing is dropped silently: what cannot be mapped is reported (an error with
``--strict``), and a GRES no imported node has is declared, so the job cannot run on
them, as in Slurm.

A running job's GRES are charged per node from ``gres_detail`` (one entry per node,
``gpu:h100:2(IDX:0-1)``), else ``tres_alloc_str``'s totals spread over its nodes, else
its request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xce.importers import units
from xce.importers.report import ImportReport

__all__ = ["allocated_gres", "request_rusage"]

Amounts = dict[str, int]
#: TRES that are no GRES (a ``cpu:2`` in a ``tres_per_*`` is not a GRES named cpu).
_NOT_GRES = frozenset({"cpu", "mem", "node", "billing", "energy", "fs", "ic", "license", "bb"})


def _gres_of(text: Any, skip_cpu: bool = False) -> tuple[Amounts, list[str]]:
    """GRES amounts of a ``tres_per_*`` string, and the items that are not GRES. With
    ``skip_cpu``, ``cpu=2``/``cpu:2`` is left out (in ``tres_per_task`` it is
    ``--cpus-per-task``, read from ``cpus_per_task``)."""
    if not isinstance(text, str) or text.strip() in ("", "N/A", "(null)"):
        return {}, []
    gres: list[str] = []
    other: list[str] = []
    for item in filter(None, (i.strip() for i in text.split(","))):
        name = item.removeprefix("gres/").removeprefix("gres:")
        base = name.partition("=")[0].partition(":")[0]
        if name == item and base == "cpu" and skip_cpu:
            continue
        if name != item or (":" in item and base not in _NOT_GRES):
            gres.append(name)
        else:
            other.append(item)
    return units.gres(",".join(gres)), other


def request_rusage(
    job: Mapping[str, Any],
    shape: tuple[int, int, int],
    where: str,
    report: ImportReport,
) -> dict[str, str]:
    """The rusage items (name -> amount text) of a pending job's GRES request.

    ``shape``: (Slurm tasks, CPUs per task, the most sockets of an imported node). An
    xce task is a CPU, so a per-task amount of a job of several CPUs per task is written
    as its total per job; ``sockets`` is the estimate of how many sockets of a node a
    per-socket request takes (the job's ``sockets_per_node`` when set)."""
    ntasks, per_task, sockets = shape
    items: dict[str, str] = {}
    for field, suffix in (("tres_per_node", ""), ("tres_per_job", "/job")):
        amounts, other = _gres_of(job.get(field))
        for name, amount in amounts.items():
            items[name] = f"{amount}{suffix}"
        _unmapped(field, other, where, report)
    amounts, other = _gres_of(job.get("tres_per_task"), skip_cpu=True)
    _unmapped("tres_per_task", other, where, report)
    for name, amount in amounts.items():
        items[name] = f"{amount}/task" if per_task == 1 else f"{amount * ntasks}/job"
    amounts, other = _gres_of(job.get("tres_per_socket"))
    _unmapped("tres_per_socket", other, where, report)
    if amounts:
        per_node = units.number(job.get("sockets_per_node")) or sockets or 1
        for name, amount in amounts.items():
            items[name] = str(int(amount * per_node))
        report.warn(
            "GRES per socket charged per node x sockets (estimated: a pending job's sockets "
            "per node are not known)",
            f"{where}: {job.get('tres_per_socket')} x {int(per_node)}",
        )
    if not items:
        total = _tres_gres(job.get("tres_req_str"))
        for name, amount in total.items():
            items[name] = f"{amount}/job"
    return items


def _unmapped(field: str, other: list[str], where: str, report: ImportReport) -> None:
    for item in other:
        report.warn("job TRES not mapped (only GRES are)", f"{where}: {field} {item}")


def _tres_gres(text: Any) -> Amounts:
    """The ``gres/…`` totals of a ``tres_req_str``/``tres_alloc_str``."""
    if not isinstance(text, str) or not text.strip():
        return {}
    items = [f"{k}={v}" for k, v in units.tres(text).items() if k.startswith("gres/")]
    return units.gres(",".join(items))


def allocated_gres(
    job: Mapping[str, Any], nodes: list[str], where: str, report: ImportReport
) -> dict[str, Amounts]:
    """GRES a running job holds on each of its ``nodes`` (in its node list's order)."""
    detail = job.get("gres_detail")
    if isinstance(detail, list) and detail:
        if len(detail) != len(nodes):
            report.warn(
                "gres_detail does not list one entry per node (spread instead)",
                f"{where}: {len(detail)} for {len(nodes)} nodes",
            )
        else:
            return {n: units.gres(str(d)) for n, d in zip(nodes, detail, strict=True)}
    total = _tres_gres(job.get("tres_alloc_str"))
    if not total:
        per_node, _ = _gres_of(job.get("tres_per_node"))
        per_job, _ = _gres_of(job.get("tres_per_job"))
        if not per_node and not per_job:
            return {}
        total = {k: v * len(nodes) for k, v in per_node.items()}
        for name, amount in per_job.items():
            total[name] = total.get(name, 0) + amount
        report.warn("running job's GRES from its request (no allocation printed)", where)
    return _spread(total, nodes, where, report)


def _spread(
    total: Amounts, nodes: list[str], where: str, report: ImportReport
) -> dict[str, Amounts]:
    """``total`` over ``nodes``: evenly, the remainder one each to the first nodes."""
    if not nodes:
        return {}
    out: dict[str, Amounts] = {n: {} for n in nodes}
    uneven = False
    for name, amount in total.items():
        share, rest = divmod(amount, len(nodes))
        uneven = uneven or bool(rest)
        for i, node in enumerate(nodes):
            value = share + (1 if i < rest else 0)
            if value:
                out[node][name] = value
    if uneven and len(nodes) > 1:
        report.warn("running job's GRES spread unevenly over its nodes (estimated)", where)
    return out
