"""Slurm's association tree (account -> sub-account -> user), its usage with decay, and
the fair-share factor by Fair Tree (Slurm's default) or the classic formula.

An association is an account (under a parent account; ``root`` is the top) or a user
under an account, with raw ``shares`` (sacctmgr's Fairshare) and raw ``usage`` (sshare's
RawUsage: slot-seconds, decayed) measured at the book's time. Usage charged to a user is
charged to every account above it too, as slurmctld does; an account's own usage, when
given, may exceed its children's (Slurm keeps what deleted associations used).

Decay: usage is multiplied by ``decay ** seconds`` with ``decay = 2 ** (-1 / half-life)``
(Slurm's ``1 - 0.693 / half-life`` is a first-order approximation of it). A job holding
``b`` slots over ``[s, e]`` adds ``b * integral(decay ** (T - t) dt, s, e)`` at a later
time ``T``: Slurm charges the same at every ``PriorityCalcPeriod``; xce charges
continuously (the period taken to 0).

Fair Tree (Slurm's ``fair_tree.c``, as its 22.05 behaves): among siblings, ``LevelFS =
S / U`` with ``S`` the association's shares over its siblings' and ``U`` its usage over
its parent's (infinite with no usage, 0 with no shares); siblings are visited by LevelFS,
highest first, users before accounts on a tie, else in tree order; users get ranks from
the number of user associations down, and a user whose LevelFS equals the sibling before
it (or first under an account that tied) keeps the last rank given; its factor is ``rank
/ users``. Classic (``PriorityFlags=NO_FAIR_TREE``): ``2 ** (-(UE / S) / dampening)``
with ``S`` the product of the shares down the path and ``UE`` the effective usage
(docs/priority.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from xce.errors import InputError

__all__ = ["ROOT", "AssocTree", "Association", "UsageBook", "run_usage"]

ROOT = "root"

Key = tuple[str, str | None]  # (account, user or None for the account itself)


@dataclass(frozen=True, slots=True)
class Association:
    """One association: an account (``user`` None) under ``parent``, or a user under
    ``account``; ``usage`` is raw usage at the book's time (None: an account's is its
    children's)."""

    account: str
    user: str | None = None
    parent: str | None = None  # an account's parent account (None: root)
    shares: float = 1.0
    usage: float | None = None
    priority: int = 0  # sacctmgr's Priority (the assoc factor)

    @property
    def key(self) -> Key:
        return (self.account, self.user)


