"""Layer 2: the WHATWG event-stream parser, text in, events out.

This is the HTML Living Standard's "Parsing an event stream" and "Interpreting an event stream"
(§9.2.5-9.2.6), implemented literally, with two additions: ceilings on the two buffered surfaces
(the pending partial line and the pending event's data buffer), and counters for what it ignored.

Line splitting
    Lines end at CRLF, a lone LF or a lone CR. A CR that ends one ``feed`` already terminates its
    line (spec: "block buffering ... can cause delays in event dispatch"); the parser only
    remembers to swallow one LF if the next ``feed`` starts with it. Outside the steady state
    below, a feed's text is normalised to LF with two C-level ``str.replace`` calls, which is
    exact: ``\r\n`` pairs are fully visible inside the feed and a lone CR maps to LF.
    ``str.splitlines`` is never used: U+2028, U+0085, VT and FF are ordinary data characters.

The steady state (LLM streams: every event is one data line, alone or after one ``event:`` line)
    The parser keeps a *separator*: a blank line followed by the *prefix* of the next event,
    ``"\n\ndata: "`` (data-only streams: Chat, Gemini), ``"\n\nevent: NAME\ndata: "`` (typed
    streams in a run of one name: Anthropic's text deltas, Responses' output_text deltas) or
    ``"\n\nevent: "`` followed by any name (typed streams whose names keep changing: the
    recorded Anthropic/Responses traffic), the CRLF form for CRLF-framed text, and splits each
    feed on it with one ``str.rsplit``. A separator cannot overlap itself (no proper prefix of it
    is also a suffix), so the split is unambiguous (and the same from either end), and a part
    between two separators that holds no line break is one complete event: the block
    ``PREFIX + part`` starts with an empty event state (the separator's blank line dispatched the
    event before) and ends at the next separator's blank line. With a one-name separator the part
    is the event's value; with the any-name one it is ``NAME\ndata: VALUE`` (``str.partition``).
    One search per part proves it holds no other line break; the feed's events are then built
    without reading a single line.
    The first part ends the pending event (usually the pending data value, ``_data_tail``, plus
    the rest of it; ``_rest_of_event`` / ``_begun_event`` for a feed cut inside the prefix, or
    after a feed that ended right after a data line's line break: the blank line that dispatches
    that event, held in the data buffer, then the prefix). The last part begins the next one: its
    value so far, or a value, a blank line and the start of the next prefix (``_ended_value``), or
    a value and its line break (``_ended_line``), or an event line and the start of ``data:``
    (``_event_line``). A part that is anything else (comments, ids, multi-line data, events of
    another shape) is read by the general path from where it starts (``_mixed_parts``,
    ``_typed_parts``, ``_named_parts``), so one unusual event does not send its whole feed there:
    on a one-name separator, the events before the first such part are kept as built and the parts
    after it are values again (a big feed of Anthropic text deltas in which a block ends and the
    next one starts stays on it). Events of other names in the first or the last part of a big
    feed on a one-name separator (a break in the run that the feed's edge cuts: Responses' text
    deltas, a tool call's events, text deltas again) are read as the any-name separator reads its
    parts (``_named_parts``, ``_next_event``), and the one-name separator stays for the next feed
    when the feed held more than ``_NAME_RUN`` parts; a value of another name that the feed's end
    cuts is then held as the partial line it is, not as a value.
    A feed without a line break only lengthens the pending line (one scan, no split), and a feed
    the separator does not split goes through the general path: the pending line is finished with
    the text up to the first line feed (``_finish_line``), and the rest is read block by block
    (``_general``), where a block that is one data line (alone or after one event line) or one
    comment line is dispatched as such and anything else is interpreted line by line by the
    spec's algorithm (``_process``).
    The separator follows the stream: when the general path leaves a data line pending that began
    an event, the separator becomes that event's prefix; a typed feed that events of other names
    break up more often than once in ``_NAME_RUN`` parts (or whose first or last part, in a feed
    of at most ``_NAME_RUN`` parts) switches to the any-name separator, and that one gives way to
    a one-name separator again once one name has run for ``_NAME_RUN`` events (feeds whose first
    and last events and the next one share it, or a feed's last ``_NAME_RUN`` events and the next
    one).
    The choice only decides speed, never a result: the property tests compare every shape with a
    naive oracle under every chunking, and test the invariants the speed-up relies on.

Pending state
    A partial line is kept as a list of fragments with a running length and joined once, when its
    terminator arrives (eventsource-parser's fix for O(N²) re-joining). A ``data:`` line that
    began an event (empty data buffer) is kept as its *value* only: as one string in the steady
    state (``_data_tail``), as fragments when it grows over several feeds (``_tail_is_data``), so
    that a multi-megabyte line is joined once and never re-sliced. Invariant: while a value is
    pending, the data buffer is empty, and, unless the separator takes any name, the event type
    is the separator's type (a value is only held where this holds), so the event it completes
    has the separator's type.

Events
    Each dispatched event is built as a plain ``(type, data, last_event_id)`` tuple (an
    ``EventTuple``, ``webclient._events``): ``feed_tuples`` returns them as built, and ``feed``
    wraps each one as an ``SSEEvent`` (the same fields, named). The paths above differ only in
    how they find an event's fields, never in what they build.

Linear time
    Each feed is a fixed number of C-level passes over its text; each pending fragment is joined
    once. ``work`` counts the characters the parser has scanned and joined so tests can prove it
    stays linear.

Ceilings (checked so the trip point never depends on chunking)
    ``max_line_chars``: every complete line is checked before it is interpreted, and the pending
    partial line after each ``feed``. A line longer than the ceiling trips whether it arrives whole
    or one character at a time, because its prefix grows past the ceiling either way.
    ``max_event_chars``: the data buffer (values plus their LFs) after each ``data`` line.
    The steady state and the block shortcut build events without these checks only when no line
    can reach a ceiling (``_fast_cap``); anything else is interpreted line by line, which checks.
    A trip records ``Failure(BUFFER_LIMIT, "line" | "event")``; events dispatched earlier in the
    same ``feed`` are still returned, the over-long line is dropped (so the pending counts at a
    trip are the same for every chunking), and the parser accepts no more input.
"""

