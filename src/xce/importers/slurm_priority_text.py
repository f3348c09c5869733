"""What Slurm prints of its multifactor priority's inputs, as text (22.05 has no JSON
of them): each reader returns plain values, and an InputError at ``file:line:column``
for text it cannot read.

- ``scontrol show config``: the settings (``PriorityWeightAge   = 1000``);
- ``sshare -a -l -P``: the association tree (an account's depth is its name's leading
  spaces; a user row names its account), raw shares and raw usage (an integer: sshare
  truncates it);
- ``scontrol show assoc_mgr flags=assoc``: the same associations with their raw usage
  to two decimals, their ``Priority`` and parent accounts;
- ``sacctmgr show qos -P format=name,priority``: each QOS's priority;
- ``PriorityLastDecayRan=SECONDS``: when slurmctld last recalculated priorities, the
  first of the two big-endian 64-bit times in ``StateSaveLocation/priority_last_decay_ran``
  (``od -An -N8 -tu8 --endian=big FILE``; docs/import.md);
- ``sprio -l``: each listed job's AGE column (how old sprio's factors are).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from xce.errors import InputError

__all__ = [
    "USE_PARENT",
    "AssocRow",
    "is_assoc_mgr_text",
    "is_config_text",
    "is_last_decay_text",
    "is_priority_input_text",
    "is_qos_text",
    "is_sshare_text",
    "read_assoc_mgr",
    "read_config",
    "read_job_factors",
    "read_last_decay",
    "read_qos",
    "read_sprio_ages",
    "read_sshare",
]

USE_PARENT = "parent"
"""An association's shares when it takes its parent's (sacctmgr ``Fairshare=parent``)."""

_SHARES_USE_PARENT = 0x7FFFFFFF  # SLURMDB_FS_USE_PARENT, as assoc_mgr prints it
_CONFIG_HEAD = "Configuration data as of"
_ASSOC_MGR_HEAD = "Current Association Manager state"
_LAST_DECAY = "PriorityLastDecayRan="
_CONFIG_LINE = re.compile(r"^(\w+)\s*=\s?(.*?)\s*$")
_TOKEN = re.compile(r"([\w/]+)=(\S*)")
_NAME_ID = re.compile(r"^(.*?)(?:\((\d+)\))?$")
MAX_USAGE = 1e15  # a state file's largest number


@dataclass(frozen=True, slots=True)
class AssocRow:
    """One association as sshare or assoc_mgr prints it: an account (``user`` None)
    under ``parent`` (None: root's own row), or a user under ``account``; shares
    (a number, or :data:`USE_PARENT`), raw usage, priority (assoc_mgr only), the
    partition of a partition association, and the line it was read at."""

    account: str
    user: str | None
    parent: str | None
    shares: float | str
    usage: float
    line: int
    priority: int | None = None
    partition: str = ""
    fairshare: float | None = None  # sshare's FairShare (a user's factor at the last pass)

    @property
    def key(self) -> tuple[str, str | None, str]:
        return (self.account, self.user, self.partition)


def _first_line(text: str) -> str:
    return text.lstrip().split("\n", 1)[0].strip()


def is_config_text(text: str) -> bool:
    """Whether ``text`` is what ``scontrol show config`` printed."""
    return text.lstrip().startswith(_CONFIG_HEAD)


def is_sshare_text(text: str) -> bool:
    """Whether ``text`` is ``sshare -P`` (``-a -l`` or not): its header row."""
    head = _first_line(text).split("|")
    return head[:2] == ["Account", "User"] and "RawShares" in head


def is_assoc_mgr_text(text: str) -> bool:
    """Whether ``text`` is what ``scontrol show assoc_mgr`` printed."""
    return text.lstrip().startswith(_ASSOC_MGR_HEAD)


def is_qos_text(text: str) -> bool:
    """Whether ``text`` is ``sacctmgr -P show qos`` with a Name and a Priority column."""
    head = _first_line(text).split("|")
    return len(head) > 1 and "Name" in head and "Priority" in head


def is_last_decay_text(text: str) -> bool:
    """Whether ``text`` is ``PriorityLastDecayRan=SECONDS``."""
    return text.lstrip().startswith(_LAST_DECAY)


def is_priority_input_text(text: str) -> bool:
    """Whether ``text`` is one of the texts this module reads."""
    return any(
        f(text)
        for f in (is_config_text, is_sshare_text, is_assoc_mgr_text, is_qos_text,
                  is_last_decay_text)
    )  # fmt: skip


def _bad(
    message: str, source: str, number: int, line: str, at: str | int | None = None
) -> InputError:
    """An error at ``line`` (number ``number``); ``at``: the text it points at (its
    first occurrence), or the column itself."""
    column = at if isinstance(at, int) else line.find(at) + 1 if at else 0
    return InputError(message, source=source, line=number, column=column or None, text=line)


def _column(cells: list[str], i: int) -> int:
    """The 1-based column of field ``i`` of a ``|``-separated line."""
    return sum(len(c) for c in cells[:i]) + i + 1


def _extra(cells: list[str], expected: int) -> int:
    """Where a line of ``cells`` goes wrong for ``expected`` fields: at the first field
    too many, else at its end."""
    return _column(cells, min(expected, len(cells))) if len(cells) > expected else (
        sum(len(c) for c in cells) + len(cells))  # fmt: skip


# -- scontrol show config ---------------------------------------------------------------


def read_config(source: str, text: str) -> dict[str, tuple[str, int, str]]:
    """``scontrol show config``'s settings: name -> (value, line number, line). A
    value ``(null)`` is read as empty; lines that are no ``Name = value`` (section
    titles, ``Slurmctld(primary) at host is UP``) are skipped."""
    out: dict[str, tuple[str, int, str]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        match = _CONFIG_LINE.match(line)
        if match is None or line.startswith(_CONFIG_HEAD):
            continue
        name, value = match.groups()
        out.setdefault(name, ("" if value == "(null)" else value, number, line))
    if not out:
        raise InputError("no Name = value line in this scontrol show config text", source=source)
    return out


# -- sshare -P ----------------------------------------------------------------------------


def read_sshare(source: str, text: str) -> list[AssocRow]:
    """The associations of ``sshare -a -l -P``, in its order (depth first, each
    account's users first): an account's parent is the account one level up."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip())
    head = lines[start].split("|")
    at = {name: i for i, name in enumerate(head)}
    for need in ("Account", "User", "RawShares", "RawUsage"):
        if need not in at:
            raise _bad(f"sshare -P without a {need} column", source, start + 1, lines[start])
    out: list[AssocRow] = []
    path: list[str] = []  # the accounts above the current row, by depth
    for number, line in enumerate(lines[start + 1 :], start + 2):
        if not line.strip():
            continue
        cells = line.split("|")
        if len(cells) != len(head):
            raise _bad(f"{len(cells)} fields where sshare's header has {len(head)}", source,
                       number, line, _extra(cells, len(head)))  # fmt: skip
        out.append(_sshare_row(cells, at, path, source, number, line))
    if not out:
        raise InputError("sshare -P text without associations", source=source)
    return out


def _sshare_row(
    cells: list[str], at: dict[str, int], path: list[str], source: str, number: int, line: str
) -> AssocRow:
    raw_account = cells[at["Account"]]
    account = raw_account.strip()
    depth = len(raw_account) - len(raw_account.lstrip(" "))
    user = cells[at["User"]].strip() or None
    if not account or not re.fullmatch(r"[^\s|]+", account):
        raise _bad(f"an association without an account name: {raw_account!r}", source,
                   number, line)  # fmt: skip
    partition = cells[at["Partition"]].strip() if "Partition" in at else ""
    shares = _shares(cells[at["RawShares"]], source, number, line,
                     _column(cells, at["RawShares"]))  # fmt: skip
    usage = _usage(cells[at["RawUsage"]], source, number, line, _column(cells, at["RawUsage"]))
    where = _column(cells, at["Account"])
    if user is not None:  # a user row: its account is the one at depth - 1
        if depth < 1 or depth > len(path) or path[depth - 1] != account:
            raise _bad(f"user {user!r} under account {account!r}, which is not the account "
                       "above it", source, number, line, where)  # fmt: skip
        fairshare = None
        if "FairShare" in at:
            i = at["FairShare"]
            fairshare = _fraction(cells[i], source, number, line, _column(cells, i))
        return AssocRow(account, user, None, shares, usage, number, partition=partition,
                        fairshare=fairshare)  # fmt: skip
    if depth > len(path) or (depth == 0 and path):
        raise _bad(f"account {account!r} at depth {depth} under no account of depth "
                   f"{depth - 1}", source, number, line, where)  # fmt: skip
    del path[depth:]
    parent = path[-1] if path else None
    path.append(account)
    return AssocRow(account, None, parent, shares, usage, number, partition=partition)


def _shares(text: str, source: str, number: int, line: str, column: int) -> float | str:
    value = text.strip()
    if value == "":
        return 1.0  # root's own row: no shares of its own
    if value.lower() == USE_PARENT:
        return USE_PARENT
    if not value.isdigit():
        raise _bad(f"shares {value!r} are not a whole number or 'parent'", source, number,
                   line, column)  # fmt: skip
    shares = int(value)
    if shares == _SHARES_USE_PARENT:
        return USE_PARENT
    if shares > 0xFFFFFFFF:
        raise _bad(f"shares {value} are beyond Slurm's range", source, number, line, column)
    return float(shares)


def _fraction(text: str, source: str, number: int, line: str, column: int) -> float | None:
    """sshare's FairShare of a user (blank: none printed)."""
    if not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 1:
        raise _bad(f"FairShare {text.strip()!r} is not a number from 0 to 1", source, number,
                   line, column)  # fmt: skip
    return value


def _usage(text: str, source: str, number: int, line: str, column: int) -> float:
    try:
        usage = float(text.strip())
    except ValueError:
        raise _bad(f"raw usage {text.strip()!r} is not a number", source, number, line,
                   column) from None  # fmt: skip
    if not math.isfinite(usage) or not 0 <= usage <= MAX_USAGE:
        raise _bad(f"raw usage {text.strip()} is out of range (0 to 1e15)", source, number,
                   line, column)  # fmt: skip
    return usage


# -- scontrol show assoc_mgr flags=assoc ----------------------------------------------------


def read_assoc_mgr(source: str, text: str) -> list[AssocRow]:
    """The associations of ``scontrol show assoc_mgr flags=assoc`` (or ``-o``), in its
    order (each account's users first, then its accounts, by name)."""
    out: list[AssocRow] = []
    fields: dict[str, tuple[str, int, str]] | None = None
    section = ""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.endswith("Records") and "=" not in stripped:
            section = stripped
            continue
        if section != "Association Records":
            continue
        for key, value in _TOKEN.findall(line):
            if key == "ClusterName":
                if fields is not None:
                    out.append(_assoc_mgr_row(fields, source))
                fields = {}
            if fields is None:
                raise _bad(f"{key}= before any ClusterName=", source, number, line, f"{key}=")
            fields.setdefault(key, (value, number, line))
    if fields is not None:
        out.append(_assoc_mgr_row(fields, source))
    if not out:
        raise InputError(
            "no association records (scontrol show assoc_mgr flags=assoc)", source=source
        )
    return out


def _assoc_mgr_row(fields: dict[str, tuple[str, int, str]], source: str) -> AssocRow:
    def get(key: str) -> tuple[str, int, str]:
        if key not in fields:
            _, number, line = fields["ClusterName"]
            raise _bad(f"an association record without {key}=", source, number, line)
        return fields[key]

    account, number, line = get("Account")
    if not account:
        raise _bad("an association record without an account", source, number, line, "Account=")
    user_text = _NAME_ID.match(get("UserName")[0])
    user = user_text.group(1) if user_text and user_text.group(1) else None
    key = "SharesRaw/Norm/Level/Factor"
    shares_text, n, at_line = get(key)
    shares = _shares(shares_text.split("/", 1)[0], source, n, at_line,
                     at_line.find(f"{key}=") + len(key) + 2)  # fmt: skip
    key = "UsageRaw/Norm/Efctv"
    usage_text, n, at_line = get(key)
    usage = _usage(usage_text.split("/", 1)[0], source, n, at_line,
                   at_line.find(f"{key}=") + len(key) + 2)  # fmt: skip
    priority_text, n, at_line = get("Priority")
    if not priority_text.isdigit() or int(priority_text) > 0xFFFFFFFF:
        raise _bad(f"Priority {priority_text!r} is not a whole number", source, n, at_line,
                   "Priority=")  # fmt: skip
    parent_match = _NAME_ID.match(fields.get("ParentAccount", ("", 0, ""))[0])
    parent = parent_match.group(1) if parent_match and parent_match.group(1) else None
    partition = fields.get("Partition", ("", 0, ""))[0]
    return AssocRow(account, user, None if user else parent, shares, usage, number,
                    int(priority_text), partition)  # fmt: skip


# -- sacctmgr show qos -P -------------------------------------------------------------------


def read_qos(source: str, text: str) -> dict[str, int]:
    """Each QOS's priority from ``sacctmgr -P show qos`` (any columns with Name and
    Priority)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip())
    head = lines[start].split("|")
    name_at, prio_at = head.index("Name"), head.index("Priority")
    out: dict[str, int] = {}
    for number, line in enumerate(lines[start + 1 :], start + 2):
        if not line.strip():
            continue
        cells = line.split("|")
        if len(cells) != len(head):
            raise _bad(f"{len(cells)} fields where the header has {len(head)}", source,
                       number, line, _extra(cells, len(head)))  # fmt: skip
        name, priority = cells[name_at].strip(), cells[prio_at].strip()
        if not name:
            raise _bad("a QOS without a name", source, number, line)
        if not priority.isdigit() or int(priority) > 0xFFFFFFFF:
            raise _bad(f"QOS {name!r}: priority {priority!r} is not a whole number", source,
                       number, line, _column(cells, prio_at))  # fmt: skip
        if name in out:
            raise _bad(f"QOS {name!r} listed twice", source, number, line)
        out[name] = int(priority)
    return out


# -- PriorityLastDecayRan=SECONDS -----------------------------------------------------------


def read_last_decay(source: str, text: str) -> float:
    """The time of slurmctld's last priority recalculation (Unix seconds)."""
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith(_LAST_DECAY):
            value = line.split("=", 1)[1].strip()
            if not value.isdigit() or not 0 < int(value) < 10**11:
                raise _bad(f"{_LAST_DECAY}{value!r}: not a time in Unix seconds", source,
                           number, line, "=")  # fmt: skip
            return float(value)
    raise InputError(f"no {_LAST_DECAY} line", source=source)


# -- scontrol show partition: PriorityJobFactor ---------------------------------------------


def read_job_factors(source: str, text: str) -> dict[str, int]:
    """Each partition's PriorityJobFactor in ``scontrol show partition`` text (the
    multifactor partition factor; the text's other fields: :mod:`.slurm_text`)."""
    out: dict[str, int] = {}
    name: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        for key, value in _TOKEN.findall(line):
            if key == "PartitionName":
                name = value
            elif key == "PriorityJobFactor" and name is not None:
                if not value.isdigit() or int(value) > 0xFFFF:
                    raise _bad(f"PriorityJobFactor {value!r} is not a whole number (0 to "
                               "65535)", source, number, line, f"{key}=")  # fmt: skip
                out[name] = int(value)
    return out


# -- sprio -l: AGE ------------------------------------------------------------------------


def read_sprio_ages(source: str, text: str) -> dict[tuple[str, str], int]:
    """(job id, partition) -> sprio's AGE (weighted, rounded) where the text has an
    AGE column; the rows were checked by ``read_priorities``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip())
    head = lines[start].split()
    if "AGE" not in head:
        return {}
    at = head.index("AGE")
    out: dict[tuple[str, str], int] = {}
    for number, line in enumerate(lines[start + 1 :], start + 2):
        cells = line.split()
        if not cells:
            continue
        try:
            age = int(cells[at])
        except (IndexError, ValueError):
            raise _bad("sprio row without a whole AGE", source, number, line) from None
        out[(cells[0], cells[1])] = age
    return out
