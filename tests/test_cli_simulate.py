"""``xce simulate``: the files it writes, determinism, the cluster it simulates, and
exit 2 with a located message for bad input.

Acceptance (issue 5): "Determinism: two runs with the same inputs give identical
`jobs.csv` and `metrics.json`."
"""

from __future__ import annotations

import csv
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from test_sim_engine import strict_fifo_starts
from xce.cli.main import app
from xce.cli.simulate_cmd import OUTPUT_FILES
from xce.sim.model import SimJob

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "cluster.yaml"
XCE = Path(sys.executable).parent / "xce"

CSV_COLUMNS = ("job", "submit", "start", "end", "wait", "runtime", "tasks", "queue", "user")
METRICS_KEYS = (
    "jobs",
    "unrunnable",
    "mean_wait_s",
    "median_wait_s",
    "p95_wait_s",
    "mean_bsld",
    "utilization",
    "makespan_s",
)
PNGS = ("utilisation.png", "queue.png", "wait_cdf.png", "bsld_by_size.png")
OUT_FILES = ("jobs.csv", "metrics.json", *PNGS)


def swf_text(jobs: int = 60, *, nodes: int | None = 4, procs: int | None = 8, seed: int = 1) -> str:
    """A small SWF trace: sizes 1-9 (9 is wider than 8 processors), runtimes 0-300 s,
    requested times sometimes below the runtime, three users and two queues."""
    rng = random.Random(seed)
    header = "; Version: 2.2\n"
    header += f"; MaxNodes: {nodes}\n" if nodes else ""
    header += f"; MaxProcs: {procs}\n" if procs else ""
    lines, submit = [], 0
    for i in range(1, jobs + 1):
        submit += rng.randint(0, 40)
        run, size = rng.randint(0, 300), rng.choice((1, 1, 1, 2, 2, 4, 8, 9))
        req = rng.choice((-1, run + 60, max(run // 2, 1)))
        fields = [i, submit, -1, run, size, -1, -1, size, req, -1, 1]
        fields += [rng.randint(1, 3), 1, -1, rng.randint(1, 2), -1, -1, -1]
        lines.append(" ".join(map(str, fields)))
    return header + "\n".join(lines) + "\n"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "t.swf"
    path.write_text(swf_text(), encoding="utf-8")
    return path


def xce(*args: str | Path) -> Any:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["simulate", *map(str, args)])
    return result


def ok(*args: str | Path) -> Any:
    result = xce(*args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def metrics_of(*args: str | Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(ok(*args, "--json").stdout)
    return data


# --- what --out writes ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """One run with ``--out`` and ``--json``: (the trace, the out directory, stdout)."""
    tmp = tmp_path_factory.mktemp("written")
    trace = tmp / "t.swf"
    trace.write_text(swf_text(), encoding="utf-8")
    out = tmp / "out"
    return trace, out, ok("--workload", trace, "--out", out, "--json").stdout


def test_out_writes_jobs_csv_metrics_json_and_plots(written: tuple[Path, Path, str]) -> None:
    _, out, _ = written
    for name in OUT_FILES:
        assert (out / name).is_file(), name
    for name in PNGS:
        assert (out / name).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    rows = read_csv(out / "jobs.csv")
    assert set(CSV_COLUMNS) <= set(rows[0])
    assert [r["job"] for r in rows] == [str(i) for i in range(1, 61)]
    data = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert set(METRICS_KEYS) <= set(data)
    check_consistent(rows, data)


def check_consistent(rows: list[dict[str, str]], data: dict[str, Any]) -> None:
    """jobs.csv and metrics.json tell the same story."""
    ran = [r for r in rows if r["start"]]
    for r in ran:
        assert float(r["wait"]) == float(r["start"]) - float(r["submit"])
        assert float(r["runtime"]) == float(r["end"]) - float(r["start"])
    unrunnable = [r for r in rows if not r["start"]]
    assert all(r["unrunnable"] and not r["end"] for r in unrunnable)
    assert data["jobs"] == len(rows)
    assert data["unrunnable"] == len(unrunnable)
    waits = sorted(float(r["wait"]) for r in ran)
    assert data["mean_wait_s"] == pytest.approx(sum(waits) / len(waits))
    assert data["median_wait_s"] == pytest.approx(statistics.median(waits))
    p95 = statistics.quantiles(waits, n=100, method="inclusive")[94]
    assert data["p95_wait_s"] == pytest.approx(p95)
    first = min(float(r["submit"]) for r in rows)
    assert data["makespan_s"] == max(float(r["end"]) for r in ran) - first
    assert 0 < data["utilization"] <= 1
    assert data["mean_bsld"] >= 1


def test_json_prints_the_metrics_object(written: tuple[Path, Path, str]) -> None:
    """``--json``: stdout is exactly the metrics object of metrics.json."""
    _, out, stdout = written
    printed = json.loads(stdout)
    assert printed == json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert set(METRICS_KEYS) <= set(printed)
    assert printed["trace"]["skipped"] == {}


def test_metrics_name_the_predictor_and_what_backfill_planned_with(tmp_path: Path) -> None:
    """With --predictor, metrics.json says which one and what backfill planned with,
    right after the policy; without one it has neither key."""
    trace = tmp_path / "t.swf"
    trace.write_text(swf_text(), encoding="utf-8")
    base = ("--workload", trace, "--backfill", "easy")
    with_one = metrics_of(*base, "--predictor", "history", "--backfill-with", "predicted")
    assert list(with_one)[:3] == ["policy", "predictor", "backfill_with"]
    assert (with_one["predictor"], with_one["backfill_with"]) == ("history", "predicted")
    assert metrics_of(*base, "--predictor", "fraction:0.5")["backfill_with"] == "requested"
    assert not {"predictor", "backfill_with"} & set(metrics_of(*base))


def test_timing_stays_out_of_metrics_json(written: tuple[Path, Path, str]) -> None:
    """Wall and allocation times vary run to run, and the scheduler's work (sessions,
    decisions, cache hits) with the exact shortcuts: they go to timing.json."""
    _, out, _ = written
    timing = json.loads((out / "timing.json").read_text(encoding="utf-8"))
    assert set(timing) == {"wall_s", "alloc_s", "scheduler"}
    assert set(timing["scheduler"]) >= {"sessions", "decisions", "cache_hit_rate"}
    text = (out / "metrics.json").read_text(encoding="utf-8")
    for key in ("alloc_s", "wall_s", "seconds", "elapsed", "sessions", "cache_hit_rate"):
        assert key not in text


def test_the_message_names_the_files(written: tuple[Path, Path, str]) -> None:
    trace, out, _ = written
    stdout = ok("--workload", trace, "--out", out, "--force").stdout
    assert f"wrote {', '.join(OUTPUT_FILES)} in {out}" in " ".join(stdout.split())


def test_summary_table_without_json(trace: Path) -> None:
    result = ok("--workload", trace)
    for words in ("Simulation", "mean bounded slowdown", "utilisation", "unrunnable"):
        assert words in result.stdout
    wide = [line for line in swf_text().splitlines() if line.split()[7:8] == ["9"]]
    assert f"job {wide[0].split()[0]}:" in result.stdout  # named, with why


# --- determinism -------------------------------------------------------------------------

RUNS = {
    "swf, strict, single queue": ["--picker", "strict", "--single-queue"],
    "swf, fcfs, interval, walltime": ["--interval", "30", "--enforce-walltime"],
    "synthetic on the example cluster": ["--cluster", EXAMPLE, "--picker", "fairshare"],
}


@pytest.mark.parametrize("args", list(RUNS.values()), ids=list(RUNS))
def test_two_runs_give_identical_files(trace: Path, tmp_path: Path, args: list[Any]) -> None:
    """Acceptance: same inputs, byte-identical jobs.csv and metrics.json (and plots)."""
    workload = ("synthetic:200", "--seed", "3") if "--cluster" in args else (trace,)
    for name in ("a", "b"):
        ok("--workload", *workload, *args, "--out", tmp_path / name)
    for name in OUT_FILES:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_identical_across_processes_and_hash_seeds(tmp_path: Path) -> None:
    """Two processes with different string-hash seeds (set and dict orders) write the same
    bytes, for the full requirement mix on the example cluster."""
    args = ["simulate", "--workload", "synthetic:200", "--cluster", str(EXAMPLE), "--seed", "9"]
    runs = [
        subprocess.Popen(
            [str(XCE), *args, "--out", str(tmp_path / seed), "--json"],
            env={**os.environ, "PYTHONHASHSEED": seed},
            stdout=subprocess.DEVNULL,
        )
        for seed in ("1", "2")
    ]
    assert [run.wait(timeout=120) for run in runs] == [0, 0]
    for name in OUT_FILES:
        assert (tmp_path / "1" / name).read_bytes() == (tmp_path / "2" / name).read_bytes(), name


# --- the cluster ---------------------------------------------------------------------------

HEADER_CLUSTERS = {
    # name: (MaxNodes, MaxProcs, extra args, total slots, hosts)
    "nodes x procs/nodes": (4, 8, [], 8, 4),
    "procs only": (None, 6, [], 6, 6),
    "nodes only": (5, None, [], 5, 5),
    "--hosts and --slots-per-host win": (4, 8, ["--hosts", "3", "--slots-per-host", "3"], 9, 3),
    "--slots-per-host on the header's nodes": (4, 8, ["--slots-per-host", "3"], 12, 4),
    "--hosts alone: one slot each": (4, 8, ["--hosts", "10"], 10, 10),
}


@pytest.mark.parametrize(
    ("nodes", "procs", "args", "slots", "hosts"),
    list(HEADER_CLUSTERS.values()),
    ids=list(HEADER_CLUSTERS),
)
def test_cluster_from_the_header_or_options(
    tmp_path: Path, nodes: int | None, procs: int | None, args: list[str], slots: int, hosts: int
) -> None:
    """By default MaxNodes hosts x MaxProcs/MaxNodes slots; jobs wider are unrunnable."""
    path = tmp_path / "t.swf"
    path.write_text(swf_text(40, nodes=nodes, procs=procs), encoding="utf-8")
    data = metrics_of("--workload", path, *args)
    assert data["total_slots"] == slots
    assert data["unrunnable"] == sum(
        1 for line in swf_text(40).splitlines()[3:] if int(line.split()[7]) > slots
    )


def test_header_cluster_hosts(tmp_path: Path) -> None:
    """MaxNodes 4, MaxProcs 8: hosts n0..n3 with 2 slots, so a 2-task job may share one."""
    path = tmp_path / "t.swf"
    path.write_text(swf_text(40), encoding="utf-8")
    ok("--workload", path, "--out", tmp_path / "out")
    rows = read_csv(tmp_path / "out" / "jobs.csv")
    used = {h for r in rows for h in r["hosts"].split()}
    assert used == {"n0", "n1", "n2", "n3"}
    assert any(r["tasks"] == "2" and len(r["hosts"].split()) == 1 for r in rows)


def test_a_header_without_machine_size_needs_hosts(tmp_path: Path) -> None:
    path = tmp_path / "t.swf"
    path.write_text(swf_text(5, nodes=None, procs=None), encoding="utf-8")
    result = xce("--workload", path)
    assert result.exit_code == 2
    assert "--hosts" in result.stderr
    assert str(path) in result.stderr
    assert metrics_of("--workload", path, "--hosts", "9")["total_slots"] == 9


def test_a_cluster_file(trace: Path) -> None:
    data = metrics_of("--workload", trace, "--cluster", EXAMPLE)
    assert data["total_slots"] == 256
    assert data["unrunnable"] == 0


# --- options -------------------------------------------------------------------------------


def test_strict_single_queue_matches_the_independent_fifo(trace: Path, tmp_path: Path) -> None:
    """The acceptance oracle through the command line (4 hosts x 1 slot)."""
    out = tmp_path / "out"
    ok("--workload", trace, "--hosts", "4", "--picker", "strict", "--single-queue", "--out", out)
    rows = read_csv(out / "jobs.csv")
    jobs = [SimJob(r["job"], float(r["submit"]), 0.0, int(r["tasks"])) for r in rows]
    by_id = {line.split()[0]: line.split() for line in swf_text().splitlines()[3:]}
    jobs = [SimJob(j.id, j.submit, float(by_id[j.id][3]), j.tasks) for j in jobs]
    started = {r["job"]: float(r["start"]) for r in rows if r["start"]}
    assert started == strict_fifo_starts(jobs, 4)
    assert {r["queue"] for r in rows} == {"normal"}


def test_interval(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    ok("--workload", trace, "--interval", "60", "--out", out)
    starts = [float(r["start"]) for r in read_csv(out / "jobs.csv") if r["start"]]
    assert starts
    assert all(s % 60 == 0 for s in starts)


def test_enforce_walltime(trace: Path, tmp_path: Path) -> None:
    """Jobs that overrun their requested time end there and are counted."""
    out = tmp_path / "out"
    data = metrics_of("--workload", trace, "--enforce-walltime", "--out", out)
    fields = {line.split()[0]: line.split() for line in swf_text().splitlines()[3:]}
    rows = [r for r in read_csv(out / "jobs.csv") if r["start"]]
    over = [r for r in rows if 0 < int(fields[r["job"]][8]) < int(fields[r["job"]][3])]
    assert over
    assert data["killed_at_walltime"] == len(over)
    for r in rows:
        assert r["killed"] == ("1" if r in over else "0")
        if r in over:
            assert float(r["runtime"]) == float(fields[r["job"]][8])
    assert metrics_of("--workload", trace)["killed_at_walltime"] == 0


@pytest.mark.parametrize("limit", [0, 1, 25])
def test_limit(trace: Path, tmp_path: Path, limit: int) -> None:
    assert metrics_of("--workload", trace, "--limit", str(limit))["jobs"] == limit
    jobs_file = tmp_path / "w.jsonl"
    rows = [{"id": i, "tasks": 1, "submit_time": i, "runtime": 5} for i in range(40)]
    jobs_file.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = ("--workload", jobs_file, "--hosts", "2", "--limit", str(limit))
    assert metrics_of(*args)["jobs"] == limit


def test_synthetic_with_a_seed(tmp_path: Path) -> None:
    """``synthetic:N``: N generated jobs; the seed picks the workload."""
    runs = {}
    for name, seed in (("a", "5"), ("b", "5"), ("c", "6")):
        args = ("--workload", "synthetic:120", "--cluster", EXAMPLE, "--seed", seed)
        runs[name] = ok(*args, "--json").stdout
        assert json.loads(runs[name])["jobs"] == 120
    assert runs["a"] == runs["b"]
    assert runs["a"] != runs["c"]


def test_a_seed_for_a_file_workload_exits_2(trace: Path) -> None:
    """``--seed`` seeds only a generated workload; with a trace it was silently left
    unused, so it is refused (exit 2, naming the option) before anything is read. The
    same trace without it replays, and ``synthetic:N`` without it is seed 0's."""
    result = xce("--workload", trace, "--seed", "7")
    assert result.exit_code == 2, result.output
    assert "--seed 7: only a synthetic:N workload is drawn from a seed" in result.stderr
    assert result.stdout == ""
    assert metrics_of("--workload", trace)["jobs"] > 0
    args = ("--workload", "synthetic:40", "--hosts", "4")
    assert ok(*args, "--json").stdout == ok(*args, "--seed", "0", "--json").stdout


def test_synthetic_on_a_uniform_cluster() -> None:
    data = metrics_of("--workload", "synthetic:50", "--hosts", "8", "--slots-per-host", "16")
    assert data["jobs"] == 50


def test_lenient_skips_malformed_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.swf"
    lines = swf_text(10).splitlines()
    lines.insert(6, "1 2 3")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert xce("--workload", path).exit_code == 2
    data = metrics_of("--workload", path, "--lenient")
    assert data["trace"]["skipped"] == {"malformed line": 1}
    assert data["jobs"] == 10


def test_skip_counts_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "t.swf"
    text = swf_text(10) + "11 999 -1 10 -1 -1 -1 -1 -1 -1 1 1 1 -1 1 -1 -1 -1\n"
    path.write_text(text, encoding="utf-8")
    data = metrics_of("--workload", path)
    assert data["trace"]["skipped"] == {"no processor count": 1}
    assert data["trace"]["lines"] == 11
    assert data["jobs"] == 10
    assert "no processor count" in ok("--workload", path).stdout


# --- bad input: exit 2 ---------------------------------------------------------------------


def test_a_malformed_swf_line_exits_2_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "t.swf"
    lines = swf_text(10).splitlines()
    lines[7] = lines[7] + " 42"  # 19 fields on line 8
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = xce("--workload", path)
    assert result.exit_code == 2
    assert f"{path}:8: expected 18 fields, got 19" in result.stderr
    assert result.stdout == ""


BAD = {
    # name: (args, words of the message); {trace} and {tmp} are filled in
    "missing workload": (["--workload", "{tmp}/absent.swf"], "{tmp}/absent.swf"),
    "missing jobs file": (["--workload", "{tmp}/absent.jsonl", "--hosts", "2"], "absent.jsonl"),
    "unknown workload type": (["--workload", "{tmp}/w.csv", "--hosts", "2"], "unknown jobs file"),
    "both --cluster and --hosts": (
        ["--workload", "{trace}", "--cluster", str(EXAMPLE), "--hosts", "4"],
        "not both",
    ),
    "both --cluster and --slots-per-host": (
        ["--workload", "{trace}", "--cluster", str(EXAMPLE), "--slots-per-host", "4"],
        "not both",
    ),
    "--interval 0": (["--workload", "{trace}", "--interval", "0"], "--interval must be a finite"),
    "--interval negative": (["--workload", "{trace}", "--interval", "-5"], "--interval"),
    "--limit negative": (["--workload", "{trace}", "--limit", "-1"], "--limit"),
    "--hosts 0": (["--workload", "{trace}", "--hosts", "0"], "--hosts"),
    "unknown picker": (["--workload", "{trace}", "--picker", "nope"], "unknown picker"),
    "synthetic without a number": (["--workload", "synthetic:lots", "--hosts", "2"], "synthetic:N"),
    "synthetic negative": (["--workload", "synthetic:-3", "--cluster", str(EXAMPLE)], "from 0 to"),
    "jobs file and no cluster": (["--workload", "{tmp}/w.jsonl"], "--cluster"),
    "missing cluster file": (["--workload", "{trace}", "--cluster", "{tmp}/no.yaml"], "no.yaml"),
    "job wanting a resource the cluster lacks": (
        ["--workload", "{tmp}/mem.jsonl", "--hosts", "2"],
        "unknown resource",
    ),
}


@pytest.mark.parametrize(("args", "message"), list(BAD.values()), ids=list(BAD))
def test_bad_input_exits_2(trace: Path, tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "w.csv").write_text("job\n1\n", encoding="utf-8")
    (tmp_path / "w.jsonl").write_text('{"id": 1, "runtime": 5}\n', encoding="utf-8")
    (tmp_path / "mem.jsonl").write_text(
        '{"id": 1, "runtime": 5, "resreq": "rusage[mem=10]"}\n', encoding="utf-8"
    )
    filled = [a.format(trace=trace, tmp=tmp_path) for a in args]
    result = xce(*filled)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert message.format(tmp=tmp_path) in result.stderr
    assert result.stderr.startswith("xce: error: ") or "Usage" in result.stderr


def test_a_broken_cluster_file_exits_2_with_its_line(trace: Path, tmp_path: Path) -> None:
    cluster = tmp_path / "c.yaml"
    cluster.write_text(
        "hosts:\n  - {name: h0, slots: 2}\n  - {name: h1, slots: many}\n", encoding="utf-8"
    )
    result = xce("--workload", trace, "--cluster", cluster)
    assert result.exit_code == 2
    assert f"{cluster}:3" in result.stderr


# --- issue 10 -----------------------------------------------------------------------------


def wide_jobs(tmp_path: Path) -> Path:
    """Seven jobs too wide for two 1-slot hosts (unrunnable), with hostile ids."""
    ids = ["[/]", "[bold red]x[/]", "\x1b[2Jclear", "\x1b]0;pwned\x07", "e", "f", "g"]
    path = tmp_path / "wide.jsonl"
    lines = [json.dumps({"id": i, "tasks": 3, "runtime": 5}) for i in ids]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_more_unrunnable_jobs_point_at_jobs_csv_only_when_written(tmp_path: Path) -> None:
    """issue 10: "see jobs.csv" was printed when no --out was given. Without --out the
    summary says how to get the list; with --out it names the file written."""
    jobs = wide_jobs(tmp_path)
    without = ok("--workload", jobs, "--hosts", "2").stdout
    assert "... and 2 more unrunnable jobs" in without
    assert "jobs.csv" not in without.split("... and")[1].replace("--out DIR", "")
    out = tmp_path / "out"
    written = ok("--workload", jobs, "--hosts", "2", "--out", out).stdout
    assert f"see {out / 'jobs.csv'}" in " ".join(written.split())


def test_unrunnable_job_ids_print_as_written(tmp_path: Path) -> None:
    """issue 10: job ids are printed through Rich: ``[/]`` crashed it, markup styled,
    escape sequences reached the terminal. They print literally, controls made visible."""
    stdout = ok("--workload", wide_jobs(tmp_path), "--hosts", "2").stdout
    assert "job [/]:" in stdout
    assert "job [bold red]x[/]:" in stdout
    assert "job \\x1b[2Jclear:" in stdout
    assert "job \\x1b]0;pwned\\x07:" in stdout
    assert "\x1b" not in stdout


@pytest.mark.parametrize(("nodes", "procs"), [(300_000_000, 600_000_000), (None, 300_000_000)])
def test_a_huge_header_cluster_is_refused(tmp_path: Path, nodes: int | None, procs: int) -> None:
    """issue 10 (huge numbers): an SWF header's ``MaxNodes 3e8`` exhausted memory building
    the cluster. Beyond MAX_HOSTS it is exit 2 naming the trace and the header's line,
    before any work."""
    path = tmp_path / "huge.swf"
    path.write_text(swf_text(5, nodes=nodes, procs=procs), encoding="utf-8")
    result = xce("--workload", path)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert str(path) in result.stderr
    key = "MaxNodes" if nodes else "MaxProcs"
    assert f"{path}:" in result.stderr  # file:line
    assert f"header {key} is 3e+08, more than 1,000,000 (the limit)" in result.stderr


@pytest.mark.parametrize(
    ("options", "policy"),
    [
        ((), "fcfs"),
        (("--picker", "strict"), "strict"),
        (("--backfill", "easy"), "fcfs+easy"),
        (("--backfill", "none"), "fcfs"),
        (
            ("--picker", "fairshare", "--preemptor", "lowest_priority_first", "--backfill", "easy"),
            "fairshare+lowest_priority_first+easy",
        ),
    ],
)
def test_metrics_name_the_policy_as_compare_writes_it(
    trace: Path, options: tuple[str, ...], policy: str
) -> None:
    """issue 14: metrics.json's ``policy`` is the replay's policy in ``xce compare
    --policy``'s form (picker, then the preemptor and the backfill policy when named),
    so ``xce report`` titles a replay without being told."""
    data = json.loads(ok("--workload", trace, *options, "--json").stdout)
    assert data["policy"] == policy


def test_jobs_csv_keeps_fractional_times_exactly(tmp_path: Path) -> None:
    """With --interval 0.7 starts are fractions; near t = 1.2e7 six significant figures
    were 10 s, so the file said start - submit = 22 s beside a wait of 0.1 s. Times and
    durations are now written exactly: wait = start - submit and runtime = end - start
    row by row, as in metrics.json."""
    import csv

    path = tmp_path / "t.swf"
    path.write_text(
        "; MaxNodes: 2\n; MaxProcs: 2\n"
        "1 12345678 -1 100 1 -1 -1 1 500 -1 1 1 1 -1 1 -1 -1 -1\n"
        "2 12345679 -1 100 1 -1 -1 1 500 -1 1 1 1 -1 1 -1 -1 -1\n",
        encoding="utf-8",
    )
    out = tmp_path / "o"
    ok("--workload", path, "--interval", "0.7", "--out", out)
    rows = list(csv.DictReader((out / "jobs.csv").open(encoding="utf-8")))
    assert len(rows) == 2
    assert any(not float(r["start"]).is_integer() for r in rows)
    for r in rows:
        assert float(r["start"]) - float(r["submit"]) == float(r["wait"]), r
        assert float(r["end"]) - float(r["start"]) == float(r["runtime"]), r


def test_a_queues_files_defaults_hold_and_its_errors_name_it(tmp_path: Path) -> None:
    """A --queues file's top-level backfill (and priority setup) applies to the uniform
    cluster as a --cluster file's does (it was dropped: jobs 0 / 1002 / 2 instead of
    EASY's 0 / 100 / 200); a bad value in it is an error at its line and column (it was
    accepted, or located in '<2 hosts x 1 slots>')."""
    import csv

    trace = tmp_path / "q.swf"
    trace.write_text(
        "; MaxNodes: 2\n; MaxProcs: 2\n"
        "1 0 -1 100 1 -1 -1 1 100 -1 1 1 1 -1 -1 -1 -1 -1\n"
        "2 1 -1 100 2 -1 -1 2 100 -1 1 1 1 -1 -1 -1 -1 -1\n"
        "3 2 -1 1000 1 -1 -1 1 1000 -1 1 1 1 -1 -1 -1 -1 -1\n",
        encoding="utf-8",
    )
    queues = tmp_path / "q.yaml"
    queues.write_text("backfill: easy\nqueues:\n  normal: {priority: 10}\n", encoding="utf-8")
    out = tmp_path / "o"
    ok("--workload", trace, "--hosts", "2", "--queues", queues, "--out", out)
    rows = list(csv.DictReader((out / "jobs.csv").open(encoding="utf-8")))
    assert [r["start"] for r in rows] == ["0", "100", "200"]
    bad = tmp_path / "qb.yaml"
    bad.write_text("queues:\n  q1: {priority: 10, picker: bogus}\n", encoding="utf-8")
    got = xce("--workload", trace, "--hosts", "2", "--queues", bad)
    assert got.exit_code == 2, got.output
    assert f"{bad}:2:30: queues.q1.picker: unknown picker 'bogus'" in got.stderr
