"""``xce import slurm FILES... [-o state.yaml]``: a state file from Slurm's JSON.

Register in ``xce.cli.main._register``::

    app.add_typer(import_cmd.import_app, name="import", cls=XceGroup)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from xce.cli.conventions import CONTEXT, XceCommand, XceGroup, guarded

__all__ = ["import_app", "slurm"]

import_app = typer.Typer(
    help="Read what real schedulers print and write a state file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings=CONTEXT,
    cls=XceGroup,
    rich_markup_mode=None,
)


@import_app.callback()
def _group() -> None:
    """Read what real schedulers print and write a state file."""


def _texts(inputs: list[str]) -> list[tuple[str, str]]:
    """``(source, text)`` of each input: a file, every ``*.json`` in a directory (sorted),
    or ``-`` for stdin."""
    from xce.errors import InputError
    from xce.inputs import read_input_text

    out: list[tuple[str, str]] = []
    for item in inputs:
        if item == "-":
            out.append(("<stdin>", sys.stdin.read()))
        elif Path(item).is_dir():
            files = sorted(Path(item).glob("*.json"))
            if not files:
                raise InputError(f"{item}: a directory without *.json files")
            out.extend((str(f), read_input_text(f)) for f in files)
        else:
            out.append((item, read_input_text(item)))
    return out


def _write(state: dict[str, object], target: Path) -> None:
    import json

    import yaml

    if target.suffix == ".json":
        target.write_text(json.dumps(state, indent=1) + "\n", encoding="utf-8")
    else:
        target.write_text(yaml.safe_dump(state, sort_keys=False), encoding="utf-8")


def slurm(
    inputs: Annotated[
        list[str], typer.Argument(help="Slurm JSON files, directories of them, or - (stdin).")
    ],
    output: Annotated[
        str | None,
        typer.Option("-o", "--output", help="Write the state here (.yaml/.json); default stdout."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing output file.")
    ] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Anything not mapped is an error (exit 2).")
    ] = False,
) -> None:
    """Import squeue/sinfo/scontrol --json or slurmrestd responses as a state file."""
    import yaml

    from xce.cli.outputs import check_file, output_path, plain, write_file
    from xce.cluster import state_from_dict
    from xce.errors import InputError
    from xce.importers import ImportReport, import_slurm, read_slurm_documents

    files = [(i, Path(i)) for i in inputs if i != "-"]
    target = output_path(output, "--output") if output is not None else None
    if target is not None:
        check_file(target, "--output", files, force=force)
    report = ImportReport()
    result = import_slurm(read_slurm_documents(_texts(inputs), report), report)
    state_from_dict(result.state, "<import>")  # the importer's own check: a bug if it fails
    for line in report.lines():
        print(plain(line), file=sys.stderr)
    if strict and report.warnings:
        kind, examples = next(iter(report.warnings.items()))
        raise InputError(f"--strict: {kind}: {examples[0]}")
    if target is None:
        sys.stdout.write(yaml.safe_dump(result.state, sort_keys=False))
    else:
        write_file(target, "--output", lambda p: _write(result.state, p), force=force)


import_app.command("slurm", cls=XceCommand)(guarded(slurm))
