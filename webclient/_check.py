"""Torture one recorded response through a real session: the engine behind ``python -m webclient check``.

The integrity guide's advice for anyone who ships a stream client is: take one deterministic
capture of a real stream, run it through the exact decoder, parser and assembler you ship, split
it at every byte, force EOF at every position, inject an oversized unfinished event, and confirm
that only the complete capture reaches committed state and that nothing leaks into logs. This
module does exactly that, as pure functions over the capture's bytes and a *session factory*
(any callable returning a fresh :class:`~webclient.StreamSession`-like object), so a test can
inject a deliberately broken session and watch the checks fail.

The checks (each one session per case, so the cost of a case is linear in the capture)::

    whole       the capture fed in one chunk must end ``complete``; it is the reference
    split       one cut at each selected position: the result (outcome, stage, stop reason,
                committed flag, text, refusal, reasoning, tool calls, choices, usage, provider
                error, items, assistant message, response id, model, citations, logprobs and the
                chunking-invariant telemetry) equals the reference
    multisplit  byte-wise, every special position at once, small fixed chunk sizes, empty
                chunks, seeded random cut patterns (and the caller's chunking): same result
    eof         each selected proper prefix, then EOF: not ``complete``, no tool call ready
    oversized   after a prefix ending at an event boundary, a never-terminated line (and an
                event whose blank line never comes) must end as ``buffer_limit`` exactly when it
                crosses the configured ceiling, with the session's pending counters never above
                the ceiling plus one fed chunk
    growth      after a prefix past the start event, events in the route's shape that grow one
                structure without end (text, tool input, call-index aliases, argument paths,
                choices / blocks / items, message parts, usage keys, logprobs, citations; see
                :mod:`webclient._check_growth`) must end as ``buffer_limit`` at ``retained`` or the
                structure's own ceiling within twice ``max_retained_chars``
    leak        the capture rewritten with canary strings in its text deltas, tool-argument
                values (streamed or sent whole, shell commands and patches included), error
                messages and the content of objects kept verbatim (search results, citations,
                hosted items, code parts, logprobs, encrypted reasoning, and objects of types the
                route does not know, kept with ``keep_unknown_items``; their types, ids and
                statuses stay), with
                the same JSON shapes, tool arguments still valid JSON; of computer-call actions
                only typed text is content; then run whole, chunked, cut short, with an
                injected provider error, an invalid envelope, invalid UTF-8, broken tool JSON
                and an oversized line: the canary never
                appears in telemetry, stage names, tool-call problems, the provider-error record
                or the text of any exception
    reset       a session that failed (each outcome) followed by, or interleaved with, a fresh
                session: the fresh one reproduces the reference exactly

Positions
    Every position when the capture is at most :data:`EVERY_POSITION_MAX_BYTES`; above that a
    seeded sample sized by :data:`WORK_BUDGET_BYTES`, led by the special positions found by
    scanning the bytes, tier by tier (:data:`SPLIT_TIERS`, :data:`EOF_TIERS`): inside multi-byte
    UTF-8 characters, between CR and LF, inside the raw JSON of tool-argument fragments; then at
    event boundaries and in the terminal event. A tier that does not fit the budget is sampled
    round-robin per category, and the report's coverage says how many of each were run; the
    ``bytewise`` and ``every-special`` cut patterns still exercise every position (all at once)
    in one case each. ``--max-splits`` sets the number of positions explicitly.

Reports are content-free: positions, counts, category names, outcome values and stage names
(a stage that is not a plain ``[a-z0-9_]`` name is shown as ``[REDACTED]``), never payload text.
The module is sans-I/O: no clock, no files; progress is reported through a callback.
"""

from __future__ import annotations

import functools
import json
import random
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import _check_growth
from ._json import loads as json_loads
from ._limits import DEFAULT_LIMITS, Limits
from ._outcome import Outcome
from ._telemetry import REDACTED
from ._updates import StreamResult

# -- named defaults ------------------------------------------------------------------------------

# Every single position is checked for captures up to this size: n cases of n bytes each is
# 16 Ki x 16 KiB = 256 MiB fed, 5-10 s at the session's 25-55 MB/s (the rate depends on the
# route and on the size of its events). Most real recordings are smaller and get every position.
EVERY_POSITION_MAX_BYTES = 16 * 1024

# Above the exhaustive size, a position-based check (split, eof) feeds at most this many bytes
# in total (cases = budget / capture size): the same 256 MiB as the largest exhaustive capture,
# so a 100 KB capture runs its whole battery well inside a minute on a 2-core machine
# (build_scripts/bench_check.py measures it).
WORK_BUDGET_BYTES = 256 * 1024 * 1024

# However large the capture, at least this many positions per check.
MIN_SAMPLED_POSITIONS = 256

# Seeded random multi-cut patterns, each with 2..MAX_PATTERN_CUTS cuts, plus one dense pattern.
RANDOM_PATTERNS = 24
MAX_PATTERN_CUTS = 64

# Byte-wise feeding costs one call per byte; above this size the finest pattern is 3-byte chunks.
BYTEWISE_MAX_BYTES = 4 * 1024 * 1024

# Oversized injections are fed in chunks of at most this many bytes (the memory bound allowed
# on top of a ceiling is one such chunk), at this many event boundaries.
INJECTION_CHUNK_BYTES = 64 * 1024
INJECTION_SITES = 3

# Leak check: how many cut-short canary captures.
LEAK_PREFIXES = 3

#: Position categories, in labelling priority order.
CATEGORIES: tuple[str, ...] = ("multibyte", "crlf", "tool_json", "boundary", "tail")

#: The check names, in the order they run and are reported.
CHECKS: tuple[str, ...] = ("whole", "split", "multisplit", "eof", "oversized", "growth", "leak", "reset")

#: Result fields that must not depend on chunking (compared on every split case).
COMPARED_FIELDS: tuple[str, ...] = ("outcome", "stage", "stop_reason", "committed", "text", "refusal",
                                    "reasoning", "tool_calls", "choices", "usage", "provider_error", "items",
                                    "assistant_message", "response_id", "model", "citations", "logprobs",
                                    "details", "telemetry")

#: Telemetry fields that legitimately depend on chunking.
CHUNKING_DEPENDENT_TELEMETRY: tuple[str, ...] = ("chunk_count",)

_EVENT_STREAM = "text/event-stream"
_STAGE_RE = re.compile(r"[a-z][a-z0-9_]{0,31}")


# -- what a session must offer ---------------------------------------------------------------------


class CheckedSession(Protocol):
    """The part of :class:`~webclient.StreamSession` the checks use."""

    @property
    def done(self) -> bool: ...

    def open(self, status: int, content_type: str | None) -> Sequence[object]: ...

    def feed(self, data: bytes) -> Sequence[object]: ...

    def finish(self) -> StreamResult: ...

    def abort(self, outcome: Outcome = ..., stage: str = ...) -> StreamResult: ...


#: Returns a fresh, unopened session configured with the route, limits and tools under test.
SessionFactory = Callable[[], CheckedSession]

#: ``progress(check, cases_done, cases_total)``, called after every case.
Progress = Callable[[str, int, int], None]


def session_factory(route: str, *, limits: Limits = DEFAULT_LIMITS, tools: Mapping[str, object] | None = None,
                    keep_unknown_items: bool = False, include_reasoning_content: bool = False,
                    accepted_stop_reasons: Iterable[str] | None = None,
                    utf8_errors: str = "strict") -> SessionFactory:
    """A factory of real :class:`~webclient.StreamSession` objects with these options, as the session
    takes them (raises ``UsageError`` now, not later, for an unknown route, an unusable tool schema
    or an option the session refuses)."""
    from ._session import StreamSession  # deferred: the engine itself works on any factory

    accepted = None if accepted_stop_reasons is None else tuple(accepted_stop_reasons)  # (read once)
    options: dict[str, Any] = {"limits": limits, "tools": tools, "keep_unknown_items": keep_unknown_items,
                               "include_reasoning_content": include_reasoning_content,
                               "accepted_stop_reasons": accepted, "utf8_errors": utf8_errors}
    StreamSession(route, **options)  # validate the configuration once

    def make() -> CheckedSession:
        return StreamSession(route, **options)

    return make


def pending_counts(session: object) -> tuple[int, int, int] | None:
    """``(decoder bytes, line characters, event characters)`` the session holds right now, from its
    public ``pending_bytes`` / ``pending_line_chars`` / ``pending_event_chars``; ``None`` when the
    session does not expose them (the oversized check then fails: it cannot verify the bound)."""
    source: Any = session
    if not all(hasattr(source, name) for name in ("pending_bytes", "pending_line_chars", "pending_event_chars")):
        return None
    return int(source.pending_bytes), int(source.pending_line_chars), int(source.pending_event_chars)


# -- configuration and report values ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CheckConfig:
    """How hard to check. The defaults are the named constants above."""

    #: Seed of every sampled position and random pattern (the canary token derives from it too).
    seed: int = 0
    #: Cap on the positions of each position-based check (split, eof); ``None``: automatic.
    max_splits: int | None = None
    #: Captures up to this size get every position.
    every_position_max: int = EVERY_POSITION_MAX_BYTES
    #: Bytes a position-based check may feed in total above that size.
    work_budget: int = WORK_BUDGET_BYTES
    #: Seeded random cut patterns.
    patterns: int = RANDOM_PATTERNS
    #: Event boundaries where oversized lines/events are injected.
    injection_sites: int = INJECTION_SITES


