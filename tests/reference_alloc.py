"""A deliberately simple reference implementation of xce's allocation rules.

It reads a *state document* (the dict a state file holds, see docs/state-file.md) and
returns one decision per pending job, in session order. It shares no code with the
engine: its own requirement parser and select evaluator, plain loops over hosts,
``fractions.Fraction`` for every amount (``Fraction(str(x))``, so 4000 - 2000 -
3 * 333.3 - 0.1 == 1000 exactly), no numpy, no cache, no cursors, no shortcuts.

The rules are those of docs/allocation.md and design §3/§5 as pinned down for the
differential test (tests/test_differential.py). Where the pend-reason precedence is
ambiguous, :class:`RefPending` carries every acceptable reason (see ``_reasons``).
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

__all__ = [
    "RefClaim",
    "RefDecision",
    "RefDispatched",
    "RefPending",
    "parse_resreq",
    "reference_decisions",
]

ZERO = Fraction(0)
BIG = 10**9  # "no bound" in task capacities (an int, so sums stay exact)
SLOTS = "slots"
JOBS = "jobs"
Value = Fraction | str | None  # None: the host lacks the resource (NaN)


def exact(x: Any) -> Fraction:
    """An amount as an exact decimal (333.3 -> 3333/10, not the binary float)."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, bool):
        return Fraction(int(x))
    return Fraction(str(x))


# -- requirement language ---------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_.]*)"
    r"|(?P<str>'[^']*'|\"[^\"]*\")"
    r"|(?P<op>\|\||&&|==|!=|<=|>=|[<>=+\-*/!()\[\]{}:,]))"
)
_SECTIONS = ("select", "order", "rusage", "span", "same", "affinity", "cu")


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"cannot tokenise {text[pos:]!r}")
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


# Select expressions as tuples: ("num", Fraction) ("str", s) ("name", n) ("defined", n)
# ("un", op, e) ("bin", op, left, right).
Expr = tuple[Any, ...]


@dataclass(frozen=True)
class Primary:
    """One SIMPLE requirement with its task count bound."""

    select: Expr | None = None
    order: tuple[tuple[str, bool], ...] = ()  # (name, descending)
    rusage: tuple[tuple[str, Fraction], ...] = ()
    span: tuple[str, int] | None = None  # ("hosts", 1) | ("hosts", -1) | ("ptile", p)
    same: tuple[str, ...] = ()
    tasks: int = 1


