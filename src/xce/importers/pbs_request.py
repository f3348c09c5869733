"""A pending PBS job's ``Resource_List`` (select, ncpus, place, mem) as an xce
requirement: tasks and a resreq string. A chunk is always on one host; nothing here
splits a chunk the user did not ask to split, nor fixes how many go on a host unless
``place`` says so (docs/import-pbs.md, "Requirements")."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from xce.importers.pbs_values import boolean, chunks, count, mebibytes
from xce.importers.report import ImportReport
from xce.importers.units import resource_name
from xce.inputs import MAX_HOST_SLOTS, MAX_TASKS

#: Chunk resources that say how to run, not where: no placement meaning.
IGNORED_CHUNK = frozenset({"mpiprocs", "ompthreads"})


def span(place: str, chunks_: int, cpus: int) -> str:
    """A chunk is always on one host: one chunk (or pack) -> ``span[hosts=1]``; scatter
    puts each chunk on its own host -> ``span[ptile=CPUs]``; free chunks may share a host,
    which xce cannot say without splitting them: no span."""
    if chunks_ == 1 or place == "pack":
        return "span[hosts=1]"
    if place in ("scatter", "vscatter"):
        return f"span[ptile={cpus}]"
    return ""


class Request:
    """A pending job's ``Resource_List`` as a requirement."""

    def __init__(
        self, res: Mapping[str, Any], known: Mapping[str, Any], where: str, report: ImportReport
    ) -> None:
        self.res, self.known, self.where, self.report = res, known, where, report
        self.uses_gpu = False

    def resreq(self, queue_terms: list[str]) -> tuple[int, str]:
        """(tasks, requirement): one term per chunk kind, a compound when several."""
        if "select" in self.res:
            parsed = chunks(self.res["select"])
        else:  # -l ncpus=N[,mem=M]: one chunk
            parsed = [(1, {k: str(self.res[k]) for k in ("ncpus", "mem") if k in self.res})]
        default_cpus = self._default_cpus(parsed)
        place = self._place(len(parsed))
        terms = []
        for number, spec in parsed:
            given = spec.get("ncpus")
            cpus = default_cpus if given is None else count(given, "chunk ncpus", MAX_HOST_SLOTS)
            cpus = max(cpus, 1)  # ncpus=0 still takes a slot
            terms.append((number * cpus, self._sections(spec, cpus, queue_terms,
                                                        span(place, number, cpus))))  # fmt: skip
        total = sum(t for t, _ in terms)
        if total > MAX_TASKS:
            raise ValueError(f"select {self.res.get('select')!r} asks for {total} CPUs, "
                             f"beyond {MAX_TASKS}")  # fmt: skip
        if len(terms) == 1:
            return total, terms[0][1]
        return total, " + ".join(f"{t}*{{{s or '-'}}}" for t, s in terms)

    def _default_cpus(self, parsed: list[tuple[int, dict[str, str]]]) -> int:
        """CPUs of a chunk naming none: the job's ``ncpus`` shared by such chunks (qstat
        prints a select of default chunks as a bare count, ``40`` with ``ncpus: 8320``),
        else 1 as PBS does."""
        bare = sum(c for c, spec in parsed if "ncpus" not in spec)
        given = sum(c * count(spec["ncpus"], "chunk ncpus") for c, spec in parsed
                    if "ncpus" in spec)  # fmt: skip
        ncpus = self.res.get("ncpus")
        if ncpus is None or not bare:
            return 1
        ncpus = count(ncpus, "Resource_List.ncpus")
        if ncpus > given and (ncpus - given) % bare == 0:
            return min((ncpus - given) // bare, MAX_HOST_SLOTS)
        return 1

    def _place(self, kinds: int) -> str:
        """The arrangement of ``place`` (pack, scatter, vscatter or free); excl, exclhost
        and group=, and pack over several chunk kinds, have no equivalent: reported."""
        words = str(self.res.get("place") or "free").split(":")
        for word in words:
            if word in ("excl", "exclhost") or word.startswith("group="):
                self.report.warn("place not mapped", f"{self.where}: {word}")
        if "pack" in words and kinds > 1:
            self.report.warn("place=pack of several chunk kinds not mapped", self.where)
            return "free"
        return next((w for w in words if w in ("pack", "scatter", "vscatter")), "free")

    def _sections(self, spec: Mapping[str, str], cpus: int, queue_terms: list[str],
                  span_: str) -> str:  # fmt: skip
        selects = list(queue_terms)
        rusage: dict[str, int] = {}
        for key, value in spec.items():
            if key == "ncpus" or key in IGNORED_CHUNK:
                continue
            if key == "mem":
                rusage["mem"] = self._mem_per_cpu(mebibytes(value), cpus)
            elif key == "ngpus":
                gpus = count(value, "chunk ngpus")
                if gpus:
                    rusage["gpu"] = gpus
                    self.uses_gpu = True
            else:
                term = self._select_term(key, value)
                if term:
                    selects.append(term)
        out = []
        if selects:
            out.append(f"select[{' && '.join(selects)}]")
        if rusage:
            out.append("rusage[" + ":".join(f"{k}={v}" for k, v in rusage.items()) + "]")
        if span_:
            out.append(span_)
        return " ".join(out)

    def _mem_per_cpu(self, mib: float, cpus: int) -> int:
        per_cpu = math.ceil(mib / cpus)
        if per_cpu * cpus != mib:
            self.report.warn(
                "memory per chunk rounded up per CPU", f"{self.where}: {mib:g} MiB / {cpus} CPUs"
            )
        return per_cpu

    def _select_term(self, key: str, value: str) -> str | None:
        """A chunk's custom resource as a select term, when the hosts have it."""
        name = resource_name(key)
        kind = self.known.get(name)
        flag = boolean(value)
        if key in ("host", "vnode") and "'" not in value and value:
            return f"hname=='{value}'"
        if isinstance(kind, bool) and flag is not None:
            return name if flag else f"!{name}"
        if isinstance(kind, str) and "'" not in value:
            return f"{name}=='{value}'"
        self.report.warn("chunk resource not mapped", f"{self.where}: {key}={value}")
        return None
