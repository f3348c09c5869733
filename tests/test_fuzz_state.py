"""A mutation fuzzer over state files (issue 9): ``xce schedule FILE --json`` on broken
variants of the bundled examples and the engine repros must exit 0 (with the decisions
JSON) or 2 (with a message naming the file and where in it), never 1 (a bug) and never
hang, and must leave the file unchanged.

Each case is seeded (case ``i`` mutates seed file ``i mod n`` with ``random.Random(i)``):
1-3 mutations of the parsed document (a key deleted, a list entry duplicated, a value
retyped str/int/float/bool/list/dict/null, a huge or negative number, deep nesting,
unicode and control characters in names, a garbled requirement, an unknown key), then
sometimes the text truncated. The CLI runs in-process (typer's CliRunner) under a
per-case timer (``setitimer``) and an address-space limit (``RLIMIT_AS``: a runaway
allocation is a MemoryError, reported as a crash, not a dead machine).

A failing case is written to ``tests/data/fuzz-failures/`` (the input, plus a ``.txt``
with the mutations, exit code and output), and every file there is rerun by
:func:`test_recorded_failure`. ``XCE_FUZZ_CASES`` / ``XCE_FUZZ_START`` override the
slow run's case count and first case, ``XCE_FUZZ_FAILURES`` where failures go (and are
rerun from).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import random
import re
import resource
import signal
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from xce.cli.main import app

ROOT = Path(__file__).resolve().parent.parent
FAILURES = Path(
    os.environ.get("XCE_FUZZ_FAILURES", Path(__file__).resolve().parent / "data" / "fuzz-failures")
)
SEEDS = sorted(
    [
        *ROOT.glob("examples/*.yaml"),
        *ROOT.glob("examples/*.yml"),
        *ROOT.glob("examples/*.json"),
        *(Path(__file__).resolve().parent / "data" / "repros" / "engine").glob("*.*"),
    ]
)
SECTIONS = ("resources", "hosts", "shared", "queues", "limits", "running", "jobs", "picker")
CASE_TIMEOUT_S = 10.0  # a hang guard per case, not a timing assertion
MEMORY_HEADROOM = 3 << 30  # address space a case may add to the process
SMOKE_CASES = 200
SLOW_CASES = 10_000

# -- mutations ------------------------------------------------------------------------------

NASTY_STRINGS = (
    "",
    " ",
    "\x00",
    "a\nb",
    "tab\there",
    "\x1b[31mred",
    "\u202eevil",
    "\U0001f600",
    "名前",
    "h0",
    "a" * 5000,
    "\ud800",  # a lone surrogate
    "../../etc/passwd",
    "{}",
    "- x",
    "null",
    "*ref",
    "%s%n",
)
HUGE_NUMBERS = (
    10**10,
    2**31,
    2**53 + 1,
    2**63,
    2**64 + 1,
    10**30,
    10**400,
    1e308,
    1.7976931348623157e308,
    math.inf,
    -math.inf,
    math.nan,
    5e-324,
    1e-12,
)
RESREQ_PIECES = (
    "rusage[mem=1e400]",
    "rusage[mem=-1]",
    "rusage[slots=1]",
    "rusage[mem=0.0000001]",
    "rusage[mem=99999999999999999999]",
    "span[hosts=0]",
    "span[ptile=0]",
    "span[ptile=99999999999]",
    "span[hosts=-1]",
    "same[]",
    "same[nope]",
    "order[nope]",
    "order[-]",
    "select[mem>1e400]",
    "select[(((((((((((((((((((((((((((((((mem)))))))))))))))))))))))))))))))]",
    "select[" + "!" * 2000 + "fast]",
    "select[mem/0>1]",
    "select[mem%0>1]",
    "1*{-}+1*{-}",
    "0*{-}",
    "99999999999*{-}",
    "{-}||{-}||{-}",
    "{" * 300 + "-" + "}" * 300,
    "cu[type=x]",
    "\x00",
    "select[type==\u202e]",
    "rusage[mem=1:mem=2]",
    "rusage[lic=1:duration=5]",
)
RESREQ_CHARS = "[]{}()=:|&!<>*+-0123456789.e ,~#@'\"\\\n"


def _nodes(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every (path, value) of the document, the root included."""
    yield path, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _nodes(v, (*path, i))


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path[:-1]:
        doc = doc[step]
    return doc


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    """The document with the node at ``path`` replaced (the root: a new document)."""
    if not path:
        return value
    _parent(doc, path)[path[-1]] = value
    return doc