@dataclass(frozen=True, slots=True)
class CaseFailure:
    """One failing case, described without content."""

    #: The check (``"split"``, ``"eof"`` ...).
    check: str
    #: The case label (``"split@1234"``, ``"random#3"``, ``"line@boundary 0"`` ...).
    case: str
    #: The byte position the case is about, when there is one.
    position: int | None
    #: The position's category (``"multibyte"``, ``"sample"`` ...), when there is one.
    category: str | None
    #: The outcome the case ended with (``None`` when the session raised).
    outcome: str | None
    #: The stage the case ended with, if it is a plain stage name (else ``"[REDACTED]"``).
    stage: str | None
    #: What was wrong: field names, counts, sizes; never payload text.
    problem: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {"check": self.check, "case": self.case, "position": self.position, "category": self.category,
                "outcome": self.outcome, "stage": self.stage, "problem": self.problem}


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The tally of one check."""

    #: The check name.
    name: str
    #: Cases run.
    cases: int
    #: Cases that failed.
    failures: int
    #: The first failing case in run order (positions run in ascending order).
    first_failure: CaseFailure | None
    #: Content-free notes: how positions were chosen, what the leak check substituted.
    coverage: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """No case failed."""
        return self.failures == 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {"check": self.name, "cases": self.cases, "failures": self.failures,
                "first_failure": None if self.first_failure is None else self.first_failure.to_dict(),
                "coverage": self.coverage}


@dataclass(frozen=True, slots=True)
class CheckReport:
    """Everything ``check`` found about one capture."""

    #: The route under test.
    route: str
    #: Capture size in bytes.
    capture_bytes: int
    #: Event blocks found by scanning the bytes.
    events: int
    #: The whole capture's outcome value and (plain) stage.
    whole_outcome: str | None
    whole_stage: str | None
    #: The whole capture's stop reason as sanitized in its telemetry.
    stop_reason: str | None
    #: The seed used.
    seed: int
    #: The checks that ran (only ``whole`` when the capture is not complete).
    checks: tuple[CheckResult, ...]

    @property
    def capture_complete(self) -> bool:
        """The whole capture reached ``complete``."""
        return self.whole_outcome == Outcome.COMPLETE.value

    @property
    def passed(self) -> bool:
        """The capture is complete and every check passed."""
        return self.capture_complete and all(c.passed for c in self.checks)

    @property
    def exit_code(self) -> int:
        """0: every check passed; 1: a check failed; 2: the capture is not a complete response."""
        if any(not c.passed for c in self.checks):
            return 1
        return 0 if self.capture_complete else 2

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (the ``--json`` output)."""
        return {"route": self.route, "capture_bytes": self.capture_bytes, "events": self.events,
                "whole": {"outcome": self.whole_outcome, "stage": self.whole_stage, "stop_reason": self.stop_reason},
                "capture_complete": self.capture_complete, "seed": self.seed,
                "checks": [c.to_dict() for c in self.checks], "passed": self.passed, "exit_code": self.exit_code}


def plain_stage(stage: object) -> str | None:
    """``stage`` if it is a plain stage name, ``None`` for none, else ``"[REDACTED]"``."""
    if stage is None:
        return None
    return stage if isinstance(stage, str) and _STAGE_RE.fullmatch(stage) else REDACTED


# -- scanning the capture ---------------------------------------------------------------------------

_TERMINATOR = re.compile(rb"\r\n|\r|\n")
_MULTIBYTE = re.compile(rb"[\xc2-\xf4][\x80-\xbf]{1,3}")
_CRLF = re.compile(rb"\r\n")
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BOM = b"\xef\xbb\xbf"


@dataclass(slots=True)
class _DataLine:
    """A ``data:`` line whose value parsed as JSON."""

    start: int          # first byte of the line
    value_start: int    # first byte of the value
    end: int            # first byte of the terminator
    stop: int           # first byte after the terminator
    obj: Any            # the parsed value (mutated by the canary rewrite)


@dataclass(slots=True)
class _Slot:
    """A string (or argument object) inside a parsed payload that carries content."""

    container: Any      # dict or list holding it
    key: Any            # its key / index
    kind: str           # "text", "fragment", "error", "args_object", "arg_value", "kept"
    group: Any          # what it concatenates with (text run, tool call), or None
    line: int           # index into CaptureMap.data_lines


@dataclass(slots=True)
class CaptureMap:
    """What scanning the capture found: event boundaries, JSON data lines, special positions."""

    size: int
    #: Offsets just after each event's dispatching blank line.
    boundaries: list[int]
    #: Offset of the first byte of each event block.
    event_starts: list[int]
    #: First byte of the last event that carries data the route reads (not a comment, not an
    #: ignored ``[DONE]``): the terminal event of a complete capture.
    last_event: int
    #: The offset at which that event dispatches. Only prefixes at least this long can hold the
    #: whole response; anything after it is trailer the route ignores (blank lines, comments,
    #: a stray ``[DONE]``, the LF of a final CRLF).
    complete_from: int
    #: ``data:`` lines with JSON values, in order.
    data_lines: list[_DataLine]
    #: Content-bearing slots of those payloads, in stream order.
    slots: list[_Slot]
    #: Category -> sorted positions (0 < p < size).
    special: dict[str, list[int]]

    @property
    def events(self) -> int:
        """Event blocks (field or comment lines closed by a blank line)."""
        return len(self.boundaries)


def _ignores_done(route: str) -> bool:
    """Whether the route ignores a stray ``data: [DONE]`` (read from its contract)."""
    from ._routes import ROUTES  # deferred: scanning needs only this one fact about a route

    entry = ROUTES.get(route)
    return entry is not None and entry.contract.done_sentinel == "ignored"


def scan_capture(data: bytes, route: str) -> CaptureMap:
    """Scan ``data`` once (linear): lines, events, JSON payloads, content slots, special positions."""
    size = len(data)
    ignore_done = _ignores_done(route)
    boundaries: list[int] = []
    event_starts: list[int] = []
    blank_starts: list[int] = []
    data_lines: list[_DataLine] = []
    lines: list[tuple[int, int, int]] = []
    pos = 0
    for m in _TERMINATOR.finditer(data):
        lines.append((pos, m.start(), m.end()))
        pos = m.end()
    if pos < size:
        lines.append((pos, size, size))
    in_event = significant = False
    last_significant = (size, size)
    for start, end, stop in lines:
        field_start = start + 3 if start == 0 and data.startswith(_BOM) else start
        if end <= field_start:
            if in_event:
                boundaries.append(stop)
                blank_starts.append(start)
                if significant:
                    # The blank line's first terminator byte dispatches (a lone CR ends a line).
                    last_significant = (event_starts[-1], start + 1)
            in_event = significant = False
            continue
        if not in_event:
            event_starts.append(start)
            in_event = True
        if data.startswith(b"data:", field_start):
            value_start = field_start + 5 + (data[field_start + 5 : field_start + 6] == b" ")
            value = data[value_start:end]
            significant = significant or not (ignore_done and value == b"[DONE]")
            try:
                obj = json_loads(value.decode("utf-8"))
            except ValueError:
                continue
            if isinstance(obj, (dict, list)):
                data_lines.append(_DataLine(start, value_start, end, stop, obj))
    slots = list(_route_slots(route, data_lines))
    special: dict[str, set[int]] = {name: set() for name in CATEGORIES}
    for mb in _MULTIBYTE.finditer(data):
        special["multibyte"].update(range(mb.start() + 1, mb.end()))
    special["crlf"].update(m.start() + 1 for m in _CRLF.finditer(data))
    for line_index, key in {(s.line, s.key) for s in slots if s.kind in _TOOL_KINDS and isinstance(s.key, str)}:
        line = data_lines[line_index]
        for lo, hi in _value_spans(data, line.value_start, line.end, key):
            special["tool_json"].update(range(lo + 1, hi))
    special["boundary"].update(blank_starts)
    special["boundary"].update(boundaries)
    special["tail"].update(range(last_significant[0], size))
    ordered = {name: sorted(p for p in positions if 0 < p < size) for name, positions in special.items()}
    return CaptureMap(size, boundaries, event_starts, last_significant[0], last_significant[1], data_lines, slots,
                      ordered)


_TOOL_KINDS = frozenset({"fragment", "args_object", "arg_value"})


def _value_spans(data: bytes, lo: int, hi: int, key: str) -> Iterator[tuple[int, int]]:
    """Byte spans ``[start, end)`` of the raw JSON values of ``"key":`` inside ``data[lo:hi]``."""
    pattern = re.compile(rb'"' + re.escape(key.encode()) + rb'"\s*:\s*')
    for m in pattern.finditer(data, lo, hi):
        start = m.end()
        end = _value_end(data, start, hi)
        if end > start:
            yield start, end


def _value_end(data: bytes, i: int, hi: int) -> int:
    """Offset just after the JSON string/object/array starting at ``data[i]`` (``i`` if none)."""
    if i >= hi:
        return i
    opener = data[i]
    if opener == 0x22:
        m = _JSON_STRING.match(data, i, hi)
        return m.end() if m is not None else i
    if opener not in (0x7B, 0x5B):
        return i
    depth = 0
    j = i
    while j < hi:
        c = data[j]
        if c == 0x22:
            m = _JSON_STRING.match(data, j, hi)
            if m is None:
                return i
            j = m.end()
            continue
        if c in (0x7B, 0x5B):
            depth += 1
        elif c in (0x7D, 0x5D):
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return i


# -- where content lives, per route -----------------------------------------------------------------
#
# Each rule yields the content-bearing strings of one parsed payload: text deltas ("text"), raw
# tool-argument fragments ("fragment", grouped per call so the canary rewrite keeps the joined
# arguments valid JSON), whole argument objects ("args_object", Gemini) and streamed argument
# values ("arg_value", Gemini partialArgs). Provider error messages ("error") are found on every
# route by the generic walk in _error_slots.

