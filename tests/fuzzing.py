"""The shared harness of the fuzzers (issue 10): seeds, one case run in-process under a
timer and a memory cap, the checks every case must pass, and failing cases kept as files.

**The contract of a case.** ``xce ARGS`` (typer's CliRunner, in this process) must

- end within :data:`CASE_TIMEOUT_S` (a ``setitimer`` alarm raises :class:`CaseTimeout`, a
  ``BaseException`` the CLI's guard cannot swallow; a timeout is a failure, "hang");
- exit 0 (and then pass the fuzzer's check of stdout, if it gives one) or 2 (and then its
  stderr must pass the fuzzer's *locator*, see below) -- any other exit, or an exception
  escaping the CLI, is a failure;
- print no Python traceback (``Traceback (most recent call last)``) on stderr, whatever
  the exit code, and no raw control character (:data:`CONTROL`) on stdout or stderr;
- raise no ``RuntimeWarning`` (numpy's overflow or invalid value: a number gone wrong);
- leave every input file byte for byte as it was (sha256 before and after).

**Located messages.** What "located" means depends on the input, so each fuzzer passes a
locator; the ones here:

- :func:`located_in_file` (state files, jobs files, SWF): stderr has a line
  ``xce: error: FILE:LINE...`` (or ``FILE: line LINE``) or ``xce: error: FILE: PATH: ...``
  where ``FILE`` is the input's path exactly as given on the command line, ``LINE`` a
  number between 1 and the file's line count (+1, an end-of-file position), and ``PATH``
  a path into the document as the loader writes them (``jobs[3].resreq``,
  ``hosts[0].name``, ``["odd key"]``) whose first step is a section, ``job``, a quoted
  key or a word the file holds; and a caret under a quoted line points into it
  (:func:`caret_ok`). ``allow_bare`` (for inputs with nothing to point into,
  such as a blank file or a broken ``.gz`` stream) accepts ``xce: error: FILE: message``.
- the requirement fuzzer's own locator (see ``test_fuzz_resreq.py``).

**Seeds.** ``XCE_FUZZ_SEED`` (default 0) seeds every fuzzer; case ``i`` of a fuzzer draws
from ``random.Random(f"{seed}/{i}")`` (the state fuzzer keeps its issue 9 scheme for seed
0: ``random.Random(i)``), so one case can be rerun alone. ``XCE_FUZZ_CASES`` and
``XCE_FUZZ_START`` set a slow run's case count and first case.

**Failing cases** are written to ``XCE_FUZZ_FAILURES`` (default
``tests/data/fuzz-failures``), under ``open/``: the input file plus a sidecar
``NAME.txt`` whose ``command:`` line is the argv as JSON, with ``{input}`` for the
input's path, ``{text}`` for its text (a requirement string) and ``{root}`` for the
repository (``["resreq", "--cluster", "{root}/examples/cluster.yaml", "--", "{text}"]``),
``fuzzer:`` names the fuzzer, and ``expect: exit N`` (if given) is the exit code due.
:func:`recorded` lists them for the regression tests: a case at the top level must pass;
one under ``open/`` is not fixed yet and is skipped. When a fix lands, move the case (and
its ``.txt``) up one level. ``XCE_FUZZ_SUBPROCESS_EVERY`` (default 200) runs one case in
that many also as a real process (:func:`subprocess_sample`).
"""

from __future__ import annotations

import faulthandler
import hashlib
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
import types
import unicodedata
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xce.cli.main import app

