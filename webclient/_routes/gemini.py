"""Gemini ``streamGenerateContent?alt=sse``.

Wire facts (``route-contracts.md`` §4):

* data-only events, each a ``GenerateContentResponse`` (``candidates[]``, ``usageMetadata``,
  ``promptFeedback``); separators may be CRLF (handled by the SSE layer). No start event, no
  ``[DONE]`` (a stray one is ignored).
* candidates are keyed by ``candidates[].index`` (default 0); candidate 0's text is the result's
  text. ``text`` parts with ``thought: true`` are reasoning, never text.
* a ``functionCall`` part normally arrives whole (``name`` + ``args`` object): the call opens,
  closes and is validated at once (``args`` absent means ``{}``).
* Streamed arguments (Vertex / Gemini 3, ``streamFunctionCallArguments``): a ``functionCall`` with
  ``name`` and ``willContinue: true`` opens a call; following ``functionCall`` parts carry
  ``partialArgs[{jsonPath, stringValue | numberValue | boolValue | nullValue, willContinue}]``;
  ``stringValue`` fragments for the same ``jsonPath`` are concatenated, other values replace.
  The first ``functionCall`` part *without* ``willContinue: true`` (in the recording, an empty
  ``{}``) closes the call; so does the candidate's ``finishReason``. At close the object is
  built from the paths (``$.a.b``, ``$.a[0]``, ``$['a']``) and validated; a path outside that
  grammar makes the call ``invalid`` (``tool_json``).
* terminal: every candidate seen carries ``finishReason`` (a ``promptFeedback.blockReason`` with no
  candidates is a terminal refusal of the prompt), then EOF; any event after it is
  ``after_terminal``. ``MAX_TOKENS`` and the filter reasons (``SAFETY``, ``RECITATION``,
  ``BLOCKLIST``, ``PROHIBITED_CONTENT``, ``SPII``, ``IMAGE_SAFETY``) and ``MALFORMED_FUNCTION_CALL``
  are not accepted by default: Gemini's spelling of ``length`` / ``content_filter``.
* an ``error`` object in a chunk is ``upstream_error`` (``error.status`` / ``error.code`` kept).
"""

from __future__ import annotations

import json
import re
from typing import Any

from .._toolcalls import ToolCallBuffer
from ._base import COMMON_NON_ACCEPTED, ChoiceState, RouteAccumulator, RouteContract

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
    non_accepted_stop_reasons=COMMON_NON_ACCEPTED
    | {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "MALFORMED_FUNCTION_CALL"},
    dispatch_key=None,
    before_start=frozenset(),
    choices_key="candidates",
    cross_check_event_name=False,
    done_sentinel="ignored",
)

_dumps = json.dumps
# One step of a partialArgs jsonPath: .name | [digits] | ['name'] | ["name"]
_PATH_STEP = re.compile(r"\.([A-Za-z0-9_\-]+)|\[(\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")
_VALUE_KEYS = ("numberValue", "boolValue", "nullValue")


class _Candidate(ChoiceState):
    """Per-candidate accumulation (no refusal channel), plus the call whose arguments stream."""

    __slots__ = ("paths", "streaming")

    def __init__(self, index: int) -> None:
        super().__init__(index)
        #: The call whose arguments are streaming (partialArgs), if any.
        self.streaming: ToolCallBuffer | None = None
        #: jsonPath -> list of string fragments, or a one-element tuple holding a scalar value.
        self.paths: dict[str, list[str] | tuple[object]] = {}


def _parse_path(path: str) -> list[str | int] | None:
    """``"$.a[0]['b']"`` -> ``["a", 0, "b"]``; ``None`` outside the supported grammar."""
    if not path.startswith("$"):
        return None
    steps: list[str | int] = []
    pos = 1
    while pos < len(path):
        m = _PATH_STEP.match(path, pos)
        if m is None:
            return None
        name, number, quoted, dquoted = m.groups()
        steps.append(int(number) if number is not None else (name or quoted or dquoted or ""))
        pos = m.end()
    return steps or None


def build_arguments(paths: dict[str, list[str] | tuple[object]]) -> dict[str, Any] | None:
    """Assemble streamed partial arguments into an object; ``None`` if a path cannot be placed."""
    root: dict[str, Any] = {}
    for path, held in paths.items():
        steps = _parse_path(path)
        if steps is None or not isinstance(steps[0], str):
            return None
        value = "".join(held) if isinstance(held, list) else held[0]
        node: Any = root
        for step, nxt in zip(steps, [*steps[1:], None], strict=True):
            container: dict[str, Any] | list[Any] = {} if isinstance(nxt, str) else []
            if isinstance(step, str):
                if not isinstance(node, dict):
                    return None
                if nxt is None:
                    node[step] = value
                else:
                    node = node.setdefault(step, container)
            else:
                if not isinstance(node, list) or step > len(node):
                    return None
                if step == len(node):
                    node.append(value if nxt is None else container)
                elif nxt is None:
                    node[step] = value
                node = node[step]
    return root