_SlotSink = list[_Slot]


def _key(value: Any) -> Any:
    """A payload value as part of a slot's group (a dict key): a scalar as it is; a list or object where
    an index or id belongs (a malformed capture, which the route refuses) as a 1-tuple of its JSON text,
    which no scalar equals."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    return (json.dumps(value),)


def _chat_slots(obj: Any, line: int, state: dict[Any, Any], out: _SlotSink) -> None:
    choices = obj.get("choices") if isinstance(obj, dict) else None
    for ch in choices if isinstance(choices, list) else ():
        if not isinstance(ch, dict) or not isinstance(ch.get("delta"), dict):
            continue
        index, delta = _key(ch.get("index")), ch["delta"]
        for key in ("content", "refusal", "reasoning_content", "reasoning"):
            if isinstance(delta.get(key), str):
                out.append(_Slot(delta, key, "text", ("chat", index, key), line))
        chunks = delta.get("content")
        for chunk in chunks if isinstance(chunks, list) else ():  # Mistral's content chunks
            kind = _type_name(chunk)
            if kind == "text" and isinstance(chunk.get("text"), str):
                out.append(_Slot(chunk, "text", "text", ("chat", index, "content"), line))
            elif kind == "thinking" and isinstance(chunk.get("thinking"), list):
                for part in chunk["thinking"]:
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        out.append(_Slot(part, "text", "text", ("chat", index, "thinking"), line))
        calls = delta.get("tool_calls")
        for tc in calls if isinstance(calls, list) else ():
            if not isinstance(tc, dict):
                continue
            call_index, call_id = tc.get("index"), tc.get("id")
            if isinstance(call_index, int):
                group: Any = ("call", index, call_index)
            elif isinstance(call_id, str) and call_id:
                group = state.get(("id", index, call_id), ("id", index, call_id))
            else:
                group = state.get(("latest", index), ("latest", index))
            if isinstance(call_id, str) and call_id:
                state[("id", index, call_id)] = group
            state[("latest", index)] = group
            fn, custom = tc.get("function"), tc.get("custom")
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                out.append(_Slot(fn, "arguments", "fragment", group, line))
            # A custom tool's input is free text, not JSON: rewritten like text, per call.
            if isinstance(custom, dict) and isinstance(custom.get("input"), str):
                out.append(_Slot(custom, "input", "text", ("custom", group), line))
        legacy = delta.get("function_call")
        if isinstance(legacy, dict) and isinstance(legacy.get("arguments"), str):
            out.append(_Slot(legacy, "arguments", "fragment", ("legacy", index), line))


# Custom tool input is free text (not JSON): it is rewritten like text, and its full copies (the
# ``.done`` event's and the closed item's ``input``) follow.
_RESPONSES_TEXT = frozenset({"response.output_text.delta", "response.refusal.delta", "response.reasoning_text.delta",
                             "response.reasoning_summary_text.delta", "response.custom_tool_call_input.delta"})

#: A call's input can also arrive whole, with no deltas (LM Studio sends its arguments in
#: ``function_call_arguments.done`` alone; an MCP approval request never streams its): the closed
#: item's copy is then the slot (item type -> the key holding the input, slot kind), and the ``.done``
#: event's and the added item's copies follow it as full copies.
_RESPONSES_WHOLE_ITEMS = {"function_call": ("arguments", "fragment"), "custom_tool_call": ("input", "text"),
                          "mcp_approval_request": ("arguments", "fragment")}


def _responses_slots(obj: Any, line: int, state: dict[Any, Any], out: _SlotSink) -> None:
    if not isinstance(obj, dict):
        return
    kind = obj.get("type")
    if not isinstance(kind, str):
        return
    if isinstance(obj.get("delta"), str):
        item = _key(obj.get("item_id") or obj.get("output_index"))
        state[item] = True  # this item streams: its closed copy is a full copy
        if kind in _RESPONSES_TEXT:
            out.append(_Slot(obj, "delta", "text",
                             (kind, item, _key(obj.get("content_index")), _key(obj.get("summary_index"))), line))
        elif kind == "response.function_call_arguments.delta":
            out.append(_Slot(obj, "delta", "fragment", item, line))
    elif kind == "response.output_item.done" and isinstance(obj.get("item"), dict):
        closed = obj["item"]
        whole = _RESPONSES_WHOLE_ITEMS.get(_key(closed.get("type")))
        item = _key(closed.get("id") or obj.get("output_index"))
        if whole is not None and item not in state and isinstance(closed.get(whole[0]), str):
            out.append(_Slot(closed, whole[0], whole[1], item, line))


def _anthropic_slots(obj: Any, line: int, state: dict[Any, Any], out: _SlotSink) -> None:
    if not isinstance(obj, dict):
        return
    kind = obj.get("type")
    generation = state.get("generation")
    if kind == "message_start":
        state["generation"] = generation = line  # keeps the blocks of each message apart
        for index, block in enumerate(_started_blocks(obj)):
            _anthropic_block(block, index, generation, line, out)
    if kind == "content_block_start":
        _anthropic_block(obj.get("content_block"), _key(obj.get("index")), generation, line, out)
    if kind != "content_block_delta" or not isinstance(obj.get("delta"), dict):
        return
    delta, index = obj["delta"], _key(obj.get("index"))
    delta_type = delta.get("type")
    if delta_type == "text_delta" and isinstance(delta.get("text"), str):
        out.append(_Slot(delta, "text", "text", ("text", generation, index), line))
    elif delta_type == "thinking_delta" and isinstance(delta.get("thinking"), str):
        out.append(_Slot(delta, "thinking", "text", ("thinking", generation, index), line))
    elif delta_type == "input_json_delta" and isinstance(delta.get("partial_json"), str):
        out.append(_Slot(delta, "partial_json", "fragment", ("block", generation, index), line))


def _started_blocks(obj: dict[str, Any]) -> list[Any]:
    """The blocks an Anthropic message starts with (``message_start``'s ``message.content``), else ``[]``."""
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _anthropic_block(block: Any, index: Any, generation: Any, line: int, out: _SlotSink) -> None:
    """An Anthropic block as it starts (``content_block_start``, or whole in ``message_start``): a tool input
    sent whole ({} is the usual placeholder before deltas), and the text or thinking it starts with, the first
    piece of its block's run."""
    if not isinstance(block, dict):
        return
    if isinstance(block.get("input"), dict):
        out.append(_Slot(block, "input", "args_object", None, line))
    block_type = block.get("type")
    if (block_type == "text" or block_type == "thinking") and isinstance(block.get(block_type), str):
        out.append(_Slot(block, block_type, "text", (block_type, generation, index), line))


def _gemini_slots(obj: Any, line: int, state: dict[Any, Any], out: _SlotSink) -> None:
    candidates = obj.get("candidates") if isinstance(obj, dict) else None
    for cand in candidates if isinstance(candidates, list) else ():
        content = cand.get("content") if isinstance(cand, dict) else None
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts if isinstance(parts, list) else ():
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str):
                group = ("part", _key(cand.get("index")), bool(part.get("thought")))
                out.append(_Slot(part, "text", "text", group, line))
            call = part.get("functionCall")
            if not isinstance(call, dict):
                continue
            if isinstance(call.get("args"), (dict, list)):
                out.append(_Slot(call, "args", "args_object", None, line))
            partial = call.get("partialArgs")
            for arg in partial if isinstance(partial, list) else ():
                if isinstance(arg, dict) and isinstance(arg.get("stringValue"), str):
                    out.append(_Slot(arg, "stringValue", "arg_value", None, line))


# -- provider objects kept verbatim ----------------------------------------------------------------
#
# Besides texts and tool inputs, a committed result keeps some provider objects as they came: search
# results, citations, code execution parts, hosted tool items, logprobs, compaction summaries. Their
# strings are content too ("kept" slots): the canary goes into every string of such an object but
# those under the keys that name or classify it (:func:`_vocabulary_key`), so the route still knows
# the object and still ties its copies and results to their calls. Each rule reads the route's own
# table of content types (its contract), so a type added there is planted here too. Every copy of an
# object (a Responses item's added, closed and completed copies) is rewritten by the same rule, so
# the copies stay equal. What the route does not know is content as well (unknown is not safe): an
# item, part, block, delta or part field of a type outside its tables, which a session keeps verbatim
# with ``keep_unknown_items`` (and refuses without it), and a typed route's events of types it has no
# handler for, which it never reads. Signatures (Anthropic thinking and ``redacted_thinking`` data,
# Gemini ``thoughtSignature``) are not planted: the routes hold them as signatures, and the split
# checks compare them exactly.

#: Keys whose strings are a kept object's vocabulary or identity, not its content.
_VOCABULARY_KEYS = frozenset({"type", "id", "status", "name", "language", "outcome", "mimeType", "execution"})


def _vocabulary_key(key: str) -> bool:
    """Whether a kept object's ``key`` names or classifies it (types, statuses, ids, ``*_id`` /
    ``*Id`` references, languages, outcomes, MIME types, who runs a tool search): its string stays as it came."""
    return key in _VOCABULARY_KEYS or key.endswith(("_id", "Id"))


@functools.cache
def _roles(route: str, *wanted: str) -> frozenset[str]:
    """The content types the route's contract gives one of the ``wanted`` roles."""
    return frozenset(name for name, role in _known(route)[0].items() if role in wanted)


