"""OpenAI Responses (``POST /v1/responses``, ``stream: true``).

Wire facts (``route-contracts.md`` §2):

* typed events (``data.type``; the SSE ``event:`` name, when present, must agree). The first
  event must be ``response.created``; a second one is ``duplicate_start``. Unknown types are
  tolerated. ``sequence_number`` may be absent (a March-2025 api.openai.com recording has none); when
  present it must count up by one (``sequence_gap`` / ``sequence_order``), and it makes the stream
  resumable: ``GET {path}/{id}?stream=true&starting_after=N`` (``webclient._resume``).
* items are keyed by ``output_index`` (falling back to ``item_id``) in a dict, opened by
  ``response.output_item.added`` and closed by ``response.output_item.done``. Deltas for an
  unknown or closed item, or of a kind the item cannot take, are ``protocol_error``.
* ``output_text.delta`` -> text, ``refusal.delta`` -> refusal, ``reasoning_text.delta`` and
  ``reasoning_summary_text.delta`` -> reasoning.
* ``function_call`` items are client tool calls. ``function_call_arguments.delta`` fragments are
  joined; ``function_call_arguments.done`` closes the call and its ``arguments`` must equal the
  joined deltas (``payload_error`` ``tool_arguments_mismatch``); when no delta came (LM Studio)
  the ``.done`` arguments are the input. ``output_item.done`` closes a call that had no ``.done``.
* terminal: ``response.completed`` (stop reason ``"completed"``), ``response.incomplete``
  (stop reason ``incomplete_details.reason``; not accepted by default, so ``truncated``), or
  ``response.failed`` / ``error`` (``upstream_error``). A stray ``[DONE]`` (OpenRouter) is ignored.
"""

from __future__ import annotations

from typing import Any

from .._resume import ResumeContract
from .._toolcalls import ToolCallBuffer
from .._updates import ChoiceResult
from ._base import COMMON_NON_ACCEPTED, RouteAccumulator, RouteContract, TextBuffer, ignore

CONTRACT = RouteContract(
    name="openai-responses",
    endpoint="/v1/responses",
    success_status=200,
    start_event="response.created",
    text_delta=("response.output_text.delta", "response.refusal.delta", "response.reasoning_text.delta",
                "response.reasoning_summary_text.delta"),
    tool_input_delta=("response.function_call_arguments.delta",),
    block_open=("response.output_item.added",),
    block_close=("response.output_item.done", "response.function_call_arguments.done"),
    terminal=("response.completed", "response.incomplete", "response.failed"),
    error=("error", "response.failed"),
    usage=("response.completed",),
    keep_alive=(": comment",),
    accumulator_key="output_index (dict), falling back to item_id",
    close_condition="response.output_item.done; for calls also response.function_call_arguments.done",
    terminal_condition="response.completed (or response.incomplete / response.failed), then EOF",
    non_accepted_stop_reasons=COMMON_NON_ACCEPTED | {"incomplete"},
    dispatch_key="type",
    before_start=frozenset({"response.created", "error"}),
    choices_key=None,
    cross_check_event_name=True,
    done_sentinel="ignored",  # OpenRouter appends one; not part of this route's contract
    # "Resume streaming" of a background response (OpenAI API reference, Responses: retrieve with
    # stream=true&starting_after; the ids and numbers as in every recorded stream).
    resume=ResumeContract(sequence_key="sequence_number", id_event="response.created", id_path=("response", "id"),
                          path="/{id}", query=(("stream", "true"), ("starting_after", "{sequence_number}"))),
)


class _Item:
    """One output item."""

    __slots__ = ("call", "closed", "id", "index", "reasoning", "refusal", "text", "type")

    def __init__(self, index: int, item_id: str | None, item_type: str) -> None:
        self.index = index
        self.id = item_id
        self.type = item_type
        self.closed = False
        self.text: TextBuffer | None = None
        self.refusal: TextBuffer | None = None
        self.reasoning: TextBuffer | None = None
        self.call: ToolCallBuffer | None = None


