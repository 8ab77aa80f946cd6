"""Parsing untrusted JSON without letting nesting depth crash the runtime.

``json.loads`` recurses once per nesting level in C. On CPython that ends in ``RecursionError``
(which the session turns into ``protocol_error``), but inside Pyodide the WebAssembly stack runs
out first: ``[`` x 8000 kills the whole runtime with "Maximum call stack size exceeded" (measured
with Pyodide 314.0.7 / Python 3.14, where 4000 levels still parsed). A single ``data:`` line from
a broken gateway must not be able to do that, so every envelope and every tool input passes
through :func:`loads`, which refuses nesting deeper than :data:`MAX_JSON_DEPTH` first.

The guard costs nothing for ordinary payloads: a text shorter than the limit cannot nest deeper
than it, and a longer one is only measured (strings removed, then a C-level running sum over
the brackets) when it holds more openers than the limit.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from ._limits import MAX_JSON_DEPTH

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_loads = json.loads


def too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``text`` (as JSON) nests more than ``limit`` arrays/objects deep."""
    if len(text) <= limit or text.count("[") + text.count("{") <= limit:
        return False
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > limit


def loads(text: str) -> Any:
    """``json.loads`` that raises ``ValueError`` instead of recursing past :data:`MAX_JSON_DEPTH`."""
    if len(text) > MAX_JSON_DEPTH and too_deep(text):
        raise ValueError("JSON nesting too deep")
    return _loads(text)


def loads_strict(text: str) -> Any:
    """Like :func:`loads`, also refusing the non-standard constants ``NaN`` and ``Infinity``."""
    if len(text) > MAX_JSON_DEPTH and too_deep(text):
        raise ValueError("JSON nesting too deep")
    return _loads(text, parse_constant=_refuse_constant)


def _refuse_constant(name: str) -> Any:
    raise ValueError("non-standard JSON constant")