@functools.cache
def _known(route: str) -> tuple[Mapping[str, str], frozenset[str]]:
    """The route's content types (its contract's table) and the event types it handles."""
    from ._routes import ROUTES  # deferred, as in _ignores_done

    entry = ROUTES[route]
    return entry.contract.content_types, frozenset(entry.accumulator.handler_names)


def _kept(container: Any, key: Any, line: int, out: _SlotSink) -> None:
    out.append(_Slot(container, key, "kept", None, line))


def _kept_fields(obj: dict[str, Any], line: int, out: _SlotSink, but: tuple[str, ...] = ()) -> None:
    """Every field of ``obj`` but its vocabulary and ``but`` (an event or delta whose whole body is content)."""
    for key in obj:
        if not _vocabulary_key(key) and key not in but:
            _kept(obj, key, line, out)


def _type_name(value: Any) -> str | None:
    """``value``'s ``type`` when ``value`` is an object and its type a string (a name), else ``None``."""
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else None


def _unknown_type(value: Any, types: Mapping[str, str], *, part: bool) -> bool:
    """Whether ``value`` is an object whose ``type`` names no item (``part=False``) or no part
    (``part=True``) of the route's table (a Responses item or content / summary part)."""
    kind = _type_name(value)
    if kind is None:
        return False
    role = types.get(kind, "")
    return not role.endswith("part") if part else (not role or role.endswith("part"))


def _chat_kept(obj: Any, line: int, out: _SlotSink) -> None:
    """Chat: a delta's ``annotations`` (citations), a choice's ``logprobs`` (their tokens), the streamed
    text, summary or encrypted data of its OpenRouter ``reasoning_details`` (not their signatures), the fields of
    Groq's ``executed_tools`` (not their index), and what
    the route keeps only with ``keep_unknown_items``: a delta's audio and images
    (:data:`~webclient._routes.openai_chat.UNREAD_CONTENT`), tool-call fragments and reasoning-detail entries
    of types it does not know."""
    from ._routes.openai_chat import DETAIL_FIELDS, UNREAD_CONTENT  # deferred, as in _known

    types = _known("openai-chat")[0]
    choices = obj.get("choices") if isinstance(obj, dict) else None
    for ch in choices if isinstance(choices, list) else ():
        if not isinstance(ch, dict):
            continue
        if isinstance(ch.get("logprobs"), dict):
            _kept(ch, "logprobs", line, out)
        delta = ch.get("delta")
        if not isinstance(delta, dict):
            continue
        if isinstance(delta.get("annotations"), list):
            _kept(delta, "annotations", line, out)
        details = delta.get("reasoning_details")
        for index, entry in enumerate(details if isinstance(details, list) else ()):
            kind = _type_name(entry)
            if kind is None:
                continue
            field = DETAIL_FIELDS.get(kind)
            if field is None:
                _kept(details, index, line, out)
            elif isinstance(entry.get(field), str):
                _kept(entry, field, line, out)
        for key in UNREAD_CONTENT:
            if delta.get(key):
                _kept(delta, key, line, out)
        executed = delta.get("executed_tools")
        for entry in executed if isinstance(executed, list) else ():
            if isinstance(entry, dict):  # a tool the server ran: all but its index and vocabulary
                _kept_fields(entry, line, out, but=("index",))
        calls = delta.get("tool_calls")
        for index, call in enumerate(calls if isinstance(calls, list) else ()):
            kind = _type_name(call)
            if kind is not None and kind not in types:
                _kept(calls, index, line, out)


#: Responses client calls sent whole -> the item fields that hold their arguments (the shell
#: commands, the patch, the tool search's goal); a computer call's actions are the route's vocabulary but for
#: typed text.
_WHOLE_CALL_FIELDS = {"local_shell_call": ("action",), "shell_call": ("action",), "apply_patch_call": ("operation",),
                      "tool_search_call": ("arguments",)}


def _responses_kept(obj: Any, line: int, out: _SlotSink) -> None:
    """Responses: hosted items wherever they appear (added, closed, in a snapshot's ``output``), what
    their own events carry (``response.code_interpreter_call_code.delta`` ...), annotations
    (``annotation``, ``annotations``), the argument fields of the whole-item calls with the shell
    command events, the typed text of computer-call actions and a reasoning item's
    ``encrypted_content``; and what the route keeps only with ``keep_unknown_items`` or never reads:
    items and parts of types it does not know, and events of types it does not handle."""
    if not isinstance(obj, dict):
        return
    types, handled = _known("openai-responses")
    hosted = _roles("openai-responses", "hosted")
    kind = obj.get("type")
    # a hosted tool's own event: response.<item type>[_<part>].<step>; or a shell call's command event
    head = kind.removeprefix("response.").partition(".")[0] if isinstance(kind, str) else ""
    if (head == "shell_call_command" or any(head.startswith(item) for item in hosted)
            or (isinstance(kind, str) and kind not in handled)):
        _kept_fields(obj, line, out)

    if _unknown_type(obj.get("part"), types, part=True):
        _kept(obj, "part", line, out)
    response = obj.get("response")
    output = response.get("output") if isinstance(response, dict) else None
    places: list[tuple[Any, Any]] = [(obj, "item")] if "item" in obj else []
    if isinstance(output, list):
        places += [(output, index) for index in range(len(output))]
    for container, key in places:
        item = container[key]
        if _unknown_type(item, types, part=False):
            _kept(container, key, line, out)
            continue
        for lists in ("content", "summary") if isinstance(item, dict) else ():
            parts = item.get(lists)
            for index in range(len(parts)) if isinstance(parts, list) else ():
                if _unknown_type(parts[index], types, part=True):
                    _kept(parts, index, line, out)
        if isinstance(item, dict) and item.get("type") == "reasoning" and "encrypted_content" in item:
            _kept(item, "encrypted_content", line, out)
    stack: list[Any] = [obj]
    while stack:
        node = stack.pop()
        for key, value in node.items() if isinstance(node, dict) else enumerate(node):
            item_type = _type_name(value)  # (no type, or one that is not a name: not a kind of item)
            if item_type in hosted or key in ("annotation", "annotations"):
                _kept(node, key, line, out)
            elif item_type in _WHOLE_CALL_FIELDS:
                for name in _WHOLE_CALL_FIELDS[item_type]:
                    if name in value:
                        _kept(value, name, line, out)
            elif item_type == "computer_call":
                for action in [value.get("action"), *(value.get("actions") or ())]:
                    if isinstance(action, dict) and isinstance(action.get("text"), str):
                        _kept(action, "text", line, out)
            elif isinstance(value, (dict, list)):
                stack.append(value)


def _anthropic_kept(obj: Any, line: int, out: _SlotSink) -> None:
    """Anthropic: server tool result and compaction blocks, a text block's ``citations``, a
    ``citations_delta``'s citation and a ``compaction_delta``'s strings, the message's details (stop sequence, stop
    details, container, context management); and what the route keeps
    only with ``keep_unknown_items`` or never reads: blocks and deltas of types it does not know,
    and events of types it does not handle."""
    from ._routes.anthropic_messages import DELTA_TARGETS, MESSAGE_DETAILS  # deferred, as in _known

    if not isinstance(obj, dict):
        return
    types, handled = _known("anthropic-messages")
    kind = obj.get("type")
    if isinstance(kind, str) and kind not in handled:
        _kept_fields(obj, line, out)
    delta = obj.get("delta")
    if kind == "content_block_start":
        _anthropic_kept_block(obj, "content_block", types, line, out)
    elif kind == "message_start":
        started = _started_blocks(obj)
        for index in range(len(started)):
            _anthropic_kept_block(started, index, types, line, out)
    if kind in ("message_start", "message_delta"):  # the result's details: the message's, the delta's and the event's
        holders = (obj.get("message"),) if kind == "message_start" else (delta, obj)
        for holder in holders:
            if not isinstance(holder, dict):
                continue
            for key, kinds in MESSAGE_DETAILS:
                if holder.get(key).__class__ in kinds:
                    _kept(holder, key, line, out)
    if isinstance(delta, dict):
        delta_type = _type_name(delta)
        if delta_type == "citations_delta" and "citation" in delta:
            _kept(delta, "citation", line, out)
        elif delta_type == "compaction_delta":
            for key in ("content", "encrypted_content"):
                if isinstance(delta.get(key), str):
                    _kept(delta, key, line, out)
        elif kind == "content_block_delta" and delta_type is not None and delta_type not in DELTA_TARGETS:
            _kept_fields(delta, line, out)


def _anthropic_kept_block(container: Any, key: Any, types: Mapping[str, str], line: int, out: _SlotSink) -> None:
    """``container[key]``, an Anthropic block as it starts: kept whole when it is a result or compaction block or
    of a type the route does not know; a text block's ``citations``; a server call's fields but its input (an
    argument object of its own, see _anthropic_block) and its vocabulary (an MCP call's ``server_name`` is planted)."""
    block = container[key]
    if not isinstance(block, dict):
        return
    block_type = _type_name(block)
    if block_type is not None and (
            block_type in _roles("anthropic-messages", "result", "compaction") or block_type not in types):
        _kept(container, key, line, out)
    elif isinstance(block.get("citations"), list):
        _kept(block, "citations", line, out)
    elif block_type in _roles("anthropic-messages", "server_call"):
        for field in block:
            if field != "input" and not _vocabulary_key(field):
                _kept(block, field, line, out)


