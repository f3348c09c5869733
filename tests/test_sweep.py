"""``xce sweep`` (issue 14): a grid of replays on Dask, kept per cell and resumable;
each cell's metrics exactly those of ``xce simulate`` run alone.

The Dask runs use a LocalCluster of 2 workers: worker processes where results are
compared, threads (``processes=False``) where the test counts executions in
``xce.sim.sweep.runs``, which only a worker in this process can raise.
"""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, LocalCluster
from typer.testing import CliRunner

from xce.cli import sweep_cmd
from xce.cli.main import app
from xce.cli.sweep_cmd import RESULTS, ResultsTable, run_sweep
from xce.sim import sweep
from xce.sim.sweep import Cell, load_grid, run_cells

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CLUSTER = """
hosts:
  - {name: a, slots: 4}
  - {name: b, slots: 8}
"""
PICKERS = ("fcfs", "strict", "fairshare")
GRID = """
workloads:
  - generated: 40
    seeds: [1, 2]
clusters:
  - file: cluster.yaml
  - file: cluster.yaml
    scale: 2
  - hosts: 3
    slots_per_host: 4
policies: [fcfs, strict, fcfs+easy]
"""


def _grid(tmp_path: Path, text: str = GRID, name: str = "grid.yaml") -> Path:
    (tmp_path / "cluster.yaml").write_text(CLUSTER, encoding="utf-8")
    grid = tmp_path / name
    grid.write_text(text, encoding="utf-8")
    return grid


def _canon(metrics: dict[str, Any]) -> str:
    return json.dumps(metrics, sort_keys=True)


@pytest.fixture(scope="module")
def threads() -> Iterator[Client]:
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False) as cluster,
        Client(cluster) as client,
    ):
        yield client


def _simulate_args(cell: Cell) -> list[str]:
    """``xce simulate`` arguments of a cell that a command line can express."""
    w, c = cell.workload, cell.cluster
    args = ["simulate", "--workload", w.spec, "--json"]
    args += ["--seed", str(w.seed)] if w.generated else []  # a file takes no seed
    args += ["--cluster", str(c.file)] if c.file else ["--hosts", str(c.hosts)]
    args += ["--slots-per-host", str(c.slots_per_host)] if c.hosts else []
    picker, *mods = cell.policy.split("+")
    return [*args, "--picker", picker, *(a for m in mods for a in ("--backfill", m))]


def test_grid_expands_to_distinct_cells(tmp_path: Path) -> None:
    cells = load_grid(_grid(tmp_path))
    assert len(cells) == 2 * 3 * 3
    assert len({c.id for c in cells}) == len(cells)
    assert {c.cluster.name for c in cells} == {"cluster.yaml", "cluster.yaml x2", "3x4"}


def test_ids_do_not_depend_on_order_or_place(tmp_path: Path) -> None:
    first = {c.id for c in load_grid(_grid(tmp_path / "a" if _mk(tmp_path / "a") else tmp_path))}
    moved = GRID.replace("[fcfs, strict, fcfs+easy]", "[fcfs+easy, strict, fcfs]")
    second = {c.id for c in load_grid(_grid(_mk(tmp_path / "b"), moved))}
    assert first == second


def _mk(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_repetitions_draw_further_seeds(tmp_path: Path) -> None:
    text = GRID.replace("seeds: [1, 2]", "seeds: [1]") + "repetitions: 3\n"
    cells = load_grid(_grid(tmp_path, text))
    assert sorted({(c.workload.seed, c.repetition) for c in cells}) == [(1, 0), (2, 1), (3, 2)]


def test_dask_equals_sequential_and_simulate_alone(tmp_path: Path) -> None:
    cells = load_grid(_grid(tmp_path))
    sweep.clear_cache()
    alone = {c.id: _canon(m) for c, m in run_cells(cells)}
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, silence_logs=logging.ERROR
        ) as cluster,
        Client(cluster) as client,
    ):
        on_dask = {c.id: _canon(m) for c, m in run_cells(cells, client)}
    assert on_dask == alone
    runner = CliRunner()
    for cell in cells:
        if cell.cluster.scale != 1:
            continue  # no command-line form: checked against the sequential run above
        got = runner.invoke(app, _simulate_args(cell))
        assert got.exit_code == 0, got.output
        assert _canon(json.loads(got.stdout)) == on_dask[cell.id], cell.text


def test_scaled_cluster_has_each_host_k_times(tmp_path: Path) -> None:
    cells = load_grid(_grid(tmp_path))
    scaled = next(c.cluster for c in cells if c.cluster.scale == 2)
    state = sweep.cluster_state(scaled)
    assert state.hosts.n == 4


