"""Simulation plots (``xce.sim.plots``): four PNG files, byte-identical for the same
input, and no crash on empty input."""

from __future__ import annotations

import functools
import struct
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

from xce.cluster import load_state
from xce.sim import plots
from xce.sim.engine import SimResult, Simulation
from xce.sim.generate import generate_workload
from xce.sim.metrics import metrics, utilisation
from xce.sim.model import JobRecord, SimJob, Timeline
from xce.sim.plots import SIZE_BUCKETS, size_bucket, write_plots

ROOT = Path(__file__).resolve().parent.parent

NAMES = ["utilisation.png", "queue.png", "wait_cdf.png", "bsld_by_size.png"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _record(i: int, tasks: int, submit: float, wait: float | None, runtime: float) -> JobRecord:
    job = SimJob(str(i), submit, runtime, tasks)
    if wait is None:
        return JobRecord(job, None, None, unrunnable="too big")
    start = submit + wait
    return JobRecord(job, start, start + runtime, hosts=("h1",), slots=tasks)


def _run() -> tuple[list[JobRecord], Timeline]:
    """A small made-up run: every size bucket, zero and long waits, one unrunnable job."""
    records = [
        _record(i, tasks, 60.0 * i, wait, runtime)
        for i, (tasks, wait, runtime) in enumerate(
            [
                (1, 0.0, 5.0),
                (1, 0.0, 600.0),
                (3, 30.0, 60.0),
                (8, 3600.0, 7200.0),
                (32, 7200.0, 3600.0),
                (100, 0.0, 86400.0),
                (4, 0.5, 10.0),
                (512, None, 1.0),
            ]
        )
    ]
    timeline = Timeline(total_slots=128, times=[], busy=[], pending=[])
    for t, busy, pending in [(0, 1, 0), (60, 2, 0), (3600, 40, 3), (7200, 120, 5), (90000, 0, 0)]:
        timeline.add(float(t), busy, pending)
    return records, timeline


def _png_size(data: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk comes first
    return width, height


def test_writes_four_pngs(tmp_path: Path) -> None:
    records, timeline = _run()
    paths = write_plots(records, timeline, tmp_path / "out")
    assert [p.name for p in paths] == NAMES
    for path in paths:
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC)
        assert len(data) > 5000
        assert _png_size(data) == (plots.WIDTH_PX, 550)  # issue 26: 800 x 450 read small


def test_identical_input_identical_bytes(tmp_path: Path) -> None:
    records, timeline = _run()
    first = write_plots(records, timeline, tmp_path / "a")
    second = write_plots(records, timeline, tmp_path / "b")
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes()
        assert b"matplotlib" not in a.read_bytes()  # no software tag that changes by version


def test_leaves_matplotlib_settings_alone(tmp_path: Path) -> None:
    records, timeline = _run()
    before = dict(matplotlib.rcParams)
    write_plots(records, timeline, tmp_path)
    assert dict(matplotlib.rcParams) == before


@pytest.mark.parametrize(
    ("records", "timeline"),
    [
        ([], Timeline(0, [], [], [])),
        ([], Timeline(16, [0.0], [0], [0])),
        ([_record(0, 2, 0.0, None, 5.0)], Timeline(16, [5.0, 5.0], [1, 1], [2, 2])),
        ([_record(0, 2, 0.0, 0.0, 5.0)], Timeline(16, [0.0, 5.0], [2, 0], [0, 0])),
    ],
    ids=["nothing", "one sample", "nothing ran", "one job"],
)
def test_empty_or_tiny_input_does_not_crash(
    tmp_path: Path, records: list[JobRecord], timeline: Timeline
) -> None:
    for path in write_plots(records, timeline, tmp_path):
        assert path.read_bytes().startswith(PNG_MAGIC)


@pytest.mark.parametrize(
    ("tasks", "label"),
    [
        (1, "1"),
        (2, "2–4"),
        (4, "2–4"),
        (5, "5–16"),
        (16, "5–16"),
        (17, "17–64"),
        (64, "17–64"),
        (65, "65+"),
        (100000, "65+"),
    ],
)
def test_size_buckets(tasks: int, label: str) -> None:
    assert SIZE_BUCKETS[size_bucket(tasks)][0] == label


def test_long_timelines_are_drawn_as_an_envelope(tmp_path: Path) -> None:
    """A long run (here 50,000 samples) is reduced before drawing, deterministically."""
    n = 50_000
    timeline = Timeline(1000, [float(t) for t in range(n)], [], [])
    timeline.busy = [(t * 7919) % 1001 for t in range(n)]
    timeline.pending = [(t * 104729) % 5000 for t in range(n)]
    first = write_plots([], timeline, tmp_path / "a")
    second = write_plots([], timeline, tmp_path / "b")
    assert [a.read_bytes() for a in first] == [b.read_bytes() for b in second]


# --- one utilisation, everywhere (issue 10) ------------------------------------------------


@functools.cache
def _with_running_work() -> tuple[SimResult, dict[str, Any]]:
    """A replay on a cluster with work running (some for ever) when it begins: the
    workload's figure and the all-work figure differ."""
    cluster = load_state(ROOT / "examples" / "cluster.yaml")
    jobs = generate_workload(120, seed=4, cluster=cluster)
    result = Simulation(cluster, jobs).run()
    return result, metrics(result)


def test_utilisation_figures_by_hand() -> None:
    """Issue 10, utilisation: both figures of metrics.json, recomputed from the records
    and the work running at the start, over first submission to last end."""
    result, data = _with_running_work()
    ran = [r for r in result.records if r.start is not None and r.end is not None]
    start = min(r.job.submit for r in result.records)
    end = max(r.end for r in ran if r.end is not None)
    capacity = result.total_slots * (end - start)
    workload = sum(
        r.slots * (r.end - r.start) for r in ran if r.end is not None and r.start is not None
    )
    base = sum(s * max(0.0, min(e, end) - max(b, start)) for _, b, e, s in result.base_load)
    assert data["makespan_s"] == end - start
    assert data["utilization"] == pytest.approx(workload / capacity, rel=1e-12)
    assert data["utilization_all_work"] == pytest.approx((workload + base) / capacity, rel=1e-12)
    assert data["utilization_all_work"] > data["utilization"]


def test_plot_shows_the_utilisation_of_metrics_json() -> None:
    """Issue 10, utilisation: the summary, the plot and metrics.json gave different
    utilisations for one run (48.6 % and 62.7 % for the demo). The plot's dashed line is
    metrics.json's ``utilization_all_work`` over the makespan, and its title gives both
    figures as the summary rounds them."""
    result, data = _with_running_work()
    fig = Figure()
    ax = fig.add_subplot()
    plots._utilisation(ax, result.timeline, result.records)
    (dashed,) = ax.collections
    ((x0, y0), (x1, y1)) = dashed.get_segments()[0]  # type: ignore[attr-defined]
    assert y0 == y1 == pytest.approx(100 * data["utilization_all_work"], rel=1e-12)
    assert (x1 - x0) * 3600 == pytest.approx(data["makespan_s"], rel=1e-12)
    title = ax.get_title()
    assert f"all work {100 * data['utilization_all_work']:.1f} %" in title
    assert f"the workload's jobs {100 * data['utilization']:.1f} %" in title
    assert utilisation(result.records, result.timeline).workload == data["utilization"]


def test_every_plot_title_names_the_workload_and_the_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 14: every plot of ``xce simulate --out`` carries a title naming the workload
    and the policy (a second line under the plot's own title), as saved."""
    titles: list[str] = []
    real = Figure.savefig

    def spy(self: Figure, *args: Any, **kwargs: Any) -> None:
        titles.append(self.axes[0].get_title())
        real(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", spy)
    result, _ = _with_running_work()
    plots.write_plots(result.records, result.timeline, tmp_path, "kth.swf, policy strict")
    assert len(titles) == 4
    assert all(t.endswith("\nkth.swf, policy strict") and len(t) > 25 for t in titles)


def test_svg_plots_are_deterministic_svg(tmp_path: Path) -> None:
    """issue 14: plots as SVG (``--plot-format svg``): well-formed SVG, and the same run
    gives the same bytes (no date, fixed element ids)."""
    import xml.etree.ElementTree as ET

    result, _ = _with_running_work()
    first = plots.write_plots(result.records, result.timeline, tmp_path / "a", "w", "svg")
    second = plots.write_plots(result.records, result.timeline, tmp_path / "b", "svg", "svg")
    assert [p.name for p in first] == [
        "utilisation.svg",
        "queue.svg",
        "wait_cdf.svg",
        "bsld_by_size.svg",
    ]
    for a in first:
        root = ET.parse(a).getroot()
        assert root.tag.endswith("svg")
    again = plots.write_plots(result.records, result.timeline, tmp_path / "c", "w", "svg")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in again]
    assert len(second) == 4


# --- issue 26: the utilisation plot of xce simulate --out is binned as the report's ---------


def _busy_timeline(hours: int, calendar: bool) -> tuple[list[JobRecord], Timeline, float | None]:
    """``hours`` of a job every minute (30 min each, one slot): a timeline of an event
    a minute, as a replay's."""
    records = [_record(i, 1, 60.0 * i, 0.0, 1800.0) for i in range(hours * 60)]
    timeline = Timeline(total_slots=64, times=[], busy=[], pending=[])
    events = sorted((t, d) for r in records for t, d in ((r.start, 1), (r.end, -1)))
    busy = 0
    for t, d in events:
        busy += d
        timeline.add(float(t or 0.0), busy, 0)
    return records, timeline, (1_700_000_000.0 + 1234.0 if calendar else None)


@pytest.mark.parametrize("calendar", [False, True], ids=["simulated time", "calendar time"])
def test_utilisation_is_binned_not_a_line_of_every_event(calendar: bool) -> None:
    """issue 26: utilisation.png drew a line through every one of the replay's events
    (here 1,440 of them over 12 hours); it now draws the mean per whole hour of
    (calendar) time, as the report does: no line of more points than bins, and the
    inner bin edges on whole hours."""
    records, timeline, start = _busy_timeline(12, calendar)
    ax = Figure().add_subplot()
    plots._utilisation(ax, timeline, records, start)
    assert all(len(line.get_xdata()) <= 15 for line in ax.lines)  # type: ignore[arg-type]
    (all_work, jobs) = [p for p in ax.patches if p.get_label().endswith("mean per hour")]
    edges = all_work.get_data().edges  # type: ignore[attr-defined]
    assert 13 <= len(edges) <= 15  # 12.5 hours: whole hours, and a part at either end
    hours = edges * 24 if calendar else edges
    assert np.allclose(hours[1:-1], np.round(hours[1:-1]))
    values = all_work.get_data().values  # type: ignore[attr-defined]
    assert np.allclose(values, jobs.get_data().values)  # no work ran before the replay
    assert values[3] == pytest.approx(100.0 * 30 / 64)  # a job a minute, 30 minutes each


def test_simulate_plots_keep_legends_off_the_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 26: utilisation.png's legend sat in its lower right corner, over the curve."""
    legends: list[bool] = []
    real = Figure.savefig

    def spy(self: Figure, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **kwargs)
        renderer = self.canvas.get_renderer()  # type: ignore[attr-defined]
        for ax in self.axes:
            if (legend := ax.get_legend()) is not None:
                box, area = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
                legends.append(box.x0 >= area.x1 - 0.5)

    monkeypatch.setattr(Figure, "savefig", spy)
    result, _ = _with_running_work()
    plots.write_plots(result.records, result.timeline, tmp_path)
    assert legends == [True]
