"""A fuzzer over requirement strings (issue 10): random requirements, from the grammar of
docs/resreq.md and then garbled, through three doors:

- ``xce resreq [--json] [--tasks T] -- STRING`` (checked alone);
- ``xce resreq --cluster examples/cluster.yaml [--json] -- STRING`` (checked against a
  cluster's names);
- a small state file whose job ``j1`` has the requirement: ``xce schedule FILE --json``
  (JSON or YAML, the table now and then).

Every case must exit 0 or 2, within the time limit, without a traceback, leaving its
input files unchanged (``tests/fuzzing.py``). **Located**, for the command-line doors:
a line ``xce: error: requirement...: MESSAGE`` (the requirement is named as the input),
or ``xce: error: --tasks...`` for a bad task count; and when the message draws the text
with a caret, the caret line is the next line after the text and points inside it (or
one past its end). For the state-file door, :func:`fuzzing.located_in_file`.

Case ``i``: ``random.Random(f"{XCE_FUZZ_SEED}/{i}")``. Smoke: 60 cases; slow: 3,000
(``XCE_FUZZ_CASES``/``XCE_FUZZ_START``). Failing cases are minimised and kept under
``tests/data/fuzz-failures/open/`` as ``resreq-*.txt``-sidecared inputs (the requirement
is the file's text); :func:`test_recorded_failure` reruns the kept ones.
"""

from __future__ import annotations

import json
import random
import re
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
    caret_ok,
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

CLUSTER = ROOT / "examples" / "cluster.yaml"
SMOKE_CASES = 60
SLOW_CASES = 3_000
KEEP_PER_KIND = 3
ARG_MAX = 131_071  # Linux's limit on one argument (MAX_ARG_STRLEN less the NUL)

# -- generating requirements ----------------------------------------------------------------

NAMES = (
    "mem", "swp", "slots", "type", "model", "cpuf", "fast", "gpu", "lic_x", "hname",
    "maxmem", "maxslots", "maxlic_x", "nope", "X86_64", "ARM", "defined", "select", "rusage",
    "a" * 300, "m\u00e9m", "_", "duration", "decay",
)  # fmt: skip
NUMBERS = (
    "0", "1", "2", "4000", "1.5", "-1", "1e6", "1e400", "-1e400", "1e-400", "0.0000001",
    "99999999999999999999", "9" * 400, "1e15", "1e16", "2147483648", "9223372036854775808",
    "nan", "inf", "-inf", "0x10", "1_000", ".5", "5.", "1e", "00012", "-0",
)  # fmt: skip
STRINGS = ("'X86_64'", '"ARM"', "''", "'a\"b'", "'[/]'", "'\x1b[31m'", "'unterminated")
NASTY = (
    "[/]", "[bold red]x[/]", "\x1b[2J", "\x1b]8;;http://x\x1b\\", "\x07", "\r", "\t", "\n",
    "\u202e", "\U0001f600", "\ufeff", "\u00a0", "\x7f", "\udcff", "%s", "{}", "\\",
)  # fmt: skip
CHARS = "[]{}()=:|&!<>*+-0123456789.e ,~#@'\"\\\n\t-_abcxyz"
OPS = ("==", "!=", "=", "<", ">", "<=", ">=", "&&", "||", "+", "-", "*", "/", "%", "===", "=>")


def _name(rnd: random.Random) -> str:
    return rnd.choice(NAMES[:11]) if rnd.random() < 0.8 else rnd.choice(NAMES)


def _expr(rnd: random.Random, depth: int = 0) -> str:
    r = rnd.random()
    if depth > 3 or r < 0.3:
        return rnd.choice((_name(rnd), rnd.choice(NUMBERS), rnd.choice(STRINGS)))
    if r < 0.4:
        return f"!{_expr(rnd, depth + 1)}" if rnd.random() < 0.5 else f"-{_expr(rnd, depth + 1)}"
    if r < 0.5:
        return f"({_expr(rnd, depth + 1)})"
    if r < 0.55:
        return f"defined({_name(rnd)})"
    return f"{_expr(rnd, depth + 1)}{rnd.choice(OPS)}{_expr(rnd, depth + 1)}"