def test_grid_and_scaled_cluster_read_numbers_as_state_files_do(tmp_path: Path) -> None:
    """``1e3`` is a number in a grid as in a state file (YAML 1.2 floats): an option
    ``interval: 1e3`` was refused as a string, and a cluster file with ``mem: 1e4``
    loaded alone but not scaled."""
    text = GRID + "options: [{interval: 1e3}]\n"
    (tmp_path / "mem.yaml").write_text(
        "hosts:\n  - {name: a, slots: 4, resources: {mem: 1e4}}\n", encoding="utf-8"
    )
    text = text.replace("  - file: cluster.yaml\n    scale: 2", "  - file: mem.yaml\n    scale: 2")
    cells = load_grid(_grid(tmp_path, text))
    assert {c.options.interval for c in cells} == {1000.0}
    scaled = next(c.cluster for c in cells if c.cluster.scale == 2)
    state = sweep.cluster_state(scaled)
    assert state.hosts.n == 2
    assert state.free("mem").tolist() == [1e4, 1e4]


def _rows(out: Path) -> list[dict[str, str]]:
    with (out / RESULTS).open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


class _Killed(Exception):
    pass


def test_killed_sweep_resumes_without_recomputing(tmp_path: Path, threads: Client) -> None:
    cells = load_grid(_grid(tmp_path))
    out = _mk(tmp_path / "out")
    done: list[Cell] = []

    def kill_after_five(cell: Cell) -> None:
        done.append(cell)
        if len(done) == 5:
            raise _Killed

    with pytest.raises(_Killed):
        run_sweep(cells, ResultsTable(out / RESULTS), None, kill_after_five)
    kept = _rows(out)
    assert [r["cell"] for r in kept] == [c.id for c in done]
    before = sweep.runs
    ran = run_sweep(cells, ResultsTable(out / RESULTS), threads)
    assert sweep.runs - before == len(cells) - 5
    assert {c.id for c in ran} == {c.id for c in cells} - {c.id for c in done}
    rows = _rows(out)
    assert rows[:5] == kept  # the finished rows untouched
    assert sorted(r["cell"] for r in rows) == sorted(c.id for c in cells)
    assert run_sweep(cells, ResultsTable(out / RESULTS), threads) == []


def test_row_cut_short_is_dropped_and_its_cell_reruns(tmp_path: Path) -> None:
    cells = load_grid(_grid(tmp_path))[:3]
    out = _mk(tmp_path / "out")
    run_sweep(cells, ResultsTable(out / RESULTS), None)
    text = (out / RESULTS).read_text(encoding="utf-8")
    (out / RESULTS).write_text(text[: text.rfind(",")], encoding="utf-8")  # a kill mid-row
    table = ResultsTable(out / RESULTS)
    assert len(table.done) == 2
    ran = run_sweep(cells, table, None)
    assert [c.id for c in ran] == [cells[2].id]
    assert [r["cell"] for r in _rows(out)] == [c.id for c in cells]


def test_changed_grid_runs_only_new_cells(tmp_path: Path) -> None:
    grid = _grid(tmp_path)
    out = _mk(tmp_path / "out")
    first = load_grid(grid)
    run_sweep(first, ResultsTable(out / RESULTS), None)
    grid.write_text(GRID.replace("fcfs+easy]", "fcfs+easy, fairshare]"), encoding="utf-8")
    second = load_grid(grid)
    before = sweep.runs
    ran = run_sweep(second, ResultsTable(out / RESULTS), None)
    assert sweep.runs - before == len(ran) == 2 * 3
    assert {c.policy for c in ran} == {"fairshare"}


def test_command_runs_then_skips_finished_cells(tmp_path: Path) -> None:
    grid = _grid(tmp_path, GRID.replace("[fcfs, strict, fcfs+easy]", "[fcfs]"))
    out = tmp_path / "out"
    runner = CliRunner()
    first = runner.invoke(app, ["sweep", str(grid), "--out", str(out), "--workers", "2"])
    assert first.exit_code == 0, first.output
    assert "6 cells: 0 done, 6 to run" in first.stderr
    assert len(_rows(out)) == 6
    second = runner.invoke(app, ["sweep", str(grid), "--out", str(out)])
    assert second.exit_code == 0, second.output
    assert "6 cells: 6 done, 0 to run" in second.stderr
    assert len(_rows(out)) == 6