def _gemini_kept(obj: Any, line: int, out: _SlotSink) -> None:
    """Gemini: a part's result fields (``executableCode``, ``codeExecutionResult``, ``inlineData``,
    ``fileData``) and a candidate's ``groundingMetadata``, ``urlContextMetadata`` and
    ``citationMetadata``; and the fields the route does not know of a part it keeps only with
    ``keep_unknown_items``."""
    from ._routes.gemini import PART_FIELDS  # deferred, as in _known

    candidates = obj.get("candidates") if isinstance(obj, dict) else None
    part_fields = _roles("gemini", "data:item")
    candidate_fields = _roles("gemini", "candidate:item", "candidate:citations")
    for cand in candidates if isinstance(candidates, list) else ():
        if not isinstance(cand, dict):
            continue
        for key in candidate_fields & cand.keys():
            _kept(cand, key, line, out)
        content = cand.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict):
                for key in part:
                    if key in part_fields or (key not in PART_FIELDS and not _vocabulary_key(key)):
                        _kept(part, key, line, out)


#: Per route: the rule for texts and tool inputs (with its state across lines), and the rule for the
#: objects it keeps verbatim.
_ROUTE_SLOTS: dict[str, tuple[Callable[[Any, int, dict[Any, Any], _SlotSink], None],
                              Callable[[Any, int, _SlotSink], None]]] = {
    "openai-chat": (_chat_slots, _chat_kept),
    "openai-responses": (_responses_slots, _responses_kept),
    "anthropic-messages": (_anthropic_slots, _anthropic_kept),
    "gemini": (_gemini_slots, _gemini_kept),
}


def _error_slots(obj: Any, line: int, out: _SlotSink) -> None:
    """Provider error messages: ``message`` of any ``error`` object, and of a flat
    ``{"type": "error", "message": ...}`` event."""
    if isinstance(obj, dict):
        if obj.get("type") == "error" and isinstance(obj.get("message"), str):
            out.append(_Slot(obj, "message", "error", None, line))
        for key, value in obj.items():
            if key == "error" and isinstance(value, dict) and isinstance(value.get("message"), str):
                out.append(_Slot(value, "message", "error", None, line))
            if isinstance(value, (dict, list)):
                _error_slots(value, line, out)
    elif isinstance(obj, list):
        for value in obj:
            if isinstance(value, (dict, list)):
                _error_slots(value, line, out)


def _route_slots(route: str, lines: list[_DataLine]) -> Iterator[_Slot]:
    rules = _ROUTE_SLOTS.get(route)
    state: dict[Any, Any] = {}
    for index, line in enumerate(lines):
        out: _SlotSink = []
        if rules is not None:
            rules[0](line.obj, index, state, out)
            rules[1](line.obj, index, out)
        _error_slots(line.obj, index, out)
        yield from out


# -- canary rewriting --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Canary:
    """A secret-looking string that must never reach a sanitized surface."""

    #: The distinctive token searched for (ASCII).
    marker: str
    #: The full string substituted into payloads (spaces, quotes, braces and non-ASCII around
    #: the marker, so no identifier allow-list can pass it as a whole).
    value: str

    @classmethod
    def from_seed(cls, seed: int) -> Canary:
        token = random.Random(seed ^ 0xC0FFEE).getrandbits(40)
        marker = f"wc-canary-{token:010x}"
        return cls(marker, f'{marker} \u00absk-live s3cr\u00e9t\u00bb "q" {{b}} \u2603')

    def found_in(self, text: str) -> bool:
        """Whether the marker (or its hex token) occurs in ``text``."""
        return self.marker in text or self.marker[-10:] in text


def _replace_leaves(value: Any, canary: str, keep: Callable[[str], bool] | None = None) -> tuple[Any, int]:
    """``value`` with every string *value* (never a key) replaced by ``canary``, but those under a
    key ``keep`` accepts; and the count."""
    if isinstance(value, str):
        return canary, 1
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        total = 0
        for key, item in value.items():
            if keep is not None and keep(key):
                out[key] = item
                continue
            out[key], n = _replace_leaves(item, canary, keep)
            total += n
        return out, total
    if isinstance(value, list):
        items = [_replace_leaves(item, canary, keep) for item in value]
        return [item for item, _ in items], sum(n for _, n in items)
    return value, 0


def _spread(text: str, sizes: list[int]) -> list[str]:
    """Cut ``text`` into ``len(sizes)`` pieces proportional to ``sizes`` (empty stays empty)."""
    total = sum(sizes)
    if total == 0:
        return [text] + [""] * (len(sizes) - 1)
    pieces, prev, running = [], 0, 0
    for size in sizes:
        running += size
        cut = round(running * len(text) / total)
        pieces.append(text[prev:cut])
        prev = cut
    pieces[-1] += text[prev:]
    return pieces