def _retype(value: Any, rnd: random.Random) -> Any:
    choices: list[Callable[[], Any]] = [
        lambda: str(value) if not isinstance(value, str) else rnd.choice(NASTY_STRINGS),
        lambda: rnd.choice((0, 1, -1, 7, 3)) if not isinstance(value, int) else str(value),
        lambda: rnd.choice((0.5, 2.5, 333.3, -0.1, 1e-7)),
        lambda: [value],
        lambda: {"x": value},
        lambda: None,
        lambda: rnd.choice((True, False)),
        list,
        dict,
    ]
    return rnd.choice(choices)()


@dataclass
class Mutant:
    """A mutated document, how it was made, and the text to write."""

    seed: Path
    case: int
    doc: Any
    steps: list[str] = field(default_factory=list)
    deep: int = 0  # nesting depth to splice in place of DEEP (0: none)
    truncate_at: float | None = None  # fraction of the text kept


DEEP = "__xce_fuzz_deep__"


def _mutate_once(m: Mutant, rnd: random.Random) -> None:
    nodes = list(_nodes(m.doc))
    path, value = rnd.choice(nodes)
    op = rnd.choice(
        (
            "delete",
            "delete",
            "duplicate",
            "retype",
            "retype",
            "retype",
            "huge",
            "negative",
            "deep",
            "name",
            "name",
            "resreq",
            "resreq",
            "unknown key",
            "number in section",
        )
    )
    if op == "delete" and path:
        parent = _parent(m.doc, path)
        del parent[path[-1]]
    elif op == "duplicate":
        lists = [(p, v) for p, v in nodes if isinstance(v, list) and v]
        if not lists:
            return _mutate_once(m, rnd)
        path, value = rnd.choice(lists)
        value.insert(rnd.randrange(len(value) + 1), copy.deepcopy(rnd.choice(value)))
    elif op == "retype":
        m.doc = _set(m.doc, path, _retype(value, rnd))
    elif op == "huge":
        numbers = [(p, v) for p, v in nodes if isinstance(v, int | float) and p]
        path, _ = rnd.choice(numbers) if numbers else (path, value)
        big = rnd.choice(HUGE_NUMBERS)
        m.doc = _set(m.doc, path, -big if rnd.random() < 0.2 else big)
    elif op == "negative":
        numbers = [
            (p, v) for p, v in nodes if isinstance(v, int | float) and not isinstance(v, bool)
        ]
        if numbers:
            path, value = rnd.choice(numbers)
            m.doc = _set(m.doc, path, -abs(value) if value else rnd.choice((-1, -0.5)))
        else:
            m.doc = _set(m.doc, path, -1)
    elif op == "deep" and path:
        m.deep = rnd.choice((50, 500, 5_000, 50_000))
        m.doc = _set(m.doc, path, DEEP)
    elif op == "name":
        names = [
            (p, v)
            for p, v in nodes
            if p and p[-1] in ("name", "id", "user", "queue", "project", "host", "picker")
        ]
        keys = [(p, v) for p, v in nodes if isinstance(v, dict) and v]
        if names and rnd.random() < 0.7:
            path, _ = rnd.choice(names)
            m.doc = _set(m.doc, path, rnd.choice(NASTY_STRINGS))
        elif keys:
            path, value = rnd.choice(keys)
            old = rnd.choice(list(value))
            value[rnd.choice(NASTY_STRINGS)] = value.pop(old)
    elif op == "resreq":
        texts = [(p, v) for p, v in nodes if p and p[-1] == "resreq" and isinstance(v, str)]
        if not texts:
            jobs = [(p, v) for p, v in nodes if p[-2:-1] == ("jobs",) and isinstance(v, dict)]
            if not jobs:
                return _mutate_once(m, rnd)
            path, value = rnd.choice(jobs)
            value["resreq"] = rnd.choice(RESREQ_PIECES)
            m.steps.append(f"resreq at {'.'.join(map(str, path))}: {value['resreq']!r}")
            return None
        path, text = rnd.choice(texts)
        if rnd.random() < 0.5:
            text = rnd.choice(RESREQ_PIECES) + " " * rnd.randint(0, 1) + text
        else:
            for _ in range(rnd.randint(1, 4)):
                i = rnd.randint(0, len(text))
                text = text[:i] + rnd.choice(RESREQ_CHARS) + text[i + rnd.randint(0, 2) :]
        m.doc = _set(m.doc, path, text)
    elif op == "unknown key":
        dicts = [(p, v) for p, v in nodes if isinstance(v, dict)]
        if dicts:
            path, value = rnd.choice(dicts)
            value[rnd.choice(("typo", "slot", "Name", "resource", "x" * 300))] = 1
    elif op == "number in section":
        if isinstance(m.doc, dict):
            path = (rnd.choice(SECTIONS),)
            m.doc[path[0]] = rnd.choice((0, -1, 2**64, 1.5, "x", None, True))
    else:
        return _mutate_once(m, rnd)
    m.steps.append(f"{op} at {'.'.join(map(str, path)) or '<root>'}")
    return None


