"""What every route shares: the contract record, text buffers, and the accumulator base class.

A route is two things:

* a :class:`RouteContract`, plain data naming the route's event vocabulary, accumulator key,
  close and terminal conditions, and the stop reasons that do *not* count as success. The
  accumulator's dispatch table is checked against it by the tests, so the data cannot drift
  from the code;
* a :class:`RouteAccumulator` subclass: ``handle(SSEEvent)`` per complete event. It appends
  fragments to :class:`TextBuffer` / :class:`~webclient._toolcalls.ToolCallBuffer` lists (joined
  once, at the end), records the first failure in stream order, and emits updates.

Stage vocabulary for the failures a route records (``Failure.stage``)::

    protocol_error  envelope        data is not a JSON object of the expected shape
                    event_name      the SSE ``event:`` name disagrees with ``data.type``
                    order           an event before the route's start event
                    duplicate_start a second start event (duplicate or spliced generation)
                    duplicate_block a block/item index opened twice
                    unknown_block   a delta/stop for an index that was never opened
                    closed_block    a delta/stop for an index that is already closed
                    delta_type      a delta of a kind the block cannot take
                    open_block      the terminal event arrived with a block still open
                    after_terminal  an event after the terminal condition
    truncated       missing_stop    the terminal condition carried no stop reason
                    stop_reason     the stop reason is not accepted (limit or filter stops)
    payload_error   tool_unknown, tool_json, tool_not_object, tool_schema (see _toolcalls),
                    tool_arguments_mismatch (Responses ``.done`` disagreeing with the deltas)
    buffer_limit    text, tool_input, tool_calls, blocks
    upstream_error  error_event     an ``error`` event (SSE name or ``data.type``)
                    error_object    a chunk carrying an ``error`` object
                    response_failed Responses ``response.failed``
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .._events import SSEEvent
from .._json import loads
from .._limits import Limits
from .._outcome import Failure, Outcome
from .._telemetry import sanitize_code
from .._toolcalls import ToolCallBuffer, ToolCallState, ToolRegistry
from .._updates import ChoiceResult, ProviderError, TextDelta, ToolCallUpdate, ToolInputDelta, Update

#: Stop reasons that end a response short by default, on every route (the issue's list).
COMMON_NON_ACCEPTED = frozenset(
    {"length", "max_tokens", "max_output_tokens", "MAX_TOKENS", "model_context_window_exceeded", "content_filter"}
)


@dataclass(frozen=True, slots=True)
class RouteContract:
    """A route's wire contract, as data. Every string names wire vocabulary, not code."""

    #: The route name used by the session and the CLI.
    name: str
    #: The HTTP endpoint the stream comes from.
    endpoint: str
    #: The status the response gate requires.
    success_status: int
    #: Event (``data.type`` / SSE name) carrying the start of the response, if the route has one.
    start_event: str | None
    #: Event types/fields carrying text deltas.
    text_delta: tuple[str, ...]
    #: Event types/fields carrying tool-input deltas.
    tool_input_delta: tuple[str, ...]
    #: Event types/fields opening a block (choice, content block, output item, call).
    block_open: tuple[str, ...]
    #: Event types/fields closing a block.
    block_close: tuple[str, ...]
    #: The terminal condition's event(s).
    terminal: tuple[str, ...]
    #: Error forms inside the stream.
    error: tuple[str, ...]
    #: Where usage arrives.
    usage: tuple[str, ...]
    #: Keep-alives that are ignored.
    keep_alive: tuple[str, ...]
    #: What keys the accumulators.
    accumulator_key: str
    #: When a block (and its tool input) counts as closed.
    close_condition: str
    #: When the response counts as finished.
    terminal_condition: str
    #: Stop reasons that are *not* success unless the caller overrides the accepted set.
    non_accepted_stop_reasons: frozenset[str]
    #: Whether the SSE ``event:`` name (when present) must equal ``data.type``.
    cross_check_event_name: bool
    #: How ``data: [DONE]`` is treated: ``"terminal"`` (Chat) or ``"ignored"`` (a stray sentinel).
    done_sentinel: str


class TextBuffer:
    """Accumulated text of one channel of one choice/block/item: fragments joined once."""

    __slots__ = ("channel", "index", "parts", "size")

    def __init__(self, channel: str, index: int) -> None:
        self.channel = channel
        self.index = index
        self.parts: list[str] = []
        self.size = 0

    def text(self) -> str:
        """The text so far (joined, and cached as a single fragment)."""
        parts = self.parts
        if len(parts) > 1:
            joined = "".join(parts)
            parts[:] = [joined]
            return joined
        return parts[0] if parts else ""


