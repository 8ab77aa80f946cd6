"""What every route shares: the contract record, text buffers, and the accumulator base class.

A route is two things:

* a :class:`RouteContract`, plain data naming the route's event vocabulary, accumulator key,
  close and terminal conditions, its **stop reasons by category** (an allow-list: success,
  length, filter, failure; a value in no category fails closed) and its **content types** (the
  item / block / part types it knows, and what each is). The accumulator's dispatch tables are
  read from or checked against it by the tests, so the data cannot drift from the code;
* a :class:`RouteAccumulator` subclass. The base's ``handle(EventTuple)`` runs the envelope step
  every route shares (below), where the contract's data decides the per-route differences, and
  hands the decoded object to the route: to a handler from its dispatch table (typed routes:
  Responses, Anthropic), or choice by choice to its ``_choice`` and then to its ``_chunk``
  (data-only routes: Chat, Gemini). The route appends fragments to :class:`TextBuffer` /
  :class:`~webclient._toolcalls.ToolCallBuffer` lists (joined once, at the end), records the
  first failure in stream order, and emits updates.

The envelope step, per complete SSE event, in this order (the first that applies decides)::

    data: [DONE]                 contract.done_sentinel "terminal": the route's _done() (after the
                                 terminal condition: after_terminal); "ignored": nothing at all
    any event after terminal     protocol_error after_terminal
    event: error                 upstream_error error_event (the data's error type/code only)
    data not a JSON object       protocol_error envelope
    typed routes                 (contract.dispatch_key, e.g. "type") the key's value must be a
                                 string (envelope) and, with contract.cross_check_event_name, equal
                                 the SSE event name when there is one (event_name); with
                                 contract.resume, the event's sequence number is checked (the
                                 Sequencer of webclient._resume: taken, dropped as a resumed
                                 stream's repeat, or sequence_*); a value with no
                                 handler is tolerated; before the start event only
                                 contract.before_start is allowed (order); then the handler
    data-only routes             (dispatch_key None) a truthy "error" object is upstream_error
                                 error_object; otherwise each element of the contract.choices_key
                                 list (a non-list, or an element that is not an object, is
                                 envelope) is looked up by its "index" (default 0; a new index
                                 must be an int, else envelope, and opens a ChoiceState under the
                                 blocks ceiling) and goes to the route's _choice(state, element);
                                 then the rest of the chunk goes to its _chunk(obj, choices)

Stage vocabulary for the failures a route records (``Failure.stage``)::

    protocol_error  envelope        data is not a JSON object of the expected shape
                    unknown_type    an item / block / part / delta type the route does not know
                                    (unless the caller keeps unknown items verbatim)
                    unrecognized_stop  a stop reason in none of the contract's categories
                    item_mismatch   a closed item disagrees with what its deltas built or with the
                                    added item (its type or id), a call's later fragment or closed
                                    item names another tool or call id, or the terminal response's
                                    output disagrees with the streamed items
                    event_name      the SSE ``event:`` name disagrees with ``data.type``
                    order           an event before the route's start event
                    duplicate_start a second start event (duplicate or spliced generation)
                    duplicate_block a block/item index opened twice
                    unknown_block   a delta/stop for an index that was never opened
                    closed_block    a delta/stop for an index that is already closed
                    delta_type      a delta of a kind the block cannot take
                    open_block      the terminal event arrived with a block still open
                    after_terminal  an event after the terminal condition
                    sequence_gap    a sequence number skipped (contract.resume routes)
                    sequence_order  a sequence number repeated or going back (outside a resumed
                                    stream's overlap)
                    sequence_missing  a resumed stream's event without a sequence number
    truncated       missing_stop    the terminal condition carried no stop reason
                    incomplete_item a Responses item closed with a status saying it was cut, then
                                    ``response.completed``
                    stop_reason     the stop reason is not accepted (length or filter stops, or a
                                    success stop outside the caller's accepted_stop_reasons)
    payload_error   tool_unknown, tool_json, tool_not_object, tool_schema (see _toolcalls),
                    tool_arguments_mismatch (Responses ``.done`` disagreeing with the deltas)
                    non_finite_number  a tool input, call action or server-tool input holds a
                                    number that is not finite (``1e999``, ``NaN``; _values)
                    unpaired_surrogate a text channel (checked once, at the terminal condition) or
                                    a tool input holds a surrogate with no partner after joining
                                    (a pair split across two deltas is combined; _values)
    buffer_limit    text, tool_input, tool_calls, blocks, items, signatures, citations (one
                    structure past its ceiling); retained (everything the accumulation keeps,
                    together, past ``Limits.max_retained_chars``)
    upstream_error  error_event     an ``error`` event (SSE name or ``data.type``)
                    error_stop      a stop reason of the contract's failure category
                    error_object    a chunk carrying an ``error`` object
                    response_failed Responses ``response.failed``

Stop reasons (``RouteContract.stop_reasons``, decided by :meth:`RouteAccumulator._stop_failure`)::

    success   -> complete (when everything else holds)
    length    -> truncated    stop_reason
    filter    -> truncated    stop_reason
    failure   -> upstream_error error_stop
    (none)    -> protocol_error unrecognized_stop; telemetry records "unrecognized"

``accepted_stop_reasons=`` replaces the success category: a reason in the caller's set commits
whatever its category; a success reason outside it is ``truncated`` ``stop_reason``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from operator import attrgetter
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

from .._events import EventTuple
from .._json import envelope_scan, holds_non_finite, loads, more_openers_than, too_deep
from .._limits import BLOCK_CHARS, ENTRY_CHARS, MAX_JSON_DEPTH, MEASURE_ABOVE_CHARS, Limits
from .._outcome import Failure, Outcome
from .._resume import ResumeContract, Sequencer
from .._telemetry import sanitize_code, sanitize_token, stop_reason_token
from .._toolcalls import Fragments, ToolCallBuffer, ToolCallState, ToolRegistry
from .._updates import (
    JSON,
    ChoiceResult,
    ProviderError,
    ToolCall,
    Update,
    new_call_update,
    new_choice,
    new_input_delta,
    new_text_delta,
)
from .._values import (
    UNPAIRED_SURROGATE,
    clean_text,
    combine_surrogates,
    has_surrogate,
    held_back,
    may_hold_surrogate,
    parsed_value_encoder,
    shown_text,
    surrogate_search,
)

_loads = loads
#: The scanner ``json.loads`` runs (``scan_once(text, 0) -> (value, end)``), for the envelope step; it refuses
#: ``NaN`` / ``Infinity`` (at no cost to other texts) and a number that overflows to ``inf`` (about 0.1 us per
#: number with a fraction or an exponent), which sends such an event to :data:`_loads`, the reference path,
#: where the event is read as ``json.loads`` reads it and sets ``kept_odd``.
_scan: Callable[[str, int], tuple[Any, int]] = envelope_scan

#: A typed route's handler, a method of the route's class taken from the class (called as
#: ``handler(accumulator, data)``): takes the decoded ``data`` object (its return value is unused).
Handler = Callable[[Any, dict[str, Any]], object]
_Owner = TypeVar("_Owner")

#: ``json.dumps(value, ensure_ascii=False)`` for a parsed value (usage, call input), without an encoder per call.
_dumps_text = parsed_value_encoder(allow_nan=True)
#: The update spellings of two call states (``ToolCallState.X.value``, read once).
_STREAMING = ToolCallState.STREAMING.value
_CLOSED = ToolCallState.CLOSED.value
_BY_INDEX = attrgetter("index")


class StopCategory(enum.Enum):
    """What a stop reason means for the outcome (see the module docstring)."""

    #: The answer is finished: commits when everything else holds.
    SUCCESS = "success"
    #: Cut by a token / context limit: ``truncated``.
    LENGTH = "length"
    #: Withheld or cut by a safety / content filter: ``truncated``.
    FILTER = "filter"
    #: The provider failed to produce the answer: ``upstream_error``.
    FAILURE = "failure"


def stop_table(*, success: Iterable[str], length: Iterable[str] = (), filter: Iterable[str] = (),
               failure: Iterable[str] = ()) -> Mapping[str, StopCategory]:
    """A read-only ``reason -> category`` table; a reason listed twice is a contract bug."""
    table: dict[str, StopCategory] = {}
    for category, reasons in ((StopCategory.SUCCESS, success), (StopCategory.LENGTH, length),
                              (StopCategory.FILTER, filter), (StopCategory.FAILURE, failure)):
        for reason in reasons:
            if reason in table:
                raise AssertionError(f"stop reason {reason} listed twice")
            table[reason] = category
    return MappingProxyType(table)


#: category -> the failure it means (``None``: success). A reason in no category is the last row.
_STOP_VERDICTS: dict[StopCategory | None, Failure | None] = {
    StopCategory.SUCCESS: None,
    StopCategory.LENGTH: Failure(Outcome.TRUNCATED, "stop_reason"),
    StopCategory.FILTER: Failure(Outcome.TRUNCATED, "stop_reason"),
    StopCategory.FAILURE: Failure(Outcome.UPSTREAM_ERROR, "error_stop"),
    None: Failure(Outcome.PROTOCOL_ERROR, "unrecognized_stop"),
}
_REFUSED_BY_CALLER = Failure(Outcome.TRUNCATED, "stop_reason")


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
    #: Every documented stop reason -> its category (:func:`stop_table`); the sources are cited
    #: where each route builds its table. A reason in no category fails closed.
    stop_reasons: Mapping[str, StopCategory]
    #: Every item / block / part type the route knows -> what it is (route-specific roles such as
    #: ``"text"``, ``"call:function"``, ``"hosted"``). A type not listed fails closed unless the
    #: caller keeps unknown items.
    content_types: Mapping[str, str]
    #: The ``data`` key naming the event type, whose value picks the handler (typed routes:
    #: ``"type"``), or ``None`` when every event is one whole chunk (data-only routes).
    dispatch_key: str | None
    #: Typed routes: the event types allowed before ``start_event`` (anything else there is
    #: ``protocol_error`` ``order``). Empty for data-only routes.
    before_start: frozenset[str]
    #: Data-only routes: the chunk key holding the list of choices/candidates. ``None`` for
    #: typed routes.
    choices_key: str | None
    #: Whether the SSE ``event:`` name (when present) must equal ``data.type``.
    cross_check_event_name: bool
    #: How ``data: [DONE]`` is treated: ``"terminal"`` (Chat) or ``"ignored"`` (a stray sentinel).
    done_sentinel: str
    #: Typed routes whose events are numbered: the sequence key, the event carrying the response id and
    #: the resume request (``webclient._resume``). ``None``: no sequence check, no route resume.
    resume: ResumeContract | None = None

    @property
    def non_accepted_stop_reasons(self) -> frozenset[str]:
        """The documented stop reasons that do not commit by default (length, filter, failure)."""
        return frozenset(r for r, c in self.stop_reasons.items() if c is not StopCategory.SUCCESS)


class TextBuffer(Fragments):
    """Accumulated text of one channel of one choice/block/item: fragments joined once
    (:meth:`~webclient._toolcalls.Fragments.joined`)."""

    __slots__ = ("channel", "index")

    def __init__(self, channel: str, index: int) -> None:
        self.parts: list[str] = []  # Fragments.__init__, inline: three per choice
        self.size = 0
        self.channel = channel
        self.index = index


class ChoiceState:
    """One choice (Chat) or candidate (Gemini) of a data-only route, keyed by its ``index``.
    Routes subclass it for their own call-tracking fields."""

    __slots__ = ("calls", "citations", "finish_reason", "index", "reasoning", "refusal", "text")

    def __init__(self, index: int) -> None:
        self.index = index
        self.text = TextBuffer("text", index)
        #: Stays empty on routes without a refusal channel (Gemini).
        self.refusal = TextBuffer("refusal", index)
        self.reasoning = TextBuffer("reasoning", index)
        #: The choice's stop reason once it finished (Chat ``finish_reason``, Gemini ``finishReason``).
        self.finish_reason: str | None = None
        #: The choice's client tool calls, in order of appearance.
        self.calls: list[ToolCallBuffer] = []
        #: Citations / annotations, verbatim (ceiling ``citations``).
        self.citations: list[JSON] = []


class RouteAccumulator:
    """Base of the four route accumulators; the session calls :meth:`handle` per event.

    After each ``handle`` the session reads :attr:`failure`; once it is set the accumulator is
    never called again. Updates are appended to :attr:`out`; consecutive deltas for the same
    buffer are merged until something else is emitted or :meth:`flush` is called.

    A subclass sets :attr:`contract`. Typed routes set :attr:`handler_names` and implement
    :meth:`open_count` and :meth:`choice_results`; data-only routes set :attr:`choice_state` and
    implement :meth:`_choice`, :meth:`_chunk` and :meth:`_choice_extras`; a route whose ``[DONE]``
    is terminal implements :meth:`_done`.

    Options: ``keep_unknown`` keeps item / block / part / delta types the route does not know
    verbatim in the result's ``items`` (and, where the route can place them, in the assistant
    message) instead of failing ``protocol_error`` ``unknown_type``; ``reasoning_content`` (Chat)
    adds ``reasoning_content`` to the assistant message for servers that require it back.

    Retained size. One account (``Limits.max_retained_chars``, stage ``retained``) holds what the
    accumulation keeps, charged in O(1) where it grows, so the trip happens at the same event for
    every chunking (and a resumed session, sharing the accumulator, continues the count):

    * text and tool-input fragments (every kind, server tools included): their length
      (:meth:`_text`, :meth:`_tool_input`, :meth:`_held_input`); a closed call's parsed arguments
      once more, its input's length (:meth:`_settle`);
    * per-index entries: :data:`~webclient._limits.BLOCK_CHARS` for each choice, block and item
      (:meth:`_check_blocks`); :data:`~webclient._limits.ENTRY_CHARS` for each call
      (:meth:`_new_call`, plus its id and name), call-index alias, streamed-argument path (plus its
      length) and message part;
    * provider objects kept verbatim (items, citations, logprobs, unknown types, compaction
      fields): the event's data length, once per event (:meth:`_retain`);
    * replaceable values (usage, the stop reason, a choice's finish reason, signatures): their
      current charge replaces the previous one (:meth:`_hold_as`, :meth:`_finish`, :meth:`_sign`);
      an object from an event is charged the event's length, or, above
      :data:`~webclient._limits.MEASURE_ABOVE_CHARS`, its own JSON length, measured once
      (:meth:`_charge_usage`); merged usage (Anthropic) is charged by key, each key's entry
      replacing its previous charge, so the charge is the merged object's JSON length
      (:meth:`_charge_merged_usage`);
    * the response id and model: their length, once.

    Structures without a ceiling of their own get one from the per-structure limits: call-index
    aliases count against ``max_tool_calls``, streamed-argument paths against their call's
    ``max_tool_input_chars``, a usage object against ``max_item_chars``.

    Values that must not commit (:mod:`webclient._values`): a tool input is checked at its close
    (``tool_*`` stages, ``non_finite_number``, ``unpaired_surrogate``); every text channel once, when
    the terminal condition commits (:meth:`_check_texts`): surrogate pairs split across deltas are
    combined, an unpaired surrogate is ``payload_error`` ``unpaired_surrogate``; a string taken whole
    (a call's name or id, the response id, the model, a signature) holding a surrogate is refused as it
    arrives (:meth:`_whole_string`); and an object kept verbatim from JSON that escapes a surrogate, or
    any event that holds ``NaN``, ``Infinity`` (which JSON has not) or a number that overflows to ``inf``
    (``1e999``; rare enough that whether the route keeps it is not asked), sets :attr:`kept_odd`, on which
    the session checks the result that would commit as a whole (``unpaired_surrogate``,
    ``non_finite_number``). The envelope's scanner finds the non-finite numbers as it parses (``NaN`` and
    ``Infinity`` at no cost, an overflow for about 0.1 us per number with a fraction or an exponent); a
    search of the kept events' text for a long exponent was measured to cost as much as replaying them.
    """

    contract: ClassVar[RouteContract]
    #: Typed routes: ``data[dispatch_key]`` -> the name of the method that handles it (``"ignore"``:
    #: nothing to accumulate). Types not listed are tolerated. Resolved once per class into
    #: :attr:`_handlers`, so a session's set-up builds no table.
    handler_names: ClassVar[Mapping[str, str]] = {}
    #: :attr:`handler_names` resolved: type -> the class's function (``handler(self, data)``).
    _handlers: ClassVar[dict[str, Handler]] = {}
    #: Data-only routes: the per-choice state class (a :class:`ChoiceState` subclass).
    choice_state: ClassVar[type[ChoiceState]] = ChoiceState
    #: Each of the contract's stop reasons -> its telemetry spelling (:func:`sanitize_token`, once per class).
    _stop_tokens: ClassVar[dict[str, str | None]] = {}

    __slots__ = (
        "_accepted",
        "_before_start",
        "_charged_seq",
        "_choices",
        "_choices_key",
        "_citation_count",
        "_cross_check",
        "_details",
        "_dispatch_key",
        "_done_ends",
        "_event_data",
        "_event_seq",
        "_halves",
        "_item_chars",
        "_keep_unknown",
        "_max_blocks",
        "_max_calls",
        "_max_citations",
        "_max_items",
        "_max_retained",
        "_max_signatures",
        "_max_text",
        "_max_tool_input",
        "_reasoning_content",
        "_registry",
        "_replaced",
        "_retained",
        "_run",
        "_run_start",
        "_signature_chars",
        "_started",
        "_usage_data",
        "_usage_entries",
        "calls",
        "failure",
        "keepalives",
        "kept_odd",
        "model",
        "out",
        "provider_error",
        "response_id",
        "sequencer",
        "stop_reason",
        "terminal_seen",
        "usage",
    )

    def __init__(self, limits: Limits, registry: ToolRegistry, accepted: frozenset[str] | None, *,
                 keep_unknown: bool = False, reasoning_content: bool = False) -> None:
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
        #: The provider's response id and model, the first non-empty ones it sent.
        self.response_id: str | None = None
        self.model: str | None = None
        #: Events of the contract's ``keep_alive`` types (Anthropic ``ping``): signs of life that
        #: carry no content, so transports re-arm the idle deadline but not the first-event one.
        self.keepalives = 0
        #: Whether an object this accumulation keeps verbatim (an item, a citation, merged usage ...) came
        #: from JSON that escapes a surrogate, or any event held ``NaN`` / ``Infinity`` / a number that overflows: with
        #: :meth:`kept_odd_values`, which also looks at the kept usage, what decides whether the session checks a
        #: result that would commit as a whole for an unpaired surrogate or a non-finite number
        #: (``StreamSession._end``). Texts and tool inputs are checked by the route itself, and strings taken
        #: whole (names, ids, signatures) as they arrive.
        self.kept_odd = False
        self._registry = registry
        self._accepted = accepted
        self._keep_unknown = keep_unknown
        self._reasoning_content = reasoning_content
        self._max_text = limits.max_text_chars
        self._max_tool_input = limits.max_tool_input_chars
        self._max_calls = limits.max_tool_calls
        self._max_blocks = limits.max_blocks
        self._max_items = limits.max_item_chars
        self._max_signatures = limits.max_signature_chars
        self._max_citations = limits.max_citations
        self._max_retained = limits.max_retained_chars
        # The retained-size account (stage ``retained``; see "Retained size" in the class docstring):
        # the running total, and what each replaceable value (usage, stop reason ...) is charged now.
        self._retained = 0
        self._replaced: dict[object, int] = {}
        # Merged usage (_charge_merged_usage): each key kept -> what its entry is charged now.
        self._usage_entries: dict[str, int] = {}
        # The data of the event the kept usage object came from (replacing usage: Chat, Responses, Gemini).
        self._usage_data = ""
        # The message-level facts kept verbatim (_keep_detail), by key in the order they were first set.
        self._details: dict[str, Any] = {}
        # Retained-object accounting: the current event's data and its sequence number, the
        # last event already charged, and the running totals (see _retain / _sign / _cite).
        self._event_data = ""
        self._event_seq = 0
        self._charged_seq = -1
        self._item_chars = 0
        self._signature_chars = 0
        self._citation_count = 0
        # The buffer whose consecutive fragments are being merged into one delta update.
        self._run: TextBuffer | ToolCallBuffer | None = None
        self._run_start = 0
        # Buffer -> the high surrogate its last delta held back (flush; empty but after a split pair).
        self._halves: dict[Fragments, str] = {}
        #: Typed routes: whether the start event arrived.
        self._started = False
        #: Data-only routes: ``index`` -> the route's :attr:`choice_state` instance.
        self._choices: dict[int, ChoiceState] = {}
        # The contract's envelope facts, as instance slots (the per-event step reads them).
        contract = self.contract
        self._done_ends = contract.done_sentinel == "terminal"
        self._dispatch_key = contract.dispatch_key
        self._cross_check = contract.cross_check_event_name
        self._before_start = contract.before_start
        self._choices_key = contract.choices_key
        #: The sequence-number state (routes with ``contract.resume``), shared by resumed sessions.
        self.sequencer = Sequencer(contract.resume) if contract.resume is not None else None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.contract.done_sentinel not in ("terminal", "ignored"):
            raise AssertionError(f"{cls.contract.name}: done_sentinel must be 'terminal' or 'ignored'")
        # (a misspelt method name fails here, at import)
        cls._handlers = {kind: getattr(cls, name) for kind, name in cls.handler_names.items()}
        cls._stop_tokens = {reason: sanitize_token(reason) for reason in cls.contract.stop_reasons}

    # -- the envelope step -------------------------------------------------------------------

    def handle(self, event: EventTuple) -> None:
        """Consume one complete SSE event: the envelope step of the module docstring, then the
        route's handler (typed routes) or :meth:`_choice` per choice and :meth:`_chunk`
        (data-only routes)."""
        name, data, _ = event  # (an EventTuple: type, data, last event id)
        if data == "[DONE]":
            if self._done_ends:
                if self.terminal_seen:
                    self._protocol("after_terminal")
                else:
                    self._done()
            return
        if self.terminal_seen:
            self._protocol("after_terminal")
            return
        self._event_data = data
        self._event_seq += 1
        if name == "error":
            self._error_event(data)
            return
        # The envelope's JSON: the scanner json.loads ends in, called directly (the same C parser
        # and result, two Python frames fewer per event). Anything it does not take whole (leading
        # or trailing whitespace, malformed JSON) goes to _loads, which decides; nesting deeper
        # than MAX_JSON_DEPTH is refused first, as _loads does.
        try:
            # (a text nests at most as deep as it has openers, so most are never measured)
            if len(data) > MAX_JSON_DEPTH and more_openers_than(data, MAX_JSON_DEPTH) and too_deep(data):
                raise ValueError
            obj, end = _scan(data, 0)
            if end != len(data):
                raise ValueError
        except (ValueError, StopIteration):
            try:
                obj = _loads(data)
            except ValueError:
                self._protocol("envelope")
                return
            if holds_non_finite(data):  # (what the envelope scan refused; else only whitespace around the object)
                self.kept_odd = True
        if obj.__class__ is not dict:
            self._protocol("envelope")
            return
        key = self._dispatch_key
        if key is None:
            error = obj.get("error")
            if error:
                self._upstream("error_object", error)
                return
            choices = obj.get(self._choices_key)
            if choices is not None:
                # _each's loop plus the choice lookup, inline: this runs once per event.
                if choices.__class__ is not list:  # also when empty ("", {}, 0)
                    self._protocol("envelope")
                    return
                states = self._choices
                for item in choices:
                    if item.__class__ is not dict:
                        self._protocol("envelope")
                        return
                    index = item.get("index", 0)
                    if index.__class__ is not int:  # also before the lookup: True or 1.0 would find choice 1
                        self._protocol("envelope")
                        return
                    st = states.get(index)
                    if st is None:
                        if not self._check_blocks(len(states)):
                            return
                        st = states[index] = self.choice_state(index)
                    self._choice(st, item)
                    if self.failure is not None:
                        return
            self._chunk(obj, choices)
            return
        kind = obj.get(key)
        if kind.__class__ is not str:
            self._protocol("envelope")
            return
        if self._cross_check and name != "message" and name != kind:
            self._protocol("event_name")
            return
        sequencer = self.sequencer
        if sequencer is not None:
            number = obj.get(sequencer.key)
            last = sequencer.last
            if number.__class__ is int and last is not None and number == last + 1 and kind != sequencer.id_event:
                # Sequencer.admit's usual case, inline: the next number (so >= 0) on an event that does not
                # carry the response id is taken.
                sequencer.overlap = False
                sequencer.last = number
            else:
                stage = sequencer.admit(kind, obj)
                if stage is not None:
                    if stage:
                        self._protocol(stage)
                    return
        handler = self._handlers.get(kind)
        if handler is None:
            return
        if not self._started and kind not in self._before_start:
            self._protocol("order")
            return
        handler(self, obj)

    def keepalive(self, obj: dict[str, Any]) -> None:
        """Typed routes' handler for the contract's keep-alive event types: counted, not accumulated."""
        self.keepalives += 1

    def ignore(self, obj: dict[str, Any]) -> None:
        """Typed routes' handler for an event with nothing to accumulate (lifecycle, progress)."""

    # -- the route interface -----------------------------------------------------------------

    def _choice(self, st: Any, item: dict[str, Any]) -> None:
        """Data-only routes: one element of the chunk's choices list, with its state (the
        route's :attr:`choice_state`)."""
        raise NotImplementedError

    def _chunk(self, obj: dict[str, Any], choices: object) -> None:
        """Data-only routes: the rest of a chunk (usage, feedback) after its ``choices`` (the
        raw value; falsy when absent or empty) were taken."""
        raise NotImplementedError

    def _done(self) -> None:
        """Routes whose ``[DONE]`` is terminal: the sentinel arrived (before any terminal)."""
        raise NotImplementedError

    def _choice_extras(self, st: Any, calls: tuple[ToolCall, ...]) -> dict[str, Any]:
        """Data-only routes: the choice's ``items``, ``citations``, ``logprobs`` and
        ``assistant_message`` (keyword arguments of :class:`ChoiceResult`)."""
        raise NotImplementedError

    def open_count(self) -> int:
        """Choices/blocks/items/calls still open (telemetry). Here: data-only routes' unfinished
        choices plus open tool calls; typed routes override it."""
        count = 0
        for c in self._choices.values():
            if c.finish_reason is None:
                count += 1
        for call in self.calls:
            if call.open:
                count += 1
        return count

    def choice_results(self, ready: bool) -> tuple[ChoiceResult, ...]:
        """Per-choice view; element 0 is the message the result's ``text`` comes from. Here:
        data-only routes' choices in index order; typed routes override it."""
        out = []
        for c in self._ordered_choices():
            calls = self._calls_in(c.calls, ready)
            extras = self._choice_extras(c, calls)
            out.append(new_choice(c.index, c.text.joined(), c.refusal.joined(), c.reasoning.joined(), c.finish_reason,
                                  calls, extras["items"], extras["citations"], extras["logprobs"],
                                  extras["assistant_message"]))
        return tuple(out)

    def _ordered_choices(self) -> list[ChoiceState]:
        """Data-only routes: the choices seen, in index order."""
        choices = self._choices
        if len(choices) < 2:  # the usual single choice: nothing to sort
            return list(choices.values())
        return sorted(choices.values(), key=_BY_INDEX)

    def stop_reason_known(self, reason: str) -> bool:
        """Whether ``reason`` is in the contract's stop vocabulary or the caller's accepted set
        (telemetry then records it verbatim)."""
        return reason in self.contract.stop_reasons or (self._accepted is not None and reason in self._accepted)

    def telemetry_stop_reason(self) -> str | None:
        """The stop reason as telemetry records it (:func:`~webclient._telemetry.stop_reason_token`).
        A reason of the contract is always known (routes' :meth:`stop_reason_known` only add to it):
        its spelling was sanitized once, with the class."""
        reason = self.stop_reason
        if reason is None:
            return None
        token = self._stop_tokens.get(reason)
        if token is not None:
            return token
        return stop_reason_token(reason, self.stop_reason_known(reason))

    def _identity(self, response_id: object, model: object) -> None:
        """Remember the provider's response id and model: the first non-empty strings sent (charged
        by their length). One holding a surrogate is ``payload_error`` ``unpaired_surrogate``."""
        if self.response_id is None and response_id and response_id.__class__ is str:
            if not self._whole_string(response_id) or not self._hold(len(response_id)):
                return
            self.response_id = response_id
        if (self.model is None and model and model.__class__ is str and self._whole_string(model)
                and self._hold(len(model))):
            self.model = model

    # -- failures ------------------------------------------------------------------------------

    def _fail(self, outcome: Outcome, stage: str) -> None:
        if self.failure is None:
            self.failure = Failure(outcome, stage)

    def _protocol(self, stage: str) -> None:
        self._fail(Outcome.PROTOCOL_ERROR, stage)

    def _unknown(self) -> bool:
        """A type the route does not know arrived. Without ``keep_unknown``: ``protocol_error``
        ``unknown_type`` and False. With it: True (the caller keeps it verbatim), after charging
        the event to the item ceiling."""
        if self._keep_unknown:
            return self._retain()
        self._protocol("unknown_type")
        return False

    def _upstream(self, stage: str, error: object) -> None:
        """Record an in-stream provider error, keeping only its sanitized type and code."""
        err_type = code = None
        if isinstance(error, dict):
            err_type = sanitize_code(error.get("type") or error.get("status"))
            code = sanitize_code(error.get("code"))
        self.provider_error = ProviderError(err_type, code)
        self._fail(Outcome.UPSTREAM_ERROR, stage)

    def _error_event(self, data: str) -> None:
        """An SSE ``event: error``: ``upstream_error`` (whatever the data holds)."""
        try:
            obj = _loads(data)
        except ValueError:
            obj = None
        self._error(obj)

    def _error(self, obj: object) -> None:
        """An error event's payload (``event: error``, or typed routes' ``data.type == "error"``):
        ``upstream_error`` ``error_event``, keeping the type/code of :func:`error_fields`."""
        self._upstream("error_event", error_fields(obj))

    def _start(self, obj: object = None) -> bool:
        """Typed routes: the start event arrived. A second one is ``protocol_error``
        ``duplicate_start`` (a duplicated or spliced generation). Returns False on failure."""
        if self._started:
            self._protocol("duplicate_start")
            return False
        self._started = True
        return True

    # -- stop reasons ----------------------------------------------------------------------

    def _stop_failure(self, reason: str, table: Mapping[str, StopCategory] | None = None) -> Failure | None:
        """What ``reason`` means (module docstring): ``None`` when it commits, else the failure.
        ``table`` defaults to the contract's stop reasons."""
        category = (self.contract.stop_reasons if table is None else table).get(reason)
        accepted = self._accepted
        if accepted is not None:
            if reason in accepted:
                return None
            if category is StopCategory.SUCCESS:
                return _REFUSED_BY_CALLER
        return _STOP_VERDICTS[category]

    def _terminal(self, stop_reason: str | None, open_blocks: int,
                  table: Mapping[str, StopCategory] | None = None) -> None:
        """The terminal condition arrived: decide the stop reason's verdict, then open blocks
        (``complete`` is decided later, at EOF)."""
        self.terminal_seen = True
        self.stop_reason = stop_reason
        if stop_reason is None:
            self._fail(Outcome.TRUNCATED, "missing_stop")
        elif self._hold_as("stop_reason", len(stop_reason)):
            failure = self._stop_failure(stop_reason, table)
            if failure is not None:
                self._fail(failure.outcome, failure.stage)
            elif open_blocks:
                self._protocol("open_block")
            else:
                self._check_texts()

    def _terminal_choices(self) -> None:
        """Data-only routes, every choice seen finished: in index order, the first stop reason that
        does not commit decides, else the first choice's reason (``complete``)."""
        choices = self._choices
        if len(choices) == 1:  # the one reason decides, refused or not
            for c in choices.values():
                self._terminal(c.finish_reason, 0)
            return
        first = None  # (the routes call this with every choice finished: never None below)
        for c in self._ordered_choices():
            reason = c.finish_reason
            if reason is not None:
                if self._stop_failure(reason) is not None:
                    self._terminal(reason, 0)
                    return
                if first is None:
                    first = reason
        self._terminal(first, 0)

    def _refinish(self, st: ChoiceState, reason: str) -> None:
        """A finished choice got another stop reason: a different one that does not commit wins
        (a ``stop`` re-finished with ``content_filter`` is filtered); any other is ignored."""
        if reason != st.finish_reason and self._stop_failure(reason) is not None:
            self._finish(st, reason)

    def _check_blocks(self, count: int) -> bool:
        """A new choice / block / item joins ``count`` others: the blocks ceiling, and
        :data:`~webclient._limits.BLOCK_CHARS` charged to the retained ceiling. Returns False on failure."""
        if count >= self._max_blocks:
            self._fail(Outcome.BUFFER_LIMIT, "blocks")
            return False
        return self._hold(BLOCK_CHARS)

    def _finish(self, st: ChoiceState, reason: str) -> bool:
        """Set (or replace) a choice's finish reason, charged by its length. False on failure."""
        if not self._hold(len(reason) - len(st.finish_reason or "")):
            return False
        st.finish_reason = reason
        return True

    # -- retained size -------------------------------------------------------------------------

    def _hold(self, chars: int) -> bool:
        """Charge ``chars`` to the retained ceiling (negative: release). Returns False (stage
        ``retained``) when the total would pass it."""
        total = self._retained + chars
        if total > self._max_retained:
            self._fail(Outcome.BUFFER_LIMIT, "retained")
            return False
        self._retained = total
        return True

    def _hold_as(self, key: object, chars: int) -> bool:
        """The replaceable value ``key`` is now charged ``chars``: its previous charge is released.
        Returns False on failure (the previous charge then stays)."""
        replaced = self._replaced
        total = self._retained + chars - replaced.get(key, 0)  # _hold's step, inline (usage: most events)
        if total > self._max_retained:
            self._fail(Outcome.BUFFER_LIMIT, "retained")
            return False
        self._retained = total
        replaced[key] = chars
        return True

    def _charge_usage(self, usage: dict[str, Any], merge: bool = False) -> bool:
        """The provider's usage object is about to be stored: replacing the last one (charged the
        event's length, or above MEASURE_ABOVE_CHARS the object's own, measured once), or with
        ``merge`` updated into it (:meth:`_charge_merged_usage`). Ceilings: ``items`` for the object
        kept, ``retained`` for the account. Returns False on failure (nothing is charged then)."""
        data = self._event_data
        if merge:
            if may_hold_surrogate(data):
                self.kept_odd = True
            return self._charge_merged_usage(usage)
        size = len(data)
        if size > MEASURE_ABOVE_CHARS:
            size = len(_dumps_text(usage))
        if size > self._max_items:
            self._fail(Outcome.BUFFER_LIMIT, "items")
            return False
        if not self._hold_as("usage", size):
            return False
        self._usage_data = data  # (read by kept_odd_values only if this usage is still the one kept at the end)
        return True

    def _charge_merged_usage(self, usage: dict[str, Any]) -> bool:
        """``usage`` is about to be merged into the kept one (``dict.update``: Anthropic's counts are
        cumulative, each ``message_delta`` overwrites the keys it sends). Each key is charged its
        entry's JSON length (``"key": value`` and a separator), replacing what that key was charged
        before, so the charge is the merged object's JSON length: a key sent again costs only the change
        in its value's length, and the charge grows only with new keys or longer values. Measured
        entry by entry, in time linear in the event. Ceilings as in :meth:`_charge_usage`."""
        entries = self._usage_entries
        charged = {key: len(_dumps_text(key)) + len(_dumps_text(value)) + 4 for key, value in usage.items()}
        size = self._replaced.get("usage", 0)
        for key, chars in charged.items():
            size += chars - entries.get(key, 0)
        if size > self._max_items:
            self._fail(Outcome.BUFFER_LIMIT, "items")
            return False
        if not self._hold_as("usage", size):
            return False
        entries.update(charged)
        return True

    def _keep_detail(self, key: str, value: object, kinds: tuple[type, ...]) -> bool:
        """The message-level fact ``key`` (:attr:`details`) is now ``value``, kept verbatim; ``None`` removes it. A
        value of another type than ``kinds`` is ``envelope``. Charged its JSON length, replacing what ``key`` was
        charged before (ceilings: ``items`` for the one value, ``retained`` for the account). False on failure
        (nothing changed then)."""
        if value is None:
            if key in self._details:
                del self._details[key]
                self._hold_as(("detail", key), 0)  # (a release: never fails)
            return True
        if value.__class__ not in kinds:
            self._protocol("envelope")
            return False
        size = len(_dumps_text(value))
        if size > self._max_items:
            self._fail(Outcome.BUFFER_LIMIT, "items")
            return False
        if not self._hold_as(("detail", key), size):
            return False
        if may_hold_surrogate(self._event_data):
            self.kept_odd = True
        self._details[key] = value
        return True

    @property
    def details(self) -> dict[str, Any] | None:
        """The message-level facts kept (:attr:`~webclient.StreamResult.details`): a new dict, or ``None``."""
        return dict(self._details) if self._details else None

    def kept_odd_values(self) -> bool:
        """Whether an object this accumulation keeps verbatim may hold an unpaired surrogate or a non-finite
        number: :attr:`kept_odd`, or the event the kept usage object came from escapes a surrogate. A usage
        object that replaces the last one (most events of some routes carry one) is looked at once, here, not
        as each one arrives."""
        if self.kept_odd:
            return True
        return may_hold_surrogate(self._usage_data)

    def _whole_string(self, value: str) -> bool:
        """A string taken whole from one event (a call's name or id, the response id, the model, a
        signature): one holding a surrogate cannot be a faithful value (JSON combines an escaped pair within
        a string, so the surrogate is unpaired), and the attempt ends ``payload_error`` ``unpaired_surrogate``
        before it is kept or announced. False then. (O(1) for ASCII: ``str.isascii`` reads a flag.)"""
        if has_surrogate(value):
            self._fail(Outcome.PAYLOAD_ERROR, UNPAIRED_SURROGATE)
            return False
        return True

    def retained_chars(self) -> int:
        """The retained-size account now (see the class docstring)."""
        return self._retained

    # -- values that must not commit -------------------------------------------------------------

    def _text_buffers(self) -> Iterable[TextBuffer]:
        """Every text buffer of the accumulation. Here: data-only routes' choices; typed routes
        override it."""
        for c in self._choices.values():
            yield c.text
            yield c.refusal
            yield c.reasoning

    def _check_texts(self) -> None:
        """Once, when the terminal condition would commit: every text buffer, joined, with its
        surrogate pairs combined (the buffer then holds the combined text); an unpaired surrogate is
        ``payload_error`` ``unpaired_surrogate`` (the failure is the result: nothing is returned)."""
        if not self._clean_texts(clean_text):
            self._fail(Outcome.PAYLOAD_ERROR, UNPAIRED_SURROGATE)

    def show_texts(self) -> Callable[[], None]:
        """For a result that does not commit: every text buffer, joined, as :func:`shown_text` shows it
        (pairs combined, anything left unpaired U+FFFD), so that the partial text encodes. Returns what puts
        the buffers (and the account) back as they came, to call once the result is built: a resumed
        session continues this accumulation, and half a pair at a cut must meet its other half there."""
        saved = [(buf, buf.parts[:], buf.size) for buf in self._text_buffers()]
        retained = self._retained
        self._clean_texts(shown_text)

        def restore() -> None:
            for buf, parts, size in saved:
                buf.parts[:] = parts
                buf.size = size
            self._retained = retained

        return restore

    def _clean_texts(self, clean: Callable[[str], str | None]) -> bool:
        """Every text buffer becomes its joined text passed through ``clean`` (when that changes it);
        False, at the first buffer ``clean`` refuses (that one unchanged)."""
        if self._run is not None:
            self.flush()
        for buf in self._text_buffers():
            text = buf.joined()
            cleaned = clean(text)
            if cleaned is None:
                return False
            if cleaned is not text:
                self._replace_text(buf, cleaned)
        return True

    def _replace_text(self, buf: Fragments, text: str) -> None:
        """``buf`` now holds ``text`` (pairs combined: never longer), charged by its length."""
        self._retained += len(text) - buf.size
        buf.parts[:] = [text]
        buf.size = len(text)

    # -- retained objects --------------------------------------------------------------------

    def _retain(self) -> bool:
        """Something of the current event is kept verbatim: charge the event (once) to the item
        ceiling (stage ``items``) and the retained ceiling. Returns False on failure."""
        seq = self._event_seq
        if self._charged_seq == seq:
            return True
        self._charged_seq = seq
        data = self._event_data
        size = len(data)
        total = self._item_chars + size
        if total > self._max_items:
            self._fail(Outcome.BUFFER_LIMIT, "items")
            return False
        if not self._hold(size):
            return False
        self._item_chars = total
        if may_hold_surrogate(data):
            self.kept_odd = True
        return True

    def _sign(self, old: str, new: object) -> bool:
        """A signature ``new`` replaces ``old`` (``""`` when there was none): it must be a string
        (else ``envelope``) without a surrogate (:meth:`_whole_string`), and the total stays under the
        signature ceiling (stage ``signatures``). Returns False on failure."""
        if new.__class__ is not str:
            self._protocol("envelope")
            return False
        if not self._whole_string(new):
            return False
        change = len(new) - len(old)
        total = self._signature_chars + change
        if total > self._max_signatures:
            self._fail(Outcome.BUFFER_LIMIT, "signatures")
            return False
        if not self._hold(change):
            return False
        self._signature_chars = total
        return True

    def _cite(self, into: list[JSON], citation: object) -> bool:
        """Keep one citation / annotation object (ceiling ``citations``, and the item ceiling for
        its event). A non-object is ``envelope``. Returns False on failure."""
        if citation.__class__ is not dict:
            self._protocol("envelope")
            return False
        if self._citation_count >= self._max_citations:
            self._fail(Outcome.BUFFER_LIMIT, "citations")
            return False
        if not self._retain():
            return False
        self._citation_count += 1
        into.append(citation)
        return True

    def _each(self, items: Any, step: Callable[[_Owner, Any], object], owner: _Owner) -> bool:
        """Call ``step(owner, element)`` for every element of a list-valued field, in order,
        stopping at the first failure. A value that is not a list is ``protocol_error``
        ``envelope``. Returns whether every element was taken without a failure."""
        if items.__class__ is not list:
            self._protocol("envelope")
            return False
        for item in items:
            step(owner, item)
            if self.failure is not None:
                return False
        return True

    # -- updates ---------------------------------------------------------------------------

    def flush(self) -> None:
        """Emit the pending merged delta, if any, shown without a surrogate (:func:`held_back`; a high
        half that ends it waits in ``_halves`` for its buffer's next delta)."""
        run = self._run
        if run is None:
            return
        self._run = None
        frags = run.parts[self._run_start :]
        text = frags[0] if len(frags) == 1 else "".join(frags)
        held = self._halves
        if held or (not text.isascii() and surrogate_search(text) is not None):
            # A delta never shows a surrogate: a pair split across events is joined (the high half waits
            # for the buffer's next delta), and a half that stays unpaired is shown as U+FFFD.
            text, half = held_back(held.pop(run, "") + text)
            if half:
                held[run] = half
            if not text:
                return
        if isinstance(run, TextBuffer):
            self.out.append(new_text_delta(run.channel, run.index, text))
        else:
            self.out.append(new_input_delta(run.call, run.id, run.name, text))

    def _emit(self, update: Update) -> None:
        if self._run is not None:
            self.flush()
        self.out.append(update)

    def _text(self, buf: TextBuffer, fragment: str) -> bool:
        """Append a text fragment (ceilings ``text``, ``retained``). Returns False on failure."""
        return self._append(buf, fragment, self._max_text, "text")

    def _append(self, buf: TextBuffer | ToolCallBuffer, fragment: str, ceiling: int, stage: str) -> bool:
        """The per-delta step of :meth:`_text` and :meth:`_tool_input` (whose ceiling and stage it
        takes; routes' hottest handlers call it directly): the growth step of :meth:`_held`, in the
        same order, then the fragment joins ``buf`` and the merged delta run. Returns False on
        failure (nothing is charged or appended then)."""
        chars = len(fragment)
        size = buf.size + chars
        if size > ceiling:
            self._fail(Outcome.BUFFER_LIMIT, stage)
            return False
        retained = self._retained + chars
        if retained > self._max_retained:
            self._fail(Outcome.BUFFER_LIMIT, "retained")
            return False
        self._retained = retained
        buf.size = size
        parts = buf.parts
        if buf is not self._run:
            if self._run is not None:
                self.flush()
            self._run = buf
            self._run_start = len(parts)
        parts.append(fragment)
        return True

    def _optional_text(self, buf: TextBuffer, value: object) -> bool:
        """An optional text field: absent or empty adds nothing; a non-string is ``protocol_error``
        ``envelope``; else it is appended (:meth:`_text`). Returns False on failure."""
        if value:
            if value.__class__ is not str:
                self._protocol("envelope")
                return False
            return self._text(buf, value)
        return True

    # -- tool calls ------------------------------------------------------------------------

    def _new_call(self, call_id: str | None, name: str | None, kind: str = "function") -> ToolCallBuffer | None:
        """Open a client tool call (ceiling ``tool_calls``; an id or name holding a surrogate is refused,
        :meth:`_whole_string`; one entry plus its id and name against ``retained``) and announce it as
        streaming."""
        calls = self.calls
        if len(calls) >= self._max_calls:
            self._fail(Outcome.BUFFER_LIMIT, "tool_calls")
            return None
        if (call_id and not self._whole_string(call_id)) or (name and not self._whole_string(name)):
            return None
        if not self._hold(ENTRY_CHARS + len(call_id or "") + len(name or "")):
            return None
        call = ToolCallBuffer(len(calls), call_id, name, kind)
        calls.append(call)
        self._emit(new_call_update(call.call, call_id, name, _STREAMING, None, False))
        return call

    def _rename(self, call: ToolCallBuffer, value: str, chars: int) -> bool:
        """``call``'s name or id is about to become ``value``, holding ``chars`` characters more (or,
        negative, fewer): refused if it holds a surrogate (:meth:`_whole_string`), charged (ceiling
        ``retained``), and its pending input delta announced under the old one first. False on failure
        (nothing changes then)."""
        if not self._whole_string(value) or not self._hold(chars):
            return False
        if self._run is call:
            self.flush()
        return True

    def _tool_input(self, call: ToolCallBuffer, fragment: str) -> bool:
        """Append a raw input fragment (ceilings ``tool_input``, ``retained``). Returns False on
        failure."""
        return self._append(call, fragment, self._max_tool_input, "tool_input")

    def _held_input(self, buf: Fragments, chars: int) -> bool:
        """``chars`` more of a tool input held in ``buf`` (a server tool's input, a call's
        streamed-argument paths): :meth:`_held` under ``tool_input``."""
        return self._held(buf, chars, self._max_tool_input, "tool_input")

    def _held(self, buf: Fragments, chars: int, ceiling: int, stage: str) -> bool:
        """``chars`` more held in ``buf``: its ``size`` against ``ceiling`` (``stage``), and the
        retained ceiling. Returns False on failure (nothing is charged then)."""
        size = buf.size + chars
        if size > ceiling:
            self._fail(Outcome.BUFFER_LIMIT, stage)
            return False
        retained = self._retained + chars
        if retained > self._max_retained:
            self._fail(Outcome.BUFFER_LIMIT, "retained")
            return False
        self._retained = retained
        buf.size = size
        return True

    def _close_call(self, call: ToolCallBuffer, validate: bool = True) -> bool:
        """STREAMING -> CLOSED, then (if ``validate``) parse and validate: JSON for every kind but
        ``custom``, whose free text goes to its validator as is. Surrogate pairs split across
        fragments are combined in the input first (the pending input delta is flushed before, as
        the combined text replaces the fragments). False on failure."""
        if self._run is call:
            self.flush()
        text = call.joined()
        combined = combine_surrogates(text)
        if combined is not text:
            self._replace_text(call, combined)
        call.move(ToolCallState.CLOSED)
        self._emit(new_call_update(call.call, call.id, call.name, _CLOSED, None, False))
        if not validate:
            return True
        registry = self._registry
        if call.kind == "custom":
            return self._settle(call, *registry.check_text(call.name, combined))
        return self._settle(call, *registry.check(call.name, combined))

    def _close_call_value(self, call: ToolCallBuffer, value: object) -> bool:
        """Close a call whose input arrived already parsed (Gemini) and validate it."""
        call.move(ToolCallState.CLOSED)
        self._emit(new_call_update(call.call, call.id, call.name, _CLOSED, None, False))
        return self._settle(call, *self._registry.check_value(call.name, value))

    def _close_call_object(self, call: ToolCallBuffer, value: dict[str, Any]) -> bool:
        """Close a call whose input is the object ``value`` (assembled, or taken from a whole
        item): its input text becomes the JSON of ``value`` (ceiling ``tool_input``), then it is
        validated as a value."""
        if self._run is call:
            self.flush()
        text = _dumps_text(value)
        if len(text) > self._max_tool_input:
            self._fail(Outcome.BUFFER_LIMIT, "tool_input")
            return False
        if not self._hold(len(text) - call.size):
            return False
        call.parts[:] = [text]
        call.size = len(text)
        return self._close_call_value(call, value)

    def _settle(self, call: ToolCallBuffer, arguments: dict[str, Any] | None, stage: str | None,
                problems: tuple[str, ...]) -> bool:
        """Record a closed call's verdict; parsed arguments are charged once more, by the length of
        the input they came from. False on failure."""
        if arguments is not None and not self._hold(call.size):
            return False
        call.settle(arguments, stage, problems)
        self._emit(new_call_update(call.call, call.id, call.name, call.state._value_, arguments, False))
        if stage is not None:
            self._fail(Outcome.PAYLOAD_ERROR, stage)
            return False
        return True

    def _calls_in(self, calls: list[ToolCallBuffer], ready: bool) -> tuple[ToolCall, ...]:
        return tuple([call.snapshot(ready) for call in calls]) if calls else ()


def error_fields(obj: object) -> object:
    """The part of an error payload holding ``type``/``code``: the nested ``error`` object
    (Anthropic, Groq, live Responses) or the payload itself (flat Responses ``error`` event)."""
    if isinstance(obj, dict):
        nested = obj.get("error")
        if isinstance(nested, dict):
            return nested
        return {"code": obj.get("code")}
    return None
