"""Layer 1: one persistent incremental UTF-8 decoder per response.

A network read is a transport chunk, not a unit of text: a multi-byte character may be split
across reads. One decoder instance lives as long as the response and carries the unfinished bytes
from one ``feed`` to the next, so a split character decodes exactly as if it had arrived whole.

Two error modes:

``"strict"`` (default)
    The first invalid byte ends the stream as ``decode_error``. ``feed`` returns the valid text
    before it (so the layers above see exactly the text preceding the fault, whatever the
    chunking) and records a :class:`~webclient.Failure` with the stream byte offset of the
    invalid sequence. No content appears in the failure.
``"replace"``
    The WHATWG "UTF-8 decode": each maximal invalid subpart becomes U+FFFD; never fatal.

The BOM is *not* handled here: it is a property of the event stream (stripped once, at stream
start, by the SSE parser), and leaving it to the parser keeps this layer's byte and character
counts exact.

At ``close()`` unfinished bytes mean the stream was cut inside a character: ``cut_inside_character``
reports it (the session classifies that as ``truncated``). In ``"replace"`` mode ``close()``
returns U+FFFD for them, as WHATWG does.
"""

from __future__ import annotations

import codecs
from typing import Literal

from ._errors import UsageError
from ._outcome import Failure, Outcome

Utf8Errors = Literal["strict", "replace"]

_utf_8_decode = codecs.utf_8_decode


class UTF8Decoder:
    """Incremental UTF-8 decoder with exact byte accounting.

    ``feed(data) -> str`` and ``close() -> str``; after a strict-mode failure or ``close()``,
    further calls raise :class:`~webclient.UsageError`.
    """

    __slots__ = (
        "_closed",
        "_pending",
        "bytes_received",
        "chars_decoded",
        "cut_inside_character",
        "errors",
        "failure",
    )

    def __init__(self, errors: Utf8Errors = "strict") -> None:
        if errors not in ("strict", "replace"):
            raise UsageError("errors must be 'strict' or 'replace'")
        #: The error mode this decoder was built with.
        self.errors: Utf8Errors = errors
        # The codec's own incremental wrapper is a Python frame per call; holding the unfinished
        # bytes here and calling the C ``utf_8_decode`` directly does the same job with exact
        # byte accounting.
        self._pending = b""
        self._closed = False
        #: Total bytes passed to ``feed``.
        self.bytes_received = 0
        #: Total characters returned so far.
        self.chars_decoded = 0
        #: Set at ``close()`` when bytes of an unfinished character were pending.
        self.cut_inside_character = False
        #: The ``decode_error`` failure (strict mode only), else ``None``.
        self.failure: Failure | None = None

    @property
    def pending_bytes(self) -> int:
        """Bytes of an unfinished character held for the next ``feed`` (0 to 3)."""
        return len(self._pending)

    def feed(self, data: bytes) -> str:
        """Decode one transport chunk; return the text it completes (possibly ``""``).

        In strict mode an invalid sequence makes this return the valid text before it and sets
        :attr:`failure`; the decoder is then finished.
        """
        if self._closed or self.failure is not None:
            raise UsageError("feed() after close() or after a decode failure")
        pending = self._pending
        buffered = pending + data if pending else data
        try:
            text, consumed = _utf_8_decode(buffered, self.errors, False)
        except UnicodeDecodeError as exc:
            text = self._fail(exc, buffered, len(data))
        else:
            if consumed != len(buffered):
                # (A copy: ``data`` may be a caller's buffer, which can change, and a memoryview
                # cannot be joined to the next chunk.)
                self._pending = bytes(buffered[consumed:])
            elif pending:
                self._pending = b""
        self.bytes_received += len(data)
        self.chars_decoded += len(text)
        return text

    def close(self) -> str:
        """Signal EOF. Returns what the final flush produces (U+FFFD for a cut character in
        replace mode, ``""`` otherwise) and sets :attr:`cut_inside_character`."""
        if self._closed:
            raise UsageError("close() called twice")
        self._closed = True
        pending = self._pending  # empty after a failure (see ``_fail``)
        self.cut_inside_character = bool(pending)
        if not pending or self.errors == "strict":
            return ""
        text = _utf_8_decode(pending, "replace", True)[0]
        self.chars_decoded += len(text)
        return text

    def _fail(self, exc: UnicodeDecodeError, buffered: bytes, chunk_len: int) -> str:
        # ``buffered`` is the bytes held from earlier feeds followed by this chunk. Everything
        # before ``exc.start`` is valid UTF-8.
        self._pending = b""
        held = len(buffered) - chunk_len
        stream_offset = self.bytes_received - held + exc.start
        self.failure = Failure(Outcome.DECODE_ERROR, "utf8", stream_offset)
        return bytes(buffered[: exc.start]).decode("utf-8")
