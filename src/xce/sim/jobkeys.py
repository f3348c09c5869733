"""A jobs file's keys beyond a state file's jobs: ``failed`` (issue 28).

A jobs file is the ``jobs`` list of a state file, read by the state loader, which refuses
keys it does not know (a typo is an error). ``failed: true`` says a job of a replay ends
unsuccessfully (``afterok`` and ``afternotok`` dependencies read it); no state file has
it. So it is taken out of the text before the state loader reads it: each
``failed: ...`` pair (and its comma, in a flow mapping) is overwritten with spaces, which
keeps every other line and column where it was, so the loader's errors still point at
the file as written. Only a text that contains the word is read twice (by the streaming
YAML reader of :mod:`xce.cluster.yaml_stream`, which reads JSON as well); a text it
cannot read is left to the state loader, whose error is the one to show.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from xce.cluster.yaml_stream import TooDeep, YamlTree, parse
from xce.errors import InputError

__all__ = [
    "FAILED",
    "as_written",
    "expected_keys",
    "take_failed",
    "take_failed_item",
    "with_expected_keys",
]

FAILED = "failed"
_JOB_KEYS = "; expected one of: id, "  # how the state loader lists a job's keys


def expected_keys(message: str) -> str:
    """A state loader's message about an unknown key of a job, with the keys a jobs
    file has beyond a state file's (``failed``) among those it expects."""
    if message.startswith("unknown key") and _JOB_KEYS in message:
        return f"{message}, {FAILED}"
    return message


def with_expected_keys(err: InputError) -> InputError:
    """``err``, or a copy of it whose message is :func:`expected_keys`'s."""
    message = expected_keys(err.message)
    if message == err.message:
        return err
    return _copy(err, message, err.text)


def take_failed(text: str, source: str) -> tuple[str, dict[int, bool]]:
    """``text`` without its jobs' ``failed`` keys, and the value of each by job index."""
    if FAILED not in text:
        return text, {}
    try:
        parsed = parse(text)
    except (yaml.YAMLError, TooDeep, RecursionError, ValueError, OverflowError):
        return text, {}  # the state loader says what is wrong with it
    if parsed.problems or parsed.construct_error is not None:
        return text, {}
    data = parsed.data
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, list):
        return text, {}
    wanted = [i for i, e in enumerate(jobs) if isinstance(e, dict) and FAILED in e]
    if not wanted:
        return text, {}
    tree = YamlTree(text, parsed)
    tree.prefetch([("jobs", i, FAILED) for i in wanted])
    chars = list(text)
    values: dict[int, bool] = {}
    for i in wanted:
        key, value, mapping = _nodes(tree, i, source)
        values[i] = _boolean(jobs[i][FAILED], key, source, tree, i)
        _blank(chars, text, key, value, mapping)
    return "".join(chars), values


def as_written(err: InputError, original: str, blanked: str) -> InputError:
    """``err`` (found in the ``blanked`` text) showing its line as the file has it."""
    if original is blanked or err.line is None or err.text is None:
        return err
    lines = blanked.split("\n")
    if not 0 < err.line <= len(lines) or lines[err.line - 1].rstrip("\r") != err.text:
        return err  # it shows a string of the job (a requirement), not the line
    shown = original.split("\n")[err.line - 1].rstrip("\r")
    return _copy(err, err.message, shown)


def _copy(err: InputError, message: str, text: str | None) -> InputError:
    """``err`` (of its own type) with ``message`` and ``text``."""
    other = type(err).__new__(type(err))
    InputError.__init__(
        other, message, source=err.source, path=err.path, line=err.line,
        column=err.column, text=text,
    )  # fmt: skip
    return other


def take_failed_item(item: object, source: str, line: int, text: str) -> tuple[object, bool]:
    """One JSONL job (parsed): without its ``failed`` key, and that key's value."""
    if not isinstance(item, Mapping) or FAILED not in item:
        return item, False
    rest = {k: v for k, v in item.items() if k != FAILED}
    value = item[FAILED]
    if not isinstance(value, bool):
        column = text.find(f'"{FAILED}"') + 1 or None
        raise InputError(
            f"failed must be true or false, not {value!r}",
            source=source,
            path="job.failed",
            line=line,
            column=column,
            text=text,
        )
    return rest, value


def _nodes(tree: YamlTree, i: int, source: str) -> tuple[yaml.Node, yaml.Node, yaml.Node]:
    """The key node, value node and job mapping node of job ``i``'s ``failed``."""
    key, exact_key = tree.find(("jobs", i, FAILED), at_key=True)
    value, exact_value = tree.find(("jobs", i, FAILED), at_key=False)
    mapping, _ = tree.find(("jobs", i), at_key=False)
    if not (exact_key and exact_value) or key is None or value is None or mapping is None:
        line = mapping.start_mark.line + 1 if mapping is not None else None
        raise InputError(
            "failed must be written in the job itself (not merged from an anchor)",
            source=source,
            path=f"jobs[{i}].failed",
            line=line,
        )
    return key, value, mapping


def _boolean(value: Any, key: yaml.Node, source: str, tree: YamlTree, i: int) -> bool:
    if isinstance(value, bool):
        return value
    line = key.start_mark.line + 1
    raise InputError(
        f"failed must be true or false, not {value!r}",
        source=source,
        path=f"jobs[{i}].failed",
        line=line,
        column=key.start_mark.column + 1,
        text=tree.line(line),
    )


def _blank(
    chars: list[str], text: str, key: yaml.Node, value: yaml.Node, mapping: yaml.Node
) -> None:
    """Overwrite the pair (and, in a flow mapping, one comma next to it) with spaces,
    line breaks kept."""
    start, end = key.start_mark.index, value.end_mark.index
    if not text[start:end].lstrip("\"'").startswith(FAILED):
        raise InputError("failed: could not take the key out of the text (write it plainly)")
    if getattr(mapping, "flow_style", False):
        after = _skip_space(text, end)
        if after < len(text) and text[after] == ",":
            end = after + 1
        else:
            before = _skip_space_back(text, start)
            if before > 0 and text[before - 1] == ",":
                start = before - 1
    for k in range(start, end):
        if chars[k] not in "\r\n\x85\u2028\u2029":
            chars[k] = " "


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _skip_space_back(text: str, at: int) -> int:
    while at > 0 and text[at - 1] in " \t\r\n":
        at -= 1
    return at
