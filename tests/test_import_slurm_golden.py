"""xce import slurm, end to end through the CLI (issue 13, Acceptance).

- Golden tests: every sample folder of ``tests/data/slurm/`` imported whole
  (``xce import slurm FOLDER -o state.yaml``); the state written and the import report
  (stderr) are pinned in ``tests/data/slurm/golden/FOLDER.yaml`` and
  ``FOLDER.report.txt``. A new sample folder gets its golden test automatically, failing
  until its golden files exist. To (re)write them after a deliberate change of the
  mapping, run::

      XCE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_import_slurm_golden.py

  and review ``git diff tests/data/slurm/golden/``.
- ``xce schedule --json`` on every imported sample: a decision for every pending job.
- Bad input exits 2 with the file and where in it (JSON path, or line and column), and
  nothing is written to ``-o``; an unknown newer version is read with a warning.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from goldens import check_golden, updating
from xce.cli.main import app
from xce.cluster import state_from_dict

DATA = Path(__file__).parent / "data" / "slurm"
GOLDEN = DATA / "golden"
ROOT = DATA.parent.parent.parent
# every folder holding Slurm's JSON: a sample, or one capture of a sample of several
# (local-22.05.8-site-v0.0.38/capture-1); its golden files are named by that path
SAMPLES = sorted(
    str(p.relative_to(DATA))
    for p in [DATA, *DATA.rglob("*")]
    if p.is_dir()
    and p != DATA
    and GOLDEN not in (p, *p.parents)
    and p.name != "raw"  # a capture's raw/: Slurm's output before the test edited it
    and any(p.glob("*.json"))
)


def xce(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def import_slurm(*args: str) -> Any:
    return xce("import", "slurm", *args)


def relative_report(stderr: str) -> str:
    """The report with the samples' absolute paths made relative to tests/data/slurm."""
    text = stderr
    for base in {str(DATA), str(DATA.resolve())}:
        text = text.replace(base + os.sep, "")
    return text


# --- golden files -------------------------------------------------------------------------


