"""The files replays write (``xce simulate --out``, ``xce compare --out``): their names,
in one place the command line can read without loading numpy or matplotlib; and the
prefix of a generated workload."""

from __future__ import annotations

__all__ = [
    "COMPARE_JOBS",
    "COMPARE_PLOTS",
    "PLOT_FORMATS",
    "SIMULATE_PLOTS",
    "SYNTHETIC",
    "compare_files",
    "simulate_files",
]

SYNTHETIC = "synthetic:"
"""A generated workload's prefix: ``--workload synthetic:N``."""

PLOT_FORMATS = ("png", "svg")
"""What a plot may be written as (``--plot-format``)."""

SIMULATE_PLOTS = ("utilisation", "queue", "wait_cdf", "bsld_by_size")
COMPARE_PLOTS = ("compare_wait_cdf", "compare_bsld_by_size")
"""The plots' file names, without the format's suffix."""


COMPARE_JOBS = "compare_jobs.csv"
"""Every policy's jobs, as ``jobs.csv`` with a ``policy`` column first."""


def simulate_files(fmt: str = "png") -> tuple[str, ...]:
    """Every file ``xce simulate --out DIR`` writes, and the only ones."""
    plots = tuple(f"{name}.{fmt}" for name in SIMULATE_PLOTS)
    return ("jobs.csv", "metrics.json", "timing.json", *plots, "schedule.swf")


def compare_files(fmt: str = "png") -> tuple[str, ...]:
    """Every file ``xce compare --out DIR`` writes, and the only ones."""
    plots = (f"{name}.{fmt}" for name in COMPARE_PLOTS)
    return ("compare.csv", "compare.json", COMPARE_JOBS, *plots)