@dataclass(frozen=True)
class Requirement:
    """Alternatives (one unless ALTER), each a list of terms (one unless COMPOUND)."""

    alternatives: tuple[tuple[Primary, ...], ...]
    is_alter: bool
    compound_totals: tuple[int | None, ...]  # per alternative: its compound total


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, k: int = 0) -> tuple[str, str] | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def at(self, value: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t[0] in ("op",) and t[1] == value

    def take(self, value: str | None = None) -> tuple[str, str]:
        t = self.peek()
        if t is None or (value is not None and t[1] != value):
            raise ValueError(f"expected {value!r} at token {self.i}: {t!r}")
        self.i += 1
        return t

    def done(self) -> bool:
        return self.i >= len(self.toks)

    # structure
    def resreq(self) -> tuple[list[list[tuple[int | None, Primary]]], bool]:
        if self.at("{"):
            alts = []
            while True:
                self.take("{")
                alts.append(self.body("}"))
                self.take("}")
                if self.done():
                    break
                self.take("||")
            return alts, True
        return [self.body(None)], False

    def is_term_open(self) -> bool:
        t = self.peek()
        return t is not None and t[0] == "num" and self.at("*", 1) and self.at("{", 2)

    def body(self, end: str | None) -> list[tuple[int | None, Primary]]:
        if self.is_term_open():
            terms: list[tuple[int | None, Primary]] = []
            while True:
                mult = int(self.take()[1])
                self.take("*")
                self.take("{")
                if self.at("-") and self.at("}", 1):
                    self.take("-")
                    terms.append((mult, Primary()))
                else:
                    terms.append((mult, self.simple("}")))
                self.take("}")
                if not self.at("+"):
                    return terms
                self.take("+")
        return [(None, self.simple(end))]

    def section_start(self) -> bool:
        t = self.peek()
        return t is not None and t[0] == "name" and t[1] in _SECTIONS and self.at("[", 1)

    def simple(self, end: str | None) -> Primary:
        fields: dict[str, Any] = {}

        def finished() -> bool:
            return self.done() or (end is not None and self.at(end))

        if not finished() and not self.section_start():
            fields["select"] = self.expr()
        while not finished():
            name = self.take()[1]
            self.take("[")
            if name == "select":
                fields["select"] = self.expr()
            elif name == "order":
                keys = []
                while True:
                    desc = True
                    if self.at("-"):
                        self.take("-")
                        desc = False
                    keys.append((self.take()[1], desc))
                    if not self.at(":"):
                        break
                    self.take(":")
                fields["order"] = tuple(keys)
            elif name == "rusage":
                items = []
                while True:
                    key = self.take()[1]
                    self.take("=")
                    items.append((key, self.signed()))
                    if not (self.at(":") or self.at(",")):
                        break
                    self.take()
                fields["rusage"] = tuple(items)
            elif name == "span":
                key = self.take()[1]
                self.take("=")
                fields["span"] = (key, int(self.signed()))
            elif name == "same":
                names = [self.take()[1]]
                while self.at(":"):
                    self.take(":")
                    names.append(self.take()[1])
                fields["same"] = tuple(names)
            else:  # affinity / cu: kept, unused
                while not self.at("]"):
                    self.take()
            self.take("]")
        return Primary(**fields)

    def signed(self) -> Fraction:
        neg = False
        if self.at("-"):
            self.take("-")
            neg = True
        v = exact(self.take()[1])
        return -v if neg else v

    # expressions, lowest precedence first (grammar.lark's levels)
    def expr(self) -> Expr:
        return self.binary(0)

    _LEVELS: tuple[tuple[str, ...], ...] = (
        ("||",),
        ("&&",),
        ("==", "!=", "="),
        ("<", "<=", ">", ">="),
        ("+", "-"),
        ("*", "/"),
    )

    def binary(self, level: int) -> Expr:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while True:
            t = self.peek()
            if t is None or t[0] != "op" or t[1] not in self._LEVELS[level]:
                return left
            op = "==" if t[1] == "=" else t[1]
            self.take()
            left = ("bin", op, left, self.binary(level + 1))

    def unary(self) -> Expr:
        if self.at("-") or self.at("!"):
            op = self.take()[1]
            return ("un", op, self.unary())
        t = self.take()
        if t[0] == "num":
            return ("num", exact(t[1]))
        if t[0] == "str":
            return ("str", t[1][1:-1])
        if t == ("op", "("):
            e = self.expr()
            self.take(")")
            return e
        if t[0] == "name" and t[1] == "defined" and self.at("("):
            self.take("(")
            name = self.take()[1]
            self.take(")")
            return ("defined", name)
        if t[0] == "name":
            return ("name", t[1])
        raise ValueError(f"unexpected {t!r}")


def parse_resreq(text: str, tasks: int | None) -> Requirement:
    """Parse ``text`` and bind task counts: a simple requirement takes the job's tasks
    (or, in an ALTER, the compound alternative's total when the job gives none)."""
    p = _Parser(text)
    alts, is_alter = p.resreq()
    if not p.done():
        raise ValueError(f"trailing input in {text!r}")
    totals: list[int | None] = []
    for terms in alts:
        totals.append(sum(m for m, _ in terms if m is not None) if terms[0][0] else None)
    given = tasks if tasks is not None else next((t for t in totals if t is not None), 1)
    bound: list[tuple[Primary, ...]] = []
    for terms in alts:
        bound.append(
            tuple(
                Primary(**{**prim.__dict__, "tasks": m if m is not None else given})
                for m, prim in terms
            )
        )
    return Requirement(tuple(bound), is_alter, tuple(totals))


# -- the cluster as a document says ---------------------------------------------------------


@dataclass(frozen=True)
class Host:
    index: int
    name: str
    slots: int
    caps: Mapping[str, Fraction]  # consumable capacities, slots included
    attrs: Mapping[str, Any]  # strings, booleans, Fractions
    status: str


@dataclass(frozen=True)
class Limit:
    name: str
    users: tuple[str, ...] | None
    queues: tuple[str, ...] | None
    projects: tuple[str, ...] | None
    per_host: bool
    caps: Mapping[str, Fraction]  # slots / jobs / resource names

    def applies(self, user: str, queue: str, project: str) -> bool:
        return all(
            allowed is None or who in allowed
            for allowed, who in ((self.users, user), (self.queues, queue), (self.projects, project))
        )


@dataclass(frozen=True)
class Job:
    id: str
    user: str
    queue: str
    project: str
    submit_time: Fraction
    order: int
    req: Requirement


@dataclass
class Cluster:
    hosts: list[Host]
    kinds: dict[str, str]  # consumable | shared | numeric | string | boolean
    reservation: dict[str, str]  # per consumable: per_task | per_host | per_job
    shared_total: dict[str, Fraction]
    limits: list[Limit]
    running: list[dict[str, Any]]
    jobs: list[Job]
    priority: dict[str, int]


def _cluster(doc: Mapping[str, Any]) -> Cluster:
    kinds: dict[str, str] = {SLOTS: "consumable"}
    reservation: dict[str, str] = {SLOTS: "per_task"}
    for name, d in (doc.get("resources") or {}).items():
        kinds[name] = d["kind"]
        if d["kind"] == "consumable":
            reservation[name] = d.get("reservation", "per_task")
    for name in doc.get("shared") or {}:
        kinds.setdefault(name, "shared")
    hosts = []
    for i, h in enumerate(doc.get("hosts") or ()):
        caps = {SLOTS: exact(h["slots"])}
        for name, v in (h.get("resources") or {}).items():
            kinds.setdefault(name, "consumable")
            reservation.setdefault(name, "per_task")
            caps[name] = exact(v)
        attrs: dict[str, Any] = {}
        for name, v in (h.get("attributes") or {}).items():
            if isinstance(v, bool):
                kinds.setdefault(name, "boolean")
                attrs[name] = v
            elif isinstance(v, str):
                kinds.setdefault(name, "string")
                attrs[name] = v
            else:
                kinds.setdefault(name, "numeric")
                attrs[name] = exact(v)
        hosts.append(Host(i, h["name"], int(h["slots"]), caps, attrs, h.get("status", "ok")))
    limits = []
    for lim in doc.get("limits") or ():
        caps = {k: exact(lim[k]) for k in (SLOTS, JOBS) if lim.get(k) is not None}
        caps.update({k: exact(v) for k, v in (lim.get("resources") or {}).items()})

        def names(key: str, lim: Mapping[str, Any] = lim) -> tuple[str, ...] | None:
            v = lim.get(key)
            return None if v is None else tuple(str(x) for x in v)

        limits.append(
            Limit(
                lim["name"],
                names("users"),
                names("queues"),
                names("projects"),
                bool(lim.get("per_host", False)),
                caps,
            )
        )
    priority = {q: int(d.get("priority", 0)) for q, d in (doc.get("queues") or {}).items()}
    jobs = []
    for order, j in enumerate(doc.get("jobs") or ()):
        tasks = j.get("max_tasks", j.get("tasks"))
        jobs.append(
            Job(
                str(j["id"]),
                str(j.get("user", "nobody")),
                str(j.get("queue", "normal")),
                str(j.get("project", "default")),
                exact(j.get("submit_time", 0)),
                order,
                parse_resreq(j.get("resreq", ""), tasks),
            )
        )
    shared_total = {k: exact(v["total"]) for k, v in (doc.get("shared") or {}).items()}
    return Cluster(
        hosts,
        kinds,
        reservation,
        shared_total,
        limits,
        list(doc.get("running") or ()),
        jobs,
        priority,
    )


# -- availability ----------------------------------------------------------------------------


@dataclass
class World:
    """What the allocator reads: availability per host, shared amounts, limit usage."""

    cluster: Cluster
    ok: list[bool]
    avail: list[dict[str, Fraction]]  # per host; a lacking resource has no key
    shared_avail: dict[str, Fraction]
    lim_total: list[dict[str, Fraction]]
    lim_host: list[list[dict[str, Fraction]]]
    empty: bool = False  # the empty cluster of NEVER_RUNNABLE: volatile selects ignored

    def charge(
        self,
        user: str,
        queue: str,
        project: str,
        claims: Sequence[tuple[int, Mapping[str, Fraction]]],  # (host, amounts incl. slots)
        shared: Mapping[str, Fraction],
    ) -> None:
        for h, amounts in claims:
            for name, a in amounts.items():
                self.avail[h][name] -= a
        for name, a in shared.items():
            self.shared_avail[name] -= a
        for i, lim in enumerate(self.cluster.limits):
            if not lim.applies(user, queue, project):
                continue
            total = self.lim_total[i]
            for name, a in shared.items():
                if name in total:
                    total[name] += a
            seen: set[int] = set()
            for h, amounts in claims:
                for name, a in amounts.items():
                    if name in total:
                        total[name] += a
                        self.lim_host[i][h][name] += a
                if JOBS in total and h not in seen:
                    self.lim_host[i][h][JOBS] += 1
                seen.add(h)
            if JOBS in total:
                total[JOBS] += 1


def _zero_usage(
    cluster: Cluster,
) -> tuple[list[dict[str, Fraction]], list[list[dict[str, Fraction]]]]:
    totals = [dict.fromkeys(lim.caps, ZERO) for lim in cluster.limits]
    per_host = [[dict.fromkeys(lim.caps, ZERO) for _ in cluster.hosts] for lim in cluster.limits]
    return totals, per_host


def session_world(cluster: Cluster) -> World:
    totals, per_host = _zero_usage(cluster)
    world = World(
        cluster,
        [h.status == "ok" for h in cluster.hosts],
        [dict(h.caps) for h in cluster.hosts],
        dict(cluster.shared_total),
        totals,
        per_host,
    )
    index = {h.name: h.index for h in cluster.hosts}
    for r in cluster.running:
        claims = []
        for a in r["alloc"]:
            amounts = {SLOTS: exact(a["slots"])}
            amounts.update({k: exact(v) for k, v in (a.get("resources") or {}).items()})
            claims.append((index[a["host"]], amounts))
        shared = {k: exact(v) for k, v in (r.get("shared") or {}).items()}
        world.charge(
            str(r.get("user", "nobody")),
            str(r.get("queue", "normal")),
            str(r.get("project", "default")),
            claims,
            shared,
        )
    return world


def empty_world(cluster: Cluster) -> World:
    """Every host ok, full capacity, no running work, no limit usage, shared all free."""
    totals, per_host = _zero_usage(cluster)
    return World(
        cluster,
        [True for _ in cluster.hosts],
        [dict(h.caps) for h in cluster.hosts],
        dict(cluster.shared_total),
        totals,
        per_host,
        empty=True,
    )


# -- select ------------------------------------------------------------------------------------


def _lookup(world: World, h: int, word: str) -> Value:
    cl = world.cluster
    host = cl.hosts[h]
    kind = cl.kinds.get(word)
    if kind == "consumable":
        return world.avail[h].get(word)
    if kind == "shared":
        return world.shared_avail.get(word)
    if kind == "numeric":
        return host.attrs.get(word)
    if kind == "boolean":
        return Fraction(1 if host.attrs.get(word) is True else 0)
    if kind == "string":
        return host.attrs.get(word)
    if word == "hname":
        return host.name
    if word.startswith("max"):
        base = word[3:]
        if cl.kinds.get(base) == "consumable":
            return host.caps.get(base)
        if cl.kinds.get(base) == "shared":
            return cl.shared_total.get(base)
    return word  # a bare word compared with a string: a value


def _truthy(v: Value) -> bool:
    return isinstance(v, Fraction) and v != 0


def _eval(e: Expr, world: World, h: int) -> Value:
    tag = e[0]
    if tag == "num":
        return e[1]
    if tag == "str":
        return e[1]
    if tag == "name":
        return _lookup(world, h, e[1])
    if tag == "defined":
        name = e[1]
        kind = world.cluster.kinds.get(name)
        host = world.cluster.hosts[h]
        if kind == "consumable":
            return Fraction(int(name in host.caps))
        if kind == "shared":
            return Fraction(1)
        if kind == "boolean":
            return Fraction(1 if host.attrs.get(name) is True else 0)
        return Fraction(int(name in host.attrs))
    if tag == "un":
        v = _eval(e[2], world, h)
        if e[1] == "!":
            return Fraction(0 if _truthy(v) else 1)
        return -v if isinstance(v, Fraction) else None
    op, left, right = e[1], _eval(e[2], world, h), _eval(e[3], world, h)
    if op == "&&":
        return Fraction(int(_truthy(left) and _truthy(right)))
    if op == "||":
        return Fraction(int(_truthy(left) or _truthy(right)))
    if op in ("==", "!=", "<", "<=", ">", ">="):
        if left is None or right is None:
            return Fraction(0)  # a host lacking a resource fails any comparison on it
        if isinstance(left, str) or isinstance(right, str):
            if op not in ("==", "!="):
                return Fraction(0)
            if left == "any" or right == "any":
                return Fraction(1)
            return Fraction(int((str(left) == str(right)) == (op == "==")))
        result = {
            "==": left == right,
            "!=": left != right,
            "<": left < right,
            "<=": left <= right,
            ">": left > right,
            ">=": left >= right,
        }[op]
        return Fraction(int(result))
    if not isinstance(left, Fraction) or not isinstance(right, Fraction):
        return None
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if op == "/":
        return left / right if right != 0 else None
    raise ValueError(op)


_MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


NOT_IS_VOLATILE = False
"""The rule (decided in issue 9): ``!`` flips polarity — ``!(mem<1000)`` can only turn
false as mem falls, so it is not volatile. True gives the cruder reading of design §3
(any consumable under ``!`` is volatile), kept to label that difference if it returns."""


def _turns_true(op: str, positive: bool) -> bool:
    """Can ``avail OP c`` (negated when not ``positive``) turn true as avail falls?"""
    if op in ("==", "!="):
        return True
    return (op in (">", ">=")) != positive


def volatile(e: Expr | None, kinds: Mapping[str, str]) -> bool:
    """Can the select turn *true* as resources fall: a consumable compared with <, <=,
    ==, !=, under !, or inside arithmetic."""
    if e is None:
        return False

    def dynamic(x: Expr) -> bool:
        if x[0] == "name":
            return kinds.get(x[1]) in ("consumable", "shared")
        if x[0] == "un":
            return dynamic(x[2])
        if x[0] == "bin":
            return dynamic(x[2]) or dynamic(x[3])
        return False

    def walk(x: Expr, positive: bool) -> bool:
        if not dynamic(x):
            return False
        if x[0] == "un":
            if x[1] == "!" and not NOT_IS_VOLATILE:
                return walk(x[2], not positive)
            return True  # under '!', or unary minus (arithmetic)
        if x[0] == "name":
            return not positive  # `mem` as a truth value only turns false as mem falls
        op, left, right = x[1], x[2], x[3]
        if op in ("&&", "||"):
            return walk(left, positive) or walk(right, positive)
        if op not in _MIRROR:
            return True  # arithmetic as a truth value
        if left[0] == "name" and not dynamic(right):
            return _turns_true(op, positive)
        if right[0] == "name" and not dynamic(left):
            return _turns_true(_MIRROR[op], positive)
        return True  # a consumable inside arithmetic, or on both sides

    return walk(e, True)


def select_true(world: World, p: Primary, h: int) -> bool:
    if p.select is None:
        return True
    if world.empty and volatile(p.select, world.cluster.kinds):
        return True  # it might turn true later: ignored on the empty cluster
    return _truthy(_eval(p.select, world, h))


# -- one job attempt ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RefClaim:
    host: int
    slots: int
    term: int
    amounts: tuple[tuple[str, Fraction], ...]  # sorted by name


@dataclass
class Attempt:
    """This job attempt's provisional debits (nothing touches the world until dispatch)."""

    debit: dict[int, dict[str, Fraction]] = field(default_factory=dict)
    shared: dict[str, Fraction] = field(default_factory=dict)
    claims: list[RefClaim] = field(default_factory=list)

    def snapshot(self) -> Attempt:
        return copy.deepcopy(self)

    def restore(self, snap: Attempt) -> None:
        self.debit = copy.deepcopy(snap.debit)
        self.shared = dict(snap.shared)
        self.claims = list(snap.claims)

    def held(self, h: int, name: str) -> Fraction:
        return self.debit.get(h, {}).get(name, ZERO)

    def take(self, h: int, want: Mapping[str, Fraction], term: int) -> None:
        mine = self.debit.setdefault(h, {})
        for name, a in want.items():
            mine[name] = mine.get(name, ZERO) + a
        amounts = tuple(sorted((k, v) for k, v in want.items() if k != SLOTS))
        self.claims.append(RefClaim(h, int(want[SLOTS]), term, amounts))


@dataclass(frozen=True)
class Who:
    user: str
    queue: str
    project: str


def _split(cluster: Cluster, p: Primary) -> dict[str, dict[str, Fraction]]:
    """The primary's rusage by reservation: per_task / per_host / per_job / shared."""
    out: dict[str, dict[str, Fraction]] = {
        "per_task": {},
        "per_host": {},
        "per_job": {},
        "shared": {},
    }
    for name, a in p.rusage:
        if cluster.kinds.get(name) == "shared":
            out["shared"][name] = a
        else:
            out[cluster.reservation.get(name, "per_task")][name] = a
    return out


def _want(cluster: Cluster, p: Primary, s: int, first: bool) -> dict[str, Fraction]:
    split = _split(cluster, p)
    want = {SLOTS: Fraction(s)}
    for name, a in split["per_task"].items():
        want[name] = a * s
    want.update(split["per_host"])
    if first:
        want.update(split["per_job"])
    return want


def try_fit(
    world: World,
    who: Who,
    p: Primary,
    attempt: Attempt,
    h: int,
    s: int,
    first: bool,
    limits: bool = True,
) -> dict[str, Fraction] | None:
    """The want of a bucket of ``s`` slots on host ``h`` if it fits, else None
    (``limits=False``: per-host limits not checked)."""
    want = _want(world.cluster, p, s, first)
    for name, amount in want.items():
        if name not in world.avail[h]:
            return None  # lacking a wanted resource fails, even for amount 0
        if world.avail[h][name] - attempt.held(h, name) < amount:
            return None
    for i, lim in enumerate(world.cluster.limits if limits else ()):
        if not lim.per_host or not lim.applies(who.user, who.queue, who.project):
            continue
        for key, cap in lim.caps.items():
            if key == JOBS:
                extra, held = (ZERO if h in attempt.debit else Fraction(1)), ZERO
            else:
                extra, held = want.get(key, ZERO), attempt.held(h, key)
            # A key the bucket does not want is not checked (running work may already be
            # over a limit; that does not stop work that adds nothing to it).
            if extra > 0 and world.lim_host[i][h][key] + held + extra > cap:
                return None
    return want


def host_order(world: World, p: Primary, hosts: Sequence[int]) -> list[int]:
    """File order, or order[] keys (descending unless '-'; lacking sorts last)."""
    if not p.order:
        return list(hosts)
    cl = world.cluster

    def key(h: int) -> tuple[tuple[int, Fraction], ...]:
        out = []
        for name, desc in p.order:
            kind = cl.kinds.get(name)
            v: Value
            if kind == "consumable":
                v = world.avail[h].get(name)
            elif kind == "shared":
                v = world.shared_avail.get(name)
            elif kind == "boolean":
                v = Fraction(1 if cl.hosts[h].attrs.get(name) is True else 0)
            else:
                v = cl.hosts[h].attrs.get(name)
            if not isinstance(v, Fraction):
                out.append((1, ZERO))
            else:
                out.append((0, -v if desc else v))
        return tuple(out)

    return sorted(hosts, key=key)


def plans(p: Primary) -> list[list[int]]:
    n = p.tasks
    if n == 1:
        return [[1]]
    if p.span == ("hosts", 1):
        return [[n]]
    if p.span is not None and p.span[0] == "ptile":
        size = p.span[1]
        q, r = divmod(n, size)
        return [[size] * q + ([r] if r else [])]
    out = []
    for k in range(1, n + 1):
        q, r = divmod(n, k)
        out.append([q + 1] * r + [q] * (k - r))
    return out


def fill_allowed(p: Primary) -> bool:
    return p.span is None or p.span == ("hosts", -1)


def _run_plan(
    world: World,
    who: Who,
    p: Primary,
    term: int,
    attempt: Attempt,
    plan: list[int],
    hosts: list[int],
) -> bool:
    snap = attempt.snapshot()
    used: set[int] = set()
    first = True
    for s in plan:
        for h in hosts:  # a fresh scan per bucket
            if h in used:
                continue
            want = try_fit(world, who, p, attempt, h, s, first)
            if want is not None:
                attempt.take(h, want, term)
                used.add(h)
                first = False
                break
        else:
            attempt.restore(snap)
            return False
    return True


def room(world: World, who: Who, p: Primary, attempt: Attempt, h: int, first: bool) -> int:
    """The largest t >= 0 such that a try of t slots on h passes (0 if none does)."""
    t = 0
    while try_fit(world, who, p, attempt, h, t + 1, first) is not None:
        t += 1
    return t


def _run_fill(
    world: World, who: Who, p: Primary, term: int, attempt: Attempt, hosts: list[int]
) -> bool:
    n = p.tasks
    first_room = {h: room(world, who, p, attempt, h, True) for h in hosts}
    other_room = {h: room(world, who, p, attempt, h, False) for h in hosts}
    f = None
    for h in hosts:
        if first_room[h] >= 1 and first_room[h] + sum(other_room[g] for g in hosts if g != h) >= n:
            f = h
            break
    if f is None:
        return False
    snap = attempt.snapshot()
    left = n
    for h, r in [(f, first_room[f])] + [(g, other_room[g]) for g in hosts if g != f]:
        if left == 0:
            break
        t = min(left, r)
        if t == 0:
            continue
        want = try_fit(world, who, p, attempt, h, t, h == f)
        if want is None:  # cannot happen: rooms were measured on distinct hosts
            attempt.restore(snap)
            return False
        attempt.take(h, want, term)
        left -= t
    if left:
        attempt.restore(snap)
        return False
    return True


def eligible(world: World, p: Primary) -> list[int]:
    return [
        h.index for h in world.cluster.hosts if world.ok[h.index] and select_true(world, p, h.index)
    ]


SAME_RANK_IGNORES_LIMITS = False
"""Not the rule: True ranks same[] groups by a try that ignores per-host limits (what
the engine did when this test was written); for telling that known difference apart."""


def same_groups(
    world: World, who: Who, p: Primary, ordered: list[int], attempt: Attempt
) -> list[list[int]]:
    """Hosts grouped by their same[] values, groups in the order of their first member
    whose try of one task with the first-claim want would pass now (this attempt's
    debits and per-host limits included: where the seqjob rule would put one task);
    others last."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for h in ordered:
        attrs = world.cluster.hosts[h].attrs
        if all(name in attrs for name in p.same):
            groups.setdefault(tuple(attrs[name] for name in p.same), []).append(h)

    def rank(members: list[int]) -> int:
        for h in ordered:
            fits = try_fit(world, who, p, attempt, h, 1, True, not SAME_RANK_IGNORES_LIMITS)
            if h in members and fits is not None:
                return ordered.index(h)
        return len(ordered) + ordered.index(members[0])

    return sorted(groups.values(), key=rank)


def shared_short(world: World, p: Primary, attempt: Attempt) -> bool:
    for name, a in _split(world.cluster, p)["shared"].items():
        if world.shared_avail.get(name, ZERO) - attempt.shared.get(name, ZERO) < a:
            return True
    return False


def place_primary(world: World, who: Who, p: Primary, term: int, attempt: Attempt) -> str | None:
    """Place one primary into ``attempt``; None on success, else "shared" / "plans"."""
    if shared_short(world, p, attempt):
        return "shared"
    ordered = host_order(world, p, eligible(world, p))
    sets = same_groups(world, who, p, ordered, attempt) if p.same else [ordered]
    placed = False
    for plan in plans(p):
        for hosts in sets:
            if _run_plan(world, who, p, term, attempt, plan, hosts):
                placed = True
                break
        if placed:
            break
    if not placed and fill_allowed(p):
        for hosts in sets:
            if _run_fill(world, who, p, term, attempt, hosts):
                placed = True
                break
    if not placed:
        return "plans"
    for name, a in _split(world.cluster, p)["shared"].items():
        attempt.shared[name] = attempt.shared.get(name, ZERO) + a
    return None


def _least(cluster: Cluster, terms: Sequence[Primary]) -> dict[str, Fraction]:
    """The least a job can take: tasks as slots, per-task x tasks, per-host once,
    per-job, shared."""
    out: dict[str, Fraction] = {SLOTS: ZERO}
    for p in terms:
        out[SLOTS] += p.tasks
        split = _split(cluster, p)
        for name, a in split["per_task"].items():
            out[name] = out.get(name, ZERO) + a * p.tasks
        for part in ("per_host", "per_job", "shared"):
            for name, a in split[part].items():
                out[name] = out.get(name, ZERO) + a
    return out


def _taken(attempt: Attempt) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {SLOTS: ZERO}
    for c in attempt.claims:
        out[SLOTS] += c.slots
        for name, a in c.amounts:
            out[name] = out.get(name, ZERO) + a
    for name, a in attempt.shared.items():
        out[name] = out.get(name, ZERO) + a
    return out


def aggregate_blocked(world: World, who: Who, amounts: Mapping[str, Fraction]) -> bool:
    for i, lim in enumerate(world.cluster.limits):
        if lim.per_host or not lim.applies(who.user, who.queue, who.project):
            continue
        for key, cap in lim.caps.items():
            extra = Fraction(1) if key == JOBS else amounts.get(key, ZERO)
            if extra > 0 and world.lim_total[i][key] + extra > cap:
                return True
    return False


@dataclass
class Outcome:
    ok: bool
    attempt: Attempt
    stage: str = ""  # "precheck" | "shared" | "plans" | "postcheck"
    term: int = 0
    before: Attempt | None = None  # the attempt as the failing term found it


SHARED_UPFRONT = True
"""The rule (decided in issue 9, design §5 "a job-level cause first"): a COMPOUND's
shared amounts are checked for all its terms at once, before any term is placed. False
checks them per term, as each term is reached (kept to label that difference)."""


def _shared_upfront_short(world: World, terms: Sequence[Primary]) -> bool:
    total: dict[str, Fraction] = {}
    for p in terms:
        for name, a in _split(world.cluster, p)["shared"].items():
            total[name] = total.get(name, ZERO) + a
    return any(world.shared_avail.get(name, ZERO) < a for name, a in total.items())


def place_alternative(world: World, who: Who, terms: Sequence[Primary]) -> Outcome:
    attempt = Attempt()
    if SHARED_UPFRONT and _shared_upfront_short(world, terms):
        return Outcome(False, attempt, "shared", 0, attempt.snapshot())
    if aggregate_blocked(world, who, _least(world.cluster, terms)):
        return Outcome(False, attempt, "precheck")
    for t, p in enumerate(terms):
        before = attempt.snapshot()
        why = place_primary(world, who, p, t, attempt)
        if why is not None:
            return Outcome(False, attempt, why, t, before)
    if aggregate_blocked(world, who, _taken(attempt)):
        return Outcome(False, attempt, "postcheck")
    return Outcome(True, attempt)


# -- pend reasons --------------------------------------------------------------------------------


def _floor_div(left: Fraction, per: Fraction) -> int:
    return max(0, math.floor(left / per))


UNWANTED_LIMIT_KEYS_COUNT = False
"""Not the rule: True makes the per-host limit headroom of a pend reason count a limit
key the job does not want (0 tasks where running work is already over the cap), which
the try does not (what the engine's diagnosis did when this test was written)."""


def _capacities(
    world: World, who: Who, p: Primary, d: Attempt, hosts: list[int], with_per_job: bool
) -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
    """Per eligible host, the tasks slots allow; and resources; and per-host limits."""
    split = _split(world.cluster, p)
    per_task, per_host = split["per_task"], split["per_host"]
    per_job = split["per_job"] if with_per_job else {}
    fixed = {**per_host, **per_job}
    c_slots, c_res, c_lim = {}, {}, {}
    for h in hosts:
        av = world.avail[h]
        cs = _floor_div(av[SLOTS] - d.held(h, SLOTS), Fraction(1))
        cr = cs
        for name in (*per_task, *fixed):
            if name not in av:
                cr = 0
                continue
            left = av[name] - d.held(h, name) - fixed.get(name, ZERO)
            a = per_task.get(name, ZERO)
            cr = min(cr, _floor_div(left, a) if a > 0 else (BIG if left >= 0 else 0))
        cl = cr
        for i, lim in enumerate(world.cluster.limits):
            if not lim.per_host or not lim.applies(who.user, who.queue, who.project):
                continue
            for key, cap in lim.caps.items():
                used = world.lim_host[i][h][key]
                if key == JOBS:
                    cl = min(cl, BIG if h in d.debit or used + 1 <= cap else 0)
                elif key == SLOTS:
                    cl = min(cl, _floor_div(cap - used - d.held(h, SLOTS), Fraction(1)))
                elif key in per_task or key in fixed or UNWANTED_LIMIT_KEYS_COUNT:
                    left = cap - used - d.held(h, key) - fixed.get(key, ZERO)
                    a = per_task.get(key, ZERO)
                    cl = min(cl, _floor_div(left, a) if a > 0 else (BIG if left >= 0 else 0))
        c_slots[h], c_res[h], c_lim[h] = cs, cr, cl
    return c_slots, c_res, c_lim


def _shape_fits(caps: list[int], p: Primary) -> bool:
    n = p.tasks
    if p.span == ("hosts", 1):
        return max(caps, default=0) >= n
    if p.span is not None and p.span[0] == "ptile" and n > 1:
        size = p.span[1]
        full, rem = divmod(n, size)
        ranked = sorted(caps, reverse=True)
        if full and (len(ranked) < full or ranked[full - 1] < size):
            return False
        return not rem or (len(ranked) > full and ranked[full] >= rem)
    return sum(caps) >= n


def _stage_reason(world: World, who: Who, p: Primary, d: Attempt, with_per_job: bool) -> str:
    """Steps 3-7 of the precedence for a primary whose plans all failed."""
    hosts = eligible(world, p)
    if not hosts:
        matching_closed = any(
            not world.ok[h.index] and select_true(world, p, h.index) for h in world.cluster.hosts
        )
        return "HOST_STATUS" if matching_closed else "SELECT"
    c_slots, c_res, c_lim = _capacities(world, who, p, d, hosts, with_per_job)
    n = p.tasks
    if sum(c_slots.values()) < n:
        return "NOT_ENOUGH_SLOTS"
    if sum(c_res.values()) < n:
        return "NOT_ENOUGH_RESOURCE"
    if sum(c_lim.values()) < n:
        return "LIMIT"
    for caps, reason in ((c_slots, "SPAN"), (c_res, "NOT_ENOUGH_RESOURCE"), (c_lim, "LIMIT")):
        if not _shape_fits(list(caps.values()), p):
            return reason
    if p.same:
        groups: dict[tuple[Any, ...], list[int]] = {}
        for h in hosts:
            attrs = world.cluster.hosts[h].attrs
            if all(name in attrs for name in p.same):
                groups.setdefault(tuple(attrs[name] for name in p.same), []).append(h)
        if not any(_shape_fits([c_lim[h] for h in g], p) for g in groups.values()):
            return "SAME"
    return "SPAN"


def _failure_reasons(world: World, who: Who, terms: Sequence[Primary], out: Outcome) -> set[str]:
    """Steps 2-7 for an alternative that failed in ``world`` as ``out`` says."""
    if out.stage == "precheck":
        fresh = Attempt()
        if shared_short(world, terms[0], fresh):
            return {"SHARED_RESOURCE"}
        if any(shared_short(world, p, fresh) for p in terms[1:]):
            return {"LIMIT", "SHARED_RESOURCE"}  # ambiguous: which term "is" the job
        return {"LIMIT"}
    if out.stage == "postcheck":
        return {"LIMIT"}
    if out.stage == "shared":
        return {"SHARED_RESOURCE"}
    assert out.before is not None
    p = terms[out.term]
    # Per-job amounts in the per-host capacities: ambiguous, so both readings count.
    return {_stage_reason(world, who, p, out.before, w) for w in (False, True)}


def _reasons(cluster: Cluster, world: World, job: Job, who: Who) -> tuple[str, frozenset[str]]:
    """The pend reason (and every reason acceptable in an ambiguous corner)."""
    alts = job.req.alternatives
    never = [not place_alternative(empty_world(cluster), who, terms).ok for terms in alts]
    if all(never):
        main = "NEVER_RUNNABLE"
        accept = {main}
        # COMPOUND ambiguity: the whole job never runs on the empty cluster, but the
        # failing term alone would; then the failing term's own reason is accepted too.
        if not job.req.is_alter and len(alts[0]) > 1:
            out = place_alternative(world, who, alts[0])
            if out.stage in ("shared", "plans"):
                p = alts[0][out.term]
                alone = place_alternative(empty_world(cluster), who, [p])
                if alone.ok:
                    accept |= _failure_reasons(world, who, alts[0], out)
        return main, frozenset(accept)
    out = place_alternative(world, who, alts[0])
    assert not out.ok
    accept = _failure_reasons(world, who, alts[0], out)
    return sorted(accept)[0], frozenset(accept)


# -- the session ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RefDispatched:
    job: str
    claims: tuple[RefClaim, ...]
    shared: tuple[tuple[str, Fraction], ...]  # summed per name, sorted
    alternative: int | None


@dataclass(frozen=True)
class RefPending:
    job: str
    reason: str
    acceptable: frozenset[str]


RefDecision = RefDispatched | RefPending


def fcfs(cluster: Cluster) -> list[Job]:
    return sorted(
        cluster.jobs, key=lambda j: (-cluster.priority.get(j.queue, 0), j.submit_time, j.order)
    )


def reference_decisions(doc: Mapping[str, Any]) -> list[RefDecision]:
    """One decision per pending job of the state document, in session order."""
    cluster = _cluster(doc)
    world = session_world(cluster)
    out: list[RefDecision] = []
    for job in fcfs(cluster):
        who = Who(job.user, job.queue, job.project)
        for ai, terms in enumerate(job.req.alternatives):
            res = place_alternative(world, who, terms)
            if res.ok:
                claims = res.attempt.claims
                world.charge(
                    job.user,
                    job.queue,
                    job.project,
                    [(c.host, {SLOTS: Fraction(c.slots), **dict(c.amounts)}) for c in claims],
                    res.attempt.shared,
                )
                out.append(
                    RefDispatched(
                        job.id,
                        tuple(claims),
                        tuple(sorted(res.attempt.shared.items())),
                        ai if job.req.is_alter else None,
                    )
                )
                break
        else:
            reason, accept = _reasons(cluster, world, job, who)
            out.append(RefPending(job.id, reason, accept))
    return out


def iter_jobs(doc: Mapping[str, Any]) -> Iterator[str]:
    """Job ids in session order (for messages)."""
    for job in fcfs(_cluster(doc)):
        yield job.id
