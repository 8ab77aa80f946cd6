"""Layer 2: the WHATWG event-stream parser, text in, events out.

This is the HTML Living Standard's "Parsing an event stream" and "Interpreting an event stream"
(§9.2.5-9.2.6), implemented literally, with two additions: ceilings on the two buffered surfaces
(the pending partial line and the pending event's data buffer), and counters for what it ignored.

Line splitting
    Lines end at CRLF, a lone LF or a lone CR. A CR that ends one ``feed`` already terminates its
    line (spec: "block buffering ... can cause delays in event dispatch"); the parser only
    remembers to swallow one LF if the next ``feed`` starts with it. Within one ``feed`` the text
    is normalised to LF with two C-level ``str.replace`` calls, which is exact: ``\\r\\n`` pairs
    are fully visible inside the chunk and a lone CR maps to LF. ``str.splitlines`` is never used:
    U+2028, U+0085, VT and FF are ordinary data characters.

Linear time
    A partial line is kept as a list of fragments with a running length and joined once, when its
    terminator arrives (eventsource-parser's fix for O(N²) re-joining), and only with the text up
    to the first ``"\n\ndata: "`` of that feed, not with all of it. ``work`` counts the
    characters the parser has scanned and joined so tests can prove it stays linear.

Ceilings (checked so the trip point never depends on chunking)
    ``max_line_chars``: every complete line is checked before it is interpreted, and the pending
    partial line after each ``feed``. A line longer than the ceiling trips whether it arrives whole
    or one character at a time, because its prefix grows past the ceiling either way.
    ``max_event_chars``: the data buffer (values plus their LFs) after each ``data`` line.
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
_FAST_SEPARATOR = "\n\ndata: "


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
        "_id_buffer",
        "_line_len",
        "_line_parts",
        "_max_event",
        "_max_line",
        "_strip_next",
        "comment_lines",
        "events_dispatched",
        "failure",
        "ids_ignored",
        "last_event_id",
        "retries_rejected",
        "retry",
        "unknown_fields",
        "work",
    )

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self._max_line = limits.max_line_chars
        self._max_event = limits.max_event_chars
        # Longest value the fast path may emit without a per-line ceiling check: the line is
        # "data: " + value (line ceiling) and the data buffer is value + LF (event ceiling).
        self._fast_cap = min(limits.max_line_chars - 6, limits.max_event_chars - 1)
        self._closed = False
        # The character the next non-empty text drops if it starts with it, else "". At stream
        # start a BOM ("strips one leading BOM"; an empty first feed does not spend it); after a
        # feed that ended with CR, an LF (that CR already ended its line). They never overlap:
        # a feed can end with CR only after the first non-empty text.
        self._strip_next = "\ufeff"
        # Pending partial line as fragments (joined once at its terminator) and its length.
        self._line_parts: list[str] = []
        self._line_len = 0
        # Or, when the fast path left it, the pending line as just the value of a "data: "
        # line begun with an empty event state (then there are no fragments, ``_line_len`` is 0
        # and the line's length is 6 + len(value)). The next feed that ends the line makes it
        # the first candidate value without re-joining or re-checking the prefix.
        self._data_tail: str | None = None
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
        if self._strip_next:
            if text[0] == self._strip_next:
                text = text[1:]
            self._strip_next = ""
        self.work += len(text)
        if "\r" in text:
            if text[-1] == "\r":
                self._strip_next = "\n"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        # Fast path for the shape LLM streams use, one-line ``data: `` events. Splitting on
        # "\n\ndata: " yields the event values directly: every part but the first and the last
        # is a value that a blank line already ended. The first part completes whatever was
        # pending; the last one starts the next event. The pending partial line never holds a
        # line break, so no separator can straddle it and the text: only the first part needs
        # joining with it. This changes speed only, never the result (the property tests
        # compare with a naive oracle).
        parts = text.split(_FAST_SEPARATOR)
        out: list[SSEItem] = []
        pending_value = self._data_tail
        if pending_value is not None and len(parts) > 1:
            # The pending line is "data: " + pending_value with an empty event state, and the
            # first part ends it: together they are the first candidate value.
            self._data_tail = None
            parts[0] = pending_value + parts[0]
            self.work += len(parts[0])
        else:
            if len(parts) == 1 and "\n" not in text:
                return self._hold(text)
            if pending_value is not None:
                self._unpack_data_tail(pending_value)
            if self._line_parts:
                self._line_parts.append(parts[0])
                parts[0] = "".join(self._line_parts)
                self.work += len(parts[0])
                self._line_parts = []
                self._line_len = 0
            head = parts[0]
            if len(parts) == 1:
                self._general(head, out)
                return out
            if head[:6] == "data: " and not self._data and not self._event_type:
                # The first candidate value, checked with the others below.
                parts[0] = head[6:]
            else:
                lines = head.split("\n")
                lines.append("")
                self._process(lines, out)
                if self.failure is not None:
                    return out
                del parts[0]
        tail = parts.pop()
        if parts:
            # Each candidate value was followed by a blank line; it is one complete ``data`` line
            # (and so one event) when it holds no LF. One C-level join + memchr proves that for
            # all of them, and bounds them by the ceilings.
            joined = "".join(parts)
            cap = self._fast_cap
            if "\n" not in joined and (len(joined) <= cap or max(map(len, parts)) <= cap):
                id_buffer = self._id_buffer
                append = out.append
                for value in parts:
                    append(_tuple_new(SSEEvent, ("message", value, id_buffer)))
                self.events_dispatched += len(parts)
                self.last_event_id = id_buffer
            else:
                # Each candidate is the rest of a "data: " line and its event, up to a blank
                # line: interpreted line by line, which is exact in any event state.
                for value in parts:
                    lines = ("data: " + value).split("\n")
                    lines.append("")
                    self._process(lines, out)
                    if self.failure is not None:
                        return out
        if "\n" in tail:
            self._general("data: " + tail, out)
        else:
            # The next event's first line, unfinished: held as its value (see ``_data_tail``).
            self._data_tail = tail
            if 6 + len(tail) > self._max_line:
                self._trip_line()
        return out

    def _general(self, text: str, out: list[SSEItem]) -> None:
        """Interpret ``text`` (LF-terminated lines, no pending partial line) block by block."""
        # Every block after the first starts with an empty event state (the blank line before
        # it dispatched), so a block that is one "data:" line is an event outright.
        blocks = text.split("\n\n")
        last = blocks.pop()
        lines: list[str]
        if blocks:
            cap = self._fast_cap
            id_buffer = self._id_buffer
            for i, block in enumerate(blocks):
                if i and block[:6] == "data: " and "\n" not in block and len(block) - 6 <= cap:
                    self.last_event_id = id_buffer
                    out.append(_tuple_new(SSEEvent, ("message", block[6:], id_buffer)))
                    self.events_dispatched += 1
                    continue
                lines = block.split("\n")
                lines.append("")
                self._process(lines, out)
                if self.failure is not None:
                    return
                id_buffer = self._id_buffer
        lines = last.split("\n")
        tail = lines.pop()
        if lines:
            self._process(lines, out)
            if self.failure is not None:
                return
        if tail:
            self._hold(tail)

    def _hold(self, fragment: str) -> list[SSEItem]:
        """Keep an unterminated line fragment; trip the line ceiling if the line outgrew it."""
        if self._data_tail is not None:
            self._unpack_data_tail(self._data_tail)
        self._line_parts.append(fragment)
        self._line_len += len(fragment)
        if self._line_len > self._max_line:
            self._trip_line()
        return []

    def _unpack_data_tail(self, value: str) -> None:
        # The pending line held as a "data: " value becomes ordinary fragments.
        self._line_parts = ["data: ", value]
        self._line_len = 6 + len(value)
        self._data_tail = None

    def _trip_line(self) -> None:
        # Drop the line the ceiling bounded: how far past the ceiling it got depends on the
        # chunking, and a trip must not.
        self._line_parts = []
        self._data_tail = None
        self._line_len = 0
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
                colon = line.find(":")
                if colon < 0:
                    name, value = line, ""
                else:
                    name = line[:colon]
                    value = line[colon + 2 :] if line[colon + 1 : colon + 2] == " " else line[colon + 1 :]
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