def _section(rnd: random.Random) -> str:
    kind = rnd.choice(("select", "select", "rusage", "rusage", "order", "span", "same", "cu"))
    if kind == "select":
        return f"select[{_expr(rnd)}]"
    if kind == "rusage":
        groups = []
        for _ in range(rnd.choice((1, 1, 2))):
            items = [f"{_name(rnd)}={rnd.choice(NUMBERS)}" for _ in range(rnd.randint(1, 3))]
            if rnd.random() < 0.2:
                items.append(f"{rnd.choice(('duration', 'decay'))}={rnd.choice(NUMBERS)}")
            groups.append(":".join(items))
        return f"rusage[{', '.join(groups)}]"
    if kind == "order":
        keys = [rnd.choice(("", "-")) + _name(rnd) for _ in range(rnd.randint(1, 3))]
        return f"order[{':'.join(keys)}]"
    if kind == "span":
        return f"span[{rnd.choice(('hosts', 'ptile', 'x'))}={rnd.choice(NUMBERS)}]"
    if kind == "same":
        return f"same[{':'.join(_name(rnd) for _ in range(rnd.randint(0, 3)))}]"
    return f"cu[{rnd.choice(('type=x', '', 'maxcus=2'))}]"


def _simple(rnd: random.Random) -> str:
    parts = [_section(rnd) for _ in range(rnd.choice((0, 1, 1, 2, 3)))]
    if rnd.random() < 0.2:
        parts.insert(0, _expr(rnd))  # a leading bare select
    return " ".join(parts)


def _compound(rnd: random.Random) -> str:
    terms = []
    for _ in range(rnd.randint(1, 3)):
        body = _simple(rnd) if rnd.random() < 0.7 else "-"
        terms.append(f"{rnd.choice(('1', '2', '3', '0', '-1', '99999999999'))}*{{{body}}}")
    return " + ".join(terms)


def _deep(rnd: random.Random) -> str:
    n = rnd.choice((10, 101, 1_000, 10_000, 20_000))
    shape = rnd.choice(("!", "-", "(", "||", "&&", "+", "alter", "{"))
    if shape in ("!", "-"):
        return f"select[{shape * n}fast]"
    if shape == "(":
        return "select[" + "(" * n + "mem>1" + ")" * n + "]"
    if shape in ("||", "&&", "+"):
        return "select[" + shape.join(["mem>1"] * n) + "]"
    if shape == "alter":  # 20,000 alternatives take ~20 s (reported), not a hang: 2,000
        return "||".join(["{select[fast]}"] * min(n, 2_000))
    return "{" * n + "-" + "}" * n


VALID_SELECTS = (
    "mem>1000", "type==X86_64", "type=='ARM'", "fast", "!fast", "defined(gpu)", "cpuf>=1.5",
    "slots>=2", "maxmem>100000", "swp>100 && mem<500000", "(fast || gpu) && mem>=0",
    "model==\"XeonGold\"", "mem*2>1000", "-mem<0", "type!=ARM", "hname!='node01'",
)  # fmt: skip
VALID_SECTIONS = (
    "rusage[mem=1000]", "rusage[mem=0.5:swp=100]", "rusage[lic_x=1]", "rusage[mem=100, lic_x=1]",
    "rusage[mem=2000:duration=10]", "order[-slots]", "order[mem:cpuf]", "order[maxslots]",
    "span[hosts=1]", "span[ptile=2]", "span[hosts=-1]", "same[type]", "same[type:model]",
    "cu[type=rack]",
)  # fmt: skip
QUOTED_NASTY = ("'[/]'", "'[bold red]x[/]'", "'\x1b[31mred'", "'\u202e'", "'名前'", "'%s'")


def _valid_simple(rnd: random.Random) -> str:
    parts = []
    terms = rnd.sample(VALID_SELECTS, rnd.randint(0, 3))
    if rnd.random() < 0.15:  # a name-like string the cluster lacks, printed back
        terms.append(f"type!={rnd.choice(QUOTED_NASTY)}")
    if terms:
        parts.append(f"select[{' && '.join(terms)}]")
    parts += rnd.sample(VALID_SECTIONS, rnd.randint(0, 2))
    return " ".join(parts)


