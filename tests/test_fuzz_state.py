"""A mutation fuzzer over state files (issues 9 and 10): ``xce schedule FILE`` (``--json``,
the table, ``--explain``, ``--job ID``, ``--threads``, ``--picker``; now and then
``--snapshot`` and the snapshot loaded back) on broken variants of the bundled examples
and the engine repros must exit 0 or 2 with a located message, never 1 (a bug), never
hang, never print a traceback, and must leave the file unchanged. The harness and the
exact checks are in ``tests/fuzzing.py``.

Case ``i`` mutates seed file ``i mod n`` with ``random.Random(i)`` (``XCE_FUZZ_SEED=S``,
S != 0: ``random.Random(f"S/i")``): 1-3 mutations of the parsed document (a key deleted,
a list entry duplicated, a value retyped str/int/float/bool/list/dict/null, a huge,
non-finite or negative number, deep nesting of lists or mappings, unicode, control
characters, Rich markup and terminal escapes in names and keys, a garbled requirement, an
unknown key), then sometimes text-level mutations (a duplicated key, bytes flipped,
inserted, deleted or duplicated, invalid UTF-8, a byte-order mark) or the text truncated.
A mutant whose one text change is a duplicated key must not exit 0 (duplicate keys are
refused, in JSON as in YAML).

The smoke test runs 50 cases; the slow one 10,000 (``XCE_FUZZ_CASES``/``XCE_FUZZ_START``).
A failing case is minimised and kept under ``tests/data/fuzz-failures/open/``
(``XCE_FUZZ_FAILURES``); :func:`test_recorded_failure` reruns every kept state case.
"""

from __future__ import annotations

import copy
import json
import math
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

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
from test_fuzz_resreq import valid_requirement

SEEDS = sorted(
    [
        *ROOT.glob("examples/*.yaml"),
        *ROOT.glob("examples/*.yml"),
        *ROOT.glob("examples/*.json"),
        *(Path(__file__).resolve().parent / "data" / "repros" / "engine").glob("*.*"),
    ]
)
SECTIONS = ("resources", "hosts", "shared", "queues", "limits", "running", "jobs", "picker")
SMOKE_CASES = 50
SLOW_CASES = 10_000
KEEP_PER_KIND = 3  # failing cases kept per kind of failure in one run

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
    "[/]",
    "[bold red]x[/]",
    "[link=file:///etc/passwd]x",
    "\x1b]8;;http://example.com\x1b\\link\x1b]8;;\x1b\\",
    "\x1b[2J\x1b[H",
    "\x07\x08\r\x7f",
    "\u0085\u2028\u2029",
    "\ufeffbom",
    "\\",
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
    1e15,
    1e15 + 1,
    10**15 + 1,
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
    deep_open: str = "["  # what nests: "[" (lists) or '{"a": ' (mappings)
    truncate_at: float | None = None  # fraction of the text kept
    text_ops: list[tuple[str, int, int]] = field(default_factory=list)  # (op, at, n)
    duplicate_key: bool = False  # set by render: a duplicated key is the only text change


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
        m.deep = rnd.choice((50, 101, 500, 5_000, 50_000))
        m.deep_open = rnd.choice(("[", '{"a": '))
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


TEXT_OPS = ("duplicate key", "flip", "insert", "delete", "duplicate", "invalid utf-8", "bom")
INSERTS = (
    b"\x00",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",  # a UTF-8-encoded surrogate
    b"\r",
    b"\t",
    b"\x1b[31m",
    b"[/]",
    b"{",
    b"}",
    b"[",
    b"]",
    b": ",
    b"- ",
    b",",
    b'"',
    b"'",
    b"&a ",
    b"*a",
    b"!!python/object:os.system ",
    b"\n",
    b"\n  ",
    b"1e400",
    b"NaN",
    b"-Infinity",
    b".inf",
)


def _rnd(case: int) -> random.Random:
    seed = fuzz_seed()
    return random.Random(case) if seed == 0 else random.Random(f"{seed}/{case}")


GENTLE_SUFFIXES = (
    "[/]", "[bold red]x[/]", "\x1b[31m", "\x1b]8;;http://x\x1b\\", "\u202e", "名前", " x",
    "%s", "\\", "[link=file:///etc]y", "\r", "\x07", "$x$", "\U0001f600",
)  # fmt: skip
FREE_NAMES = ("user", "project", "id")


