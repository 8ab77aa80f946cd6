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
    The parser keeps a *separator*: a blank line followed by the *prefix* of an event of one
    type, ``"\n\ndata: "`` (data-only streams: Chat, Gemini) or ``"\n\nevent: NAME\ndata: "``
    (typed streams: Anthropic, Responses; the CRLF form for CRLF-framed text), and splits each
    feed on it with one ``str.split``. A separator cannot overlap itself (no proper prefix of it is
    also a suffix), so the split is unambiguous, and every part between two separators that holds
    no line break is the value of one complete event of the separator's type: the block
    ``PREFIX + part`` starts with an empty event state (the separator's blank line dispatched the
    event before) and ends at the next separator's blank line. One join and one search prove that
    no part holds a line break; the feed's events are then built without reading a single line.
    The first part ends the pending event: the pending line plus the first part must be the rest
    of an event of the separator's type with an empty data buffer (``_rest_of_event``; usually the
    pending data value, ``_data_tail``, plus the rest of it). The last part is the next event's
    value so far, or that value, a blank line and the start of the next prefix.
    Any other feed goes through the general path: the pending line is finished with the text up
    to the first line feed (``_finish_line``), and the rest is read block by block (``_general``),
    where a block that is one data line, alone or after one event line, is dispatched as such and
    anything else is interpreted line by line by the spec's algorithm (``_process``).
    The separator follows the stream: when the general path leaves a data line pending that began
    an event, the separator becomes that event's prefix, so a typed stream switches separators
    where its event names change. The speed-up changes no result: the property tests compare every
    shape with a naive oracle under every chunking, and test the invariants it relies on.

Pending state
    A partial line is kept as a list of fragments with a running length and joined once, when its
    terminator arrives (eventsource-parser's fix for O(N²) re-joining). A ``data:`` line that
    began an event (empty data buffer) is kept as its *value* only: as one string in the steady
    state (``_data_tail``), as fragments when it grows over several feeds (``_tail_is_data``), so
    that a multi-megabyte line is joined once and never re-sliced. Invariant: while a value is
    pending, the data buffer is empty and the event type is the separator's type (a value is only
    held where both hold), so the event it completes has the separator's type.

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
from ._events import RetryField, SSEEvent, SSEItem
from ._limits import DEFAULT_LIMITS, MAX_RETRY_DIGITS, Limits
from ._outcome import Failure, Outcome

# ``tuple.__new__`` directly: NamedTuple's ``_make`` adds a Python-level frame per event.
_tuple_new = tuple.__new__
_ASCII_DIGITS = frozenset("0123456789")



