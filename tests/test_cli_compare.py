"""``xce compare`` (issue 14): one workload and cluster, several policies, one table,
overlaid plots; each policy's metrics are exactly ``xce simulate``'s."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xce.cli.main import app
from xce.core import default_pickers
from xce.errors import InputError
from xce.preempt import default_preemptors
from xce.sim.compare import Policy, parse_policy

CLUSTER = """
queues: {high: {priority: 50, preempts: [low]}, low: {priority: 10}}
hosts:
  - {name: a, slots: 4}
  - {name: b, slots: 4}
"""


def _inputs(tmp_path: Path) -> tuple[Path, Path]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER, encoding="utf-8")
    rows = []
    for i in range(30):
        rows.append(
            {
                "id": f"j{i}",
                "submit_time": 7 * i,
                "runtime": 40 + (i * 37) % 90,
                "tasks": 1 + (i * 5) % 6,
                "queue": "high" if i % 4 == 0 else "low",
            }
        )
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return cluster, jobs


def _xce(*args: str | Path) -> object:
    return CliRunner().invoke(app, [str(a) for a in args])


def test_each_policy_is_exactly_xce_simulate(tmp_path: Path) -> None:
    """issue 14 (compare): per policy, the metrics object equals ``xce simulate``'s with
    that picker (the timing-free fields); ``nopreempt`` turns the queues' preempts off."""
    cluster, jobs = _inputs(tmp_path)
    base = ["--workload", jobs, "--cluster", cluster]
    result = _xce(
        "compare",
        *base,
        "--policy",
        "fcfs",
        "--policy",
        "strict",
        "--policy",
        "fcfs+nopreempt",
        "--json",
    )
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    data = json.loads(result.stdout)  # type: ignore[attr-defined]
    assert [p["policy"] for p in data["policies"]] == ["fcfs", "strict", "fcfs+nopreempt"]
    for entry, picker in zip(data["policies"][:2], ["fcfs", "strict"], strict=True):
        alone = _xce("simulate", *base, "--picker", picker, "--json")
        want = json.loads(alone.stdout)  # type: ignore[attr-defined]
        got = entry["metrics"]
        keys = ("policy", "mean_wait_s", "p95_wait_s", "mean_bsld", "utilization", "preemptions")
        for key in keys:
            assert got[key] == want[key], (picker, key)
    assert data["policies"][0]["metrics"]["preemptions"] > 0
    assert data["policies"][2]["metrics"]["preemptions"] == 0


def test_table_and_out_files(tmp_path: Path) -> None:
    """issue 14: the table has a row per policy; ``--out`` writes exactly compare.csv,
    compare.json and the two overlaid plots (non-empty PNGs), and refuses to replace
    them without ``--force``, before any replay."""
    cluster, jobs = _inputs(tmp_path)
    out = tmp_path / "out"
    args = [
        "compare",
        "--workload",
        jobs,
        "--cluster",
        cluster,
        "--policy",
        "fcfs",
        "--policy",
        "strict",
        "--out",
        out,
    ]
    result = _xce(*args)
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    text = result.stdout  # type: ignore[attr-defined]
    assert "fcfs" in text
    assert "strict" in text
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [
            "compare.csv",
            "compare.json",
            "compare_jobs.csv",
            "compare_wait_cdf.png",
            "compare_bsld_by_size.png",
        ]
    )
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.stat().st_size > 1000
    rows = list(csv.reader((out / "compare.csv").open(encoding="utf-8")))
    assert [r[0] for r in rows[1:]] == ["fcfs", "strict"]
    before = (out / "compare.csv").read_bytes()
    again = _xce(*args)
    assert again.exit_code == 2  # type: ignore[attr-defined]
    assert "--force" in again.stderr  # type: ignore[attr-defined]
    assert (out / "compare.csv").read_bytes() == before


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bogus", "--policy 'bogus': unknown picker 'bogus'"),
        ("fcfs+bogus", "--policy 'fcfs+bogus': unknown modifier 'bogus'"),
        ("fcfs+easy+conservative", r"two backfill policies \(easy and conservative\)"),
        ("fcfs+lowest_priority_first+lowest_priority_first", "two preemptors"),
        ("fcfs+nopreempt+lowest_priority_first", "contradict"),
    ],
)
def test_bad_policies_are_the_options_fault(text: str, message: str) -> None:
    """issue 14: a policy that names an unknown picker or modifier is an InputError
    naming --policy and what is known."""
    with pytest.raises(InputError, match=message.replace("+", r"\+")):
        parse_policy(text, default_pickers(), default_preemptors())


