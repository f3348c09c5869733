"""benchmarks/resumable.py, by which issue 12's LANL-CM5 conservative figure is measured:
a replay stopped and resumed in several pieces (the simulation pickled between two steps)
ends with the metrics of one uninterrupted run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_shapes import write_workload  # noqa: E402

from xce.sim.generate import WorkloadModel  # noqa: E402

FIGURES = ("cpu_s", "jobs_per_cpu_s", "pieces", "peak_rss_mb")  # of the run, not the replay


def resumable(
    trace: Path, work: Path, backfill: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable, "-m", "benchmarks.resumable", "--trace", str(trace), "--hosts", "6",
        "--slots", "2", "--backfill", backfill, "--checkpoint", str(work / "sim.pickle"),
        "--log", str(work / "log"), *extra,
    ]  # fmt: skip
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def outcome(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("backfill", ["conservative", "none"])
def test_pieces_end_as_one_run(backfill: str, tmp_path: Path) -> None:
    trace = tmp_path / "w.swf"
    write_workload(trace, 6, 2, 400, seed=3, model=WorkloadModel(load=1.5))
    (tmp_path / "one").mkdir()
    (tmp_path / "cut").mkdir()
    whole = outcome(resumable(trace, tmp_path / "one", backfill, "--every", "1e9"))
    assert whole["pieces"] == 1
    for _ in range(50):
        done = resumable(
            trace, tmp_path / "cut", backfill, "--every", "0", "--stop-after-saves", "1"
        )
        if done.returncode != 3:
            break
    cut = outcome(done)
    assert cut["pieces"] >= 3, cut
    assert "resumed at simulated time" in (tmp_path / "cut" / "log").read_text()
    same = {k: v for k, v in cut.items() if k not in FIGURES}
    assert same == {k: v for k, v in whole.items() if k not in FIGURES}
    assert whole["jobs"] == 400
