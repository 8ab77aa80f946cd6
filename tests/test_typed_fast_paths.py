"""The typed routes' fast paths (Anthropic ``content_block_delta`` and ``content_block_stop``, Responses
``output_text.delta`` and ``function_call_arguments.delta``, and the refusal, reasoning and summary deltas, in
the key orders of api.openai.com, LM Studio, OpenRouter and the March-2025 API, taken without building the
object) end in the same state as the general envelope step, event for event.

Each stream is replayed twice: as shipped, and with the fast paths' patterns replaced by one that never
matches (so every event takes the general path). Results (outcome, stage, text, tool calls, telemetry,
assistant message), merged updates and events seen must be equal, under every chunking.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.helpers import assert_chunking_invariant
from tests.route_fixtures import comparable, sse
from webclient import Limits, Outcome, StreamSession
from webclient._events import EventTuple
from webclient._routes import RouteAccumulator, anthropic_messages, openai_responses

ROUTE = "anthropic-messages"
NEVER = re.compile(r"(?!)")

START = ("message_start", {"type": "message_start", "message": {"id": "m", "model": "c", "usage": {}}})


def block_start(index: int, block: dict[str, object]) -> tuple[str, dict[str, object]]:
    return ("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})


def block_stop(index: int) -> tuple[str, dict[str, object]]:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


#: Blocks 0 text, 1 tool_use, 2 thinking, 3 text (closed before the probe), 4 server_tool_use.
OPEN = [
    START,
    block_start(3, {"type": "text", "text": ""}), block_stop(3),
    block_start(0, {"type": "text", "text": ""}),
    block_start(1, {"type": "tool_use", "id": "t", "name": "f", "input": {}}),
    block_start(2, {"type": "thinking", "thinking": "", "signature": ""}),
    block_start(4, {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}),
]
CLOSE = [
    ("content_block_delta", {"type": "content_block_delta", "index": 1,
                             "delta": {"type": "input_json_delta", "partial_json": '{"a": 1}'}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 4,
                             "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
    block_stop(0), block_stop(1), block_stop(2), block_stop(4),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}}),
    ("message_stop", {"type": "message_stop"}),
]

HEAD = '{"type":"content_block_delta","index":'


def text(index: object, fragment: str, tail: str = "}}") -> str:
    return f'{HEAD}{index},"delta":{{"type":"text_delta","text":"{fragment}"{tail}'


def partial(index: object, fragment: str, tail: str = "}}") -> str:
    return f'{HEAD}{index},"delta":{{"type":"input_json_delta","partial_json":"{fragment}"{tail}'


def thinking(index: object, fragment: str) -> str:
    return f'{HEAD}{index},"delta":{{"type":"thinking_delta","thinking":"{fragment}"}}}}'


def paired(delta_type: str, key: str) -> str:
    return f'{HEAD}0,"delta":{{"type":"{delta_type}","{key}":"x"}}}}'


#: (SSE event name or None, data text) probes placed between OPEN and CLOSE.
PROBES: list[tuple[str | None, str]] = [
    ("content_block_delta", text(0, "Hello")),
    (None, text(0, "unnamed")),
    ("content_block_delta", text(0, "")),
    ("content_block_delta", text(0, 'q\\"uote\\\\ \\u00e9 \\ud83d\\ude00 日本 🙂')),
    ("content_block_delta", text(0, "\\ud83d") + "\n\nevent: content_block_delta\ndata: " + text(0, "\\ude00")),
    ("content_block_delta", text(0, "lone \\ud800")),
    ("content_block_delta", text(0, "ctrl \x01")),
    ("content_block_delta", text(0, "bad escape \\x")),
    ("content_block_delta", text(0, "x", "}} ")),
    ("content_block_delta", text(0, "x", "}}x")),
    ("content_block_delta", text(0, "x", "}")),
    ("content_block_delta", text(0, "padded", "}            }")),
    ("content_block_delta", text(0, "padded", "} \t\r}\t ")),
    ("content_block_delta", partial(1, "padded", "}      }")),
    ("content_block_delta", text(0, "nbsp", "}\u00a0}")),
    ("content_block_delta", text(0, "x", "}  }  }")),
    ("content_block_delta", text(0, "x", "}}\n")),
    ("content_block_delta", text(0, "x", ',"extra":1}}')),
    ("content_block_delta", text(0, "x", ',"text":"y"}}')),
    ("content_block_delta", text(0, "x", "}x")),
    ("content_block_delta", text(0, "x", "x}")),
    ("content_block_delta", text(0, "x", "x}}")),
    ("content_block_delta", text(0, "x", "}}}")),
    ("content_block_delta", text(0, "x", "},\"index\":1}")),
    ("content_block_delta", text("00", "x")),
    ("content_block_delta", text("01", "x")),
    ("content_block_delta", text("-1", "x")),
    ("content_block_delta", text("0.0", "x")),
    ("content_block_delta", text(7, "x")),
    ("content_block_delta", text(3, "x")),
    ("content_block_delta", text(1, "x")),
    ("content_block_delta", text(2, "x")),
    ("content_block_delta", text(4, "x")),
    ("content_block_delta", text(1234567890, "x")),
    ("content_block_delta", partial(1, '{\\"b\\": ')),
    ("content_block_delta", partial(1, "")),
    ("content_block_delta", partial(0, "{")),
    ("content_block_delta", partial(2, "{")),
    ("content_block_delta", partial(4, ' ')),
    ("content_block_delta", partial(4, "")),
    (None, partial(4, '{\\"q\\": 1')),
    ("content_block_delta", thinking(2, "hmm \\u00e9")),
    ("content_block_delta", thinking(2, "")),
    ("content_block_delta", thinking(0, "x")),
    ("content_block_delta", thinking(1, "x")),
    ("content_block_delta", paired("text_delta", "partial_json")),
    ("content_block_delta", paired("text_delta", "thinking")),
    ("content_block_delta", paired("input_json_delta", "text")),
    ("content_block_delta", paired("thinking_delta", "text")),
    ("content_block_delta", paired("text_delta", "texts")),
    ("content_block_start", text(0, "x")),
    ("ping", text(0, "x")),
    ("error", text(0, "x")),
    ("message", text(0, "x").replace('"text":', '"text" :')),
]


def _stream(probe: tuple[str | None, str], before: list[object] | None = None) -> bytes:
    name, data = probe
    frame = (f"event: {name}\n" if name else "") + f"data: {data}\n\n"
    return sse(*(OPEN if before is None else before)) + frame.encode() + sse(*CLOSE)


def _both(data: bytes, monkeypatch: pytest.MonkeyPatch, route: str = ROUTE, **kwargs: object) -> tuple[object, ...]:
    fast = assert_chunking_invariant(lambda chunks: comparable(route, chunks, **kwargs), data, random_count=6,
                                     every_split_max=0)
    module = anthropic_messages if route == ROUTE else openai_responses
    with monkeypatch.context() as m:
        m.setattr(module, "_DELTA_HEAD", NEVER)
        if route == ROUTE:
            m.setattr(module, "_STOP", NEVER)
        general = comparable(route, [data], **kwargs)
    assert fast == general
    return fast


@pytest.mark.parametrize("probe", PROBES, ids=range(len(PROBES)))
def test_a_delta_event_ends_the_same_on_the_fast_and_the_general_path(
        probe: tuple[str | None, str], monkeypatch: pytest.MonkeyPatch) -> None:
    _both(_stream(probe), monkeypatch)


def test_the_fast_path_takes_the_deltas_the_api_sends() -> None:
    """The pattern matches what ``json.dumps(..., separators=(",", ":"))`` writes, as the API does."""
    for delta in ({"type": "text_delta", "text": "hé 🙂"}, {"type": "input_json_delta", "partial_json": '{"a'},
                  {"type": "thinking_delta", "thinking": "so"}):
        data = json.dumps({"type": "content_block_delta", "index": 12, "delta": delta}, ensure_ascii=False,
                          separators=(",", ":"))
        assert anthropic_messages._DELTA_HEAD.match(data) is not None


def test_a_delta_before_message_start_and_after_message_stop_ends_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    data = sse(("content_block_delta", json.loads(text(0, "x")))) + sse(*OPEN, *CLOSE)
    assert _both(data, monkeypatch)[0]["outcome"] == "protocol_error"  # type: ignore[index]
    data = sse(*OPEN, *CLOSE) + ("event: content_block_delta\ndata: " + text(0, "x") + "\n\n").encode()
    assert _both(data, monkeypatch)[0]["stage"] == "after_terminal"  # type: ignore[index]


def _retained_after_open() -> int:
    session = StreamSession(ROUTE)
    session.open(200, "text/event-stream")
    session.feed(sse(*OPEN))
    return session.retained_chars


@pytest.mark.parametrize("ceiling", ["text", "tool_input", "retained"])
def test_ceilings_trip_at_the_same_event_on_both_paths(ceiling: str, monkeypatch: pytest.MonkeyPatch) -> None:
    limits = {"text": Limits(max_text_chars=12), "tool_input": Limits(max_tool_input_chars=9),
              "retained": Limits(max_retained_chars=_retained_after_open() + 18)}[ceiling]
    probes = [("content_block_delta", text(0, "abcd")), ("content_block_delta", partial(1, "abcd"))] * 6
    frames = "".join(f"event: {name}\ndata: {data}\n\n" for name, data in probes).encode()
    data = sse(*OPEN) + frames + sse(*CLOSE)
    result = _both(data, monkeypatch, limits=limits)[0]
    assert (result["outcome"], result["stage"]) == ("buffer_limit", ceiling)  # type: ignore[index]


STOP_HEAD = '{"type":"content_block_stop","index":'


def stop(index: object, tail: str = "}") -> str:
    return f"{STOP_HEAD}{index}{tail}"


def _stop_stream(probe: tuple[str | None, str], index: int = 0) -> bytes:
    """The probe in place of block ``index``'s stop, after the deltas (the other blocks close as usual)."""
    name, data = probe
    frame = (f"event: {name}\n" if name else "") + f"data: {data}\n\n"
    return (sse(*OPEN, *CLOSE[:2]) + frame.encode()
            + sse(*(event for event in CLOSE[2:] if event != block_stop(index))))


