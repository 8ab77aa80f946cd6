"""Mutations of recorded SSE streams, for the fuzzer in ``tests/test_fuzz.py``.

Every mutation is a function ``(rng, data, pool) -> bytes`` registered in :data:`MUTATIONS` under
its name; ``pool`` is every recording's bytes (for splices). :func:`mutate` applies one to three
of them and returns the result with the names applied, so a failure can say what was done.

Byte mutations (of the whole stream, as a transport could deliver it)::

    flip_bits      a few bits flipped at random offsets
    nul            NUL bytes inserted or written over bytes
    bad_utf8       an invalid UTF-8 sequence inserted (lone continuation, overlong, surrogate,
                   above U+10FFFF, a cut multi-byte character)
    line_endings   LF rewritten as CRLF or CR (all of them, or each at random), CRLF as LF, a
                   lone CR inserted
    splice         this stream's head joined to another recording's tail (any route), at a
                   byte or at an event boundary
    truncate       cut anywhere
    dup_range      a byte range repeated
    field_line     an SSE line inserted at a line start (event: error, id:, retry:, a comment,
                   data: [DONE], a bare field name, a blank line ...)

Event mutations (of the event sequence)::

    repeat_event   an event (the first one, a start, half the time) repeated later
    drop_event     an event removed
    swap_events    two neighbouring events exchanged
    seq_gap        one ``sequence_number`` moved (skipped, repeated, gone, not an int)
    foreign_event  an event of another recording inserted

Payload mutations (structure-aware, of one event's JSON ``data``; the event's other lines are
kept)::

    wrong_type     a value anywhere in the tree replaced by a value of another type
    drop_key       a key removed
    unknown_key    a key nobody sends added
    retag          a ``type`` (or ``object``) value replaced by an unknown one or by another
                   type the recordings use
    number         a number or an index field (index, output_index, sequence_number ...) made
                   huge, negative, fractional, non-finite, or a digit string past ``int()``'s limit
    deep           a value replaced by arrays or objects nested around the depth limit (511 to
                   2000 levels)
    dup_key        a key written twice with different values
    odd_string     a string replaced by an empty, long, escaped, lone-surrogate, NUL or
                   line-separator string
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from typing import Any

Pool = list[bytes]
Mutation = Callable[[random.Random, bytes, Pool], bytes]

MUTATIONS: dict[str, Mutation] = {}


def mutation(fn: Mutation) -> Mutation:
    MUTATIONS[fn.__name__] = fn
    return fn


# -- framing ----------------------------------------------------------------------------------

_BLANK = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_events(data: bytes) -> list[bytes]:
    """The stream cut after each blank line (each piece keeps its terminators; a last piece
    without a blank line is kept as it is)."""
    out, pos = [], 0
    for m in _BLANK.finditer(data):
        out.append(data[pos : m.end()])
        pos = m.end()
    if pos < len(data):
        out.append(data[pos:])
    return out


def _lines(event: bytes) -> list[bytes]:
    return _LINE.findall(event)


def _payload(event: bytes) -> tuple[int, bytes, bytes] | None:
    """``(line number, JSON text, line terminator)`` of the event's single ``data:`` line, when it
    holds a JSON object or array."""
    lines = _lines(event)
    data_lines = [i for i, line in enumerate(lines) if line.startswith(b"data:")]
    if len(data_lines) != 1:
        return None
    i = data_lines[0]
    line = lines[i]
    body = line[5:]
    if body.startswith(b" "):
        body = body[1:]
    stripped = body.rstrip(b"\r\n")
    if stripped[:1] not in (b"{", b"["):
        return None
    return i, stripped, body[len(stripped) :]


def _set_payload(event: bytes, index: int, text: bytes, end: bytes) -> bytes:
    lines = _lines(event)
    lines[index] = b"data: " + text + (end or b"\n")
    return b"".join(lines)


def event_json(event: bytes) -> Any:
    """The JSON value of the event's single ``data:`` line (an object or array), else ``None``."""
    found = _payload(event)
    if found is None:
        return None
    try:
        return json.loads(found[1])
    except (ValueError, RecursionError):
        return None


