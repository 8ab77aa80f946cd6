"""Anthropic Messages (``POST /v1/messages``, ``stream: true``).

Wire facts (``route-contracts.md`` §3):

* ``message_start`` -> per block ``content_block_start`` / ``content_block_delta``* /
  ``content_block_stop`` -> ``message_delta``+ -> ``message_stop``; ``ping`` anywhere (ignored);
  unknown event types are tolerated (ignored), as the docs ask.
* dispatch is on ``data.type``; the SSE ``event:`` name, when present, must agree
  (``protocol_error`` ``event_name``). An ``event: error`` / ``{"type": "error"}`` is
  ``upstream_error`` keeping only ``error.type``.
* blocks are keyed by ``index`` in a dict: a duplicate start, a delta or stop for an unknown or
  closed index, or a delta of the wrong kind for the block is ``protocol_error``. A second
  ``message_start`` (duplicated or spliced into a block) is ``protocol_error`` ``duplicate_start``.
* ``text_delta`` -> text; ``thinking_delta`` -> reasoning (never mixed into text);
  ``signature_delta`` replaces the block's signature; ``citations_delta`` and beta deltas are
  accepted and not accumulated.
* ``tool_use`` blocks are client tool calls: ``input_json_delta.partial_json`` fragments are
  joined per block and parsed only at ``content_block_stop`` (an empty input is ``{}``).
  ``server_tool_use`` / ``mcp_tool_use`` run on Anthropic's side: their input is accumulated under
  the same ceiling and must parse to an object, but they are not the caller's tool calls.
* terminal: ``message_stop``, with the stop reason of the last ``message_delta``. A block still
  open then is ``truncated`` when the stop reason is not accepted (``max_tokens`` cut a tool
  input mid-way) and ``protocol_error`` ``open_block`` otherwise.
"""

from __future__ import annotations

from typing import Any

from .._outcome import Outcome
from .._toolcalls import Fragments, ToolCallBuffer, parse_tool_input
from .._updates import ChoiceResult
from ._base import COMMON_NON_ACCEPTED, RouteAccumulator, RouteContract, TextBuffer

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
    terminal_condition="message_stop, with the stop reason from the last message_delta",
    non_accepted_stop_reasons=COMMON_NON_ACCEPTED,
    dispatch_key="type",
    before_start=frozenset({"message_start", "ping", "error"}),
    choices_key=None,
    cross_check_event_name=True,
    done_sentinel="ignored",  # a stray sentinel (vercel harness artefact)
)

_SERVER_TOOL_BLOCKS = frozenset({"server_tool_use", "mcp_tool_use"})


class _Block:
    """One content block."""

    __slots__ = ("call", "closed", "index", "preset", "server", "text", "type")

    def __init__(self, index: int, block_type: str) -> None:
        self.index = index
        self.type = block_type
        self.closed = False
        #: Text or thinking accumulation (text / thinking blocks).
        self.text: TextBuffer | None = None
        #: Client tool call (tool_use blocks).
        self.call: ToolCallBuffer | None = None
        #: Server-side tool input (server_tool_use / mcp_tool_use blocks).
        self.server: Fragments | None = None
        #: A non-empty ``input`` object sent whole in content_block_start.
        self.preset: dict[str, Any] | None = None