def _serialize(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _rebuild(data: bytes, cmap: CaptureMap, dirty: set[int]) -> bytes:
    """``data`` with the dirty data lines' values re-serialized from their (mutated) objects."""
    out: list[bytes] = []
    prev = 0
    for index in sorted(dirty):
        line = cmap.data_lines[index]
        out.append(data[prev : line.value_start])
        out.append(_serialize(line.obj))
        prev = line.end
    out.append(data[prev:])
    return b"".join(out)


def canary_capture(data: bytes, route: str, canary: Canary) -> tuple[bytes, dict[str, int]]:
    """Rewrite the capture's payloads with ``canary`` in every text delta, tool-argument string
    value, provider error message and string of content in an object the answer keeps verbatim
    (see ``_ROUTE_SLOTS``); return the new bytes and substitution counts per kind.

    JSON shapes are kept: a string stays a string, argument fragments of one call are rebuilt
    from its joined, canary-substituted arguments and cut back into as many fragments, so the
    arguments still parse. Full-text copies of the rewritten runs (Responses ``.done`` events,
    ``output_item.done`` items, the ``response.completed`` snapshot) are rewritten to match.
    """
    cmap = scan_capture(data, route)
    counts = {"text": 0, "tool_arguments": 0, "error": 0, "kept": 0}
    dirty: set[int] = set()
    old_runs: dict[Any, list[str]] = {}
    new_runs: dict[Any, list[str]] = {}
    fragments: dict[Any, list[_Slot]] = {}
    for slot in cmap.slots:
        current = slot.container[slot.key]
        if slot.kind == "fragment":
            fragments.setdefault(slot.group, []).append(slot)
            continue
        if slot.kind == "args_object" or slot.kind == "kept":
            kept = slot.kind == "kept"
            replaced, n = _replace_leaves(current, canary.value, _vocabulary_key if kept else None)
            if n:
                slot.container[slot.key] = replaced
                counts["kept" if kept else "tool_arguments"] += n
                dirty.add(slot.line)
            continue
        if not current:
            continue
        slot.container[slot.key] = canary.value
        dirty.add(slot.line)
        counts["tool_arguments" if slot.kind == "arg_value" else slot.kind] += 1
        if slot.kind == "text":
            old_runs.setdefault(slot.group, []).append(current)
            new_runs.setdefault(slot.group, []).append(canary.value)
    full: dict[str, str] = {}
    for group, parts in old_runs.items():
        full.setdefault("".join(parts), "".join(new_runs[group]))
    for slots in fragments.values():
        olds = [s.container[s.key] for s in slots]
        joined = "".join(olds)
        try:
            parsed = json_loads(joined)
        except ValueError:
            continue
        replaced, n = _replace_leaves(parsed, canary.value)
        if not n:
            continue
        new = json.dumps(replaced, ensure_ascii=False)
        for s, piece in zip(slots, _spread(new, [len(o) for o in olds]), strict=True):
            s.container[s.key] = piece
            dirty.add(s.line)
        counts["tool_arguments"] += n
        full.setdefault(joined, new)
    full.pop("", None)
    if full:
        dirty |= _rewrite_full_copies(cmap, full)
    return _rebuild(data, cmap, dirty), counts


def _rewrite_full_copies(cmap: CaptureMap, full: dict[str, str]) -> set[int]:
    """Map the full copies in every data line (not the slots themselves) through ``full``; the
    indices of the lines that changed."""
    claimed = {(id(s.container), s.key) for s in cmap.slots}
    return {i for i, line in enumerate(cmap.data_lines) if _map_full_copies(line.obj, full, claimed)}


#: Where full copies of streamed runs live (closed items, ``.done`` events, completed snapshots).
_FULL_COPY_KEYS = frozenset({"text", "refusal", "arguments", "input"})


def _map_full_copies(obj: Any, full: dict[str, str], claimed: set[tuple[int, Any]]) -> bool:
    """Replace ``text`` / ``refusal`` / ``arguments`` / ``input`` strings equal to a rewritten run's old
    value."""
    changed = False
    if isinstance(obj, dict):
        for key, value in obj.items():
            if isinstance(value, str):
                if key in _FULL_COPY_KEYS and value in full and (id(obj), key) not in claimed:
                    obj[key] = full[value]
                    changed = True
            elif isinstance(value, (dict, list)):
                changed = _map_full_copies(value, full, claimed) or changed
    elif isinstance(obj, list):
        for value in obj:
            if isinstance(value, (dict, list)):
                changed = _map_full_copies(value, full, claimed) or changed
    return changed


def break_tool_json(data: bytes, route: str, extra: str = "") -> bytes | None:
    """The capture with the first tool call's joined arguments made invalid JSON (its last
    fragment gets ``extra`` and an unbalanced ``"}``, and its full copies the same arguments);
    ``None`` when it has no argument fragments."""
    cmap = scan_capture(data, route)
    groups: dict[Any, list[_Slot]] = {}
    for slot in cmap.slots:
        if slot.kind == "fragment":
            groups.setdefault(slot.group, []).append(slot)
    for slots in groups.values():
        last = slots[-1]
        joined = "".join(s.container[s.key] for s in slots)
        last.container[last.key] = last.container[last.key] + extra + '"}'
        # its full copies (``.done``, the closed item) broken alike
        dirty = {last.line} | _rewrite_full_copies(cmap, {joined: joined + extra + '"}'})
        return _rebuild(data, cmap, dirty)
    return None


def error_event(route: str, message: str) -> bytes:
    """An in-stream provider error event in the route's own shape, carrying ``message``."""
    msg = json.dumps(message, ensure_ascii=False)
    templates = {
        "openai-chat": 'event: error\ndata: {"error":{"message":%s,"type":"server_error","code":"check"}}\n\n',
        "openai-responses": 'data: {"type":"error","code":"server_error","message":%s,"param":null}\n\n',
        "anthropic-messages": ('event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
                               '"message":%s}}\n\n'),
        "gemini": 'data: {"error":{"code":500,"message":%s,"status":"INTERNAL"}}\n\n',
    }
    template = templates.get(route, 'event: error\ndata: {"error":{"message":%s}}\n\n')
    return (template % msg).encode("utf-8")


# -- running one case --------------------------------------------------------------------------------


def run_case(factory: SessionFactory, chunks: Sequence[bytes]) -> tuple[StreamResult | None, Exception | None]:
    """One fresh session: open (200, event stream), feed ``chunks`` until it ends, finish."""
    try:
        session = factory()
        session.open(200, _EVENT_STREAM)
        for chunk in chunks:
            session.feed(chunk)
            if session.done:
                break
        return session.finish(), None
    except Exception as exc:  # a session must never raise for input; the check reports it
        return None, exc


def comparable(result: StreamResult) -> dict[str, Any]:
    """The fields of ``result`` that must not depend on chunking (:data:`COMPARED_FIELDS`)."""
    view = {name: getattr(result, name) for name in COMPARED_FIELDS}
    telemetry = result.telemetry.to_dict()
    for name in CHUNKING_DEPENDENT_TELEMETRY:
        telemetry.pop(name, None)
    view["telemetry"] = telemetry
    return view


def _differences(expected: dict[str, Any], got: dict[str, Any]) -> list[str]:
    return [name for name in COMPARED_FIELDS if expected.get(name) != got.get(name)]


def _ready_calls(result: StreamResult) -> int:
    calls = list(result.tool_calls)
    for choice in result.choices:
        calls.extend(choice.tool_calls)
    return sum(1 for call in calls if call.ready)


class _Tally:
    """Counts the cases of one check and keeps the first failure."""

    def __init__(self, name: str, total: int, progress: Progress | None) -> None:
        self.name = name
        self.total = total
        self.cases = 0
        self.failures = 0
        self.first: CaseFailure | None = None
        self._progress = progress

    def record(self, case: str, problem: str | None, result: StreamResult | None = None,
               position: int | None = None, category: str | None = None) -> None:
        self.cases += 1
        if problem is not None:
            self.failures += 1
            if self.first is None:
                self.first = CaseFailure(self.name, case, position, category,
                                         None if result is None else result.outcome.value,
                                         None if result is None else plain_stage(result.stage), problem)
        if self._progress is not None:
            self._progress(self.name, self.cases, max(self.total, self.cases))

    def result(self, **coverage: Any) -> CheckResult:
        return CheckResult(self.name, self.cases, self.failures, self.first, dict(coverage))


def _raised(exc: Exception) -> str:
    return f"session raised {type(exc).__name__}"


# -- position selection ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Positions:
    """The positions one check runs, with their categories, and how they were chosen."""

    items: tuple[tuple[int, str], ...]
    candidates: int
    special: int
    sampled: bool

    def coverage(self) -> dict[str, Any]:
        by_category: dict[str, int] = {}
        for _, category in self.items:
            by_category[category] = by_category.get(category, 0) + 1
        return {"positions": len(self.items), "candidates": self.candidates, "special_candidates": self.special,
                "sampled": self.sampled, "by_category": by_category}


#: Which special positions a sampled split check takes first: the ones the issue names (inside
#: characters, CRLF pairs, tool JSON), then event boundaries and the terminal event.
SPLIT_TIERS: tuple[tuple[str, ...], ...] = (("multibyte", "crlf", "tool_json"), ("boundary", "tail"))

#: The same for the EOF check, where a cut at an event boundary or inside the terminal event is
#: what exposes "EOF taken as completion".
EOF_TIERS: tuple[tuple[str, ...], ...] = (("boundary", "tail"), ("multibyte", "crlf", "tool_json"))


def select_positions(cmap: CaptureMap, config: CheckConfig, *, include_zero: bool, salt: int,
                     tiers: tuple[tuple[str, ...], ...] = SPLIT_TIERS) -> Positions:
    """Every position in ``[lo, size)`` when affordable. Otherwise the special positions tier by
    tier (all of a tier when it fits, else round-robin across its categories in seeded order),
    topped up with a seeded uniform sample."""
    size = cmap.size
    lo = 0 if include_zero else 1
    candidates = max(0, size - lo)
    label: dict[int, str] = {}
    for category in CATEGORIES:
        for p in cmap.special[category]:
            if p >= lo:
                label.setdefault(p, category)
    if config.max_splits is not None:
        cap = config.max_splits
    elif size <= config.every_position_max:
        cap = candidates
    else:
        cap = max(MIN_SAMPLED_POSITIONS, config.work_budget // max(1, size))
    if candidates <= cap:
        items = tuple((p, label.get(p, "every")) for p in range(lo, size))
        return Positions(items, candidates, len(label), False)
    rng = random.Random((config.seed << 8) ^ salt)
    chosen: dict[int, str] = {}
    for tier in tiers:
        queues = [[p for p in cmap.special[category] if label.get(p) == category] for category in tier]
        if len(chosen) + sum(map(len, queues)) <= cap:
            chosen.update((p, label[p]) for queue in queues for p in queue)
            continue
        for queue in queues:
            rng.shuffle(queue)
        while len(chosen) < cap and any(queues):
            for queue in queues:
                if queue and len(chosen) < cap:
                    p = queue.pop()
                    chosen[p] = label[p]
        break
    while len(chosen) < cap:  # cap < candidates here, so this ends
        p = rng.randrange(lo, size)
        chosen.setdefault(p, label.get(p, "sample"))
    return Positions(tuple(sorted(chosen.items())), candidates, len(label), True)


# -- the checks --------------------------------------------------------------------------------------


def check_splits(data: bytes, factory: SessionFactory, reference: StreamResult, positions: Positions,
                 progress: Progress | None = None) -> CheckResult:
    """One cut per selected position: ``feed(data[:i])``, ``feed(data[i:])``, same result."""
    expected = comparable(reference)
    tally = _Tally("split", len(positions.items), progress)
    for pos, category in positions.items:
        result, exc = run_case(factory, (data[:pos], data[pos:]))
        problem = _raised(exc) if exc is not None else None
        if result is not None:
            diff = _differences(expected, comparable(result))
            problem = f"differs in {', '.join(diff)}" if diff else None
        tally.record(f"split@{pos}", problem, result, pos, category)
    return tally.result(**positions.coverage())


def cut_patterns(cmap: CaptureMap, seed: int, count: int) -> list[tuple[str, list[int]]]:
    """The multi-cut patterns: byte-wise (or 3-byte chunks when huge), every special position at
    once, fixed chunk sizes, and ``count`` seeded random patterns plus one dense one."""
    size = cmap.size
    patterns: list[tuple[str, list[int]]] = []
    if size > 1:
        step = 1 if size <= BYTEWISE_MAX_BYTES else 3
        patterns.append(("bytewise" if step == 1 else "chunk-size-3", list(range(step, size, step))))
    specials = sorted({p for positions in cmap.special.values() for p in positions})
    if specials:
        patterns.append(("every-special", specials))
    for chunk in (2, 5, 64, 1024):
        if chunk < size:
            patterns.append((f"chunk-size-{chunk}", list(range(chunk, size, chunk))))
    if size > 1:
        rng = random.Random(seed)
        for n in range(count):
            k = rng.randint(2, max(2, min(size - 1, MAX_PATTERN_CUTS)))
            patterns.append((f"random#{n}", sorted({rng.randrange(1, size) for _ in range(k)})))
        dense = max(2, size // 8)
        patterns.append((f"random#{count}-dense", sorted({rng.randrange(1, size) for _ in range(dense)})))
    return patterns


def _chunks(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    out, prev = [], 0
    for cut in cuts:
        if prev < cut < len(data):
            out.append(data[prev:cut])
            prev = cut
    out.append(data[prev:])
    return out


def check_multisplit(data: bytes, factory: SessionFactory, reference: StreamResult, cmap: CaptureMap,
                     config: CheckConfig, extra_chunks: Sequence[bytes] | None = None,
                     progress: Progress | None = None) -> CheckResult:
    """Many cuts at once (see :func:`cut_patterns`), plus empty chunks and the caller's chunking."""
    expected = comparable(reference)
    cases: list[tuple[str, list[bytes]]] = [(label, _chunks(data, cuts))
                                            for label, cuts in cut_patterns(cmap, config.seed, config.patterns)]
    sevens = [data[i : i + 7] for i in range(0, len(data), 7)]
    cases.append(("empty-chunks", [b""] + [c for chunk in sevens for c in (chunk, b"")]))
    if extra_chunks is not None:
        cases.append(("given-chunking", list(extra_chunks)))
    tally = _Tally("multisplit", len(cases), progress)
    for label, chunks in cases:
        result, exc = run_case(factory, chunks)
        problem = _raised(exc) if exc is not None else None
        if result is not None:
            diff = _differences(expected, comparable(result))
            problem = f"differs in {', '.join(diff)} ({len(chunks)} chunks)" if diff else None
        tally.record(label, problem, result)
    return tally.result(patterns=len(cases))


def check_eof(data: bytes, factory: SessionFactory, reference: StreamResult, cmap: CaptureMap,
              positions: Positions, progress: Progress | None = None) -> CheckResult:
    """EOF after each selected proper prefix: no tool call ready, and not ``complete`` unless the
    prefix already holds the whole response (it reaches :attr:`CaptureMap.complete_from`, so only
    ignorable trailer is cut off) *and* its result equals the reference's."""
    expected = comparable(reference)
    content = [name for name in COMPARED_FIELDS if name != "telemetry"]
    tally = _Tally("eof", len(positions.items), progress)
    for pos, category in positions.items:
        result, exc = run_case(factory, (data[:pos],) if pos else ())
        problem = _raised(exc) if exc is not None else None
        if result is not None:
            problems = []
            if result.outcome is Outcome.COMPLETE or result.committed:
                if pos < cmap.complete_from:
                    problems.append("complete at a proper prefix")
                else:
                    got = comparable(result)
                    diff = [name for name in content if got[name] != expected[name]]
                    if diff:
                        problems.append(f"complete before the trailer but differs in {', '.join(diff)}")
            else:
                ready = _ready_calls(result)
                if ready:
                    problems.append(f"{ready} tool call(s) ready at a proper prefix")
            problem = "; ".join(problems) or None
        tally.record(f"eof@{pos}", problem, result, pos, category)
    return tally.result(**positions.coverage(), complete_from=cmap.complete_from)


def injection_sites(cmap: CaptureMap, count: int, seed: int) -> list[int]:
    """Event boundaries up to the terminal event's start (and 0), at most ``count``: the start,
    the first boundary, then seeded picks from the rest."""
    inner = [b for b in cmap.boundaries if b <= cmap.last_event and b < cmap.size]
    sites = [0, *inner[:1]]
    rest = inner[1:]
    random.Random(seed ^ 0x51735).shuffle(rest)
    sites.extend(rest)
    return sorted(dict.fromkeys(sites[: max(1, count)]))


def _bounded(session: object, limits: Limits, chunk: int) -> str | None:
    counts = pending_counts(session)
    if counts is None:
        return "session exposes no pending counters"
    pending_bytes, line, event = counts
    if pending_bytes > 3:
        return f"{pending_bytes} pending decoder bytes"
    if line > limits.max_line_chars + chunk:
        return f"pending line {line} chars > ceiling {limits.max_line_chars} + chunk {chunk}"
    if event > limits.max_event_chars + chunk:
        return f"pending event {event} chars > ceiling {limits.max_event_chars} + chunk {chunk}"
    return None


def inject_line(factory: SessionFactory, prefix: bytes, limits: Limits) -> tuple[StreamResult | None, str | None]:
    """Feed ``prefix``, then a ``data:`` line that never ends: filled exactly to the line ceiling
    (must not trip), then one character more (must trip ``buffer_limit`` / ``line`` in that very
    feed). Pending counters are checked after every feed."""
    ceiling = limits.max_line_chars
    chunk = max(1, min(INJECTION_CHUNK_BYTES, ceiling // 8))
    head = b'data: {"injected":"'[:ceiling]
    fill = b"x" * chunk
    pieces = [head] if head else []
    remaining = ceiling - len(head)
    while remaining > 0:
        pieces.append(fill[: min(chunk, remaining)])
        remaining -= len(pieces[-1])
    result, problem = _fill_to_ceiling(factory, prefix, limits, pieces, b"x", chunk, "line", "one character")
    if problem is None and result is not None and result.telemetry.pending_line_character_count > ceiling:
        return result, "telemetry reports a pending line above the ceiling"
    return result, problem


def inject_event(factory: SessionFactory, prefix: bytes, limits: Limits) -> tuple[StreamResult | None, str | None]:
    """Feed ``prefix``, then complete ``data:`` lines with no blank line that fill the event ceiling
    exactly (each adds its value and an LF to the event's data; the last one shorter where the
    ceiling is not a multiple of a line): no trip allowed; then an empty ``data:`` line, one character
    more, which must trip ``buffer_limit`` / ``event``. So a ceiling off by one either way is found."""
    if limits.max_line_chars < 5:
        return None, None  # not applicable: no data line fits the line ceiling
    # the longest line that fits the line ceiling and one injection chunk: "data:", the value, LF
    value = min(limits.max_line_chars - 5, INJECTION_CHUNK_BYTES - 6)
    line = b"data:" + b"y" * value + b"\n"
    fit, rest = divmod(limits.max_event_chars, value + 1)
    batch = INJECTION_CHUNK_BYTES // len(line)
    pieces = [line * min(batch, fit - sent) for sent in range(0, fit, batch)]
    if rest:  # (rest <= value: this shorter line fits the line ceiling too)
        pieces.append(b"data:" + b"y" * (rest - 1) + b"\n")
    return _fill_to_ceiling(factory, prefix, limits, pieces, b"data:\n", batch * len(line), "event", "one character")


def _fill_to_ceiling(factory: SessionFactory, prefix: bytes, limits: Limits, pieces: list[bytes], overflow: bytes,
                     chunk: int, stage: str, overflow_name: str) -> tuple[StreamResult | None, str | None]:
    """The shared drive of the two injections: ``prefix``, then ``pieces`` (which together reach the
    ``stage`` ceiling exactly: no trip allowed), then ``overflow`` (which must trip it), checking the
    pending counters against the ceilings after every feed."""
    try:
        session = factory()
        session.open(200, _EVENT_STREAM)
        if prefix:
            session.feed(prefix)
        if session.done:
            return session.finish(), "the prefix alone ended the session"
        for piece in pieces:
            session.feed(piece)
            problem = _bounded(session, limits, chunk)
            if problem is not None:
                return None, problem
            if session.done:
                return session.finish(), f"tripped before the {stage} reached its ceiling"
        session.feed(overflow)
        problem = _bounded(session, limits, chunk)
        if problem is not None:
            return None, problem
        if not session.done:
            return session.finish(), f"no failure {overflow_name} past the {stage} ceiling"
        result = session.finish()
    except Exception as exc:
        return None, _raised(exc)
    if result.outcome is not Outcome.BUFFER_LIMIT or result.stage != stage:
        return result, f"did not end as buffer_limit at stage {stage}"
    return result, None


def check_oversized(data: bytes, factory: SessionFactory, cmap: CaptureMap, limits: Limits, config: CheckConfig,
                    progress: Progress | None = None) -> CheckResult:
    """A never-terminated line and a never-dispatched event at each injection site."""
    sites = injection_sites(cmap, config.injection_sites, config.seed)
    tally = _Tally("oversized", 2 * len(sites), progress)
    for n, site in enumerate(sites):
        result, problem = inject_line(factory, data[:site], limits)
        tally.record(f"line@boundary {n}", problem, result, site, "boundary")
        result, problem = inject_event(factory, data[:site], limits)
        if result is None and problem is None:
            continue
        tally.record(f"event@boundary {n}", problem, result, site, "boundary")
    return tally.result(sites=len(sites), line_ceiling=limits.max_line_chars, event_ceiling=limits.max_event_chars)


def growth_site(cmap: CaptureMap, route: str) -> int | None:
    """The first event boundary past the route's start event and before its terminal event
    (``None`` when there is none); 0 for a route without a start event (data-only routes grow from
    the capture's first byte)."""
    from ._routes import ROUTES  # deferred, as in _ignores_done

    entry = ROUTES.get(route)
    start = entry.contract.start_event if entry is not None else None
    if start is None:
        return 0
    lines = [line for line in cmap.data_lines if isinstance(line.obj, dict) and line.obj.get("type") == start]
    if not lines:
        return None
    after = lines[0].stop
    sites = [b for b in cmap.boundaries if after <= b <= cmap.last_event]
    return sites[0] if sites else None


def check_growth(data: bytes, factory: SessionFactory, cmap: CaptureMap, route: str, limits: Limits,
                 progress: Progress | None = None) -> CheckResult:
    """Each structure of :mod:`webclient._check_growth` grown without end after a prefix of the capture."""
    growth = _check_growth.cases(route, limits)
    site = growth_site(cmap, route)
    if site is None:
        growth = []
    tally = _Tally("growth", len(growth), progress)
    budget = _check_growth.growth_budget(limits)
    for case in growth:
        result: StreamResult | None = None
        try:
            session = factory()
            session.open(200, _EVENT_STREAM)
            session.feed(data[:site])
            if session.done:
                result = session.finish()
                tally.record(f"growth:{case.name}", "the prefix alone ended the session", result, site, "boundary")
                continue
            for chunk in _check_growth.feed_chunks(case, budget):
                session.feed(chunk)
                if session.done:
                    break
            done = session.done
            result = session.finish()
            problem = _check_growth.verdict(case, result.outcome.value, result.stage, done)
        except Exception as exc:
            problem = _raised(exc)
        tally.record(f"growth:{case.name}", problem, result, site, "boundary")
    return tally.result(site=site, retained_ceiling=limits.max_retained_chars, budget=budget,
                        structures=_check_growth.expected_stages(growth))


def _leak_surfaces(result: StreamResult) -> Iterator[tuple[str, str]]:
    yield "telemetry", json.dumps(result.telemetry.to_dict(), ensure_ascii=False, default=str)
    yield "stage", str(result.stage)
    calls = list(result.tool_calls)
    for choice in result.choices:
        calls.extend(choice.tool_calls)
    yield "tool_call_problems", " ".join(p for call in calls for p in call.problems)
    if result.provider_error is not None:
        yield "provider_error", json.dumps(result.provider_error.to_dict(), ensure_ascii=False)


def _content_of(result: StreamResult) -> str:
    texts = [result.text, result.refusal, result.reasoning]
    for choice in result.choices:
        texts.extend((choice.text, choice.refusal, choice.reasoning))
        texts.extend(call.input_text for call in choice.tool_calls)
        texts.append(json.dumps([choice.items, choice.citations, choice.logprobs], ensure_ascii=False))
    texts.extend(call.input_text for call in result.tool_calls)
    texts.append(json.dumps(result.assistant_message, ensure_ascii=False))  # what goes back as it came
    texts.append(json.dumps(result.details, ensure_ascii=False))
    return "\n".join(texts)


def _leak_problem(canary: Canary, result: StreamResult | None, exc: Exception | None) -> str | None:
    if exc is not None:
        text = f"{exc!s} {exc!r}"
        return _raised(exc) + (" with the canary in its text" if canary.found_in(text) else "")
    assert result is not None
    leaked = [name for name, text in _leak_surfaces(result) if canary.found_in(text)]
    return f"canary in {', '.join(leaked)}" if leaked else None


def _overflowing_line(filler: bytes, ceiling: int) -> list[bytes]:
    """A ``data:`` line of repeated ``filler`` that passes ``ceiling`` characters, never ended,
    in chunks of at most :data:`INJECTION_CHUNK_BYTES`."""
    repeats = ceiling // max(1, len(filler.decode("utf-8", "replace"))) + 2
    line = b"data: " + filler * repeats
    return [line[i : i + INJECTION_CHUNK_BYTES] for i in range(0, len(line), INJECTION_CHUNK_BYTES)]


def check_leaks(data: bytes, factory: SessionFactory, route: str, limits: Limits, config: CheckConfig,
                progress: Progress | None = None) -> CheckResult:
    """Canary substitution (see :func:`canary_capture`), then every failure path: the canary must
    stay out of telemetry, stage names, tool-call problems, provider errors and exceptions."""
    canary = Canary.from_seed(config.seed)
    planted, counts = canary_capture(data, route, canary)
    cmap = scan_capture(planted, route)
    sites = injection_sites(cmap, LEAK_PREFIXES + 1, config.seed)
    mid = sites[len(sites) // 2] if sites else 0
    head, tail = planted[:mid], planted[mid:]
    secret = canary.value.encode("utf-8")
    cases: list[tuple[str, list[bytes]]] = [
        ("canary-whole", [planted]),
        ("canary-chunk-size-7", _chunks(planted, range(7, len(planted), 7))),
    ]
    cases.extend((f"canary-eof@{site}", [planted[:site]]) for site in sites[1 : LEAK_PREFIXES + 1])
    if len(planted) > 2:
        cases.append(("canary-eof-mid-line", [planted[:-2]]))
    cases.append(("canary-error-event", [head, error_event(route, canary.value), tail]))
    cases.append(("canary-bad-envelope", [head, b"data: {" + secret + b"\n\n", tail]))
    marker_at = planted.find(canary.marker.encode())
    if marker_at >= 0:
        cut = marker_at + len(canary.marker)
        cases.append(("canary-bad-utf8", [planted[:cut] + b"\xff" + planted[cut:]]))
    broken = break_tool_json(planted, route, canary.value)
    if broken is not None:
        cases.append(("canary-bad-tool-json", [broken]))
    cases.append(("canary-oversized-line", [head, *_overflowing_line(secret, limits.max_line_chars)]))
    tally = _Tally("leak", len(cases), progress)
    reached = False
    for label, chunks in cases:
        result, exc = run_case(factory, chunks)
        if label == "canary-whole" and result is not None:
            reached = canary.found_in(_content_of(result))
        tally.record(label, _leak_problem(canary, result, exc), result)
    return tally.result(substitutions=counts, canary_reached_output=reached)


def check_reset(data: bytes, factory: SessionFactory, reference: StreamResult, cmap: CaptureMap, route: str,
                limits: Limits, config: CheckConfig, progress: Progress | None = None) -> CheckResult:
    """After a session failed in each way, a fresh session reproduces the reference exactly
    (the whole result dict, telemetry included); and a session interleaved with a failing one
    reproduces it too."""
    expected_full = reference.to_dict()
    expected = comparable(reference)
    sites = injection_sites(cmap, config.injection_sites, config.seed)
    prefix = data[: sites[len(sites) // 2]] if sites else b""
    failing: list[tuple[str, list[bytes], bool]] = [
        ("after-truncated", [data[: cmap.complete_from - 1]], False),
        ("after-decode-error", [prefix, b"data: \xff\xfe\n\n"], False),
        ("after-protocol-error", [prefix, b"data: {\n\n"], False),
        ("after-upstream-error", [prefix, error_event(route, "check")], False),
        ("after-buffer-limit", [prefix, *_overflowing_line(b"z", limits.max_line_chars)], False),
        ("after-cancel", [prefix], True),
    ]
    broken = break_tool_json(data, route)
    if broken is not None:
        failing.append(("after-payload-error", [broken], False))
    tally = _Tally("reset", len(failing) + 1, progress)
    for label, chunks, cancel in failing:
        problem: str | None = None
        result: StreamResult | None = None
        try:
            first = factory()
            first.open(200, _EVENT_STREAM)
            for chunk in chunks:
                if first.done:
                    break
                first.feed(chunk)
            if cancel:
                first.abort()
            if first.finish().outcome is Outcome.COMPLETE:
                problem = "the failing session ended complete"
        except Exception as exc:
            problem = _raised(exc)
        if problem is None:
            result, error = run_case(factory, (data,))
            if error is not None:
                problem = _raised(error)
            elif result is not None and result.to_dict() != expected_full:
                diff = _differences(expected, comparable(result)) or ["telemetry"]
                problem = f"fresh session differs in {', '.join(diff)}"
        tally.record(label, problem, result)
    problem, result = _interleaved(data, factory, expected, prefix)
    tally.record("interleaved", problem, result)
    return tally.result(failure_kinds=len(failing) + 1)


def _interleaved(data: bytes, factory: SessionFactory, expected: dict[str, Any],
                 prefix: bytes) -> tuple[str | None, StreamResult | None]:
    """A failing session and a good one fed alternately, chunk by chunk."""
    good_chunks = _chunks(data, [len(data) * k // 8 for k in range(1, 8)])
    bad_chunks = [prefix, b"data: \xff{\n\n", b"data: " + b"w" * 64]
    try:
        bad, good = factory(), factory()
        bad.open(200, _EVENT_STREAM)
        good.open(200, _EVENT_STREAM)
        for i in range(max(len(good_chunks), len(bad_chunks))):
            if i < len(bad_chunks) and not bad.done:
                bad.feed(bad_chunks[i])
            if i < len(good_chunks) and not good.done:
                good.feed(good_chunks[i])
        failed = bad.finish()
        result = good.finish()
    except Exception as exc:
        return _raised(exc), None
    if failed.outcome is Outcome.COMPLETE:
        return "the failing session ended complete", result
    diff = _differences(expected, comparable(result))
    return (f"differs in {', '.join(diff)}" if diff else None), result


# -- the whole battery -------------------------------------------------------------------------------


def check_capture(data: bytes, factory: SessionFactory, *, route: str, limits: Limits = DEFAULT_LIMITS,
                  config: CheckConfig = CheckConfig(), extra_chunks: Sequence[bytes] | None = None,
                  progress: Progress | None = None) -> CheckReport:
    """Run every check on ``data``. ``factory`` must build sessions for ``route`` with ``limits``.

    When the whole capture does not end ``complete`` only the ``whole`` check runs and the
    report's exit code is 2 (or 1 if the session raised).
    """
    cmap = scan_capture(data, route)
    reference, exc = run_case(factory, (data,))
    whole = _Tally("whole", 1, progress)
    if exc is not None or reference is None:
        whole.record("whole", _raised(exc) if exc is not None else "no result")
        return CheckReport(route, len(data), cmap.events, None, None, None, config.seed, (whole.result(),))
    problem = None
    if reference.outcome is Outcome.COMPLETE:
        t = reference.telemetry
        if t.bytes_received != len(data):
            problem = f"telemetry bytes_received {t.bytes_received} != capture size {len(data)}"
        elif t.pending_line_character_count or t.pending_event_character_count:
            problem = "complete with pending line/event characters in telemetry"
    whole.record("whole", problem, reference)
    report = CheckReport(route, len(data), cmap.events, reference.outcome.value, plain_stage(reference.stage),
                         reference.telemetry.stop_reason, config.seed, (whole.result(),))
    if reference.outcome is not Outcome.COMPLETE:
        return report
    splits = select_positions(cmap, config, include_zero=False, salt=1)
    prefixes = select_positions(cmap, config, include_zero=True, salt=2, tiers=EOF_TIERS)
    results = (
        whole.result(),
        check_splits(data, factory, reference, splits, progress),
        check_multisplit(data, factory, reference, cmap, config, extra_chunks, progress),
        check_eof(data, factory, reference, cmap, prefixes, progress),
        check_oversized(data, factory, cmap, limits, config, progress),
        check_growth(data, factory, cmap, route, limits, progress),
        check_leaks(data, factory, route, limits, config, progress),
        check_reset(data, factory, reference, cmap, route, limits, config, progress),
    )
    return CheckReport(report.route, report.capture_bytes, report.events, report.whole_outcome, report.whole_stage,
                       report.stop_reason, report.seed, results)
