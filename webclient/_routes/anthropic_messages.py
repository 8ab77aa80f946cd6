"""Anthropic Messages (``POST /v1/messages``, ``stream: true``).

Wire facts (``route-contracts.md`` §3; vocabulary from anthropic-sdk-python 2.16.0
``src/anthropic/types/``: ``content_block.py`` and ``beta/beta_content_block.py`` (block types),
``raw_content_block_delta.py`` and ``beta/beta_raw_content_block_delta.py`` (delta types),
``stop_reason.py`` and ``beta/beta_stop_reason.py``; accumulation as in
``lib/streaming/_messages.py`` / ``_beta_messages.py`` ``accumulate_event``):

* ``message_start`` -> per block ``content_block_start`` / ``content_block_delta``* /
  ``content_block_stop`` -> ``message_delta``+ -> ``message_stop``; ``ping`` anywhere (ignored);
  unknown *event* types are tolerated (ignored), as the docs ask. A message may start with blocks
  (``message.content``; programmatic tool calling sends the client calls a code execution made that way,
  with the message's ``stop_reason``, and ends the message at once): they are its first blocks, each
  taken as its ``content_block_start`` and ``content_block_stop`` would be, and streamed blocks follow
  at the next indexes. ``content`` that is not a list of blocks is ``envelope``.
* dispatch is on ``data.type``; the SSE ``event:`` name, when present, must agree
  (``protocol_error`` ``event_name``). An ``event: error`` / ``{"type": "error"}`` is
  ``upstream_error`` keeping only ``error.type``.
* blocks are keyed by ``index`` in a dict: a duplicate start, a delta or stop for an unknown or
  closed index, or a delta of the wrong kind for the block is ``protocol_error``. A second
  ``message_start`` (duplicated or spliced into a block) is ``protocol_error`` ``duplicate_start``.
  A block type outside :data:`CONTENT_TYPES`, or a delta type outside :data:`DELTA_TARGETS`, is
  ``unknown_type`` (the session's ``keep_unknown_items`` keeps it verbatim in ``items`` instead).
* ``text_delta`` -> text; ``citations_delta`` appends to the text block's ``citations``;
  ``thinking_delta`` -> reasoning (never mixed into text); ``signature_delta`` replaces the
  thinking block's ``signature``; ``compaction_delta`` sets the compaction block's ``content`` and
  ``encrypted_content`` (as the SDK does).
* ``tool_use`` blocks are client tool calls: ``input_json_delta.partial_json`` fragments are
  joined per block and parsed only at ``content_block_stop`` (an empty input is ``{}``).
  ``server_tool_use`` / ``mcp_tool_use`` run on Anthropic's side: their input is accumulated under
  the same ceiling and must parse to an object, and they are result ``items`` (with every
  ``*_tool_result``, ``container_upload``, ``compaction``, ``fallback``, ``mcp_tool_listing``
  block), never tool calls.
* the assistant message is ``{"role": "assistant", "content": [blocks]}``: each block as it
  started, with its accumulated ``text`` (+ ``citations``), ``thinking`` + ``signature``, parsed
  ``input``, or compaction fields; ``redacted_thinking`` ``data`` and result blocks verbatim.
* the result's ``details`` (:data:`MESSAGE_DETAILS`) are the message's ``stop_sequence``, ``stop_details`` (a
  refusal's category and explanation, the fallback credit), ``container`` and ``context_management`` as the SDK's
  snapshot keeps them: taken from ``message_start``'s message, then each ``message_delta`` sets the first two again
  (left out: removed) and replaces the other two when it sends them. A value of another type is ``envelope``.
* terminal: ``message_stop``, with the stop reason of the last ``message_delta`` (or the one the
  message started with, when no ``message_delta`` gave one; the SDK's snapshot starts from
  ``message_start``'s message). A block still
  open then is ``truncated`` when the stop reason does not commit (``max_tokens`` cut a tool
  input mid-way) and ``protocol_error`` ``open_block`` otherwise.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from operator import attrgetter
from typing import Any, ClassVar

from .._events import EventTuple
from .._outcome import Outcome
from .._toolcalls import Fragments, ToolCallBuffer, parse_tool_input
from .._updates import JSON, ChoiceResult, new_choice
from .._values import value_problem
from ._base import RouteAccumulator, RouteContract, TextBuffer, stop_table

#: ``stop_reason`` by category: ``StopReason`` (``end_turn | max_tokens | stop_sequence | tool_use |
#: pause_turn | refusal | model_context_window_exceeded``) and ``BetaStopReason`` (adds
#: ``compaction``). Per https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons,
#: ``refusal`` is a finished (refused) answer and ``pause_turn`` a server-tool loop that paused:
#: both commit, and the caller continues a paused turn by sending the assistant message back.
#: ``compaction`` (beta) likewise ends a turn after the context was compacted.
STOP_REASONS = stop_table(
    success=("end_turn", "stop_sequence", "tool_use", "pause_turn", "refusal", "compaction"),
    length=("max_tokens", "model_context_window_exceeded"),
)

#: Content block types (``ContentBlock`` and ``BetaContentBlock`` unions) -> what they are.
CONTENT_TYPES = {
    "text": "text",
    "thinking": "thinking",
    "redacted_thinking": "opaque",
    "tool_use": "call:function",
    "server_tool_use": "server_call",
    "mcp_tool_use": "server_call",
    "web_search_tool_result": "result",
    "web_fetch_tool_result": "result",
    "code_execution_tool_result": "result",
    "bash_code_execution_tool_result": "result",
    "text_editor_code_execution_tool_result": "result",
    "tool_search_tool_result": "result",
    "advisor_tool_result": "result",
    "mcp_tool_result": "result",
    "mcp_tool_listing": "result",
    "container_upload": "result",
    "fallback": "result",
    "compaction": "compaction",
}

#: Delta types (``RawContentBlockDelta`` / ``BetaRawContentBlockDelta``) -> the block roles that
#: take them.
DELTA_TARGETS = {
    "text_delta": ("text",),
    "citations_delta": ("text",),
    "thinking_delta": ("thinking",),
    "signature_delta": ("thinking",),
    "input_json_delta": ("call:function", "server_call"),
    "compaction_delta": ("compaction",),
}

#: A block's index (the order of the assistant message's content).
_BY_INDEX = attrgetter("index")

#: Block roles that are result ``items``.
_ITEM_ROLES = frozenset({"server_call", "result", "compaction", "unknown"})

CONTRACT = RouteContract(
    name="anthropic-messages",
    endpoint="/v1/messages",
    success_status=200,
    start_event="message_start",
    text_delta=("content_block_delta:text_delta", "content_block_delta:thinking_delta"),
    tool_input_delta=("content_block_delta:input_json_delta",),
    block_open=("content_block_start",),
    block_close=("content_block_stop",),
    terminal=("message_stop",),
    error=("error",),
    usage=("message_start", "message_delta"),
    keep_alive=("ping",),
    accumulator_key="content_block index (dict; duplicate, unknown and closed indexes are refused)",
    close_condition="content_block_stop for the block's index",
    terminal_condition="message_stop, with the stop reason from the last message_delta (else message_start's)",
    stop_reasons=STOP_REASONS,
    content_types=CONTENT_TYPES,
    dispatch_key="type",
    before_start=frozenset({"message_start", "ping", "error"}),
    choices_key=None,
    cross_check_event_name=True,
    done_sentinel="ignored",  # a stray sentinel (vercel harness artefact)
)


#: The exact text of the route's hottest events up to their fragment's opening quote, as the API writes
#: them (compact JSON, this key order): ``{"type":"content_block_delta","index":N,"delta":{"type":
#: "text_delta","text":"...``, and the same with ``"thinking_delta","thinking"`` or ``"input_json_delta",
#: "partial_json"``. Groups: the index (JSON integer syntax, at most nine digits), the delta type.
_DELTA_HEAD = re.compile(r'\{"type":"content_block_delta","index":(0|[1-9][0-9]{0,8}),"delta":\{"type":'
                         r'"(text_delta(?=","text":)|thinking_delta(?=","thinking":)|input_json_delta'
                         r'(?=","partial_json":))","[a-z_]+":"')
#: What may follow the fragment's closing quote for the event to be taken on the fast path: the two
#: closing braces, with JSON whitespace between and after them (the API pads its deltas there).
_DELTA_TAIL = re.compile(r"\}[ \t\n\r]*\}[ \t\n\r]*\Z")
#: The exact text of a block's ``content_block_stop`` as the API writes it (compact JSON, this key order, JSON
#: whitespace before and after the closing brace: the API pads its stops there). Group: the index.
_STOP = re.compile(r'\{"type":"content_block_stop","index":(0|[1-9][0-9]{0,8})[ \t\n\r]*\}[ \t\n\r]*\Z')
_STOP_START = '{"type":"content_block_stop",'
#: The JSON string scanner ``json.loads`` uses (strict: control characters refused).
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


#: The message-level facts kept in the result's ``details`` (``RouteAccumulator._keep_detail``), with the types each may
#: have: ``Message`` / ``BetaMessage`` and ``MessageDeltaEvent``'s delta (``context_management``: the event's own).
MESSAGE_DETAILS: tuple[tuple[str, tuple[type, ...]], ...] = (
    ("stop_sequence", (str,)), ("stop_details", (dict,)), ("container", (dict,)), ("context_management", (dict,)))
#: Those each ``message_delta`` sets even when it leaves them out (the SDK assigns ``delta.stop_sequence`` and
#: ``delta.stop_details`` as they came).
_REPLACED_BY_DELTA = frozenset({"stop_sequence", "stop_details"})


class _Block:
    """One content block."""

    __slots__ = ("call", "citations", "closed", "index", "preset", "role", "server", "signature", "start", "text",
                 "type", "updates", "value")

    def __init__(self, index: int, block_type: str, role: str, start: dict[str, Any]) -> None:
        self.index = index
        self.type = block_type
        self.role = role
        self.closed = False
        #: The block as ``content_block_start`` sent it.
        self.start = start
        #: Text or thinking accumulation (text / thinking blocks).
        self.text: TextBuffer | None = None
        #: Client tool call (tool_use blocks).
        self.call: ToolCallBuffer | None = None
        #: Server-side tool input (server_tool_use / mcp_tool_use blocks), and its parsed value.
        self.server: Fragments | None = None
        self.value: object = None
        #: An ``input`` sent whole in content_block_start (anything but ``{}``; client and server calls: validated as
        #: the input when no delta follows, so a non-object is ``tool_not_object``).
        self.preset: object = None
        #: Thinking blocks: the latest signature; text blocks: citations; compaction blocks: the
        #: fields compaction_delta set.
        self.signature = ""
        self.citations: list[JSON] = []
        self.updates: dict[str, Any] = {}

    def native(self) -> dict[str, Any]:
        """The block as the next request must send it back."""
        block = dict(self.start)
        role = self.role
        if role == "text":
            assert self.text is not None
            block["text"] = self.text.joined()
            if self.citations:
                block["citations"] = list(self.citations)
        elif role == "thinking":
            assert self.text is not None
            block["thinking"] = self.text.joined()
            block["signature"] = self.signature
        elif role == "call:function":
            call = self.call
            if call is not None and call.arguments is not None:
                block["input"] = call.arguments
            # else the start's own input stands (sent whole, or the {} placeholder)
        elif role == "server_call":
            if isinstance(self.value, dict):
                block["input"] = self.value
        elif role == "compaction":
            block.update(self.updates)
        return block


class AnthropicMessagesAccumulator(RouteAccumulator):
    """Accumulates Messages stream events; see the module docstring for the rules."""

    contract = CONTRACT

    __slots__ = ("_blocks", "_fast_block", "_fast_key", "_kept")

    #: ``data.type`` -> the name of its handler method (see ``RouteAccumulator.handler_names``).
    handler_names: ClassVar[Mapping[str, str]] = {
        "content_block_delta": "_block_delta",
        "content_block_start": "_block_start",
        "content_block_stop": "_block_stop",
        "message_start": "_message_start",
        "message_delta": "_message_delta",
        "message_stop": "_message_stop",
        "ping": "keepalive",
        "error": "_error",
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._blocks: dict[int, _Block] = {}
        # The fast path's last block, by the index text of its delta events.
        self._fast_key = ""
        self._fast_block: _Block | None = None
        #: Delta events of unknown types kept verbatim (``keep_unknown``).
        self._kept: list[JSON] = []

    # -- the typed fast path -------------------------------------------------------------

    def handle(self, event: EventTuple) -> None:
        """The envelope step (:meth:`RouteAccumulator.handle`), with a fast path for the text and
        tool-input deltas that make up nearly every stream: when ``data`` is exactly
        :data:`_DELTA_HEAD` + one JSON string + :data:`_DELTA_TAIL` (so ``json.loads`` would give
        ``{"type", "index", "delta": {"type", "text" | "thinking" | "partial_json"}}`` and nothing else), the
        event is named ``content_block_delta`` (or not named), and every check the general path
        would make on it passes (an open block of a role the delta type targets), the fragment is
        appended without building the object. In
        every other case nothing has been changed and the general path decides, so both paths end
        in the same state and updates (``tests/test_anthropic_fast_path.py`` compares them)."""
        data = event[1]  # (an EventTuple: type, data, last event id)
        match = _DELTA_HEAD.match(data)
        if match is not None:
            # An open block implies the started, non-terminal state the general path checks first:
            # blocks open only after message_start, and a terminal event with a block open fails.
            name = event[0]  # (the event's type)
            key = match[1]
            if key == self._fast_key:  # consecutive deltas go to one block (entries are never replaced)
                block = self._fast_block
            else:
                block = self._blocks.get(int(key))
                if block is not None:
                    self._fast_key, self._fast_block = key, block
            if block is not None and not block.closed and (name == "content_block_delta" or name == "message"):
                kind = match[2]
                if block.role in DELTA_TARGETS[kind]:  # else delta_type, on the general path
                    try:
                        fragment, end = _scanstring(data, match.end())
                    except ValueError:
                        fragment, end = "", 0  # not a JSON string: the general path reports it
                    if end and ((end + 2 == len(data) and data.endswith("}}"))
                                or _DELTA_TAIL.match(data, end) is not None):
                        # _block_delta's steps for the three kinds (the event's size and number are
                        # only read by handlers that retain objects)
                        if kind != "input_json_delta":
                            assert block.text is not None  # text and thinking blocks have one
                            if fragment:
                                self._append(block.text, fragment, self._max_text, "text")
                        elif block.call is not None:
                            if fragment:
                                self._append(block.call, fragment, self._max_tool_input, "tool_input")
                        elif block.server is not None:
                            self._server_input(block.server, fragment)
                        return
        elif data.startswith(_STOP_START):
            # A block's stop, exactly :data:`_STOP` (``json.loads`` would give ``{"type", "index"}``), named
            # ``content_block_stop`` (or not named), for an open block: _block_stop's step, without the object.
            stop = _STOP.match(data)
            if stop is not None:
                name = event[0]  # (the event's type)
                block = self._blocks.get(int(stop[1]))
                if block is not None and not block.closed and (name == "content_block_stop" or name == "message"):
                    self._close(block)
                    return
        RouteAccumulator.handle(self, event)

    # -- message level -------------------------------------------------------------------

    def _message_start(self, obj: dict[str, Any]) -> None:
        if not self._start():
            return
        message = obj.get("message")
        content = message.get("content") if message.__class__ is dict else None
        if message.__class__ is not dict or (content is not None and content.__class__ is not list):
            self._protocol("envelope")
            return
        self._identity(message.get("id"), message.get("model"))
        usage = message.get("usage")
        if usage.__class__ is dict:
            self._merge_usage(usage)
        if self.failure is not None:
            return
        for key, kinds in MESSAGE_DETAILS:  # the snapshot starts from the message as it started
            if not self._keep_detail(key, message.get(key), kinds):
                return
        # Blocks the message starts with (programmatic tool calling: the message that carries the tool calls a
        # code execution made starts with them whole, and may end at once) are its first blocks, each taken as
        # its content_block_start and content_block_stop would be; streamed blocks follow at the next indexes.
        for index, block in enumerate(content or ()):
            self._block_start({"index": index, "content_block": block})
            if self.failure is not None:
                return
            self._close(self._blocks[index])
            if self.failure is not None:
                return
        self._stop_reason_of(message)

    def _message_delta(self, obj: dict[str, Any]) -> None:
        delta = obj.get("delta")
        if delta.__class__ is not dict:
            self._protocol("envelope")
            return
        if not self._stop_reason_of(delta):
            return
        # As the SDK's snapshot: each message_delta sets the stop sequence and the stop details (absent: null); a
        # container or context management it sends replaces the earlier one, and one it leaves out stays.
        for key, kinds in MESSAGE_DETAILS:
            value = (delta if key != "context_management" else obj).get(key)
            if (value is not None or key in _REPLACED_BY_DELTA) and not self._keep_detail(key, value, kinds):
                return
        usage = obj.get("usage")
        if usage.__class__ is dict:
            self._merge_usage(usage)

    def _stop_reason_of(self, holder: dict[str, Any]) -> bool:
        """``holder``'s ``stop_reason`` (a message that starts with one, or a ``message_delta``), when it is not
        ``null``, is the message's stop reason until a later one replaces it; one that is not a string is
        ``envelope``. Returns False on failure."""
        reason = holder.get("stop_reason")
        if reason is None:
            return True
        if reason.__class__ is not str:
            self._protocol("envelope")
            return False
        if not self._hold_as("stop_reason", len(reason)):
            return False
        self.stop_reason = reason
        return True

    def _merge_usage(self, usage: dict[str, Any]) -> None:
        """``message_start``'s usage, then each ``message_delta``'s, merged into one object: the
        counts are cumulative, so a later value overwrites an earlier one, and keys only one event
        sends (``message_start``'s ``input_tokens`` when a delta leaves it out) are kept, as the SDK's
        ``accumulate_event`` does. Charged by key (:meth:`~RouteAccumulator._charge_merged_usage`):
        a key sent again costs nothing more, new keys grow the charge up to the item ceiling."""
        if self._charge_usage(usage, merge=True):
            if self.usage is None:
                self.usage = {}
            self.usage.update(usage)

    def _message_stop(self, obj: dict[str, Any]) -> None:
        self._terminal(self.stop_reason, sum(1 for b in self._blocks.values() if not b.closed))

    # -- blocks --------------------------------------------------------------------------

    def _block_start(self, obj: dict[str, Any]) -> None:
        index = obj.get("index")
        block_obj = obj.get("content_block")
        if index.__class__ is not int or block_obj.__class__ is not dict:
            self._protocol("envelope")
            return
        cb: dict[str, Any] = block_obj
        block_type = cb.get("type")
        if block_type.__class__ is not str:
            self._protocol("envelope")
            return
        if index in self._blocks:
            self._protocol("duplicate_block")
            return
        role = CONTENT_TYPES.get(block_type)
        if role is None:
            if not self._unknown():
                return
            role = "unknown"
        elif role == "call:function" and (cb.get("id").__class__ is not str or cb.get("name").__class__ is not str):
            self._protocol("envelope")  # a client call needs its id (for the tool result) and name
            return
        if not self._check_blocks(len(self._blocks)) or not self._retain():
            return
        block = self._blocks[index] = _Block(index, block_type, role, cb)
        if role == "text" or role == "thinking":
            block.text = TextBuffer("text" if role == "text" else "reasoning", index)
            self._optional_text(block.text, cb.get(block_type))  # text sent whole in the start
            if role == "thinking":
                signature = cb.get("signature")
                if signature and self._sign("", signature):
                    block.signature = signature
            else:
                citations = cb.get("citations")
                if citations:
                    self._each(citations, self._cite, block.citations)
        elif role == "opaque":
            data = cb.get("data")
            if data is not None:
                self._sign("", data)  # redacted_thinking data counts as a signature
        elif role == "call:function" or role == "server_call":
            if role == "server_call":
                block.server = Fragments()
            else:
                block.call = self._new_call(cb["id"], cb["name"])
            preset = cb.get("input")
            if preset is not None and preset != {}:  # {} is the usual placeholder before input_json deltas
                block.preset = preset

    def _block(self, obj: dict[str, Any]) -> _Block | None:
        index = obj.get("index")
        block = self._blocks.get(index) if index.__class__ is int else None
        if block is None:
            self._protocol("unknown_block")
            return None
        if block.closed:
            self._protocol("closed_block")
            return None
        return block

    def _block_delta(self, obj: dict[str, Any]) -> None:
        # The hottest event of the route: the block lookup and the text_delta case are inlined.
        index = obj.get("index")
        block = self._blocks.get(index) if index.__class__ is int else None
        if block is None or block.closed:
            self._protocol("unknown_block" if block is None else "closed_block")
            return
        delta = obj.get("delta")
        if delta.__class__ is not dict:
            self._protocol("envelope")
            return
        kind = delta.get("type")
        if kind == "text_delta":
            fragment = delta.get("text")
            buf = block.text
            if block.role != "text" or buf is None:
                self._protocol("delta_type")
            elif fragment.__class__ is not str:
                self._protocol("envelope")
            elif fragment:
                self._append(buf, fragment, self._max_text, "text")
            return
        targets = DELTA_TARGETS.get(kind) if kind.__class__ is str else None
        if targets is None:
            if kind.__class__ is not str:
                self._protocol("envelope")
            elif self._unknown():
                self._kept.append(obj)
            return
        if block.role not in targets:
            self._protocol("delta_type")
        elif kind == "input_json_delta":
            fragment = delta.get("partial_json")
            if fragment.__class__ is not str:
                self._protocol("envelope")
            elif block.call is not None:
                if fragment:
                    self._append(block.call, fragment, self._max_tool_input, "tool_input")
            elif block.server is not None:
                self._server_input(block.server, fragment)
        elif kind == "thinking_delta":
            fragment = delta.get("thinking")
            if fragment.__class__ is not str:
                self._protocol("envelope")
            elif fragment:
                assert block.text is not None
                self._text(block.text, fragment)
        elif kind == "signature_delta":
            signature = delta.get("signature")
            if self._sign(block.signature, signature):
                block.signature = signature  # type: ignore[assignment]
        elif kind == "citations_delta":
            self._cite(block.citations, delta.get("citation"))
        elif self._retain():  # compaction_delta
            block.updates["content"] = delta.get("content")
            block.updates["encrypted_content"] = delta.get("encrypted_content")

    def _server_input(self, server: Fragments, fragment: str) -> None:
        """Server tool input: same ceilings as a client call, no updates."""
        if self._held_input(server, len(fragment)):
            server.parts.append(fragment)

    def _block_stop(self, obj: dict[str, Any]) -> None:
        block = self._block(obj)
        if block is not None:
            self._close(block)

    def _close(self, block: _Block) -> None:
        """``content_block_stop`` for the open ``block``."""
        block.closed = True
        call = block.call
        if call is not None:
            if block.preset is not None and not call.parts:
                # (an object: its input text becomes its JSON, as a whole Gemini or Responses call's does)
                if block.preset.__class__ is dict:
                    self._close_call_object(call, block.preset)
                else:
                    self._close_call_value(call, block.preset)
            else:
                self._close_call(call)
        elif block.server is not None:
            server = block.server
            if block.preset is not None and not server.parts:
                value = block.preset
            else:
                value, _ = parse_tool_input(server.joined())
            if not isinstance(value, dict):
                self._fail(Outcome.PAYLOAD_ERROR, "tool_json" if value is None else "tool_not_object")
            else:
                stage = value_problem(value)
                if stage is not None:
                    self._fail(Outcome.PAYLOAD_ERROR, stage)
                elif self._hold(server.size):  # the parsed input, held beside its text
                    block.value = value

    # -- results -------------------------------------------------------------------------

    def _text_buffers(self) -> Iterable[TextBuffer]:
        return (b.text for b in self._blocks.values() if b.text is not None)

    def open_count(self) -> int:
        return sum(1 for b in self._blocks.values() if not b.closed)

    def choice_results(self, ready: bool) -> tuple[ChoiceResult, ...]:
        # One pass over the blocks in index order: each block's native form, and the text, reasoning, items and
        # citations read from the blocks in that order.
        texts: list[str] = []
        thoughts: list[str] = []
        content: list[dict[str, Any]] = []
        items: list[JSON] = []
        citations: list[JSON] = []
        for b in sorted(self._blocks.values(), key=_BY_INDEX):
            block = b.native()
            content.append(block)
            role = b.role
            if role == "text":
                texts.append(block["text"])
            elif role == "thinking":
                thoughts.append(block["thinking"])
            elif role in _ITEM_ROLES:
                items.append(block)
            if b.citations:
                citations += b.citations
        message = {"role": "assistant", "content": content} if self._started else None
        calls = self._calls_in(self.calls, ready)
        return (new_choice(0, "".join(texts), "", "".join(thoughts), self.stop_reason, calls, (*items, *self._kept),
                           tuple(citations), None, message),)
