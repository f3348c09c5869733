"""``xce import slurm|pbs FILES... [-o state.yaml]``: a state file from a scheduler's JSON.

Register in ``xce.cli.main._register``::

    app.add_typer(import_cmd.import_app, name="import", cls=XceGroup)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from xce.cli.conventions import CONTEXT, XceCommand, XceGroup, guarded

if TYPE_CHECKING:
    from xce.importers import ImportReport, ImportResult

__all__ = ["import_app", "lsf", "pbs", "slurm"]

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


def _texts(
    inputs: list[str], text_too: Callable[[str], bool] | None = None
) -> list[tuple[str, str]]:
    """``(source, text)`` of each input: a file, every ``*.json`` in a directory (sorted;
    with ``text_too``, also each ``*.txt`` whose text it accepts: Slurm's ``scontrol``
    output), or ``-`` for stdin."""
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
            if text_too is not None:
                texts = ((str(f), read_input_text(f)) for f in sorted(Path(item).glob("*.txt")))
                out.extend(t for t in texts if text_too(t[1]))
        else:
            out.append((item, read_input_text(item)))
    return out


def _refuse_read_dirs(target: Path, inputs: list[str], texts: bool) -> None:
    """``-o`` naming a file a directory input's import reads (every ``*.json`` in it, and
    ``*.txt`` where text is read too), or would read next time, is refused: xce never
    writes over an input, and the next import of the directory would read the state."""
    from xce.cli.outputs import same_file
    from xce.errors import InputError

    kinds = (".json", ".txt") if texts else (".json",)
    if target.suffix not in kinds:
        return
    for item in inputs:
        if item != "-" and Path(item).is_dir() and same_file(target.parent, Path(item)):
            globs = " and ".join(f"*{k}" for k in kinds)
            raise InputError(
                f"--output {target} is in the input directory {item}, whose {globs} files "
                f"are read as inputs (also by the next import of it): xce never writes "
                "over an input"
            )


def _write(state: dict[str, object], target: Path) -> None:
    import json

    import yaml

    if target.suffix == ".json":
        target.write_text(json.dumps(state, indent=1) + "\n", encoding="utf-8")
    else:
        target.write_text(yaml.safe_dump(state, sort_keys=False), encoding="utf-8")


_Inputs = Annotated[
    list[str], typer.Argument(help="JSON files, directories of them, or - (stdin).")
]
_Output = Annotated[
    str | None,
    typer.Option("-o", "--output", help="Write the state here (.yaml/.json); default stdout."),
]
_Force = Annotated[bool, typer.Option("--force", help="Replace an existing output file.")]
_Strict = Annotated[
    bool, typer.Option("--strict", help="Anything not mapped is an error (exit 2).")
]


def _import(
    inputs: list[str],
    output: str | None,
    force: bool,
    strict: bool,
    read: Callable[[list[tuple[str, str]], ImportReport], ImportResult],
    text_too: Callable[[str], bool] | None = None,
) -> None:
    """What every ``xce import`` does around its importer ``read``: inputs, the report
    (stderr), ``--strict``, the loader's check, and the state to stdout or ``-o``."""
    import yaml

    from xce.cli.outputs import check_file, output_path, plain, write_file
    from xce.cluster import state_from_dict
    from xce.errors import InputError
    from xce.importers import ImportReport

    files = [(i, Path(i)) for i in inputs if i != "-"]
    target = output_path(output, "--output") if output is not None else None
    if target is not None:
        _refuse_read_dirs(target, inputs, text_too is not None)
        check_file(target, "--output", files, force=force)
    result = read(_texts(inputs, text_too), ImportReport())
    _check_imported(result.state, state_from_dict)
    for line in result.report.lines():
        print(plain(line), file=sys.stderr)
    if strict and result.report.warnings:
        kind, examples = next(iter(result.report.warnings.items()))
        raise InputError(f"--strict: {kind}: {examples[0]}")
    if target is None:
        sys.stdout.write(yaml.safe_dump(result.state, sort_keys=False))
    else:
        write_file(target, "--output", lambda p: _write(result.state, p), force=force)


