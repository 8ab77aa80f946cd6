"""OpenAI Responses (``POST /v1/responses``, ``stream: true``).

Wire facts (``route-contracts.md`` §2; vocabulary from openai-python 3.57.0
``src/openai/types/responses/``: ``response_output_item.py`` (the ``ResponseOutputItem`` union),
``response_stream_event.py`` (the event union), ``response.py`` (``IncompleteDetails.reason``),
``response_status.py``):

* typed events (``data.type``; the SSE ``event:`` name, when present, must agree). The first
  event must be ``response.created``; a second one is ``duplicate_start``. Unknown event types
  are tolerated. ``sequence_number`` may be absent (a March-2025 api.openai.com recording has none); when
  present it must count up by one (``sequence_gap`` / ``sequence_order``), and it makes the stream
  resumable: ``GET {path}/{id}?stream=true&starting_after=N`` (``webclient._resume``).
* items are keyed by ``output_index`` (falling back to ``item_id``) in a dict, opened by
  ``response.output_item.added`` and closed by ``response.output_item.done``. Deltas for an
  unknown or closed item, or of a kind the item cannot take, are ``protocol_error``. An item type
  outside :data:`CONTENT_TYPES` is ``unknown_type`` (the session's ``keep_unknown_items`` keeps it
  verbatim instead); so is a content / summary part type outside it, announced or in the closed item.
  The closed item is the added one: the same ``type`` and ``id`` (``item_mismatch``). A message,
  reasoning item or client call closed with a ``status`` that says it was cut (``incomplete``, or
  one the route does not know) keeps ``response.completed`` from committing (``truncated``
  ``incomplete_item``).
* ``output_text.delta`` -> text, ``refusal.delta`` -> refusal, ``reasoning_text.delta`` and
  ``reasoning_summary_text.delta`` -> reasoning; ``output_text.annotation.added`` -> citations. A
  closed ``message`` item's ``output_text`` / ``refusal`` parts must equal what the deltas built
  (``item_mismatch``); when no delta came, the item's text is the text.
* client calls (``ToolCall.kind``): ``function_call`` (arguments streamed by
  ``function_call_arguments.delta/.done``), ``custom_tool_call`` (free-text input streamed by
  ``custom_tool_call_input.delta/.done``), ``mcp_approval_request`` (``arguments`` JSON in the
  item), and the whole-item calls ``computer_call``, ``local_shell_call``, ``shell_call`` (its
  ``shell_call_command.delta`` text is shown while it streams), ``apply_patch_call`` and a
  ``tool_search_call`` the client runs (``execution: "client"``; its ``call_id`` at ``added`` is
  provisional, the closed item's stands), whose arguments are the item's action fields at
  ``output_item.done``. A streamed input's ``.done`` value must equal the joined deltas
  (``payload_error`` ``tool_arguments_mismatch``); when no delta came (LM Studio) the ``.done`` value
  is the input. ``output_item.done`` closes a call that had no
  ``.done``; after one, the item's input, when it carries one, must be the call's (``payload_error``
  ``tool_arguments_mismatch``: the assistant message sends the item back, so the call run and the
  turn sent back would differ). Its ``name`` and ``call_id`` must be the call's (``item_mismatch``),
  except that a call still open without a name takes the item's, and one added without a ``call_id`` (its item ``id``
  stood in) takes the item's ``call_id``. A call that ends without a name is never valid
  (``tool_unknown``). A ``shell_call`` in a container environment runs on OpenAI's side: it is hosted; so
  is a ``tool_search_call`` with ``execution: "server"``. Another ``execution``, or an ``environment`` of
  another type, is ``unknown_type``; an ``environment`` that is not an object with a string ``type`` is
  ``envelope`` (never a guess that the client runs it). The closed item may not say otherwise
  (``item_mismatch``).
* hosted items (``web_search_call``, ``file_search_call``, ``code_interpreter_call``,
  ``image_generation_call``, ``mcp_call``, ``mcp_list_tools``, hosted ``shell_call`` and its
  ``shell_call_output``, ``compaction``, ``tool_search_output``, and programmatic tool calling's
  ``program`` (code OpenAI runs, whose tool calls come as ``function_call`` items with a ``caller``) and
  ``program_output``) are result ``items``, never tool calls; their progress events are accepted and not
  accumulated. With two or more MCP servers the API closes only the last ``mcp_list_tools`` item with
  ``output_item.done`` (pydantic-ai's live recording, pydantic/pydantic-ai#5419): a hosted item whose own
  ``response.<type>.completed`` progress event arrived but that never closed is closed by ``response.completed``
  with that response's ``output`` entry at its index, checked as ``output_item.done`` is (same type and id).
  Any other item still open there is ``open_block``.
* the assistant message is the list of output items as ``output_item.done`` sent them (the
  ``.added`` item while one never closed): ``reasoning`` items keep their ``encrypted_content``.
* terminal: ``response.completed`` (stop reason: its ``response.status``, ``"completed"`` when
  absent; its ``response.output``, the SDK's final answer, must agree with the streamed items:
  ``item_mismatch``), ``response.incomplete`` (stop reason ``incomplete_details.reason``), or
  ``response.failed`` / ``error`` (``upstream_error``). A stray ``[DONE]`` (OpenRouter) is ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from .._events import EventTuple
from .._outcome import Outcome
from .._resume import ResumeContract
from .._toolcalls import ToolCallBuffer
from .._updates import JSON, ChoiceResult, new_choice
from .._values import combine_surrogates
from ._base import RouteAccumulator, RouteContract, TextBuffer, stop_table

#: Stop reasons: ``response.status`` of the terminal response (``response_status.py``:
#: ``completed | failed | in_progress | cancelled | queued | incomplete``; the last two are not
#: terminal and so are not listed) and ``incomplete_details.reason`` (``response.py``:
#: ``max_output_tokens | max_messages | content_filter | steered``). ``steered`` (the response
#: stopped at a safe boundary after a WebSocket ``response.steer``; a successor response carries
#: on) is an unfinished answer: length category. ``incomplete`` is a ``response.incomplete``
#: without a reason.
STOP_REASONS = stop_table(
    success=("completed",),
    length=("max_output_tokens", "max_messages", "steered", "incomplete"),
    filter=("content_filter",),
    failure=("failed", "cancelled"),
)

#: Output item types (``ResponseOutputItem``) and content / summary part types
#: (``ResponseContentPartAddedEvent.part``, ``ResponseReasoningSummaryPartAddedEvent.part``) this
#: route knows -> what they are. ``call:<kind>`` items are client tool calls of that kind.
CONTENT_TYPES = {
    "message": "message",
    "reasoning": "reasoning",
    "function_call": "call:function",
    "custom_tool_call": "call:custom",
    "computer_call": "call:computer",
    "local_shell_call": "call:local_shell",
    "shell_call": "call:shell",
    "apply_patch_call": "call:apply_patch",
    "mcp_approval_request": "call:mcp_approval",
    "tool_search_call": "call:tool_search",
    "mcp_call": "hosted",
    "mcp_list_tools": "hosted",
    "web_search_call": "hosted",
    "file_search_call": "hosted",
    "code_interpreter_call": "hosted",
    "image_generation_call": "hosted",
    "shell_call_output": "hosted",
    "compaction": "hosted",
    "tool_search_output": "hosted",
    "program": "hosted",
    "program_output": "hosted",
    "output_text": "part",
    "refusal": "part",
    "reasoning_text": "part",
    "summary_text": "summary_part",
}

#: Client call kind -> (item field holding its streamed / JSON input, or the item fields that
#: make up the arguments of a whole-item call).
_CALL_INPUT: dict[str, str] = {"function": "arguments", "custom": "input", "mcp_approval": "arguments"}
_CALL_FIELDS: dict[str, tuple[str, ...]] = {
    "computer": ("action", "actions", "pending_safety_checks"),
    "local_shell": ("action",),
    "shell": ("action", "environment"),
    "apply_patch": ("operation",),
    "tool_search": ("arguments",),
}
#: Client call kinds whose ``call_id`` at ``output_item.added`` is provisional: the closed item's replaces it
#: (a recorded client tool search, vercel/ai ``openai-client-tool-search.1.chunks.txt``, names one call id when
#: the item is added and another when it is done, and the done one is what the tool search output must quote).
_PROVISIONAL_CALL_ID = frozenset({"tool_search"})
#: The item type each streamed-input event belongs to.
_ITEM_OF_KIND = {"function": "function_call", "custom": "custom_tool_call", "shell": "shell_call"}

#: Progress events of hosted tools: accepted, nothing accumulated (the final item is in
#: ``output_item.done``).
_HOSTED_PROGRESS = (
    "response.web_search_call.in_progress", "response.web_search_call.searching",
    "response.web_search_call.completed", "response.file_search_call.in_progress",
    "response.file_search_call.searching", "response.file_search_call.completed",
    "response.code_interpreter_call.in_progress", "response.code_interpreter_call.interpreting",
    "response.code_interpreter_call.completed", "response.code_interpreter_call_code.delta",
    "response.code_interpreter_call_code.done", "response.image_generation_call.in_progress",
    "response.image_generation_call.generating", "response.image_generation_call.partial_image",
    "response.image_generation_call.completed", "response.mcp_call.in_progress", "response.mcp_call.completed",
    "response.mcp_call.failed", "response.mcp_call_arguments.delta", "response.mcp_call_arguments.done",
    "response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed", "response.mcp_list_tools.failed",
    "response.shell_call_output_content.delta", "response.shell_call_output_content.done",
    "response.compaction.compacting",
)
#: The hosted progress events that say the tool finished -> the type of the item they finish
#: (:meth:`OpenAIResponsesAccumulator._hosted_completed`).
_HOSTED_COMPLETED = {
    "response.web_search_call.completed": "web_search_call",
    "response.file_search_call.completed": "file_search_call",
    "response.code_interpreter_call.completed": "code_interpreter_call",
    "response.image_generation_call.completed": "image_generation_call",
    "response.mcp_call.completed": "mcp_call",
    "response.mcp_list_tools.completed": "mcp_list_tools",
}

CONTRACT = RouteContract(
    name="openai-responses",
    endpoint="/v1/responses",
    success_status=200,
    start_event="response.created",
    text_delta=("response.output_text.delta", "response.refusal.delta", "response.reasoning_text.delta",
                "response.reasoning_summary_text.delta"),
    tool_input_delta=("response.function_call_arguments.delta", "response.custom_tool_call_input.delta",
                      "response.shell_call_command.delta"),
    block_open=("response.output_item.added", "response.content_part.added", "response.reasoning_summary_part.added"),
    block_close=("response.output_item.done", "response.function_call_arguments.done",
                 "response.custom_tool_call_input.done"),
    terminal=("response.completed", "response.incomplete", "response.failed"),
    error=("error", "response.failed"),
    usage=("response.completed",),
    keep_alive=(": comment",),
    accumulator_key="output_index (dict), falling back to item_id",
    close_condition="response.output_item.done; for streamed inputs also their .done event",
    terminal_condition="response.completed (or response.incomplete / response.failed), then EOF",
    stop_reasons=STOP_REASONS,
    content_types=CONTENT_TYPES,
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

_PART_TYPES = {"response.content_part.added": "part", "response.reasoning_summary_part.added": "summary_part"}
#: Item type -> its part lists in a closed item (field, and the part role of :data:`CONTENT_TYPES` their parts
#: must have): ``ResponseOutputMessage.content``, ``ResponseReasoningItem.content`` and ``.summary``.
_PART_LISTS: dict[str, tuple[tuple[str, str], ...]] = {
    "message": (("content", "part"),),
    "reasoning": (("content", "part"), ("summary", "summary_part")),
}
#: A closed item's ``status`` values that do not say it was cut (see ``_same_item``).
_WHOLE_STATUSES = frozenset({"completed", "in_progress"})

#: The exact text of the route's hottest events up to their fragment's opening quote, in the three key orders
#: the recorded servers write (compact JSON): api.openai.com ``{"type":"response.output_text.delta",
#: "sequence_number":N,"item_id":"...","output_index":N,"content_index":N,"delta":"...`` (``summary_index`` for a
#: summary, neither for arguments); LM Studio and the March-2025 API ``{"type":...,"item_id":"...",
#: "output_index":N,("content_index":N,)"delta":"...`` (the number, if any, after the fragment); OpenRouter
#: ``{"type":...,("logprobs":[],)"output_index":N,"item_id":"...","content_index":N,"delta":"...``. Groups: the
#: delta kind, the sequence number (first order only), then the output index of each order (JSON integer
#: syntax; only the matched order's group is set). ``item_id`` is a string without escapes or control
#: characters (the general path reads it only when ``output_index`` finds no item); the other fields are read
#: by neither path.
_INDEX = r"(?:0|[1-9][0-9]{0,8})"
_PLAIN = r'"[^"\\\x00-\x1f]*"'
_DELTA_HEAD = re.compile(
    r'\{"type":"response\.(output_text|function_call_arguments|reasoning_text|reasoning_summary_text|refusal)'
    r'\.delta",(?:'
    rf'"sequence_number":(0|[1-9][0-9]{{0,17}}),"item_id":{_PLAIN},"output_index":({_INDEX}),'
    rf'(?:"(?:content|summary)_index":{_INDEX},)?'
    rf'|"item_id":{_PLAIN},"output_index":({_INDEX}),(?:"content_index":{_INDEX},)?'
    rf'|(?:"logprobs":\[\],)?"output_index":({_INDEX}),"item_id":{_PLAIN},"content_index":{_INDEX},'
    r')"delta":"')
#: The fast path's delta kind -> its event type.
_DELTA_TYPES = {kind: f"response.{kind}.delta" for kind in (
    "output_text", "function_call_arguments", "reasoning_text", "reasoning_summary_text", "refusal")}
#: What may follow the fragment's closing quote: the fields the servers add (an empty ``logprobs`` list, an
#: ``obfuscation`` string without escapes), the closing brace, JSON whitespace; :data:`_LATE_TAIL` also the
#: sequence number (its group), for the orders that put it there.
_TAIL = r'(?:,"logprobs":\[\])?(?:,"obfuscation":"[^"\\\x00-\x1f]*")?'
_DELTA_TAIL = re.compile(_TAIL + r'\}[ \t\n\r]*\Z')
_LATE_TAIL = re.compile(_TAIL + r'(?:,"sequence_number":(0|[1-9][0-9]{0,17}))?\}[ \t\n\r]*\Z')
#: The JSON string scanner ``json.loads`` uses (strict: control characters refused).
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


class _Item:
    """One output item."""

    __slots__ = ("added", "call", "closed", "done_by_server", "final", "id", "index", "kept", "reasoning", "refusal",
                 "text", "type")

    def __init__(self, index: int, item_id: str | None, item_type: str, added: dict[str, Any]) -> None:
        self.index = index
        self.id = item_id
        self.type = item_type
        self.closed = False
        #: A hosted item whose ``response.<type>.completed`` progress event arrived.
        self.done_by_server = False
        #: The item as ``output_item.added`` / ``output_item.done`` sent it.
        self.added = added
        self.final: dict[str, Any] | None = None
        #: Whether it goes to the result's ``items`` (hosted, or unknown and kept).
        self.kept = False
        self.text: TextBuffer | None = None
        self.refusal: TextBuffer | None = None
        self.reasoning: TextBuffer | None = None
        self.call: ToolCallBuffer | None = None


class OpenAIResponsesAccumulator(RouteAccumulator):
    """Accumulates Responses stream events; see the module docstring for the rules."""

    contract = CONTRACT

    __slots__ = ("_by_id", "_citations", "_items")

    #: ``data.type`` -> the name of its handler method (see ``RouteAccumulator.handler_names``).
    handler_names: ClassVar[Mapping[str, str]] = {
        "response.output_text.delta": "_output_text_delta",
        "response.function_call_arguments.delta": "_input_delta",
        "response.custom_tool_call_input.delta": "_input_delta",
        "response.shell_call_command.delta": "_input_delta",
        "response.reasoning_text.delta": "_reasoning_delta",
        "response.reasoning_summary_text.delta": "_reasoning_delta",
        "response.refusal.delta": "_refusal_delta",
        "response.function_call_arguments.done": "_input_done",
        "response.custom_tool_call_input.done": "_input_done",
        "response.shell_call_command.added": "_part_event",
        "response.shell_call_command.done": "_part_event",
        "response.output_item.added": "_item_added",
        "response.output_item.done": "_item_done",
        "response.content_part.added": "_part_added",
        "response.content_part.done": "_part_event",
        "response.output_text.done": "_part_event",
        "response.output_text.annotation.added": "_annotation",
        "response.refusal.done": "_part_event",
        "response.reasoning_text.done": "_part_event",
        "response.reasoning_summary_part.added": "_part_added",
        "response.reasoning_summary_part.done": "_part_event",
        "response.reasoning_summary_text.done": "_part_event",
        **dict.fromkeys(_HOSTED_PROGRESS, "ignore"),
        **dict.fromkeys(_HOSTED_COMPLETED, "_hosted_completed"),
        "response.created": "_created",
        "response.in_progress": "ignore",
        "response.queued": "ignore",
        "response.completed": "_completed",
        "response.incomplete": "_incomplete",
        "response.failed": "_failed",
        "error": "_error",  # nested {"error": {type, code}} (live) or flat {type: "error", code}
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._items: dict[int, _Item] = {}
        self._by_id: dict[str, _Item] = {}
        self._citations: list[JSON] = []

    # -- the typed fast path ------------------------------------------------------------------

    def handle(self, event: EventTuple) -> None:
        """The envelope step (:meth:`RouteAccumulator.handle`), with a fast path for the deltas that make up
        nearly every stream (text, refusal, reasoning, summary and function-argument deltas): when ``data`` is
        exactly :data:`_DELTA_HEAD` + one JSON string + :data:`_DELTA_TAIL` with at most one sequence number, the
        event is named as its type (or not named), and every check the general path would make passes (not
        after the terminal event; the sequence number is the next one, or there is none and the stream is not
        a resumed one; an open item at ``output_index`` with the delta's channel: a message for text and
        refusals, a reasoning item for reasoning and summaries, an open function call for arguments), the
        sequence number is taken and the fragment appended without building the object. In every other case
        nothing has been changed and the general path decides (``tests/test_typed_fast_paths.py`` compares the
        two)."""
        data = event[1]  # (an EventTuple: type, data, last event id)
        match = _DELTA_HEAD.match(data)
        if match is not None and not self.terminal_seen:
            # An open item implies the start event: items open only after response.created.
            kind = match[1]
            name = event[0]  # (the event's type)
            item = self._items.get(int(match[3] or match[4] or match[5]))  # (the order that matched)
            if item is not None and not item.closed and (name == "message" or name == _DELTA_TYPES[kind]):
                buf: TextBuffer | ToolCallBuffer | None
                if kind == "output_text":
                    buf = item.text
                    ceiling, stage = self._max_text, "text"
                elif kind == "function_call_arguments":
                    buf = item.call
                    if buf is not None and (buf.kind != "function" or not buf.open):
                        buf = None
                    ceiling, stage = self._max_tool_input, "tool_input"
                else:
                    buf = item.refusal if kind == "refusal" else item.reasoning
                    ceiling, stage = self._max_text, "text"
                if buf is not None:
                    try:
                        fragment, end = _scanstring(data, match.end())
                    except ValueError:
                        fragment, end = "", 0  # not a JSON string: the general path reports it
                    sequencer = self.sequencer
                    assert sequencer is not None  # contract.resume: every accumulation has one
                    number = match[2]
                    if number is not None:  # the api.openai.com order: nothing numbered after the fragment
                        taken = end and _DELTA_TAIL.match(data, end) is not None and sequencer.take_next(int(number))
                    else:
                        tail = _LATE_TAIL.match(data, end) if end else None
                        if tail is None:
                            taken = False
                        elif tail[1] is not None:
                            taken = sequencer.take_next(int(tail[1]))
                        else:
                            taken = sequencer.unnumbered_taken()
                    if taken:
                        if fragment:
                            self._append(buf, fragment, ceiling, stage)
                        return
        RouteAccumulator.handle(self, event)

    # -- lifecycle ---------------------------------------------------------------------------

    def _response(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """The event's ``response`` object: ``{}`` when absent; ``None`` after recording
        ``envelope`` when it is not an object."""
        response = obj.get("response")
        if response is None:
            return {}
        if response.__class__ is not dict:
            self._protocol("envelope")
            return None
        found: dict[str, Any] = response
        return found

    def _created(self, obj: dict[str, Any]) -> None:
        if self._start():
            response = self._response(obj)
            if response:
                self._identity(response.get("id"), response.get("model"))

    def _open_blocks(self) -> int:
        count = 0
        for item in self._items.values():
            if not item.closed:
                count += 1
        for call in self.calls:
            if call.open:
                count += 1
        return count

    def _usage(self, response: dict[str, Any]) -> bool:
        """Keep the terminal response's ``usage`` object, if any. False on failure."""
        usage = response.get("usage")
        if usage.__class__ is dict:
            if not self._charge_usage(usage):
                return False
            self.usage = usage
        return True

    def _completed(self, obj: dict[str, Any]) -> None:
        """Stop reason: ``response.status`` (``completed`` when absent); a status that is not a
        string is ``envelope``."""
        response = self._response(obj)
        if response is None:
            return
        status = response.get("status")
        if status is None:
            status = "completed"
        elif status.__class__ is not str:
            self._protocol("envelope")
            return
        if self._usage(response) and self._close_hosted(response):
            self._terminal(status, self._open_blocks())
            if any(_cut(item) for item in self._items.values()):  # the response cannot be whole (_same_item)
                self._fail(Outcome.TRUNCATED, "incomplete_item")
            elif self.failure is None:
                self._final_output(response)

    def _hosted_completed(self, obj: dict[str, Any]) -> None:
        """A hosted tool's ``response.<type>.completed``: its open item at ``output_index`` (of that type) is done on
        the server's side, and ``response.completed`` may close it (:meth:`_close_hosted`). One that names no such
        item changes nothing, as the other progress events."""
        index = obj.get("output_index")
        item = self._items.get(index) if index.__class__ is int else None
        if item is not None and item.kept and not item.closed and item.type == _HOSTED_COMPLETED[obj["type"]]:
            item.done_by_server = True

    def _close_hosted(self, response: dict[str, Any]) -> bool:
        """Close each hosted item the server finished (:meth:`_hosted_completed`) but never closed with
        ``output_item.done``, with the completed response's ``output`` entry at its index, checked as a closed item
        is (:meth:`_same_item`: same type, same id). Without such an entry it stays open (``open_block``). False on
        failure."""
        output = response.get("output")
        for item in self._items.values():
            if item.closed or not item.done_by_server:
                continue
            final = output[item.index] if output.__class__ is list and item.index < len(output) else None
            if final.__class__ is not dict:
                continue
            if not self._same_item(item, final) or not self._retain():
                return False
            item.final = final
            item.closed = True
        return True

    def _final_output(self, response: dict[str, Any]) -> None:
        """The completed response's ``output`` is the answer the SDK returns: when it lists items (a server
        may leave it out or empty), it must agree with the streamed ones (:meth:`_output_problem`). And it is
        the response the stream created: an id other than ``response.created``'s is ``item_mismatch`` (two
        responses spliced into one stream)."""
        response_id = response.get("id")
        output = response.get("output")
        if response_id is not None and self.response_id is not None and response_id != self.response_id:
            self._protocol("item_mismatch")
        elif output:  # (after _terminal's _check_texts: the pending delta is announced, text pairs combined)
            stage = self._output_problem(output)
            if stage is not None:
                self._protocol(stage)

    def _output_problem(self, output: object) -> str | None:
        """Why ``output`` is not the streamed answer, or ``None``. It lists the streamed items, one per
        ``output_index`` and of the same ``type``; a client call there with the call's ``call_id``, ``name``
        and input (a whole-item call: its closed item's action fields), a message with the text and refusal
        the deltas built (``item_mismatch``; a field it leaves out is not compared, and a list or item that
        is not one is ``envelope``). Other fields are not compared: recorded streams re-issue reasoning ids
        and encrypted content there."""
        if output.__class__ is not list:
            return "envelope"
        items = self._items
        if len(output) != len(items):
            return "item_mismatch"
        for index, final in enumerate(output):
            if final.__class__ is not dict:
                return "envelope"
            item = items.get(index)
            if item is None or final.get("type") != item.type:
                return "item_mismatch"
            call = item.call
            if call is not None:
                key = _CALL_INPUT.get(call.kind)
                if key is not None:
                    expected = {"call_id": call.id, "name": call.name, key: combine_surrogates(call.joined())}
                else:  # a whole-item call: its arguments are its closed item's fields
                    done = item.final
                    assert done is not None  # (no item is open at the terminal event: _terminal checked)
                    expected = {"call_id": call.id, **{field: done.get(field) for field in _CALL_FIELDS[call.kind]}}
                for field, value in expected.items():
                    sent = final.get(field)
                    if sent is not None and sent != value:
                        return "item_mismatch"
            elif item.text is not None:
                content = final.get("content")
                if content is not None:
                    texts = _part_texts(content)
                    if texts is None:
                        return "envelope"
                    assert item.refusal is not None  # (a message has both channels)
                    if texts != (item.text.joined(), item.refusal.joined()):
                        return "item_mismatch"
        return None

    def _incomplete(self, obj: dict[str, Any]) -> None:
        """Stop reason: ``incomplete_details.reason`` (``incomplete`` when absent or empty); details
        that are not an object, or a reason that is not a string, are ``envelope``."""
        response = self._response(obj)
        if response is None:
            return
        details = response.get("incomplete_details")
        reason = None
        if details is not None:
            if details.__class__ is not dict:
                self._protocol("envelope")
                return
            reason = details.get("reason")
            if reason is not None and reason.__class__ is not str:
                self._protocol("envelope")
                return
        if self._usage(response):
            self._terminal(reason or "incomplete", 0)

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
        role = CONTENT_TYPES.get(item_type)
        if role is None or role.endswith("part"):
            if not self._unknown():
                return
            role = "hosted"
        elif item_type in _RUNNER_FIELDS:  # a shell call or a tool search: who runs it decides its role
            runner = _runner(it)
            if runner == "envelope":
                self._protocol("envelope")
                return
            if runner == "server":
                role = "hosted"
            elif runner == "unknown":  # (who runs it is not known: not a call the route can hand over)
                if not self._unknown():
                    return
                role = "hosted"
        if not self._check_blocks(len(self._items)) or not self._retain():
            return
        item = self._items[index] = _Item(index, item_id, item_type, it)
        if item_id:
            self._by_id[item_id] = item
        if role == "message":
            item.text = TextBuffer("text", index)
            item.refusal = TextBuffer("refusal", index)
        elif role == "reasoning":
            item.reasoning = TextBuffer("reasoning", index)
        elif role == "hosted":
            item.kept = True
        else:
            self._open_call(item, it, role[5:])

    def _open_call(self, item: _Item, it: dict[str, Any], kind: str) -> None:
        """A client call item: open its call; a streamed input already in the item is its start."""
        call_id = it.get("call_id")
        if call_id is None or call_id == "":  # the item's id stands in until the item closes (_same_call)
            call_id = it.get("id")
        key = _CALL_INPUT.get(kind)
        name = it.get("name") if key is not None else kind
        text = it.get(key) if key is not None else None
        if ((call_id is not None and call_id.__class__ is not str) or (name is not None and name.__class__ is not str)
                or (text is not None and text.__class__ is not str)):
            self._protocol("envelope")
            return
        call = item.call = self._new_call(call_id, name, kind)
        if call is not None and text:
            self._tool_input(call, text)

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
        it = obj.get("item")
        if it.__class__ is not dict:
            self._protocol("envelope")
            return
        if not self._same_item(item, it) or not self._retain():
            return
        call = item.call
        if call is not None and not self._same_call(item, call, it):
            return
        if call is not None:
            key = _CALL_INPUT.get(call.kind)
            final = it.get(key) if key is not None else None
            if final is not None and final.__class__ is not str:
                self._protocol("envelope")
                return
            if not call.open:
                # Closed by its ``.done`` event: the item sent back must hold the input the call ran with.
                if final is not None and final != combine_surrogates(call.joined()):
                    self._fail(Outcome.PAYLOAD_ERROR, "tool_arguments_mismatch")
                    return
            elif key is not None:
                if not self._close_with(call, final):
                    return
            elif not self._close_call_object(call, {k: it[k] for k in _CALL_FIELDS[call.kind] if k in it}):
                return
        if item.text is not None and not self._reconcile(item, it):
            return
        item.final = it
        item.closed = True

    def _same_item(self, item: _Item, it: dict[str, Any]) -> bool:
        """The closed item is the added one, whole: the assistant message sends it back as it is.
        Its ``type`` (required) and its ``id`` (when both carry one) are the added item's
        (``item_mismatch``), and so is who runs it (a shell call's ``environment``, a tool search's ``execution``,
        when it carries one); its part lists (a message's ``content``, a reasoning item's ``content`` and
        ``summary``) hold parts of the types :meth:`_part_added` takes (``unknown_type``, unless unknown
        items are kept); a value of another type is ``envelope``. The ``status`` of a message, reasoning
        item or client call other than ``completed`` (``incomplete``, or one the route does not know)
        says the item was cut: ``response.completed`` then ends ``truncated``
        ``incomplete_item``. ``in_progress`` is not: the event itself says the item is done (a
        Realtime server is known to send it on done items). False on failure."""
        item_type = it.get("type")
        item_id = it.get("id")
        status = it.get("status")
        if (item_type.__class__ is not str or (item_id is not None and item_id.__class__ is not str)
                or (status is not None and status.__class__ is not str)):
            self._protocol("envelope")
            return False
        if item_type != item.type or (item_id and item.id and item_id != item.id):
            self._protocol("item_mismatch")
            return False
        runner_field = _RUNNER_FIELDS.get(item_type)
        if runner_field is not None and it.get(runner_field) is not None and _runner(it) != _runner(item.added):
            # (who runs it was decided when it was added: a closed item that says otherwise is another item)
            self._protocol("item_mismatch")
            return False
        for field, role in _PART_LISTS.get(item_type, ()):
            parts = it.get(field)
            if parts is None:
                continue
            if parts.__class__ is not list:
                self._protocol("envelope")
                return False
            for part in parts:
                part_type = part.get("type") if part.__class__ is dict else None
                if part_type.__class__ is not str:
                    self._protocol("envelope")
                    return False
                if CONTENT_TYPES.get(part_type) != role and not self._unknown():
                    return False
        return True

    def _same_call(self, item: _Item, call: ToolCallBuffer, it: dict[str, Any]) -> bool:
        """The closed item names the same call as the added one: its ``name`` (calls named by the
        provider) and its ``call_id``, what the client's answer must quote. Absent, each leaves the
        call's as it is; a call without a name takes the item's while it is still open, and one whose
        id stood in from the item's ``id`` (no ``call_id`` at ``added``) takes its ``call_id``; any other
        difference is ``item_mismatch``: the client would run one call while the assistant message it
        sends back (the items as ``output_item.done`` sent them) holds another. False on failure."""
        name = it.get("name") if call.kind in _CALL_INPUT else None
        if name is not None and name != call.name:
            if name.__class__ is not str:
                self._protocol("envelope")
                return False
            if call.name or not call.open:
                self._protocol("item_mismatch")
                return False
            if not self._rename(call, name, len(name)):  # (it had no name: None or "")
                return False
            call.name = name
        call_id = it.get("call_id")
        if call_id is not None and call_id != "" and call_id != call.id:
            if call_id.__class__ is not str:
                self._protocol("envelope")
                return False
            if item.added.get("call_id") and call.kind not in _PROVISIONAL_CALL_ID:
                self._protocol("item_mismatch")
                return False
            if not self._rename(call, call_id, len(call_id) - len(call.id or "")):
                return False
            call.id = call_id
        return True

    def _reconcile(self, item: _Item, it: dict[str, Any]) -> bool:
        """A closed message item's ``output_text`` / ``refusal`` parts must equal the deltas; when
        no delta came for a channel, the item's text is taken (and shown)."""
        content = it.get("content")
        if content is None:
            return True
        finals = _part_texts(content)  # (a list of typed objects: _same_item)
        if finals is None:
            self._protocol("envelope")
            return False
        text, refusal = finals
        for buf, final in ((item.text, text), (item.refusal, refusal)):
            assert buf is not None
            if self._run is buf:
                self.flush()  # joined() below merges the fragments the pending delta points into
            if not buf.parts:
                if final and not self._text(buf, final):
                    return False
            elif combine_surrogates(buf.joined()) != final:  # a pair split across deltas is one character
                self._protocol("item_mismatch")
                return False
        return True

    def _part_added(self, obj: dict[str, Any]) -> None:
        item = self._item(obj)
        if item is None:
            return
        part = obj.get("part")
        part_type = part.get("type") if part.__class__ is dict else None
        if part_type.__class__ is not str:  # no part object, or a type that is not a name
            self._protocol("envelope")
        elif CONTENT_TYPES.get(part_type) != _PART_TYPES[obj["type"]]:
            self._unknown()

    def _part_event(self, obj: dict[str, Any]) -> None:
        self._item(obj)

    def _annotation(self, obj: dict[str, Any]) -> None:
        if self._item(obj) is not None:
            self._cite(self._citations, obj.get("annotation"))

    def _fragment(self, obj: dict[str, Any]) -> str | None:
        """The event's ``delta`` string (text and input deltas alike); ``None`` after recording
        ``envelope`` when it is not a string."""
        fragment = obj.get("delta")
        if fragment.__class__ is not str:
            self._protocol("envelope")
            return None
        return fragment

    def _delta(self, obj: dict[str, Any], buf: TextBuffer | None) -> None:
        if buf is None:
            self._protocol("delta_type")
            return
        fragment = obj.get("delta")  # _fragment, inline (every text delta passes here)
        if fragment.__class__ is not str:
            self._protocol("envelope")
        elif fragment:
            self._append(buf, fragment, self._max_text, "text")

    def _output_text_delta(self, obj: dict[str, Any]) -> None:
        # The hottest event of the route: an open item found by its output_index is taken
        # directly; anything else goes through _item (item_id fallback, unknown, closed).
        index = obj.get("output_index")
        item = self._items.get(index) if index.__class__ is int else None
        if item is None or item.closed:
            item = self._item(obj)
            if item is None:
                return
        self._delta(obj, item.text)

    def _refusal_delta(self, obj: dict[str, Any]) -> None:
        item = self._item(obj)
        if item is not None:
            self._delta(obj, item.refusal)

    def _reasoning_delta(self, obj: dict[str, Any]) -> None:
        item = self._item(obj)
        if item is not None:
            self._delta(obj, item.reasoning)

    # -- client calls ----------------------------------------------------------------------

    def _call_of(self, obj: dict[str, Any]) -> ToolCallBuffer | None:
        """The open call a streamed-input event belongs to (its kind is in the event type)."""
        kind = _EVENT_KIND[obj["type"]]
        item = self._item(obj)
        if item is None:
            return None
        call = item.call
        if call is None or call.kind != kind:
            if item.type != _ITEM_OF_KIND[kind]:
                self._protocol("delta_type")
            return None  # a hosted shell_call: its command events carry nothing of ours
        if not call.open:
            self._protocol("closed_block")
            return None
        return call

    def _input_delta(self, obj: dict[str, Any]) -> None:
        call = self._call_of(obj)
        if call is None:
            return
        fragment = self._fragment(obj)
        if fragment:
            self._append(call, fragment, self._max_tool_input, "tool_input")

    def _input_done(self, obj: dict[str, Any]) -> None:
        call = self._call_of(obj)
        if call is None:
            return
        final = obj.get(_CALL_INPUT[call.kind])
        if final is not None and final.__class__ is not str:
            self._protocol("envelope")
            return
        self._close_with(call, final)

    def _close_with(self, call: ToolCallBuffer, final: str | None) -> bool:
        """Close ``call``; ``final`` (the ``.done`` / closed item's input) must agree with the
        deltas, or be the input when no delta came."""
        if final is not None:
            if call.parts:
                if self._run is call:
                    self.flush()
                if combine_surrogates(call.joined()) != final:
                    self._close_call(call, validate=False)
                    return self._settle(call, None, "tool_arguments_mismatch",
                                        ("arguments disagree with the streamed deltas",))
            elif final and not self._tool_input(call, final):
                return False
        return self._close_call(call)

    # -- results -------------------------------------------------------------------------

    def _text_buffers(self) -> Iterable[TextBuffer]:
        for item in self._items.values():
            for buf in (item.text, item.refusal, item.reasoning):
                if buf is not None:
                    yield buf

    def open_count(self) -> int:
        return self._open_blocks()

    def choice_results(self, ready: bool) -> tuple[ChoiceResult, ...]:
        """One choice: the items' channels joined in ``output_index`` order, the items as sent (the kept
        ones also as ``items``), the calls and citations."""
        items = self._items
        ordered = [items[index] for index in sorted(items)]  # (keys are the items' output_index)
        text: list[str] = []
        refusal: list[str] = []
        reasoning: list[str] = []
        kept: list[JSON] = []
        message: list[JSON] = []  # (items open only after the start event)
        for i in ordered:
            if i.text is not None:
                text.append(i.text.joined())
            if i.refusal is not None:
                refusal.append(i.refusal.joined())
            if i.reasoning is not None:
                reasoning.append(i.reasoning.joined())
            sent = i.added if i.final is None else i.final
            message.append(sent)
            if i.kept:
                kept.append(sent)
        return (new_choice(0, "".join(text), "".join(refusal), "".join(reasoning), self.stop_reason,
                           self._calls_in(self.calls, ready), tuple(kept), tuple(self._citations), None,
                           message if self._started else None),)


