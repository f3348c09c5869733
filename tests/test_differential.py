"""Differential test: the engine against the simple reference (tests/reference_alloc.py).

A seeded generator draws small state documents that reach per-job, per-host and
fractional amounts, order[] (also on per-job resources), same[], span[], volatile
selects, closed/unavail hosts, limits (per host and aggregate, on slots, jobs and
amounts), shared licences, running work, COMPOUND and ALTER requirements. Each document
is scheduled by ``xce.core.Session`` and by the reference, and the decisions are
compared job by job in session order, up to the first difference (later decisions see
different books, so they say nothing more): dispatched or not, each placement (hosts,
slots in claim order, term, amounts, alternative, shared) and each pend reason.

A failure prints, per kind of mismatch, the seed and a minimised state document (YAML)
that reproduces it. Reproduce one seed with ``python tests/test_differential.py SEED``.

    .venv/bin/python -m pytest tests/test_differential.py -m "not slow"   # 500 states
    .venv/bin/python -m pytest tests/test_differential.py -m slow         # 10,000 states
"""

from __future__ import annotations

import copy
import itertools
import random
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import pytest
import yaml

import reference_alloc
from reference_alloc import RefDecision, RefDispatched, RefPending, reference_decisions
from xce.alloc import Decision, Dispatched, Pending
from xce.cluster import state_from_dict
from xce.core import Session

Doc = dict[str, Any]

# -- the generator ---------------------------------------------------------------------

USERS = ("alice", "bob", "carol")
QUEUES = ("normal", "high", "low")  # low is not declared: priority 0
PROJECTS = ("p1", "p2")
SELECTS = (
    "select[type==A]",
    "select[fast]",
    "select[!fast]",
    "select[mem>=2000]",
    "select[mem<500]",
    "select[maxmem>3000]",
    "select[slots<3]",
    "select[cpuf>1.5]",
    "select[type!=C && slots>=2]",
    "select[mem*2>3000]",
    "select[!(mem<1000)]",
    "select[defined(cpuf)]",
    "select[mem==4000]",
    "select[swp>50]",
    "select[scratch>=20]",
    "select[1000<mem]",
    "select[maxslots>=4]",
    "type==B || fast",
)
MEM = (333.3, 0.1, 500, 1000, 0.25, 0, 250, 1500)
SWP = (100, 0.25, 0)
SCRATCH = (10, 33.3, 0.1, 0)
LIC = (1, 0.5, 2)
SPANS = ("span[hosts=1]", "span[ptile=2]", "span[ptile=3]", "span[hosts=-1]")
SAMES = ("", "same[type]", "same[type:model]")
ORDERS = (
    "order[-slots]",
    "order[mem]",
    "order[cpuf:-slots]",
    "order[scratch]",
    "order[-scratch]",
    "order[-mem]",
    "order[fast:mem]",
)


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x


def _q(x: float | int | Fraction) -> Fraction:
    return Fraction(str(x))


def _rusage(rng: random.Random, lic: bool) -> str:
    items = []
    if rng.random() < 0.5:
        items.append(f"mem={_num(rng.choice(MEM))}")
    if rng.random() < 0.2:
        items.append(f"swp={_num(rng.choice(SWP))}")
    if rng.random() < 0.25:
        items.append(f"scratch={_num(rng.choice(SCRATCH))}")
    if lic and rng.random() < 0.3:
        items.append(f"lic={_num(rng.choice(LIC))}")
    if not items:
        return ""
    sep = "," if len(items) > 1 and rng.random() < 0.2 else ":"
    return f"rusage[{sep.join(items)}]"


def _primary(rng: random.Random, lic: bool, dense: float) -> str:
    """select, rusage, span, same, order; each section drawn with a probability that
    grows with the state's ``dense`` (busy requirements pend more, simple ones place)."""
    parts = [
        rng.choice(SELECTS) if rng.random() < dense else "",
        _rusage(rng, lic),
        rng.choice(SPANS) if rng.random() < dense else "",
        rng.choice(SAMES) if rng.random() < dense else "",
        rng.choice(ORDERS) if rng.random() < dense else "",
    ]
    return " ".join(p for p in parts if p)