ROOT = Path(__file__).resolve().parent.parent
FAILURES = Path(
    os.environ.get("XCE_FUZZ_FAILURES", Path(__file__).resolve().parent / "data" / "fuzz-failures")
)
OPEN = FAILURES / "open"
XCE = Path(sys.executable).parent / "xce"
CASE_TIMEOUT_S = 20.0  # a hang guard per case, not a timing assertion
MEMORY_HEADROOM = 3 << 30  # address space a case may add to the process
TRACEBACK = "Traceback (most recent call last)"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Control characters (all but tab and newline, C1 too): output is not a terminal here,
so any in stdout or stderr came from the input, unescaped (issue 10: names made visible)."""


def fuzz_seed() -> int:
    """``XCE_FUZZ_SEED`` or 0."""
    return int(os.environ.get("XCE_FUZZ_SEED", "0"))


def case_range(default_start: int, default_count: int) -> range:
    """The slow run's cases: ``XCE_FUZZ_START`` / ``XCE_FUZZ_CASES`` override the defaults."""
    start = int(os.environ.get("XCE_FUZZ_START", default_start))
    count = int(os.environ.get("XCE_FUZZ_CASES", default_count))
    return range(start, start + count)


# -- running one case -----------------------------------------------------------------------


class CaseTimeout(BaseException):
    """Raised by the per-case timer (a BaseException: the CLI's guard cannot swallow it)."""


@dataclass
class Outcome:
    argv: list[str]
    exit_code: int | None
    stdout: str
    stderr: str
    problem: str | None  # None: the case passed


Locator = Callable[[str], bool]
"""stderr -> whether an exit-2 message is located."""


