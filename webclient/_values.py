"""Values that must never commit: unpaired UTF-16 surrogates and non-finite numbers.

Both can only come from JSON escapes and number syntax, never from the bytes themselves (the UTF-8
decoder refuses encoded surrogates): ``json.loads`` turns ``"\\ud800"`` into a lone surrogate code
point and ``1e999`` into ``inf``; envelopes are parsed leniently, so ``NaN`` / ``Infinity`` can also
arrive inside provider objects (Gemini ``args``, Responses call actions, logprobs from a server that writes
its floats with Python's ``json.dumps``). Neither has a place in a committed answer: a lone surrogate cannot
be encoded as UTF-8 (``replay`` used to crash on it, a browser shows U+FFFD) and JSON has no infinity or
NaN (a strict encoder, ``allow_nan=False`` or Starlette's ``JSONResponse``, refuses the result).

A character outside the Basic Multilingual Plane may legitimately arrive as an escaped pair split
across two deltas (``"\\ud83d"`` in one, ``"\\ude00"`` in the next): each delta then holds one half
and only the joined text holds the pair. So the checks run on joined text, once (a text channel at
the terminal condition, a tool input at its close), and :func:`combine_surrogates` first turns
every adjacent high + low pair into the character it encodes. What is left is unpaired.

A result that does not commit still returns the text accumulated so far (for a caller that shows
what arrived before a cut): :func:`shown_text` combines its pairs too and shows what is left
unpaired as U+FFFD, so that no text a result holds fails to encode (``print`` on a UTF-8 terminal
would raise on a lone surrogate).

The same holds for everything else a result keeps from the provider's JSON: a string taken whole
(a call's name or id, the response id, the model, a signature) cannot hold a faithful half of a pair,
so one with a surrogate is refused as it arrives; an object kept verbatim is checked, as part of the
result that would commit (:func:`value_problem`), only when its event's JSON escaped a surrogate
(:func:`may_hold_surrogate`, one C-level search of the events kept), or when any event held ``NaN``,
``Infinity`` or a number that overflows to ``inf`` (``1e999``: the envelope's scanner refuses those, and the
reference path then reads the event and asks for the check), and a result that does not commit shows it with
U+FFFD and ``null`` (:func:`shown_value`). Provisional deltas never hold a surrogate (:func:`held_back`).

Stages of the ``payload_error`` they cause (see ``_routes/_base.py``): :data:`UNPAIRED_SURROGATE`,
:data:`NON_FINITE_NUMBER`.

Cost: nothing per delta. At the check, an ASCII string is recognised in O(1) (``str.isascii``
reads a flag); other text is searched once by one compiled character class (C speed, no copy
unless a pair has to be combined). A parsed value is serialized once with ``allow_nan=False``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

#: ``payload_error`` stage: a text channel or a tool input holds a surrogate with no partner.
UNPAIRED_SURROGATE = "unpaired_surrogate"
#: ``payload_error`` stage: a tool input, call action, server-tool input or an object kept verbatim holds ``inf``
#: / ``nan`` (``NaN``, ``Infinity`` or a number that overflows, ``1e999``).
NON_FINITE_NUMBER = "non_finite_number"

_SURROGATE = re.compile("[\ud800-\udfff]")
#: ``surrogate_search(text)``: a match at the first surrogate code point of ``text``, else ``None`` (for the
#: per-update check, which tests ``str.isascii`` itself first).
surrogate_search = _SURROGATE.search
#: A JSON escape of a surrogate (``\\ud800`` to ``\\udfff``, either case): the only way one reaches a
#: parsed value. (An escaped backslash before ``u`` matches too, harmlessly: it only asks for a check.)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def parsed_value_encoder(allow_nan: bool) -> Callable[[object], str]:
    """``json.dumps(value, ensure_ascii=False, allow_nan=allow_nan)`` for values parsed from JSON, built
    once: the C encoder ``JSONEncoder.encode`` builds anew on every call (with the keyword arguments,
    ``json.dumps`` builds the ``JSONEncoder`` too), without the cycle check, which a parsed value (a
    tree) never needs; nesting past the recursion limit raises ``RecursionError`` as there.
    ``JSONEncoder.encode`` itself where the interpreter has no C encoder."""
    encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=allow_nan)
    make = json.encoder.c_make_encoder  # type: ignore[attr-defined]
    if make is None:
        return encoder.encode
    chunks = make(None, encoder.default, json.encoder.encode_basestring, None, encoder.key_separator,
                  encoder.item_separator, False, False, allow_nan)
    join = "".join

    def dumps(value: object) -> str:
        return join(chunks(value, 0))

    return dumps


#: What :func:`value_problem` serializes with: exactly ``json.dumps(value, ensure_ascii=False,
#: allow_nan=False)`` on a parsed value.
_ENCODE = parsed_value_encoder(allow_nan=False)


def _pair(match: re.Match[str]) -> str:
    pair = match[0]
    return chr(0x10000 + ((ord(pair[0]) - 0xD800) << 10) + (ord(pair[1]) - 0xDC00))


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds any surrogate code point."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def combine_surrogates(text: str) -> str:
    """``text`` with every high + low surrogate pair replaced by the character it encodes; unpaired
    surrogates stay. Returns ``text`` itself when it holds no surrogate."""
    if not has_surrogate(text):
        return text
    return _PAIR.sub(_pair, text)


def clean_text(text: str) -> str | None:
    """``text`` with its surrogate pairs combined, or ``None`` when an unpaired surrogate remains."""
    if not has_surrogate(text):
        return text
    combined = _PAIR.sub(_pair, text)
    return None if _SURROGATE.search(combined) is not None else combined


def shown_text(text: str) -> str:
    """``text`` as an uncommitted result shows it: surrogate pairs combined, and each surrogate left
    unpaired (half a pair at a cut, or a lone escape) replaced by U+FFFD, as a UTF-8 decoder shows a
    broken character; so the text always encodes. Returns ``text`` itself when it holds no surrogate."""
    if not has_surrogate(text):
        return text
    return _SURROGATE.sub("\ufffd", _PAIR.sub(_pair, text))


def held_back(text: str) -> tuple[str, str]:
    """A provisional delta's text as it is shown, and the half it holds back: a high surrogate that
    ends ``text`` is returned second (its pair's other half may start the buffer's next delta) and the
    rest passes through :func:`shown_text`; so a pair split across two deltas reaches the caller as one
    character and no shown delta holds a surrogate (each encodes as UTF-8 on its own)."""
    if text and "\ud800" <= text[-1] <= "\udbff":
        return shown_text(text[:-1]), text[-1]
    return shown_text(text), ""


def may_hold_surrogate(data: str) -> bool:
    """Whether the JSON text ``data`` escapes a surrogate anywhere (so a value parsed from it may hold
    an unpaired one). Measured on 10 KB of JSON (CPython 3.11): ``"\\\\" in data`` (a ``memchr``) takes
    0.02-0.1 us, and answers for data without a backslash (base64 blobs, unescaped text); the regular
    expression, run only where there is one, 2.4-3.1 us (about 1.1 us per KB on text written as ``\\u``
    escapes throughout); ``"\\\\u" in data`` would take 7.5-11 us (CPython searches a two-character needle
    without ``memchr``)."""
    return "\\" in data and _SURROGATE_ESCAPE.search(data) is not None


def _null(name: str) -> None:
    return None


#: Parses what :func:`shown_value` serialized: ``NaN`` and ``Infinity`` (how ``json.dumps`` writes ``nan``
#: and ``inf``) become ``None``.
_SHOWN_DECODER = json.JSONDecoder(parse_constant=_null)


def shown_value(value: Any) -> Any:
    """A copy of the JSON-able ``value`` (an object kept verbatim) with every string and key in it as
    :func:`shown_text` shows it, so that none holds a surrogate, and every non-finite number as ``None``
    (JSON's ``null``: JSON has no infinity or NaN). Serialized, shown and parsed again (in C, so an object
    nested as deep as the envelope's JSON may be takes no Python recursion); a tuple stays a tuple. (Two keys
    that differ only in their unpaired surrogates become one, the later value kept: this is a display of what
    did not commit.)"""
    shown = _SHOWN_DECODER.decode(shown_text(json.dumps(value, ensure_ascii=False)))
    return tuple(shown) if isinstance(value, tuple) else shown


def value_problem(value: object) -> str | None:
    """The stage that keeps a parsed value (tool arguments, a call's action object) from committing:
    :data:`NON_FINITE_NUMBER` for ``inf`` / ``nan`` anywhere in it, :data:`UNPAIRED_SURROGATE` for a
    lone surrogate in any key or string; else ``None``. Parsed JSON combines escaped pairs itself, so
    every surrogate left in a parsed value is unpaired."""
    try:
        text = _ENCODE(value)
    except ValueError:
        return NON_FINITE_NUMBER
    return UNPAIRED_SURROGATE if has_surrogate(text) else None