class AnthropicMessagesAccumulator(RouteAccumulator):
    """Accumulates Messages stream events; see the module docstring for the rules."""

    contract = CONTRACT

    __slots__ = ("_blocks",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._blocks: dict[int, _Block] = {}
        #: ``data.type`` -> handler. Types not listed are tolerated and ignored.
        self._handlers = {
            "content_block_delta": self._block_delta,
            "content_block_start": self._block_start,
            "content_block_stop": self._block_stop,
            "message_start": self._message_start,
            "message_delta": self._message_delta,
            "message_stop": self._message_stop,
            "ping": self.keepalive,
            "error": self._error,
        }

    # -- message level -------------------------------------------------------------------

    def _message_start(self, obj: dict[str, Any]) -> None:
        if not self._start():
            return
        message = obj.get("message")
        if message.__class__ is not dict:
            self._protocol("envelope")
            return
        usage = message.get("usage")
        if usage.__class__ is dict:
            self.usage = dict(usage)

    def _message_delta(self, obj: dict[str, Any]) -> None:
        delta = obj.get("delta")
        if delta.__class__ is not dict:
            self._protocol("envelope")
            return
        reason = delta.get("stop_reason")
        if reason is not None:
            if reason.__class__ is not str:
                self._protocol("envelope")
                return
            self.stop_reason = reason
        usage = obj.get("usage")
        if usage.__class__ is dict:
            # message_delta usage is cumulative: it overwrites the message_start values.
            if self.usage is None:
                self.usage = {}
            self.usage.update(usage)

    def _message_stop(self, obj: dict[str, Any]) -> None:
        stop = self.stop_reason
        open_blocks = sum(1 for b in self._blocks.values() if not b.closed)
        self._terminal(stop, stop is not None and self._accepts(stop), open_blocks)

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
        if not self._check_blocks(len(self._blocks)):
            return
        block = self._blocks[index] = _Block(index, block_type)
        if block_type == "text" or block_type == "thinking":
            block.text = TextBuffer("text" if block_type == "text" else "reasoning", index)
            self._optional_text(block.text, cb.get(block_type))  # text sent whole in the start
        elif block_type == "tool_use":
            call_id, name = cb.get("id"), cb.get("name")
            block.call = self._new_call(call_id if call_id.__class__ is str else None,
                                        name if name.__class__ is str else None)
            preset = cb.get("input")
            if preset and preset.__class__ is dict:
                block.preset = preset
        elif block_type in _SERVER_TOOL_BLOCKS:
            block.server = Fragments()

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
            if block.type != "text" or buf is None:
                self._protocol("delta_type")
            elif fragment.__class__ is not str:
                self._protocol("envelope")
            elif fragment:
                self._text(buf, fragment)
        elif kind == "input_json_delta":
            fragment = delta.get("partial_json")
            if fragment.__class__ is not str:
                self._protocol("envelope")
            elif block.call is not None:
                if fragment:
                    self._tool_input(block.call, fragment)
            elif block.server is not None:
                self._server_input(block.server, fragment)
            else:
                self._protocol("delta_type")
        elif kind == "thinking_delta":
            self._text_like(block, "thinking", delta.get("thinking"))
        elif kind == "signature_delta" and block.type != "thinking":
            self._protocol("delta_type")
        # signature_delta (it replaces a signature we do not keep), citations_delta,
        # compaction_delta and unknown delta types: accepted, not accumulated.

    def _text_like(self, block: _Block, block_type: str, fragment: object) -> None:
        if block.type != block_type or block.text is None:
            self._protocol("delta_type")
            return
        if fragment.__class__ is not str:
            self._protocol("envelope")
            return
        if fragment:
            self._text(block.text, fragment)

    def _server_input(self, server: Fragments, fragment: str) -> None:
        """Server tool input: same per-block ceiling as a client call, no updates."""
        size = server.size + len(fragment)
        if size > self._max_tool_input:
            self._fail(Outcome.BUFFER_LIMIT, "tool_input")
            return
        server.size = size
        server.parts.append(fragment)

    def _block_stop(self, obj: dict[str, Any]) -> None:
        block = self._block(obj)
        if block is None:
            return
        block.closed = True
        call = block.call
        if call is not None:
            if block.preset is not None and not call.parts:
                self._close_call_value(call, block.preset)
            else:
                self._close_call(call)
        elif block.server is not None:
            value, _ = parse_tool_input(block.server.joined())
            if not isinstance(value, dict):
                self._fail(Outcome.PAYLOAD_ERROR, "tool_json" if value is None else "tool_not_object")

    # -- results -------------------------------------------------------------------------

    def open_count(self) -> int:
        return sum(1 for b in self._blocks.values() if not b.closed)

    def choice_results(self, ready: bool) -> tuple[ChoiceResult, ...]:
        ordered = sorted(self._blocks.values(), key=lambda b: b.index)
        text = "".join(b.text.joined() for b in ordered if b.type == "text" and b.text is not None)
        reasoning = "".join(b.text.joined() for b in ordered if b.type == "thinking" and b.text is not None)
        return (ChoiceResult(0, text, "", reasoning, self.stop_reason, self._calls_in(self.calls, ready)),)