@pytest.mark.parametrize("folder", SAMPLES)
def test_golden_import(folder: str, tmp_path: Path) -> None:
    out = tmp_path / "state.yaml"
    result = import_slurm(str(DATA / folder), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    written = out.read_text(encoding="utf-8")
    state_from_dict(yaml.safe_load(written), folder)
    update = updating()
    check_golden(GOLDEN / f"{folder}.yaml", written, update=update)
    check_golden(GOLDEN / f"{folder}.report.txt", relative_report(result.stderr), update=update)


def test_report_paths_are_relative_to_the_samples() -> None:
    # the goldens must not depend on where the repository is checked out
    result = import_slurm(str(DATA / "slurmrestd-24.11-v0.0.42"))
    assert f"{DATA}{os.sep}slurmrestd-24.11-v0.0.42" in result.stderr
    report = relative_report(result.stderr)
    assert "(e.g. slurmrestd-24.11-v0.0.42/slurm-jobs.json: jobs[" in report
    assert os.sep + "tests" + os.sep not in report


def test_no_golden_without_its_sample() -> None:
    stale = [
        str(p.relative_to(GOLDEN))
        for p in sorted(GOLDEN.rglob("*"))
        if p.is_file()
        and str(p.relative_to(GOLDEN)).removesuffix(".report.txt").removesuffix(".yaml")
        not in SAMPLES
    ]
    assert stale == [], f"golden files of no sample folder in {DATA}: remove them"


def test_golden_check_fails_with_a_diff(tmp_path: Path) -> None:
    golden = tmp_path / "x.yaml"
    golden.write_text("hosts:\n- name: a\n  slots: 4\n", encoding="utf-8")
    check_golden(golden, "hosts:\n- name: a\n  slots: 4\n", update=False)
    with pytest.raises(pytest.fail.Exception) as info:
        check_golden(golden, "hosts:\n- name: a\n  slots: 8\n", update=False)
    assert "-  slots: 4\n+  slots: 8\n" in str(info.value)
    assert "XCE_UPDATE_GOLDEN=1" in str(info.value)
    with pytest.raises(pytest.fail.Exception, match=r"no golden file .*create it with"):
        check_golden(tmp_path / "missing.yaml", "x\n", update=False)
    check_golden(golden, "rewritten\n", update=True)
    assert golden.read_text(encoding="utf-8") == "rewritten\n"


# --- xce schedule on every import ---------------------------------------------------------


@pytest.mark.parametrize("folder", SAMPLES)
def test_schedule_decides_every_pending_job(folder: str, tmp_path: Path) -> None:
    out = tmp_path / "state.yaml"
    imported = import_slurm(str(DATA / folder), "-o", str(out))
    assert imported.exit_code == 0, imported.output
    pending = sorted(str(job["id"]) for job in yaml.safe_load(out.read_text()).get("jobs", []))
    result = xce("schedule", str(out), "--json")
    assert result.exit_code == 0, result.output
    decisions = json.loads(result.stdout)
    decided = [d["job"] for d in decisions["dispatched"]] + [p["job"] for p in decisions["pending"]]
    assert sorted(decided) == pending
    assert decisions["stats"]["jobs"] == len(pending)


# --- bad input: exit 2, located, nothing written ---------------------------------------------


def slurm_doc(version: str, **body: Any) -> str:
    return json.dumps({"meta": {"plugin": {"data_parser": version}}, **body}, indent=1)


NODE = {"name": "n1", "cpus": 4, "real_memory": 1000, "state": ["IDLE"]}
JOB = {"job_id": 1, "job_state": ["PENDING"], "user_name": "u"}
PBS_QSTAT = '{"timestamp": 1, "pbs_version": "23.06.06", "pbs_server": "x", "Jobs": {}}'


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        pytest.param(
            PBS_QSTAT,
            "pbs_version",
            "a PBS document, not Slurm's: use xce import pbs",
            id="pbs-qstat",
        ),
        pytest.param(
            slurm_doc("data_parser/v0.0.36", nodes=[NODE]),
            "meta.plugin",
            "v0.0.36 is not supported",
            id="too-old",
        ),
        pytest.param(
            slurm_doc("data_parser/v0.0.42", nodes=[NODE, {**NODE, "name": "n2", "cpus": "4"}]),
            "nodes[1].cpus",
            "expected a number, got '4'",
            id="cpus-string",
        ),
        # issue 25, bad values: each a traceback, a silent mapping or an error located
        # in the output before
        pytest.param(
            slurm_doc("data_parser/v0.0.42", nodes=[NODE]).replace('"cpus": 4', '"cpus": NaN'),
            "nodes[0].cpus",
            "NaN is not a finite number",
            id="cpus-nan",
        ),
        pytest.param(
            slurm_doc("data_parser/v0.0.42", nodes=[NODE]).replace('"cpus": 4', '"cpus": Infinity'),
            "nodes[0].cpus",
            "Infinity is not a finite number",
            id="cpus-infinity",
        ),
        pytest.param(
            slurm_doc("data_parser/v0.0.42", nodes=[NODE]).replace('"cpus": 4', '"cpus": 1e999'),
            "nodes[0].cpus",
            "1e999 is not a finite number",
            id="cpus-overflow",
        ),
        pytest.param(
            slurm_doc("data_parser/v0.0.42", nodes=[{**NODE, "cpus": -5}]),
            "nodes[0].cpus",
            "-5 is negative",
            id="cpus-negative",
        ),
        pytest.param(
            slurm_doc("data_parser/v0.0.42", nodes=[{**NODE, "real_memory": 2e15}]),
            "nodes[0].real_memory",
            "is too large (at most 1e+15)",
            id="memory-too-large",
        ),
        pytest.param(
            slurm_doc("data_parser/v0.0.42", nodes=[{**NODE, "name": ""}]),
            "nodes[0].name",
            "a node with an empty name",
            id="node-name-empty",
        ),
        pytest.param(
            slurm_doc("data_parser/v0.0.42", nodes=[NODE]).replace(
                '"cpus": 4', '"cpus": 4, "cpus": 8'
            ),
            "nodes[0].cpus",
            "duplicate key 'cpus'",
            id="duplicate-key",
        ),
        pytest.param(
            slurm_doc("data_parser/v0.0.42", nodes=[{**NODE, "cpus": 10**7}]),
            "nodes[0].cpus",
            "the most slots a host may have",
            id="cpus-beyond-a-host",  # was located at <import>: hosts[0].slots
        ),
        pytest.param(
            slurm_doc("data_parser/v0.0.42", partitions=[{"name": ""}]),
            "partitions[0].name",
            "a partition with an empty name",
            id="partition-name-empty",  # was written as queue ''
        ),
        pytest.param(
            slurm_doc(
                "data_parser/v0.0.42",
                partitions=[{"name": "p", "maximums": {"time": {"set": True, "number": 10**15}}}],
            ),
            "partitions[0]",
            "too large",
            id="partition-time-too-large",  # was located at <import>: queues.p.max_runtime
        ),
        pytest.param(
            slurm_doc("data_parser/v0.0.42", nodes=[NODE], jobs=[{**JOB, "num_tasks": -3}]),
            "jobs[0]",
            "-3 is negative",
            id="tasks-negative",
        ),
        pytest.param(
            slurm_doc("data_parser/v0.0.42", nodes=[NODE], jobs=[{**JOB, "job_id": ""}]),
            "jobs[0]",
            "expected a number, got ''",
            id="job-id-empty",
        ),
        pytest.param(
            slurm_doc("data_parser/v0.0.42", nodes=[NODE], jobs=[JOB, {**JOB, "job_state": 3}]),
            "jobs[1]",
            "job_state",
            id="job-state-number",
        ),
    ],
)
def test_bad_input_exits_2_located_and_writes_nothing(
    text: str, where: str, message: str, tmp_path: Path
) -> None:
    src = tmp_path / "input.json"
    src.write_text(text, encoding="utf-8")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "state.yaml"
    result = import_slurm(str(src), "-o", str(out))
    assert result.exit_code == 2, result.output
    assert f"xce: error: {src}: {where}: " in result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert not out.exists()
    assert list(out_dir.iterdir()) == []


