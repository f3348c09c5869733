"""Golden files: a test's output pinned in tests/data, rewritten on request.

``XCE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_import_*.py`` rewrites every
golden file the tests compare with; otherwise a difference fails with a unified diff.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
UPDATE_VARIABLE = "XCE_UPDATE_GOLDEN"


def updating() -> bool:
    """Whether this run rewrites golden files instead of comparing with them."""
    return os.environ.get(UPDATE_VARIABLE) == "1"


def check_golden(golden: Path, actual: str, *, update: bool | None = None) -> None:
    """``actual`` equals the text of ``golden``, else fail with a unified diff; when
    updating (``update``, default: the environment says so), write ``actual`` instead."""
    if update if update is not None else updating():
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual, encoding="utf-8")
        return
    shown = golden.relative_to(ROOT) if golden.is_relative_to(ROOT) else golden
    command = f"{UPDATE_VARIABLE}=1 .venv/bin/python -m pytest tests/"
    if not golden.exists():
        pytest.fail(f"no golden file {shown}: create it with\n    {command}", pytrace=False)
    expected = golden.read_text(encoding="utf-8")
    if actual != expected:
        diff = difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            fromfile=f"{shown} (golden)",
            tofile=f"{shown} (this run)",
        )
        pytest.fail(
            f"{shown} differs from this run:\n{''.join(diff)}\n"
            f"if the change is intended, rewrite the golden files with\n    {command}",
            pytrace=False,
        )