class SSEParser:
    """Incremental WHATWG SSE parser: ``feed(text) -> list[SSEEvent | RetryField]``, ``close()``.

    One instance per response. It never raises for bad input: a ceiling trip sets :attr:`failure`
    and ends consumption. ``feed`` after :meth:`close` or after a failure raises
    :class:`~webclient.UsageError`.
    """

    __slots__ = (
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
        # The steady state's separator (see ``_use_prefix``).
        self._use_prefix("")
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
        if self._closed or self.failure is not None:
            raise UsageError("feed() after close() or after a buffer_limit failure")
        if not text:
            return []
        return self._feed(text, "\r" in text)

    def _feed(self, text: str, crlf: bool) -> list[SSEItem]:
        # ``feed`` for text that is not empty, with ``crlf`` telling whether it holds a CR (the
        # pipeline finds that out on the bytes, faster); the caller has checked the state.
        if self._strip_next:
            if text[0] == self._strip_next:
                text = text[1:]
            self._strip_next = ""
        # CRLF-framed text (Gemini) is split on the CRLF form of the separator.
        parts = text.split(self._separator_crlf if crlf else self._separator)
        if len(parts) > 1:
            # The steady state (see the module docstring): the pending line plus the first part is
            # the rest of one event of the separator's type, each later part but the last is the
            # value of one more, and the last one is the value of the next event's data line so far.
            value = self._data_tail
            first = value + parts[0] if value is not None else self._rest_of_event(parts[0])
            if first is not None:
                tail = parts.pop()
                parts[0] = first
                joined = "".join(parts)
                if ("\n" not in joined and not (crlf and ("\r" in joined or "\r" in tail or "\n" in tail))
                        and len(joined) + len(tail) <= self._fast_cap):
                    # No line break but the separators' own, and no value near a ceiling.
                    self.work += len(text) + len(first)
                    if value is None:  # the event began in the pending line
                        self._line_parts = []
                        self._line_len = 0
                        self._event_type = self._prefix_type
                    id_buffer = self._id_buffer
                    event_type = self._fast_type
                    out: list[SSEItem] = []
                    append, new, cls = out.append, _tuple_new, SSEEvent
                    for value in parts:
                        append(new(cls, (event_type, value, id_buffer)))
                    self.events_dispatched += len(parts)
                    self.last_event_id = id_buffer
                    if "\n" not in tail:
                        self._data_tail = tail
                        return out
                    # The last part ends its event too, and starts another.
                    self._data_tail = None
                    self._event_type = ""
                    end = tail.find("\n")
                    rest = tail[end + 2 :]
                    if tail.startswith("\n", end + 1) and self._prefix.startswith(rest):
                        # ... and the start of the next one's prefix (not all of it: the separator
                        # would have split there): "<value>\n\n<start of prefix>".
                        append(_tuple_new(SSEEvent, (event_type, tail[:end], id_buffer)))
                        self.events_dispatched += 1
                        if "\n" in rest:  # the next event's "event:" line is complete
                            self._event_type = self._prefix_type
                            rest = rest[rest.index("\n") + 1 :]
                        self._line_parts = [rest]
                        self._line_len = len(rest)
                    else:
                        self._general(self._prefix + tail, out)
                    return out
        if crlf:
            if text[-1] == "\r":
                self._strip_next = "\n"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        self.work += len(text)
        out = []
        if "\n" not in text:
            # No line break: the pending line only grows (a long line spanning many feeds).
            self._hold(text)
            return out
        # The general path: finish the pending line, then the rest block by block.
        rest = self._finish_line(text, out)
        if self.failure is None:
            self._general(rest, out)
        return out

    def _rest_of_event(self, head: str) -> str | None:
        """If the pending partial line followed by ``head`` is the rest of an event of the
        separator's type begun with an empty data buffer (``data: `` after its event line, or the
        whole prefix at a block start) followed by a value, return the value, else ``None``."""
        if self._data or self._tail_is_data:
            return None
        if self._event_type == self._prefix_type:
            expected = "data: "
        elif not self._event_type:
            expected = self._prefix
        else:
            return None
        line = "".join(self._line_parts) + head
        # (A line break after ``expected`` would be in the value, which the caller refuses.)
        return line[len(expected) :] if line.startswith(expected) else None

    def _finish_line(self, text: str, out: list[SSEItem]) -> str:
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

    def _general(self, text: str, out: list[SSEItem]) -> None:
        """Interpret ``text``, which starts at a line start (nothing pending), block by block; hold
        its unfinished last line."""
        # Every block after the first starts with an empty event state (the blank line before
        # it dispatched), and so may the first: a block that is one data line, alone or after
        # one event line, is then dispatched as it is; anything else is interpreted line by line.
        blocks = text.split("\n\n")
        last = blocks.pop()
        cap = self._fast_cap
        max_line = self._max_line
        append = out.append
        fresh = not self._data and not self._event_type
        for block in blocks:
            if fresh:
                if block.startswith("event: "):
                    eol = block.find("\n")
                    # No line over the ceiling: the event line (``eol`` characters) and the data line.
                    if (block.startswith("data: ", eol + 1) and block.count("\n") == 1 and eol <= max_line
                            and len(block) - eol - 7 <= cap):
                        self.last_event_id = self._id_buffer
                        append(_tuple_new(SSEEvent, (block[7:eol] or "message", block[eol + 7 :], self._id_buffer)))
                        self.events_dispatched += 1
                        continue
                elif block.startswith("data: ") and "\n" not in block and len(block) - 6 <= cap:
                    self.last_event_id = self._id_buffer
                    append(_tuple_new(SSEEvent, ("message", block[6:], self._id_buffer)))
                    self.events_dispatched += 1
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
            # Held as its value (see "Pending state"); the separator follows this event's type.
            if self._event_type != self._prefix_type:
                self._use_prefix(self._event_type)
            self._data_tail = partial[6:]
            if len(partial) > self._max_line:
                self._trip_line()
        elif partial:
            self._hold(partial)

    def _use_prefix(self, event_type: str) -> None:
        """Make the separator a blank line followed by the first line(s) of an event of this
        type: ``event: <type>`` and ``data: ``, or ``data: `` alone when the type is empty."""
        self._prefix_type = event_type
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

    def _process(self, lines: list[str], out: list[SSEItem]) -> None:
        self.lines_interpreted += len(lines)
        max_line = self._max_line
        data = self._data
        append = out.append
        for line in lines:
            if not line:
                # Empty line: dispatch the event.
                if data:
                    self.last_event_id = self._id_buffer
                    append(_tuple_new(SSEEvent, (self._event_type or "message", "\n".join(data), self._id_buffer)))
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

    def _field(self, name: str, value: str, out: list[SSEItem]) -> None:
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
