"""benchmarks/bench_crowded.py: the workload it replays offers the load it asks for, and
its opt-in prefix of the traces is read as documented (no timing is asserted here)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_crowded import (  # noqa: E402
    JOBS,
    LOAD,
    SHAPES,
    offered_load,
    trace_jobs,
)
from benchmarks.bench_shapes import write_workload  # noqa: E402

from xce.sim.generate import WorkloadModel  # noqa: E402


def test_offered_load_of_a_small_trace(tmp_path: Path) -> None:
    """40 slot-seconds submitted over 10 s on 2 x 2 slots: load 1."""
    path = tmp_path / "two.swf"
    lines = ["; MaxNodes: 2", "; MaxProcs: 4"]
    for job, (submit, runtime, tasks) in enumerate(((0, 10, 2), (10, 20, 1)), start=1):
        fields = [job, submit, -1, runtime, tasks, -1, -1, tasks, runtime, *[-1] * 9]
        lines.append(" ".join(map(str, fields)))
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    assert offered_load(path) == pytest.approx(1.0)


@pytest.mark.parametrize(("hosts", "slots"), SHAPES)
def test_the_crowded_workload_offers_its_load(tmp_path: Path, hosts: int, slots: int) -> None:
    """The generator sets the mean gap between submissions from the work drawn; the
    written (slot-only) workload then offers about that load over its span."""
    path = tmp_path / "crowded.swf"
    write_workload(path, hosts, slots, JOBS, model=WorkloadModel(load=LOAD))
    assert offered_load(path) == pytest.approx(LOAD, rel=0.05)


@pytest.mark.parametrize(("value", "expected"), [(None, None), ("5000", 5000), ("0", 1)])
def test_trace_prefix_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: int | None
) -> None:
    if value is None:
        monkeypatch.delenv("XCE_BENCH_CROWDED_TRACE_JOBS", raising=False)
    else:
        monkeypatch.setenv("XCE_BENCH_CROWDED_TRACE_JOBS", value)
    assert trace_jobs() == expected