#: Streamed-input event type -> the call kind it feeds.
_EVENT_KIND = {
    "response.function_call_arguments.delta": "function",
    "response.function_call_arguments.done": "function",
    "response.custom_tool_call_input.delta": "custom",
    "response.custom_tool_call_input.done": "custom",
    "response.shell_call_command.delta": "shell",
}


def _part_texts(content: object) -> tuple[str, str] | None:
    """A message's ``content`` list -> (its ``output_text`` texts, its ``refusal`` texts), each joined; ``None``
    when it is not a list of objects whose texts are strings."""
    if content.__class__ is not list:
        return None
    texts: list[str] = []
    refusals: list[str] = []
    for part in content:
        if part.__class__ is not dict:
            return None
        part_type = part.get("type")
        if part_type == "output_text":
            pieces, field = texts, "text"
        elif part_type == "refusal":
            pieces, field = refusals, "refusal"
        else:
            continue
        value = part.get(field)
        if value.__class__ is not str:
            return None
        pieces.append(value)
    return "".join(texts), "".join(refusals)


def _cut(item: _Item) -> bool:
    """Whether a closed message, reasoning item or client call says, by its ``status``, that it was cut (a string:
    ``_same_item``); hosted and kept items' statuses are the server's business."""
    status = item.final.get("status") if item.final is not None and not item.kept else None
    return status is not None and status not in _WHOLE_STATUSES