class AssocTree:
    """The associations, in the order given (Slurm's tree order, which settles ties)."""

    def __init__(self, associations: Iterable[Association]) -> None:
        items = list(associations)
        self.nodes: dict[Key, Association] = {}
        self.children: dict[str, list[Key]] = {ROOT: []}  # account -> its children
        self.parent: dict[Key, str | None] = {}
        if not any(a.key == (ROOT, None) for a in items):
            items.insert(0, Association(ROOT, shares=1.0))
        for a in items:
            if a.key in self.nodes:
                who = f"user {a.user!r} in account {a.account!r}" if a.user else repr(a.account)
                raise InputError(f"association {who} is given twice")
            self.nodes[a.key] = a
            if a.user is None:
                self.children.setdefault(a.account, [])
        for a in items:
            if a.key == (ROOT, None):
                self.parent[a.key] = None
                continue
            up = a.account if a.user is not None else (a.parent or ROOT)
            if up not in self.children:
                raise InputError(f"association {_who(a)}: account {up!r} is not declared")
            self.parent[a.key] = up
            self.children[up].append(a.key)
        self._check_acyclic()
        self._ancestors: dict[Key, tuple[Key, ...]] = {}
        self.users = [k for k in self.nodes if k[1] is not None]
        self.default_account = _default_accounts(self.users)
        self._level = {
            a: sum(self.nodes[k].shares for k in kids) for a, kids in self.children.items()
        }
        self._norm = {k: self._norm_of(k) for k in self.nodes}
        # per account: its children as Fair Tree scores them (S, is an account, tree
        # order, key), so a ranking does no lookups but the usage's
        self._scored = {
            a: [(self._norm[k], k[1] is None, i, k) for i, k in enumerate(kids)]
            for a, kids in self.children.items()
        }
        # per account whose subtree is one chain down to one user: that user (Fair Tree
        # visits such an account's one child with the account's own tie, down to it)
        self._chain: dict[str, Key] = {}
        for account in self.children:
            at = account
            while len(self.children.get(at, ())) == 1:
                (only,) = self.children[at]
                if only[1] is not None:
                    self._chain[account] = only
                    break
                at = only[0]
        self.max_priority = max([0, *(a.priority for a in self.nodes.values())])
        self._classic_order, self._classic_shares = self._classic_tree()

    def _check_acyclic(self) -> None:
        for key in self.nodes:
            seen: set[Key] = set()
            at: Key | None = key
            while at is not None:
                if at in seen:
                    raise InputError(f"association {at[0]!r}: its parents form a cycle")
                seen.add(at)
                up = self.parent.get(at)
                at = (up, None) if up is not None else None

    def ancestors(self, key: Key) -> tuple[Key, ...]:
        """``key`` and every account above it, up to and including root."""
        got = self._ancestors.get(key)
        if got is None:
            out = [key]
            up = self.parent.get(key)
            while up is not None:
                out.append((up, None))
                up = self.parent.get((up, None))
            got = self._ancestors[key] = tuple(out)
        return got

    def association_of(self, user: str, account: str) -> Key | None:
        """The user association a job of ``user`` charging ``account`` runs under: that
        one, else the user's only association when the job names no account known for it
        (Slurm's default account); None when the user has none."""
        if (account, user) in self.nodes:
            return (account, user)
        default = self.default_account.get(user)
        return (default, user) if default is not None else None

    def level_shares(self, key: Key) -> float:
        """The shares of ``key`` and its siblings together."""
        up = self.parent.get(key)
        if up is None:
            return self.nodes[key].shares
        return self._level[up]

    def norm_shares(self, key: Key) -> float:
        """Shares over the siblings' (Fair Tree's S; 0 when the level has none)."""
        return self._norm[key]

    def _norm_of(self, key: Key) -> float:
        level = self.level_shares(key)
        return self.nodes[key].shares / level if level > 0 else 0.0

    def raw_usage(self, own: Mapping[Key, float]) -> dict[Key, float]:
        """Every association's raw usage: ``own`` (the book's, by association), an
        account without usage of its own being the sum of its children's."""
        out: dict[Key, float] = {}

        def total(key: Key) -> float:
            if key in out:
                return out[key]
            given = own.get(key)
            if given is None and key[1] is None:
                given = sum(total(k) for k in self.children.get(key[0], ()))
            elif given is None:
                given = 0.0
            out[key] = given
            return given

        for key in self.nodes:
            total(key)
        return out

    def fair_tree(self, usage: Mapping[Key, float]) -> dict[Key, float]:
        """Each user association's Fair Tree factor (rank / number of users)."""
        count = len(self.users)
        if count == 0:
            return {}
        factors: dict[Key, float] = {}
        counters = [count, count]  # rank, rank-no-ties
        scored_kids, chain = self._scored, self._chain
        inf = math.inf

        def visit(account: str, tied_above: bool) -> None:
            parent_usage = usage.get((account, None), 0.0)
            scored: list[tuple[float, bool, int, Key]] = []
            for s, is_account, i, key in scored_kids.get(account, ()):
                if s == 0:
                    fs = 0.0
                else:
                    u = usage.get(key, 0.0) / parent_usage if parent_usage > 0 else 0.0
                    fs = s / u if u > 0 else inf
                scored.append((-fs, is_account, i, key))  # LevelFS high first
            scored.sort()  # users first on a tie, then tree order (i is unique)
            previous: float | None = None
            for n, (minus_fs, is_account, _, key) in enumerate(scored):
                tied = (n == 0 and tied_above) or (previous is not None and minus_fs == previous)
                previous = minus_fs
                if is_account:
                    only = chain.get(key[0])
                    if only is None:
                        visit(key[0], tied)
                        continue
                    key = only  # its one child, and that one's, tied as it: its user
                if not tied:
                    counters[0] = counters[1]
                factors[key] = counters[0] / count
                counters[1] -= 1

        visit(ROOT, False)
        return factors

    def classic(self, usage: Mapping[Key, float], dampening: int) -> dict[Key, float]:
        """Each user association's classic fair-share factor."""
        root_usage = usage.get((ROOT, None), 0.0)
        effective: dict[Key, float] = {}
        for key, account, raw, level in self._classic_order:
            un = min(usage.get(key, 0.0) / root_usage, 1.0) if root_usage > 0 else 0.0
            if account == ROOT:
                effective[key] = un
            elif level > 0:
                up = effective[(account, None)]
                effective[key] = un + (up - un) * raw / level
            else:
                effective[key] = effective[(account, None)]
        out: dict[Key, float] = {}
        shares = self._classic_shares
        for key in self.users:
            s = shares.get(key, 0.0)
            out[key] = 2.0 ** (-(effective.get(key, 0.0) / s) / dampening) if s > 0 else 0.0
        return out

    def _classic_tree(self) -> tuple[list[tuple[Key, str, float, float]], dict[Key, float]]:
        """The classic formula's walk (every association below root, each after its
        parent: key, parent account, raw shares, its level's shares) and each one's
        shares down its path, which do not depend on usage."""
        order: list[tuple[Key, str, float, float]] = []
        shares: dict[Key, float] = {}

        def visit(account: str, path_share: float) -> None:
            for key in self.children.get(account, []):
                level = self.level_shares(key)
                local = self.nodes[key].shares / level if level > 0 else 0.0
                shares[key] = path_share * local
                order.append((key, account, self.nodes[key].shares, level))
                if key[1] is None:
                    visit(key[0], shares[key])

        visit(ROOT, 1.0)
        return order, shares


