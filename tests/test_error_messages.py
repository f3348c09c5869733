"""Error messages stay short and point at the right character (issue 10, Messages)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xce.cluster import load_state
from xce.errors import CONTEXT_WIDTH, InputError, StateError, clip_around


def _caret_char(err: InputError) -> str:
    """The character of the quoted line that the caret points at."""
    shown, caret = err.context().split("\n")
    return shown[caret.index("^")]


@pytest.mark.parametrize("column", [1, 2, 60, 61, 5_000, 9_940, 9_999, 10_000, 10_001])
def test_long_line_is_cut_around_the_column(column: int) -> None:
    """Issue 10 (Unbounded quotes): the whole offending line was quoted (a 50 MB
    one-line JSON made a 101 MB message); now about CONTEXT_WIDTH characters around
    the column, '…' where cut, the caret under the same character as before."""
    text = "".join(chr(ord("a") + i % 26) for i in range(10_000))
    err = InputError("bad", column=column, text=text)
    shown, caret = err.context().split("\n")
    assert len(shown) <= 2 + CONTEXT_WIDTH + 2
    expected = text[column - 1] if column <= len(text) else None
    if expected is not None:
        assert _caret_char(err) == expected
    else:  # just past the end: the caret follows the last character
        assert caret.index("^") == len(shown)
    assert shown.startswith("  …") == (column > CONTEXT_WIDTH // 2 + 1)
    assert shown.endswith("…") == (column - 1 + CONTEXT_WIDTH // 2 < len(text))


def test_short_line_is_quoted_whole() -> None:
    """A short line is quoted whole; a tab is shown as one visible character (the caret
    stays under the right one)."""
    err = InputError("bad", column=4, text="ab\tcd")
    assert err.context() == "  ab\u2409cd\n     ^"


def test_line_breaks_and_controls_in_quoted_text_stay_on_one_line() -> None:
    """issue 10 (fuzzer: requirements with line breaks): a newline, CR, NEL, U+2028, an
    escape or a bidi override in quoted text is shown as one visible character, so the
    quote is one line and the caret is under the offending character."""
    text = "a\nb\rc\x85d\u2028e\x1bf\u202eg"
    err = InputError("bad", column=len(text), text=text)
    quoted, caret = err.context().split("\n")
    assert quoted == "  a\u240ab\u240dc\ufffdd\ufffde\u241bf\ufffdg"
    assert caret.index("^") == quoted.index("g")


def test_clip_around_keeps_index() -> None:
    text = "x" * 50 + "Y" + "z" * 200
    shown, at = clip_around(text, 50, width=20)
    assert shown[at] == "Y"
    assert shown.startswith("…")
    assert shown.endswith("…")
    assert len(shown) == 22


def test_fifty_megabyte_line_makes_a_short_message(tmp_path: Path) -> None:
    """Issue 10 (Unbounded quotes): a huge one-line JSON state with an error near its
    end gives a message of a few hundred characters, the caret on the bad key."""
    hosts = [{"name": f"h{i}", "slots": 4} for i in range(100_000)]
    hosts[90_000]["slotz"] = 1
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"hosts": hosts}))
    with pytest.raises(StateError) as caught:
        load_state(path)
    message = str(caught.value)
    assert len(message) < 600
    assert "hosts[90000].slotz" in message
    shown, caret = caught.value.context().split("\n")
    at = caret.index("^")
    assert shown[at : at + 7] == '"slotz"'


def test_long_key_in_path_is_cut(tmp_path: Path) -> None:
    """Issue 10 (Unbounded quotes): a path holding a megabyte key is cut too."""
    path = tmp_path / "s.json"
    key = "k" * 1_000_000
    path.write_text(json.dumps({"hosts": [{"name": "a", "slots": 1, "resources": {key: "x"}}]}))
    with pytest.raises(StateError) as caught:
        load_state(path)
    assert len(str(caught.value)) < 600
    assert caught.value.path is not None
    assert caught.value.path.startswith('hosts[0].resources["kkk')


WORD = "w" * 100_000


@pytest.mark.parametrize(
    "text",
    [
        f"select[{WORD}>1]",
        f"select[defined({WORD})]",
        f"select['{WORD}' == 1]",
        f"select[x] {WORD}",
        f"rusage[{WORD}=1]",
        f"order[{WORD}]",
        f"same[{WORD}]",
        f"span[{WORD}=1]",
        f"select[{'9' * 400} > 1]",
    ],
    ids=["select", "defined", "string", "syntax", "rusage", "order", "same", "span", "number"],
)
def test_requirement_messages_cut_long_words(text: str) -> None:
    """Issue 10 (Unbounded quotes): a requirement error quoted a 100,000-character word
    in its message (and the whole text under it); both are cut."""
    from xce.cluster.catalog import ResourceCatalog, ResourceDef, ResourceKind
    from xce.resreq import requirement_for_job

    catalog = ResourceCatalog(
        [ResourceDef("x", ResourceKind.NUMERIC), ResourceDef("mem", ResourceKind.CONSUMABLE)]
    )
    with pytest.raises(InputError) as caught:
        requirement_for_job(text, catalog)
    assert len(str(caught.value)) < 600, str(caught.value)[:300]
