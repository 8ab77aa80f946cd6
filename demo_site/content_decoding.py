"""Undo the upstream's ``Content-Encoding`` so that the key filter (:mod:`demo_site.redact`) sees plain bytes.

The proxy asks the upstream for ``Accept-Encoding: identity``. An upstream that compresses anyway would carry an
echoed key inside compressed bytes, where no byte filter can find it, so the proxy decodes the body itself and
hands the page the plain bytes (without ``Content-Encoding``): exactly what the browser would have decoded, minus
the key.

* :func:`parse_content_encoding` reads the header's values (one or more lines, comma-separated lists) into the
  codings to undo. ``gzip``/``x-gzip`` and ``deflate`` are decoded, in any chain of at most :data:`MAX_CODINGS`;
  ``identity`` tokens and empty list elements are no-ops. Anything else (``br``, ``zstd``, ``compress``, an
  unknown token) is :class:`UnsupportedEncoding`: the stdlib cannot decode it, so the page gets a ``502`` and the
  body is never read.
* ``deflate`` is zlib-wrapped (RFC 1950) or, as some servers send it and browsers accept it, raw (RFC 1951). The
  first two bytes decide, by the same header check zlib makes (compression method 8, a window of at most 32 KiB,
  the check bits): a valid zlib header means zlib, anything else raw deflate.
* :class:`BodyDecoder` decodes incrementally with :func:`zlib.decompressobj`, one chunk at a time as the
  upstream delivers it, never the whole body. Every buffer is bounded: each decoder call produces at most
  :data:`DECODE_STEP_BYTES` (``max_length``; the input it did not get to waits in ``unconsumed_tail``, which is
  never longer than the chunk fed), the pieces are generated one at a time so the proxy writes (and waits for the
  page's socket) before the next is made, a chain holds one inflater per coding, and the decoded bytes of one
  response are capped (``max_decoded_bytes``, :data:`demo_site.guards.MAX_DECODED_BODY_BYTES`): every layer's
  output counts, so a chain cannot hide a bomb in an inner layer.
* The compressed stream must be exactly one complete stream per coding: a bad header, bad data, a body that ends
  before the stream does, or any byte after its end (trailing garbage, a second gzip member) is
  :class:`CorruptBody`. Only an empty body (no byte at all) decodes to an empty body: it cannot hide anything.

Errors (their messages are fixed text, never a header value or a payload byte)::

    DecodeFailure                base, never raised directly
    ├── UnsupportedEncoding      the header names a coding (or a chain) this module does not decode
    ├── CorruptBody              the compressed bytes are not one complete, valid stream per coding
    └── DecodedBodyTooLarge      the decoded bytes passed the ceiling

The first is raised by :func:`parse_content_encoding`, before the body; the other two by the generators of
:meth:`BodyDecoder.feed` and :meth:`BodyDecoder.end`, after the pieces decoded before the failure.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from typing import Final

#: The most bytes one decoder call produces (zlib's ``max_length``). A deflate stream expands at most about
#: 1032:1, so without it one 64 KiB chunk of zeros becomes 64 MiB at once; with it a piece is never larger
#: than aiohttp's own read chunk (``2**16``), and is written to the page before the next one is made.
DECODE_STEP_BYTES: Final = 64 * 1024
#: The longest chain of codings decoded (``gzip, gzip`` is 2). Each holds an inflater (a 32 KiB window and
#: ~7 KiB of state) and a piece in flight; real servers apply one, a proxy in between may add a second, and
#: browsers put no number on it, so the cap bounds memory without refusing anything seen in practice.
MAX_CODINGS: Final = 4
#: Content codings this module decodes (lower case), and the ``identity`` no-op.
DECODED_CODINGS: Final = frozenset({"gzip", "x-gzip", "deflate"})
IDENTITY: Final = "identity"

_GZIP_WBITS: Final = 16 + zlib.MAX_WBITS  # a gzip header and trailer, nothing else
_ZLIB_WBITS: Final = zlib.MAX_WBITS  # a zlib header and trailer
_RAW_WBITS: Final = -zlib.MAX_WBITS  # no header, no trailer


class DecodeFailure(Exception):
    """Base of this module's errors; never raised directly."""


class UnsupportedEncoding(DecodeFailure):
    """The header names a coding the stdlib cannot decode, or a chain longer than :data:`MAX_CODINGS`."""


class CorruptBody(DecodeFailure):
    """The compressed bytes are not one complete, valid stream per coding."""


class DecodedBodyTooLarge(DecodeFailure):
    """The decoded bytes of one response passed the ceiling."""


def parse_content_encoding(values: Iterable[str]) -> tuple[str, ...]:
    """The codings named by the ``Content-Encoding`` header lines ``values``, in the order they were applied
    (lower case, ``identity`` and empty elements dropped); ``()`` means the body is not encoded.

    Raises :class:`UnsupportedEncoding` for a coding outside :data:`DECODED_CODINGS` or more than
    :data:`MAX_CODINGS` of them (the message never repeats the value).
    """
    codings = tuple(token for value in values for raw in value.split(",")
                    if (token := raw.strip().lower()) and token != IDENTITY)
    if any(coding not in DECODED_CODINGS for coding in codings):
        raise UnsupportedEncoding("the content encoding is not one the proxy decodes")
    if len(codings) > MAX_CODINGS:
        raise UnsupportedEncoding("the chain of content encodings is too long")
    return codings


def _is_zlib_header(head: bytes) -> bool:
    """Whether two bytes pass zlib's header check: method 8 (deflate), window at most 32 KiB, check bits."""
    cmf, flg = head[0], head[1]
    return cmf & 0x0F == 8 and cmf >> 4 <= 7 and ((cmf << 8) | flg) % 31 == 0


