"""Conventions of every ``xce`` command (issue 10, "Missing conventions", "Wrong blame",
"Silent acceptance", "Huge numbers"): ``--version``, ``-h``, help without typer's
``<bool>``/``{STATE}`` noise, a start-up that loads no heavy module, and bad options
refused with exit 2 by a message naming the option, before any work."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from xce.cli.main import app

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "cluster.yaml"
COMMANDS = [[], ["schedule"], ["simulate"], ["resreq"], ["workload"], ["workload", "generate"]]
IDS = ["xce", "schedule", "simulate", "resreq", "workload", "workload generate"]


def xce(*args: str | Path) -> Any:
    return CliRunner(env={"COLUMNS": "100"}).invoke(app, [str(a) for a in args])


def test_version_is_the_installed_distributions() -> None:
    """issue 10: ``xce --version`` was missing."""
    result = xce("--version")
    assert result.exit_code == 0, result.output
    assert result.stdout == f"xce {importlib.metadata.version('xce')}\n"


def test_the_package_version_is_the_installed_one() -> None:
    import xce as package

    assert package.__version__ == importlib.metadata.version("xce")


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_dash_h_is_help_on_every_command(command: list[str]) -> None:
    """issue 10: ``-h`` was missing; it is ``--help`` on every command."""
    short, long = xce(*command, "-h"), xce(*command, "--help")
    assert short.exit_code == long.exit_code == 0, short.output
    assert short.stdout == long.stdout
    assert short.stdout.startswith("Usage: xce")
    assert "-h, --help" in short.stdout


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_help_has_no_type_noise(command: list[str]) -> None:
    """issue 10: help showed ``<bool>`` after every flag and ``{STATE}`` in the usage."""
    text = xce(*command, "--help").stdout
    assert "<bool>" not in text
    assert not re.search(r"\{[A-Z_]+\}", text), text


def test_schedule_usage_names_the_argument_plainly() -> None:
    assert "Usage: xce schedule [OPTIONS] STATE\n" in xce("schedule", "--help").stdout


def test_importing_the_command_line_loads_no_heavy_module() -> None:
    """issue 10: ``xce --help`` took 0.65 s because numpy, matplotlib and the whole
    engine loaded at start-up. Importing the command line (and the package's public
    API) must load none of them (of the simulator only ``xce.sim.files``, the names of
    its output files); each command loads what it needs when it runs."""
    heavy = ["numpy", "matplotlib", "rich", "yaml", "msgspec", "lark", "xce.alloc"]
    code = (
        f"import sys, xce.cli.main, xce\n"
        f"print(sorted(m for m in sys.modules if m in {heavy!r} or "
        f"m.startswith('xce.sim.') and m != 'xce.sim.files'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def test_the_public_api_still_resolves_every_name() -> None:
    """``xce``'s names load on first use; every name of ``__all__`` resolves."""
    import xce as package

    for name in package.__all__:
        assert getattr(package, name) is not None, name
    with pytest.raises(AttributeError):
        package.no_such_name  # noqa: B018


# --- the option is to blame --------------------------------------------------------------

BAD_OPTIONS = {
    "schedule --picker": (["schedule", EXAMPLE, "--picker", "nope"], "--picker: unknown picker"),
    "simulate --picker": (
        ["simulate", "--workload", "synthetic:5", "--hosts", "2", "--picker", "nope"],
        "--picker: unknown picker",
    ),
    "--max-tasks": (
        ["workload", "generate", "--jobs", "5", "--out", "w.jsonl", "--max-tasks", "1"],
        "--max-tasks must be at least 2, got 1",
    ),
    "--users": (
        ["workload", "generate", "--jobs", "5", "--out", "w.jsonl", "--users", "0"],
        "--users must be at least 1, got 0",
    ),
    "--peak-hour 25": (
        ["workload", "generate", "--jobs", "5", "--out", "w.jsonl", "--peak-hour", "25"],
        "--peak-hour must be",
    ),
    "--peak-hour -1": (
        ["workload", "generate", "--jobs", "5", "--out", "w.jsonl", "--peak-hour", "-1"],
        "--peak-hour must be",
    ),
    "--peak-hour nan": (
        ["workload", "generate", "--jobs", "5", "--out", "w.jsonl", "--peak-hour", "nan"],
        "--peak-hour must be",
    ),
    "--runtime-sigma nan": (
        ["workload", "generate", "--jobs", "5", "--out", "w.jsonl", "--runtime-sigma", "nan"],
        "--runtime-sigma must be",
    ),
    "--jobs 1e30": (
        ["workload", "generate", "--jobs", str(10**30), "--out", "w.jsonl"],
        "--jobs must be between 1 and 10,000,000",
    ),
    "--slots-per-host 0": (
        ["simulate", "--workload", "synthetic:5", "--hosts", "2", "--slots-per-host", "0"],
        "--slots-per-host must be at least 1, got 0",
    ),
    "--hosts 1e8": (
        ["simulate", "--workload", "synthetic:5", "--hosts", str(10**8)],
        "--hosts must be between 1 and 1,000,000",
    ),
    "synthetic:1e30": (
        ["simulate", "--workload", f"synthetic:{10**30}", "--hosts", "2"],
        "--workload 'synthetic:1000000000000000000000000000000': expected synthetic:N",
    ),
    **{
        f"--interval {value}": (
            ["simulate", "--workload", "synthetic:5", "--hosts", "2", "--interval", value],
            "--interval must be a finite number of seconds >= 0.001",
        )
        for value in ("nan", "inf", "-inf", "0", "-1", "1e-300", "0.0009")
    },
}


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """The work of each command fails loudly: options are checked before it."""

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the work ran before the options were checked")

    monkeypatch.setattr("xce.core.SchedulerCore.run_session", boom)
    monkeypatch.setattr("xce.sim.engine.Simulation.run", boom)
    monkeypatch.setattr("xce.sim.generate.generate_workload", boom)
    monkeypatch.setattr("xce.cluster.load_state", boom)


