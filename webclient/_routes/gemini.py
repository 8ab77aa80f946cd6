"""Gemini ``streamGenerateContent?alt=sse``.

Wire facts (``route-contracts.md`` §4):

* data-only events, each a ``GenerateContentResponse`` (``candidates[]``, ``usageMetadata``,
  ``promptFeedback``); separators may be CRLF (handled by the SSE layer). No start event, no
  ``[DONE]`` (a stray one is ignored).
* candidates are keyed by ``candidates[].index`` (default 0); candidate 0's text is the result's
  text. ``text`` parts with ``thought: true`` are reasoning, never text.
* part fields (``Part``; googleapis js-genai ``types.Part``): the data fields ``text``,
  ``functionCall``, ``executableCode``, ``codeExecutionResult``, ``inlineData``, ``fileData`` (at
  most one per part) and the metadata ``thought`` and ``thoughtSignature``; any other field is
  ``unknown_type`` (the session's ``keep_unknown_items`` keeps the part verbatim in ``items``).
  ``executableCode`` / ``codeExecutionResult`` (hosted code execution) and ``inlineData`` /
  ``fileData`` (generated media) are result ``items``; so are a candidate's ``groundingMetadata``
  and ``urlContextMetadata`` (hosted search / URL context; the latest one is kept).
  ``citationMetadata`` sources (``citationSources``, Vertex ``citations``) are citations.
* the assistant message is ``{"role": "model", "parts": [...]}``: consecutive unsigned text
  parts of one kind are merged; a part carrying ``thoughtSignature`` is kept as its own part with
  the signature on it (signatures are never moved between parts); other parts verbatim.
* a ``functionCall`` part normally arrives whole (``name`` + ``args`` object): the call opens,
  closes and is validated at once (``args`` absent means ``{}``).
* Streamed arguments (Vertex / Gemini 3, ``streamFunctionCallArguments``): a ``functionCall`` with
  ``name`` and ``willContinue: true`` opens a call; following ``functionCall`` parts carry
  ``partialArgs[{jsonPath, stringValue | numberValue | boolValue | nullValue, willContinue}]``;
  ``stringValue`` fragments for the same ``jsonPath`` are concatenated (a surrogate pair split
  across two is one character), other values replace.
  The value fields are a union (at most one per element; ``nullValue`` is ``"NULL_VALUE"`` or
  ``null``): two of them, or a value of the wrong type, is ``envelope``, and an element field
  outside these six is ``unknown_type`` (the arguments would lack a value nobody read).
  The first ``functionCall`` part *without* ``willContinue: true`` (in the recording, an empty
  ``{}``) closes the call; so does the candidate's ``finishReason``. At close the object is
  built from the paths (``$.a.b``, ``$.a[0]``, ``$['a']``) and validated; a path outside that
  grammar makes the call ``invalid`` (``tool_json``).
* terminal: every candidate seen carries ``finishReason`` (a ``promptFeedback.blockReason`` is a
  terminal refusal of the prompt, even in a chunk that also has candidates), then EOF; any event after it is
  ``after_terminal``. Only ``STOP`` commits (:data:`STOP_REASONS`): ``MAX_TOKENS`` is length, the
  safety / recitation / language reasons are filters, and ``OTHER``, ``MALFORMED_FUNCTION_CALL``,
  ``UNEXPECTED_TOOL_CALL`` ... are provider failures.
* hosted code execution (the ``code_execution`` tool, and the file search tool that runs as code): the API
  puts ``finishReason: "STOP"`` on the chunk that carries the model's ``executableCode`` part, then streams
  the code's result and the rest of the answer, ending with a second ``STOP`` (pydantic-ai's live
  recordings of both tools). So a ``STOP`` that arrives while the candidate's latest part is an
  ``executableCode`` does not finish it: the server has code to run and the candidate stays open. Only a
  later ``finishReason`` finishes it; a stream that ends first is truncated (``eof``), never complete.
  Any other reason there finishes the candidate as usual.
* an ``error`` object in a chunk is ``upstream_error`` (``error.status`` / ``error.code`` kept).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from .._limits import ENTRY_CHARS, MAX_JSON_DEPTH
from .._toolcalls import ToolCallBuffer
from .._updates import JSON, ToolCall
from .._values import combine_surrogates, has_surrogate, may_hold_surrogate, parsed_value_encoder
from ._base import ChoiceState, RouteAccumulator, RouteContract, TextBuffer, stop_table

#: ``finishReason`` by category: the ``FinishReason`` enum of the Gemini API
#: (https://ai.google.dev/api/generate-content#FinishReason; googleapis/python-genai
#: ``google/genai/types.py`` ``FinishReason``: FINISH_REASON_UNSPECIFIED, STOP, MAX_TOKENS, SAFETY,
#: RECITATION, LANGUAGE, OTHER, BLOCKLIST, PROHIBITED_CONTENT, SPII, MALFORMED_FUNCTION_CALL,
#: IMAGE_SAFETY, UNEXPECTED_TOOL_CALL, TOO_MANY_TOOL_CALLS, IMAGE_PROHIBITED_CONTENT, NO_IMAGE,
#: IMAGE_RECITATION, IMAGE_OTHER; ``MISSING_THOUGHT_SIGNATURE`` in google-genai-kotlin and later
#: SDKs; ``MALFORMED_RESPONSE`` sent by the API, googleapis/python-genai#2937). vercel/ai's
#: ``map-google-generative-ai-finish-reason.ts`` maps the safety family to content-filter and
#: MALFORMED_FUNCTION_CALL to error. ``LANGUAGE`` (an unsupported language) withholds the answer:
#: filter. ``OTHER``, ``FINISH_REASON_UNSPECIFIED`` and the tool / image failures say generation
#: failed: failure.
STOP_REASONS = stop_table(
    success=("STOP",),
    length=("MAX_TOKENS",),
    filter=("SAFETY", "RECITATION", "LANGUAGE", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
            "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION"),
    failure=("FINISH_REASON_UNSPECIFIED", "OTHER", "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL",
             "TOO_MANY_TOOL_CALLS", "MISSING_THOUGHT_SIGNATURE", "MALFORMED_RESPONSE", "NO_IMAGE", "IMAGE_OTHER"),
)

#: ``promptFeedback.blockReason`` (https://ai.google.dev/api/generate-content#BlockReason:
#: BLOCK_REASON_UNSPECIFIED, SAFETY, OTHER, BLOCKLIST, PROHIBITED_CONTENT, IMAGE_SAFETY; the SDK
#: spells the first BLOCKED_REASON_UNSPECIFIED): the prompt was refused, a filter stop whatever
#: the value. Anything else fails closed.
PROMPT_BLOCK_REASONS = stop_table(
    success=(),
    filter=("BLOCK_REASON_UNSPECIFIED", "BLOCKED_REASON_UNSPECIFIED", "SAFETY", "OTHER", "BLOCKLIST",
            "PROHIBITED_CONTENT", "IMAGE_SAFETY"),
)

#: Part fields this route knows -> what they are (``data`` fields: at most one per part).
CONTENT_TYPES = {
    "text": "data:text",
    "functionCall": "data:call:function",
    "executableCode": "data:item",
    "codeExecutionResult": "data:item",
    "inlineData": "data:item",
    "fileData": "data:item",
    "thought": "meta",
    "thoughtSignature": "meta",
    "groundingMetadata": "candidate:item",
    "urlContextMetadata": "candidate:item",
    "citationMetadata": "candidate:citations",
}
#: The part fields this route reads (a part with any other is ``unknown_type``; ``check`` plants the others).
PART_FIELDS = frozenset(k for k, v in CONTENT_TYPES.items() if not v.startswith("candidate"))
_DATA_FIELDS = frozenset(k for k, v in CONTENT_TYPES.items() if v.startswith("data"))
#: Candidate fields kept whole as items (the latest of each): read from the table, so the contract names them.
_CANDIDATE_ITEMS = tuple(k for k, v in CONTENT_TYPES.items() if v == "candidate:item")
#: Every candidate field :meth:`GeminiAccumulator._candidate_metadata` reads (a candidate with none
#: of them skips it).
_CANDIDATE_KEYS = frozenset(k for k, v in CONTENT_TYPES.items() if v.startswith("candidate"))

CONTRACT = RouteContract(
    name="gemini",
    endpoint="/v1beta/models/{model}:streamGenerateContent?alt=sse",
    success_status=200,
    start_event=None,
    text_delta=("candidates[].content.parts[].text",),
    tool_input_delta=("candidates[].content.parts[].functionCall.partialArgs",),
    block_open=("candidates[].index", "candidates[].content.parts[].functionCall"),
    block_close=("candidates[].finishReason", "functionCall without willContinue"),
    terminal=("candidates[].finishReason", "promptFeedback.blockReason"),
    error=("chunk.error",),
    usage=("usageMetadata",),
    keep_alive=(),
    accumulator_key="candidates[].index; one streaming functionCall per candidate at a time",
    close_condition="whole functionCall parts close at once; streamed ones at the first part without willContinue",
    terminal_condition="every candidate seen carries finishReason, then EOF",
    stop_reasons=STOP_REASONS,
    content_types=CONTENT_TYPES,
    dispatch_key=None,
    before_start=frozenset(),
    choices_key="candidates",
    cross_check_event_name=False,
    done_sentinel="ignored",
)

_dumps = json.dumps
#: ``json.dumps(value, ensure_ascii=False)`` for a parsed value (``args``), without an encoder per call.
_dumps_text = parsed_value_encoder(allow_nan=True)
# One step of a partialArgs jsonPath: .name | [digits] | ['name'] | ["name"]
_PATH_STEP = re.compile(r"\.([A-Za-z0-9_\-]+)|\[(\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")
#: A whole path of one ``.name`` step (the first alternative of :data:`_PATH_STEP`).
_ONE_STEP = re.compile(r"\$\.([A-Za-z0-9_\-]+)").fullmatch
#: Steps of one path at most: the assembled arguments nest no deeper than any JSON webclient parses
#: (a deeper object could not be serialized or validated without exhausting Pyodide's stack).
MAX_PATH_STEPS = MAX_JSON_DEPTH
#: Digits of an array index at most: an index is placed only at or below its list's length, which
#: is below the number of paths; more digits could only be refused, after a ``int()`` whose cost
#: grows faster than linearly with the digits (CPython refuses more than 4300).
MAX_INDEX_DIGITS = 9
#: A ``partialArgs`` element's fields (Vertex ``PartialArg``): the path, the per-path continuation flag, and
#: the union field ``delta``, at most one of the four value fields. Any other field is a value this route
#: cannot read: the call's arguments would be missing it, so it fails closed (``unknown_type``).
_ARG_FIELDS = frozenset(("jsonPath", "willContinue", "stringValue", "numberValue", "boolValue", "nullValue"))
_VALUE_KEYS = ("stringValue", "numberValue", "boolValue", "nullValue")
#: ``nullValue`` as proto3 JSON writes the ``NullValue`` enum (the SDKs' type), or JSON ``null`` (the REST
#: reference's JSON representation).
_NULL_VALUES = ("NULL_VALUE", None)


def _runs_code(part: object) -> bool:
    """Whether an assistant-message part is hosted code the server has yet to run (an ``executableCode``
    part: the code's result and the rest of the answer follow it)."""
    return part.__class__ is dict and "executableCode" in part


class _Candidate(ChoiceState):
    """Per-candidate accumulation (no refusal channel), plus the call whose arguments stream and
    the parts of the assistant message."""

    __slots__ = ("items", "metadata", "parts", "paths", "record", "streaming")

    def __init__(self, index: int) -> None:
        super().__init__(index)
        #: The call whose arguments are streaming (partialArgs), if any, and its message part.
        self.streaming: ToolCallBuffer | None = None
        self.record: _Call | None = None
        #: jsonPath -> list of string fragments, or a one-element tuple holding a scalar value.
        self.paths: dict[str, list[str] | tuple[object]] = {}
        #: The assistant message's parts, in order: a text run ``_Run``, a verbatim part (dict), or a
        #: streamed call ``_Call``.
        self.parts: list[_Run | dict[str, Any] | _Call] = []
        #: Verbatim result parts (executableCode ...) and kept unknown parts, in order.
        self.items: list[JSON] = []
        #: The latest ``groundingMetadata`` / ``urlContextMetadata``.
        self.metadata: dict[str, JSON] = {}


class _Run:
    """Consecutive text of one kind (text or thought) as one message part: characters
    ``start:end`` of the candidate's buffer, with the signature of the part it came from."""

    __slots__ = ("buf", "end", "signature", "start", "thought")

    def __init__(self, buf: TextBuffer, thought: bool, start: int, signature: str | None) -> None:
        self.buf = buf
        self.thought = thought
        self.start = start
        self.end = start
        self.signature = signature

    def native(self, joined: str) -> dict[str, Any]:
        part: dict[str, Any] = {"text": joined[self.start : self.end]}
        if self.thought:
            part["thought"] = True
        if self.signature is not None:
            part["thoughtSignature"] = self.signature
        return part


class _Call:
    """A streamed function call as one message part (its arguments are assembled at close)."""

    __slots__ = ("call", "call_id", "signature")

    def __init__(self, call: ToolCallBuffer, call_id: str | None, signature: str | None) -> None:
        self.call = call
        self.call_id = call_id
        self.signature = signature

    def native(self) -> dict[str, Any]:
        fc: dict[str, Any] = {"name": self.call.name}
        if self.call_id is not None:
            fc["id"] = self.call_id
        fc["args"] = self.call.arguments if self.call.arguments is not None else {}
        part: dict[str, Any] = {"functionCall": fc}
        if self.signature is not None:
            part["thoughtSignature"] = self.signature
        return part


def parse_path(path: str) -> tuple[list[str | int] | None, int]:
    """``"$.a[0]['b']"`` -> ``(["a", 0, "b"], work)``; ``None`` outside the supported grammar, or
    deeper than :data:`MAX_PATH_STEPS`, or with an index of more than :data:`MAX_INDEX_DIGITS` digits.

    Linear: each step is one anchored match of :data:`_PATH_STEP`, whose alternatives are told apart
    by their first two characters and whose repeats stop at the first character that ends them, so
    a step is read once and a failing match reads at most the rest of the path, once (then the
    parse ends). ``work`` counts those characters: at most twice the path's length."""
    if not path.startswith("$"):
        return None, 1
    one = _ONE_STEP(path)
    if one is not None:  # the usual "$.name": the one step the loop below would read, and its work
        return [one[1]], len(path)
    steps: list[str | int] = []
    append = steps.append
    match = _PATH_STEP.match
    pos, end = 1, len(path)
    while pos < end:
        m = match(path, pos)
        if m is None or len(steps) == MAX_PATH_STEPS:
            return None, end
        name, number, quoted, dquoted = m.groups()
        if number is not None:
            if len(number) > MAX_INDEX_DIGITS:
                return None, m.end()
            append(int(number))
        else:
            append(name or quoted or dquoted or "")
        pos = m.end()
    return (steps or None), pos


def assemble(paths: dict[str, list[str] | tuple[object]]) -> tuple[dict[str, Any] | None, int]:
    """Assemble streamed partial arguments into an object (``None`` if a path cannot be placed),
    with the work done: characters of the paths read (:func:`parse_path`), steps walked, characters
    of string values joined (a surrogate pair split across two fragments joined into its character,
    as in every text). Each is at most a constant times the input, so assembling is linear
    in the paths and values streamed: every step is one dict or list operation, an index is placed
    only at or below the list's length (never padded), and nothing is rescanned."""
    root: dict[str, Any] = {}
    work = 0
    for path, held in paths.items():
        steps, cost = parse_path(path)
        work += cost
        if steps is None or not isinstance(steps[0], str):
            return None, work
        if isinstance(held, list):
            joined = "".join(held)
            work += len(joined)
            value: object = combine_surrogates(joined)  # a pair split across fragments is one character
        else:
            value = held[0]
        work += len(steps)
        if len(steps) == 1:  # "$.name": the loop below would set root[name]
            root[steps[0]] = value
            continue
        node: Any = root
        for step, nxt in zip(steps, [*steps[1:], None], strict=True):
            container: dict[str, Any] | list[Any] = {} if isinstance(nxt, str) else []
            if isinstance(step, str):
                if not isinstance(node, dict):
                    return None, work
                if nxt is None:
                    node[step] = value
                else:
                    node = node.setdefault(step, container)
            else:
                if not isinstance(node, list) or step > len(node):
                    return None, work
                if step == len(node):
                    node.append(value if nxt is None else container)
                elif nxt is None:
                    node[step] = value
                node = node[step]
    return root, work


def build_arguments(paths: dict[str, list[str] | tuple[object]]) -> dict[str, Any] | None:
    """Assemble streamed partial arguments into an object; ``None`` if a path cannot be placed."""
    return assemble(paths)[0]


class GeminiAccumulator(RouteAccumulator):
    """Accumulates ``GenerateContentResponse`` chunks; see the module docstring for the rules."""

    contract = CONTRACT
    choice_state = _Candidate

    __slots__ = ()

    # -- events (after the base's envelope step) -------------------------------------------

    def _chunk(self, obj: dict[str, Any], candidates: object) -> None:
        if self.response_id is None or self.model is None:
            self._identity(obj.get("responseId"), obj.get("modelVersion"))
        usage = obj.get("usageMetadata")
        if usage.__class__ is dict and self._charge_usage(usage):
            self.usage = usage
        if self.failure is not None:
            return
        feedback = obj.get("promptFeedback")
        if feedback.__class__ is dict:
            blocked = feedback.get("blockReason")
            if blocked.__class__ is str and blocked:
                # The prompt was refused. The API sends no candidates then; a chunk (or stream) that has
                # some as well contradicts itself, and the refusal decides: unknown is not success.
                self._terminal(blocked, 0, PROMPT_BLOCK_REASONS)
                return
        if candidates:
            for c in self._choices.values():
                if c.finish_reason is None:
                    return
            self._terminal_choices()

    def stop_reason_known(self, reason: str) -> bool:
        return reason in PROMPT_BLOCK_REASONS or super().stop_reason_known(reason)

    def _choice(self, st: _Candidate, cand: dict[str, Any]) -> None:
        """One element of ``candidates``."""
        content = cand.get("content")
        if content is not None:
            if content.__class__ is not dict:
                self._protocol("envelope")
                return
            parts = content.get("parts")
            if parts is not None:
                if parts.__class__ is not list:
                    self._protocol("envelope")
                    return
                if parts:
                    if st.finish_reason is not None:  # a finished candidate takes no more parts
                        self._protocol("closed_block")
                        return
                    for part in parts:
                        # The common part, ``{"text": str}`` and nothing else, goes straight to
                        # _text_part (what _part decides for it); any other part takes _part's checks.
                        if part.__class__ is dict and len(part) == 1 and part.get("text").__class__ is str:
                            self._text_part(st, part["text"], False, None)
                        else:
                            self._part(st, part)
                        if self.failure is not None:
                            return
        if not _CANDIDATE_KEYS.isdisjoint(cand) and not self._candidate_metadata(st, cand):
            return
        reason = cand.get("finishReason")
        if reason:
            if reason.__class__ is not str:
                self._protocol("envelope")
                return
            if st.finish_reason is not None:
                self._refinish(st, reason)
                return
            if reason == "STOP" and st.parts and _runs_code(st.parts[-1]):
                return  # hosted code execution: the answer goes on after the code runs (module docstring)
            if not self._finish(st, reason):
                return
            if st.streaming is not None:
                self._close_streaming(st)

    def _candidate_metadata(self, st: _Candidate, cand: dict[str, Any]) -> bool:
        """Citation sources, and the latest grounding / URL-context metadata (items)."""
        cited = cand.get("citationMetadata")
        if cited:
            if cited.__class__ is not dict:
                self._protocol("envelope")
                return False
            sources = cited.get("citationSources") or cited.get("citations")
            if sources and not self._each(sources, self._cite, st.citations):
                return False
        for key in _CANDIDATE_ITEMS:
            value = cand.get(key)
            if value:
                if value.__class__ is not dict:
                    self._protocol("envelope")
                    return False
                if not self._retain():
                    return False
                st.metadata[key] = value
        return True

    def _part(self, st: _Candidate, part: object) -> None:
        if part.__class__ is not dict:
            self._protocol("envelope")
            return
        p: dict[str, Any] = part
        keys = p.keys()
        data = keys & _DATA_FIELDS
        if len(data) > 1:
            self._protocol("envelope")
            return
        if not keys <= PART_FIELDS:
            if self._unknown() and self._add_part(st, p):
                st.items.append(p)
            return
        signature = p.get("thoughtSignature")
        if signature is not None:
            if not self._sign("", signature):
                return
            signature = signature or None  # an empty signature signs nothing
        field = data.pop() if data else None
        if field == "text":
            thought = p.get("thought")
            if thought is not None and thought.__class__ is not bool:
                # A flag of another type ("true", 1) cannot say which channel the text is for: showing a
                # thought as the answer, or hiding the answer as a thought, would both be guesses.
                self._protocol("envelope")
                return
            self._text_part(st, p["text"], thought is True, signature)
        elif field == "functionCall":
            call = p["functionCall"]
            if call.__class__ is not dict:
                self._protocol("envelope")
                return
            self._function_call(st, call, p, signature)
        elif field is not None:
            if p[field].__class__ is not dict:
                self._protocol("envelope")
            elif self._retain() and self._add_part(st, p):
                st.items.append(p)
        elif signature is not None:
            self._add_part(st, p)  # a signature-only part: kept as it came

    def _add_part(self, st: _Candidate, part: _Run | dict[str, Any] | _Call) -> bool:
        """Append a part of the assistant message (one entry against ``retained``). False on failure."""
        if not self._hold(ENTRY_CHARS):
            return False
        st.parts.append(part)
        return True

    def _text_part(self, st: _Candidate, text: object, thought: bool, signature: str | None) -> None:
        """A text part: appended to its channel and to the message's current run of that kind
        (a signed part starts, and ends, a run of its own)."""
        if text.__class__ is not str:
            self._protocol("envelope")
            return
        buf = st.reasoning if thought else st.text
        start = buf.size
        if not text and signature is None:
            return  # nothing to show and nothing to send back
        if text and not self._append(buf, text, self._max_text, "text"):  # _text, one call fewer
            return
        last = st.parts[-1] if st.parts else None
        if (signature is None and last.__class__ is _Run and last.buf is buf
                and last.signature is None):
            last.end = buf.size
        else:
            run = _Run(buf, thought, start, signature)
            run.end = buf.size
            self._add_part(st, run)  # on failure the run is dropped (nothing follows in this part)

    # -- function calls ------------------------------------------------------------------

    def _function_call(self, st: _Candidate, fc: dict[str, Any], part: dict[str, Any], signature: str | None) -> None:
        name = fc.get("name")
        call_id = fc.get("id")
        will_continue = fc.get("willContinue")
        pieces = fc.get("partialArgs")
        if (
            (name is not None and name.__class__ is not str)
            or (call_id is not None and call_id.__class__ is not str)
            or (pieces is not None and pieces.__class__ is not list)
            or (will_continue is not None and will_continue.__class__ is not bool)
        ):
            self._protocol("envelope")
            return
        # A new call starting while one is streaming: the previous one ended without its
        # closing part.
        if name and st.streaming is not None and not self._close_streaming(st):
            return
        if st.streaming is None:
            if not name:
                if pieces:
                    self._protocol("unknown_block")  # arguments for a call that was never opened
                elif fc.get("args") is not None:
                    self._protocol("envelope")  # a whole call without a name
                return  # an empty closing part with nothing open
            call = self._new_call(call_id or None, name)
            if call is None:
                return
            st.calls.append(call)
            if not will_continue and not pieces:
                args = fc.get("args")
                value = {} if args is None else args
                if not self._tool_input(call, _dumps_text(value)):
                    return
                if not self._add_part(st, part):  # a whole call is its own message part, verbatim
                    return
                if may_hold_surrogate(self._event_data):
                    # (an object kept verbatim: a refused call's part must still encode, see RouteAccumulator)
                    self.kept_odd = True
                self._close_call_value(call, value)
                return
            st.streaming = call
            st.paths = {}
            st.record = _Call(call, call_id or None, signature)
            if not self._add_part(st, st.record):
                return  # (nothing after a failed charge could be taken: the next charges fail too)
        elif signature is not None:
            record = st.record
            assert record is not None
            if record.signature is None:
                record.signature = signature
        if pieces and not self._each(pieces, self._partial_arg, st):
            return
        if not will_continue:
            self._close_streaming(st)

    def _partial_arg(self, st: _Candidate, arg: object) -> None:
        """One ``partialArgs`` element of the streaming call: a string fragment for its path, or a
        scalar value (a number, a boolean, or null), or no value at all (nothing taken). A field
        outside :data:`_ARG_FIELDS` is ``unknown_type``; two value fields, or a value of another type
        than its field's, is ``envelope``."""
        call = st.streaming
        assert call is not None
        if arg.__class__ is not dict:
            self._protocol("envelope")
            return
        piece: dict[str, Any] = arg
        path = piece.get("jsonPath")
        if path.__class__ is not str:
            self._protocol("envelope")
            return
        if not piece.keys() <= _ARG_FIELDS:
            self._protocol("unknown_type")
            return  # (an unknown field beside a value also fails the count below: never taken)
        if len(piece) - ("willContinue" in piece) > 2:  # the path and more than one value field
            self._protocol("envelope")
            return
        for key in _VALUE_KEYS:  # (at most one is there)
            if key in piece:
                break
        else:
            return  # an element without a value: nothing to take
        value = piece[key]
        held = st.paths.get(path)
        if key == "stringValue":
            if value.__class__ is not str:
                self._protocol("envelope")
                return
            if not isinstance(held, list):
                if held is None and not self._new_path(call, path):
                    return
                held = st.paths[path] = []
            if value and self._tool_input(call, value):
                held.append(value)  # an empty fragment adds nothing to hold
            return
        if key == "nullValue":
            if value not in _NULL_VALUES:
                self._protocol("envelope")
                return
            value = None
        elif key == "boolValue":
            if value.__class__ is not bool:
                self._protocol("envelope")
                return
        elif value.__class__ is not int and value.__class__ is not float:  # (a bool is neither)
            self._protocol("envelope")
            return
        if held is None and not self._new_path(call, path):
            return
        if self._tool_input(call, _dumps(value)):
            st.paths[path] = (value,)

    def _new_path(self, call: ToolCallBuffer, path: str) -> bool:
        """A streamed-argument path first seen: its length counts as input of its call (ceilings
        ``tool_input`` and ``retained``, so even paths with empty values are bounded), plus one entry
        against ``retained``. False on failure."""
        return self._held_input(call, len(path)) and self._hold(ENTRY_CHARS)

    def _close_streaming(self, st: _Candidate) -> bool:
        call = st.streaming
        assert call is not None
        st.streaming = None
        arguments, _ = assemble(st.paths)  # both closings below flush the call's pending input delta first
        st.paths = {}
        if arguments is None:
            self._close_call(call, validate=False)
            return self._settle(call, None, "tool_json", ("streamed argument path not supported",))
        # The assembled object is what the call's input is from here on.
        return self._close_call_object(call, arguments)

    def show_texts(self) -> Callable[[], None]:
        """The base's, which also puts the message parts' bounds back."""
        bounds = [(run, run.start, run.end) for st in self._choices.values() if isinstance(st, _Candidate)
                  for run in st.parts if isinstance(run, _Run)]
        restore_texts = super().show_texts()

        def restore() -> None:
            restore_texts()
            for run, start, end in bounds:
                run.start, run.end = start, end

        return restore

    def _clean_texts(self, clean: Callable[[str], str | None]) -> bool:
        """The base's, run per message part: the runs of a candidate's buffer split its text at the part
        boundaries the provider sent, so each run is cleaned on its own and the runs are re-measured (a
        pair split across two parts is unpaired in both); False, with that buffer and its runs
        unchanged, when ``clean`` refuses one. (The runs cover their buffer from its start; only a
        failure can leave a text after the last one, the text of a part whose run could not be charged:
        it is cleaned as one more piece.)"""
        if self._run is not None:
            self.flush()
        for st in self._choices.values():
            assert isinstance(st, _Candidate)
            for buf in (st.text, st.reasoning):
                text = buf.joined()
                if not has_surrogate(text):
                    continue
                runs = [run for run in st.parts if isinstance(run, _Run) and run.buf is buf]
                end = runs[-1].end if runs else 0
                cuts = [text[run.start : run.end] for run in runs]
                cuts.append(text[end:])  # (empty but after a failure, see above)
                pieces: list[str] = []
                for cut in cuts:
                    piece = clean(cut)
                    if piece is None:
                        return False
                    pieces.append(piece)
                pos = 0
                for run, piece in zip(runs, pieces, strict=False):  # (a piece after the last run has none)
                    run.start, pos = pos, pos + len(piece)
                    run.end = pos
                self._replace_text(buf, "".join(pieces))
        return True

    # -- results (open_count and choice_results: the base's, candidates in index order) ------

    def _choice_extras(self, st: _Candidate, calls: tuple[ToolCall, ...]) -> dict[str, Any]:
        text, reasoning = st.text.joined(), st.reasoning.joined()
        parts = [
            r.native(text if r.buf is st.text else reasoning) if r.__class__ is _Run
            else r.native() if r.__class__ is _Call else r
            for r in st.parts
        ]
        items = tuple(st.items)
        if st.metadata:
            items += tuple({key: value} for key, value in st.metadata.items())
        return {"items": items, "citations": tuple(st.citations), "logprobs": None,
                "assistant_message": {"role": "model", "parts": parts}}
