"""Writing a schema as TOML, with comments (the draft's ``# DATA-DERIVED`` marks).

The writer handles exactly the values a schema holds (strings, integers, floats, booleans and
flat lists of them, in tables ``[file]``, ``[target]`` and ``[columns.NAME]``); the output is
read back by :mod:`tomllib` to the same dict (tested).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["dumps", "toml_key", "toml_value"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f",
            "\r": "\\r"}


def _string(text: str) -> str:
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_key(key: str) -> str:
    """A key, bare when TOML allows it, else quoted."""
    return key if _BARE_KEY.match(key) else _string(key)


def toml_value(value: Any) -> str:
    """A scalar or flat list as a TOML value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(float(value))  # a numpy.float64 is a float whose repr is not TOML
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write a {type(value).__name__} as a TOML value")


def _table(lines: list[str], name: str | None, path: str, body: Mapping[str, Any],
           comments: Mapping[str, str]) -> None:
    """Write ``[name]`` (``None``: the top level) and its keys; ``path`` keys the comments."""
    if name is not None:
        if comments.get(path):
            lines.extend(f"# {c}" if c else "#" for c in comments[path].splitlines())
        lines.append(f"[{name}]")
    for key, value in body.items():
        if value is None or isinstance(value, Mapping):
            continue
        line = f"{toml_key(key)} = {toml_value(value)}"
        note = comments.get(f"{path}.{key}" if path else key)
        lines.append(f"{line}  # {note}" if note else line)
    lines.append("")


def dumps(data: Mapping[str, Any], *, comments: Mapping[str, str] | None = None,
          header: str = "") -> str:
    """TOML text of a schema dict.

    ``comments`` maps a table (``"columns.age"``, with the column name as it is, unquoted) to
    a comment written above it, and a key (``"columns.age.bounds"``, ``"row_norm_bound"``) to
    a comment at the end of its line. ``None`` values are left out. Column names are quoted
    when they are not bare keys.
    """
    notes = dict(comments or {})
    lines = [f"# {h}" if h else "#" for h in header.splitlines()]
    if lines:
        lines.append("")
    _table(lines, None, "", data, notes)
    for section in ("file", "target"):
        body = data.get(section)
        if isinstance(body, Mapping):
            _table(lines, section, section, body, notes)
    for col, body in (data.get("columns") or {}).items():
        _table(lines, f"columns.{toml_key(col)}", f"columns.{col}", body, notes)
    return "\n".join(lines).rstrip("\n") + "\n"