def test_deeply_nested_json_is_refused_located(tmp_path: Path) -> None:
    """issue 25: nesting past xce.inputs.MAX_DEPTH was a RecursionError traceback; it is
    refused at the line and column of the bracket that goes too deep, before decoding."""
    src = tmp_path / "deep.json"
    src.write_text(
        '{"meta": {"plugin": {"data_parser": "v0.0.42"}},\n"nodes": '
        + "[" * 5000
        + "]" * 5000
        + "}"
    )
    out = tmp_path / "state.yaml"
    result = import_slurm(str(src), "-o", str(out))
    assert result.exit_code == 2, result.output
    assert f"xce: error: {src}:2:109: nested deeper than 100 levels" in result.stderr
    assert "Traceback" not in result.output
    assert not out.exists()


def test_slurm_23_02_cli_meta_plugins_is_read(tmp_path: Path) -> None:
    """issue 25: the CLI's --json of 23.02 on puts the version in ``meta.plugins``."""
    src = tmp_path / "sinfo.json"
    meta = {"plugins": {"data_parser": "data_parser/v0.0.39", "accounting_storage": ""}}
    src.write_text(json.dumps({"meta": meta, "nodes": [NODE]}))
    result = import_slurm(str(src))
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout)["hosts"][0]["slots"] == 4


def test_a_state_the_loader_refuses_is_an_internal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 25: a state the importer built that xce's loader refuses is a bug in the
    importer (exit 1, said so), never an error located at ``<import>: ...``."""
    import xce.importers

    real = xce.importers.import_slurm

    def broken(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        result.state["hosts"][0]["slots"] = -1
        return result

    monkeypatch.setattr(xce.importers, "import_slurm", broken)
    src = tmp_path / "nodes.json"
    src.write_text(slurm_doc("data_parser/v0.0.42", nodes=[NODE]))
    out = tmp_path / "state.yaml"
    result = import_slurm(str(src), "-o", str(out))
    assert result.exit_code == 1, result.output
    assert "a bug in the importer" in result.stderr
    assert "xce: error: <import>" not in result.stderr
    assert not out.exists()


def test_truncated_file_in_a_folder_is_named_with_line_and_column(tmp_path: Path) -> None:
    folder = tmp_path / "capture"
    shutil.copytree(DATA / "slurmrestd-24.11-v0.0.42", folder)
    nodes = folder / "slurm-nodes.json"
    text = nodes.read_text(encoding="utf-8")
    cut = text.index('"cpus": ', len(text) // 2) + len('"cpus": ')  # cut mid-file, after a key
    nodes.write_text(text[:cut], encoding="utf-8")
    line = text.count("\n", 0, cut) + 1
    column = cut - text.rfind("\n", 0, cut)  # 1-based, the end of the text
    out = tmp_path / "state.yaml"
    result = import_slurm(str(folder), "-o", str(out))
    assert result.exit_code == 2, result.output
    assert f"xce: error: {nodes}:{line}:{column}: not JSON" in result.stderr
    assert not out.exists()


def test_unknown_newer_version_imports_best_effort_with_a_warning(tmp_path: Path) -> None:
    # a v0.0.43 capture relabelled v0.0.99 reads as the v0.0.43 one does
    sample = DATA / "slurmrestd-25.05-v0.0.43"
    folder = tmp_path / "capture"
    folder.mkdir()
    names = ("slurm-nodes.json", "slurm-partitions.json")
    for name in names:
        data = json.loads((sample / name).read_text(encoding="utf-8"))
        data["meta"]["plugin"]["data_parser"] = "data_parser/v0.0.99"
        (folder / name).write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "state.yaml"
    result = import_slurm(str(folder), "-o", str(out))
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    nodes, partitions = (folder / name for name in names)
    warning = "warning: unknown newer version, read best effort: 2"
    assert f"{warning} (e.g. {nodes}: v0.0.99; {partitions}: v0.0.99)" in lines
    state = yaml.safe_load(out.read_text(encoding="utf-8"))
    state_from_dict(state)
    original = import_slurm(*(str(sample / name) for name in names))
    assert original.exit_code == 0, original.output
    assert "unknown newer version" not in original.stderr
    reference = yaml.safe_load(original.stdout)
    assert len(state["hosts"]) == 6
    assert state["hosts"] == reference["hosts"]
    assert state["queues"] == reference["queues"]
