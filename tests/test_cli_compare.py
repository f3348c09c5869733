"""``xce compare`` (issue 14): one workload and cluster, several policies, one table,
overlaid plots; each policy's metrics are exactly ``xce simulate``'s."""

from __future__ import annotations

import csv
import json
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
        ("fcfs+bogus", "--policy 'fcfs+bogus': unknown or repeated modifier 'bogus'"),
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