def test_policy_grammar() -> None:
    """issue 14: PICKER[+MODIFIER...]."""
    got = parse_policy("strict+lowest_priority_first", default_pickers(), default_preemptors())
    assert got == Policy("strict+lowest_priority_first", "strict", "lowest_priority_first")


def test_cli_bad_policy_and_duplicates_exit_2(tmp_path: Path) -> None:
    """issue 14: exit 2 before anything is read (the workload does not exist)."""
    missing = tmp_path / "missing.jsonl"
    result = _xce("compare", "--workload", missing, "--hosts", "1", "--policy", "nope")
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert "--policy 'nope'" in result.stderr  # type: ignore[attr-defined]
    result = _xce(
        "compare", "--workload", missing, "--hosts", "1", "--policy", "fcfs", "--policy", "fcfs"
    )
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert "given twice" in result.stderr  # type: ignore[attr-defined]


def test_plot_format_svg_and_bad_formats(tmp_path: Path) -> None:
    """issue 14: ``--plot-format svg`` writes the plots as SVG under the same names;
    another format is the option's fault, exit 2, before any replay."""
    cluster, jobs = _inputs(tmp_path)
    out = tmp_path / "out"
    base = ["compare", "--workload", jobs, "--cluster", cluster, "--policy", "fcfs"]
    result = _xce(*base, "--out", out, "--plot-format", "svg")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [
            "compare.csv",
            "compare.json",
            "compare_jobs.csv",
            "compare_wait_cdf.svg",
            "compare_bsld_by_size.svg",
        ]
    )
    bad = _xce(*base, "--plot-format", "pdf")
    assert bad.exit_code == 2  # type: ignore[attr-defined]
    assert "--plot-format: 'pdf' is not one of png, svg" in bad.stderr  # type: ignore[attr-defined]


# --- issue 26: the replay options, max wait, fairness, every metrics.json key ------------


def _options(command: str) -> set[str]:
    """The option names of ``xce COMMAND`` as click sees them."""
    import typer.main

    group = typer.main.get_command(app)
    found = group.commands[command]  # type: ignore[attr-defined]
    return {name for p in found.params for name in p.opts if name.startswith("--")}


def test_compare_takes_every_replay_option_simulate_takes() -> None:
    """issue 26: compare lacked --single-queue and --enforce-walltime. What simulate
    has and compare has not is the policy alone (compare's --policy says it)."""
    assert _options("simulate") - _options("compare") == {"--picker", "--preemptor", "--backfill"}
    assert _options("compare") - _options("simulate") == {"--policy"}


def test_the_shared_options_are_one_list() -> None:
    """issue 26: the replay options are defined once; each is a field of Replay, in
    order, and both commands have every one."""
    from dataclasses import fields

    from xce.cli.replay_options import REPLAY_OPTIONS, Replay

    assert [n for n, _, _ in REPLAY_OPTIONS] == [f.name for f in fields(Replay)]
    for name, _, _ in REPLAY_OPTIONS:
        flag = "--" + name.replace("_", "-")
        assert flag in _options("simulate") & _options("compare"), flag