def _check_imported(
    state: dict[str, object], load: Callable[[dict[str, object], str], object]
) -> None:
    """The importer's own check: an importer validates its input, so a state xce's loader
    refuses is a bug in the importer (exit 1, said so), never located in the output."""
    from xce.errors import InputError, InternalError

    try:
        load(state, "<import>")
    except InputError as err:
        raise InternalError(
            f"internal error (a bug in the importer, please report it): the state it built "
            f"fails xce's own loader: {err}"
        ) from err


def _read_slurm(
    texts: list[tuple[str, str]], report: ImportReport, now: float | None = None
) -> ImportResult:
    from xce.importers import import_slurm, read_slurm_documents

    return import_slurm(read_slurm_documents(texts, report), report, now=now)


def _read_pbs(
    texts: list[tuple[str, str]], report: ImportReport, now: float | None = None
) -> ImportResult:
    from xce.importers import import_pbs, read_pbs_documents

    return import_pbs(read_pbs_documents(texts), report, now=now)


_Now = Annotated[
    float | None,
    typer.Option(
        "--now",
        help="The capture's time (Unix seconds): the state's now (default: when the "
        "documents say they were made, else left out).",
    ),
]
_Zone = Annotated[
    str | None,
    typer.Option(
        "--timezone",
        help="The IANA zone (Europe/Berlin) the state's times are shown in (default "
        "UTC); LSF's dates are read in it too.",
    ),
]


def _checked(now: float | None, timezone: str | None) -> tzinfo:
    """``--now`` and ``--timezone`` checked before any input is read (exit 2)."""
    from datetime import UTC
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from xce.errors import InputError

    if now is not None and not 0 <= now <= 1e15:
        raise InputError(f"--now: {now} is not a time in Unix seconds (0 to 1e15)")
    if timezone is None:
        return UTC
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise InputError(f"--timezone: unknown time zone {timezone!r}") from None


def _zoned(
    read: Callable[[list[tuple[str, str]], ImportReport], ImportResult], timezone: str | None
) -> Callable[[list[tuple[str, str]], ImportReport], ImportResult]:
    """``read``, its state given the zone its times are shown in (when one is named)."""

    def zoned(texts: list[tuple[str, str]], report: ImportReport) -> ImportResult:
        result = read(texts, report)
        if timezone is not None:
            result.state["timezone"] = timezone
        return result

    return zoned


def slurm(
    inputs: _Inputs,
    output: _Output = None,
    force: _Force = False,
    strict: _Strict = False,
    now: _Now = None,
    timezone: _Zone = None,
) -> None:
    """Import squeue/sinfo/scontrol --json (or scontrol show partition text) or
    slurmrestd responses as a state file."""
    from xce.importers.slurm_text import is_slurm_text

    _checked(now, timezone)
    read = _zoned(lambda texts, report: _read_slurm(texts, report, now), timezone)
    _import(inputs, output, force, strict, read, is_slurm_text)


def pbs(
    inputs: _Inputs,
    output: _Output = None,
    force: _Force = False,
    strict: _Strict = False,
    now: _Now = None,
    timezone: _Zone = None,
) -> None:
    """Import pbsnodes -a -F json, qstat -f -F json and qstat -Q -f -F json as a state file."""
    _checked(now, timezone)
    read = _zoned(lambda texts, report: _read_pbs(texts, report, now), timezone)
    _import(inputs, output, force, strict, read)


def lsf(
    inputs: _Inputs,
    output: _Output = None,
    force: _Force = False,
    strict: _Strict = False,
    now: _Now = None,
    timezone: _Zone = None,
) -> None:
    """Import bjobs/bhosts/lshosts/lsload/bqueues -o "…" -json output as a state file."""
    from xce.importers import import_lsf, read_lsf_documents

    zone = _checked(now, timezone)

    def read(texts: list[tuple[str, str]], report: ImportReport) -> ImportResult:
        return import_lsf(read_lsf_documents(texts), report, now=now, zone=zone)

    _import(inputs, output, force, strict, _zoned(read, timezone))


import_app.command("slurm", cls=XceCommand)(guarded(slurm))
import_app.command("pbs", cls=XceCommand)(guarded(pbs))
import_app.command("lsf", cls=XceCommand)(guarded(lsf))
