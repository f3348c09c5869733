"""``xce resreq``: parse, check and explain one resource requirement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from xce.cli.outputs import plain, shown
from xce.errors import InputError

if TYPE_CHECKING:  # the library and rich load when the command runs (start-up time)
    from rich.console import Console
    from rich.tree import Tree

    from xce.cluster.catalog import ResourceCatalog
    from xce.resreq import CompoundResreq, PrimaryResreq, Resreq

UNUSED_SECTIONS = ("affinity", "cu")
"""Sections kept in the model but not (yet) used for placement."""


def parse_tasks(text: str | None) -> tuple[int | None, int | None]:
    """``--tasks N`` or ``--tasks MIN,MAX``; (None, None) when not given."""
    if text is None:
        return None, None
    parts = text.split(",")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        values = []
    from xce.inputs import MAX_TASKS

    if (
        len(values) not in (1, 2)
        or len(values) != len(parts)
        or not 1 <= min(values) <= max(values) <= MAX_TASKS
    ):
        raise InputError(
            f"--tasks: expected N or MIN,MAX with whole numbers from 1 to {MAX_TASKS:,}, "
            f"got {text!r}"
        )
    return values[0], values[-1]


def _primary(p: PrimaryResreq) -> dict[str, Any]:
    return {
        "tasks": {"min": p.min_tasks, "max": p.max_tasks},
        "select": p.select.text if p.select is not None else None,
        "select_node_id": p.select.id if p.select is not None else 0,
        "order": [str(k) for k in p.order],
        "rusage": [
            {
                "amounts": dict(g.amounts),
                "methods": dict(g.methods),
                "duration": g.duration,
                "decay": g.decay,
            }
            for g in p.rusage.groups
        ],
        "span": None if p.span is None else {"hosts": p.span.hosts, "ptile": p.span.ptile},
        "same": list(p.same),
        "affinity": p.affinity,
        "cu": p.cu,
        "normalized": str(p),
        "fingerprint": str(p.fingerprint),
    }


def _shape(r: PrimaryResreq | CompoundResreq) -> dict[str, Any]:
    from xce.resreq import PrimaryResreq

    if isinstance(r, PrimaryResreq):
        return {"kind": "simple", "tasks": r.max_tasks, "terms": [_primary(r)]}
    return {"kind": "compound", "tasks": r.total_tasks, "terms": [_primary(t) for t in r.terms]}


def describe(resreq: Resreq, *, validated_against: str | None = None) -> dict[str, Any]:
    """The JSON of ``xce resreq --json``."""
    from xce.resreq import AlterResreq, fingerprint_text

    alternatives = resreq.alternatives if isinstance(resreq, AlterResreq) else (resreq,)
    unused = sorted(
        {s for p in resreq.primaries for s in UNUSED_SECTIONS if getattr(p, s) is not None}
    )
    if any(
        g.duration is not None or g.decay is not None
        for p in resreq.primaries
        for g in p.rusage.groups
    ):
        unused.append("rusage duration/decay")
    return {
        "kind": resreq.kind,
        "normalized": str(resreq),
        "fingerprint": fingerprint_text(resreq),
        "alternatives": [_shape(a) for a in alternatives],
        "not_used_for_placement": unused,
        "validated_against": validated_against,
    }


def _render(info: dict[str, Any], console: Console) -> None:
    from rich.tree import Tree

    normalized = shown(info["normalized"]) or "(empty: any host)"
    console.print(f"[bold]normalized[/]   {normalized}")
    console.print(f"[bold]kind[/]         {info['kind']}")
    console.print(f"[bold]fingerprint[/]  {info['fingerprint']}")
    tree = Tree("[bold]structure[/]")
    for i, alt in enumerate(info["alternatives"]):
        node = tree
        if info["kind"] == "alter":
            node = tree.add(f"alternative {i}: {alt['kind']}, {alt['tasks']} task(s)")
        for j, term in enumerate(alt["terms"]):
            t = term["tasks"]
            tasks = str(t["min"]) if t["min"] == t["max"] else f"{t['min']}..{t['max']}"
            label = f"term {j}" if alt["kind"] == "compound" else "primary"
            leaf = node.add(f"{label}: {tasks} task(s), fingerprint {term['fingerprint']}")
            _sections(leaf, term)
    console.print(tree, highlight=False)
    if info["not_used_for_placement"]:
        kept = ", ".join(info["not_used_for_placement"])
        console.print(f"[yellow]note[/]: kept but not used for placement: {kept}")
    if info["validated_against"]:
        console.print(f"[green]valid[/] against {shown(info['validated_against'])}")


def _add(leaf: Tree, label: str) -> None:
    from rich.text import Text

    leaf.add(Text(plain(label)))  # plain text: requirement bodies are full of [brackets]


def _sections(leaf: Tree, term: dict[str, Any]) -> None:
    if term["select"] is not None:
        _add(leaf, f"select  {term['select']}  (node {term['select_node_id']})")
    if term["order"]:
        _add(leaf, "order   " + ":".join(term["order"]))
    for g in term["rusage"]:
        methods = g["methods"]
        amounts = ", ".join(
            f"{k}={v:g}" + (f"/{methods[k]}" if k in methods else "")
            for k, v in g["amounts"].items()
        )
        extra = "".join(f", {k}={g[k]:g}" for k in ("duration", "decay") if g[k] is not None)
        _add(leaf, f"rusage  {amounts}{extra}")
    if term["span"] is not None:
        s = term["span"]
        _add(leaf, f"span    ptile={s['ptile']}" if s["ptile"] else f"span    hosts={s['hosts']}")
    if term["same"]:
        _add(leaf, "same    " + ":".join(term["same"]))
    for key in UNUSED_SECTIONS:
        if term[key] is not None:
            _add(leaf, f"{key}  {term[key]}  (kept, not used for placement)")
    if len(leaf.children) == 0:
        _add(leaf, "(no sections: any host)")


def resreq(
    string: Annotated[
        str,
        typer.Argument(
            metavar="REQUIREMENT",
            help="The requirement, e.g. 'select[mem>4000] rusage[mem=2000]'.",
        ),
    ],
    tasks: Annotated[
        str | None,
        typer.Option(
            "--tasks", metavar="N|MIN,MAX", help="Task count N, or MIN,MAX (like bsub -n)."
        ),
    ] = None,
    cluster: Annotated[
        Path | None,
        typer.Option(
            "--cluster", metavar="STATE", help="A state file: check names against its resources."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Parse, check and explain a resource requirement."""
    from rich.console import Console

    from xce.resreq import requirement_for_job

    min_tasks, max_tasks = parse_tasks(tasks)
    catalog: ResourceCatalog | None = None
    if cluster is not None:
        from xce.cluster import load_state

        catalog = load_state(cluster).catalog
    try:
        parsed = requirement_for_job(string, catalog, min_tasks, max_tasks)
    except InputError as err:
        raise err.located(
            source="requirement", text=string if err.column is not None else None
        ) from None
    info = describe(parsed, validated_against=str(cluster) if cluster is not None else None)
    if as_json:
        typer.echo(json.dumps(info, indent=2))
    else:
        _render(info, Console(highlight=False))