def _walltime_inputs(tmp_path: Path) -> tuple[Path, Path]:
    """Two queues and jobs whose requested time is below their runtime (every third)."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "queues: {a: {priority: 20}, b: {priority: 10}}\nhosts:\n"
        "  - {name: h1, slots: 4}\n  - {name: h2, slots: 4}\n",
        encoding="utf-8",
    )
    rows = [
        {
            "id": f"j{i}",
            "submit_time": 5 * i,
            "runtime": 50 + (i * 29) % 80,
            "requested_time": 30 if i % 3 == 0 else 200,
            "tasks": 1 + (i * 3) % 5,
            "queue": "a" if i % 2 else "b",
            "user": f"u{i % 3}",
        }
        for i in range(40)
    ]
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return cluster, jobs


@pytest.mark.parametrize(
    "options",
    [[], ["--single-queue"], ["--enforce-walltime"], ["--interval", "17"]],
    ids=["none", "single-queue", "enforce-walltime", "interval"],
)
def test_replay_options_act_in_compare_as_in_simulate(tmp_path: Path, options: list[str]) -> None:
    """issue 26: with the same replay options, each policy's metrics object equals
    ``xce simulate``'s (timing-free: metrics.json is)."""
    cluster, jobs = _walltime_inputs(tmp_path)
    base = ["--workload", jobs, "--cluster", cluster, *options]
    got = _xce("compare", *base, "--policy", "fcfs", "--policy", "strict+easy", "--json")
    assert got.exit_code == 0, got.output  # type: ignore[attr-defined]
    policies = json.loads(got.stdout)["policies"]  # type: ignore[attr-defined]
    for entry, flags in zip(
        policies, [["--picker", "fcfs"], ["--picker", "strict", "--backfill", "easy"]], strict=True
    ):
        alone = _xce("simulate", *base, *flags, "--json")
        assert alone.exit_code == 0, alone.output  # type: ignore[attr-defined]
        assert entry["metrics"] == json.loads(alone.stdout)  # type: ignore[attr-defined]


def test_enforce_walltime_changes_a_comparison(tmp_path: Path) -> None:
    """issue 26: --enforce-walltime reaches compare's replays (jobs are killed)."""
    cluster, jobs = _walltime_inputs(tmp_path)
    base = ["compare", "--workload", jobs, "--cluster", cluster, "--policy", "fcfs", "--json"]
    plain_run = json.loads(_xce(*base).stdout)  # type: ignore[attr-defined]
    killed = json.loads(_xce(*base, "--enforce-walltime").stdout)  # type: ignore[attr-defined]
    assert plain_run["policies"][0]["metrics"]["killed_at_walltime"] == 0
    assert killed["policies"][0]["metrics"]["killed_at_walltime"] > 0