#: (SSE event name or None, data text, the block whose stop the probe replaces).
STOP_PROBES: list[tuple[str | None, str, int]] = [
    ("content_block_stop", stop(0), 0),
    (None, stop(0), 0),
    ("content_block_stop", stop(1), 1),
    ("content_block_stop", stop(2), 2),
    ("content_block_stop", stop(4), 4),
    ("content_block_stop", stop(3), 0),
    ("content_block_stop", stop(7), 0),
    ("content_block_stop", stop(0, "      }"), 0),
    ("content_block_stop", stop(0, " \t}\t "), 0),
    ("content_block_stop", stop(0, "}  "), 0),
    ("content_block_stop", stop(0, "\u00a0}"), 0),
    ("content_block_stop", stop(0, "}}"), 0),
    ("content_block_stop", stop(0, "}x"), 0),
    ("content_block_stop", stop(0, "x}"), 0),
    ("content_block_stop", stop(0, ""), 0),
    ("content_block_stop", stop(0, ',"index":1}'), 0),
    ("content_block_stop", stop(0, ',"extra":1}'), 0),
    ("content_block_stop", stop("00"), 0),
    ("content_block_stop", stop("01"), 1),
    ("content_block_stop", stop("-1"), 0),
    ("content_block_stop", stop("0.0"), 0),
    ("content_block_stop", stop("1e0"), 1),
    ("content_block_stop", stop("true"), 1),
    ("content_block_stop", stop(1234567890), 0),
    ("content_block_stop", stop(0).replace(",", ", "), 0),
    ("content_block_stop", stop(0).replace('"index":', '"index" :'), 0),
    ("content_block_delta", stop(0), 0),
    ("content_block_start", stop(0), 0),
    ("message_stop", stop(0), 0),
    ("ping", stop(0), 0),
    ("error", stop(0), 0),
]


