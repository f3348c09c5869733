"""xce report: the HTML page of a replay, a comparison, replays and a sweep; bad input."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from typer.testing import CliRunner

from xce.cli.main import app
from xce.cli.report_cmd import report_app
from xce.errors import InputError
from xce.sim import plots
from xce.sim import report as report_mod
from xce.sim.model import JobRecord, SimJob
from xce.sim.report import figures

runner = CliRunner()

START = 1_700_000_000  # the trace's UnixStartTime: 2023-11-14 22:13:20 UTC
POLICIES = ("strict", "fcfs", "fcfs+easy")
SECTIONS = (
    "summary",
    "waits",
    "slowdown",
    "utilisation",
    "queues",
    "users",
    "logged",
    "gantt",
)


def _trace(path: Path, jobs: int = 40, queues: int = 2) -> Path:
    rng = random.Random(5)
    lines = ["; Version: 2.2", f"; UnixStartTime: {START}", "; MaxNodes: 4", "; MaxProcs: 16"]
    t = 0
    for i in range(1, jobs + 1):
        t += rng.randint(0, 4000)
        run, procs = rng.randint(30, 9000), rng.choice([1, 2, 4, 8])
        user, queue = rng.randint(1, 3), rng.randint(1, queues)
        fields = [i, t, rng.randint(0, 3000), run, procs, -1, -1, procs, 2 * run, -1, 1]
        fields += [user, 1, -1, queue, -1, -1, -1]
        lines.append(" ".join(map(str, fields)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _run(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trace, a replay of it (sim/), a comparison (cmp/) and two replays (many/)."""
    root = tmp_path_factory.mktemp("report")
    trace = _trace(root / "tiny.swf")
    _run(["simulate", "--workload", str(trace), "--out", str(root / "sim")])
    compare = ["compare", "--workload", str(trace), "--out", str(root / "cmp")]
    _run([*compare, *(a for p in POLICIES for a in ("--policy", p))])
    (root / "many").mkdir()
    for picker in ("strict", "fcfs"):
        out = root / "many" / picker
        _run(["simulate", "--workload", str(trace), "--picker", picker, "--out", str(out)])
    return root


def _report(args: list[str]) -> str:
    result = runner.invoke(report_app, args)
    assert result.exit_code == 0, result.output
    out = Path(args[args.index("-o") + 1])
    return out.read_text(encoding="utf-8")


def _section(page: str, key: str) -> str:
    match = re.search(rf'<section id="{key}">(.*?)</section>', page, re.S)
    assert match is not None, key
    return match.group(1)


def _images(text: str) -> list[str]:
    return re.findall(
        r'<img src="data:image/(?:png|svg\+xml);base64,[A-Za-z0-9+/=]+" alt="([^"]*)"', text
    )


# -- content -----------------------------------------------------------------------------