class GeminiAccumulator(RouteAccumulator):
    """Accumulates ``GenerateContentResponse`` chunks; see the module docstring for the rules."""

    contract = CONTRACT
    choice_state = _Candidate

    __slots__ = ()

    # -- events (after the base's envelope step) -------------------------------------------

    def _chunk(self, obj: dict[str, Any], candidates: object) -> None:
        usage = obj.get("usageMetadata")
        if usage.__class__ is dict:
            self.usage = usage
        if candidates:
            if all(c.finish_reason is not None for c in self._choices.values()):
                self._terminal_choices()
        else:
            feedback = obj.get("promptFeedback")
            if feedback.__class__ is dict:
                blocked = feedback.get("blockReason")
                if blocked.__class__ is str and blocked:
                    self._terminal(blocked, self._accepts(blocked, default=False), 0)

    def _choice(self, st: _Candidate, cand: dict[str, Any]) -> None:
        """One element of ``candidates``."""
        content = cand.get("content")
        if content:
            if content.__class__ is not dict:
                self._protocol("envelope")
                return
            parts = content.get("parts")
            if parts:
                # A finished candidate takes no more parts; a non-list is envelope (in _each) first.
                if st.finish_reason is not None and parts.__class__ is list:
                    self._protocol("closed_block")
                    return
                if not self._each(parts, self._part, st):
                    return
        reason = cand.get("finishReason")
        if reason and st.finish_reason is None:
            if reason.__class__ is not str:
                self._protocol("envelope")
                return
            st.finish_reason = reason
            if st.streaming is not None:
                self._close_streaming(st)

    def _part(self, st: _Candidate, part: object) -> None:
        if part.__class__ is not dict:
            self._protocol("envelope")
            return
        p: dict[str, Any] = part
        text = p.get("text")
        if text:
            if text.__class__ is not str:
                self._protocol("envelope")
                return
            self._text(st.reasoning if p.get("thought") is True else st.text, text)
            return
        call = p.get("functionCall")
        if call is not None:
            if call.__class__ is not dict:
                self._protocol("envelope")
                return
            self._function_call(st, call)

    # -- function calls ------------------------------------------------------------------

    def _function_call(self, st: _Candidate, fc: dict[str, Any]) -> None:
        name = fc.get("name")
        call_id = fc.get("id")
        will_continue = fc.get("willContinue") is True
        pieces = fc.get("partialArgs")
        if (
            (name is not None and name.__class__ is not str)
            or (call_id is not None and call_id.__class__ is not str)
            or (pieces is not None and pieces.__class__ is not list)
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
                if not self._tool_input(call, _dumps(value, ensure_ascii=False)):
                    return
                self._close_call_value(call, value)
                return
            st.streaming = call
            st.paths = {}
        if pieces and not self._each(pieces, self._partial_arg, st):
            return
        if not will_continue:
            self._close_streaming(st)

    def _partial_arg(self, st: _Candidate, arg: object) -> None:
        """One ``partialArgs`` element of the streaming call: a string fragment for its path, or a
        scalar value."""
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
        if "stringValue" in piece:
            fragment = piece["stringValue"]
            if fragment.__class__ is not str:
                self._protocol("envelope")
                return
            held = st.paths.get(path)
            if not isinstance(held, list):
                held = st.paths[path] = []
            held.append(fragment)
            if fragment:
                self._tool_input(call, fragment)
            return
        for key in _VALUE_KEYS:
            if key in piece:
                value = None if key == "nullValue" else piece[key]
                st.paths[path] = (value,)
                self._tool_input(call, _dumps(value))
                return

    def _close_streaming(self, st: _Candidate) -> bool:
        call = st.streaming
        assert call is not None
        st.streaming = None
        if self._run is call:
            self.flush()
        arguments = build_arguments(st.paths)
        st.paths = {}
        if arguments is None:
            self._close_call(call, validate=False)
            return self._settle(call, None, "tool_json", ("streamed argument path not supported",))
        # The assembled object is what the call's input is from here on.
        call.parts[:] = [_dumps(arguments, ensure_ascii=False)]
        return self._close_call_value(call, arguments)

    # open_count and choice_results: the base's (candidates in index order).
