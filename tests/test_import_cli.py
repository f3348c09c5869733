"""What every ``xce import`` takes alike (issue 25): ``--now`` (the capture's time) and
``--timezone`` (the zone the state's times are shown in), checked before any input is
read."""

from __future__ import annotations

import json
import shutil
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


@pytest.mark.parametrize("kind", ["slurm", "pbs"])
def test_a_now_before_the_captures_jobs_exits_2(kind: str) -> None:
    """A given ``--now`` before a job of the capture was submitted or started would make
    a state that holds a job from after its now (it was an internal error: the
    importer's state failed the loader): exit 2 naming the job, nothing written. (LSF
    prints dates without a year, read as the latest such date by the capture's time:
    none is after it.)"""
    code, out, err = run("import", kind, str(SAMPLES[kind]), "--now", "1")
    assert code == 2, err
    assert "the given now (--now) 1 is before job '" in err
    assert out == ""


def test_a_capture_whose_own_time_is_before_a_job_takes_the_jobs(tmp_path: Path) -> None:
    """Documents taken apart (a job submitted after the time the capture says it was
    made): the import reports it and takes the latest such time as the state's now, so
    the state loads and no job is from after it."""
    code, out, err = run("import", "slurm", str(SAMPLES["slurm"]))
    assert code == 0, err
    now = yaml.safe_load(out)["now"]
    capture = tmp_path / "capture"
    shutil.copytree(SAMPLES["slurm"], capture)
    for jobs in capture.glob("slurm-job*.json"):  # 6370 is in both files
        data = json.loads(jobs.read_text(encoding="utf-8"))
        for job in data["jobs"]:
            if job["job_id"] == 6370:
                job["submit_time"]["number"] = now + 100
        jobs.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = run("import", "slurm", str(capture))
    assert code == 0, err
    assert "jobs submitted or started after the capture's time (now taken as the latest)" in err
    assert f"job '6370' submitted at {now + 100}, 100 s after {now}" in err
    state = yaml.safe_load(out)
    assert state["now"] == now + 100
    out_file = tmp_path / "state.yaml"
    out_file.write_text(out, encoding="utf-8")
    code, _, err = run("schedule", str(out_file))
    assert code == 0, err