class OpenAIResponsesAccumulator(RouteAccumulator):
    """Accumulates Responses stream events; see the module docstring for the rules."""

    contract = CONTRACT

    __slots__ = ("_by_id", "_items")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._items: dict[int, _Item] = {}
        self._by_id: dict[str, _Item] = {}
        part = self._part_event
        #: ``data.type`` -> handler. Types not listed are tolerated and ignored.
        self._handlers = {
            "response.output_text.delta": self._output_text_delta,
            "response.function_call_arguments.delta": self._arguments_delta,
            "response.reasoning_text.delta": self._reasoning_delta,
            "response.reasoning_summary_text.delta": self._reasoning_delta,
            "response.refusal.delta": self._refusal_delta,
            "response.function_call_arguments.done": self._arguments_done,
            "response.output_item.added": self._item_added,
            "response.output_item.done": self._item_done,
            "response.content_part.added": part,
            "response.content_part.done": part,
            "response.output_text.done": part,
            "response.output_text.annotation.added": part,
            "response.refusal.done": part,
            "response.reasoning_text.done": part,
            "response.reasoning_summary_part.added": part,
            "response.reasoning_summary_part.done": part,
            "response.reasoning_summary_text.done": part,
            "response.created": self._start,
            "response.in_progress": ignore,
            "response.queued": ignore,
            "response.completed": self._completed,
            "response.incomplete": self._incomplete,
            "response.failed": self._failed,
            "error": self._error,  # nested {"error": {type, code}} (live) or flat {type: "error", code}
        }

    # -- lifecycle (``response.created`` is the base's ``_start``) ------------------------------

    def _open_blocks(self) -> int:
        return sum(1 for item in self._items.values() if not item.closed) + sum(1 for c in self.calls if c.open)

    def _completed(self, obj: dict[str, Any]) -> None:
        response = obj.get("response")
        if response.__class__ is dict:
            usage = response.get("usage")
            if usage.__class__ is dict:
                self.usage = usage
        self._terminal("completed", self._accepts("completed"), self._open_blocks())

    def _incomplete(self, obj: dict[str, Any]) -> None:
        reason = None
        response = obj.get("response")
        if response.__class__ is dict:
            details = response.get("incomplete_details")
            if details.__class__ is dict:
                reason = details.get("reason")
            usage = response.get("usage")
            if usage.__class__ is dict:
                self.usage = usage
        stop = reason if reason.__class__ is str and reason else "incomplete"
        self._terminal(stop, self._accepts(stop, default=False), 0)

    def _failed(self, obj: dict[str, Any]) -> None:
        response = obj.get("response")
        error = response.get("error") if response.__class__ is dict else None
        self._upstream("response_failed", error)

    # -- items ---------------------------------------------------------------------------

    def _item_added(self, obj: dict[str, Any]) -> None:
        index = obj.get("output_index")
        item_obj = obj.get("item")
        if index.__class__ is not int or item_obj.__class__ is not dict:
            self._protocol("envelope")
            return
        it: dict[str, Any] = item_obj
        item_type = it.get("type")
        item_id = it.get("id")
        if item_type.__class__ is not str or (item_id is not None and item_id.__class__ is not str):
            self._protocol("envelope")
            return
        if index in self._items or (item_id and item_id in self._by_id):
            self._protocol("duplicate_block")
            return
        if not self._check_blocks(len(self._items)):
            return
        item = self._items[index] = _Item(index, item_id, item_type)
        if item_id:
            self._by_id[item_id] = item
        if item_type == "message":
            item.text = TextBuffer("text", index)
            item.refusal = TextBuffer("refusal", index)
        elif item_type == "reasoning":
            item.reasoning = TextBuffer("reasoning", index)
        elif item_type == "function_call":
            call_id = it.get("call_id") or item_id
            name = it.get("name")
            call = item.call = self._new_call(call_id if call_id.__class__ is str else None,
                                              name if name.__class__ is str else None)
            arguments = it.get("arguments")
            if call is not None and arguments and arguments.__class__ is str:
                self._tool_input(call, arguments)

    def _item(self, obj: dict[str, Any]) -> _Item | None:
        """The open item an event refers to (output_index, else item_id), or record why not."""
        index = obj.get("output_index")
        item = self._items.get(index) if index.__class__ is int else None
        if item is None:
            item_id = obj.get("item_id")
            item = self._by_id.get(item_id) if item_id.__class__ is str else None
        if item is None:
            self._protocol("unknown_block")
            return None
        if item.closed:
            self._protocol("closed_block")
            return None
        return item

    def _item_done(self, obj: dict[str, Any]) -> None:
        item = self._item(obj)
        if item is None:
            return
        call = item.call
        if call is not None and call.open:
            it = obj.get("item")
            final = it.get("arguments") if it.__class__ is dict else None
            if not self._close_with(call, final if final.__class__ is str else None):
                return
        item.closed = True

    def _part_event(self, obj: dict[str, Any]) -> None:
        self._item(obj)

    def _fragment(self, obj: dict[str, Any]) -> str | None:
        """The event's ``delta`` string (text and argument deltas alike); ``None`` after
        recording ``envelope`` when it is not a string."""
        fragment = obj.get("delta")
        if fragment.__class__ is not str:
            self._protocol("envelope")
            return None
        return fragment

    def _delta(self, obj: dict[str, Any], buf: TextBuffer | None) -> None:
        if buf is None:
            self._protocol("delta_type")
            return
        fragment = self._fragment(obj)
        if fragment:
            self._text(buf, fragment)

    def _output_text_delta(self, obj: dict[str, Any]) -> None:
        item = self._item(obj)
        if item is not None:
            self._delta(obj, item.text)

    def _refusal_delta(self, obj: dict[str, Any]) -> None:
        item = self._item(obj)
        if item is not None:
            self._delta(obj, item.refusal)

    def _reasoning_delta(self, obj: dict[str, Any]) -> None:
        item = self._item(obj)
        if item is not None:
            self._delta(obj, item.reasoning)

    # -- function calls ------------------------------------------------------------------

    def _call_of(self, obj: dict[str, Any]) -> ToolCallBuffer | None:
        item = self._item(obj)
        if item is None:
            return None
        if item.call is None:
            if item.type != "function_call":
                self._protocol("delta_type")
            return None  # the call ceiling tripped when the item opened
        if not item.call.open:
            self._protocol("closed_block")
            return None
        return item.call

    def _arguments_delta(self, obj: dict[str, Any]) -> None:
        call = self._call_of(obj)
        if call is None:
            return
        fragment = self._fragment(obj)
        if fragment:
            self._tool_input(call, fragment)

    def _arguments_done(self, obj: dict[str, Any]) -> None:
        call = self._call_of(obj)
        if call is None:
            return
        final = obj.get("arguments")
        if final is not None and final.__class__ is not str:
            self._protocol("envelope")
            return
        self._close_with(call, final)

    def _close_with(self, call: ToolCallBuffer, final: str | None) -> bool:
        """Close ``call``; ``final`` (the ``.done`` arguments) must agree with the deltas, or be
        the input when no delta came."""
        if final is not None:
            if call.parts:
                if self._run is call:
                    self.flush()
                if call.joined() != final:
                    self._close_call(call, validate=False)
                    return self._settle(call, None, "tool_arguments_mismatch",
                                        ("arguments disagree with the streamed deltas",))
            elif final and not self._tool_input(call, final):
                return False
        return self._close_call(call)

    # -- results -------------------------------------------------------------------------

    def open_count(self) -> int:
        return self._open_blocks()

    def choice_results(self, ready: bool) -> tuple[ChoiceResult, ...]:
        ordered = sorted(self._items.values(), key=lambda i: i.index)
        text = "".join(i.text.joined() for i in ordered if i.text is not None)
        refusal = "".join(i.refusal.joined() for i in ordered if i.refusal is not None)
        reasoning = "".join(i.reasoning.joined() for i in ordered if i.reasoning is not None)
        return (ChoiceResult(0, text, refusal, reasoning, self.stop_reason, self._calls_in(self.calls, ready)),)
