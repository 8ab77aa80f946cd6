"""Session throughput: bytes -> committed message with tool calls, against the SDK accumulators.

Workloads (generated, deterministic):

- ``chat``: a ~5 MB OpenAI Chat stream: mostly one-token ``content`` deltas (mixed ASCII and
  multi-byte text) in full ``chat.completion.chunk`` envelopes, then tool calls whose arguments
  stream in small fragments, a ``tool_calls`` finish, a usage chunk and ``[DONE]``;
- ``anthropic``: a ~5 MB Anthropic Messages stream (with ``event:`` names): ``message_start``,
  text blocks of ``text_delta`` events, ``tool_use`` blocks of ``input_json_delta`` fragments,
  pings, ``message_delta``, ``message_stop``.

Contenders, all fed the same bytes in ``--chunk``-byte transport chunks:

- ``webclient``: ``StreamSession.open/feed/finish`` (strict UTF-8, WHATWG SSE, route contract,
  tool-input parsing and validation, telemetry); the result must be committed.
- ``floor``: the least any client must do, measured in the same run: ``EventStreamParser``
  (the same SSE layers) + one ``json.loads`` per event + appending the delta object to a list.
- ``openai``: the same SSE layers + ``json.loads`` + ``construct_type(ChatCompletionChunk)`` +
  ``ChatCompletionStreamState.handle_chunk`` (what openai-python does per event).
- ``anthropic``: the same SSE layers + ``json.loads`` + ``accumulate_event`` (anthropic-sdk-python's
  ``MessageStream`` accumulator, which constructs the typed event itself).

Reports MB/s (best of ``--runs`` for webclient and the floor, one run for each SDK, whose
accumulators are slow), the speed-up over each SDK, the ratio to the floor, and the peak traced
memory per input byte of a webclient run. Targets: >= 5x each SDK, <= 1.5x the floor.

Usage: python build_scripts/bench_session.py [--mb 5] [--chunk 1024] [--runs 5] [--skip-sdk]
Peers are benchmark-only dependencies (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from webclient import EventStreamParser, Outcome, StreamSession

WORDS = ["The", " quick", " brown", " fox", " jumps", " über", " the", " lazy", " dog", " 日本語", ".", "\n"]
ARGUMENTS = '{"city": "San Francisco", "days": [1, 2, 3], "notes": "' + "café olé, " * 60 + '"}'
#: The arguments cut into model-sized fragments (the first is empty, as Anthropic sends it).
ARG_PIECES = ["", *(ARGUMENTS[i : i + 7] for i in range(0, len(ARGUMENTS), 7))]


def _frame(payload: dict[str, Any], event: str | None = None) -> str:
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return (f"event: {event}\n" if event else "") + f"data: {data}\n\n"


def make_chat(target: int) -> bytes:
    """~target bytes; 80% text deltas, then 20% tool-call argument fragments."""
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1730000000,
            "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_bench"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return _frame({**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]})

    parts = [chunk({"role": "assistant", "content": ""})]
    size = len(parts[0])
    i = 0
    while size < target * 0.8:
        parts.append(chunk({"content": WORDS[i % len(WORDS)]}))
        size += len(parts[-1].encode())
        i += 1
    call = 0
    while size < target:
        parts.append(chunk({"tool_calls": [{"index": call, "id": f"call_{call}", "type": "function",
                                            "function": {"name": "get_weather", "arguments": ""}}]}))
        for piece in ARG_PIECES[1:]:
            parts.append(chunk({"tool_calls": [{"index": call, "function": {"arguments": piece}}]}))
        size += sum(len(p.encode()) for p in parts[-len(ARG_PIECES) :])
        call += 1
    parts.append(chunk({}, "tool_calls"))
    parts.append(_frame({**head, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": i}}))
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def _tool_arguments_valid(data: bytes) -> None:
    """The generator's argument fragments must join to JSON objects (checked once, untimed)."""
    session = StreamSession("openai-chat")
    session.open(200, "text/event-stream")
    session.feed(data)
    result = session.finish()
    assert result.outcome is Outcome.COMPLETE, (result.outcome, result.stage)
    assert result.tool_calls and all(c.state == "valid" for c in result.tool_calls)


def make_anthropic(target: int) -> bytes:
    """~target bytes; text blocks with text_delta, tool_use blocks with input_json_delta, pings."""
    parts = [_frame({"type": "message_start", "message": {
        "id": "msg_bench", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}},
        "message_start")]
    size = len(parts[0])
    index = 0
    i = 0
    while size < target:
        if index % 2 == 0:
            parts.append(_frame({"type": "content_block_start", "index": index,
                                 "content_block": {"type": "text", "text": ""}}, "content_block_start"))
            for _ in range(2000):
                parts.append(_frame({"type": "content_block_delta", "index": index,
                                     "delta": {"type": "text_delta", "text": WORDS[i % len(WORDS)]}},
                                    "content_block_delta"))
                i += 1
                if i % 500 == 0:
                    parts.append(_frame({"type": "ping"}, "ping"))
        else:
            parts.append(_frame({"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": f"toolu_{index}", "name": "get_weather", "input": {}}},
                "content_block_start"))
            for piece in ARG_PIECES:
                parts.append(_frame({"type": "content_block_delta", "index": index,
                                     "delta": {"type": "input_json_delta", "partial_json": piece}},
                                    "content_block_delta"))
        parts.append(_frame({"type": "content_block_stop", "index": index}, "content_block_stop"))
        size = sum(len(p.encode()) for p in parts)
        index += 1
    parts.append(_frame({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                         "usage": {"output_tokens": i}}, "message_delta"))
    parts.append(_frame({"type": "message_stop"}, "message_stop"))
    return "".join(parts).encode()


