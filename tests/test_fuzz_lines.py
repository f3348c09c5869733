"""A fuzzer over workload lines (issue 10): SWF traces (``.swf`` and ``.swf.gz``, whole,
truncated or corrupt) and jobs files (JSONL, one job a line; now and then a JSON or YAML
``{jobs: [...]}`` document, a job a line) built small and then broken
line by line and byte by byte, replayed by ``xce simulate --workload FILE`` with
``--cluster examples/cluster.yaml``, ``--hosts N --slots-per-host C`` or (SWF) the
cluster from the trace's header; with and without ``--lenient``, ``--json`` or the table,
now and then ``--limit``, ``--picker``, ``--single-queue``, ``--enforce-walltime``,
``--interval``, ``--out`` (a new directory, which must then hold jobs.csv and
metrics.json). Now and then a case that exits 0 without ``--lenient`` is run again with
it: the metrics must be the same, byte for byte.

Every case must exit 0 (with the metrics JSON under ``--json``) or 2, within the time
limit, without a traceback, leaving the workload (and the cluster file) unchanged
(``tests/fuzzing.py``). **Located** (:func:`fuzzing.located_in_file`): the message is
``xce: error: FILE:LINE...`` or ``xce: error: FILE: PATH: ...`` for the workload file as
given; a message naming only the file (``xce: error: FILE: ...``) is accepted where there
is no line to name: a compressed stream that is truncated or corrupt, and errors about
the whole trace when the cluster comes from its header.

Case ``i``: ``random.Random(f"{XCE_FUZZ_SEED}/{i}")``. Smoke: 40 cases; slow: 3,000
(``XCE_FUZZ_CASES``/``XCE_FUZZ_START``). Failing cases are minimised (uncompressed
inputs) and kept under ``tests/data/fuzz-failures/open/``; :func:`test_recorded_failure`
reruns the kept ones.
"""

from __future__ import annotations

import gzip
import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from fuzzing import (
    ROOT,
    MemoryLimit,
    Outcome,
    Recorded,
    assert_passes,
    case_range,
    fuzz_seed,
    located_in_file,
    minimise,
    record,
    recorded_params,
    run_cli,
    signature,
    subprocess_sample,
)
from test_fuzz_resreq import requirement

CLUSTER = ROOT / "examples" / "cluster.yaml"
WORKLOAD = ROOT / "examples" / "workload.jsonl"
SMOKE_CASES = 40
SLOW_CASES = 3_000
KEEP_PER_KIND = 3

NASTY_FIELDS = (
    "-1", "0", "x", "", "nan", "NaN", "inf", "-inf", "1e400", "1e18", "1e30", "3e8",
    "9223372036854775808", "18446744073709551617", "9" * 400, "0x10", "1_0", "1.5", "-0",
    "1e-300", "\x00", "\ufffd", "[/]", "1,5", "+7", "2147483648",
)  # fmt: skip
NASTY_NAMES = (
    "", " ", "[/]", "[bold red]x[/]", "[link=file:///etc]x", "\x1b[2J\x1b[H",
    "\x1b]8;;http://x\x1b\\l\x1b]8;;\x1b\\", "\x07\r\x7f", "\u202eevil", "\ud800", "a" * 5000,
    "名前", "\n", "null", "1", "%s",
)  # fmt: skip
HUGE = (10**9, 2**31, 2**53 + 1, 2**63, 10**18, 10**30, 10**400, 1e308, 1e15 + 1, 0.5, -1, 0)
NON_FINITE = ("NaN", "Infinity", "-Infinity", "1e400")  # JSON text Python reads as floats
LINE_BYTES = (b"\x00", b"\xff", b"\xc3", b"\r", b"\t", b"\x1b[31m", b"\xef\xbb\xbf", b"\\")


# -- SWF ------------------------------------------------------------------------------------


def _swf_header(rnd: random.Random) -> list[str]:
    nodes = rnd.choice(("4", "4", "16", "0", "-1", "3e8", "1e18", "x", "nan", "", None))
    procs = rnd.choice(("8", "8", "64", "0", "1e18", "2", "x", None))
    header = ["; Version: 2.2", "; Computer: fuzz"]
    if nodes is not None:
        header.append(f"; MaxNodes: {nodes}")
    if procs is not None:
        header.append(f"; MaxProcs: {procs}")
    return header


