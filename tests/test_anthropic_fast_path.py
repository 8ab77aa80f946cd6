"""Anthropic's typed fast path (``content_block_delta`` taken without building the object) ends in
the same state as the general envelope step, event for event.

Each stream is replayed twice: as shipped, and with the fast path's pattern replaced by one that never
matches (so every event takes the general path). Results (outcome, stage, text, tool calls, telemetry,
assistant message), merged updates and events seen must be equal, under every chunking.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers import assert_chunking_invariant
from tests.route_fixtures import comparable, sse
from webclient import Limits, StreamSession
from webclient._routes import anthropic_messages

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


def _both(data: bytes, monkeypatch: pytest.MonkeyPatch, **kwargs: object) -> tuple[object, ...]:
    fast = assert_chunking_invariant(lambda chunks: comparable(ROUTE, chunks, **kwargs), data, random_count=6,
                                     every_split_max=0)
    with monkeypatch.context() as m:
        m.setattr(anthropic_messages, "_DELTA_HEAD", NEVER)
        general = comparable(ROUTE, [data], **kwargs)
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