# -- contenders -----------------------------------------------------------------------------


def run_webclient(route: str, chunks: list[bytes]) -> object:
    session = StreamSession(route)
    session.open(200, "text/event-stream")
    for chunk in chunks:
        session.feed(chunk)
    result = session.finish()
    assert result.outcome is Outcome.COMPLETE, (result.outcome, result.stage)
    return result


def run_floor(route: str, chunks: list[bytes]) -> object:
    stream = EventStreamParser()
    loads = json.loads
    parts: list[Any] = []
    append = parts.append
    chat = route == "openai-chat"
    for chunk in chunks:
        for event in stream.feed(chunk):
            data = event.data  # type: ignore[union-attr]
            if data == "[DONE]":
                continue
            obj = loads(data)
            if chat:
                choices = obj.get("choices")
                if choices:
                    append(choices[0].get("delta"))
            else:
                append(obj.get("delta"))
    stream.close()
    return parts


def run_openai(route: str, chunks: list[bytes]) -> object:
    from openai._models import construct_type
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    stream = EventStreamParser()
    state: Any = ChatCompletionStreamState()
    loads = json.loads
    for chunk in chunks:
        for event in stream.feed(chunk):
            data = event.data  # type: ignore[union-attr]
            if data.startswith("[DONE]"):
                continue
            state.handle_chunk(construct_type(type_=ChatCompletionChunk, value=loads(data)))
    stream.close()
    return state.current_completion_snapshot


def run_anthropic(route: str, chunks: list[bytes]) -> object:
    from anthropic.lib.streaming._messages import accumulate_event

    stream = EventStreamParser()
    snapshot = None
    json_bufs: dict[int, bytes] = {}
    loads = json.loads
    for chunk in chunks:
        for event in stream.feed(chunk):
            snapshot = accumulate_event(event=loads(event.data), current_snapshot=snapshot,  # type: ignore[union-attr]
                                        json_bufs=json_bufs)
    stream.close()
    return snapshot


def best_of(fn: Callable[[str, list[bytes]], object], route: str, chunks: list[bytes], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn(route, chunks)
        best = min(best, time.perf_counter() - start)
    return best


def peak_memory(route: str, chunks: list[bytes]) -> int:
    tracemalloc.start()
    run_webclient(route, chunks)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=5.0)
    ap.add_argument("--chunk", type=int, default=1024, help="transport chunk size in bytes (default 1024)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--skip-sdk", action="store_true", help="measure webclient and the floor only")
    args = ap.parse_args()
    target = int(args.mb * 1024 * 1024)
    failures = []
    print(f"python {sys.version.split()[0]}, {args.chunk}-byte chunks, best of {args.runs} (SDKs: 1 run)")
    for name, route, make, peer, peer_fn in (
        ("chat", "openai-chat", make_chat, "openai", run_openai),
        ("anthropic", "anthropic-messages", make_anthropic, "anthropic", run_anthropic),
    ):
        body = make(target)
        if route == "openai-chat":
            _tool_arguments_valid(body)
        mb = len(body) / 1e6
        chunks = [body[i : i + args.chunk] for i in range(0, len(body), args.chunk)]
        run_webclient(route, chunks)  # warm-up
        ours = best_of(run_webclient, route, chunks, args.runs)
        floor = best_of(run_floor, route, chunks, args.runs)
        print(f"\n[{name}] {mb:.2f} MB")
        print(f"  webclient  {mb / ours:8.1f} MB/s  ({ours * 1000:7.1f} ms)")
        print(f"  floor      {mb / floor:8.1f} MB/s  ({floor * 1000:7.1f} ms)   webclient/floor time = "
              f"{ours / floor:.2f}x (target <= 1.5x)")
        if ours / floor > 1.5:
            failures.append(f"{name}: {ours / floor:.2f}x the floor")
        if not args.skip_sdk:
            sdk = best_of(peer_fn, route, chunks, 1)
            print(f"  {peer:<10} {mb / sdk:8.1f} MB/s  ({sdk * 1000:7.1f} ms)   webclient speed-up = "
                  f"{sdk / ours:.1f}x (target >= 5x)")
            if sdk / ours < 5:
                failures.append(f"{name}: only {sdk / ours:.1f}x {peer}")
        peak = peak_memory(route, chunks)
        print(f"  peak traced memory of a webclient run: {peak / 1e6:.1f} MB ({peak / len(body):.2f} bytes/input byte)")
    print("\n" + ("all targets met" if not failures else "targets missed: " + "; ".join(failures)))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
