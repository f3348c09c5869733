"""The resource-requirement language (LSF ``-R`` dialect): parse, check, evaluate.

``parse(text)`` gives the model (memoised by string); ``requirement_for_job`` also checks
it against a cluster's catalog and binds a job's task counts; ``compile_select`` binds a
select expression for bulk evaluation over hosts.
"""

from __future__ import annotations

from xce.resreq.evaluate import CompiledSelect, HostView, SelectMemo, compile_select
from xce.resreq.expr import Expr
from xce.resreq.model import (
    AlterResreq,
    CompoundResreq,
    Fingerprint,
    OrderKey,
    PrimaryResreq,
    Resreq,
    Rusage,
    RusageGroup,
    Span,
    fingerprint_text,
)
from xce.resreq.parser import parse
from xce.resreq.validate import bind_tasks, check, requirement_for_job

__all__ = [
    "AlterResreq",
    "CompiledSelect",
    "CompoundResreq",
    "Expr",
    "Fingerprint",
    "HostView",
    "OrderKey",
    "PrimaryResreq",
    "Resreq",
    "Rusage",
    "RusageGroup",
    "SelectMemo",
    "Span",
    "bind_tasks",
    "check",
    "compile_select",
    "fingerprint_text",
    "parse",
    "requirement_for_job",
]