def run_usage(slots: float, start: float, end: float, decay: float) -> float:
    """The usage of ``slots`` slots held over ``[start, end]``, as decayed at ``end``."""
    span = max(end - start, 0.0)
    if decay >= 1.0:
        return slots * span
    rate = -math.log(decay)
    return slots * -math.expm1(-rate * span) / rate


class UsageBook:
    """Raw usage per association, decayed with time; charged as jobs end. Each entry
    is kept as (value, the time it is valid at), moved forward when charged."""

    def __init__(self, tree: AssocTree, since: float, decay: float) -> None:
        self.tree = tree
        self.since = since  # the imported usage's time: work before it is in it
        self.decay = decay
        self._book: dict[Key, tuple[float, float]] = {
            k: (a.usage, since) for k, a in tree.nodes.items() if a.usage is not None
        }
        # an account without usage of its own is its children's at the start; later
        # charges go to it as to any other (Slurm charges every ancestor)
        for key, value in tree.raw_usage({k: v for k, (v, _) in self._book.items()}).items():
            self._book[key] = (value, since)

    def copy(self) -> UsageBook:
        out = UsageBook.__new__(UsageBook)
        out.tree, out.since, out.decay = self.tree, self.since, self.decay
        out._book = dict(self._book)
        return out

    def _at(self, key: Key, t: float) -> float:
        value, when = self._book.get(key, (0.0, t))
        return value * self.decay ** max(t - when, 0.0) if value else 0.0

    def charge(self, key: Key | None, slots: float, start: float, end: float) -> None:
        """A job of association ``key`` held ``slots`` over ``[start, end]``: charged to
        it and every account above (only what ran after the book's start time)."""
        if key is None:
            return
        used = run_usage(slots, max(start, self.since), end, self.decay)
        if used <= 0:
            return
        book, decay = self._book, self.decay
        for k in self.tree.ancestors(key):
            value, when = book.get(k, (0.0, end))  # as _at
            book[k] = ((value * decay ** max(end - when, 0.0) if value else 0.0) + used, end)

    def at(self, t: float, running: Iterable[tuple[Key | None, float, float]]) -> dict[Key, float]:
        """Every association's raw usage at ``t``, with ``running`` work (association,
        slots, start) charged up to ``t``."""
        out = dict.fromkeys(self.tree.nodes, 0.0)
        decay = self.decay
        for k, (value, when) in self._book.items():  # as _at, without a lookup
            if value:
                elapsed = t - when
                out[k] = value * decay**elapsed if elapsed > 0 else value  # (decay**0 is 1)
        for key, slots, start in running:
            if key is None:
                continue
            used = run_usage(slots, max(start, self.since), t, self.decay)
            for k in self.tree.ancestors(key):
                out[k] = out.get(k, 0.0) + used
        return out


def _who(a: Association) -> str:
    return f"user {a.user!r} in account {a.account!r}" if a.user else repr(a.account)


def _default_accounts(users: list[Key]) -> dict[str, str]:
    """Each user with exactly one association: that account."""
    seen: dict[str, list[str]] = {}
    for account, user in users:
        assert user is not None
        seen.setdefault(user, []).append(account)
    return {u: accounts[0] for u, accounts in seen.items() if len(accounts) == 1}
