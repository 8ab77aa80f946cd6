"""Parsing untrusted JSON without letting nesting depth crash the runtime.

``json.loads`` recurses once per nesting level in C. On CPython that ends in ``RecursionError``
(which the session turns into ``protocol_error``), but inside Pyodide the WebAssembly stack runs
out first: ``[`` x 8000 kills the whole runtime with "Maximum call stack size exceeded" (measured
with Pyodide 314.0.7 / Python 3.14, where 4000 levels still parsed). A single ``data:`` line from
a broken gateway must not be able to do that, so every envelope and every tool input passes
through :func:`loads`, which refuses nesting deeper than :data:`MAX_JSON_DEPTH` first.

The guard costs nothing for ordinary payloads: a text shorter than the limit cannot nest deeper
than it, and a longer one is only measured when it holds more openers (``[`` and ``{``, strings
included) than the limit. :func:`more_openers_than` counts them exactly: below
:data:`_COUNT_BELOW` characters with ``str.count`` (a plain loop, about 0.25 ns per character and
bracket); a longer text, which is usually one long string (a fetched page, an image, an encrypted
blob) with few brackets around it, first with ``str.find`` (a ``memchr`` search: about 0.01 ns per
character of ASCII text, 0.2-0.3 on CJK text, whose two-byte characters can share a byte with an
opener; plus about 100 ns per opener found), giving up for ``str.count`` once it has found more than
one opener per 512 characters. Measured against counting alone: 0.1-0.4x on long texts with few
openers, at most 1.4x on a text just denser than that, 1.1x on random CJK text and 2.5x on text
built so that every character shares a byte with an opener; linear in every case.

The measurement is linear in the text on every input. It needs to know which brackets are inside
strings, and it finds out in a fixed number of C-level passes, none of which can look at a
character twice:

1. ``str.replace`` drops every escape pair: first ``\\\\`` (a run of backslashes pairs up from
   its left end, exactly as JSON reads it), then ``\\"``, the only escape that could end a string
   early. Replacing a 2-character needle is one forward scan.
2. ``str.split('"')`` on the result: what lies outside strings is every other piece.
3. One regular expression that is a single negated character class, ``[^\\[\\]{}]+``, removes the
   rest: each match is a maximal run, so no character is tried twice and nothing can backtrack.
4. A running sum over the brackets that remain.

A regular expression that matches a whole JSON string (as this module once used) is quadratic on
``["\"\"\"...`` with no closing quote: every ``"`` starts a new attempt that scans to the end.
The passes above never restart. Where the text is not valid JSON (a backslash or quote outside a
string), the scan may count more depth than ``json.loads`` would reach before failing, which only
turns one ``ValueError`` into another; it never counts less, since up to the first error it reads
the text exactly as JSON does. :func:`max_depth` also returns the characters it handled, which
the tests use to prove the bound.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from ._limits import MAX_JSON_DEPTH

_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_loads = json.loads


def max_depth(text: str) -> tuple[int, int]:
    """How deep ``text``, read as JSON, nests arrays and objects (outside strings), and how many
    characters the passes handled (at most six per character of ``text``)."""
    plain = text.replace("\\\\", "").replace('\\"', "")
    outside = "".join(plain.split('"')[::2])
    brackets = _NOT_BRACKET.sub("", outside)
    work = 2 * len(text) + 2 * len(plain) + len(outside) + len(brackets)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0), work


#: Texts shorter than this are counted with ``str.count`` alone (see the module docstring).
_COUNT_BELOW = 4096
#: ``str.find`` looks for at most one opener per ``2 ** _FIND_SHIFT`` characters before counting.
_FIND_SHIFT = 9


def more_openers_than(text: str, limit: int) -> bool:
    """Whether ``text`` holds more than ``limit`` openers, ``[`` and ``{`` together, anywhere (strings
    included): nesting deeper than ``limit`` needs that many. Exact, whichever way it counts."""
    if len(text) < _COUNT_BELOW:
        return text.count("[") + text.count("{") > limit
    budget = min(len(text) >> _FIND_SHIFT, limit)
    found = 0
    find = text.find
    for opener in "[{":
        at = find(opener)
        while at >= 0:
            found += 1
            if found > budget:  # a dense text: count it instead
                return found > limit or text.count("[") + text.count("{") > limit
            at = find(opener, at + 1)
    return False  # found <= budget <= limit


def too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``text`` (as JSON) nests more than ``limit`` arrays/objects deep."""
    return max_depth(text)[0] > limit


def _refuse_deep(text: str) -> None:
    # A text can only nest as deep as it has openers, so most never need measuring.
    if len(text) > MAX_JSON_DEPTH and more_openers_than(text, MAX_JSON_DEPTH) and too_deep(text):
        raise ValueError("JSON nesting too deep")


def loads(text: str) -> Any:
    """``json.loads`` that raises ``ValueError`` instead of recursing past :data:`MAX_JSON_DEPTH`."""
    _refuse_deep(text)
    return _loads(text)


def loads_strict(text: str) -> Any:
    """Like :func:`loads`, also refusing the non-standard constants ``NaN`` and ``Infinity``.

    Exactly ``json.loads(text, parse_constant=...)``: that call builds a new ``JSONDecoder`` every
    time (any keyword argument does), which costs about as much as parsing a short tool input, so
    the one decoder is built once (:data:`_STRICT_DECODER`; a decoder keeps no state between
    calls) and ``json.loads``'s own check for a leading byte order mark is repeated here."""
    _refuse_deep(text)
    if text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    # The scanner ``decode`` ends in, called directly: a text it takes whole (no surrounding whitespace)
    # is its value; anything else (whitespace, or nothing to take at 0) goes to ``decode``, which
    # decides. An error inside the text is the one ``decode`` would raise: it starts at 0 either way.
    try:
        value, end = strict_scan(text, 0)
    except StopIteration:
        return _STRICT_DECODER.decode(text)
    if end != len(text):
        return _STRICT_DECODER.decode(text)
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError("non-standard JSON constant")


_INF = float("inf")


def _finite_float(text: str) -> float:
    """``parse_float`` of :data:`_ENVELOPE_DECODER`: ``float(text)``, refusing a number too large for a float
    (``1e999``, ``-1e999``, 400 digits before a fraction), which ``json.loads`` turns into ``inf`` / ``-inf``."""
    value = float(text)
    if value == _INF or value == -_INF:
        raise ValueError("number out of a float's range")
    return value


#: The decoder :func:`loads_strict` uses: ``json.loads``'s defaults but for ``parse_constant``.
_STRICT_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
#: ``strict_scan(text, 0) -> (value, end)``: the scanner ``json.loads`` ends in, but raising ``ValueError`` at
#: ``NaN``, ``Infinity`` and ``-Infinity`` (``parse_constant`` is called only there: no cost on other texts).
strict_scan: Any = _STRICT_DECODER.scan_once  # type: ignore[attr-defined]

#: The decoder of the envelope step: the strict decoder that also refuses a number that overflows to ``inf``
#: (``parse_float`` is called only for numbers with a fraction or an exponent, about 0.1 us each; measured on
#: the recordings in ``../shared/fixtures``, 1,208 such numbers in 3,085 events: +0.5-0.9% on their parsing).
_ENVELOPE_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)
#: ``envelope_scan(text, 0) -> (value, end)``: :data:`strict_scan`, also raising ``ValueError`` at a number that
#: overflows a float. What it refuses, ``json.loads`` reads as ``NaN`` or ``inf``: a non-finite number.
envelope_scan: Any = _ENVELOPE_DECODER.scan_once  # type: ignore[attr-defined]


def holds_non_finite(text: str) -> bool:
    """Whether ``text``, a text :func:`loads` reads, holds a number that ``json.loads`` reads as non-finite,
    outside its strings: ``NaN``, ``Infinity``, ``-Infinity``, or a number that overflows (``1e999``). Exactly
    when the envelope decoder, the same parser but for those, refuses it."""
    try:
        _ENVELOPE_DECODER.decode(text)
    except ValueError:
        return True
    return False