def with_json(event: bytes, value: Any) -> bytes:
    """The event with its ``data:`` line holding ``value`` instead (the other lines kept)."""
    found = _payload(event)
    assert found is not None
    return _set_payload(event, found[0], json.dumps(value).encode(), found[2])


def json_paths(value: Any, path: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """The path (keys and list positions) of every value inside ``value``, outermost first."""
    out: list[tuple[Any, ...]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        out.append((*path, key))
        out.extend(json_paths(child, (*path, key)))
    return out


# -- byte mutations -------------------------------------------------------------------------------

_BAD_UTF8 = (b"\xff", b"\xfe", b"\x80", b"\xbf\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xed\xa0\x80",
             b"\xed\xbf\xbf", b"\xf0\x80\x80\x80", b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xe2\x82",
             b"\xf0\x9f\x98", b"\xc3")


@mutation
def flip_bits(rng: random.Random, data: bytes, pool: Pool) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(out))
        out[i] ^= 1 << rng.randrange(8)
    return bytes(out)


@mutation
def nul(rng: random.Random, data: bytes, pool: Pool) -> bytes:
    i = rng.randrange(len(data) + 1)
    if rng.random() < 0.5 and i < len(data):
        return data[:i] + b"\x00" + data[i + 1 :]
    return data[:i] + b"\x00" * rng.randint(1, 3) + data[i:]


@mutation
def bad_utf8(rng: random.Random, data: bytes, pool: Pool) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.choice(_BAD_UTF8) + data[i:]


@mutation
def line_endings(rng: random.Random, data: bytes, pool: Pool) -> bytes:
    mode = rng.randrange(5)
    if mode == 0:
        return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    if mode == 1:
        return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r")
    if mode == 2:
        return data.replace(b"\r\n", b"\n")
    if mode == 3:
        pieces = data.split(b"\n")
        return b"".join(p + rng.choice((b"\n", b"\r\n", b"\r")) for p in pieces[:-1]) + pieces[-1]
    i = rng.randrange(len(data) + 1)
    return data[:i] + b"\r" + data[i:]


@mutation
def splice(rng: random.Random, data: bytes, pool: Pool) -> bytes:
    other = rng.choice(pool)
    if rng.random() < 0.5:
        return data[: rng.randrange(len(data) + 1)] + other[rng.randrange(len(other) + 1) :]
    mine, theirs = split_events(data), split_events(other)
    return b"".join(mine[: rng.randrange(len(mine) + 1)] + theirs[rng.randrange(len(theirs) + 1) :])


@mutation
def truncate(rng: random.Random, data: bytes, pool: Pool) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


@mutation
def dup_range(rng: random.Random, data: bytes, pool: Pool) -> bytes:
    i = rng.randrange(len(data) + 1)
    j = min(len(data), i + rng.randint(1, 200))
    return data[:j] + data[i:j] + data[j:]


_FIELD_LINES = (b"event: error\n", b"event: message\n", b"event: ping\n", b"event:\n", b"id: 7\n", b"id: a\x00b\n",
                b"retry: 1000\n", b"retry: 99999999999999999999999\n", b"retry: -5\n", b": comment\n", b"\n",
                b"data: [DONE]\n\n", b"data\n", b"data:\n\n", b"data: {}\n\n", b'data: {"type": "error"}\n\n',
                b'data: {"error": {"code": 500}}\n\n', b"unknownfield: x\n", b"data: \xef\xbb\xbf{}\n\n")


@mutation
def field_line(rng: random.Random, data: bytes, pool: Pool) -> bytes:
    starts = [0] + [m.end() for m in re.finditer(rb"\r\n|\r|\n", data)]
    i = rng.choice(starts)
    return data[:i] + rng.choice(_FIELD_LINES) + data[i:]


# -- event mutations ------------------------------------------------------------------------------

@mutation
def repeat_event(rng: random.Random, data: bytes, pool: Pool) -> bytes:
    events = split_events(data)
    if not events:
        return data
    src = 0 if rng.random() < 0.5 else rng.randrange(len(events))
    events.insert(rng.randint(src + 1, len(events)), events[src])
    return b"".join(events)


@mutation
def drop_event(rng: random.Random, data: bytes, pool: Pool) -> bytes:
    events = split_events(data)
    if events:
        del events[rng.randrange(len(events))]
    return b"".join(events)


@mutation
def swap_events(rng: random.Random, data: bytes, pool: Pool) -> bytes:
    events = split_events(data)
    if len(events) >= 2:
        i = rng.randrange(len(events) - 1)
        events[i], events[i + 1] = events[i + 1], events[i]
    return b"".join(events)


@mutation
def foreign_event(rng: random.Random, data: bytes, pool: Pool) -> bytes:
    events, theirs = split_events(data), split_events(rng.choice(pool))
    if theirs:
        events.insert(rng.randint(0, len(events)), rng.choice(theirs))
    return b"".join(events)


_SEQ = re.compile(rb'"sequence_number": ?(\d+)')


@mutation
def seq_gap(rng: random.Random, data: bytes, pool: Pool) -> bytes:
    found = list(_SEQ.finditer(data))
    if not found:
        return repeat_event(rng, data, pool)
    m = rng.choice(found)
    n = int(m.group(1))
    new = rng.choice((str(n + 2), str(n + 1000), str(max(n - 1, 0)), "0", "-1", f'"{n}"', "null", "1.5",
                      str(2**64)))
    return data[: m.start(1)] + new.encode() + data[m.end(1) :]


# -- payload mutations ----------------------------------------------------------------------------

#: Literal JSON texts that ``json.dumps`` cannot produce (placed through a marker string).
_NUMBERS = ("1e999", "-1e999", "1e-999", "-0", "1.0", "0.5", "-1", "9223372036854775808", "1" + "0" * 40,
            "9" * 4400, "NaN", "Infinity", "-Infinity", "1E400")
_INDEX_KEYS = ("index", "output_index", "content_index", "summary_index", "sequence_number")
_STRINGS = ("", " ", "x" * 3000, "\\", '"', "\u2028", "\x00", "\ud800", "\udc00", "\ud83d\ude00", "\ufffd", "[DONE]",
            "end_turn", "stop", "STOP", "completed", "tool_use", "é" * 50, "\n\n", "data: x")
_MARK = "\u0001MARK{}\u0001"


class _Literals:
    """Raw JSON texts substituted for marker strings after ``json.dumps``."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def add(self, text: str) -> str:
        self.texts.append(text)
        return _MARK.format(len(self.texts) - 1)

    def render(self, value: Any) -> bytes:
        text = json.dumps(value, separators=(",", ":"))
        for i, raw in enumerate(self.texts):
            text = text.replace(json.dumps(_MARK.format(i)), raw)
        return text.encode("utf-8", "surrogatepass")


def _slots(value: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) pair in a JSON tree, outermost first."""
    out: list[tuple[Any, Any]] = []
    stack = [value]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            out.append((node, key))
            stack.append(child)
    return out


def _other_type(rng: random.Random, current: Any, lit: _Literals) -> Any:
    choices: list[Any] = [None, True, False, 0, -1, 1.5, "", "x", [], {}, [{}], {"type": "x"}, lit.add("1e999")]
    options = [c for c in choices if type(c) is not type(current)]
    return rng.choice(options)


def _deep(rng: random.Random, lit: _Literals) -> str:
    depth = rng.choice((200, 505, 509, 510, 511, 512, 513, 1000, 2000))
    if rng.random() < 0.5:
        return lit.add("[" * depth + "]" * depth)
    return lit.add('{"a":' * depth + "1" + "}" * depth)


def _mutate_tree(rng: random.Random, op: str, value: Any, tags: list[str]) -> bytes | None:
    lit = _Literals()
    slots = _slots(value)
    if op == "wrong_type":
        if not slots:
            return None
        node, key = rng.choice(slots)
        node[key] = _other_type(rng, node[key], lit)
    elif op == "drop_key":
        keyed = [(n, k) for n, k in slots if isinstance(n, dict)]
        if not keyed:
            return None
        node, key = rng.choice(keyed)
        del node[key]
    elif op == "unknown_key":
        dicts = [value] + [n[k] for n, k in slots if isinstance(n[k], dict)]
        d = rng.choice([x for x in dicts if isinstance(x, dict)] or [{}])
        d[rng.choice(("zz_unknown", "type", "index", "error", "delta", "usage", "id"))] = _other_type(rng, None, lit)
    elif op == "retag":
        tagged = [(n, k) for n, k in slots if k in ("type", "object", "role") and isinstance(n[k], str)]
        if not tagged:
            return None
        node, key = rng.choice(tagged)
        node[key] = rng.choice(["zz_unknown_type", "", node[key] + "x", *tags])
    elif op == "number":
        numeric = [(n, k) for n, k in slots
                   if k in _INDEX_KEYS or (isinstance(n[k], int | float) and not isinstance(n[k], bool))]
        if not numeric:
            return None
        node, key = rng.choice(numeric)
        node[key] = lit.add(rng.choice(_NUMBERS)) if rng.random() < 0.6 else rng.choice(
            (-1, 0, 1, 2, 7, 2**31, 10**30, 1.0, "0", True, None))
    elif op == "deep":
        if not slots:
            return None
        node, key = rng.choice(slots)
        node[key] = _deep(rng, lit)
    elif op == "dup_key":
        keyed = [(n, k) for n, k in slots if isinstance(n, dict)]
        node, key = rng.choice(keyed) if keyed else (value, "type")
        if not isinstance(node, dict):
            return None
        marker = lit.add(json.dumps(key))  # the marker is a key: replaced by the key's own text
        node[marker] = _other_type(rng, node.get(key), lit) if rng.random() < 0.7 else node.get(key)
        text = lit.render(value)
        return text
    elif op == "odd_string":
        strings = [(n, k) for n, k in slots if isinstance(n[k], str)]
        if not strings:
            return None
        node, key = rng.choice(strings)
        node[key] = rng.choice(_STRINGS)
    return lit.render(value)


_TAG = re.compile(rb'"(?:type|object)": ?"([a-zA-Z0-9_.]{1,60})"')


def _tags(pool: Pool) -> list[str]:
    """The ``type`` / ``object`` values the recordings use (for ``retag``)."""
    found: set[str] = set()
    for data in pool:
        found.update(m.group(1).decode() for m in _TAG.finditer(data))
    return sorted(found)


_TAG_CACHE: dict[int, list[str]] = {}


def _payload_mutation(op: str) -> Mutation:
    def apply(rng: random.Random, data: bytes, pool: Pool) -> bytes:
        events = split_events(data)
        candidates = [i for i, e in enumerate(events) if _payload(e) is not None]
        if not candidates:
            return flip_bits(rng, data, pool)
        i = rng.choice(candidates)
        found = _payload(events[i])
        assert found is not None
        line, text, end = found
        tags = _TAG_CACHE.setdefault(id(pool), _tags(pool))
        try:
            new = _mutate_tree(rng, op, json.loads(text), tags)
        except (ValueError, RecursionError):  # an earlier mutation left it unreadable or too deep
            new = None
        if new is None:
            return flip_bits(rng, data, pool)
        events[i] = _set_payload(events[i], line, new, end)
        return b"".join(events)

    apply.__name__ = op
    return apply


for _op in ("wrong_type", "drop_key", "unknown_key", "retag", "number", "deep", "dup_key", "odd_string"):
    MUTATIONS[_op] = _payload_mutation(_op)

#: Payload mutations are the likeliest to reach route code: they are drawn more often.
_WEIGHTS = {name: (3 if name in ("wrong_type", "drop_key", "retag", "number", "odd_string", "repeat_event") else 1)
            for name in MUTATIONS}


def mutate(rng: random.Random, data: bytes, pool: Pool) -> tuple[bytes, list[str]]:
    """Apply one to three mutations; return the bytes and the names applied, in order."""
    names = rng.choices(list(_WEIGHTS), weights=list(_WEIGHTS.values()), k=rng.choice((1, 1, 1, 2, 2, 3)))
    for name in names:
        data = MUTATIONS[name](rng, data, pool)
    return data, names