def _load(seed: Path) -> Any:
    text = seed.read_text(encoding="utf-8")
    return json.loads(text) if seed.suffix == ".json" else yaml.safe_load(text)


def mutant(case: int) -> Mutant:
    """Case ``case``: its seed file and a reproducible mutation of it."""
    seed = SEEDS[case % len(SEEDS)]
    rnd = random.Random(case)
    m = Mutant(seed, case, _load(seed))
    for _ in range(rnd.choice((1, 1, 2, 3))):
        _mutate_once(m, rnd)
    if rnd.random() < 0.12:
        m.truncate_at = rnd.random()
        m.steps.append(f"truncated at {m.truncate_at:.2f} of the text")
    return m


def render(m: Mutant) -> str:
    """The mutant's text in its seed's format (JSON, else YAML; JSON if YAML cannot say it)."""
    text: str | None = None
    if m.seed.suffix != ".json":
        try:
            text = yaml.safe_dump(m.doc, allow_unicode=True, sort_keys=False)
        except (yaml.YAMLError, UnicodeError, RecursionError):
            text = None
    if text is None:
        text = json.dumps(m.doc, ensure_ascii=True)
    if m.deep:
        n = m.deep
        text = text.replace(f'"{DEEP}"', "[" * n + "1" + "]" * n)
        text = text.replace(DEEP, "[" * n + "1" + "]" * n)
    if m.truncate_at is not None:
        text = text[: int(len(text) * m.truncate_at)]
    return text


# -- running one case -----------------------------------------------------------------------


class CaseTimeout(BaseException):
    """Raised by the per-case timer (a BaseException: the CLI's guard cannot swallow it)."""


@dataclass
class Outcome:
    exit_code: int | None
    stdout: str
    stderr: str
    problem: str | None  # None: the case passed


def _on_alarm(signum: int, frame: types.FrameType | None) -> None:
    raise CaseTimeout


_DOC_PATH = r"(?:[^\W\d]\w*|\[[^\]]*\])(?:\.[^\W\d]\w*|\[[^\]]*\])*"
"""A path into the document as the loader writes it: ``hosts[2].resources.mem``,
``["odd key"]``."""


def _located(stderr: str, path: Path, blank: bool) -> bool:
    """The message names the file and, after it, a line or a path into the document
    (a blank document has nothing to point into: its name is enough)."""
    name = re.escape(str(path))
    if blank:
        return str(path) in stderr
    return bool(re.search(rf"{name}:\d+", stderr) or re.search(rf"{name}: {_DOC_PATH}: ", stderr))


