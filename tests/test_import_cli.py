"""What every ``xce import`` takes alike (issue 25): ``--now`` (the capture's time) and
``--timezone`` (the zone the state's times are shown in), checked before any input is
read."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from xce.cli.main import app

DATA = Path(__file__).parent / "data"
SAMPLES = {
    "slurm": DATA / "slurm" / "slurmrestd-24.11-v0.0.42",
    "pbs": DATA / "pbs" / "openpbs-23.06.06-firecrest",
    "lsf": DATA / "lsf" / "handmade-lsf-10.1-shape",
}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_timezone_and_now_are_written(kind: str) -> None:
    code, out, err = run(
        "import", kind, str(SAMPLES[kind]), "--timezone", "Europe/Berlin", "--now", "1796181002"
    )
    assert code == 0, err
    state = yaml.safe_load(out)
    assert state["timezone"] == "Europe/Berlin"
    assert state["now"] == 1796181002


@pytest.mark.parametrize("kind", sorted(SAMPLES))
@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--timezone", "Mars/Olympus", "--timezone: unknown time zone 'Mars/Olympus'"),
        ("--now", "-5", "--now: -5.0 is not a time in Unix seconds"),
    ],
)
def test_a_bad_option_is_named_before_any_input_is_read(
    kind: str, option: str, value: str, message: str
) -> None:
    code, out, err = run("import", kind, "no-such-file.json", option, value)
    assert code == 2
    assert message in err
    assert out == ""