def _runner(it: dict[str, Any]) -> str:
    """Who runs a ``shell_call`` or ``tool_search_call`` item: ``"client"``, ``"server"`` (OpenAI), ``"unknown"`` (a
    value the route does not know) or ``"envelope"`` (a value of the wrong type). A shell call's ``environment`` is
    ``null`` or absent (the client), ``{"type": "local"}`` or ``{"type": "container_reference", ...}`` (openai-python
    ``ResponseFunctionShellToolCall.environment``); a tool search's ``execution`` is ``"client"`` or ``"server"``."""
    if it.get("type") == "tool_search_call":
        execution = it.get("execution")
        return execution if execution == "client" or execution == "server" else "unknown"
    env = it.get("environment")
    if env is None:
        return "client"
    kind = env.get("type") if env.__class__ is dict else None
    if kind.__class__ is not str:
        return "envelope"
    return _ENVIRONMENTS.get(kind, "unknown")


#: The item types whose runner an item field says (:func:`_runner`) -> that field: the client's calls, unless
#: OpenAI runs them (then hosted items).
_RUNNER_FIELDS = {"shell_call": "environment", "tool_search_call": "execution"}
#: A shell call's ``environment.type`` -> who runs it.
_ENVIRONMENTS = {"local": "client", "container_reference": "server"}