from __future__ import annotations

from ._errors import UsageError
from ._events import EventTuple, RetryField, SSEItem, TupleItem, as_events
from ._limits import DEFAULT_LIMITS, MAX_RETRY_DIGITS, Limits
from ._outcome import Failure, Outcome

_ASCII_DIGITS = frozenset("0123456789")
#: The prefix of the separator of any type (see ``SSEParser._use_separator``): a name follows.
_ANY_TYPE = "event: "
#: The separator of any type in LF and in CRLF text: a blank line, then an event line.
_ANY_SEPARATOR = "\n\n" + _ANY_TYPE
_ANY_SEPARATOR_CRLF = "\r\n\r\n" + _ANY_TYPE
#: Events of one name in a row (counted a feed at a time: the feed's first and last events and the
#: next one share it; or seen at a feed's end: its last this many events and the next one) after
#: which the separator of any type gives way to that name's own; and a typed feed on a one-name
#: separator whose parts hold other events more often than once in this many parts gives way to
#: the separator of any type. The one-name separator reads an event
#: faster, but each part that events of other names break up is then read by the general path:
#: recorded Anthropic/Responses traffic repeats a name 1-15 times in a row, Anthropic's text
#: deltas hundreds of times.
_NAME_RUN = 8



class SSEParser:
    """Incremental WHATWG SSE parser: ``feed(text) -> list[SSEEvent | RetryField]``, ``close()``;
    ``feed_tuples(text)`` gives the same events as plain tuples.

    One instance per response. It never raises for bad input: a ceiling trip sets :attr:`failure`
    and ends consumption. ``feed`` after :meth:`close` or after a failure raises
    :class:`~webclient.UsageError`.
    """

    __slots__ = (
        "_any_type",
        "_closed",
        "_data",
        "_data_len",
        "_data_tail",
        "_event_type",
        "_fast_cap",
        "_fast_type",
        "_id_buffer",
        "_line_len",
        "_line_parts",
        "_max_event",
        "_max_line",
        "_name_run",
        "_prefix",
        "_prefix_type",
        "_separator",
        "_separator_crlf",
        "_strip_next",
        "_tail_is_data",
        "comment_lines",
        "events_dispatched",
        "failure",
        "ids_ignored",
        "last_event_id",
        "lines_interpreted",
        "retries_rejected",
        "retry",
        "unknown_fields",
        "work",
    )

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self._max_line = limits.max_line_chars
        self._max_event = limits.max_event_chars
        # Longest value the steady state may dispatch without the per-line ceiling checks: the line
        # is "data: " + value (line ceiling) and the data buffer is value + LF (event ceiling).
        self._fast_cap = min(limits.max_line_chars - 6, limits.max_event_chars - 1)
        self._closed = False
        # The character the next non-empty text drops if it starts with it, else "". At stream
        # start a BOM ("strips one leading BOM"; an empty first feed does not spend it); after a
        # feed that ended with CR, an LF (that CR already ended its line). They never overlap:
        # a feed can end with CR only after the first non-empty text.
        self._strip_next = "\ufeff"
        # The pending partial line as fragments (joined once, at its terminator) and its length.
        # When ``_tail_is_data``, the fragments are the value of a "data: " line that began an
        # event, without that prefix (``_line_len`` still counts it).
        self._line_parts: list[str] = []
        self._line_len = 0
        self._tail_is_data = False
        # Or, in the steady state, such a value as one string (see "Pending state").
        self._data_tail: str | None = None
        # The steady state's separator (see ``_use_separator``).
        self._name_run = 0
        self._use_separator("", False)
        # The data buffer as a list of values; its WHATWG length (values + one LF each).
        self._data: list[str] = []
        self._data_len = 0
        self._event_type = ""
        self._id_buffer = ""
        #: The last event ID string (set at each dispatch from the last event ID buffer).
        self.last_event_id = ""
        #: The reconnection time from the last accepted ``retry`` field, else ``None``.
        self.retry: int | None = None
        #: Events dispatched so far.
        self.events_dispatched = 0
        #: Comment lines seen (lines starting with ``:``).
        self.comment_lines = 0
        #: Field lines with a name other than data/event/id/retry (ignored by the spec).
        self.unknown_fields = 0
        #: ``id`` fields ignored because their value contained NUL.
        self.ids_ignored = 0
        #: ``retry`` fields ignored because their value was not 1-16 ASCII digits.
        self.retries_rejected = 0
        #: Characters scanned plus characters re-joined: a linear-time witness for tests.
        self.work = 0
        #: Lines read one at a time by the spec's algorithm; the events of the steady state and of
        #: the block shortcut are built without it: a witness for tests that those paths are taken.
        self.lines_interpreted = 0
        #: The ``buffer_limit`` failure once a ceiling tripped, else ``None``.
        self.failure: Failure | None = None

    # -- read-only state -------------------------------------------------------------------

    @property
    def pending_line_chars(self) -> int:
        """Characters of the unfinished line held for the next ``feed``."""
        if self._data_tail is not None:
            return 6 + len(self._data_tail)
        return self._line_len

    @property
    def pending_event_chars(self) -> int:
        """Characters in the data buffer of the event not yet dispatched."""
        return self._data_len

    @property
    def has_pending_event(self) -> bool:
        """True when field lines were seen since the last dispatch that a blank line would act on
        (data lines or an event type)."""
        return bool(self._data) or bool(self._event_type)

    # -- input -----------------------------------------------------------------------------

    def feed(self, text: str) -> list[SSEItem]:
        """Parse the next piece of decoded text; return the events and retry fields it completes,
        in stream order. On a ceiling trip, returns what was completed before it."""
        return as_events(self.feed_tuples(text))

    def feed_tuples(self, text: str) -> list[TupleItem]:
        """:meth:`feed`, with each event as the plain ``(type, data, last_event_id)`` tuple the
        parser builds (see ``webclient._events``, "Event tuples"): the same items, without the
        cost of an :class:`~webclient.SSEEvent` per event."""
        if self._closed or self.failure is not None:
            raise UsageError("feed() after close() or after a buffer_limit failure")
        if not text:
            return []
        return self._feed(text, "\r" in text)

    def _feed(self, text: str, crlf: bool) -> list[TupleItem]:
        # ``feed`` for text that is not empty, with ``crlf`` true when it may hold a CR (the
        # pipeline finds that out on the bytes, faster); the caller has checked the state.
        if self._strip_next:
            if text[0] == self._strip_next:
                text = text[1:]
                if not text:
                    self._strip_next = ""
                    return []
            self._strip_next = ""
        size = len(text)
        if crlf:
            # CRLF-framed text (Gemini) is split on the CRLF form of the separator.
            separator = self._separator_crlf
        elif "\n" in text:
            separator = self._separator
        else:
            # No line break: the pending line only grows (a long line spanning many feeds; see
            # ``_hold``, inlined here).
            self.work += size
            value = self._data_tail
            if value is not None:
                self._line_parts = [value, text]
                line_len = 6 + len(value) + size
                self._tail_is_data = True
                self._data_tail = None
            else:
                self._line_parts.append(text)
                line_len = self._line_len + size
            self._line_len = line_len
            if line_len > self._max_line:
                self._trip_line()
            return []
        # (The separator cannot overlap itself, so splitting from the right finds the same
        # occurrences.)
        parts = text.rsplit(separator)
        cap = self._fast_cap
        if len(parts) > 1 and (size <= cap or size - len(separator) * (len(parts) - 1) <= cap):
            # The steady state (see the module docstring); no part is long enough to reach a
            # ceiling.
            if self._any_type:
                out: list[TupleItem] = []
                self.work += size
                self._named_parts(parts, crlf, out)
                return out
            head = parts[0]
            pending = self._data_tail
            first = pending + head if pending is not None else self._rest_of_event(head, crlf)
            tail = parts.pop()
            if first is not None and len(first) <= cap:
                parts[0] = first
                id_buffer = self._id_buffer
                event_type = self._fast_type
                out = []
                # (``out.append`` written out: 3.11 specialises it, a bound ``append`` is a call.)
                for value in parts:
                    if "\n" in value or (crlf and "\r" in value):
                        break
                    out.append((event_type, value, id_buffer))
                else:
                    # No line break but the separators' own: the pending line plus the first part
                    # is the rest of one event of the separator's type, each later part but the
                    # last is the value of one more.
                    self.work += size + len(first)
                    if pending is None:  # the event began in the pending line
                        self._end_pending_line(out)
                        self._event_type = self._prefix_type
                    self.events_dispatched += len(parts)
                    self.last_event_id = id_buffer
                    if "\n" not in tail and not (crlf and "\r" in tail):
                        # The last part is the value of the next event's data line so far.
                        self._data_tail = tail
                        return out
                    self._next_event(tail, self._prefix, crlf, out, len(parts))
                    return out
                if not self._prefix_type:
                    out = []
                    self.work += len(text)
                    self._mixed_parts(parts, head, tail, crlf, out)
                    return out
                kept = len(out)
                if kept:
                    # Part ``kept`` holds a line break (another event, a comment, an id...): the
                    # events before it stay as built (state as on the path above), and the rest
                    # is read by ``_typed_parts``.
                    self.work += size + len(first)
                    if pending is None:
                        self._end_pending_line(out)
                    self._data_tail = None
                    self._event_type = ""
                    self.events_dispatched += kept
                    self.last_event_id = id_buffer
                    self._typed_parts(parts, kept, tail, crlf, out)
                    return out
            if self._prefix_type and len(parts) > _NAME_RUN:
                # The head is not the rest of an event of the separator's name but, usually, of
                # events of other names (a break in a run of the name, begun in the last feed:
                # ``_next_event``), which a run of the name follows: the head is read as the
                # separator of any type reads its parts (each ends with a blank line), the rest
                # as on the path above.
                out = []
                self.work += size
                self._named_parts(head.split(_ANY_SEPARATOR_CRLF if crlf else _ANY_SEPARATOR), crlf, out, False)
                if self.failure is None:
                    self._typed_parts(parts, 1, tail, crlf, out)
                return out
        # A typed stream whose events are not all of the separator's type: the separator of any
        # type, if it splits the text; else (and for data-only streams) the general path.
        out = []
        self.work += len(text)
        if self._any_type or not self._as_named(text, crlf, out):
            self._lines(text, crlf, out)
        return out

    def _as_named(self, text: str, crlf: bool, out: list[TupleItem]) -> bool:
        """If the separator of any type splits ``text`` (from where the pending state is) into
        parts short of the ceilings, switch to it and read them (``_named_parts``); else return
        False."""
        separator = _ANY_SEPARATOR_CRLF if crlf else _ANY_SEPARATOR
        parts = text.rsplit(separator)
        if len(parts) == 1 or len(text) - len(separator) * (len(parts) - 1) > self._fast_cap:
            return False
        self._use_separator(self._prefix_type, True)
        self._named_parts(parts, crlf, out)
        return True

    def _end_pending_line(self, out: list[TupleItem]) -> None:
        """The steady state read the first part as the rest of an event begun in the pending line
        (``_rest_of_event``): dispatch, first in ``out``, the pending event whose blank line came
        before it, if any, and forget the pending line."""
        if self._data:
            out.insert(0, self._dispatch_pending())
        self._line_parts = []
        self._line_len = 0
        self._tail_is_data = False

    def _rest_of_event(self, head: str, crlf: bool) -> str | None:
        """If the pending partial line followed by ``head`` is the rest of an event of the
        separator's type begun with an empty data buffer (a data value held as fragments, or
        ``data: `` after its event line, or the whole prefix at a block start) followed by a
        value, return the value, else ``None``. Or, when a pending event's lines have all ended
        (the last feed ended with a data line's line break), if ``head`` is the blank line that
        dispatches it followed by the whole prefix and a value, return the value: the caller
        dispatches the pending event first (``_dispatch_pending``)."""
        if self._data:
            if self._line_len or self._tail_is_data:
                return None
            expected = "\r\n" + self._prefix.replace("\n", "\r\n") if crlf else "\n" + self._prefix
            return head[len(expected) :] if head.startswith(expected) else None
        if self._event_type == self._prefix_type:
            if self._tail_is_data:
                return "".join([*self._line_parts, head])
            expected = "data: "
        elif self._tail_is_data:
            return None
        elif not self._event_type:
            expected = self._prefix
        else:
            return None
        line = "".join(self._line_parts) + head
        # (A line break after ``expected`` would be in the value, which the caller refuses.)
        return line[len(expected) :] if line.startswith(expected) else None

    def _mixed_parts(self, parts: list[str], head: str, tail: str, crlf: bool, out: list[TupleItem]) -> None:
        """The steady state when some parts hold line breaks (other events, comments, ids...):
        the parts without one are values of the separator's type (``parts[0]`` the pending one
        completed by ``head``); the others are read by the general path, each from where it
        starts (a data-only stream with comments, ids, typed events...)."""
        eol2 = "\r\n\r\n" if crlf else "\n\n"
        prefix = self._prefix
        event_type = self._fast_type
        first = parts[0]
        if "\n" in first or (crlf and "\r" in first) or self._data:
            # (With a pending event, whose blank line ``head`` begins with: the general path.)
            self._lines(head + eol2, crlf, out)
        else:
            self.work += len(first)
            out.append((event_type, first, self._id_buffer))
            self.events_dispatched += 1
            self.last_event_id = self._id_buffer
            self._clear_pending()
        for part in parts[1:]:
            if self.failure is not None:
                return
            if "\n" in part or (crlf and "\r" in part):
                self._lines(prefix + part + eol2, crlf, out)
            else:
                out.append((event_type, part, self._id_buffer))
                self.events_dispatched += 1
                self.last_event_id = self._id_buffer
        if self.failure is not None:
            return
        if "\n" not in tail and not (crlf and "\r" in tail):
            self._data_tail = tail  # (of the separator's type: the event type is still "")
        elif not self._ended_value(event_type, tail, prefix, crlf, out):
            self._lines(prefix + tail, crlf, out)

    def _typed_parts(self, parts: list[str], start: int, tail: str, crlf: bool, out: list[TupleItem]) -> None:
        """The one-name steady state from ``parts[start]``, the first part that holds a line break
        (the events before it dispatched, nothing pending): a part without one is the value of an
        event of the separator's type, the others (that event's value, then blocks of other names,
        comments, ids...) are read by the general path from their block start; ``tail`` begins the
        next event. When such parts come more often than once in ``_NAME_RUN``, the separator of
        any type reads the next feeds."""
        eol2 = "\r\n\r\n" if crlf else "\n\n"
        any_separator = _ANY_SEPARATOR_CRLF if crlf else _ANY_SEPARATOR
        prefix = self._prefix
        event_type = self._fast_type
        id_buffer = self._id_buffer
        dispatched = broken = 0
        for part in parts[start:]:
            if "\n" in part or (crlf and "\r" in part):
                broken += 1
                # Usually the value, then whole events of other names (a block ends, the next
                # starts): read as the separator of any type reads its parts. (A value that holds
                # a line break, and so a part of one block, is read by the general path.)
                blocks = part.split(any_separator)
                value = blocks[0]
                if "\n" not in value and not (crlf and "\r" in value):
                    out.append((event_type, value, id_buffer))
                    if not self._named_events(blocks, 1, crlf, out, dispatched + 1):
                        return
                else:
                    self.events_dispatched += dispatched
                    self._lines(prefix + part + eol2, crlf, out)
                    if self.failure is not None:
                        return
                dispatched = 0
                id_buffer = self._id_buffer
            else:
                out.append((event_type, part, id_buffer))
                dispatched += 1
        self.events_dispatched += dispatched
        self.last_event_id = id_buffer
        if broken * _NAME_RUN > len(parts):
            self._use_separator(self._prefix_type, True)
        if "\n" not in tail and not (crlf and "\r" in tail):
            self._data_tail = tail
            self._event_type = self._prefix_type
        else:
            self._next_event(tail, prefix, crlf, out, len(parts))

    def _next_event(self, tail: str, prefix: str, crlf: bool, out: list[TupleItem], run: int) -> None:
        """Read ``tail``, the last part of a feed on a one-name separator (whose prefix is
        ``prefix``; ``run`` parts), which holds a line break: a value and the start of the next
        prefix (``_ended_value``), else, in a typed stream, the value and events of other names
        (read as the separator of any type reads its parts; that separator reads the next feeds
        unless the feed held more than ``_NAME_RUN`` parts), else the general path."""
        self._data_tail = None
        self._event_type = ""
        if self._ended_value(self._fast_type, tail, prefix, crlf, out):
            return
        any_separator = _ANY_SEPARATOR_CRLF if crlf else _ANY_SEPARATOR
        parts = tail.rsplit(any_separator) if self._prefix_type else [tail]
        if len(parts) == 1:
            self._lines(prefix + tail, crlf, out)
            return
        if run <= _NAME_RUN:
            self._use_separator(self._prefix_type, True)
        # The tail's first part is the value of a data line begun after an event line of the
        # separator's type (the prefix).
        self._data_tail = ""
        self._event_type = self._prefix_type
        self._named_parts(parts, crlf, out)
        value = self._data_tail
        if value is not None and not self._any_type and self._event_type != self._prefix_type:
            # A value of another name, on the name's separator: held as the partial line it is.
            self._line_parts = ["data: ", value]
            self._line_len = 6 + len(value)
            self._data_tail = None

    def _named_parts(self, parts: list[str], crlf: bool, out: list[TupleItem], tailed: bool = True) -> None:
        """The steady state with the separator of any type (``"\n\nevent: "``): each part but the
        first and the last is ``NAME\ndata: VALUE``; a part that is not is read by the general
        path from its block start. Without ``tailed``, the last part is one more whole event (the
        parts ended with a blank line)."""
        tail = parts.pop() if tailed else ""
        head = parts[0]
        eol2 = "\r\n\r\n" if crlf else "\n\n"
        inner = "\r\ndata: " if crlf else "\ndata: "
        value = self._data_tail
        if (value is not None and "\n" not in head and not (crlf and "\r" in head)
                and len(value) + len(head) <= self._fast_cap):
            # The usual first part: the rest of the pending value.
            value += head
            first: EventTuple | None = (self._event_type or "message", value, self._id_buffer)
            self.work += len(value)
            self._data_tail = None
            self._event_type = ""
        else:
            eol = "\r\n" if crlf else "\n"
            if self._data and not self._line_len and head.startswith(eol):
                # The blank line that dispatches a pending event whose lines have all ended (the
                # last feed ended with its data line's line break); an event begins after it.
                out.append(self._dispatch_pending())
                head = head[len(eol) :]
            first = self._begun_event(head, crlf)
        if first is not None:
            out.append(first)
            dispatched = 1
        else:
            self._lines(head + eol2, crlf, out)
            if self.failure is not None:
                return
            dispatched = 0
        if not self._named_events(parts, 1, crlf, out, dispatched) or not tailed:
            return
        # The last part begins the next event: "NAME\ndata: VALUE" so far, or the name so far.
        name, found, value = tail.partition(inner)
        if found and "\n" not in value and "\n" not in name and not (crlf and ("\r" in value or "\r" in name)):
            self._data_tail = value
            self._event_type = name
            if out and name == out[-1][0]:
                # The name repeats: once it has for long enough, its own separator again.
                if name == out[0][0]:
                    self._name_run += len(out)
                elif len(out) > _NAME_RUN and out[-_NAME_RUN][0] == name:
                    self._name_run = _NAME_RUN  # (the feed ends with a run of it)
                else:
                    self._name_run = 0
                if self._name_run >= _NAME_RUN:
                    self._use_separator(name, False)
            else:
                self._name_run = 0
        elif not found and "\n" not in tail and not (crlf and "\r" in tail):
            self._hold(_ANY_TYPE + tail)
        elif found:
            if "\n" in name or (crlf and "\r" in name) or not self._ended_value(
                    name or "message", value, _ANY_TYPE, crlf, out):
                self._lines(_ANY_TYPE + tail, crlf, out)
        elif not self._event_line(tail, crlf):
            self._lines(_ANY_TYPE + tail, crlf, out)

    def _named_events(self, parts: list[str], start: int, crlf: bool, out: list[TupleItem], dispatched: int) -> bool:
        """Read ``parts[start:]``, each a whole event after the separator of any type (nothing
        pending before it, a blank line after it): ``NAME\ndata: VALUE``, else read by the general
        path from its block start; add them and ``dispatched`` earlier ones to the counters. Return
        False on a ceiling trip."""
        eol2 = "\r\n\r\n" if crlf else "\n\n"
        inner = "\r\ndata: " if crlf else "\ndata: "
        id_buffer = self._id_buffer
        for part in parts[start:]:
            name, found, value = part.partition(inner)
            if found and "\n" not in value and "\n" not in name and not (crlf and ("\r" in value or "\r" in name)):
                out.append((name or "message", value, id_buffer))
                dispatched += 1
            else:
                self.last_event_id = id_buffer
                self._lines(_ANY_TYPE + part + eol2, crlf, out)
                if self.failure is not None:
                    self.events_dispatched += dispatched
                    return False
                id_buffer = self._id_buffer
        self.events_dispatched += dispatched
        # Every part ended with a dispatch (its blank line), which set the last event ID string.
        self.last_event_id = id_buffer
        return True

    def _event_line(self, tail: str, crlf: bool) -> bool:
        """If ``tail`` is the rest of a complete event line (the name) and the start of the data
        line's field name at most, take that type, hold that start and return True; else False."""
        name, eol, rest = tail.partition("\r\n" if crlf else "\n")
        if not eol:
            if not (crlf and tail.endswith("\r")):
                return False
            # The text ends between the CR and the LF of the event line.
            name = tail[:-1]
            self._strip_next = "\n"
        if "\n" in name or "\r" in name or not "data: ".startswith(rest):
            return False
        self._event_type = name
        self._line_parts = [rest]
        self._line_len = len(rest)
        return True

    def _begun_event(self, head: str, crlf: bool) -> EventTuple | None:
        """If the pending partial line followed by ``head`` is the rest of an event begun with an
        empty data buffer (one data line, alone or after one event line), clear the pending line
        and return that event, else ``None``."""
        if self._data:
            return None
        self._unpack_tail()  # (a value held as one string: the same, as fragments)
        if self._tail_is_data:
            # A data value held as fragments (a long line, or the value of the last feed's tail).
            if "\n" in head or (crlf and "\r" in head) or self._line_len + len(head) > self._fast_cap + 6:
                return None
            value = "".join([*self._line_parts, head])
            self.work += len(value)
            event = (self._event_type or "message", value, self._id_buffer)
            self._clear_pending()
            return event
        line = "".join(self._line_parts) + head
        if len(line) > self._fast_cap + 6:
            return None
        if line.startswith("data: "):
            name, value = self._event_type or "message", line[6:]
        elif line.startswith("event: "):
            # (An event line after another one replaces its type.)
            name, found, value = line[7:].partition("\r\ndata: " if crlf else "\ndata: ")
            if not found or "\n" in name or (crlf and "\r" in name):
                return None
            name = name or "message"
        else:
            return None
        if "\n" in value or (crlf and "\r" in value):
            return None
        self.work += len(line)
        self._clear_pending()
        return (name, value, self._id_buffer)

    def _ended_value(self, event_type: str, body: str, prefix: str, crlf: bool, out: list[TupleItem]) -> bool:
        """If ``body`` is "VALUE", a blank line and the start of the separator's prefix (not all of
        it: the separator would have split there), dispatch the event, hold that start and return
        True; else return False. (CRLF-framed text may also end between the CR and the LF of the
        prefix's event line.)"""
        if crlf:
            end = body.find("\r")
            value = body[:end]
            if end < 0 or "\n" in value:
                return False
            if not body.startswith("\r\n\r", end):
                return self._ended_line(event_type, value, body[end:])
            if not body.startswith("\n", end + 3):  # (a text that ends at the blank line's CR, too: the general
                return False  # path reads that rare cut to the same events and counters)
            rest = body[end + 4 :]
            if not prefix.replace("\n", "\r\n").startswith(rest):
                return False
        else:
            end = body.find("\n")
            rest = body[end + 2 :]
            if not (body.startswith("\n", end + 1) and prefix.startswith(rest)):
                return self._ended_line(event_type, body[:end], body[end:])
            value = body[:end]
        out.append((event_type, value, self._id_buffer))
        self.events_dispatched += 1
        self.last_event_id = self._id_buffer
        if rest.endswith("\r"):  # the text ends between a CR and its LF
            self._strip_next = "\n"
            rest = rest[:-1] + "\n"
        if "\n" in rest:  # the next event's "event:" line is complete
            self._event_type = self._prefix_type
            rest = rest[rest.index("\n") + 1 :]
        self._line_parts = [rest]
        self._line_len = len(rest)
        return True

    def _ended_line(self, event_type: str, value: str, end: str) -> bool:
        """If ``end`` (what follows a value that holds no line break) is the line break of the
        value's data line and nothing more (LF, CRLF, or a CR whose LF may follow), hold the value
        in the data buffer, as the event's only data line, and return True (the blank line that
        dispatches the event comes in a later feed: ``_rest_of_event``); else return False. The
        event keeps the type it dispatches with."""
        if end == "\r":
            self._strip_next = "\n"
        elif end not in ("\n", "\r\n"):
            return False
        self._data.append(value)
        self._data_len = len(value) + 1
        self._event_type = event_type
        self._line_parts = []
        self._line_len = 0
        return True

    def _dispatch_pending(self) -> EventTuple:
        """Dispatch the pending event (its data buffer is not empty) and return it."""
        event = (self._event_type or "message", "\n".join(self._data), self._id_buffer)
        self._data.clear()
        self._data_len = 0
        self._event_type = ""
        self.events_dispatched += 1
        self.last_event_id = self._id_buffer
        return event

    def _lines(self, text: str, crlf: bool, out: list[TupleItem]) -> None:
        """The general path: interpret ``text``, which continues the pending state, line by line
        (block by block where blocks start fresh); hold its unfinished last line."""
        if crlf:
            if text[-1] == "\r":
                self._strip_next = "\n"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if "\n" not in text:
            # (Only when ``crlf`` was wrongly true: a CR after a strict-mode cut.)
            self._hold(text)
            return
        rest = self._finish_line(text, out)
        if self.failure is None:
            self._general(rest, out)

    def _finish_line(self, text: str, out: list[TupleItem]) -> str:
        """Complete the pending partial line with ``text`` up to its first line feed (``text``
        holds one) and interpret it; return the rest of ``text``, from a line start."""
        self._unpack_tail()
        if not self._line_len:
            return text  # (empty fragments may be left: they join to nothing)
        end = text.find("\n")
        self._line_parts.append(text[:end])
        line = "".join(self._line_parts)
        self.work += len(line)
        self._line_parts = []
        self._line_len = 0
        if not self._tail_is_data:
            self._process([line], out)
        else:
            # A data line held as its value (see "Pending state"): appended without re-slicing
            # it, which matters for a multi-megabyte line.
            self._tail_is_data = False
            if 6 + len(line) > self._max_line:
                self.failure = Failure(Outcome.BUFFER_LIMIT, "line")
            else:
                self._data_len += len(line) + 1
                if self._data_len > self._max_event:
                    self.failure = Failure(Outcome.BUFFER_LIMIT, "event")
                else:
                    self._data.append(line)
        if self.failure is None and text.startswith("\n", end + 1):
            # A blank line right after it dispatches, so that the rest starts at a block start.
            self._process([""], out)
            return text[end + 2 :]
        return text[end + 1 :]

    def _general(self, text: str, out: list[TupleItem]) -> None:
        """Interpret ``text``, which starts at a line start (nothing pending), block by block; hold
        its unfinished last line."""
        # Every block after the first starts with an empty event state (the blank line before
        # it dispatched), and so may the first: a block that is one data line, alone or after
        # one event line, is then dispatched as it is; anything else is interpreted line by line.
        blocks = text.split("\n\n")
        last = blocks.pop()
        cap = self._fast_cap
        max_line = self._max_line
        fresh = not self._data and not self._event_type
        for block in blocks:
            if fresh:
                if block.startswith("event: "):
                    eol = block.find("\n")
                    # No line over the ceiling: the event line (``eol`` characters) and the data line.
                    if (block.startswith("data: ", eol + 1) and block.count("\n") == 1 and eol <= max_line
                            and len(block) - eol - 7 <= cap):
                        self.last_event_id = self._id_buffer
                        out.append((block[7:eol] or "message", block[eol + 7 :], self._id_buffer))
                        self.events_dispatched += 1
                        continue
                elif block.startswith("data: ") and "\n" not in block and len(block) - 6 <= cap:
                    self.last_event_id = self._id_buffer
                    out.append(("message", block[6:], self._id_buffer))
                    self.events_dispatched += 1
                    continue
                elif block.startswith(":") and "\n" not in block and len(block) <= max_line:
                    # One comment line (a keep-alive): nothing to dispatch.
                    self.comment_lines += 1
                    self.last_event_id = self._id_buffer
                    continue
            lines = block.split("\n")
            lines.append("")
            self._process(lines, out)
            if self.failure is not None:
                return
            fresh = True
        lines = last.split("\n")
        partial = lines.pop()
        if lines:
            self._process(lines, out)
            if self.failure is not None:
                return
        if partial.startswith("data: ") and not self._data:
            # Held as its value (see "Pending state"); the separator follows this event's type (the
            # separator of any type stays for a typed event).
            event_type = self._event_type
            if event_type != self._prefix_type or (self._any_type and not event_type):
                self._use_separator(event_type, self._any_type and bool(event_type))
            self._data_tail = partial[6:]
            if len(partial) > self._max_line:
                self._trip_line()
        elif partial:
            self._hold(partial)

    def _use_separator(self, event_type: str, any_type: bool) -> None:
        """Make the separator a blank line followed by the first line(s) of an event of this
        type: ``event: <type>`` and ``data: ``, or ``data: `` alone when the type is empty; or,
        with ``any_type``, ``event: `` followed by any name (a typed stream whose names vary;
        ``event_type`` is then only the type the stream last settled on)."""
        self._prefix_type = event_type
        self._any_type = any_type
        if any_type:
            self._name_run = 0
            self._prefix = _ANY_TYPE
        else:
            self._prefix = f"event: {event_type}\ndata: " if event_type else "data: "
        self._separator = "\n\n" + self._prefix
        self._separator_crlf = self._separator.replace("\n", "\r\n")
        self._fast_type = event_type or "message"

    # -- the pending partial line ------------------------------------------------------------

    def _unpack_tail(self) -> None:
        """Turn a pending data value held as one string into fragments (see "Pending state")."""
        if self._data_tail is not None:
            self._line_parts = [self._data_tail]
            self._line_len = 6 + len(self._data_tail)
            self._tail_is_data = True
            self._data_tail = None

    def _clear_pending(self) -> None:
        """Forget the pending line and event type once the steady state dispatched their event."""
        self._data_tail = None
        self._line_parts = []
        self._line_len = 0
        self._tail_is_data = False
        self._event_type = ""

    def _hold(self, fragment: str) -> None:
        """Keep an unterminated line fragment; trip the line ceiling if the line outgrew it."""
        self._unpack_tail()
        self._line_parts.append(fragment)
        self._line_len += len(fragment)
        if self._line_len > self._max_line:
            self._trip_line()

    def _trip_line(self) -> None:
        # Drop the line the ceiling bounded: how far past the ceiling it got depends on the
        # chunking, and a trip must not.
        self._line_parts = []
        self._line_len = 0
        self._data_tail = None
        self.failure = Failure(Outcome.BUFFER_LIMIT, "line")

    def close(self) -> list[SSEItem]:
        """Signal EOF. Per spec, a pending partial line and a pending event are discarded (their
        sizes stay readable in :attr:`pending_line_chars` / :attr:`pending_event_chars`).
        Returns ``[]``: nothing is ever dispatched at EOF."""
        if self._closed:
            raise UsageError("close() called twice")
        self._closed = True
        return []

    # -- interpretation --------------------------------------------------------------------

    def _process(self, lines: list[str], out: list[TupleItem]) -> None:
        self.lines_interpreted += len(lines)
        max_line = self._max_line
        data = self._data
        for line in lines:
            if not line:
                # Empty line: dispatch the event.
                if data:
                    self.last_event_id = self._id_buffer
                    out.append((self._event_type or "message", "\n".join(data), self._id_buffer))
                    self.events_dispatched += 1
                    data.clear()
                    self._data_len = 0
                else:
                    # "If the data buffer is an empty string, set the data buffer and the event
                    # type buffer to the empty string and return." The ID string is still set.
                    self.last_event_id = self._id_buffer
                self._event_type = ""
                continue
            if len(line) > max_line:
                self.failure = Failure(Outcome.BUFFER_LIMIT, "line")
                return
            if line[0] == ":":
                self.comment_lines += 1
                continue
            if line.startswith("data:"):
                # Fast path for the overwhelmingly common field.
                value = line[6:] if line[5:6] == " " else line[5:]
            else:
                # The field name is everything before the first colon (the whole line if there is
                # none, with an empty value); one leading space is removed from the value.
                name, _, value = line.partition(":")
                if value.startswith(" "):
                    value = value[1:]
                if name != "data":
                    self._field(name, value, out)
                    continue
            self._data_len += len(value) + 1
            if self._data_len > self._max_event:
                self.failure = Failure(Outcome.BUFFER_LIMIT, "event")
                return
            data.append(value)

    def _field(self, name: str, value: str, out: list[TupleItem]) -> None:
        if name == "event":
            self._event_type = value
        elif name == "id":
            # "If the field value does not contain U+0000 NULL, then set the last event ID buffer
            # to the field value. Otherwise, ignore the field."
            if "\x00" in value:
                self.ids_ignored += 1
            else:
                self._id_buffer = value
        elif name == "retry":
            # "If the field value consists of only ASCII digits, then interpret the field value as
            # an integer in base ten ... Otherwise, ignore the field." (str.isdigit and int()
            # accept far more; the length cap keeps int() away from its 4300-digit refusal.)
            if value and len(value) <= MAX_RETRY_DIGITS and _ASCII_DIGITS.issuperset(value):
                self.retry = int(value)
                out.append(RetryField(self.retry))
            else:
                self.retries_rejected += 1
        else:
            # "Otherwise: The field is ignored." (names are compared literally: "Data" is unknown)
            self.unknown_fields += 1