@pytest.mark.parametrize("probe", STOP_PROBES, ids=range(len(STOP_PROBES)))
def test_a_block_stop_ends_the_same_on_the_fast_and_the_general_path(
        probe: tuple[str | None, str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    name, data, index = probe
    _both(_stop_stream((name, data), index), monkeypatch)


def test_the_fast_path_takes_the_stops_the_api_sends() -> None:
    data = json.dumps({"type": "content_block_stop", "index": 12}, separators=(",", ":"))
    assert anthropic_messages._STOP.match(data) is not None
    assert data.startswith(anthropic_messages._STOP_START)


def test_a_stop_before_message_start_and_after_message_stop_ends_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    data = sse(("content_block_stop", json.loads(stop(0)))) + sse(*OPEN, *CLOSE)
    assert _both(data, monkeypatch)[0]["stage"] == "order"  # type: ignore[index]
    data = sse(*OPEN, *CLOSE) + ("event: content_block_stop\ndata: " + stop(0) + "\n\n").encode()
    assert _both(data, monkeypatch)[0]["stage"] == "after_terminal"  # type: ignore[index]


def test_a_tool_input_that_fails_at_its_stop_fails_the_same_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stop that closes a client call parses and validates its input there."""
    broken = ("content_block_delta", json.loads(partial(1, '{\\"a\\": ')))
    data = sse(*OPEN, broken) + ("event: content_block_stop\ndata: " + stop(1) + "\n\n").encode() + sse(*CLOSE)
    result = _both(data, monkeypatch)[0]
    assert (result["outcome"], result["stage"]) == ("payload_error", "tool_json")  # type: ignore[index]


# -- Responses -------------------------------------------------------------------------------------

RESPONSES = "openai-responses"
R_HEAD = '{"type":"response.'


def r_event(event_type: str, **fields: object) -> tuple[str, dict[str, object]]:
    return (event_type, {"type": event_type, **fields})


def r_text(seq: object, index: object, fragment: str, tail: str = ',"logprobs":[],"obfuscation":"aB3"}',
           item_id: str = "msg_0", content: str = '"content_index":0,') -> str:
    return (f'{R_HEAD}output_text.delta","sequence_number":{seq},"item_id":"{item_id}","output_index":{index},'
            f'{content}"delta":"{fragment}"{tail}')


def r_args(seq: object, index: object, fragment: str, tail: str = ',"obfuscation":"x9"}') -> str:
    return (f'{R_HEAD}function_call_arguments.delta","sequence_number":{seq},"item_id":"fc_1",'
            f'"output_index":{index},"delta":"{fragment}"{tail}')


def r_delta(kind: str, seq: object, index: object, fragment: str, content: str = '"content_index":0,',
            tail: str = ',"obfuscation":"aB3"}') -> str:
    """A ``response.{kind}.delta`` in the api.openai.com order."""
    return (f'{R_HEAD}{kind}.delta","sequence_number":{seq},"item_id":"it","output_index":{index},{content}'
            f'"delta":"{fragment}"{tail}')


def r_late(kind: str, index: object, fragment: str, tail: str, content: str = '"content_index":0,') -> str:
    """LM Studio's order (the number, if any, in ``tail``, after the fragment; the March-2025 API's too)."""
    return f'{R_HEAD}{kind}.delta","item_id":"it","output_index":{index},{content}"delta":"{fragment}"{tail}'


def r_router(kind: str, index: object, fragment: str, logprobs: str = "", seq: object = 7,
             content: str = '"content_index":0,') -> str:
    """OpenRouter's order."""
    return (f'{R_HEAD}{kind}.delta",{logprobs}"output_index":{index},"item_id":"it",{content}"delta":"{fragment}",'
            f'"sequence_number":{seq}}}')


#: Items 0 message, 1 function_call, 2 reasoning, 3 custom_tool_call, 4 message (closed); events 0-7.
R_OPEN = [
    r_event("response.created", sequence_number=0, response={"id": "resp_1", "model": "m"}),
    r_event("response.output_item.added", sequence_number=1, output_index=4,
            item={"id": "msg_4", "type": "message", "role": "assistant", "content": []}),
    r_event("response.output_item.done", sequence_number=2, output_index=4,
            item={"id": "msg_4", "type": "message", "role": "assistant", "content": []}),
    r_event("response.output_item.added", sequence_number=3, output_index=0,
            item={"id": "msg_0", "type": "message", "role": "assistant", "content": []}),
    r_event("response.output_item.added", sequence_number=4, output_index=1,
            item={"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "f", "arguments": ""}),
    r_event("response.output_item.added", sequence_number=5, output_index=2,
            item={"id": "rs_2", "type": "reasoning", "summary": []}),
    r_event("response.output_item.added", sequence_number=6, output_index=3,
            item={"id": "ct_3", "type": "custom_tool_call", "call_id": "c3", "name": "g", "input": ""}),
]
#: The probe is event 7; these follow it.
R_CLOSE = [
    r_event("response.function_call_arguments.delta", sequence_number=8, output_index=1, item_id="fc_1",
            delta='{"a": 1}'),
    r_event("response.output_item.done", sequence_number=9, output_index=0,  # no content: nothing to reconcile
            item={"id": "msg_0", "type": "message", "role": "assistant"}),
    r_event("response.output_item.done", sequence_number=10, output_index=1,
            item={"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a": 1}'}),
    r_event("response.output_item.done", sequence_number=11, output_index=2,
            item={"id": "rs_2", "type": "reasoning", "summary": []}),
    r_event("response.output_item.done", sequence_number=12, output_index=3,
            item={"id": "ct_3", "type": "custom_tool_call", "call_id": "c3", "name": "g", "input": "x"}),
    r_event("response.completed", sequence_number=13, response={"status": "completed"}),
]

R_PROBES: list[tuple[str | None, str]] = [
    ("response.output_text.delta", r_text(7, 0, "Hello")),
    (None, r_text(7, 0, "unnamed")),
    ("response.output_text.delta", r_text(7, 0, "")),
    ("response.output_text.delta", r_text(7, 0, 'q\\"uote \\u00e9 \\ud83d\\ude00 日本 🙂')),
    ("response.output_text.delta", r_text(7, 0, "ctrl \x01")),
    ("response.output_text.delta", r_text(7, 0, "x", "}")),
    ("response.output_text.delta", r_text(7, 0, "x", "}  ")),
    ("response.output_text.delta", r_text(7, 0, "x", ',"logprobs":[]}')),
    ("response.output_text.delta", r_text(7, 0, "x", ',"logprobs":[{"token":"x"}]}')),
    ("response.output_text.delta", r_text(7, 0, "x", ',"obfuscation":"a\\"b"}')),
    ("response.output_text.delta", r_text(7, 0, "x", '}x')),
    ("response.output_text.delta", r_text(7, 0, "x", ',"delta":"y"}')),
    ("response.output_text.delta", r_text(7, 0, "x", content="")),
    ("response.output_text.delta", r_text(7, 0, "x", item_id="nope")),
    ("response.output_text.delta", r_text(7, 0, "x", item_id="a\\u0041")),
    ("response.output_text.delta", r_text(7, 0, "x", item_id="tab\t")),
    ("response.output_text.delta", r_text(8, 0, "gap")),
    ("response.output_text.delta", r_text(6, 0, "repeat")),
    ("response.output_text.delta", r_text("07", 0, "x")),
    ("response.output_text.delta", r_text(-7, 0, "x")),
    ("response.output_text.delta", r_text(7, 9, "unknown item")),
    ("response.output_text.delta", r_text(7, 4, "closed item")),
    ("response.output_text.delta", r_text(7, 1, "to a call")),
    ("response.output_text.delta", r_text(7, 2, "to reasoning")),
    ("response.output_text.delta", r_text(7, "01", "x")),
    ("response.function_call_arguments.delta", r_args(7, 1, '{\\"b\\": ')),
    ("response.function_call_arguments.delta", r_args(7, 1, "")),
    (None, r_args(7, 1, "unnamed")),
    ("response.function_call_arguments.delta", r_args(7, 0, "to a message")),
    ("response.function_call_arguments.delta", r_args(7, 3, "to a custom call")),
    ("response.function_call_arguments.delta", r_args(7, 2, "to reasoning")),
    ("response.function_call_arguments.delta", r_args(7, 1, "x", "}")),
    ("response.function_call_arguments.delta", r_args(8, 1, "gap")),
    ("response.output_text.delta", r_args(7, 1, "name mismatch")),
    ("response.function_call_arguments.delta", r_text(7, 0, "name mismatch")),
    ("error", r_text(7, 0, "x")),
    # the other channels, in the api.openai.com order
    ("response.refusal.delta", r_delta("refusal", 7, 0, "I can't")),
    ("response.refusal.delta", r_delta("refusal", 7, 2, "to reasoning")),
    ("response.reasoning_text.delta", r_delta("reasoning_text", 7, 2, "hmm")),
    ("response.reasoning_text.delta", r_delta("reasoning_text", 7, 0, "to a message")),
    ("response.reasoning_text.delta", r_delta("reasoning_text", 7, 1, "to a call")),
    ("response.reasoning_summary_text.delta", r_delta("reasoning_summary_text", 7, 2, "so", '"summary_index":0,')),
    ("response.reasoning_summary_text.delta", r_delta("reasoning_summary_text", 8, 2, "gap", '"summary_index":0,')),
    ("response.reasoning_summary_text.delta", r_delta("reasoning_summary_text", 7, 9, "unknown item")),
    ("response.reasoning_text.delta", r_delta("output_text", 7, 2, "name mismatch")),
    # LM Studio: the number after the fragment
    ("response.reasoning_text.delta", r_late("reasoning_text", 2, "hmm", ',"sequence_number":7}')),
    ("response.output_text.delta", r_late("output_text", 0, "Hi", ',"logprobs":[],"sequence_number":7}')),
    ("response.output_text.delta", r_late("output_text", 0, "x", ',"logprobs":[{"token":"x"}],"sequence_number":7}')),
    ("response.output_text.delta", r_late("output_text", 0, "gap", ',"sequence_number":8}')),
    ("response.output_text.delta", r_late("output_text", 0, "repeat", ',"sequence_number":6}')),
    ("response.output_text.delta", r_late("output_text", 0, "x", ',"sequence_number":-7}')),
    ("response.output_text.delta", r_late("output_text", 0, "x", ',"sequence_number":7.0}')),
    ("response.output_text.delta", r_late("output_text", 0, "x", ',"sequence_number":"7"}')),
    ("response.output_text.delta", r_late("output_text", 0, "x", ',"sequence_number":7,"obfuscation":"a"}')),
    ("response.output_text.delta", r_late("output_text", 9, "unknown item", ',"sequence_number":7}')),
    # the March-2025 API: no number at all
    ("response.function_call_arguments.delta", r_late("function_call_arguments", 1, '{\\"b\\": ', "}", "")),
    ("response.output_text.delta", r_late("output_text", 0, "unnumbered", "}")),
    ("response.output_text.delta", r_late("output_text", 0, "x", ',"sequence_number":null}')),
    # a number on both sides of the fragment: JSON keeps the last one
    ("response.output_text.delta", r_delta("output_text", 99, 0, "twice", tail=',"sequence_number":7}')),
    ("response.output_text.delta", r_delta("output_text", 7, 0, "twice", tail=',"sequence_number":99}')),
    ("response.output_text.delta", r_delta("output_text", 7, 0, "twice", tail=',"sequence_number":7}')),
    # OpenRouter: logprobs first, the output index before the item id
    ("response.output_text.delta", r_router("output_text", 0, "Hi", '"logprobs":[],')),
    ("response.reasoning_text.delta", r_router("reasoning_text", 2, "hmm")),
    ("response.reasoning_text.delta", r_router("reasoning_text", 2, "x", '"logprobs":[1],')),
    ("response.reasoning_text.delta", r_router("reasoning_text", 2, "x", '"logprobs":[],"logprobs":[],')),
    ("response.reasoning_text.delta", r_router("reasoning_text", 3, "to a custom call")),
    ("response.reasoning_text.delta", r_router("reasoning_text", 4, "closed item")),
    ("response.reasoning_text.delta", r_router("reasoning_text", 2, "gap", seq=8)),
    ("response.reasoning_text.delta", r_router("reasoning_text", 2, "x", content='"content_index":"0",')),
    ("response.reasoning_text.delta", r_router("reasoning_text", 2, "x", content="")),
    (None, r_router("reasoning_text", 2, 'unnamed \\u00e9 \\ud83d\\ude00')),
]


def _r_stream(probe: tuple[str | None, str], before: list[object] | None = None,
              after: list[object] | None = None) -> bytes:
    name, data = probe
    frame = (f"event: {name}\n" if name else "") + f"data: {data}\n\n"
    return sse(*(R_OPEN if before is None else before)) + frame.encode() + sse(*(R_CLOSE if after is None else after))


@pytest.mark.parametrize("probe", R_PROBES, ids=range(len(R_PROBES)))
def test_a_responses_delta_ends_the_same_on_the_fast_and_the_general_path(
        probe: tuple[str | None, str], monkeypatch: pytest.MonkeyPatch) -> None:
    _both(_r_stream(probe), monkeypatch, RESPONSES)


def test_the_responses_fast_path_takes_the_deltas_the_api_sends() -> None:
    for event in ({"type": "response.output_text.delta", "sequence_number": 5, "item_id": "msg_1", "output_index": 0,
                   "content_index": 0, "delta": "hé 🙂", "logprobs": [], "obfuscation": "aB3dE"},
                  {"type": "response.function_call_arguments.delta", "sequence_number": 9, "item_id": "fc_1",
                   "output_index": 1, "delta": '{"a', "obfuscation": "x9Yz"}):
        data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        match = openai_responses._DELTA_HEAD.match(data)
        assert match is not None
        assert openai_responses._DELTA_TAIL.search(data) is not None


def test_a_responses_delta_after_the_terminal_event_ends_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """``response.incomplete`` with a reason the caller accepts commits with items still open."""
    incomplete = r_event("response.incomplete", sequence_number=7,
                         response={"incomplete_details": {"reason": "max_output_tokens"}})
    data = sse(*R_OPEN, incomplete) + ("data: " + r_text(8, 0, "late") + "\n\n").encode()
    result = _both(data, monkeypatch, RESPONSES, accepted_stop_reasons=["max_output_tokens"])[0]
    assert result["stage"] == "after_terminal"  # type: ignore[index]


def _resumed_after_timeout(first: bytes, second: bytes) -> StreamSession:
    """A Responses attempt fed ``first`` and timed out, then resumed and fed ``second``."""
    session = StreamSession(RESPONSES)
    session.open(200, "text/event-stream")
    session.feed(first)
    session.abort(Outcome.TIMEOUT, "idle")
    resumed = StreamSession.resume(session)
    resumed.open(200, "text/event-stream")
    resumed.feed(second)
    return resumed


def test_a_resumed_responses_stream_drops_its_repeats_the_same_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    first = sse(*R_OPEN) + ("data: " + r_text(7, 0, "one") + "\n\n").encode()
    second = (("data: " + r_text(6, 0, "x") + "\n\n") + ("data: " + r_text(7, 0, "one") + "\n\n")
              + ("data: " + r_text(8, 0, " two") + "\n\n")).encode() + sse(*(
                  (name, {**event, "sequence_number": int(event["sequence_number"]) + 1})  # type: ignore[call-overload]
                  for name, event in R_CLOSE))

    def run() -> tuple[object, ...]:
        resumed = _resumed_after_timeout(first, second)
        result = resumed.finish()
        return result.outcome.value, result.stage, result.text, result.tool_calls

    fast = run()
    with monkeypatch.context() as m:
        m.setattr(openai_responses, "_DELTA_HEAD", NEVER)
        assert run() == fast
    assert fast[:3] == ("complete", None, "one two")


@pytest.mark.parametrize("late", [None, 8, 6])
def test_an_unnumbered_or_late_numbered_delta_in_a_resumed_stream_ends_the_same(
        late: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A resumed stream must number every event: a delta without one is ``sequence_missing`` on both paths; one
    numbered after its fragment (LM Studio's order) is taken, or dropped as a repeat, as on the general path."""
    first = sse(*R_OPEN) + ("data: " + r_text(7, 0, "one") + "\n\n").encode()
    tail = "}" if late is None else f',"sequence_number":{late}}}'
    second = ("data: " + r_late("output_text", 0, " two", tail) + "\n\n").encode()

    def run() -> tuple[object, ...]:
        resumed = _resumed_after_timeout(first, second)
        result = resumed.abort(Outcome.TIMEOUT, "idle") if resumed.result is None else resumed.result
        return result.outcome.value, result.stage, result.text, resumed.resume_point

    fast = run()
    with monkeypatch.context() as m:
        m.setattr(openai_responses, "_DELTA_HEAD", NEVER)
        assert run() == fast
    expected = {None: ("protocol_error", "sequence_missing", "one"), 8: ("timeout", "idle", "one two"),
                6: ("timeout", "idle", "one")}[late]
    assert fast[:3] == expected


@pytest.mark.parametrize("ceiling", ["text", "tool_input", "retained"])
def test_responses_ceilings_trip_at_the_same_event_on_both_paths(ceiling: str, monkeypatch: pytest.MonkeyPatch) -> None:
    session = StreamSession(RESPONSES)
    session.open(200, "text/event-stream")
    session.feed(sse(*R_OPEN))
    limits = {"text": Limits(max_text_chars=12), "tool_input": Limits(max_tool_input_chars=9),
              "retained": Limits(max_retained_chars=session.retained_chars + 18)}[ceiling]
    frames = "".join("data: " + (r_text(7 + 2 * k, 0, "abcd") + "\n\ndata: " + r_args(8 + 2 * k, 1, "abcd"))
                     + "\n\n" for k in range(6))
    data = sse(*R_OPEN) + frames.encode() + sse(*R_CLOSE)
    result = _both(data, monkeypatch, RESPONSES, limits=limits)[0]
    assert (result["outcome"], result["stage"]) == ("buffer_limit", ceiling)  # type: ignore[index]


@pytest.mark.parametrize(("kind", "index"), [("reasoning_text", 2), ("refusal", 0)])
def test_a_reasoning_or_refusal_delta_trips_the_text_ceiling_at_the_same_event_on_both_paths(
        kind: str, index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    frames = "".join("data: " + r_delta(kind, 7 + k, index, "abcd") + "\n\n" for k in range(6))
    data = sse(*R_OPEN) + frames.encode() + sse(*R_CLOSE)
    result = _both(data, monkeypatch, RESPONSES, limits=Limits(max_text_chars=12))[0]
    assert (result["outcome"], result["stage"]) == ("buffer_limit", "text")  # type: ignore[index]


def test_arguments_after_their_done_event_end_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    done = r_event("response.function_call_arguments.done", sequence_number=7, output_index=1, item_id="fc_1",
                   arguments="")
    data = _r_stream(("response.function_call_arguments.delta", r_args(8, 1, "late")), [*R_OPEN, done], [])
    assert _both(data, monkeypatch, RESPONSES)[0]["stage"] == "closed_block"  # type: ignore[index]


# -- which deltas the fast paths take ------------------------------------------------------------------

#: (route, probe, stream builder): deltas in the layout each API sends, to a block / item that takes them.
TAKEN = [
    (ROUTE, ("content_block_delta", text(0, "Hello")), _stream),
    (ROUTE, (None, text(0, "unnamed")), _stream),
    (ROUTE, ("content_block_delta", partial(1, '{\\"b\\": ')), _stream),
    (ROUTE, ("content_block_delta", partial(4, "")), _stream),
    (ROUTE, ("content_block_delta", thinking(2, "hmm")), _stream),
    (ROUTE, ("content_block_delta", text(0, "padded", "}  \t}\t ")), _stream),
    (ROUTE, ("content_block_stop", stop(0)), _stop_stream),
    (ROUTE, (None, stop(0)), _stop_stream),
    (ROUTE, ("content_block_stop", stop(0, "         }")), _stop_stream),
    (RESPONSES, ("response.output_text.delta", r_text(7, 0, "Hello")), _r_stream),
    (RESPONSES, (None, r_text(7, 0, "unnamed")), _r_stream),
    (RESPONSES, ("response.function_call_arguments.delta", r_args(7, 1, '{\\"b\\": ')), _r_stream),
    (RESPONSES, ("response.function_call_arguments.delta", r_args(7, 1, "")), _r_stream),
    (RESPONSES, ("response.refusal.delta", r_delta("refusal", 7, 0, "no")), _r_stream),
    (RESPONSES, ("response.reasoning_text.delta", r_delta("reasoning_text", 7, 2, "so")), _r_stream),
    (RESPONSES, ("response.reasoning_summary_text.delta",
                 r_delta("reasoning_summary_text", 7, 2, "so", '"summary_index":0,')), _r_stream),
    (RESPONSES, ("response.output_text.delta", r_late("output_text", 0, "Hi", ',"logprobs":[],"sequence_number":7}')),
     _r_stream),
    (RESPONSES, ("response.function_call_arguments.delta", r_late("function_call_arguments", 1, "{", "}", "")),
     _r_stream),
    (RESPONSES, ("response.output_text.delta", r_router("output_text", 0, "Hi", '"logprobs":[],')), _r_stream),
    (RESPONSES, ("response.reasoning_text.delta", r_router("reasoning_text", 2, "so")), _r_stream),
]


@pytest.mark.parametrize(("route", "probe", "build"), TAKEN, ids=range(len(TAKEN)))
def test_the_deltas_the_api_sends_never_reach_the_general_envelope_step(
        route: str, probe: tuple[str | None, str], build: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    general: list[str] = []
    envelope = RouteAccumulator.handle

    def counted(self: RouteAccumulator, event: EventTuple) -> None:
        general.append(event[1])  # (the session hands the route plain (type, data, id) tuples)
        envelope(self, event)

    monkeypatch.setattr(RouteAccumulator, "handle", counted)
    assert "\r" not in probe[1] and "\n" not in probe[1]  # one data line: the event's data is the probe
    data = build(probe)
    view = assert_chunking_invariant(lambda chunks: comparable(route, chunks), data, random_count=6,
                                     every_split_max=0)
    assert probe[1] not in general  # taken by the fast path, under every chunking ...
    assert general  # ... while every other event of the stream went through the general step
    monkeypatch.setattr(RouteAccumulator, "handle", envelope)
    assert comparable(route, [data]) == view  # and the same result as without the count