def test_a_replay_has_every_section_drawn(made: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    page = _report([str(made / "sim"), "-o", str(out)])
    assert list(re.findall(r'<section id="(\w+)">', page)) == list(SECTIONS)
    assert '<td data-sort="fcfs">fcfs</td>' in page  # metrics.json names the policy
    for key in SECTIONS[1:]:
        assert _images(_section(page, key)), key
    assert "calendar time (UTC)" in _section(page, "utilisation")
    # the default window is the busiest calendar day, a whole UTC day
    assert re.search(r"The window: 2023-11-\d\d 00:00 UTC to 2023-11-\d\d 00:00 UTC", page)
    logged = _section(page, "logged")
    assert ">logged<" in logged
    assert ">simulated<" in logged


def test_the_summary_gives_each_policys_fairness_between_users(made: Path, tmp_path: Path) -> None:
    """issue 28 (study "in the report"): with several users, the summary has xce
    compare's user fairness (Jain's index over users' mean bounded slowdowns) and worst
    user bsld, each policy's read from its own metrics."""
    from xce.sim.compare import user_fairness

    page = _report([str(made / "cmp"), "-o", str(tmp_path / "c.html")])
    summary = _section(page, "summary")
    assert "user fairness" in summary
    assert "worst user bsld" in summary
    compared = json.loads((made / "cmp" / "compare.json").read_text(encoding="utf-8"))
    for entry in compared["policies"]:
        fair = user_fairness(entry["metrics"])
        assert fair.jain is not None
        assert f'<td data-sort="{fair.jain!r}">{fair.jain:,.2f}</td>' in summary
    assert "Jain" in summary  # the note saying what the figure is


def test_a_comparison_has_every_section_drawn_per_policy(made: Path, tmp_path: Path) -> None:
    """issue 14: a comparison keeps its policies' jobs (compare_jobs.csv), so its page has
    calendar utilisation, logged waits and a Gantt chart of every policy, as a replay's.
    issue 26: each quantity is ONE figure, the policies overlaid or side by side (it was
    a figure per policy, one under the other)."""
    page = _report([str(made / "cmp"), "-o", str(tmp_path / "c.html")])
    summary = _section(page, "summary")
    for policy in POLICIES:
        assert f'<td data-sort="{policy}">{policy}</td>' in summary
    assert list(re.findall(r'<section id="(\w+)">', page)) == list(SECTIONS)
    for key, alt in (
        ("waits", "wait CDFs"),
        ("slowdown", "bounded slowdown by job size"),
        ("utilisation", "utilisation"),
        ("queues", "wait by queue"),
        ("users", "wait by user"),
        ("logged", "simulated against logged wait"),
        ("gantt", "Gantt chart"),
    ):
        assert _images(_section(page, key)) == [alt], key
    assert "<caption>Wait by queue</caption>" in _section(page, "queues")
    assert "<caption>Wait by user</caption>" in _section(page, "users")
    assert "calendar time (UTC)" in _section(page, "utilisation")
    for policy in POLICIES:  # the tables keep a row per policy
        assert f'<td data-sort="{policy}">{policy}</td>' in _section(page, "logged")


def test_compare_jobs_are_each_policys_simulate_jobs(made: Path) -> None:
    """compare_jobs.csv holds, per policy, exactly the rows of ``xce simulate``'s
    jobs.csv for that policy (here strict and fcfs, replayed alone into many/)."""
    lines = (made / "cmp" / "compare_jobs.csv").read_text(encoding="utf-8").splitlines()
    header, *rows = lines
    alone = (made / "many" / "fcfs" / "jobs.csv").read_text(encoding="utf-8").splitlines()
    assert header == "policy," + alone[0]
    for picker in ("strict", "fcfs"):
        own = (made / "many" / picker / "jobs.csv").read_text(encoding="utf-8").splitlines()
        assert [r.removeprefix(f"{picker},") for r in rows if r.startswith(f"{picker},")] == own[1:]


def test_an_older_comparison_embeds_its_plots(made: Path, tmp_path: Path) -> None:
    """A comparison without compare_jobs.csv (written by an earlier xce) gets its own
    overlaid plots, and the per-job sections say what they need."""
    old = tmp_path / "old"
    old.mkdir()
    for path in (made / "cmp").iterdir():
        if path.name != "compare_jobs.csv" and path.suffix != ".html":
            (old / path.name).write_bytes(path.read_bytes())
    page = _report([str(old), "-o", str(tmp_path / "c.html")])
    assert _images(_section(page, "waits")) == ["compare_wait_cdf.png"]
    assert _images(_section(page, "slowdown")) == ["compare_bsld_by_size.png"]
    for key in ("utilisation", "logged", "gantt"):  # per-job sections say why they are empty
        assert "per-job records (jobs.csv)" in _section(page, key)


def test_a_comparison_missing_a_policys_jobs_is_bad_input(made: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut"
    cut.mkdir()
    for path in (made / "cmp").iterdir():
        data = path.read_bytes()
        if path.name == "compare_jobs.csv":
            data = b"\n".join(r for r in data.split(b"\n") if not r.startswith(b"strict,"))
        (cut / path.name).write_bytes(data)
    result = runner.invoke(report_app, [str(cut), "-o", str(tmp_path / "c.html")])
    assert result.exit_code == 2
    assert "compare_jobs.csv" in result.output
    assert "no jobs of policy 'strict'" in result.output


def test_replays_in_subdirectories_are_overlaid(made: Path, tmp_path: Path) -> None:
    page = _report([str(made / "many"), "-o", str(tmp_path / "m.html")])
    assert "replays, one per subdirectory" in page
    assert _images(_section(page, "waits")) == ["wait CDFs"]
    assert _images(_section(page, "gantt")) == ["Gantt chart"]  # one figure, a panel each


def test_a_sweep_table(tmp_path: Path) -> None:
    (tmp_path / "results.csv").write_text(
        "cell,workload,policy,hosts,seed,mean_wait_s,utilization,metrics\n"
        "c1,a.swf,fcfs,4,1,120.5,0.5,{}\nc2,b.swf,strict,8,2,,0.75,{}\n",
        encoding="utf-8",
    )
    page = _report([str(tmp_path), "-o", str(tmp_path / "s.html")])
    summary = _section(page, "summary")
    assert "Sweep: one row per cell (2 cells)" in summary
    assert '<td data-sort="120.5">2.0 min</td>' in summary
    assert '<td data-sort="">–</td>' in summary  # a missing value sorts last


def test_every_title_names_the_workload_and_the_policy(
    made: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    titles: list[str] = []
    real = plots.render_panels

    def recording(
        draws: Sequence[Callable[[Axes], None]], subtitle: str = "", fmt: str = "png", **kw: str
    ) -> bytes:
        for draw in draws:
            ax = Figure().add_subplot()
            draw(ax)
            titles.append(f"{kw.get('title', '')}\n{ax.get_title()}\n{subtitle}")
        return real(draws, subtitle, fmt, **kw)

    monkeypatch.setattr(plots, "render_panels", recording)
    _report([str(made / "many"), "-o", str(tmp_path / "m.html")])
    assert len(titles) >= 8
    for title in titles:
        assert "tiny.swf" in title
        assert "strict" in title or "fcfs" in title, title


def test_compare_plots_titles_name_the_policies(tmp_path: Path) -> None:
    job = SimJob("1", 0.0, 60.0, 1)
    runs = [("fcfs", [JobRecord(job, 5.0, 65.0, slots=1)]), ("strict", [])]
    ax = Figure().add_subplot()
    plots.bsld_by_size(ax, runs, "w.swf")
    assert "w.swf" in ax.get_title()
    assert "fcfs, strict" in ax.get_title()


def test_tables_are_sortable_and_nothing_is_fetched(made: Path, tmp_path: Path) -> None:
    page = _report([str(made / "sim"), "-o", str(tmp_path / "r.html"), "--svg"])
    assert page.count('<table class="sortable">') >= 4
    assert 'addEventListener("click"' in page
    assert "default-src 'none'" in page  # the page's own policy: no network at all
    for attribute in re.findall(r'(?:src|href)="([^"]*)"', page):
        assert attribute.startswith(("data:", "#")), attribute[:60]
    assert "<link" not in page
    assert "@import" not in page
    assert _images(_section(page, "waits"))  # SVG embedded too


# -- windows and bins ----------------------------------------------------------------------


def _records(*spans: tuple[float, float, int]) -> list[JobRecord]:
    return [
        JobRecord(SimJob(str(i), start, end - start, slots), start, end, ("h1",), slots=slots)
        for i, (start, end, slots) in enumerate(spans)
    ]


@pytest.mark.parametrize("start", ["100000000", "0"])
def test_a_gantt_window_with_no_job_in_it_says_so(made: Path, tmp_path: Path, start: str) -> None:
    """No job runs in the window: the panel says so (matplotlib's date ticks once failed
    on the empty axis, an internal error, exit 1)."""
    page = _report([str(made / "sim"), "-o", str(tmp_path / "r.html"), "--gantt-from", start])
    assert "<section" in page


def test_a_gantt_window_past_a_century_exits_2(made: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        report_app, [str(made / "sim"), "-o", str(tmp_path / "r.html"), "--gantt-hours", "1e300"]
    )
    assert result.exit_code == 2, result.output
    assert "--gantt-hours 1e+300: expected a positive number of hours, at most" in result.output
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    ("start", "message"),
    [
        ("1e12", "the window must lie between the years 1 and 9999"),
        ("9999-12-31T23:00", "the window must lie between the years 1 and 9999"),
        ("1e20", "expected seconds within"),
        ("-1e20", "expected seconds within"),
        ("inf", "expected a finite number of seconds or a date"),
    ],
)
def test_a_gantt_window_off_the_calendar_exits_2(
    made: Path, tmp_path: Path, start: str, message: str
) -> None:
    """--gantt-from is range-checked as --gantt-hours is: a window past the year 9999 of
    the trace's calendar, or seconds beyond a state's largest time, exit 2 before any
    drawing (they were internal errors: "year 33685 is out of range"); inf is not a
    date (it was told "a date needs the trace's UnixStartTime")."""
    out = tmp_path / "r.html"
    result = runner.invoke(report_app, [str(made / "sim"), "-o", str(out), f"--gantt-from={start}"])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not out.exists()


def test_a_json_file_cut_after_a_newline_is_located(made: Path, tmp_path: Path) -> None:
    """metrics.json cut to '{' and a newline: exit 2 at line 2 (it was an internal
    error: the error's line is past the last line break)."""
    import shutil

    sim = tmp_path / "sim"
    shutil.copytree(made / "sim", sim)
    (sim / "metrics.json").write_text("{\n", encoding="utf-8")
    result = runner.invoke(report_app, [str(sim), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 2, result.output
    assert "metrics.json:2:1: not valid JSON" in result.output


@pytest.mark.parametrize(
    ("results", "holds"),
    [("cmp", "a comparison (compare.json)"), ("many", "a directory of replays")],
)
def test_a_policy_for_results_of_several_runs_exits_2(
    made: Path, tmp_path: Path, results: str, holds: str
) -> None:
    """``--policy`` names a lone replay's policy (titles); results of several runs name
    each run's own, so it is refused rather than silently left unused."""
    out = tmp_path / "r.html"
    result = runner.invoke(report_app, [str(made / results), "-o", str(out), "--policy", "x"])
    assert result.exit_code == 2, result.output
    assert f"--policy names one replay's policy, and RESULTS {made / results} holds {holds}" in (
        " ".join(result.output.split())
    )
    assert not out.exists()
    page = _report([str(made / "sim"), "-o", str(out), "--policy", "my policy"])
    assert "my policy" in _section(page, "summary")


def test_the_gantt_window() -> None:
    day = 86400.0
    records = _records((10, 20, 1), (day + 5, day + 9, 1), (day + 7, day + 8, 1))
    assert report_mod.gantt_window(records, None, 6, None) == (day, day + 6 * 3600)
    assert report_mod.gantt_window(records, "3600", 1, None) == (3600.0, 7200.0)
    start = 1_000_000.0
    low, _ = report_mod.gantt_window(records, "1970-01-13T00:00", 2, start)
    assert low == 12 * day - start
    with pytest.raises(InputError, match="UnixStartTime"):
        report_mod.gantt_window(records, "1970-01-13", 2, None)
    with pytest.raises(InputError, match="--gantt-hours"):
        report_mod.gantt_window(records, None, 0, None)


def test_binning_follows_the_calendar() -> None:
    times, busy = plots.busy_steps(_records((0, 10 * 86400, 4), (86400, 2 * 86400, 4)))
    assert list(times) == [0, 86400, 2 * 86400, 10 * 86400]
    assert list(busy) == [4, 8, 4, 0]
    start = 43200.0  # noon: calendar days start half a simulated day in
    edges, means, unit = plots.step_bins(times, busy, start)
    assert unit == "day"
    assert edges[0] == 0
    assert edges[1] == 43200
    assert all((e + start) % 86400 == 0 for e in edges[1:-1])
    assert np.allclose(means, [4, 6, 6, 4, 4, 4, 4, 4, 4, 4, 4])  # the last half a day


# -- bad input and the output path -----------------------------------------------------------


def _fails(args: list[str]) -> str:
    result = runner.invoke(report_app, args)
    assert result.exit_code == 2, result.output
    return result.output


def test_a_directory_without_results(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    assert "none of results.csv" in _fails([str(tmp_path)])
    assert "not a directory" in _fails([str(tmp_path / "notes.txt")])


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("metrics.json", '{"jobs": 3,', "metrics.json:1"),
        ("metrics.json", "[1, 2]", "expected a JSON object"),
        ("jobs.csv", "job,submit\n1,0\n", "the header lacks"),
        ("jobs.csv", None, "jobs.csv:3"),
    ],
)
def test_a_corrupt_replay_names_the_file(
    made: Path, tmp_path: Path, name: str, text: str | None, message: str
) -> None:
    for part in ("metrics.json", "jobs.csv"):
        (tmp_path / part).write_bytes((made / "sim" / part).read_bytes())
    if text is None:  # the second job's submit time is not a number
        lines = (tmp_path / "jobs.csv").read_text(encoding="utf-8").splitlines()
        lines[2] = "2,soon," + lines[2].split(",", 2)[2]
        text = "\n".join(lines) + "\n"
    (tmp_path / name).write_text(text, encoding="utf-8")
    output = _fails([str(tmp_path)])
    assert message in output
    assert not (tmp_path / "report.html").exists()


def test_a_corrupt_comparison(tmp_path: Path) -> None:
    (tmp_path / "compare.json").write_text(json.dumps({"workload": "w"}), encoding="utf-8")
    assert "compare.json" in _fails([str(tmp_path)])


def test_the_output_is_checked_before_the_work(
    made: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_work(*args: object, **kwargs: object) -> None:
        raise AssertionError("the results were read before the output was checked")

    monkeypatch.setattr(report_mod, "load_results", no_work)
    there = tmp_path / "r.html"
    there.write_text("mine", encoding="utf-8")
    assert "already exists" in _fails([str(made / "sim"), "-o", str(there)])
    assert there.read_text(encoding="utf-8") == "mine"
    assert "does not exist" in _fails([str(made / "sim"), "-o", str(tmp_path / "no" / "r.html")])
    input_file = str(made / "sim" / "jobs.csv")
    assert "never writes over an input" in _fails([str(made / "sim"), "-o", input_file, "--force"])


def test_a_missing_trace_is_named(made: Path, tmp_path: Path) -> None:
    missing = tmp_path / "gone.swf"
    assert "gone.swf" in _fails(
        [str(made / "sim"), "-o", str(tmp_path / "r.html"), "--trace", str(missing)]
    )


def test_without_its_trace_the_page_says_so(made: Path, tmp_path: Path) -> None:
    moved = tmp_path / "sim"
    moved.mkdir()
    for part in ("metrics.json", "jobs.csv"):
        (moved / part).write_bytes((made / "sim" / part).read_bytes())
    metrics = json.loads((moved / "metrics.json").read_text(encoding="utf-8"))
    metrics["trace"]["source"] = str(tmp_path / "elsewhere" / "tiny.swf")
    del metrics["policy"]  # as results of an xce before it was written
    (moved / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    page = _report([str(moved), "-o", str(tmp_path / "r.html")])
    assert "Binned over simulated time" in page
    assert "is not here: pass --trace" in _section(page, "logged")
    assert "policy not recorded (see --policy)" not in page  # titles are in the images
    assert "not recorded (see --policy)" in _section(page, "summary")


@pytest.mark.parametrize(
    ("days", "unit"), [(0.5, "hour"), (2, "hour"), (2.5, "day"), (90, "day"), (91, "week")]
)
def test_bin_width(days: float, unit: str) -> None:
    assert plots.bin_width(days * 86400)[1] == unit


def test_gantt_lanes_keep_jobs_sharing_a_host_apart() -> None:
    records = _records((0, 100, 1), (10, 50, 1), (60, 90, 1), (95, 120, 1))
    ax = Figure().add_subplot()
    figures.gantt(ax, records, (0, 200), None)
    paths = [p for c in ax.collections for p in c.get_paths()]  # one bar a path
    bars = sorted((round(p.get_extents().y0, 3), i) for i, p in enumerate(paths))
    assert len(bars) == 4
    assert len({y for y, _ in bars}) == 2  # two lanes: three jobs never overlap each other


def test_a_sweep_table_with_each_cells_metrics(made: Path, tmp_path: Path) -> None:
    """xce sweep's results.csv: the metrics.json object of each cell in a last column;
    a row still being appended (no newline yet) is left out."""
    metrics = (made / "sim" / "metrics.json").read_text(encoding="utf-8")
    compact = json.dumps(json.loads(metrics), separators=(",", ":"))
    quoted = '"' + compact.replace('"', '""') + '"'
    (tmp_path / "results.csv").write_text(
        "cell,workload,policy,mean_wait_s,metrics\n"
        f"c1,tiny.swf,fcfs,10,{quoted}\nc2,tiny.swf,strict,20,{quoted}\nc3,tiny.sw",
        encoding="utf-8",
    )
    page = _report([str(tmp_path), "-o", str(tmp_path / "s.html")])
    summary = _section(page, "summary")
    assert "(2 cells)" in summary
    assert "by_queue" not in summary  # the metrics column is not shown
    assert _images(_section(page, "waits")) == ["wait by run"]  # medians and p95 of the cells
    assert _images(_section(page, "queues")) == ["wait by queue"]  # the cells side by side
    assert _images(_section(page, "users")) == ["wait by user"]
    assert "xce sweep --keep-jobs" in _section(page, "gantt")
    (tmp_path / "results.csv").write_text(
        "cell,policy,metrics\nc1,fcfs,{not json}\n", encoding="utf-8"
    )
    assert "results.csv:2" in _fails([str(tmp_path), "-o", str(tmp_path / "t.html")])


# -- issue 26: what the report must refuse -------------------------------------------------


def _copy_replay(made: Path, to: Path) -> Path:
    to.mkdir(exist_ok=True)
    for part in ("metrics.json", "jobs.csv"):
        (to / part).write_bytes((made / "sim" / part).read_bytes())
    return to


def _with_column(path: Path, column: str, value: str, row: int = 1) -> None:
    """Set ``column`` of data row ``row`` of the CSV file at ``path`` to ``value``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    fields = lines[row].split(",")
    fields[header.index(column)] = value
    lines[row] = ",".join(fields)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("planned_start", "abc", "jobs.csv:2: planned_start 'abc' is not a number"),
        ("bsld", "slow", "jobs.csv:2: bsld 'slow' is not a number"),
        ("wait", "nan", "jobs.csv:2: wait 'nan' is not a number"),
        ("backfilled", "yes", "jobs.csv:2: backfilled 'yes' is not a number"),
    ],
)
def test_a_jobs_table_with_text_for_a_number(
    made: Path, tmp_path: Path, column: str, value: str, message: str
) -> None:
    """issue 26: a number column no figure reads (planned_start=abc) was accepted."""
    replay = _copy_replay(made, tmp_path / "sim")
    _with_column(replay / "jobs.csv", column, value)
    assert message in _fails([str(replay)])
    assert not (replay / "report.html").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x,y\n1,2\n", "results.csv:1: not a results table of xce sweep: the header lacks "),
        ("cell,policy\nc1,fcfs\n", "the header lacks metrics"),
        ("cell,policy,mean_wait_s,metrics\nc1,fcfs,soon,{}\n", "results.csv:2: mean_wait_s"),
        ("cell,policy,metrics\nc1,fcfs,[1]\n", "results.csv:2: the metrics column: expected"),
        (f"cell,policy,metrics\nc1,fcfs,{DEEP}\n", "results.csv:2: the metrics column: nested"),
        (
            'cell,policy,metrics\nc1,fcfs,"{""by_user"": {""u"": 3}}"\n',
            "results.csv:2: metrics.by_user.u: expected an object of numbers",
        ),
    ],
    ids=["foreign", "no metrics", "text for a number", "not an object", "deep", "bad group"],
)
def test_a_results_table_not_of_a_sweep(tmp_path: Path, text: str, message: str) -> None:
    """issue 26: a foreign results.csv (header x,y) gave exit 0 and a page."""
    (tmp_path / "results.csv").write_text(text, encoding="utf-8")
    assert message in _fails([str(tmp_path)])


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("metrics.json", DEEP, "metrics.json:1:101: nested deeper than 100 levels"),
        ("metrics.json", '{"a": ' + DEEP + "}", "metrics.json:1:106: nested deeper"),
        ("metrics.json", '{\n"s": "[[[[",\n"a": ' + DEEP + "}", "metrics.json:3:105: nested"),
        (
            "metrics.json",
            '{"total_slots": "many"}',
            "metrics.json: total_slots: expected a positive number",
        ),
        ("metrics.json", '{"total_slots": 0}', "metrics.json: total_slots: expected a positive"),
        ("metrics.json", '{"total_slots": -5}', "metrics.json: total_slots: expected a positive"),
        ("metrics.json", '{"by_queue": [1]}', "metrics.json: by_queue: expected an object"),
        (
            "metrics.json",
            '{"by_queue": {"q": {"jobs": "3"}}}',
            "metrics.json: by_queue.q.jobs: expected a number or null",
        ),
        ("compare.json", DEEP, "compare.json:1:101: nested deeper"),
        (
            "compare.json",
            '{"workload": "w", "policies": [{"metrics": {"by_user": {"u": []}}}]}',
            "compare.json: policies[0].metrics.by_user.u: expected an object",
        ),
    ],
    ids=[
        "deep",
        "deep inside",
        "deep on line 3",
        "slots",
        "no slots",
        "negative slots",
        "queues",
        "group",
        "compare",
        "cmp",
    ],
)
def test_results_nested_too_deep_or_misshapen(
    made: Path, tmp_path: Path, name: str, text: str, message: str
) -> None:
    """issue 26: JSON nested thousands deep ended in a RecursionError traceback; a
    misshapen metrics object in an internal error. Both exit 2, located."""
    if name == "metrics.json":
        _copy_replay(made, tmp_path)
    (tmp_path / name).write_text(text, encoding="utf-8")
    result = runner.invoke(report_app, [str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


# -- issue 26: the page as a new user reads it -------------------------------------------------


def test_one_queue_has_no_wait_by_queue_section(tmp_path: Path) -> None:
    """issue 26: with one queue, "wait by queue" drew one bar per policy that only
    repeated the summary; the section is left out, and the summary says why."""
    trace = _trace(tmp_path / "one.swf", jobs=20, queues=1)
    _run(["simulate", "--workload", str(trace), "--out", str(tmp_path / "sim")])
    page = _report([str(tmp_path / "sim"), "-o", str(tmp_path / "r.html")])
    sections = re.findall(r'<section id="(\w+)">', page)
    assert "queues" not in sections
    assert "users" in sections
    assert "Wait by queue" not in page
    summary = _section(page, "summary")
    assert "All jobs are in one queue, q1: no section of wait by queue." in summary


def _overlaps(a: object, b: object) -> bool:
    from matplotlib.transforms import BboxBase

    assert isinstance(a, BboxBase)
    assert isinstance(b, BboxBase)
    return bool(a.x0 < b.x1 - 0.5 and b.x0 < a.x1 - 0.5 and a.y0 < b.y1 - 0.5 and b.y0 < a.y1 - 0.5)


def test_no_legend_covers_a_plot(
    made: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 26: legends sat inside the plots (lower right, upper right), over curves
    and bars; every legend of every figure of a comparison's page is now outside the
    plot area of every axes of its figure."""
    seen: list[str] = []
    covering: list[str] = []
    real = Figure.savefig

    def checked(self: Figure, *args: object, **kwargs: object) -> None:
        real(self, *args, **kwargs)  # type: ignore[arg-type]
        renderer = self.canvas.get_renderer()  # type: ignore[attr-defined]
        for ax in self.axes:
            legend = ax.get_legend()
            if legend is None:
                continue
            seen.append(ax.get_title())
            box = legend.get_window_extent(renderer)
            if any(_overlaps(box, other.get_window_extent(renderer)) for other in self.axes):
                covering.append(ax.get_title())

    monkeypatch.setattr(Figure, "savefig", checked)
    _report([str(made / "cmp"), "-o", str(tmp_path / "c.html")])
    assert len(seen) >= 5  # waits, slowdown, by queue, by user, logged
    assert not covering


def test_figures_are_wide_enough_to_read(made: Path, tmp_path: Path) -> None:
    """issue 26: the figures were 800 x 450 pixels of 10-point text; now as wide as the
    page's column on a 1280-pixel screen (the browser test checks they are shown at
    that size), and their text 11-point."""
    import base64
    import struct

    page = _report([str(made / "cmp"), "-o", str(tmp_path / "c.html")])
    encoded = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(encoded) >= 7
    for data in encoded:
        width, _ = struct.unpack(">II", base64.b64decode(data)[16:24])
        assert width == plots.WIDTH_PX >= 1100


def test_the_report_shows_progress(
    made: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 26: a long report ran 19 s with nothing shown; on a terminal, a progress
    bar on stderr names each section as it is drawn (stdout keeps its one line)."""
    from xce.cli import report_cmd

    monkeypatch.setattr(report_cmd, "_show_progress", lambda: True)
    result = runner.invoke(report_app, [str(made / "cmp"), "-o", str(tmp_path / "c.html")])
    assert result.exit_code == 0, result.output
    assert "Gantt chart" in result.stderr
    assert "report" in result.stderr
    assert result.stdout.startswith("wrote ")


def test_progress_hears_of_every_section(made: Path) -> None:
    calls: list[tuple[int, int, str]] = []
    results = report_mod.load_results(made / "cmp")
    page = report_mod.build_report(results, progress=lambda *a: calls.append(a))
    names = re.findall(r'<section id="\w+"><h2>([^<]*)</h2>', page)
    assert calls == [
        *((k, len(names), name.replace("&#x27;", "'")) for k, name in enumerate(names)),
        (len(names), len(names), ""),
    ]


def _sweep_with_cells(made: Path, root: Path, cells: list[tuple[str, bool]]) -> Path:
    """A sweep's results.csv of ``cells`` (name, whether its jobs are kept in
    cells/NAME/jobs.csv), each with the metrics and jobs of made/many/fcfs."""
    metrics = (made / "many" / "fcfs" / "metrics.json").read_text(encoding="utf-8")
    compact = json.dumps(json.loads(metrics), separators=(",", ":"))
    quoted = '"' + compact.replace('"', '""') + '"'
    rows = ["cell,workload,policy,seed,mean_wait_s,metrics"]
    root.mkdir()
    for k, (name, kept) in enumerate(cells):
        rows.append(f"{name},tiny.swf,fcfs,{k},10,{quoted}")
        if kept:
            (root / "cells" / name).mkdir(parents=True)
            jobs = (made / "many" / "fcfs" / "jobs.csv").read_bytes()
            (root / "cells" / name / "jobs.csv").write_bytes(jobs)
    (root / "results.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root


def test_a_sweep_with_kept_jobs_draws_distributions(made: Path, tmp_path: Path) -> None:
    """issue 26: a sweep's report said "needs per-job records"; with xce sweep
    --keep-jobs's OUT/cells/<cell>/jobs.csv it draws every per-job section over the cells
    that kept them, and names those that did not."""
    root = _sweep_with_cells(made, tmp_path / "sweep", [("c1", True), ("c2", True), ("c3", False)])
    page = _report([str(root), "-o", str(tmp_path / "s.html")])
    assert "(3 cells)" in _section(page, "summary")
    assert _images(_section(page, "waits")) == ["wait CDFs"]
    assert "Without per-job records (not drawn): fcfs, seed 2." in _section(page, "waits")
    for key, alt in (
        ("slowdown", "bounded slowdown by job size"),
        ("utilisation", "utilisation"),
        ("gantt", "Gantt chart"),
    ):
        assert _images(_section(page, key)) == [alt], key
    assert "per-job records" not in page.replace("Without per-job records", "")


def test_a_sweep_cell_is_never_a_path(made: Path, tmp_path: Path) -> None:
    """A cell column is read as a directory name under cells/ only when it is a plain name."""
    root = _sweep_with_cells(made, tmp_path / "sweep", [("c1", False)])
    (root / "cells").mkdir()
    text = (root / "results.csv").read_text(encoding="utf-8").replace("\nc1,", "\n../cells,")
    (root / "results.csv").write_text(text, encoding="utf-8")
    (root / "cells" / "jobs.csv").write_bytes((made / "many" / "fcfs" / "jobs.csv").read_bytes())
    page = _report([str(root), "-o", str(tmp_path / "s.html")])
    assert _images(_section(page, "waits")) == ["wait by run"]


def test_a_figure_draws_at_most_eight_runs(made: Path, tmp_path: Path) -> None:
    cells = [(f"c{k}", True) for k in range(9)]
    page = _report(
        [str(_sweep_with_cells(made, tmp_path / "s", cells)), "-o", str(tmp_path / "s.html")]
    )
    assert "The figure draws the first 8 of 9 runs; the table has all." in _section(page, "waits")
    assert page.count('<td data-sort="fcfs, seed 8">') >= 1  # the tables keep the ninth


@pytest.mark.parametrize(
    ("varying", "label"),
    [
        (set(), "fcfs"),
        ({"seed"}, "fcfs, seed 3"),
        ({"cluster", "seed"}, "fcfs on 3x4, seed 3"),
        ({"workload", "options", "repetition"}, "fcfs, a.swf, interval 60, repetition 2"),
        ({"cell"}, "fcfs"),
    ],
)
def test_a_sweep_cell_is_named_by_what_varies(varying: set[str], label: str) -> None:
    """A cell's name in legends: its policy and only the columns that tell the cells apart
    (labels of every column squeezed the figures beside their legends)."""
    from xce.sim.report.read import _cell_label

    row = {
        "cell": "c1",
        "policy": "fcfs",
        "cluster": "3x4",
        "workload": "/x/a.swf",
        "seed": "3",
        "options": "interval 60",
        "repetition": "2",
    }
    assert _cell_label(row, varying) == label