class RouteAccumulator:
    """Base of the four route accumulators; the session calls :meth:`handle` per event.

    After each ``handle`` the session reads :attr:`failure`; once it is set the accumulator is
    never called again. Updates are appended to :attr:`out`; consecutive deltas for the same
    buffer are merged until something else is emitted or :meth:`flush` is called.
    """

    contract: ClassVar[RouteContract]

    __slots__ = (
        "_accepted",
        "_max_blocks",
        "_max_calls",
        "_max_text",
        "_max_tool_input",
        "_registry",
        "_run",
        "_run_start",
        "calls",
        "failure",
        "out",
        "provider_error",
        "stop_reason",
        "terminal_seen",
        "usage",
    )

    def __init__(self, limits: Limits, registry: ToolRegistry, accepted: frozenset[str] | None) -> None:
        #: The first failure in stream order, else ``None``.
        self.failure: Failure | None = None
        #: Updates produced since the session last took them.
        self.out: list[Update] = []
        #: Whether the terminal condition arrived.
        self.terminal_seen = False
        #: The (raw) stop reason the terminal condition carried.
        self.stop_reason: str | None = None
        #: The last usage object the provider sent.
        self.usage: dict[str, Any] | None = None
        #: The sanitized in-stream provider error, if any.
        self.provider_error: ProviderError | None = None
        #: Client tool calls in order of appearance.
        self.calls: list[ToolCallBuffer] = []
        self._registry = registry
        self._accepted = accepted
        self._max_text = limits.max_text_chars
        self._max_tool_input = limits.max_tool_input_chars
        self._max_calls = limits.max_tool_calls
        self._max_blocks = limits.max_blocks
        # The buffer whose consecutive fragments are being merged into one delta update.
        self._run: TextBuffer | ToolCallBuffer | None = None
        self._run_start = 0

    # -- the route interface -----------------------------------------------------------------

    def handle(self, event: SSEEvent) -> None:
        """Consume one complete SSE event."""
        raise NotImplementedError

    def open_count(self) -> int:
        """Choices/blocks/items/calls still open (telemetry)."""
        raise NotImplementedError

    def choice_results(self, ready: bool) -> tuple[ChoiceResult, ...]:
        """Per-choice view; element 0 is the message the result's ``text`` comes from."""
        raise NotImplementedError

    # -- failures ------------------------------------------------------------------------------

    def _fail(self, outcome: Outcome, stage: str) -> None:
        if self.failure is None:
            self.failure = Failure(outcome, stage)

    def _protocol(self, stage: str) -> None:
        self._fail(Outcome.PROTOCOL_ERROR, stage)

    def _upstream(self, stage: str, error: object) -> None:
        """Record an in-stream provider error, keeping only its sanitized type and code."""
        err_type = code = None
        if isinstance(error, dict):
            err_type = sanitize_code(error.get("type") or error.get("status"))
            code = sanitize_code(error.get("code"))
        self.provider_error = ProviderError(err_type, code)
        self._fail(Outcome.UPSTREAM_ERROR, stage)

    def _error_event(self, data: str) -> None:
        """An SSE ``event: error`` (or ``data.type == "error"``): ``upstream_error``."""
        try:
            obj = loads(data)
        except ValueError:
            obj = None
        self._upstream("error_event", error_fields(obj))

    def _accepts(self, reason: str, default: bool | None = None) -> bool:
        """Whether ``reason`` counts as success: the caller's set when given, else ``default``
        when the route decides, else "not in the contract's non-accepted set"."""
        if self._accepted is not None:
            return reason in self._accepted
        if default is not None:
            return default
        return reason not in self.contract.non_accepted_stop_reasons

    def _terminal(self, stop_reason: str | None, accepted: bool, open_blocks: int) -> None:
        """The terminal condition arrived: decide truncated / protocol_error / (complete later)."""
        self.terminal_seen = True
        self.stop_reason = stop_reason
        if stop_reason is None:
            self._fail(Outcome.TRUNCATED, "missing_stop")
        elif not accepted:
            self._fail(Outcome.TRUNCATED, "stop_reason")
        elif open_blocks:
            self._protocol("open_block")

    def _check_blocks(self, count: int) -> bool:
        if count >= self._max_blocks:
            self._fail(Outcome.BUFFER_LIMIT, "blocks")
            return False
        return True

    # -- updates ---------------------------------------------------------------------------

    def flush(self) -> None:
        """Emit the pending merged delta, if any."""
        run = self._run
        if run is None:
            return
        self._run = None
        frags = run.parts[self._run_start :]
        text = frags[0] if len(frags) == 1 else "".join(frags)
        if isinstance(run, TextBuffer):
            self.out.append(TextDelta(run.channel, run.index, text))
        else:
            self.out.append(ToolInputDelta(run.call, run.id, run.name, text))

    def _emit(self, update: Update) -> None:
        if self._run is not None:
            self.flush()
        self.out.append(update)

    def _text(self, buf: TextBuffer, fragment: str) -> bool:
        """Append a text fragment (ceiling ``text``). Returns False on failure."""
        size = buf.size + len(fragment)
        if size > self._max_text:
            self._fail(Outcome.BUFFER_LIMIT, "text")
            return False
        buf.size = size
        if buf is not self._run:
            if self._run is not None:
                self.flush()
            self._run = buf
            self._run_start = len(buf.parts)
        buf.parts.append(fragment)
        return True

    # -- tool calls ------------------------------------------------------------------------

    def _new_call(self, call_id: str | None, name: str | None) -> ToolCallBuffer | None:
        """Open a client tool call (ceiling ``tool_calls``) and announce it as streaming."""
        calls = self.calls
        if len(calls) >= self._max_calls:
            self._fail(Outcome.BUFFER_LIMIT, "tool_calls")
            return None
        call = ToolCallBuffer(len(calls), call_id, name)
        calls.append(call)
        self._emit(ToolCallUpdate(call.call, call_id, name, ToolCallState.STREAMING.value, None, False))
        return call

    def _tool_input(self, call: ToolCallBuffer, fragment: str) -> bool:
        """Append a raw input fragment (ceiling ``tool_input``). Returns False on failure."""
        size = call.size + len(fragment)
        if size > self._max_tool_input:
            self._fail(Outcome.BUFFER_LIMIT, "tool_input")
            return False
        call.size = size
        if call is not self._run:
            if self._run is not None:
                self.flush()
            self._run = call
            self._run_start = len(call.parts)
        call.parts.append(fragment)
        return True

    def _close_call(self, call: ToolCallBuffer, validate: bool = True) -> bool:
        """STREAMING -> CLOSED, then (if ``validate``) parse and validate. False on failure."""
        if self._run is call:
            self.flush()
        call.move(ToolCallState.CLOSED)
        self._emit(ToolCallUpdate(call.call, call.id, call.name, ToolCallState.CLOSED.value, None, False))
        if not validate:
            return True
        return self._settle(call, *self._registry.check(call.name, call.input_text()))

    def _close_call_value(self, call: ToolCallBuffer, value: object) -> bool:
        """Close a call whose input arrived already parsed (Gemini) and validate it."""
        call.move(ToolCallState.CLOSED)
        self._emit(ToolCallUpdate(call.call, call.id, call.name, ToolCallState.CLOSED.value, None, False))
        return self._settle(call, *self._registry.check_value(call.name, value))

    def _settle(self, call: ToolCallBuffer, arguments: dict[str, Any] | None, stage: str | None,
                problems: tuple[str, ...]) -> bool:
        call.settle(arguments, stage, problems)
        self._emit(ToolCallUpdate(call.call, call.id, call.name, call.state.value, arguments, False))
        if stage is not None:
            self._fail(Outcome.PAYLOAD_ERROR, stage)
            return False
        return True

    def _calls_in(self, calls: list[ToolCallBuffer], ready: bool) -> tuple[Any, ...]:
        return tuple(call.snapshot(ready) for call in calls)


def error_fields(obj: object) -> object:
    """The part of an error payload holding ``type``/``code``: the nested ``error`` object
    (Anthropic, Groq, live Responses) or the payload itself (flat Responses ``error`` event)."""
    if isinstance(obj, dict):
        nested = obj.get("error")
        if isinstance(nested, dict):
            return nested
        return {"code": obj.get("code")}
    return None


def choice(index: int, text: TextBuffer | None, refusal: TextBuffer | None, reasoning: TextBuffer | None,
           stop_reason: str | None, calls: tuple[Any, ...]) -> ChoiceResult:
    """Build a :class:`ChoiceResult` from buffers (missing buffers read as empty)."""
    return ChoiceResult(
        index,
        text.text() if text is not None else "",
        refusal.text() if refusal is not None else "",
        reasoning.text() if reasoning is not None else "",
        stop_reason,
        calls,
    )
