"""The JSON a scheduler printed, read with its errors located (file, line, column)."""

from __future__ import annotations

import json
from typing import Any

from xce.errors import InputError

__all__ = ["parse_json"]


def parse_json(source: str, text: str) -> Any:
    """``text`` (from ``source``) as JSON; InputError at the line and column where it is
    not JSON (a truncated file, another format)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(
            f"not JSON: {err.msg}", source=source, line=err.lineno, column=err.colno
        ) from None
