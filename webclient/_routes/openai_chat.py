"""OpenAI Chat Completions (``POST /v1/chat/completions``, ``stream: true``).

Wire facts (``route-contracts.md`` §1):

* data-only events, each a ``chat.completion.chunk`` with ``choices[]``; the stream ends with
  ``data: [DONE]`` and then EOF. Some providers send ``event: error`` (Groq) or put an
  ``error`` object in a chunk (OpenRouter): both are ``upstream_error``.
* choices interleave by ``choices[].index`` (``n > 1``); choice 0's text is the result's text.
* a choice ends with a non-empty ``finish_reason`` (Ollama's ``""`` means "not yet"). Later chunks
  for a finished choice may only be empty (OpenRouter repeats the finish chunk); content
  for it is ``protocol_error`` ``closed_block``.
* tool calls are keyed by ``tool_calls[].index`` **in a dict** (the first index may be 1), falling
  back to ``id``: a fragment with an id but no index starts a new call (or continues the call
  with that id); a fragment with neither continues the latest call of the choice; a fragment
  whose index is known but whose non-empty id differs starts a new call. The legacy
  ``delta.function_call`` is one call per choice.
* tool calls close when their choice's ``finish_reason`` arrives. If that stop reason is accepted
  they are parsed and validated there and then; if not (``length``) they stay ``closed`` and the
  attempt is ``truncated`` at ``[DONE]``.
* terminal: ``[DONE]`` after every choice seen has a ``finish_reason``; ``[DONE]`` without one is
  ``truncated`` (``missing_stop``). A usage-only chunk (``choices: []``) and Azure's leading
  ``prompt_filter_results`` chunk carry no choices and are fine anywhere before ``[DONE]``.
"""

from __future__ import annotations

from typing import Any

from .._toolcalls import ToolCallBuffer
from ._base import COMMON_NON_ACCEPTED, ChoiceState, RouteAccumulator, RouteContract

CONTRACT = RouteContract(
    name="openai-chat",
    endpoint="/v1/chat/completions",
    success_status=200,
    start_event=None,
    text_delta=("choices[].delta.content", "choices[].delta.refusal", "choices[].delta.reasoning_content",
                "choices[].delta.reasoning"),
    tool_input_delta=("choices[].delta.tool_calls[].function.arguments", "choices[].delta.function_call.arguments"),
    block_open=("choices[].index", "choices[].delta.tool_calls[].index|id"),
    block_close=("choices[].finish_reason",),
    terminal=("[DONE]",),
    error=("event: error", "chunk.error"),
    usage=("chunk.usage",),
    keep_alive=(": comment",),
    accumulator_key="choices[].index, then tool_calls[].index (dict) falling back to id, then the latest call",
    close_condition="a choice and its tool calls close at the choice's non-empty finish_reason",
    terminal_condition="data: [DONE] after every choice seen has a finish_reason, then EOF",
    non_accepted_stop_reasons=COMMON_NON_ACCEPTED,
    dispatch_key=None,
    before_start=frozenset(),
    choices_key="choices",
    cross_check_event_name=False,
    done_sentinel="terminal",
)


class _Choice(ChoiceState):
    """Per-choice accumulation, plus how tool-call fragments find their call."""

    __slots__ = ("by_id", "by_index", "latest", "legacy")

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.by_index: dict[int, ToolCallBuffer] = {}
        self.by_id: dict[str, ToolCallBuffer] = {}
        self.latest: ToolCallBuffer | None = None
        self.legacy: ToolCallBuffer | None = None


def _has_payload(delta: dict[str, Any]) -> bool:
    """Whether a delta carries anything beyond empty placeholders (role, "" content, [] ...)."""
    return bool(
        delta.get("content") or delta.get("refusal") or delta.get("reasoning_content") or delta.get("reasoning")
        or delta.get("tool_calls") or delta.get("function_call")
    )