def _tasks(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.3:
        return 1
    if r < 0.75:
        return rng.randint(2, 4)
    if r < 0.95:
        return rng.randint(5, 8)
    return rng.randint(9, 12)


def _compound(rng: random.Random, lic: bool, dense: float) -> tuple[str, int]:
    m1, m2 = rng.randint(1, 4), rng.randint(1, 3)
    first = _primary(rng, lic, dense) or "-"
    second = "-" if rng.random() < 0.2 else (_primary(rng, lic, dense) or "-")
    return f"{m1}*{{{first}}} + {m2}*{{{second}}}", m1 + m2


def _job_text(rng: random.Random, lic: bool, dense: float) -> tuple[str, int | None]:
    kind = rng.choices(("simple", "compound", "alter", "alter2"), (60, 15, 15, 10))[0]
    if kind == "simple":
        return _primary(rng, lic, dense), _tasks(rng)
    if kind == "compound":
        return _compound(rng, lic, dense)[0], None
    if kind == "alter":
        return f"{{{_primary(rng, lic, dense)}}} || {{{_primary(rng, lic, dense)}}}", _tasks(rng)
    text, _ = _compound(rng, lic, dense)
    return f"{{{text}}} || {{{_primary(rng, lic, dense)}}}", None


def draw_state(seed: int) -> Doc:
    """A random small state document (deterministic in ``seed``)."""
    rng = random.Random(seed)
    dense = rng.choice((0.3, 0.6, 0.9))
    big = rng.random() < 0.15  # a larger cluster and queue now and then
    ntypes = rng.randint(2, 3)
    hosts: list[Doc] = []
    for i in range(rng.randint(8, 12) if big else rng.choice((1, 2, 3, 4, 4, 5, 6, 7, 8))):
        res = {
            "mem": rng.choice((None, 1000, 2000, 4000, 4000, 8000, 1000.5, 999.9)),
            "swp": rng.choice((None, 200, 200, 0.5)),
            "scratch": rng.choice((None, 100, 100, 50, 33.3)),
        }
        attrs: Doc = {"type": rng.choice("ABC"[:ntypes]), "fast": rng.random() < 0.5}
        cpuf = rng.choice((None, 1, 1.5, 2.5))
        if cpuf is not None:
            attrs["cpuf"] = cpuf
        model = rng.choice((None, "m1", "m2"))
        if model is not None:
            attrs["model"] = model
        host: Doc = {"name": f"h{i}", "slots": rng.choice((1, 2, 3, 4, 4, 6, 8, 8, 12))}
        resources = {k: v for k, v in res.items() if v is not None}
        if resources:
            host["resources"] = resources
        host["attributes"] = attrs
        status = rng.choices(("ok", "closed", "unavail"), (8, 1, 1))[0]
        if status != "ok":
            host["status"] = status
        hosts.append(host)
    doc: Doc = {
        "resources": {
            "mem": {"kind": "consumable"},
            "swp": {"kind": "consumable", "reservation": "per_host"},
            "scratch": {"kind": "consumable", "reservation": "per_job"},
            "type": {"kind": "string"},
            "model": {"kind": "string"},
            "fast": {"kind": "boolean"},
            "cpuf": {"kind": "numeric"},
        },
        "hosts": hosts,
        "queues": {"normal": {"priority": 30}, "high": {"priority": 50}},
    }
    lic_total = rng.choice((None, None, 0, 1, 2, 2.5, 4))
    if lic_total is not None:
        doc["shared"] = {"lic": {"total": lic_total}}
    # running work that fits, exactly
    free: dict[str, dict[str, Fraction]] = {
        h["name"]: {
            "slots": _q(h["slots"]),
            **{k: _q(v) for k, v in h.get("resources", {}).items()},
        }
        for h in hosts
    }
    lic_left = _q(lic_total or 0)
    running = []
    for r in range(rng.randint(0, 8) if big else rng.randint(0, 5)):
        names = dict.fromkeys(rng.choice(hosts)["name"] for _ in range(rng.randint(1, 2)))
        per_task = rng.choice((0, 0, 333.3, 500))
        swp = rng.choice((0, 0, 0.25, 100))
        scratch = rng.choice((0, 0, 10))
        alloc = []
        for name in names:
            f = free[name]
            if f["slots"] < 1:
                continue
            n = rng.randint(1, int(f["slots"]))
            held: dict[str, float | int] = {}
            for key, amount in (
                ("mem", _q(per_task) * n),
                ("swp", _q(swp)),
                ("scratch", _q(scratch)),
            ):
                if amount and key in f and f[key] >= amount:
                    held[key] = _num(float(amount))
            for key, amount in held.items():
                f[key] -= _q(amount)
            f["slots"] -= n
            entry: Doc = {"host": name, "slots": n}
            if held:
                entry["resources"] = held
            alloc.append(entry)
        if not alloc:
            continue
        run: Doc = {
            "id": f"r{r}",
            "user": rng.choice(USERS),
            "queue": rng.choice(QUEUES[:2]),
            "project": rng.choice(PROJECTS),
            "alloc": alloc,
        }
        lic = rng.choice((0, 0, 0.5, 1))
        if lic and lic_left >= _q(lic):
            run["shared"] = {"lic": lic}
            lic_left -= _q(lic)
        running.append(run)
    if running:
        doc["running"] = running
    limits = []
    for i in range(rng.choices((0, 1, 2), (5, 3, 2))[0]):
        per_host = rng.random() < 0.5
        whats = ["slots", "jobs", "mem", "scratch", "swp"] + (
            [] if per_host or lic_total is None else ["lic"]
        )
        what = rng.choice(whats)
        lim: Doc = {"name": f"L{i}"}
        for key, names in (("users", USERS), ("queues", QUEUES), ("projects", PROJECTS)):
            if rng.random() < 0.4:
                lim[key] = rng.sample(names, rng.randint(1, 2))
        if per_host:
            lim["per_host"] = True
        if what == "slots":
            lim["slots"] = rng.randint(1, 6)
        elif what == "jobs":
            lim["jobs"] = rng.randint(1, 3)
        else:
            amounts = {
                "mem": (500, 1000, 999.9, 3000),
                "scratch": (10, 50),
                "swp": (100, 150, 200.25),
                "lic": (1, 1.5),
            }
            lim["resources"] = {what: rng.choice(amounts[what])}
        limits.append(lim)
    if limits:
        doc["limits"] = limits
    jobs = []
    for j in range(rng.randint(8, 16) if big else rng.randint(1, 10)):
        text, tasks = _job_text(rng, lic_total is not None, dense)
        job: Doc = {
            "id": f"j{j}",
            "user": rng.choice(USERS),
            "queue": rng.choice(QUEUES),
            "project": rng.choice(PROJECTS),
            "resreq": text,
        }
        if tasks is not None:
            job["tasks"] = tasks
        submit = rng.choice((0, 0, 1, 2))
        if submit:
            job["submit_time"] = submit
        jobs.append(job)
    doc["jobs"] = jobs
    return doc


# -- comparing -------------------------------------------------------------------------


@dataclass(frozen=True)
class Mismatch:
    kind: tuple[str, ...]  # what differs (the grouping key)
    job: str
    detail: str


def _engine(doc: Doc) -> tuple[Decision, ...]:
    return Session(state_from_dict(copy.deepcopy(doc), "<differential>")).run().decisions


def _claims_engine(d: Dispatched) -> list[tuple[int, int, int, dict[str, float]]]:
    return [(c.host, c.slots, c.term, dict(c.amounts)) for c in d.allocation.claims]


def _claims_ref(d: RefDispatched) -> list[tuple[int, int, int, dict[str, float]]]:
    return [(c.host, c.slots, c.term, {k: float(v) for k, v in c.amounts}) for c in d.claims]


def _shared_engine(d: Dispatched) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, a in d.allocation.shared:
        out[name] = out.get(name, 0.0) + a
    return out


def compare(doc: Doc) -> Mismatch | None:
    """The first difference between the engine and the reference, or None."""
    try:
        state_from_dict(copy.deepcopy(doc), "<differential>")
    except Exception as exc:  # the generator made a document the loader refuses
        return Mismatch(("load-error", type(exc).__name__), "", str(exc)[:300])
    try:
        ours = reference_decisions(doc)
    except Exception as exc:
        return Mismatch(("reference-error", type(exc).__name__), "", repr(exc)[:300])
    try:
        theirs = _engine(doc)
    except Exception as exc:
        return Mismatch(("engine-error", type(exc).__name__), "", repr(exc)[:300])
    if [d.job for d in theirs] != [d.job for d in ours]:
        return Mismatch(
            ("job-order",), "", f"engine {[d.job for d in theirs]} vs ref {[d.job for d in ours]}"
        )
    for e, r in zip(theirs, ours, strict=True):
        m = _compare_one(e, r)
        if m is not None:
            return _explained(doc, theirs, m)
    return None


KNOWN: dict[str, tuple[str, object]] = {
    "volatile-under-not": ("NOT_IS_VOLATILE", True),
    "compound-shared-per-term": ("SHARED_UPFRONT", False),
    "same-rank-ignores-limits": ("SAME_RANK_IGNORES_LIMITS", True),
    "unwanted-limit-key-in-headroom": ("UNWANTED_LIMIT_KEYS_COUNT", True),
}
"""Known differences, each a reference_alloc switch that models what the engine did
when this test was written (see the switches' docstrings). A mismatch that some set of
them (fewest first) accounts for is reported under their names, so that other causes
stand out; the test fails on known differences all the same."""


def _explained(doc: Doc, theirs: tuple[Decision, ...], m: Mismatch) -> Mismatch:
    names = list(KNOWN)
    subsets = [c for k in range(1, len(names) + 1) for c in itertools.combinations(names, k)]
    for subset in subsets:
        saved = {KNOWN[n][0]: getattr(reference_alloc, KNOWN[n][0]) for n in subset}
        for n in subset:
            setattr(reference_alloc, *KNOWN[n])
        try:
            ours = reference_decisions(doc)
        finally:
            for k, v in saved.items():
                setattr(reference_alloc, k, v)
        if len(ours) == len(theirs) and all(
            _compare_one(e, r) is None for e, r in zip(theirs, ours, strict=True)
        ):
            return Mismatch(("+".join(subset), *m.kind[:2]), m.job, m.detail)
    return m


def _gist(message: str) -> str:
    """The kind of an engine message: numbers and names blanked, alternatives dropped."""
    text = re.sub(r" \(alternative \d+: .*\)$", "", message)
    text = re.sub(r"^alternative \d+: ", "", text)
    text = text.replace("can never run on this cluster as configured: ", "")
    text = re.sub(r"'[^']*'", "'_'", text)
    text = re.sub(r"\d+(\.\d+)?", "N", text)
    return text.split(":")[0]


def _compare_one(e: Decision, r: RefDecision) -> Mismatch | None:
    if isinstance(e, Pending) and isinstance(r, RefPending):
        if e.info.reason.value in r.acceptable:
            return None
        return Mismatch(
            ("reason", f"engine={e.info.reason.value}", f"ref={r.reason}", _gist(e.info.message)),
            e.job,
            f"engine {e.info.reason.value} ({e.info.message}); reference {sorted(r.acceptable)}",
        )
    if isinstance(e, Pending) and isinstance(r, RefDispatched):
        return Mismatch(
            ("engine-pends", e.info.reason.value),
            e.job,
            f"engine pends {e.info.reason.value} ({e.info.message}); reference dispatches "
            f"{_claims_ref(r)} alt={r.alternative}",
        )
    if isinstance(e, Dispatched) and isinstance(r, RefPending):
        return Mismatch(
            ("engine-dispatches", r.reason),
            e.job,
            f"engine dispatches {_claims_engine(e)} alt={e.allocation.alternative}; "
            f"reference pends {sorted(r.acceptable)}",
        )
    assert isinstance(e, Dispatched)
    assert isinstance(r, RefDispatched)
    ec, rc = _claims_engine(e), _claims_ref(r)
    what = []
    if e.allocation.alternative != r.alternative:
        what.append("alternative")
    if [c[:3] for c in ec] != [c[:3] for c in rc]:
        what.append("placement")
    elif [c[3] for c in ec] != [c[3] for c in rc]:
        what.append("amounts")
    rs = {k: float(v) for k, v in r.shared}
    if _shared_engine(e) != rs:
        what.append("shared")
    if not what:
        return None
    return Mismatch(
        tuple(what),
        e.job,
        f"engine {ec} alt={e.allocation.alternative} shared={_shared_engine(e)}; "
        f"reference {rc} alt={r.alternative} shared={rs}",
    )


# -- minimising ------------------------------------------------------------------------


def _without(items: list[Any], i: int) -> list[Any]:
    return items[:i] + items[i + 1 :]


def _simpler_resreqs(text: str) -> Iterator[str]:
    """The requirement with one section, one rusage item or one alternative less."""
    for m in re.finditer(r"(select|order|rusage|span|same)\[[^\]]*\]", text):
        yield (text[: m.start()] + text[m.end() :]).replace("  ", " ").strip()
        body = m.group(0)
        if m.group(1) == "rusage":
            items = re.split(r"[:,]", body[len("rusage[") : -1])
            for k in range(len(items)):
                rest = ":".join(_without(items, k))
                yield text[: m.start()] + (f"rusage[{rest}]" if rest else "") + text[m.end() :]
    if "||" in text:
        for part in re.findall(r"\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}", text):
            yield part.strip()


def _candidates(doc: Doc) -> Iterator[Doc]:
    """Smaller documents: big chunks less first, then one thing less or simpler."""
    jobs, hosts = doc.get("jobs", []), doc["hosts"]
    for k in (4, 2):
        if len(jobs) >= k:
            step = len(jobs) // k
            for i in range(0, len(jobs), step):
                yield {**doc, "jobs": jobs[:i] + jobs[i + step :]}
    for key in ("running", "limits", "shared"):
        if key in doc:
            yield {k: v for k, v in doc.items() if k != key}
    if len(hosts) >= 4:
        half = len(hosts) // 2
        for keep in (hosts[:half], hosts[half:]):
            names = {h["name"] for h in keep}
            runs = [r for r in doc.get("running", ()) if {a["host"] for a in r["alloc"]} <= names]
            d = {**doc, "hosts": keep, "running": runs}
            if not runs:
                del d["running"]
            yield d
    for i in range(len(doc.get("jobs", ()))):
        if len(doc["jobs"]) > 1:
            yield {**doc, "jobs": _without(doc["jobs"], i)}
    for key in ("running", "limits"):
        for i in range(len(doc.get(key, ()))):
            d = {**doc, key: _without(doc[key], i)}
            if not d[key]:
                del d[key]
            yield d
    for i, h in enumerate(doc["hosts"]):
        if len(doc["hosts"]) == 1:
            break
        d = copy.deepcopy(doc)
        d["hosts"] = _without(d["hosts"], i)
        runs = []
        for r in d.get("running", ()):
            r["alloc"] = [a for a in r["alloc"] if a["host"] != h["name"]]
            if r["alloc"]:
                runs.append(r)
        d["running"] = runs
        if not runs:
            del d["running"]
        yield d
    for key in ("shared", "queues"):
        if key in doc:
            yield {k: v for k, v in doc.items() if k != key}
    for i, r in enumerate(doc.get("running", ())):
        for key in ("user", "queue", "project", "shared"):
            if key in r:
                d = copy.deepcopy(doc)
                del d["running"][i][key]
                yield d
        for k, a in enumerate(r["alloc"]):
            if "resources" in a:
                d = copy.deepcopy(doc)
                del d["running"][i]["alloc"][k]["resources"]
                yield d
    for i, j in enumerate(doc["jobs"]):
        for text in _simpler_resreqs(j.get("resreq", "")):
            d = copy.deepcopy(doc)
            d["jobs"][i]["resreq"] = text
            yield d
        for key in ("tasks", "submit_time", "user", "queue", "project"):
            if key in j and not (key == "tasks" and j[key] <= 1):
                d = copy.deepcopy(doc)
                if key == "tasks":
                    d["jobs"][i]["tasks"] = j["tasks"] - 1
                else:
                    del d["jobs"][i][key]
                yield d
    for i, h in enumerate(doc["hosts"]):
        for section in ("resources", "attributes"):
            for key in h.get(section, {}):
                d = copy.deepcopy(doc)
                del d["hosts"][i][section][key]
                yield d
        if "status" in h:
            d = copy.deepcopy(doc)
            del d["hosts"][i]["status"]
            yield d
        if h["slots"] > 1:
            d = copy.deepcopy(doc)
            d["hosts"][i]["slots"] -= 1
            yield d
    for i, lim in enumerate(doc.get("limits", ())):
        for key in ("users", "queues", "projects"):
            if key in lim:
                d = copy.deepcopy(doc)
                del d["limits"][i][key]
                yield d
    if "resources" in doc:
        used = yaml.safe_dump({k: v for k, v in doc.items() if k != "resources"})
        for name in doc["resources"]:
            if not re.search(rf"\b{name}\b", used):
                d = copy.deepcopy(doc)
                del d["resources"][name]
                yield d


def minimise(doc: Doc, same: Callable[[Mismatch | None], bool], budget_s: float) -> Doc:
    """Greedy delta debugging: keep any smaller document showing the same mismatch."""
    deadline = time.monotonic() + budget_s
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for cand in _candidates(doc):
            if time.monotonic() > deadline:
                break
            if same(compare(cand)):
                doc = cand
                improved = True
                break
    return doc


def _tidy(doc: Doc) -> Doc:
    """Without empty host sections and resource declarations nothing uses."""
    doc = {k: copy.deepcopy(v) for k, v in doc.items() if v or k == "hosts"}
    for h in doc.get("hosts", ()):
        for key in ("resources", "attributes"):
            if key in h and not h[key]:
                del h[key]
    return doc


def dump(doc: Doc) -> str:
    return yaml.safe_dump(_tidy(doc), sort_keys=False, default_flow_style=None, width=100)


def report(failures: dict[tuple[str, ...], list[tuple[int, Mismatch]]], budget_s: float) -> str:
    lines = [f"{sum(len(v) for v in failures.values())} state(s) differ, {len(failures)} kind(s):"]
    for kind, cases in sorted(failures.items(), key=lambda kv: -len(kv[1])):
        seeds = [s for s, _ in cases]
        lines.append(f"  {kind}: {len(cases)} (seeds {seeds[:8]})")
    per_kind = budget_s / max(1, len(failures))
    for kind, cases in sorted(failures.items(), key=lambda kv: -len(kv[1])):
        seed, m = cases[0]
        small = minimise(
            draw_state(seed), lambda got, k=kind: got is not None and got.kind == k, per_kind
        )
        got = compare(small)
        lines.append(f"\n=== {kind} — seed {seed}, job {m.job}: {m.detail}")
        if got is not None:
            lines.append(f"minimised: job {got.job}: {got.detail}")
        lines.append(dump(small))
    return "\n".join(lines)


def run_seeds(seeds: range, shrink_budget_s: float) -> None:
    failures: dict[tuple[str, ...], list[tuple[int, Mismatch]]] = {}
    for seed in seeds:
        m = compare(draw_state(seed))
        if m is not None:
            failures.setdefault(m.kind, []).append((seed, m))
    if failures:
        pytest.fail(report(failures, shrink_budget_s), pytrace=False)


# -- the tests -------------------------------------------------------------------------


def test_generator_reaches_the_rules() -> None:
    """The generated states exercise what the differential test is meant to cover."""
    text = "\n".join(dump(draw_state(seed)) for seed in range(200))
    for needle in (
        "scratch=",
        "swp=",
        "333.3",
        "=0.1",
        "0.25",
        "order[scratch]",
        "same[type:model]",
        "span[hosts=1]",
        "span[ptile=2]",
        "select[mem<500]",
        "status: closed",
        "status: unavail",
        "per_host: true",
        "jobs:",
        "lic=",
        "running:",
        "+ ",
        "} || {",
    ):
        assert needle in text, needle


def test_reference_exact_arithmetic() -> None:
    """4000 - 2000 - 3 x 333.3 - 0.1 == 1000 exactly in the reference's books."""
    doc: Doc = {
        "hosts": [{"name": "h0", "slots": 8, "resources": {"mem": 4000}}],
        "running": [{"id": "r", "alloc": [{"host": "h0", "slots": 1, "resources": {"mem": 2000}}]}],
        "jobs": [
            {"id": "a", "tasks": 3, "resreq": "rusage[mem=333.3] span[hosts=1]"},
            {"id": "b", "resreq": "rusage[mem=0.1]"},
            {"id": "c", "resreq": "rusage[mem=1000]"},
            {"id": "d", "resreq": "rusage[mem=0.000001]"},
        ],
    }
    decisions = reference_decisions(doc)
    assert [type(d).__name__ for d in decisions] == [
        "RefDispatched",
        "RefDispatched",
        "RefDispatched",
        "RefPending",
    ]


def test_engine_matches_reference() -> None:
    """500 random states: the engine decides exactly as the reference does."""
    run_seeds(range(500), shrink_budget_s=10.0)


@pytest.mark.slow
def test_engine_matches_reference_many() -> None:
    """10,000 random states (seeds 100,000 on, disjoint from the normal suite's)."""
    run_seeds(range(100_000, 110_000), shrink_budget_s=120.0)


if __name__ == "__main__":  # python tests/test_differential.py SEED [--min]
    seed = int(sys.argv[1])
    doc = draw_state(seed)
    if "--min" in sys.argv[2:]:
        first = compare(doc)
        if first is not None:
            doc = minimise(doc, lambda got: got is not None and got.kind == first.kind, 60.0)
    print(dump(doc))
    print("mismatch:", compare(doc))
    for d in reference_decisions(doc):
        print("ref   ", d)
    for e in _engine(doc):
        print("engine", e)
