"""The next-turn state round-trips: ``assistant_message`` carries every signature, encrypted item
and redacted datum exactly as the provider sent it, on every route, under every chunking; and none
of the new result fields (signatures, citations, items, response id, model) reaches telemetry.

The recordings are scanned independently of the routes (plain ``json``) for every opaque value the
next request must send back, and each must be found, unchanged, where the provider expects it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.route_fixtures import Case, cases, check, replay, sse
from webclient import EventStreamParser

COMPLETE = [c for c in cases() if c.outcome == "complete"]


def _payloads(data: bytes) -> list[dict[str, Any]]:
    parser = EventStreamParser()
    out = []
    for event in [*parser.feed(data), *parser.close()]:
        if hasattr(event, "data") and event.data != "[DONE]":
            obj = json.loads(event.data)
            if isinstance(obj, dict):
                out.append(obj)
    return out


def _anthropic_opaque(payloads: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """block index -> the opaque fields its last state carries (signature, data, encrypted_content)."""
    found: dict[int, dict[str, Any]] = {}
    for p in payloads:
        if p.get("type") == "content_block_start":
            block = p["content_block"]
            found[p["index"]] = {k: block[k] for k in ("signature", "data", "encrypted_content") if block.get(k)}
        elif p.get("type") == "content_block_delta":
            d = p["delta"]
            if d.get("type") == "signature_delta":
                found[p["index"]]["signature"] = d["signature"]
            elif d.get("type") == "compaction_delta":
                found[p["index"]]["encrypted_content"] = d["encrypted_content"]
    return {index: fields for index, fields in found.items() if fields}


def _gemini_signatures(payloads: list[dict[str, Any]]) -> list[str]:
    return [part["thoughtSignature"] for p in payloads for cand in p.get("candidates", [])
            for part in (cand.get("content") or {}).get("parts", []) if part.get("thoughtSignature")]


def _responses_done(payloads: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Each item as output_item.done sent it; a hosted item the server finished without one (several MCP servers'
    mcp_list_tools) as response.completed lists it."""
    done = {p["output_index"]: p["item"] for p in payloads if p.get("type") == "response.output_item.done"}
    for p in payloads:
        if p.get("type") == "response.completed":
            for index, item in enumerate(p["response"].get("output") or []):
                done.setdefault(index, item)
    return done


@pytest.mark.parametrize("case", COMPLETE, ids=[c.id for c in COMPLETE])
def test_every_opaque_value_of_a_recording_is_in_the_assistant_message_where_the_provider_expects_it(
        case: Case) -> None:
    result = replay(case.route, [case.data]).result
    assert result is not None and result.outcome.value == "complete"
    message = result.assistant_message
    assert json.loads(json.dumps(message)) == message  # plain JSON, nothing lost in serialization
    payloads = _payloads(case.data)
    if case.route == "anthropic-messages":
        content = message["content"]
        for index, fields in _anthropic_opaque(payloads).items():
            for key, value in fields.items():
                assert content[index][key] == value, (index, key)
    elif case.route == "gemini":
        ours = [part["thoughtSignature"] for part in message["parts"] if "thoughtSignature" in part]
        assert ours == _gemini_signatures(payloads)
    elif case.route == "openai-responses":
        done = _responses_done(payloads)
        assert message == [done[i] for i in sorted(done)]
    else:
        assert message["role"] == "assistant"


def test_the_recordings_hold_opaque_values_of_every_kind() -> None:
    kinds: set[str] = set()
    for case in COMPLETE:
        payloads = _payloads(case.data)
        if case.route == "anthropic-messages":
            kinds.update(k for fields in _anthropic_opaque(payloads).values() for k in fields)
        elif case.route == "gemini" and _gemini_signatures(payloads):
            kinds.add("thoughtSignature")
        elif case.route == "openai-responses" and any(i.get("encrypted_content")
                                                      for i in _responses_done(payloads).values()):
            kinds.add("reasoning.encrypted_content")
    assert kinds == {"signature", "data", "encrypted_content", "thoughtSignature", "reasoning.encrypted_content"}


# -- synthetic turns, every chunking ---------------------------------------------------------------


def test_anthropic_thinking_signatures_and_redacted_data_round_trip_under_every_chunking() -> None:
    def e(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return (payload["type"], payload)

    data = sse(*map(e, [
        {"type": "message_start", "message": {"id": "msg_1", "model": "m", "content": [], "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "",
                                                                      "signature": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Ünïcödé ✓"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "ErUBCkYI+/="}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking",
                                                                      "data": "EmwKAhgBEgy3va3pzix/LafPsn4a=="}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "Done."}},
        {"type": "content_block_stop", "index": 2},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"}]))
    result, _ = check("anthropic-messages", data)
    assert result.assistant_message == {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Ünïcödé ✓", "signature": "ErUBCkYI+/="},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a=="},
        {"type": "text", "text": "Done."}]}


def test_gemini_signatures_stay_on_their_parts_under_every_chunking() -> None:
    def chunk(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        cand: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
        if finish:
            cand["finishReason"] = finish
        return {"candidates": [cand]}

    parts = [{"text": "plan", "thought": True, "thoughtSignature": "QUJD"},
             {"functionCall": {"name": "f", "args": {"a": "ü"}}, "thoughtSignature": "REVG"},
             {"text": "ok"}, {"text": "", "thoughtSignature": "R0hJ"}]
    result, _ = check("gemini", sse(*(chunk(p) for p in parts[:-1]), chunk(parts[-1], finish="STOP")))
    assert result.assistant_message == {"role": "model", "parts": parts}


def test_responses_encrypted_reasoning_round_trips_under_every_chunking() -> None:
    def ev(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
        return (kind, {"type": kind, **fields})

    reasoning = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAAAABo+/=="}
    call = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}",
            "status": "completed"}
    data = sse(ev("response.created", response={"id": "resp_1"}),
               ev("response.output_item.added", output_index=0, item={**reasoning, "encrypted_content": None}),
               ev("response.output_item.done", output_index=0, item=reasoning),
               ev("response.output_item.added", output_index=1, item={**call, "arguments": ""}),
               ev("response.function_call_arguments.delta", output_index=1, item_id="fc_1", delta="{}"),
               ev("response.output_item.done", output_index=1, item=call),
               ev("response.completed", response={"id": "resp_1", "status": "completed"}))
    result, _ = check("openai-responses", data)
    assert result.assistant_message == [reasoning, call]
    assert result.tool_calls[0].ready


# -- none of it in telemetry -----------------------------------------------------------------------

CANARY = "wc-canary-5f1e"


def test_signatures_citations_items_and_identity_never_reach_telemetry() -> None:
    def e(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return (payload["type"], payload)

    citation = {"type": "char_location", "cited_text": CANARY, "document_index": 0}
    data = sse(*map(e, [
        {"type": "message_start", "message": {"id": f"msg_{CANARY}", "model": CANARY, "content": [], "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": CANARY}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": CANARY}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": CANARY}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "citations_delta", "citation": citation}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": {"type": "web_search_tool_result",
                                                                      "tool_use_id": CANARY, "content": []}},
        {"type": "content_block_stop", "index": 2},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        {"type": "message_stop"}]))
    result, _ = check("anthropic-messages", data)
    assert result.outcome.value == "complete" and CANARY in json.dumps(result.to_dict()["assistant_message"])
    assert CANARY not in json.dumps(result.telemetry.to_dict())