def _gentle_once(m: Mutant, rnd: random.Random) -> None:
    """A change that usually keeps the file valid, so that scheduling and the output run:
    odd but unique names, scaled numbers, a valid requirement, a list entry dropped."""
    nodes = list(_nodes(m.doc))
    op = rnd.choice(("rename", "rename", "scale", "resreq", "drop entry"))
    if op == "rename":
        names = [(p, v) for p, v in nodes if p and p[-1] in FREE_NAMES and not isinstance(v, bool)]
        names = [(p, v) for p, v in names if isinstance(v, str | int)]
        if not names:
            return
        path, value = rnd.choice(names)
        m.doc = _set(m.doc, path, f"{value}{rnd.choice(GENTLE_SUFFIXES)}")
    elif op == "scale":
        numbers = [(p, v) for p, v in nodes if p and isinstance(v, int | float)]
        numbers = [(p, v) for p, v in numbers if not isinstance(v, bool)]
        if not numbers:
            return
        path, value = rnd.choice(numbers)
        factor = rnd.choice((2, 10, 1000, 0.5))
        new = value * factor
        m.doc = _set(m.doc, path, int(new) if isinstance(value, int) else new)
    elif op == "resreq":
        jobs = [(p, v) for p, v in nodes if p[-2:-1] == ("jobs",) and isinstance(v, dict)]
        if not jobs:
            return
        path, job = rnd.choice(jobs)
        job["resreq"] = valid_requirement(rnd)
        if " + " in job["resreq"]:  # a compound fixes its own task count
            job.pop("tasks", None)
    else:
        lists = [(p, v) for p, v in nodes if p and p[-1] in ("jobs", "running")]
        lists = [(p, v) for p, v in lists if isinstance(v, list) and v]
        if not lists:
            return
        path, entries = rnd.choice(lists)
        del entries[rnd.randrange(len(entries))]
    m.steps.append(f"gentle {op} at {'.'.join(map(str, path)) or '<root>'}")


def mutant(case: int) -> Mutant:
    """Case ``case``: its seed file and a reproducible mutation of it (about a third of the
    cases only gentle changes, see :func:`_gentle_once`)."""
    seed = SEEDS[case % len(SEEDS)]
    rnd = _rnd(case)
    m = Mutant(seed, case, _load(seed))
    if rnd.random() < 0.35:
        for _ in range(rnd.choice((1, 2, 3))):
            _gentle_once(m, rnd)
        return m
    for _ in range(rnd.choice((1, 1, 2, 3))):
        _mutate_once(m, rnd)
    if rnd.random() < 0.3:
        for _ in range(rnd.choice((1, 1, 2, 4))):
            op = rnd.choice(TEXT_OPS)
            m.text_ops.append((op, rnd.randrange(1 << 30), rnd.randrange(1 << 30)))
            m.steps.append(f"text: {op}")
    if rnd.random() < 0.12:
        m.truncate_at = rnd.random()
        m.steps.append(f"truncated at {m.truncate_at:.2f} of the text")
    return m


_KEY = re.compile(rb'"([A-Za-z_]\w*)": |^(\s*-?\s*)([A-Za-z_]\w*): ', re.M)


def _text_op(data: bytes, op: str, a: int, b: int) -> bytes:
    """One text-level mutation at positions drawn from ``a`` and ``b``."""
    n = len(data)
    at = a % (n + 1)
    if op == "duplicate key":
        keys = list(_KEY.finditer(data))
        if not keys:
            return data
        k = keys[a % len(keys)]
        if k.group(1) is not None:  # JSON: "key": null, before the key
            return data[: k.start()] + b'"' + k.group(1) + b'": null, ' + data[k.start() :]
        # YAML: the key's line again right after it (same indent: the same mapping)
        end = data.find(b"\n", k.start())
        end = n if end < 0 else end + 1
        line = data[k.start() : end]
        return data[:end] + (line if line.endswith(b"\n") else b"\n" + line) + data[end:]
    if op == "flip" and n:
        i = a % n
        return data[:i] + bytes([data[i] ^ (1 << (b % 8))]) + data[i + 1 :]
    if op == "insert":
        return data[:at] + INSERTS[b % len(INSERTS)] + data[at:]
    if op == "delete":
        return data[:at] + data[at + 1 + b % 16 :]
    if op == "duplicate":
        span = data[at : at + 1 + b % 64]
        j = b % (n + 1)
        return data[:j] + span + data[j:]
    if op == "invalid utf-8":
        return data[:at] + b"\x80\xfe" + data[at:]
    if op == "bom":
        return b"\xef\xbb\xbf" + data
    return data