def run_case(path: Path) -> Outcome:
    """``xce schedule PATH --json`` in-process; what went wrong, if anything."""
    data = path.read_bytes()
    before = hashlib.sha256(data).hexdigest()
    blank = not data.strip()
    runner = CliRunner(env={"COLUMNS": "200"})
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_TIMEOUT_S)
    try:
        result = runner.invoke(app, ["schedule", str(path), "--json"], catch_exceptions=True)
    except CaseTimeout:
        return Outcome(None, "", "", f"hang: no result within {CASE_TIMEOUT_S:g} s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    out, err = result.stdout, result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        exc = result.exception
        return Outcome(result.exit_code, out, err, f"uncaught {type(exc).__name__}: {exc}")
    problem = None
    if hashlib.sha256(path.read_bytes()).hexdigest() != before:
        problem = "the input file changed"
    elif result.exit_code == 0:
        try:
            info = json.loads(out)
            assert set(info) == {"dispatched", "pending", "stats"}
        except (ValueError, AssertionError):
            problem = "exit 0 without the decisions JSON on stdout"
    elif result.exit_code == 2:
        if not _located(err, path, blank):
            problem = "exit 2 without a located message (file and line or path)"
    else:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        said = next((ln for ln in reversed(lines) if ln.startswith("xce: ")), "")
        problem = f"exit {result.exit_code}: {(said or (lines or [''])[-1])[:300]}"
    return Outcome(result.exit_code, out, err, problem)


def _record(m: Mutant, text: str, outcome: Outcome) -> Path:
    FAILURES.mkdir(parents=True, exist_ok=True)
    suffix = m.seed.suffix if m.seed.suffix in (".json", ".yaml", ".yml") else ".yaml"
    target = FAILURES / f"{m.seed.stem}-case{m.case}{suffix}"
    target.write_text(text, encoding="utf-8", errors="surrogatepass")
    report = [
        f"seed: {m.seed.relative_to(ROOT)}",
        f"case: {m.case}",
        *(f"mutation: {s}" for s in m.steps),
        f"problem: {outcome.problem}",
        f"exit code: {outcome.exit_code}",
        "stderr (last 40 lines):",
        *outcome.stderr.splitlines()[-40:],
    ]
    target.with_suffix(target.suffix + ".txt").write_text(
        "\n".join(report) + "\n", encoding="utf-8", errors="backslashreplace"
    )
    return target


class _MemoryLimit:
    """Caps the process's address space at what it uses now plus ``headroom``."""

    def __init__(self, headroom: int) -> None:
        self.headroom = headroom

    def __enter__(self) -> None:
        self.saved = resource.getrlimit(resource.RLIMIT_AS)
        used = _vm_size()
        hard = self.saved[1]
        soft = used + self.headroom
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))

    def __exit__(self, *exc: object) -> None:
        resource.setrlimit(resource.RLIMIT_AS, self.saved)


def _vm_size() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 1 << 30


def fuzz(cases: range, tmp: Path) -> list[str]:
    """Run the cases; record and return a line per failure."""
    failures = []
    with _MemoryLimit(MEMORY_HEADROOM):
        for case in cases:
            m = mutant(case)
            text = render(m)
            path = tmp / f"case{m.seed.suffix if m.seed.suffix == '.json' else '.yaml'}"
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
            outcome = run_case(path)
            if outcome.problem is not None:
                saved = _record(m, text, outcome)
                failures.append(f"case {case} ({saved.name}): {outcome.problem}")
    return failures


def _summary(failures: list[str]) -> str:
    by_problem: dict[str, list[str]] = {}
    for f in failures:
        problem = f.split("): ", 1)[1]
        by_problem.setdefault(problem, []).append(f.split(" (")[0])
    lines = [f"{len(failures)} failing case(s), recorded in {FAILURES}:"]
    for problem, cases in sorted(by_problem.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"  {len(cases):5d} x {problem}  [{', '.join(cases[:5])}]")
    return "\n".join(lines)


# -- the tests ------------------------------------------------------------------------------


def test_fuzz_smoke(tmp_path: Path) -> None:
    """issue 9 (state-file fuzzer, smoke): 200 seeded mutants of the examples and the
    engine repros; ``xce schedule --json`` exits 0 with the decisions JSON or 2 with a
    located message, never 1, never hangs, never changes the file."""
    assert SEEDS, "no seed files"
    failures = fuzz(range(SMOKE_CASES), tmp_path)
    assert not failures, _summary(failures)


@pytest.mark.slow
def test_fuzz_10k(tmp_path: Path) -> None:
    """issue 9 (state-file fuzzer): as the smoke test, over 10,000 seeded mutants."""
    start = int(os.environ.get("XCE_FUZZ_START", SMOKE_CASES))
    count = int(os.environ.get("XCE_FUZZ_CASES", SLOW_CASES))
    failures = fuzz(range(start, start + count), tmp_path)
    assert not failures, _summary(failures)


def _recorded() -> list[Path]:
    if not FAILURES.is_dir():
        return []
    return sorted(p for p in FAILURES.iterdir() if p.suffix in (".json", ".yaml", ".yml"))


@pytest.mark.parametrize("path", _recorded(), ids=lambda p: p.name)
def test_recorded_failure(path: Path, tmp_path: Path) -> None:
    """issue 9 (state-file fuzzer): a recorded failing case (tests/data/fuzz-failures/)
    now exits 0 or 2 with a located message, never 1, never hangs."""
    copy_ = tmp_path / path.name
    copy_.write_bytes(path.read_bytes())
    with _MemoryLimit(MEMORY_HEADROOM):
        outcome = run_case(copy_)
    assert outcome.problem is None, (outcome.problem, outcome.stderr[-2000:])
