"""Layers 1 + 2 composed: response bytes in, complete SSE events out.

``EventStreamParser`` owns exactly one :class:`~webclient.UTF8Decoder` and one
:class:`~webclient.SSEParser` for the life of one response, so neither a split character nor a
split line can depend on where the transport cut the bytes. It is the single place where the two
layers' failures are ordered: the text decoded before an invalid byte is parsed first (it may
itself trip a ceiling, which then wins, being earlier in the stream), and only then is the decode
failure recorded. The first failure in stream order is final.
"""

from __future__ import annotations

from ._errors import UsageError
from ._events import SSEItem, TupleItem, as_events
from ._limits import DEFAULT_LIMITS, Limits
from ._outcome import Failure
from ._sse import SSEParser
from ._utf8 import UTF8Decoder, Utf8Errors

_CR = 0x0D


class EventStreamParser:
    """``feed(bytes) -> list[SSEEvent | RetryField]`` and ``close() -> list[...]`` for one response;
    ``feed_tuples`` / ``close_tuples`` give the same events as the plain tuples the parser builds
    (``webclient._events``, "Event tuples"), as the session consumes them.

    Never raises for bad input; :attr:`failure` holds the first ``decode_error`` or
    ``buffer_limit``. ``feed`` after ``close()`` or after a failure raises ``UsageError``.
    """

    __slots__ = ("_closed", "chunk_count", "decoder", "failure", "parser")

    def __init__(self, limits: Limits = DEFAULT_LIMITS, utf8_errors: Utf8Errors = "strict") -> None:
        #: The persistent decoder (layer 1).
        self.decoder = UTF8Decoder(utf8_errors)
        #: The persistent SSE parser (layer 2).
        self.parser = SSEParser(limits)
        #: Non-empty transport chunks fed so far.
        self.chunk_count = 0
        #: The first failure in stream order, else ``None``.
        self.failure: Failure | None = None
        self._closed = False

    def feed(self, data: bytes) -> list[SSEItem]:
        """Feed one transport chunk; return the events it completes, in stream order."""
        return as_events(self.feed_tuples(data))

    def feed_tuples(self, data: bytes) -> list[TupleItem]:
        """:meth:`feed`, with each event as a plain ``(type, data, last_event_id)`` tuple."""
        if self._closed or self.failure is not None:
            raise UsageError("feed() after close() or after a failure")
        if not data:
            return []
        self.chunk_count += 1
        decoder = self.decoder
        if not decoder._pending and data[-1] < 0x80:
            # The usual chunk: nothing held from the last one and no character cut at its end (its
            # last byte is ASCII), so it decodes whole, exactly as the decoder's incremental step
            # would decode it, without that step's frame. (An invalid byte: that step records it; a
            # buffer without ``decode``, a memoryview: that step reads it.)
            try:
                text = data.decode("utf-8", decoder.errors)
            except (UnicodeDecodeError, AttributeError):
                pass
            else:
                decoder.bytes_received += len(data)
                decoder.chars_decoded += len(text)
                parser = self.parser
                items = parser._feed(text, _CR in data)
                if parser.failure is not None:
                    self.failure = parser.failure
                return items
        text = decoder.feed(data)
        if text:
            # The parser's own checks are this object's (it is closed and fails with it), and a CR
            # is in the text exactly when it is in the bytes (ASCII never sits inside a multi-byte
            # sequence; a strict-mode failure only cuts text, which at worst makes this too true).
            # (``13 in data`` is a memchr; ``b"\r" in data`` first tries the needle as an integer.)
            parser = self.parser
            items = parser._feed(text, _CR in data)
            if parser.failure is not None:
                # A ceiling tripped in text before any invalid byte: it is earlier in the stream.
                self.failure = parser.failure
                return items
        else:
            items = []
        if decoder.failure is not None:
            self.failure = decoder.failure
        return items

    def close(self) -> list[SSEItem]:
        """Signal EOF: flush the decoder (a cut character becomes U+FFFD in replace mode, which
        can only land in a line that is then discarded) and close the parser. Returns ``[]`` in
        practice, since nothing dispatches at EOF, but callers should treat it like ``feed``."""
        return as_events(self.close_tuples())

    def close_tuples(self) -> list[TupleItem]:
        """:meth:`close`, with each event as a plain tuple (as :meth:`feed_tuples`)."""
        if self._closed:
            raise UsageError("close() called twice")
        self._closed = True
        if self.failure is not None:
            return []
        items: list[TupleItem] = []
        text = self.decoder.close()
        if text:
            items = self.parser.feed_tuples(text)
            self.failure = self.parser.failure
        self.parser.close()
        return items

    # -- state the session and telemetry read --------------------------------------------------

    @property
    def bytes_received(self) -> int:
        """Bytes fed so far."""
        return self.decoder.bytes_received

    @property
    def chars_decoded(self) -> int:
        """Characters the decoder produced so far."""
        return self.decoder.chars_decoded

    @property
    def events_dispatched(self) -> int:
        """Complete SSE events dispatched so far."""
        return self.parser.events_dispatched

    @property
    def pending_bytes(self) -> int:
        """Bytes of an unfinished UTF-8 character (before close), or whether one was cut (after)."""
        if self._closed:
            return int(self.decoder.cut_inside_character)
        return self.decoder.pending_bytes

    @property
    def pending_line_chars(self) -> int:
        """Characters of the unfinished line."""
        return self.parser.pending_line_chars

    @property
    def pending_event_chars(self) -> int:
        """Characters in the data buffer of the undispatched event."""
        return self.parser.pending_event_chars

    @property
    def ended_cleanly(self) -> bool:
        """After ``close()``: no decoder bytes, no partial line and no pending event were left."""
        return (
            self._closed
            and not self.decoder.cut_inside_character
            and self.parser.pending_line_chars == 0
            and not self.parser.has_pending_event
        )