def valid_requirement(rnd: random.Random) -> str:
    """Mostly valid on examples/cluster.yaml (sections of its own names), so the parts
    after parsing run: checks, explanation, scheduling."""
    r = rnd.random()
    if r < 0.6:
        return _valid_simple(rnd)
    if r < 0.85:
        terms = [
            f"{rnd.randint(1, 4)}*{{{_valid_simple(rnd) or '-'}}}" for _ in range(rnd.randint(1, 3))
        ]
        return " + ".join(terms)
    return " || ".join(f"{{{_valid_simple(rnd)}}}" for _ in range(rnd.randint(2, 3)))


def requirement(rnd: random.Random) -> tuple[str, list[str]]:
    """A requirement and how it was made."""
    r = rnd.random()
    if r < 0.4:
        text, how = valid_requirement(rnd), ["valid"]
        if rnd.random() < 0.7:
            return text, how  # else garbled below
    elif r < 0.65:
        text, how = _simple(rnd), ["simple"]
    elif r < 0.77:
        text, how = _compound(rnd), ["compound"]
    elif r < 0.86:
        alts = [
            f"{{{_simple(rnd) if rnd.random() < 0.6 else _compound(rnd)}}}"
            for _ in range(rnd.randint(2, 3))
        ]
        text, how = " || ".join(alts), ["alternatives"]
    elif r < 0.96:
        text, how = _deep(rnd), ["deep"]
    else:
        text, how = "", ["empty"]
    for _ in range(rnd.choice((0, 0, 1, 1, 2, 4))):
        op = rnd.choice(("insert", "delete", "replace", "nasty", "duplicate", "splice"))
        i = rnd.randint(0, len(text))
        if op == "insert":
            text = text[:i] + rnd.choice(CHARS) + text[i:]
        elif op == "delete":
            text = text[:i] + text[i + rnd.randint(1, 3) :]
        elif op == "replace":
            text = text[:i] + rnd.choice(CHARS) + text[i + 1 :]
        elif op == "nasty":
            text = text[:i] + rnd.choice(NASTY) + text[i:]
        elif op == "duplicate":
            text = text[:i] + text[i : i + rnd.randint(1, 20)] * 2 + text[i + 20 :]
        else:
            text = text[:i] + " " + _section(rnd) + " " + text[i:]
        how.append(op)
    return text, how


# -- the three doors ------------------------------------------------------------------------

TASKS = (None, None, None, "1", "4", "2,8", "3", "0", "2,1", "99999999999999999999", "1e3", "")


def located_requirement(err: str) -> bool:
    """``xce: error: requirement...`` (or ``--tasks``), and any caret points into its line."""
    named = re.search(r"^xce: error: (requirement|--tasks)\b", err, re.M)
    return bool(named) and caret_ok(err)


def _argv(door: str, rnd: random.Random) -> list[str]:
    """The argv of a command-line door, ``{text}`` for the requirement."""
    argv = ["resreq"]
    if door == "cluster":
        argv += ["--cluster", "{root}/examples/cluster.yaml"]
    if rnd.random() < 0.5:
        argv.append("--json")
    tasks = rnd.choice(TASKS)
    if tasks:
        argv += ["--tasks", tasks]
    return [*argv, "--", "{text}"]


def _state_doc(text: str, rnd: random.Random) -> dict[str, Any]:
    job: dict[str, Any] = {"id": "j1", "resreq": text, "user": "alice"}
    tasks = rnd.choice((None, 1, 2, 4, 7))
    if tasks is not None:
        job["tasks"] = tasks
    return {
        "resources": {"swp": {"kind": "consumable", "reservation": "per_host"}},
        "hosts": [
            {
                "name": f"h{i}",
                "slots": 4,
                "resources": {"mem": 1000 * (i + 1), "swp": 100},
                "attributes": {"type": ("X86_64", "ARM")[i % 2], "model": "m", "cpuf": 1.5},
            }
            for i in range(3)
        ]
        + [{"name": "g", "slots": 2, "attributes": {"fast": True, "gpu": True}}],
        "shared": {"lic_x": {"total": 4}},
        "jobs": [job, {"id": "j2", "tasks": 2, "resreq": "rusage[mem=100]"}],
    }