@pytest.mark.parametrize(
    ("grid", "where", "words"),
    [
        (GRID.replace("fcfs+easy]", "fcfs+warp]"), "policies[2]", "unknown modifier"),
        (GRID.replace("[fcfs,", "[nosuch,"), "policies[0]", "unknown picker"),
        (  # as xce compare refuses it (the two were merged into one cell, silently)
            GRID.replace("fcfs+easy]", "fcfs]"),
            "policies[2]",
            "policy 'fcfs' is given twice (also policies[0])",
        ),
        (
            GRID.replace("file: cluster.yaml\n  - file", "file: gone.yaml\n  - file"),
            "clusters[0].file",
            "does not exist",
        ),
        (
            "workloads:\n  - trace: missing.swf.gz\n"
            + GRID.split("clusters:", 1)[1].join(["clusters:", ""]),
            "workloads[0].trace",
            "does not exist",
        ),
        (
            GRID.replace("hosts: 3", "hosts: many"),
            "clusters[2].hosts",
            "expected `int | null`, got `str`",
        ),
        (GRID.replace("seeds: [1, 2]", "seeds: 7"), "workloads[0].seeds", "expected `array`"),
        (GRID.replace("scale: 2", "scale: 0"), "clusters[1].scale", ">= 1"),
        (GRID.replace("scale: 2", "scael: 2"), "clusters[1].scael", "unknown key"),
        (GRID + "repetitons: 2\n", "repetitons", "unknown key"),
        (
            GRID.replace("- hosts: 3", "- hosts: 3\n    file: cluster.yaml"),
            "clusters[2]",
            "either file",
        ),
        ("workloads: [\n", None, "not valid YAML"),
        (  # 4,000 seeds x 3 clusters x 9 policies: more cells than the limit
            GRID.replace("seeds: [1, 2]", f"seeds: {list(range(4000))}").replace(
                "[fcfs, strict, fcfs+easy]",
                "["
                + ", ".join(f"{p}{b}" for p in PICKERS for b in ("", "+easy", "+conservative"))
                + "]",
            ),
            None,
            "more than 100,000 (the limit)",
        ),
        ("- just a list\n", None, "expected a mapping"),
    ],
)
def test_bad_grid_exits_2_naming_file_and_place(
    tmp_path: Path, grid: str, where: str | None, words: str
) -> None:
    path = _grid(tmp_path, grid)
    got = CliRunner().invoke(app, ["sweep", str(path), "--out", str(tmp_path / "out")])
    assert got.exit_code == 2, got.output
    assert f"{path}:" in got.stderr
    assert words in got.stderr
    if where is not None:
        assert f": {where}:" in got.stderr
    assert not (tmp_path / "out").exists()


def _no_dask(*args: object) -> None:
    raise AssertionError("the sweep started before its output was checked")


@pytest.mark.parametrize("case", ["a file", "foreign table", "onto the grid", "no parent"])
def test_output_checked_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    monkeypatch.setattr(sweep_cmd, "dask_client", _no_dask)
    grid = _grid(tmp_path)
    out = tmp_path / "out"
    if case == "a file":
        out.write_text("x", encoding="utf-8")
    elif case == "foreign table":
        _mk(out)
        (out / RESULTS).write_text("a,b\n1,2\n", encoding="utf-8")
    elif case == "onto the grid":
        grid = _grid(_mk(out), GRID, RESULTS)
    else:
        out = tmp_path / "missing" / "out"
    got = CliRunner().invoke(app, ["sweep", str(grid), "--out", str(out)])
    assert got.exit_code == 2, got.output
    assert "--out" in got.stderr


def test_scheduler_and_workers_together_refused(tmp_path: Path) -> None:
    grid = _grid(tmp_path)
    args = ["sweep", str(grid), "--out", str(tmp_path / "o"), "--workers", "2"]
    got = CliRunner().invoke(app, [*args, "--scheduler", "tcp://127.0.0.1:1"])
    assert got.exit_code == 2
    assert "--scheduler" in got.stderr


# --- issue 26: --keep-jobs, progress per cell, a summary, rounded numbers ---------------


@pytest.fixture
def here(monkeypatch: pytest.MonkeyPatch) -> None:
    """``xce sweep`` running its cells in this process (no LocalCluster to start)."""
    from contextlib import contextmanager

    @contextmanager
    def no_cluster(*args: object) -> Iterator[None]:
        yield None

    monkeypatch.setattr(sweep_cmd, "dask_client", no_cluster)
    monkeypatch.setattr(sweep_cmd, "dashboard", lambda client: None)


SMALL = GRID.replace("seeds: [1, 2]", "seeds: [1]").replace(
    "[fcfs, strict, fcfs+easy]", "[fcfs, strict]"
)


