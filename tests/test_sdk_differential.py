"""Differential: the official SDK accumulators and webclient agree on text and tool arguments.

Peers (test-only dependencies): openai's ``ChatCompletionStreamState`` and anthropic's
``accumulate_event``. Each is fed the same complete SSE events the session consumed (the SDKs'
own decoders drop an unterminated last event too). A recording counts as *accepted by the SDK*
when the SDK consumes it without raising; the comparison covers every such recording that
webclient also accumulated to the end (outcome ``complete`` or ``truncated``; on a
protocol or upstream error webclient stops consuming by design).

Compared: the text (each choice's, for Chat), the tool names and arguments (the raw argument
string for Chat, since the SDK does not parse it; the parsed object for Anthropic, where the SDK
parses), and, for Anthropic, the thinking text.

Next-turn state, wherever the SDK accumulates it (complete attempts only):

* Anthropic (the beta ``accumulate_event``, which knows every block type): the assistant message's
  content blocks equal the SDK snapshot's, block for block: thinking ``signature`` (replaced by
  each ``signature_delta``), ``redacted_thinking`` ``data``, text ``citations``
  (``citations_delta``), server tool blocks and their parsed ``input``, compaction fields; and the result's
  ``details`` equal the snapshot's ``stop_sequence``, ``stop_details``, ``container`` and ``context_management``.
  Also on synthetic streams carrying every block type the route knows.
* Chat (``ChatCompletionStreamState``): the assistant message's content, refusal and tool calls, and
  each choice's logprobs (``content`` / ``refusal`` entries), equal the SDK snapshot's.
* Responses (``ResponseStreamState``): the assistant message equals the SDK's completed output
  items (``output_item.done``), reasoning ``encrypted_content`` included.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.route_fixtures import Case, cases, replay
from webclient import EventStreamParser

pytestmark = pytest.mark.host

CHAT_CASES = [c for c in cases() if c.route == "openai-chat"]
#: Chat recordings whose one tool call's header (id, name) comes twice (Kimi K2 through OpenRouter): the SDK's snapshot
#: names that call with the name written twice.
SDK_JOINS_REPEATED_NAME = {"llm__test_tools_streaming_variant_a.interaction0.sse"}
ANTHROPIC_CASES = [c for c in cases() if c.route == "anthropic-messages"]
RESPONSES_CASES = [c for c in cases() if c.route == "openai-responses"]


def _events(data: bytes) -> list[Any]:
    parser = EventStreamParser()
    events = [e for e in parser.feed(data) if hasattr(e, "data")]
    parser.close()
    return events


def _openai_snapshot(case: Case) -> Any | None:
    """Feed the SDK; ``None`` when it refuses the recording (raises)."""
    from openai._models import construct_type
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state: Any = ChatCompletionStreamState()
    try:
        for event in _events(case.data):
            if event.data.startswith("[DONE]"):
                break
            payload = json.loads(event.data)
            if event.type == "error" or payload.get("error"):
                return None  # openai-python raises APIError here
            state.handle_chunk(construct_type(type_=ChatCompletionChunk, value=payload))
        return state.current_completion_snapshot
    except Exception:
        return None


def _anthropic_snapshot(case: Case) -> Any | None:
    from anthropic.lib.streaming._messages import accumulate_event

    snapshot = None
    json_bufs: dict[int, bytes] = {}
    try:
        for event in _events(case.data):
            if event.data.startswith("[DONE]"):
                continue
            payload = json.loads(event.data)
            if payload.get("type") == "error" or event.type == "error":
                return None  # anthropic-sdk-python raises on the error event
            snapshot = accumulate_event(event=payload, current_snapshot=snapshot, json_bufs=json_bufs)
        return snapshot
    except Exception:
        return None


def _ours(case: Case) -> Any:
    result = replay(case.route, [case.data]).result
    assert result is not None
    return result


@pytest.mark.parametrize("case", CHAT_CASES, ids=[c.id for c in CHAT_CASES])
def test_chat_text_and_tool_arguments_match_openai_stream_state(case: Case) -> None:
    pytest.importorskip("openai")
    snapshot = _openai_snapshot(case)
    ours = _ours(case)
    if snapshot is None or ours.outcome.value not in ("complete", "truncated"):
        pytest.skip("not accumulated to the end by both")
    sdk_texts = [c.message.content or "" for c in sorted(snapshot.choices, key=lambda c: c.index)]
    assert [c.text for c in ours.choices] == sdk_texts
    sdk_calls = [
        (t.function.name, t.function.arguments)
        for t in (sorted(snapshot.choices, key=lambda c: c.index)[0].message.tool_calls or [])
    ]
    if case.id in SDK_JOINS_REPEATED_NAME:
        # The SDK appends every string it is sent, the name included: a call header sent twice names the tool twice
        # over. webclient takes the same name again as nothing new (openai_chat's docstring).
        sdk_calls = [(name[:len(name) // 2], arguments) for name, arguments in sdk_calls
                     if name[:len(name) // 2] * 2 == name]
    assert [(c.name, c.input_text) for c in ours.tool_calls] == sdk_calls
    for call, (_, arguments) in zip(ours.tool_calls, sdk_calls, strict=True):
        if call.state == "valid":
            assert call.arguments == (json.loads(arguments) if arguments.strip() else {})


@pytest.mark.parametrize("case", ANTHROPIC_CASES, ids=[c.id for c in ANTHROPIC_CASES])
def test_anthropic_text_thinking_and_tool_inputs_match_the_sdk_accumulator(case: Case) -> None:
    pytest.importorskip("anthropic")
    snapshot = _anthropic_snapshot(case)
    ours = _ours(case)
    if snapshot is None or ours.outcome.value not in ("complete", "truncated"):
        pytest.skip("not accumulated to the end by both")
    blocks = snapshot.content
    assert ours.text == "".join(b.text for b in blocks if b.type == "text")
    assert ours.reasoning == "".join(b.thinking for b in blocks if b.type == "thinking")
    sdk_tools = [(b.name, b.input) for b in blocks if b.type == "tool_use"]
    assert [c.name for c in ours.tool_calls] == [name for name, _ in sdk_tools]
    for call, (_, sdk_input) in zip(ours.tool_calls, sdk_tools, strict=True):
        if call.state == "valid":
            assert call.arguments == sdk_input


def test_the_sdks_refuse_only_the_recordings_known_to_break_them() -> None:
    pytest.importorskip("openai")
    pytest.importorskip("anthropic")
    refused = {c.id for c in CHAT_CASES if _openai_snapshot(c) is None}
    refused |= {c.id for c in ANTHROPIC_CASES if _anthropic_snapshot(c) is None}
    assert refused == {
        # in-stream provider errors: the SDKs raise (webclient: upstream_error)
        "test_groq__test_tool_use_failed_error_streaming.interaction0.sse",
        "test_groq__test_tool_use_failed_error_streaming_with_text.interaction0.sse",
        "test_openrouter__test_openrouter_stream_error.interaction0.sse",
        # OpenRouter's annotations (a list in the delta without an index per entry): the SDK's accumulator raises
        # ("Expected list delta entry to have an `index` key"), webclient keeps them as citations
        "test_openrouter__test_openrouter_web_search_annotations_stream.interaction0.sse",
        # the first tool call at index 1: ChatCompletionStreamState raises IndexError, webclient keys
        # calls by index in a dict and completes
        "openai-compatible__anthropic-fallback-tool-call.sse[as-recorded]",
        "openai-compatible__anthropic-fallback-tool-call.sse[terminated]",
        # Mistral's content chunks (a list as delta.content): the SDK's accumulator raises, webclient reads them
        "mistral__mistral-reasoning.chunks.txt",
        "openai-compatible__issue-13703-mistral-thinking.chunks.txt",
    }
    with_calls = sum(1 for c in CHAT_CASES + ANTHROPIC_CASES if _ours(c).tool_calls)
    assert with_calls >= 10


# -- next-turn state: signatures, citations, logprobs, output items ------------------------------------


def _significant(block: dict[str, Any]) -> dict[str, Any]:
    """A block without the keys one side leaves unset and the other sends empty (``citations: null``)."""
    return {k: v for k, v in block.items() if v not in (None, "", [], {})}


def _anthropic_beta_blocks(data: bytes) -> list[dict[str, Any]] | None:
    snapshot = _anthropic_beta_snapshot(data)
    return None if snapshot is None else [block.to_dict() for block in snapshot.content]


def _anthropic_beta_snapshot(data: bytes) -> Any | None:
    from anthropic.lib.streaming._beta_messages import accumulate_event

    snapshot: Any = None
    json_bufs: dict[int, bytes] = {}
    try:
        for event in _events(data):
            if event.data.startswith("[DONE]"):
                continue
            payload = json.loads(event.data)
            if payload.get("type") == "error" or event.type == "error":
                return None
            snapshot = accumulate_event(event=payload, current_snapshot=snapshot, json_bufs=json_bufs,
                                        request_headers={})  # type: ignore[arg-type]
    except Exception:
        return None
    return snapshot


def _synthetic_anthropic_streams() -> list[tuple[str, bytes]]:
    from tests.test_vocab_anthropic_messages import RESULT_BLOCKS, delta, message, start, stop, text, whole

    thinking = [start(0, {"type": "thinking", "thinking": ""}), delta(0, type="thinking_delta", thinking="Hm."),
                delta(0, type="signature_delta", signature="c2lnLTE="),
                delta(0, type="signature_delta", signature="c2lnLTI="), stop(0)]
    cited = [start(1, {"type": "text", "text": ""}), delta(1, type="text_delta", text="Green."),
             delta(1, type="citations_delta", citation={"type": "char_location", "cited_text": "green",
                                                        "document_index": 0, "document_title": "D",
                                                        "start_char_index": 0, "end_char_index": 5}), stop(1)]
    server = [start(2, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
              delta(2, type="input_json_delta", partial_json='{"query": '),
              delta(2, type="input_json_delta", partial_json='"x"}'), stop(2)]
    results = [e for n, block in enumerate(RESULT_BLOCKS) for e in whole(3 + n, block)]
    redacted = whole(3 + len(RESULT_BLOCKS), {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"})
    return [("thinking-citations-server-results", message(*thinking, *cited, *server, *results, *redacted)),
            ("text-only", message(*text(0, "Hello")))]


SYNTHETIC_ANTHROPIC = _synthetic_anthropic_streams()


#: The message-level fields of the SDK's snapshot that the result keeps in ``details``.
DETAIL_FIELDS = ("stop_sequence", "stop_details", "container", "context_management")


def _sdk_details(snapshot: Any) -> dict[str, Any] | None:
    fields = {key: getattr(snapshot, key, None) for key in DETAIL_FIELDS}
    kept = {key: value if isinstance(value, str) else value.to_dict(mode="json") for key, value in fields.items()
            if value is not None}
    return kept or None


@pytest.mark.parametrize("case", ANTHROPIC_CASES, ids=[c.id for c in ANTHROPIC_CASES])
def test_anthropic_assistant_message_and_details_equal_the_beta_sdk_snapshot(case: Case) -> None:
    pytest.importorskip("anthropic")
    snapshot = _anthropic_beta_snapshot(case.data)
    ours = _ours(case)
    if snapshot is None or ours.outcome.value != "complete":
        pytest.skip("not a complete attempt accumulated by both")
    blocks = [block.to_dict() for block in snapshot.content]
    assert [_significant(b) for b in ours.assistant_message["content"]] == [_significant(b) for b in blocks]
    assert ours.details == _sdk_details(snapshot)


def test_the_anthropic_recordings_carry_every_detail_but_context_management() -> None:
    pytest.importorskip("anthropic")
    seen = {key for case in ANTHROPIC_CASES if _ours(case).outcome.value == "complete"
            for key in (_ours(case).details or {})}
    assert seen >= {"stop_sequence", "stop_details", "container"}


@pytest.mark.parametrize(("name", "data"), SYNTHETIC_ANTHROPIC, ids=[n for n, _ in SYNTHETIC_ANTHROPIC])
def test_anthropic_signatures_citations_and_every_block_type_match_the_beta_sdk(name: str, data: bytes) -> None:
    pytest.importorskip("anthropic")
    blocks = _anthropic_beta_blocks(data)
    ours = replay("anthropic-messages", [data]).result
    assert blocks is not None and ours is not None and ours.outcome.value == "complete"
    assert [_significant(b) for b in ours.assistant_message["content"]] == [_significant(b) for b in blocks]
    signatures = [b["signature"] for b in blocks if b["type"] == "thinking"]
    assert [b["signature"] for b in ours.assistant_message["content"] if b["type"] == "thinking"] == signatures
    assert list(ours.citations) == [c for b in blocks if b["type"] == "text" for c in (b.get("citations") or [])]


def test_the_anthropic_recordings_carry_signatures_and_citations_the_comparison_covers() -> None:
    pytest.importorskip("anthropic")
    kinds: set[str] = set()
    for case in ANTHROPIC_CASES:
        blocks = _anthropic_beta_blocks(case.data)
        if blocks is None or _ours(case).outcome.value != "complete":
            continue
        for b in blocks:
            kinds.add(b["type"])
            if b.get("signature"):
                kinds.add("signature")
            if b.get("citations"):
                kinds.add("citations")
    assert {"thinking", "signature", "redacted_thinking", "citations", "server_tool_use",
            "web_search_tool_result", "compaction"} <= kinds


@pytest.mark.parametrize("case", CHAT_CASES, ids=[c.id for c in CHAT_CASES])
def test_chat_assistant_message_and_logprobs_equal_the_openai_stream_state(case: Case) -> None:
    pytest.importorskip("openai")
    snapshot = _openai_snapshot(case)
    ours = _ours(case)
    if snapshot is None or ours.outcome.value != "complete":
        pytest.skip("not a complete attempt accumulated by both")
    sdk_choices = sorted(snapshot.choices, key=lambda c: c.index)
    for mine, sdk in zip(ours.choices, sdk_choices, strict=True):
        message = sdk.message
        # The SDK keeps the placeholder "" of a tool-call turn; the message sends null (both accepted).
        assert (mine.assistant_message["content"] or "") == (message.content or "")
        assert mine.assistant_message.get("refusal") == message.refusal
        sdk_calls = [{"id": t.id, "type": "function", "function": {"name": t.function.name,
                                                                   "arguments": t.function.arguments}}
                     for t in message.tool_calls or []]
        assert mine.assistant_message.get("tool_calls", []) == sdk_calls
        sdk_logprobs = sdk.logprobs
        if sdk_logprobs is None:
            assert mine.logprobs is None
        else:
            assert mine.logprobs == {key: [entry.to_dict() for entry in getattr(sdk_logprobs, key) or []]
                                     for key in ("content", "refusal")}


def test_the_chat_recordings_carry_logprobs_the_comparison_covers() -> None:
    with_logprobs = [c.id for c in CHAT_CASES if _ours(c).logprobs]
    assert len(with_logprobs) >= 2, with_logprobs


def _responses_completed_output(case: Case) -> list[dict[str, Any]] | None:
    from openai._models import construct_type
    from openai._types import omit
    from openai.lib.streaming.responses._responses import ResponseStreamState
    from openai.types.responses import ResponseStreamEvent

    state: Any = ResponseStreamState(input_tools=omit, text_format=omit)
    try:
        for event in _events(case.data):
            if event.data.startswith("[DONE]"):
                continue
            payload = json.loads(event.data)
            if payload.get("type") == "error" or payload.get("error"):
                return None
            state.handle_event(construct_type(type_=ResponseStreamEvent, value=payload))
    except Exception:
        return None
    done = {i: item.to_dict() for i, item in state._completed_output.items()}
    # The SDK keeps only the items output_item.done closed; webclient also keeps a hosted item the server finished
    # without one (several MCP servers' mcp_list_tools), as response.completed lists it: compare that with the entry.
    payloads = [json.loads(e.data) for e in _events(case.data) if not e.data.startswith("[DONE]")]
    final = next((p["response"].get("output") or [] for p in payloads if p.get("type") == "response.completed"), [])
    for i, entry in enumerate(final):
        done.setdefault(i, entry)
    return [done[i] for i in sorted(done)]


@pytest.mark.parametrize("case", RESPONSES_CASES, ids=[c.id for c in RESPONSES_CASES])
def test_responses_assistant_message_equals_the_sdks_completed_output_items(case: Case) -> None:
    pytest.importorskip("openai")
    items = _responses_completed_output(case)
    ours = _ours(case)
    if items is None or ours.outcome.value != "complete":
        pytest.skip("not a complete attempt accumulated by both")
    assert ours.assistant_message == items


def test_the_responses_recordings_carry_encrypted_reasoning_the_comparison_covers() -> None:
    encrypted = [c.id for c in RESPONSES_CASES if any(
        item.get("encrypted_content") for item in _ours(c).assistant_message or [])]
    assert encrypted, "no recording with an encrypted reasoning item"