def _state_text(doc: dict[str, Any], fmt: str) -> bytes:
    if fmt == "json":
        return json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False).encode("utf-8", "surrogatepass")


def _no_nul(text: str) -> str:
    """An argv string cannot hold NUL (the OS cuts it there)."""
    return text.replace("\x00", "")


def run_text(argv_template: list[str], text: str, tmp: Path, *, sample: bool = False) -> Outcome:
    """A command-line door: ``{text}`` replaced by the requirement."""
    argv = [a.replace("{root}", str(ROOT)).replace("{text}", _no_nul(text)) for a in argv_template]
    return run_cli(argv, [CLUSTER], located_requirement, subprocess_too=sample)


def run_state(argv_template: list[str], path: Path, *, sample: bool = False) -> Outcome:
    """The state-file door: ``{input}`` replaced by the state file."""
    argv = [a.replace("{input}", str(path)) for a in argv_template]
    check = None
    if "--json" in argv:

        def check(out: str) -> bool:
            try:
                return "dispatched" in json.loads(out)
            except ValueError:
                return False

    return run_cli(
        argv, [path, CLUSTER], located_in_file(path), check_stdout=check, subprocess_too=sample
    )


def fuzz(cases: range, tmp: Path) -> list[str]:
    """Run the cases; keep (minimised) a few per kind of failure; a line per failure."""
    failures: list[str] = []
    kept: dict[str, int] = {}
    with MemoryLimit():
        for case in cases:
            rnd = random.Random(f"{fuzz_seed()}/{case}")
            text, how = requirement(rnd)
            door = rnd.choice(("alone", "alone", "cluster", "cluster", "state", "state"))
            if len(text.encode("utf-8", "surrogatepass")) > ARG_MAX:
                door = "state"  # the OS refuses a longer argument
            if door == "state":
                fmt = rnd.choice(("json", "yaml"))
                path = tmp / f"case.{fmt}"
                mode = rnd.choice((["--json"], ["--json"], [], ["--json", "--lenient"]))
                argv = ["schedule", "{input}", *mode]
                doc = _state_doc(text, rnd)
                data = _state_text(doc, fmt)
                path.write_bytes(data)
                outcome = run_state(argv, path, sample=subprocess_sample(case))
            else:
                argv = _argv(door, rnd)
                data = text.encode("utf-8", "surrogatepass")
                outcome = run_text(argv, text, tmp, sample=subprocess_sample(case))
            if outcome.problem is None:
                continue
            kind = f"{door}:{signature(outcome)}"
            suffix = f".{fmt}" if door == "state" else ".resreq"
            name = f"resreq-{door}-s{fuzz_seed()}-case{case}{suffix}"
            if kept.get(kind, 0) < KEEP_PER_KIND:
                kept[kind] = kept.get(kind, 0) + 1
                small, shown = data, None
                if kept[kind] == 1 and ":hang" not in kind:
                    small, shown = _minimise(door, argv, data, tmp, suffix, kind)
                record(
                    name,
                    small,
                    "resreq",
                    argv,
                    shown or outcome,
                    [f"case: {case}", f"made: {', '.join(how)}", f"requirement: {text[:300]!r}"]
                    + (
                        [f"minimised from {len(data)} to {len(small)} bytes"]
                        if small != data
                        else []
                    ),
                )
            failures.append(f"case {case} ({name}): {outcome.problem}")
    return failures


def _run_bytes(door: str, argv: list[str], data: bytes, tmp: Path, suffix: str) -> Outcome:
    if door == "state":
        path = tmp / f"case{suffix}"
        path.write_bytes(data)
        return run_state(argv, path)
    return run_text(argv, data.decode("utf-8", "surrogatepass"), tmp)


def _minimise(
    door: str, argv: list[str], data: bytes, tmp: Path, suffix: str, kind: str
) -> tuple[bytes, Outcome | None]:
    found: list[Outcome] = []

    def fails_same(candidate: bytes) -> bool:
        try:
            outcome = _run_bytes(door, argv, candidate, tmp, suffix)
        except UnicodeDecodeError:
            return False
        if outcome.problem is not None and f"{door}:{signature(outcome)}" == kind:
            found.append(outcome)
            return True
        return False

    small = minimise(data, fails_same)
    return small, (found[-1] if found and small != data else None)