@pytest.mark.usefixtures("no_work")
@pytest.mark.parametrize(("args", "message"), list(BAD_OPTIONS.values()), ids=list(BAD_OPTIONS))
def test_a_bad_option_is_exit_2_naming_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[Any], message: str
) -> None:
    """issue 10: an unknown --picker was blamed on the state file; --max-tasks/--users
    shared one message naming the internal zipf_exponent; --slots-per-host 0 became 1;
    --peak-hour 25 was accepted; --interval nan/inf raised ValueError and 1e-300 an
    internal error; --hosts 1e8 and --jobs 1e30 exhausted memory. Each is exit 2, before
    any work, with a message that starts with the option."""
    monkeypatch.chdir(tmp_path)
    result = xce(*args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("xce: error: "), result.stderr
    assert message in result.stderr
    assert "zipf" not in result.stderr
    assert str(EXAMPLE) not in result.stderr
    assert list(tmp_path.iterdir()) == []


# --- the README ---------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_command_reproduces_the_bundled_workload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 10: the README's command for the bundled workload did not reproduce it byte
    for byte. The command it shows (run here into a scratch file) gives the same bytes."""
    lines = [
        line.removeprefix("$ ").split()
        for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("$ xce workload generate") and "examples/workload.jsonl" in line
    ]
    assert len(lines) == 1, lines
    args = lines[0][1:]
    args[args.index("--out") + 1] = str(tmp_path / "workload.jsonl")
    monkeypatch.chdir(ROOT)
    result = xce(*args)
    assert result.exit_code == 0, result.output
    expected = (ROOT / "examples" / "workload.jsonl").read_bytes()
    assert (tmp_path / "workload.jsonl").read_bytes() == expected


@pytest.mark.parametrize(
    "page",
    ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))],
)
def test_docs_link_only_to_files_in_the_repository(page: str) -> None:
    """issue 10: docs linked to files outside the repository (../shared/...). Every
    relative link of these pages names a file of the repository, and no path leaves it."""
    path = ROOT / page
    text = path.read_text(encoding="utf-8")
    assert "../shared" not in text
    assert "/work/" not in text
    for target in re.findall(r"\]\(([^)#\s]+)", text):
        if re.match(r"[a-z]+://", target):
            continue
        resolved = (path.parent / target).resolve()
        assert resolved.is_relative_to(ROOT), target
        assert resolved.exists(), target


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--mean-interarrival", "1e300"], "--mean-interarrival or --load: "),
        (["--load", "1e-300"], "--mean-interarrival or --load: "),
        (["--runtime-median", "1e300", "--runtime-cap", "1e300"], "--runtime-median or"),
    ],
    ids=["--mean-interarrival 1e300", "--load 1e-300", "--runtime-cap 1e300"],
)
def test_generate_refuses_a_workload_simulate_could_not_read(
    tmp_path: Path, option: list[str], message: str
) -> None:
    """issue 10 (huge numbers): generate wrote submit times of 1e300 s, which every
    reader then refused. Now exit 2 naming the options, and no file is written."""
    out = tmp_path / "w.jsonl"
    result = xce("workload", "generate", "--jobs", "5", "--out", out, *option)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"xce: error: {message}")
    assert "more than a jobs file may hold" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    "args",
    [
        ["schedule", "examples/cluster.yaml"],
        ["schedule", "examples/cluster.yaml", "--json"],
        ["resreq", "same[cpuf]"],
    ],
)
def test_a_reader_gone_away_is_no_internal_error(args: list[str]) -> None:
    """``xce ... | head``: the reader closes the pipe before the output is written.
    That is exit 141 (128 + SIGPIPE, as a shell reports it) with nothing on stderr;
    it was exit 1, the code of a bug in xce (rich's answer to a broken pipe)."""
    xce = Path(sys.executable).parent / "xce"
    proc = subprocess.Popen(
        [str(xce), *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    proc.stdout.close()
    assert proc.wait(timeout=120) == 141
    assert proc.stderr.read() == b""
    proc.stderr.close()