def _swf_jobs(rnd: random.Random) -> list[list[str]]:
    jobs, submit = [], 0
    for i in range(1, rnd.randint(1, 12) + 1):
        submit += rnd.randint(0, 40)
        run, size = rnd.randint(0, 300), rnd.choice((1, 1, 2, 4, 8, 9, -1))
        req = rnd.choice((-1, run + 60, max(run // 2, 1)))
        mem = rnd.choice((-1, -1, 1024, 10**6))
        fields = [i, submit, -1, run, size, -1, mem, size, req, mem, 1]
        fields += [rnd.randint(1, 3), 1, -1, rnd.randint(1, 2), -1, -1, -1]
        jobs.append([str(f) for f in fields])
    return jobs


def swf_case(rnd: random.Random) -> tuple[bytes, list[str]]:
    """An SWF text, broken: fields, lines, header, bytes."""
    header, jobs = _swf_header(rnd), _swf_jobs(rnd)
    how: list[str] = []
    for _ in range(rnd.choice((0, 1, 1, 2, 3))):
        op = rnd.choice(
            ("field", "field", "field", "drop field", "extra field", "dup line", "swap", "drop")
        )
        if not jobs:
            break
        j = rnd.randrange(len(jobs))
        if op == "field":
            k = rnd.randrange(18)
            jobs[j][k] = rnd.choice(NASTY_FIELDS)
            op += f" {k + 1}"
        elif op == "drop field":
            del jobs[j][rnd.randrange(len(jobs[j]))]
        elif op == "extra field":
            jobs[j].insert(rnd.randrange(len(jobs[j]) + 1), rnd.choice(NASTY_FIELDS[:8]))
        elif op == "dup line":
            jobs.insert(j + 1, list(jobs[j]))
        elif op == "swap" and len(jobs) > 1:
            i = rnd.randrange(len(jobs))
            jobs[i], jobs[j] = jobs[j], jobs[i]
        elif op == "drop":
            del jobs[j]
        how.append(f"swf {op} at job line {j + 1}")
    lines = [*header, *(" ".join(f) for f in jobs)]
    if rnd.random() < 0.15:
        at = rnd.randrange(len(lines) + 1)
        lines.insert(at, rnd.choice((";", "; MaxNodes: 1e18", "#", "; ;;", "\x0c", "   ")))
        how.append(f"junk line at {at + 1}")
    sep = rnd.choice(("\n", "\n", "\n", "\r\n", "\t\n"))
    data = (sep.join(lines) + rnd.choice((sep, ""))).encode("utf-8", "surrogatepass")
    return _bytes_ops(data, rnd, how), how


# -- JSONL ----------------------------------------------------------------------------------

_BASE_JOBS = [json.loads(line) for line in WORKLOAD.read_text().splitlines()[:300]]


def _retype(value: Any, rnd: random.Random) -> Any:
    return rnd.choice(
        (str(value), [value], {"x": value}, None, True, 1.5, -3, "", [], {}, rnd.choice(HUGE))
    )


def jsonl_case(rnd: random.Random, uniform: bool, fmt: str = "jsonl") -> tuple[bytes, list[str]]:
    """A jobs file (``fmt``: jsonl, or a json/yaml document with a job a line), broken:
    keys, values, names, requirements, lines, bytes. ``uniform``: for a --hosts cluster
    (no mem, no attributes: requirements left out)."""
    start = rnd.randrange(len(_BASE_JOBS) - 12)
    jobs: list[Any] = [dict(j) for j in _BASE_JOBS[start : start + rnd.randint(1, 12)]]
    if uniform:
        for job in jobs:
            job["resreq"] = ""
    how: list[str] = []
    raw: dict[int, str] = {}  # job index -> text that json.dumps cannot make
    for _ in range(rnd.choice((0, 1, 1, 2, 3))):
        j = rnd.randrange(len(jobs))
        job = jobs[j]
        op = rnd.choice(
            (
                "delete key", "retype", "huge", "non-finite", "name", "name", "resreq",
                "resreq", "unknown key", "deep", "duplicate key", "dup line", "swap",
                "not an object", "tasks", "min/max",
            )
        )  # fmt: skip
        if not isinstance(job, dict):
            continue
        if op == "delete key" and job:
            del job[rnd.choice(list(job))]
        elif op == "retype" and job:
            key = rnd.choice(list(job))
            job[key] = _retype(job[key], rnd)
        elif op == "huge":
            key = rnd.choice(("submit_time", "runtime", "requested_time", "tasks"))
            job[key] = rnd.choice(HUGE) * rnd.choice((1, 1, -1))
        elif op == "non-finite":
            key = rnd.choice(("submit_time", "runtime", "requested_time", "tasks"))
            job[key] = "__NONFINITE__"
            raw[j] = rnd.choice(NON_FINITE)
        elif op == "name":
            job[rnd.choice(("id", "user", "queue", "project"))] = rnd.choice(NASTY_NAMES)
        elif op == "resreq":
            job["resreq"] = requirement(rnd)[0]
        elif op == "unknown key":
            job[rnd.choice(("typo", "Runtime", "x" * 300, "[/]"))] = 1
        elif op == "deep":
            n = rnd.choice((50, 101, 1_000, 10_000))
            job["resreq"] = "__DEEP__"
            raw[j] = "[" * n + "]" * n if rnd.random() < 0.5 else '{"a":' * n + "1" + "}" * n
        elif op == "duplicate key":
            job["__DUP__"] = rnd.choice(("runtime", "id", "tasks"))
        elif op == "dup line":
            jobs.insert(j + 1, dict(job))
        elif op == "swap" and len(jobs) > 1:
            i = rnd.randrange(len(jobs))
            jobs[i], jobs[j] = jobs[j], jobs[i]
        elif op == "not an object":
            jobs[j] = rnd.choice(([], None, 1, "job", [job]))
        elif op == "tasks":
            job["tasks"] = rnd.choice((0, -1, 1, 2**31, "4", 1.5, 10**18))
        elif op == "min/max":
            job["min_tasks"], job["max_tasks"] = rnd.choice(((2, 1), (1, 10**18), (0, 0), (1, 4)))
        how.append(f"jsonl {op} at line {j + 1}")
    lines = [_dump(job, raw.get(j)) for j, job in enumerate(jobs)]
    if rnd.random() < 0.1:
        lines.insert(rnd.randrange(len(lines) + 1), rnd.choice(("", "   ", "null", "[]", "{")))
        how.append("junk line")
    sep = rnd.choice(("\n", "\n", "\n", "\r\n"))
    if fmt == "json":  # a document {"jobs": [...]}, a job a line
        text = '{"jobs": [' + sep + ("," + sep).join(lines) + sep + "]}" + sep
    elif fmt == "yaml":  # jobs: then a flow mapping (JSON) a line
        text = "jobs:" + sep + "".join(f"  - {line}{sep}" for line in lines)
    else:
        text = sep.join(lines) + rnd.choice((sep, ""))
    data = text.encode("utf-8", "surrogatepass")
    return _bytes_ops(data, rnd, how), how


def _dump(job: Any, raw: str | None) -> str:
    dup = job.pop("__DUP__", None) if isinstance(job, dict) else None
    text = json.dumps(job, ensure_ascii=rnd_ascii(job))
    if raw is not None:
        text = text.replace('"__NONFINITE__"', raw).replace('"__DEEP__"', raw)
    if dup is not None:
        value = json.dumps(job.get(dup, 1))
        text = f'{{"{dup}": {value}, ' + text[1:] if text != "{}" else f'{{"{dup}": {value}}}'
    return text


def rnd_ascii(job: Any) -> bool:
    """JSON-escape non-ASCII in about half the lines (by a stable property of the job)."""
    return len(repr(job)) % 2 == 0


# -- bytes ----------------------------------------------------------------------------------


def _bytes_ops(data: bytes, rnd: random.Random, how: list[str]) -> bytes:
    if rnd.random() < 0.2:
        for _ in range(rnd.choice((1, 1, 2, 3))):
            op = rnd.choice(("flip", "insert", "delete", "duplicate", "truncate"))
            n = len(data)
            at = rnd.randint(0, n)
            if op == "flip" and n:
                i = rnd.randrange(n)
                data = data[:i] + bytes([data[i] ^ (1 << rnd.randrange(8))]) + data[i + 1 :]
            elif op == "insert":
                data = data[:at] + rnd.choice(LINE_BYTES) + data[at:]
            elif op == "delete":
                data = data[:at] + data[at + rnd.randint(1, 16) :]
            elif op == "duplicate":
                span = data[at : at + rnd.randint(1, 200)]
                j = rnd.randint(0, n)
                data = data[:j] + span + data[j:]
            else:
                data = data[:at]
            how.append(f"bytes {op}")
    return data


# -- running --------------------------------------------------------------------------------


def _metrics(out: str) -> bool:
    try:
        return "jobs" in json.loads(out)
    except ValueError:
        return False


def _options(rnd: random.Random, swf: bool) -> list[str]:
    """simulate's options (after ``--workload {input}``)."""
    r = rnd.random()
    if r < 0.4 or (not swf and r < 0.7):
        argv = ["--cluster", "{root}/examples/cluster.yaml"]
    elif r < 0.8 or not swf:
        argv = ["--hosts", rnd.choice(("1", "4", "64")), "--slots-per-host", rnd.choice("148")]
    else:
        argv = []  # the trace header's cluster
    if rnd.random() < 0.5:
        argv.append("--lenient")
    if rnd.random() < 0.6:
        argv.append("--json")
    if rnd.random() < 0.1:
        argv += ["--limit", rnd.choice(("0", "1", "3"))]
    for flag in ("--single-queue", "--enforce-walltime"):
        if rnd.random() < 0.1:
            argv.append(flag)
    if rnd.random() < 0.1:
        argv += ["--picker", rnd.choice(("strict", "fairshare", "fcfs"))]
    if rnd.random() < 0.05:
        argv += ["--interval", rnd.choice(("3.3", "0.7", "60", "600"))]
    if rnd.random() < 0.03:
        argv += ["--out", "{input}.out"]  # a new directory (plots: slow, so rarely)
    return argv


def run_workload(
    argv_template: list[str], path: Path, *, bare_ok: bool, sample: bool = False
) -> Outcome:
    argv = [a.replace("{input}", str(path)).replace("{root}", str(ROOT)) for a in argv_template]
    out = Path(f"{path}.out")
    outcome = run_cli(
        argv,
        [path, CLUSTER],
        located_in_file(path, allow_bare=bare_ok),
        check_stdout=_metrics if "--json" in argv else None,
        subprocess_too=sample,
        before_each=lambda: shutil.rmtree(out, ignore_errors=True),
    )
    if outcome.problem is None and outcome.exit_code == 0 and "--out" in argv:
        missing = [f for f in ("jobs.csv", "metrics.json") if not (out / f).is_file()]
        if missing:
            outcome.problem = f"exit 0 with --out but no {', '.join(missing)}"
    return outcome


def _same_when_lenient(argv: list[str], path: Path, bare: bool, strict: Outcome) -> Outcome:
    """A workload read whole without ``--lenient`` replays the same with it: the same
    metrics (``--json``), byte for byte."""
    if strict.exit_code != 0 or "--lenient" in argv or "--json" not in argv:
        return strict
    lenient = run_workload([*argv, "--lenient"], path, bare_ok=bare)
    if lenient.problem is None and (lenient.exit_code != 0 or lenient.stdout != strict.stdout):
        lenient.problem = "--lenient changed the result of a workload read whole without it"
    return lenient


def _bare_ok(name: str, argv: list[str], gz_broken: bool) -> bool:
    header = (
        name.endswith((".swf", ".swf.gz")) and "--cluster" not in argv and "--hosts" not in argv
    )
    return gz_broken or header


def fuzz(cases: range, tmp: Path) -> list[str]:
    """Run the cases; keep (minimised) a few per kind of failure; a line per failure."""
    failures: list[str] = []
    kept: dict[str, int] = {}
    with MemoryLimit():
        for case in cases:
            rnd = random.Random(f"{fuzz_seed()}/{case}")
            swf = rnd.random() < 0.5
            options = _options(rnd, swf)
            fmt = rnd.choice(("jsonl", "jsonl", "jsonl", "jsonl", "json", "yaml"))
            data, how = swf_case(rnd) if swf else jsonl_case(rnd, "--hosts" in options, fmt)
            suffix = f".{fmt}"
            gz_broken = False
            if swf:
                suffix = ".swf"
                if rnd.random() < 0.3:
                    suffix = ".swf.gz"
                    data = gzip.compress(data, mtime=0)
                    if rnd.random() < 0.5:
                        gz_broken = True
                        if rnd.random() < 0.7:
                            data = data[: rnd.randrange(len(data))]
                            how.append("gzip stream truncated")
                        else:
                            i = rnd.randrange(len(data))
                            data = data[:i] + bytes([data[i] ^ 0x55]) + data[i + 1 :]
                            how.append("gzip stream corrupted")
            argv = ["simulate", "--workload", "{input}", *options]
            path = tmp / f"case{suffix}"
            path.write_bytes(data)
            bare = _bare_ok(suffix, argv, gz_broken)
            outcome = run_workload(argv, path, bare_ok=bare, sample=subprocess_sample(case))
            if outcome.problem is None and rnd.random() < 0.25:
                outcome = _same_when_lenient(argv, path, bare, outcome)
            if outcome.problem is None:
                continue
            kind = f"{suffix}:{signature(outcome)}"
            name = f"lines-s{fuzz_seed()}-case{case}{suffix}"
            if kept.get(kind, 0) < KEEP_PER_KIND:
                kept[kind] = kept.get(kind, 0) + 1
                small, shown = data, None
                if kept[kind] == 1 and ":hang" not in kind and suffix != ".swf.gz":
                    small, shown = _minimise(argv, data, path, bare, kind, suffix)
                    path.write_bytes(data)
                record(
                    name,
                    small,
                    "lines",
                    argv,
                    shown or outcome,
                    [f"case: {case}", *(f"mutation: {h}" for h in how)]
                    + (
                        [f"minimised from {len(data)} to {len(small)} bytes"]
                        if small != data
                        else []
                    ),
                )
            failures.append(f"case {case} ({name}): {outcome.problem}")
    return failures


def _minimise(
    argv: list[str], data: bytes, path: Path, bare: bool, kind: str, suffix: str
) -> tuple[bytes, Outcome | None]:
    found: list[Outcome] = []

    def fails_same(candidate: bytes) -> bool:
        path.write_bytes(candidate)
        outcome = run_workload(argv, path, bare_ok=bare)
        if outcome.problem is not None and f"{suffix}:{signature(outcome)}" == kind:
            found.append(outcome)
            return True
        return False

    small = minimise(data, fails_same)
    return small, (found[-1] if found and small != data else None)


# -- the tests ------------------------------------------------------------------------------


def test_fuzz_lines_smoke(tmp_path: Path) -> None:
    """issue 10 (workload-line fuzzer, smoke): 40 seeded broken SWF traces and JSONL jobs
    files through ``xce simulate``: exit 0 or 2 located, never 1, never hangs."""
    assert_passes(fuzz, range(SMOKE_CASES), tmp_path)


@pytest.mark.slow
def test_fuzz_lines_3k(tmp_path: Path) -> None:
    """issue 10 (workload-line fuzzer): as the smoke test, over 3,000 seeded workloads."""
    assert_passes(fuzz, case_range(0, SLOW_CASES), tmp_path)


@pytest.mark.parametrize("case", recorded_params("lines"))
def test_recorded_failure(case: Recorded, tmp_path: Path) -> None:
    """issue 10 (workload-line fuzzer): a kept failing case now exits 0 or 2 located."""
    copy_ = case.copy_to(tmp_path)
    gz_broken = copy_.name.endswith(".gz")
    if gz_broken:
        try:
            gzip.decompress(copy_.read_bytes())
            gz_broken = False
        except (OSError, EOFError):
            pass
    with MemoryLimit():
        outcome = run_workload(case.argv, copy_, bare_ok=_bare_ok(copy_.name, case.argv, gz_broken))
    assert outcome.problem is None, (outcome.problem, outcome.stderr[-2000:])