def makes_duplicate_key(m: Mutant, data: bytes) -> bool:
    """Whether the mutant's only text mutation is a duplicated mapping key (a JSON key, or
    a YAML key line that is not a list item's first): then exit 0 is wrong, as a duplicate
    key is refused (issue 10). ``data``: the text before the text mutations."""
    if m.truncate_at is not None or [op for op, _, _ in m.text_ops] != ["duplicate key"]:
        return False
    keys = list(_KEY.finditer(data))
    if not keys:
        return False
    k = keys[m.text_ops[0][1] % len(keys)]
    return k.group(1) is not None or b"-" not in k.group(2)


def render(m: Mutant) -> bytes:
    """The mutant's bytes in its seed's format (JSON, else YAML; JSON if YAML cannot say
    it), with the text-level mutations applied."""
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
        close = "]" if m.deep_open == "[" else "}"
        nested = m.deep_open * n + "1" + close * n
        text = text.replace(f'"{DEEP}"', nested).replace(DEEP, nested)
    if m.truncate_at is not None:
        text = text[: int(len(text) * m.truncate_at)]
    data = text.encode("utf-8", errors="surrogatepass")
    m.duplicate_key = makes_duplicate_key(m, data)
    for op, a, b in m.text_ops:
        data = _text_op(data, op, a, b)
    return data


# -- running one case -----------------------------------------------------------------------

MODES = (
    ("--json",),
    ("--json",),
    ("--json",),
    (),
    ("--explain",),
    ("--json", "--lenient"),
    ("--json", "--threads"),
    ("--json", "--picker", "strict"),
    ("--picker", "fairshare"),
    ("--job",),  # completed with a job id of the mutant, when it has one
)


def _mode(rnd: random.Random, m: Mutant) -> tuple[str, ...]:
    mode = rnd.choice(MODES)
    if mode != ("--job",):
        return mode
    if m.text_ops or m.truncate_at is not None:  # the id may no longer be in the text
        return ("--json",)
    doc = m.doc
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    ids = (
        [j["id"] for j in jobs if isinstance(j, dict) and "id" in j]
        if isinstance(jobs, list)
        else []
    )
    ids = [str(i) for i in ids if isinstance(i, str | int) and not isinstance(i, bool)]
    ids = [i for i in ids if "\x00" not in i and not re.search("[\ud800-\udfff]", i)]
    return ("--job", rnd.choice(ids)) if ids else ("--json",)


def _decisions(out: str) -> bool:
    try:
        info = json.loads(out)
    except ValueError:
        return False
    return isinstance(info, dict) and {"dispatched", "pending"} <= set(info)


def _argv(path: Path, mode: tuple[str, ...]) -> list[str]:
    return ["schedule", str(path), *mode]


def run_case(
    path: Path,
    mode: tuple[str, ...] = ("--json",),
    snapshot: Path | None = None,
    *,
    sample: bool = False,
) -> Outcome:
    """``xce schedule PATH MODE`` in-process, checked (``tests/fuzzing.py``); with
    ``snapshot``, also ``--snapshot`` there and, when the run succeeds, the snapshot must
    load back (``xce schedule SNAPSHOT --json`` exits 0)."""
    blank = not path.read_bytes().strip()
    argv = _argv(path, mode) + (["--snapshot", str(snapshot)] if snapshot else [])
    outcome = run_cli(
        argv,
        [path],
        located_in_file(path, allow_bare=blank),
        check_stdout=_decisions if "--json" in mode else None,
        subprocess_too=sample,
    )
    if snapshot is None or outcome.problem is not None or outcome.exit_code != 0:
        return outcome
    again = run_cli(["schedule", str(snapshot), "--json"], [snapshot], located_in_file(snapshot))
    if again.exit_code != 0 or again.problem is not None:
        said = (again.problem or "") + " " + again.stderr[-300:]
        return Outcome(
            outcome.argv,
            0,
            outcome.stdout,
            again.stderr,
            f"the snapshot does not load back: {said}",
        )
    return outcome


def _suffix(m: Mutant) -> str:
    return ".json" if m.seed.suffix == ".json" else ".yaml"