# -- the tests ------------------------------------------------------------------------------


def test_fuzz_resreq_smoke(tmp_path: Path) -> None:
    """issue 10 (requirement fuzzer, smoke): 60 seeded requirements through ``xce resreq``
    (alone and ``--cluster``) and a state file: exit 0 or 2 located, never 1, no hang."""
    assert_passes(fuzz, range(SMOKE_CASES), tmp_path)


@pytest.mark.slow
def test_fuzz_resreq_3k(tmp_path: Path) -> None:
    """issue 10 (requirement fuzzer): as the smoke test, over 3,000 seeded requirements."""
    assert_passes(fuzz, case_range(0, SLOW_CASES), tmp_path)


@pytest.mark.parametrize("case", recorded_params("resreq"))
def test_recorded_failure(case: Recorded, tmp_path: Path) -> None:
    """issue 10 (requirement fuzzer): a kept failing case now exits 0 or 2 located."""
    copy_ = case.copy_to(tmp_path)
    with MemoryLimit():
        if "{text}" in case.argv:
            outcome = run_text(case.argv, copy_.read_text("utf-8", "surrogatepass"), tmp_path)
        else:
            outcome = run_state(case.argv, copy_)
    assert outcome.problem is None, (outcome.problem, outcome.stderr[-2000:])


# -- the harness's checks are real ------------------------------------------------------------


def test_harness_locators(tmp_path: Path) -> None:
    """issue 10: what counts as located, on messages written by hand."""
    f = tmp_path / "s.yaml"
    f.write_text("hosts:\n  - {name: h, slots: 1}\n", encoding="utf-8")
    located = located_in_file(f)
    assert located(f"xce: error: {f}:2:5: hosts[0].slots: bad\n")
    assert located(f"xce: error: {f}: hosts[0].slots: bad\n")
    assert located(f"xce: error: {f}: line 2: job 'x' needs a runtime\n")
    assert not located(f"xce: error: {f}: bad\n")  # the file, but nowhere in it
    assert located_in_file(f, allow_bare=True)(f"xce: error: {f}: bad\n")
    assert not located(f"xce: error: {f}:99: bad\n")  # beyond the file's 3 lines
    assert not located(f"xce: error: {f}: cannot: bad\n")  # not a key of the file
    assert not located("xce: error: <4 hosts x 1 slots>: hosts[0].slots: bad\n")
    assert not located(f"warning: {f}:2: bad\nxce: error: bad\n")  # not the error line
    assert located_requirement("xce: error: requirement: bad\n  select[x]\n         ^\n")
    assert not located_requirement("xce: error: requirement: bad\n  \ne\n   ^\n")
    assert located_requirement("xce: error: --tasks: expected N\n")
    assert not located_requirement("xce: error: bad\n")


def test_harness_failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """issue 10: the harness reports a hang, a traceback, a changed input and a raw control
    character (the resreq command made to misbehave)."""
    import time as time_

    import numpy as np

    from xce.cli import resreq_cmd

    spare = tmp_path / "spare.txt"
    spare.write_text("x", encoding="utf-8")
    argv = ["resreq", "--json", "--", "select[fast]"]

    def run(effect: Any) -> str | None:
        monkeypatch.setattr(resreq_cmd, "describe", effect)
        return run_cli(argv, [spare], located_requirement, timeout=1.0).problem

    assert (run(lambda *a, **k: time_.sleep(5)) or "").startswith("hang")
    assert "traceback" in (run(lambda *a, **k: 1 / 0) or "")
    assert "changed" in (run(lambda *a, **k: spare.write_text("y") and {}) or "")
    assert "control character" in (run(lambda *a, **k: print("\x1b[2J") or {}) or "")
    overflow = lambda *a, **k: {"x": float(np.float64(1e308) * 10)}  # noqa: E731
    assert "RuntimeWarning" in (run(overflow) or "")
    monkeypatch.undo()
    assert run_cli(argv, [spare], located_requirement).problem is None