def test_compare_csv_has_every_metrics_key(tmp_path: Path) -> None:
    """issue 26: compare.csv had 8 of metrics.json's keys; the docs say every one. A
    nested object (by_user) is its compact JSON; the fairness figures follow."""
    cluster, jobs = _walltime_inputs(tmp_path)
    out = tmp_path / "out"
    args = ["--workload", jobs, "--cluster", cluster, "--policy", "fcfs", "--policy", "strict"]
    result = _xce("compare", *args, "--out", out)
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    data = json.loads((out / "compare.json").read_text("utf-8"))
    with (out / "compare.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    for row, entry in zip(rows, data["policies"], strict=True):
        metrics = entry["metrics"]
        fairness = [f"fairness.{k}" for k in entry["fairness"]]
        assert list(row) == [*metrics, *fairness]
        for key, value in metrics.items():
            if isinstance(value, dict):
                assert json.loads(row[key]) == value, key
            elif value is None:
                assert row[key] == "", key
            else:
                assert row[key] == str(value), key
        assert float(row["fairness.jain_mean_bsld"]) == entry["fairness"]["jain_mean_bsld"]


def test_table_shows_max_wait_and_fairness(tmp_path: Path) -> None:
    """issue 26: the table answers "which policy, and is it fair?": max wait, Jain's
    index over the users' mean bounded slowdowns and the worst user's, as the JSON has
    them; waits as durations a person reads."""
    from xce.timefmt import duration

    cluster, jobs = _walltime_inputs(tmp_path)
    args = ["compare", "--workload", jobs, "--cluster", cluster, "--policy", "fcfs"]
    text = _xce(*args).stdout  # type: ignore[attr-defined]
    entry = json.loads(_xce(*args, "--json").stdout)["policies"][0]  # type: ignore[attr-defined]
    assert "max" in text
    assert "fair-" in text
    assert duration(entry["metrics"]["max_wait_s"]) in text
    assert f"{entry['fairness']['jain_mean_bsld']:.2f}" in text
    assert entry["fairness"]["users"] == 3
    assert "Jain's index" in text


@pytest.mark.parametrize(
    ("means", "jain", "worst"),
    [
        ({}, None, None),
        ({"a": 3.0}, 1.0, "a"),
        ({"b": 2.0, "a": 2.0}, 1.0, "a"),  # a tie names the first user by name
        ({"a": 1.0, "b": 3.0}, 0.8, "b"),  # (1 + 3)^2 / (2 (1 + 9))
        ({"a": 1.0, "b": None}, 1.0, "a"),  # b's jobs never ran: left out
        ({"a": 1.0, "b": 1.0, "c": 10.0}, 144 / 306, "c"),
    ],
)
def test_user_fairness(
    means: dict[str, float | None], jain: float | None, worst: str | None
) -> None:
    """issue 26: Jain's index (sum x)^2 / (n sum x^2) over the users' mean bounded
    slowdowns (metrics.json's by_user), and the worst-off user."""
    from xce.sim.compare import user_fairness

    got = user_fairness({"by_user": {u: {"mean_bsld": m} for u, m in means.items()}})
    assert got.users == sum(m is not None for m in means.values())
    assert got.jain == (None if jain is None else pytest.approx(jain))
    assert got.worst_user == worst
    assert got.worst_mean_bsld == (None if worst is None else means[worst])


@pytest.mark.parametrize(
    ("value", "key", "text"),
    [
        (None, "max_wait_s", "-"),
        (3900.0, "max_wait_s", "1 h 5 min"),
        (0.0, "mean_wait_s", "0 s"),
        (52.113, "mean_wait_s", "52 s"),  # whole seconds from 1 s on
        (0.25, "mean_wait_s", "0.25 s"),
        (0.6666, "utilization", "66.7 %"),
        (0.16432, "jain_mean_bsld", "0.16"),
        (111.84, "mean_bsld", "111.8"),
        (14423.2, "worst_user_mean_bsld", "14,423"),
        (1810, "backfilled", "1,810"),
    ],
)
def test_table_cells(value: float | None, key: str, text: str) -> None:
    """issue 26: numbers rounded as the other commands print them."""
    from xce.cli.conventions import metric_text

    assert metric_text(value, key) == text


def test_bad_preempt_mode_is_the_options_fault(tmp_path: Path) -> None:
    """issue 26: a shared option is checked in compare as in simulate, before any input
    is read (the workload does not exist)."""
    missing = tmp_path / "missing.jsonl"
    for command in ("compare", "simulate"):
        extra = ["--policy", "fcfs"] if command == "compare" else []
        result = _xce(command, "--workload", missing, "--hosts", "1", "--preempt-mode", "x", *extra)
        assert result.exit_code == 2  # type: ignore[attr-defined]
        assert "--preempt-mode: unknown mode 'x'" in result.stderr  # type: ignore[attr-defined]


def test_replay_warnings_reach_stderr(tmp_path: Path) -> None:
    """issue 26: a replay's warnings (backfill over jobs without a requested time,
    xce.sim.caveats) are printed by simulate and, naming the policy, by compare, on
    stderr (stdout, the JSON, unchanged)."""
    jobs = tmp_path / "jobs.jsonl"
    rows = [{"id": f"j{i}", "submit_time": i, "runtime": 60, "tasks": 1} for i in range(4)]
    jobs.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    base = ["--workload", jobs, "--hosts", "2"]
    alone = _xce("simulate", *base, "--backfill", "easy", "--json")
    assert alone.exit_code == 0, alone.output  # type: ignore[attr-defined]
    assert alone.stderr.startswith("xce: warning: backfill: 4 of the 4 jobs")  # type: ignore[attr-defined]
    json.loads(alone.stdout)  # type: ignore[attr-defined]
    both = _xce("compare", *base, "--policy", "fcfs+easy", "--policy", "fcfs", "--json")
    lines = both.stderr.splitlines()  # type: ignore[attr-defined]
    assert [line.split(": ")[:3] for line in lines] == [["xce", "warning", "fcfs+easy"]]


@pytest.mark.parametrize("width", [80, 200])
def test_a_terminal_too_narrow_for_the_table_gets_a_policy_per_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    """On a terminal of 80 columns the table of three policies does not fit: the policies
    become its columns and the metrics its rows, every figure whole (it was cut to
    "16 h 18…", headings to "m…"); on a wide one, a policy per row as before. Seven
    policies at 80 columns: as many such tables as it takes, each whole."""
    import io

    import rich.console

    screen = io.StringIO()
    real = rich.console.Console

    class Terminal(real):  # type: ignore[misc,valid-type]
        def __init__(self, **kwargs: object) -> None:
            super().__init__(file=screen, width=width, force_terminal=True, color_system=None)

    monkeypatch.setattr(rich.console, "Console", Terminal)
    cluster, jobs = _inputs(tmp_path)
    policies = ["fcfs", "fcfs+easy", "fcfs+conservative"]
    args = ["compare", "--workload", jobs, "--cluster", cluster]
    result = _xce(*args, *(a for p in policies for a in ("--policy", p)))
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    text = screen.getvalue()
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines)
    assert "…" not in text
    header = next(line for line in lines if "fcfs+easy" in line)
    if width == 80:
        assert all(p in header for p in policies)  # the policies head the columns
        assert any(line.lstrip("│ ").startswith("mean wait") for line in lines)
    else:
        assert "fcfs+conservative" not in header  # a row per policy
        assert (
            sum(any(line.lstrip("│ ").startswith(p + " ") for line in lines) for p in policies) == 3
        )
    if width == 80:  # seven policies: as many tables as it takes, each whole
        screen.truncate(0)
        screen.seek(0)
        more = [*policies, "strict", "strict+easy", "fairshare", "fairshare+easy"]
        result = _xce(*args, *(a for p in more for a in ("--policy", p)))
        assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
        text = screen.getvalue()
        assert "…" not in text
        assert all(len(line) <= width for line in text.splitlines())
        flat = " ".join(text.split())  # a long title wraps
        parts = re.findall(r"\((\d) of (\d)\)", flat)
        assert len(parts) >= 2
        assert parts == [(str(k), parts[0][1]) for k in range(1, len(parts) + 1)]
        assert all(p in text for p in more)