def test_keep_jobs_writes_each_cells_jobs_csv_as_simulate_does(tmp_path: Path, here: None) -> None:
    """issue 26: a sweep kept no per-job records, so its report could draw no
    distribution. With --keep-jobs each cell's jobs.csv is OUT/cells/<cell id>/jobs.csv,
    the bytes ``xce simulate --out`` writes for that replay."""
    grid = _grid(tmp_path, SMALL)
    out = tmp_path / "out"
    got = CliRunner().invoke(app, ["sweep", str(grid), "--out", str(out), "--keep-jobs"])
    assert got.exit_code == 0, got.output
    cells = load_grid(grid)
    assert sorted(p.name for p in (out / "cells").iterdir()) == sorted(c.id for c in cells)
    assert [r["cell"] for r in _rows(out)] == [c.id for c in cells]
    for cell in cells:
        path = sweep.cell_jobs(out, cell.id)
        assert path == out / "cells" / cell.id / "jobs.csv"
        if cell.cluster.scale != 1:
            continue  # no command-line form
        alone = _mk(tmp_path / "alone") / cell.id
        args = [a for a in _simulate_args(cell) if a != "--json"]
        ran = CliRunner().invoke(app, [*args, "--out", str(alone)])
        assert ran.exit_code == 0, ran.output
        assert path.read_bytes() == (alone / "jobs.csv").read_bytes(), cell.text
    assert not list(out.rglob(".jobs.csv*"))  # no temporary file left


def test_keep_jobs_later_replays_finished_cells_for_their_jobs_only(
    tmp_path: Path, threads: Client
) -> None:
    """issue 26: cells finished by a run without --keep-jobs run again for their jobs
    (on Dask here), and their rows are not written twice; a third run runs nothing."""
    cells = load_grid(_grid(tmp_path, SMALL))
    out = _mk(tmp_path / "out")
    run_sweep(cells[:2], ResultsTable(out / RESULTS), None)
    rows = _rows(out)
    ran = run_sweep(cells, ResultsTable(out / RESULTS), threads, keep_jobs=out)
    assert {c.id for c in ran} == {c.id for c in cells}
    after = _rows(out)
    assert after[:2] == rows
    assert sorted(r["cell"] for r in after) == sorted(c.id for c in cells)
    assert all(sweep.cell_jobs(out, c.id).is_file() for c in cells)
    assert run_sweep(cells, ResultsTable(out / RESULTS), threads, keep_jobs=out) == []


def test_progress_per_cell_and_a_summary_rounded(tmp_path: Path, here: None) -> None:
    """issue 26: a line per finished cell on stderr (its waits and slowdown), a table at
    the end on stdout with max wait and user fairness; waits as durations a person
    reads, whole seconds (the table had none; results.csv keeps the exact numbers)."""
    import re

    grid = _grid(tmp_path, SMALL)
    got = CliRunner().invoke(app, ["sweep", str(grid), "--out", str(tmp_path / "out")])
    assert got.exit_code == 0, got.output
    cells = load_grid(grid)
    lines = [line for line in got.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == len(cells)
    assert lines[0].startswith(f"[1/{len(cells)}] {cells[0].text}: mean wait ")
    assert ", max " in lines[0]
    assert "mean bsld" in lines[0]
    table = got.stdout
    assert f"Sweep: {len(cells)} cells (workload synthetic:40 seed 1, options -)" in table
    assert "max" in table
    assert "fair-" in table
    assert not re.search(r"\d\.\d+ s\b", table + got.stderr), table  # 52 s, not 52.113 s
    metrics = {r["cell"]: json.loads(r["metrics"]) for r in _rows(tmp_path / "out")}
    from xce.cli.conventions import metric_text

    for cell in cells:
        assert metric_text(metrics[cell.id]["max_wait_s"], "max_wait_s") in table
    assert table.rstrip().endswith(
        f"{len(cells)} of {len(cells)} cells in {tmp_path / 'out' / RESULTS}"
    )


def test_summary_shows_at_most_its_rows(tmp_path: Path) -> None:
    """issue 26: a grid of thousands of cells does not print thousands of rows."""
    from rich.console import Console

    cells = load_grid(_grid(tmp_path, SMALL))
    out = _mk(tmp_path / "out")
    table = ResultsTable(out / RESULTS)
    run_sweep(cells, table, None)
    console = Console(record=True, width=200)
    original = sweep_cmd.SUMMARY_ROWS
    try:
        sweep_cmd.SUMMARY_ROWS = 2
        sweep_cmd.summary(cells, table, console)
    finally:
        sweep_cmd.SUMMARY_ROWS = original
    text = console.export_text()
    assert f"... and {len(cells) - 2} more cells (results.csv has them)" in text