def fuzz(cases: range, tmp: Path) -> list[str]:
    """Run the cases; keep (minimised) a few per kind of failure; a line per failure."""
    failures: list[str] = []
    kept: dict[str, int] = {}
    with MemoryLimit():
        for case in cases:
            m = mutant(case)
            data = render(m)
            rnd = random.Random(f"mode/{fuzz_seed()}/{case}")
            mode = _mode(rnd, m)
            snapshot = tmp / rnd.choice(("snap.json", "snap.yaml")) if rnd.random() < 0.1 else None
            path = tmp / f"case{_suffix(m)}"
            path.write_bytes(data)
            if snapshot is not None:
                snapshot.unlink(missing_ok=True)
            outcome = run_case(path, mode, snapshot, sample=subprocess_sample(case))
            if m.duplicate_key and "--lenient" in mode:
                m.duplicate_key = False  # a job entry with one pends INVALID: exit 0 is right
            if outcome.problem is None and outcome.exit_code == 0 and m.duplicate_key:
                outcome.problem = "exit 0 for a state file with a duplicate key"
            if outcome.problem is None:
                continue
            kind = signature(outcome)
            name = f"state-s{fuzz_seed()}-case{case}{_suffix(m)}"
            if kept.get(kind, 0) < KEEP_PER_KIND:
                kept[kind] = kept.get(kind, 0) + 1
                first = kept[kind] == 1 and not kind.startswith("hang")
                small, shown = (
                    _minimise(data, path, mode, snapshot, kind) if first else (data, None)
                )
                record(
                    name,
                    small,
                    "state",
                    [*_argv(Path("{input}"), mode)]
                    + (["--snapshot", "{input}.snapshot" + snapshot.suffix] if snapshot else []),
                    shown or outcome,
                    [f"seed file: {m.seed.relative_to(ROOT)}", f"case: {case}"]
                    + (["expect: exit 2"] if m.duplicate_key else [])
                    + [f"mutation: {s}" for s in m.steps]
                    + (
                        [f"minimised from {len(data)} to {len(small)} bytes"]
                        if small != data
                        else []
                    ),
                )
            failures.append(f"case {case} ({name}): {outcome.problem}")
    return failures


def _minimise(
    data: bytes, path: Path, mode: tuple[str, ...], snapshot: Path | None, kind: str
) -> tuple[bytes, Outcome | None]:
    found: list[Outcome] = []

    def fails_same(candidate: bytes) -> bool:
        path.write_bytes(candidate)
        if snapshot is not None:
            snapshot.unlink(missing_ok=True)
        outcome = run_case(path, mode, snapshot)
        if outcome.problem is not None and signature(outcome) == kind:
            found.append(outcome)
            return True
        return False

    small = minimise(data, fails_same)
    return small, (found[-1] if found and small != data else None)


# -- the tests ------------------------------------------------------------------------------


def test_fuzz_smoke(tmp_path: Path) -> None:
    """issue 10 (state-file fuzzer, smoke): 50 seeded mutants of the examples and the
    engine repros; ``xce schedule`` exits 0 (with the decisions JSON under ``--json``) or
    2 with a located message, never 1, never hangs, never changes the file."""
    assert SEEDS, "no seed files"
    assert_passes(fuzz, range(SMOKE_CASES), tmp_path)


@pytest.mark.slow
def test_fuzz_10k(tmp_path: Path) -> None:
    """issue 10 (state-file fuzzer): as the smoke test, over 10,000 seeded mutants."""
    assert_passes(fuzz, case_range(0, SLOW_CASES), tmp_path)


@pytest.mark.parametrize("case", recorded_params("state"))
def test_recorded_failure(case: Recorded, tmp_path: Path) -> None:
    """issue 10 (state-file fuzzer): a kept failing case (tests/data/fuzz-failures/) now
    exits 0 or 2 with a located message, never 1, never hangs, leaves the file unchanged."""
    copy_ = case.copy_to(tmp_path)
    argv = case.command(copy_)
    snapshot = None
    if "--snapshot" in argv:
        i = argv.index("--snapshot")
        snapshot = Path(argv[i + 1])
        argv = argv[:i] + argv[i + 2 :]
    with MemoryLimit():
        outcome = run_case(copy_, tuple(argv[2:]), snapshot)
    assert outcome.problem is None, (outcome.problem, outcome.stderr[-2000:])
    if case.expect_exit is not None:
        assert outcome.exit_code == case.expect_exit, outcome.stdout[-2000:]