def test_a_policy_name_too_long_for_a_column_is_given_in_a_legend(tmp_path: Path) -> None:
    """A policy whose name alone is wider than the table may be: the columns are
    numbered and a legend below names each policy whole; every figure is whole (the
    other columns were squeezed to "fc…", "45…", some to nothing)."""
    cluster = tmp_path / "mini.yaml"
    cluster.write_text(
        "queues: {normal: {priority: 0}}\npriority: {PriorityWeightAge: 1000}\n"
        "hosts: [{name: n0, slots: 4}]\n",
        encoding="utf-8",
    )
    jobs = tmp_path / "w.yaml"
    jobs.write_text(
        "jobs:\n  - {id: a, tasks: 2, runtime: 10, submit_time: 0}\n"
        "  - {id: b, tasks: 4, runtime: 10, submit_time: 1}\n",
        encoding="utf-8",
    )
    long = (
        "multifactor:PriorityWeightAge=1 PriorityWeightJobSize=1 PriorityWeightQOS=1 "
        "PriorityWeightPartition=1 PriorityWeightFairshare=1"
    )
    args = ["compare", "--workload", jobs, "--cluster", cluster]
    result = _xce(*args, "--policy", "fcfs", "--policy", "multifactor", "--policy", long)
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    text = result.stdout  # type: ignore[attr-defined]
    assert "…" not in text
    assert "[1] fcfs" in text
    assert f"[3] {long}" in text


def test_plots_say_nothing_of_fonts_on_stderr(tmp_path: Path) -> None:
    """compare --out draws its plots without matplotlib's findfont fallback lines on
    stderr (they said "Font family ['STIXGeneral'] not found" on every run)."""
    import subprocess
    import sys

    cluster, jobs = _inputs(tmp_path)
    out = tmp_path / "o"
    xce = Path(sys.executable).parent / "xce"  # the console script: pytest catches logs
    args = ["compare", "--workload", jobs, "--cluster", cluster, "--out", out]
    args += ["--policy", "fcfs", "--policy", "strict"]
    done = subprocess.run(
        [str(xce), *map(str, args)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "findfont" not in done.stderr
