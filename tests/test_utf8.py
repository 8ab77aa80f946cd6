"""Layer 1: the persistent UTF-8 decoder."""

from __future__ import annotations

import pytest

from tests.helpers import assert_chunking_invariant
from webclient import EventStreamParser, Failure, Outcome, UsageError, UTF8Decoder


def decode(chunks: list[bytes], errors: str = "strict") -> tuple[str, object, int, bool]:
    decoder = UTF8Decoder(errors)  # type: ignore[arg-type]
    parts = []
    for chunk in chunks:
        parts.append(decoder.feed(chunk))
        if decoder.failure is not None:
            break
    else:
        parts.append(decoder.close())
    return "".join(parts), decoder.failure, decoder.chars_decoded, decoder.cut_inside_character


SAMPLE = "héllo €uro 😀 — ☃ 中文 ".encode() * 3


def test_split_multibyte_characters_decode_as_if_whole_under_any_chunking() -> None:
    result = assert_chunking_invariant(decode, SAMPLE)
    assert result == (SAMPLE.decode(), None, len(SAMPLE.decode()), False)


def test_strict_mode_reports_the_stream_offset_of_the_first_invalid_byte() -> None:
    data = "ok €".encode() + b"\xff" + b"never seen"
    text, failure, _, _ = assert_chunking_invariant(decode, data)
    assert text == "ok €"
    assert failure is not None and failure.outcome is Outcome.DECODE_ERROR
    assert failure.stage == "utf8" and failure.offset == len("ok €".encode())


def test_strict_mode_offset_counts_bytes_held_from_an_earlier_chunk() -> None:
    decoder = UTF8Decoder()
    assert decoder.feed(b"ab\xe2\x82") == "ab"
    assert decoder.pending_bytes == 2
    assert decoder.feed(b"(") == ""
    assert decoder.failure is not None and decoder.failure.offset == 2


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b"\xed\xa0\x80", "\ufffd\ufffd\ufffd", id="surrogate-is-three-replacements"),
        pytest.param(b"a\xf0\x9f\x98b", "a\ufffdb", id="truncated-sequence-is-one-replacement"),
        pytest.param(b"\xe2\n", "\ufffd\n", id="replacement-never-swallows-ascii"),
        pytest.param(b"\xc0\xaf", "\ufffd\ufffd", id="overlong-encoding"),
    ],
)
def test_replace_mode_emits_whatwg_replacement_characters(data: bytes, expected: str) -> None:
    text, failure, _, _ = assert_chunking_invariant(lambda c: decode(c, "replace"), data)
    assert (text, failure) == (expected, None)


def test_a_character_cut_at_eof_is_reported_and_never_decoded_in_strict_mode() -> None:
    text, failure, _, cut = assert_chunking_invariant(decode, b"data: \xe2\x82")
    assert (text, failure, cut) == ("data: ", None, True)


def test_a_character_cut_at_eof_becomes_one_replacement_in_replace_mode() -> None:
    text, _, chars, cut = assert_chunking_invariant(lambda c: decode(c, "replace"), b"x\xf0\x9f")
    assert (text, chars, cut) == ("x\ufffd", 2, True)


def test_a_cut_is_reported_only_by_close() -> None:
    decoder = UTF8Decoder()
    assert decoder.cut_inside_character is False
    decoder.feed(b"\xe2\x82")
    assert decoder.cut_inside_character is False and decoder.pending_bytes == 2
    assert decoder.close() == ""
    assert decoder.cut_inside_character is True


def test_close_after_a_strict_failure_flushes_nothing() -> None:
    decoder = UTF8Decoder()
    assert decoder.feed(b"ok\xe2\x82\xff") == "ok"
    assert decoder.failure is not None
    assert decoder.close() == ""
    assert (decoder.cut_inside_character, decoder.pending_bytes, decoder.chars_decoded) == (False, 0, 2)


def test_the_bom_is_left_to_the_sse_layer() -> None:
    assert UTF8Decoder().feed(b"\xef\xbb\xbfdata") == "\ufeffdata"


def test_feed_after_close_or_failure_is_a_usage_error() -> None:
    decoder = UTF8Decoder()
    decoder.close()
    with pytest.raises(UsageError):
        decoder.feed(b"x")
    with pytest.raises(UsageError):
        decoder.close()
    failed = UTF8Decoder()
    failed.feed(b"\xff")
    with pytest.raises(UsageError):
        failed.feed(b"x")


def test_an_unknown_error_mode_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        UTF8Decoder("ignore")  # type: ignore[arg-type]



def _pipeline_counts(chunks: list[bytes]) -> tuple[Failure | None, int]:
    """Feed until the first failure; return the failure and the characters decoded. Every byte fed
    is counted, also in the chunk that failed."""
    stream = EventStreamParser()
    fed = 0
    for chunk in chunks:
        stream.feed(chunk)
        fed += len(chunk)
        if stream.failure is not None:
            break
    assert stream.bytes_received == fed
    return stream.failure, stream.chars_decoded


def test_the_pipeline_counts_a_failing_chunk_and_only_the_text_before_the_invalid_byte() -> None:
    data = "data: é€😀\n\n".encode() + b"data: x\xffy\n\n"
    failure, chars = assert_chunking_invariant(_pipeline_counts, data)
    assert failure is not None and failure.outcome is Outcome.DECODE_ERROR
    assert failure.offset == data.index(b"\xff")
    assert chars == len("data: é€😀\n\ndata: x")
