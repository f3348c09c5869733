"""Run AccaSim, in its own venv, from the project's benchmarks (see README.md here).

This module runs under the project's interpreter and never imports AccaSim: it starts
``run_accasim.py`` with ``.venv-accasim/bin/python`` and returns the JSON object it prints.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ACCASIM_PYTHON = ROOT / ".venv-accasim" / "bin" / "python"
SCRIPT = Path(__file__).with_name("run_accasim.py")


def available() -> bool:
    """Whether the AccaSim venv exists (``make accasim-venv`` creates it)."""
    return ACCASIM_PYTHON.exists()


def run_accasim(
    workload: Path,
    nodes: int,
    cores: int,
    jobs: int | None = None,
    out: Path | None = None,
    timeout: float | None = None,
    dispatcher: str = "fifo",
) -> dict[str, Any]:
    """Replay the first ``jobs`` job lines of ``workload`` in AccaSim (FIFO + FirstFit, or
    with ``dispatcher="easy"`` EASYBackfilling + FirstFit).

    Returns run_accasim.py's JSON object (wall_s, total_s, peak_rss_mb, jobs, mean_wait_s, ...).
    Raises ``subprocess.CalledProcessError`` or ``TimeoutExpired`` if the run fails or overruns.
    """
    cmd = [str(ACCASIM_PYTHON), str(SCRIPT), "--workload", str(workload)]
    cmd += ["--nodes", str(nodes), "--cores", str(cores), "--dispatcher", dispatcher]
    if jobs is not None:
        cmd += ["--jobs", str(jobs)]
    if out is not None:
        cmd += ["--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=timeout)
    result: dict[str, Any] = json.loads(proc.stdout)
    return result