def _on_alarm(signum: int, frame: types.FrameType | None) -> None:
    raise CaseTimeout


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def run_cli(
    argv: Sequence[str],
    inputs: Sequence[Path],
    locate: Locator,
    *,
    check_stdout: Callable[[str], bool] | None = None,
    timeout: float = CASE_TIMEOUT_S,
    subprocess_too: bool = False,
    before_each: Callable[[], None] | None = None,
) -> Outcome:
    """``xce ARGV`` in-process; the outcome, with what went wrong (``problem``) if anything.

    ``subprocess_too``: then also as a real process (``.venv/bin/xce``, same checks, and
    the same exit code as in-process), for the sample of cases that
    :func:`subprocess_sample` picks. A hang in C code, where the alarm cannot interrupt,
    ends the whole run after ``2 * timeout + 30`` s with every thread's stack
    (``faulthandler``): loud, never silent. ``before_each`` runs before each of the two
    runs (to remove an output directory, say).
    """
    argv = list(argv)
    if before_each is not None:
        before_each()
    before = {p: _digest(p) for p in inputs}
    runner = CliRunner(env={"COLUMNS": "200"})
    old = signal.signal(signal.SIGALRM, _on_alarm)
    faulthandler.dump_traceback_later(2 * timeout + 30, exit=True)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            result = runner.invoke(app, argv, catch_exceptions=True)
    except CaseTimeout:
        return Outcome(argv, None, "", "", f"hang: no result within {timeout:g} s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, old)
    out, err, code = result.stdout, result.stderr, result.exit_code
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        return Outcome(argv, code, out, err, f"uncaught {type(exc).__name__}: {str(exc)[:300]}")
    outcome = _check(argv, inputs, before, locate, check_stdout, code, out, err)
    numeric = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    if outcome.problem is None and numeric:
        w = numeric[0]
        where = f"{Path(w.filename).name}:{w.lineno}"
        outcome.problem = f"exit {code} after a RuntimeWarning ({where}): {str(w.message)[:200]}"
    if subprocess_too and outcome.problem is None:
        if before_each is not None:
            before_each()
        real = _run_process(argv, inputs, locate, check_stdout, timeout)
        if real is not None and real.problem is None and real.exit_code != code:
            real.problem = f"exit {real.exit_code} as a process, {code} in-process"
        if real is not None and real.problem is not None:
            real.problem = f"as a process: {real.problem}"
            return real
    return outcome


def _run_process(
    argv: list[str],
    inputs: Sequence[Path],
    locate: Locator,
    check_stdout: Callable[[str], bool] | None,
    timeout: float,
) -> Outcome | None:
    try:
        args = [os.fsencode(a) for a in argv]
    except UnicodeEncodeError:  # a lone surrogate no argv can hold
        return None
    if any(b"\0" in a for a in args):  # nor a NUL
        return None
    before = {p: _digest(p) for p in inputs}
    env = {**os.environ, "COLUMNS": "200"}
    try:
        proc = subprocess.run(
            [XCE, *args], capture_output=True, timeout=timeout * 2, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        return Outcome(argv, None, "", "", f"hang: no result within {2 * timeout:g} s")
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    return _check(argv, inputs, before, locate, check_stdout, proc.returncode, out, err)


def subprocess_sample(case: int) -> bool:
    """Whether a slow run's case also runs as a real process: one in
    ``XCE_FUZZ_SUBPROCESS_EVERY`` (default 200; 0: none)."""
    every = int(os.environ.get("XCE_FUZZ_SUBPROCESS_EVERY", "200"))
    return every > 0 and case % every == every - 1


def _check(
    argv: list[str],
    inputs: Sequence[Path],
    before: dict[Path, str | None],
    locate: Locator,
    check_stdout: Callable[[str], bool] | None,
    code: int,
    out: str,
    err: str,
) -> Outcome:
    changed = [p.name for p in inputs if _digest(p) != before[p]]
    problem: str | None = None
    if changed:
        problem = f"an input file changed: {', '.join(changed)}"
    elif TRACEBACK in err:
        problem = f"exit {code} with a traceback: {_last_words(err)}"
    elif m := CONTROL.search(out + err):
        problem = f"exit {code} with a raw control character {m.group()!r} in the output"
    elif code == 0:
        if check_stdout is not None and not check_stdout(out):
            problem = "exit 0 without the expected output on stdout"
    elif code == 2:
        if not locate(err):
            problem = "exit 2 without a located message"
    else:
        problem = f"exit {code}: {_last_words(err)}"
    return Outcome(argv, code, out, err, problem)


def _last_words(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    said = next((ln for ln in reversed(lines) if ln.startswith("xce: ")), "")
    return (said or (lines or [""])[-1])[:300]


class MemoryLimit:
    """Caps the process's address space at what it uses now plus ``headroom`` (a runaway
    allocation is then a MemoryError, reported as a crash, not a dead machine)."""

    def __init__(self, headroom: int = MEMORY_HEADROOM) -> None:
        self.headroom = headroom

    def __enter__(self) -> None:
        self.saved = resource.getrlimit(resource.RLIMIT_AS)
        soft = _vm_size() + self.headroom
        hard = self.saved[1]
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


# -- located messages -----------------------------------------------------------------------

DOC_PATH = r"(?:[^\W\d]\w*|\[[^\]]*\])(?:\.[^\W\d]\w*|\[[^\]]*\])*"
"""A path into a document as the loaders write it: ``hosts[2].resources.mem``,
``["odd key"]``, ``job.resreq``."""


def _width(text: str) -> int:
    """Columns on a terminal: wide (East Asian) characters count two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def caret_ok(err: str) -> bool:
    """Every caret line (``  ^``) points inside the line above it, or one past its end."""
    lines = err.splitlines()
    for i, line in enumerate(lines):
        if i and re.fullmatch(r"\s*\^\s*", line):
            above = lines[i - 1]
            if len(line.rstrip()) > max(len(above), _width(above)) + 1:
                return False
    return True


SECTIONS = ("resources", "hosts", "shared", "queues", "limits", "running", "jobs", "picker")


def _names_a_key(doc_path: str, text: str) -> bool:
    """A path's first step is a section of a state file, ``job`` (a JSONL line), a quoted
    key, or a word the file holds: not just any word before a colon."""
    first = re.match(r"[^\W\d]\w*|\[", doc_path)
    step = first.group() if first else ""
    return step in (*SECTIONS, "job", "[") or step in text


def _line_count(path: Path) -> int:
    try:
        data = path.read_bytes()
    except OSError:
        return 0
    if path.suffix == ".gz":
        return 1 << 62  # lines of the decompressed text: not counted here
    text = data.decode("utf-8", "replace")
    # YAML and Python also break lines at \r, NEL, U+2028/9 (and Python at \v, \f, \x1c-e)
    return max(data.count(b"\n"), data.count(b"\r"), len(text.splitlines())) + 1


def located_in_file(path: Path, *, allow_bare: bool = False) -> Locator:
    """The message names ``path`` as given, then a line within the file or a document path
    (or nothing, with ``allow_bare``)."""
    name = re.escape(str(path))
    lines = _line_count(path)
    with_line = re.compile(rf"^xce: error: {name}(?::| line |: line )(\d+)[:,\s]", re.M)
    with_path = re.compile(rf"^xce: error: {name}: ({DOC_PATH}): ", re.M)
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        text = ""
    bare = re.compile(rf"^xce: error: {name}: \S", re.M)

    def locate(err: str) -> bool:
        if not caret_ok(err):
            return False
        m = with_line.search(err)
        if m and 1 <= int(m.group(1)) <= lines + 1:
            return True
        m = with_path.search(err)
        if m and _names_a_key(m.group(1), text):
            return True
        return allow_bare and bool(bare.search(err))

    return locate


# -- failing cases as files -----------------------------------------------------------------


@dataclass
class Recorded:
    """A kept failing case: its input file and how to run it."""

    input: Path
    fuzzer: str
    argv: list[str]  # with {input}, {text}, {root}
    is_open: bool
    expect_exit: int | None = None  # the sidecar's "expect: exit N" (an exit 0 is wrong)

    def copy_to(self, folder: Path) -> Path:
        """A copy of the input in ``folder`` (the kept file itself is never run on)."""
        copy = folder / self.input.name
        copy.write_bytes(self.input.read_bytes())
        return copy

    def command(self, copy: Path) -> list[str]:
        """The argv for a copy of the input."""
        text = copy.read_text(encoding="utf-8", errors="surrogateescape") if self.argv else ""
        return [
            a.replace("{input}", str(copy)).replace("{root}", str(ROOT)).replace("{text}", text)
            for a in self.argv
        ]


def record(
    name: str,
    data: bytes,
    fuzzer: str,
    argv_template: Sequence[str],
    outcome: Outcome,
    notes: Sequence[str] = (),
) -> Path:
    """Keep a failing case under ``FAILURES/open``: the input and its ``.txt`` sidecar."""
    OPEN.mkdir(parents=True, exist_ok=True)
    target = OPEN / name
    target.write_bytes(data)
    report = [
        f"fuzzer: {fuzzer}",
        f"command: {json.dumps(list(argv_template), ensure_ascii=True)}",
        f"seed: {fuzz_seed()}",
        *notes,
        f"problem: {outcome.problem}",
        f"exit code: {outcome.exit_code}",
        "stderr (last 40 lines):",
        *outcome.stderr.splitlines()[-40:],
    ]
    Path(f"{target}.txt").write_text(
        "\n".join(report) + "\n", encoding="utf-8", errors="backslashreplace"
    )
    return target


def _read_sidecar(path: Path) -> tuple[str, list[str], int | None]:
    sidecar = Path(f"{path}.txt")
    fuzzer, argv = "state", ["schedule", "{input}", "--json"]  # issue 9's cases say neither
    expect = None
    if sidecar.is_file():
        for line in sidecar.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("fuzzer: "):
                fuzzer = line.split(": ", 1)[1].strip()
            elif line.startswith("command: "):
                argv = json.loads(line.split(": ", 1)[1])
            elif line.startswith("expect: exit "):
                expect = int(line.split()[-1])
    return fuzzer, argv, expect


def recorded(fuzzer: str) -> list[Recorded]:
    """The kept cases of one fuzzer, fixed (top level) and open (``open/``)."""
    found = []
    for folder, is_open in ((FAILURES, False), (OPEN, True)):
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if not path.is_file() or path.suffix in (".txt", ".md"):
                continue
            kind, argv, expect = _read_sidecar(path)
            if kind == fuzzer:
                found.append(Recorded(path, kind, argv, is_open, expect))
    return found


def recorded_params(fuzzer: str) -> list[object]:
    """``pytest.param`` per kept case, ``open/`` ones skipped with the reason."""
    params: list[object] = []
    for case in recorded(fuzzer):
        marks = ()
        if case.is_open:
            marks = (
                pytest.mark.skip(
                    reason="open fuzz failure (tests/data/fuzz-failures/open/): not fixed yet; "
                    "move it up one level once fixed"
                ),
            )
        name = ("open/" if case.is_open else "") + case.input.name
        params.append(pytest.param(case, id=name, marks=marks))
    return params


def assert_passes(fuzz: Callable[[range, Path], list[str]], cases: range, tmp: Path) -> None:
    """Run ``cases`` of a fuzzer (its seed printed first); every case must pass."""
    print(f"XCE_FUZZ_SEED={fuzz_seed()}")
    failures = fuzz(cases, tmp)
    assert not failures, summary(failures)


def summary(failures: list[str]) -> str:
    """Failures grouped by problem (each line ``case N (file): problem``)."""
    by_problem: dict[str, list[str]] = {}
    for f in failures:
        head, _, problem = f.partition("): ")
        by_problem.setdefault(problem, []).append(head.split(" (")[0])
    lines = [f"{len(failures)} failing case(s) (XCE_FUZZ_SEED={fuzz_seed()}), kept in {OPEN}:"]
    for problem, cases in sorted(by_problem.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"  {len(cases):5d} x {problem}  [{', '.join(cases[:5])}]")
    return "\n".join(lines)


# -- grouping and minimising ----------------------------------------------------------------

_EXC = re.compile(r"\b([A-Z]\w*(?:Error|Exception|Exit|Interrupt|Timeout))\b")


def signature(outcome: Outcome) -> str:
    """What kind of failure: the problem's category and the exception named, if any
    (``exit 1 with a traceback/RecursionError``), so a minimised input can be checked to
    fail the same way and a run keeps a few cases per kind, not thousands."""
    problem = outcome.problem or ""
    category = problem.split(":", 1)[0]
    if "without a located message" in problem:  # which message: its words, not its values
        said = next((ln for ln in outcome.stderr.splitlines() if ln.startswith("xce: ")), "")
        said = re.sub(r"(?:/|<)\S*|'[^']*'|\"[^\"]*\"|\d+(?:\.\d*)?(?:e[+-]?\d+)?", "#", said)
        return f"{category}/{said[:60]}"
    names = _EXC.findall(problem) or _EXC.findall(outcome.stderr[-2000:])
    return f"{category}/{names[-1]}" if names else category


def minimise(
    data: bytes,
    fails_same: Callable[[bytes], bool],
    *,
    budget: int = 150,
    seconds: float = 60.0,
) -> bytes:
    """A smaller input that still ``fails_same``: drop chunks of lines, then of bytes
    (ddmin-like, at most ``budget`` runs and about ``seconds`` of wall time)."""
    runs = 0
    deadline = time.monotonic() + seconds

    def attempt(candidate: bytes) -> bool:
        nonlocal runs
        runs += 1
        if time.monotonic() > deadline:
            runs = budget
            return False
        return fails_same(candidate)

    for split in (
        lambda d: d.splitlines(keepends=True),
        lambda d: [d[i : i + 1] for i in range(len(d))],
    ):
        parts = split(data)
        n = 2
        while len(parts) >= 2 and runs < budget:
            size = max(len(parts) // n, 1)
            for start in range(0, len(parts), size):
                if runs >= budget:
                    break
                candidate = b"".join(parts[:start] + parts[start + size :])
                if candidate != data and attempt(candidate):
                    data, parts = candidate, parts[:start] + parts[start + size :]
                    n = max(n - 1, 2)
                    break
            else:
                if size == 1:
                    break
                n = min(n * 2, len(parts))
        if len(data) > 20_000 and runs >= budget:
            break
    return data
