"""Every workload trace of ``../shared/data/traces/`` read and replayed to the end.

Acceptance (issue 5): "All traces in `../shared/data/traces/` replay to the end, with the
reader's skip counts documented."

Each trace is read whole (skip counts checked against the trace README and
docs/simulation.md) and simulated whole, no prefix, with ``--picker strict
--single-queue`` on its header cluster (MaxNodes x MaxProcs/MaxNodes; LCG has only
MaxProcs: 24,515 x 1; lublin only MaxNodes: 256 x 1); ``verify`` passes and every start
equals the independent strict-FIFO computation of test_sim_engine. Slow (about 2.5 min in
all, LANL 75 s and LCG 40 s of it): run by ``make test-all``, not in CI.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from test_sim_engine import strict_fifo_starts
from xce.cli.main import app
from xce.sim.clusters import header_cluster, uniform_cluster
from xce.sim.engine import SimOptions, Simulation, verify
from xce.sim.swf import SwfTrace, read_swf

TRACES = Path(__file__).parent.parent.parent / "shared/data/traces"
DOCS = Path(__file__).parent.parent / "docs" / "simulation.md"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not TRACES.is_dir(), reason=f"no traces at {TRACES}"),
]

# file: (job lines, jobs read, skipped by reason, header cluster (hosts, slots per host))
EXPECTED: dict[str, tuple[int, int, dict[str, int], tuple[int, int]]] = {
    "KTH-SP2-1996-2.1-cln.swf.gz": (28_476, 28_475, {"no processor count": 1}, (100, 1)),
    "LANL-CM5-1994-4.1-cln.swf.gz": (122_060, 122_057, {"no processor count": 3}, (1024, 1)),
    "LCG-2005-1.swf.gz": (188_041, 188_041, {}, (24_515, 1)),
    "NASA-iPSC-1993-3.1-cln.swf.gz": (18_239, 18_239, {}, (128, 1)),
    "lublin_256.swf.gz": (10_000, 10_000, {}, (256, 1)),
}

_traces: dict[str, SwfTrace] = {}


def trace(name: str) -> SwfTrace:
    """Each trace read once per test run."""
    if name not in _traces:
        _traces[name] = read_swf(TRACES / name)
    return _traces[name]


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def test_every_trace_is_covered() -> None:
    assert sorted(p.name for p in TRACES.glob("*.swf*")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_reader_skip_counts(name: str) -> None:
    """KTH has one job without a processor count, LANL three; nothing else is skipped."""
    lines, jobs, skipped, cluster = EXPECTED[name]
    t = trace(name)
    assert t.lines == lines
    assert len(t.jobs) == jobs
    assert dict(t.skipped) == skipped
    assert header_cluster(t) == cluster


def test_job_counts_match_the_trace_readme() -> None:
    """The README's job counts are the job lines of each file."""
    text = (TRACES / "README.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| (\S+\.swf\.gz) \| ([\d,]+) \|", text, re.MULTILINE))
    assert {name: _number(n) for name, n in rows.items()} == {
        name: lines for name, (lines, _, _, _) in EXPECTED.items()
    }
    assert "one job has no processor count" in text  # KTH, as read


def test_skip_counts_are_documented() -> None:
    """docs/simulation.md lists, per trace, the jobs read and the skips with their reason."""
    text = DOCS.read_text(encoding="utf-8")
    rows = re.findall(r"^\| ([\w.-]+) \| ([\d,]+) \| (\d+)(?: \(([^)]*)\))? \|", text, re.MULTILINE)
    documented = {
        f"{name}.swf.gz": (_number(jobs), {why: int(n)} if int(n) else {})
        for name, jobs, n, why in rows
    }
    assert documented == {name: (jobs, skipped) for name, (_, jobs, skipped, _) in EXPECTED.items()}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_replays_to_the_end(name: str) -> None:
    """The whole trace, strict FIFO on one queue on the header cluster: every job runs
    (none is wider than its machine), verify() passes, and the schedule is the
    independent strict-FIFO one."""
    t = trace(name)
    hosts, slots = header_cluster(t)
    options = SimOptions(picker="strict", single_queue=True)
    result = Simulation(uniform_cluster(hosts, slots), t.jobs, options).run()
    verify(result, t.jobs)
    assert result.unrunnable == []
    assert all(r.end is not None for r in result.records)
    started = {r.job.id: r.start for r in result.records}
    assert started == strict_fifo_starts(t.jobs, hosts * slots)
    _traces.pop(name, None)  # free the memory of the big ones


def test_cli_replays_a_trace_and_reports_its_skips() -> None:
    """``xce simulate`` on KTH-SP2 (header cluster): exit 0, the skip in metrics."""
    path = TRACES / "KTH-SP2-1996-2.1-cln.swf.gz"
    args = ["simulate", "--workload", str(path), "--picker", "strict", "--single-queue"]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["trace"]["skipped"] == {"no processor count": 1}
    assert (data["jobs"], data["unrunnable"], data["total_slots"]) == (28_475, 0, 100)
