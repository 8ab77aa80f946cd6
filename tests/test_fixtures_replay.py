"""Every real recording replays to its expected outcome, under every chunking the helper makes.

The expectations live in ``tests/route_fixtures.py`` (``CATALOG``), one line per file, read from
``SOURCES.md`` through ``route-contracts.md`` §6.
"""

from __future__ import annotations

import pytest

from tests.helpers import assert_chunking_invariant
from tests.route_fixtures import (
    CATALOG,
    CHAT,
    FIXTURES,
    LOCAL,
    LOCAL_CATALOG,
    Case,
    cases,
    comparable,
    frame_jsonl,
    replay,
)

CASES = cases()

# Keep the suite fast: exhaustive single splits only for small inputs, fewer random chunkings
# for the big recordings (the byte-wise and with-empty-chunks runs still cover every boundary).
EVERY_SPLIT_MAX = 1500


def _random_count(data: bytes) -> int:
    return 50 if len(data) < 20_000 else 8


def test_the_catalog_covers_every_recording_in_the_fixture_directory() -> None:
    on_disk = {
        str(p.relative_to(FIXTURES))
        for p in FIXTURES.rglob("*")
        if p.is_file() and p.suffix in {".txt", ".sse", ".bin"} and p.name != "SOURCES.md"
    }
    assert on_disk == {rec.path for rec in CATALOG}


def test_the_local_catalog_covers_every_recording_in_this_repositorys_recordings_directory() -> None:
    on_disk = {str(p.relative_to(LOCAL)) for p in LOCAL.rglob("*") if p.is_file() and p.suffix in {".txt", ".sse"}}
    assert on_disk == {rec.path for rec in LOCAL_CATALOG}
    listed = (LOCAL / "SOURCES.md").read_text(encoding="utf-8")
    assert all(f"`{rec.path.split('/', 1)[1]}`" in listed for rec in LOCAL_CATALOG)  # provenance for each


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_recording_replays_to_its_expected_outcome_under_every_chunking(case: Case) -> None:
    data, _, final_kind, events = assert_chunking_invariant(
        lambda chunks: comparable(case.route, chunks),
        case.data,
        every_split_max=EVERY_SPLIT_MAX,
        random_count=_random_count(case.data),
    )
    assert data["outcome"] == case.outcome, (data["stage"], data["telemetry"])  # type: ignore[index]
    if case.stop_reason is not None:
        assert data["stop_reason"] == case.stop_reason  # type: ignore[index]
    assert final_kind == ("committed" if case.outcome == "complete" else "failed")
    assert data["committed"] is (case.outcome == "complete")  # type: ignore[index]
    assert events > 0


@pytest.mark.parametrize("case", [c for c in CASES if c.outcome == "complete"],
                         ids=[c.id for c in CASES if c.outcome == "complete"])
def test_complete_recording_reports_a_clean_end_in_telemetry(case: Case) -> None:
    result = replay(case.route, [case.data]).result
    assert result is not None
    t = result.telemetry
    assert t.stream_outcome == "complete"
    assert t.terminal_condition_seen is True
    assert t.pending_line_character_count == 0
    assert t.pending_event_character_count == 0
    assert t.open_payload_accumulator_count == 0
    assert t.bytes_received == len(case.data)
    assert t.http_status == 200 and t.content_type_valid is True
    assert all(call.ready and call.state == "valid" for call in result.tool_calls)


def test_every_client_tool_call_in_a_complete_recording_is_ready_with_parsed_arguments() -> None:
    seen = 0
    for case in CASES:
        if case.outcome != "complete":
            continue
        result = replay(case.route, [case.data]).result
        assert result is not None
        for call in result.tool_calls:
            seen += 1
            # (a custom tool's input is free text: never parsed)
            parsed = call.arguments is None and call.input_text if call.kind == "custom" else isinstance(
                call.arguments, dict)
            assert call.ready and parsed and call.name, call
    assert seen >= 15


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.recording.path.endswith(".chunks.txt") and c.route != CHAT],
    ids=[c.id for c in CASES if c.recording.path.endswith(".chunks.txt") and c.route != CHAT],
)
def test_a_stray_done_sentinel_after_a_non_chat_stream_changes_nothing(case: Case) -> None:
    # vercel's harness appends "data: [DONE]" to every route; only Chat gives it a meaning.
    plain = replay(case.route, [case.data]).result
    with_done = replay(case.route, [case.data + b"data: [DONE]\n\n"]).result
    assert plain is not None and with_done is not None
    assert with_done.outcome == plain.outcome and with_done.text == plain.text
    assert with_done.tool_calls == plain.tool_calls


def test_chat_jsonl_without_its_done_sentinel_is_truncated_at_eof() -> None:
    rec = next(r for r in CATALOG if r.path.endswith("openai__openai-text.chunks.txt"))
    lines = [line for line in (FIXTURES / rec.path).read_bytes().split(b"\n") if line.strip()]
    data = frame_jsonl(lines, "anthropic-messages")  # framing without the [DONE]
    result = replay(CHAT, [data]).result
    assert result is not None
    assert (result.outcome.value, result.stage) == ("truncated", "eof")
    assert result.stop_reason is None or result.stop_reason == "stop"
    assert result.text  # the provisional text is still there