class _Inflater:
    """One coding's decoder: ``feed`` and ``end`` generate decoded pieces of at most ``step`` bytes."""

    __slots__ = ("_head", "_obj", "_seen_input", "_step")

    def __init__(self, coding: str, step: int) -> None:
        # deflate waits for two bytes to tell zlib from raw; gzip knows its format now.
        self._obj = None if coding == "deflate" else zlib.decompressobj(_GZIP_WBITS)
        self._head = b""
        self._seen_input = False
        self._step = step

    def feed(self, data: bytes) -> Iterator[bytes]:
        if not data:
            return
        self._seen_input = True
        if self._obj is None:
            data = self._head + data
            if len(data) < 2:
                self._head = data  # (at most one byte)
                return
            self._head = b""
            self._obj = zlib.decompressobj(_ZLIB_WBITS if _is_zlib_header(data) else _RAW_WBITS)
        obj, step = self._obj, self._step
        try:
            while True:
                out = obj.decompress(data, step)
                data = obj.unconsumed_tail
                if out:
                    yield out
                if obj.unused_data:  # (after the end, zlib puts every byte fed here)
                    raise CorruptBody("bytes after the end of the compressed stream")
                # A full piece can leave output inside zlib (a match cut short) with all input taken: ask again,
                # so nothing the input so far decodes to waits for the next chunk.
                if not data and (len(out) < step or obj.eof):
                    return
        except zlib.error:
            raise CorruptBody("the compressed data is not valid") from None

    def end(self) -> Iterator[bytes]:
        """The rest of the output once the input is over; :class:`CorruptBody` unless the stream ended."""
        if not self._seen_input:
            return
        if self._obj is None:
            raise CorruptBody("the compressed stream ended before its header")
        obj = self._obj
        try:
            while not obj.eof:
                out = obj.decompress(b"", self._step)
                if not out:
                    raise CorruptBody("the compressed stream ended before its end")
                yield out
        except zlib.error:
            raise CorruptBody("the compressed data is not valid") from None


class BodyDecoder:
    """Decodes a body encoded with ``codings`` (header order, as :func:`parse_content_encoding` returns them).

    ``feed(chunk)`` and, once the body is over, ``end()`` are generators of decoded pieces (each at most ``step``
    bytes, :data:`DECODE_STEP_BYTES`; tests shrink it). After ``feed``, everything the input so far decodes to has
    been generated. When the pieces would pass ``max_decoded_bytes`` in total (every layer's output counts), the
    last piece is cut to the ceiling and :class:`DecodedBodyTooLarge` follows it; corrupt input raises
    :class:`CorruptBody` after the pieces decoded before it. Either failure ends the body: the caller stops
    feeding.

    One call at a time, in order: ``feed`` or ``end`` while the pieces of the last call are not all taken, or
    after ``end``, or after a failure, is a caller bug (``RuntimeError``, nothing decoded): the inflaters' state
    then no longer follows the body, and their output would be bytes the upstream never sent.
    """

    __slots__ = ("_decoded", "_layers", "_max", "_state")

    def __init__(self, codings: Iterable[str], max_decoded_bytes: int, *, step: int = DECODE_STEP_BYTES) -> None:
        if max_decoded_bytes < 1 or step < 1:
            raise ValueError("the decoded-bytes ceiling and the step must be positive")
        # The last coding applied is the first undone.
        self._layers = [_Inflater(coding, step) for coding in reversed(tuple(codings))]
        if not self._layers:
            raise ValueError("a body decoder needs at least one coding")
        self._max = max_decoded_bytes
        self._decoded = 0
        # "open" (a call may come), "busy" (the last call's pieces are being taken), "ended", "failed".
        self._state = "open"

    @property
    def decoded(self) -> int:
        """The bytes decoded so far, every layer counted."""
        return self._decoded

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """The decoded pieces of ``chunk`` (the next bytes of the encoded body)."""
        self._enter("feed")
        return self._settled(self._through(0, chunk), "open")

    def end(self) -> Iterator[bytes]:
        """The last decoded pieces; :class:`CorruptBody` if any coding's stream is incomplete."""
        self._enter("end")
        return self._settled(self._ending(), "ended")

    def _enter(self, call: str) -> None:
        if self._state != "open":
            raise RuntimeError(f"BodyDecoder.{call}() while {self._state}: one call at a time, none after end "
                               "or a failure")
        self._state = "busy"

    def _settled(self, pieces: Iterator[bytes], after: str) -> Iterator[bytes]:
        """``pieces``; once all are taken the decoder is ``after``, and ``failed`` if they raised."""
        try:
            yield from pieces
        except DecodeFailure:
            self._state = "failed"
            raise
        self._state = after

    def _ending(self) -> Iterator[bytes]:
        for index, layer in enumerate(self._layers):
            yield from self._charged(index, layer.end())

    def _through(self, index: int, data: bytes) -> Iterator[bytes]:
        """``data`` fed to layer ``index``, its output on through the later layers."""
        return self._charged(index, self._layers[index].feed(data))

    def _charged(self, index: int, pieces: Iterator[bytes]) -> Iterator[bytes]:
        """Layer ``index``'s ``pieces`` counted against the ceiling and passed on to the next layer."""
        last = index == len(self._layers) - 1
        for piece in pieces:
            room = self._max - self._decoded
            if len(piece) > room:
                self._decoded = self._max
                if last and room:
                    yield piece[:room]
                raise DecodedBodyTooLarge("the decoded body passed the ceiling")
            self._decoded += len(piece)
            if last:
                yield piece
            else:
                yield from self._through(index + 1, piece)