class OpenAIChatAccumulator(RouteAccumulator):
    """Accumulates ``chat.completion.chunk`` events; see the module docstring for the rules."""

    contract = CONTRACT
    choice_state = _Choice

    __slots__ = ()

    # -- events (after the base's envelope step) -------------------------------------------

    def _chunk(self, obj: dict[str, Any], choices: object) -> None:
        usage = obj.get("usage")
        if usage:
            if usage.__class__ is not dict:
                self._protocol("envelope")
                return
            self.usage = usage

    def _choice(self, st: _Choice, ch: dict[str, Any]) -> None:
        delta = ch.get("delta")
        if delta:
            if delta.__class__ is not dict:
                self._protocol("envelope")
                return
            if st.finish_reason is not None:
                if _has_payload(delta):
                    self._protocol("closed_block")
                    return
            else:
                content = delta.get("content")
                if content:  # _optional_text, inline: the hottest field of the route
                    if content.__class__ is not str:
                        self._protocol("envelope")
                        return
                    if not self._text(st.text, content):
                        return
                if content is None or len(delta) > 1:
                    self._rare_fields(st, delta)
                    if self.failure is not None:
                        return
        reason = ch.get("finish_reason")
        if reason and st.finish_reason is None:
            if reason.__class__ is not str:
                self._protocol("envelope")
                return
            self._finish_choice(st, reason)

    def _rare_fields(self, st: _Choice, delta: dict[str, Any]) -> None:
        """Everything but ``content``: refusal, reasoning, tool calls, legacy function_call."""
        refusal = delta.get("refusal")
        if refusal and not self._optional_text(st.refusal, refusal):
            return
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning and not self._optional_text(st.reasoning, reasoning):
            return
        fragments = delta.get("tool_calls")
        if fragments and not self._each(fragments, self._tool_fragment, st):
            return
        legacy = delta.get("function_call")
        if legacy:
            self._legacy_fragment(st, legacy)

    # -- tool calls ----------------------------------------------------------------------

    def _resolve(self, st: _Choice, index: int | None, call_id: str | None, name: str | None) -> ToolCallBuffer | None:
        """Find the call a fragment continues, or open a new one (see the module docstring)."""
        if call_id:
            call = st.by_id.get(call_id)
            if call is not None:
                if index is not None and index not in st.by_index:
                    st.by_index[index] = call
                return call
            if index is not None:
                call = st.by_index.get(index)
                if call is not None and call.id is None:
                    if self._run is call:
                        self.flush()  # deltas so far were announced without the id
                    call.id = call_id
                    st.by_id[call_id] = call
                    return call
            call = self._open(st, call_id, name)
            if call is not None:
                st.by_id[call_id] = call
                if index is not None:
                    st.by_index[index] = call
            return call
        if index is not None:
            call = st.by_index.get(index)
            if call is None:
                call = self._open(st, None, name)
                if call is not None:
                    st.by_index[index] = call
            return call
        if st.latest is not None:
            return st.latest
        return self._open(st, None, name)

    def _open(self, st: _Choice, call_id: str | None, name: str | None) -> ToolCallBuffer | None:
        call = self._new_call(call_id, name)
        if call is not None:
            st.calls.append(call)
            st.latest = call
        return call

    def _function(self, function: object) -> tuple[str | None, str | None] | None:
        """``(name, arguments)`` of a ``{"name", "arguments"}`` object (``tool_calls[].function``
        and the legacy ``function_call`` share the shape); ``None`` after recording ``envelope``."""
        if function.__class__ is not dict:
            self._protocol("envelope")
            return None
        fn: dict[str, Any] = function
        name = fn.get("name")
        arguments = fn.get("arguments")
        if (name is not None and name.__class__ is not str) or (
            arguments is not None and arguments.__class__ is not str
        ):
            self._protocol("envelope")
            return None
        return name, arguments

    def _continue(self, call: ToolCallBuffer, name: str | None, arguments: str | None) -> None:
        """A fragment for ``call``: a late name fills a missing one, arguments are appended."""
        if name and call.name is None:
            if self._run is call:
                self.flush()  # deltas so far were announced without the name
            call.name = name
        if arguments:
            self._tool_input(call, arguments)

    def _tool_fragment(self, st: _Choice, fragment: object) -> None:
        if fragment.__class__ is not dict:
            self._protocol("envelope")
            return
        frag: dict[str, Any] = fragment
        index = frag.get("index")
        call_id = frag.get("id")
        function = frag.get("function")
        if (index is not None and index.__class__ is not int) or (
            call_id is not None and call_id.__class__ is not str
        ):
            self._protocol("envelope")
            return
        name = arguments = None
        if function is not None:
            fields = self._function(function)
            if fields is None:
                return
            name, arguments = fields
        call = self._resolve(st, index, call_id or None, name or None)
        if call is not None:
            self._continue(call, name, arguments)

    def _legacy_fragment(self, st: _Choice, legacy: object) -> None:
        fields = self._function(legacy)
        if fields is None:
            return
        name, arguments = fields
        call = st.legacy
        if call is None:
            call = self._new_call(None, name or None)
            if call is None:
                return
            st.legacy = call
            st.calls.append(call)
        self._continue(call, name, arguments)

    # -- ends ----------------------------------------------------------------------------

    def _finish_choice(self, st: _Choice, reason: str) -> None:
        st.finish_reason = reason
        validate = self._accepts(reason)
        for call in st.calls:
            if call.open and not self._close_call(call, validate):
                return

    def _done(self) -> None:
        ordered = self._ordered_choices()
        if not ordered or any(c.finish_reason is None for c in ordered):
            self._terminal(None, True, 0)
            self.stop_reason = ordered[0].finish_reason if ordered else None
            return
        self._terminal_choices()

    # open_count and choice_results: the base's (choices in index order).
