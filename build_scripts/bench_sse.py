"""SSE-layer throughput: webclient's layers 1+2 against the Python peers, in one run.

Workload: a generated ~5 MB OpenAI-Chat-style stream (``data: {chat.completion.chunk}\\n\\n`` per
delta, mixed ASCII and multi-byte text, a usage chunk and ``data: [DONE]``), fed in 1 KiB
transport chunks. Each contender turns bytes into (event type, data) items:

- ``webclient``: ``EventStreamParser.feed`` (strict UTF-8, WHATWG parsing, default ceilings);
- ``httpx-sse``: httpx's ``TextDecoder`` + ``LineDecoder`` feeding ``httpx_sse.SSEDecoder.decode``
  per line (exactly what ``EventSource.iter_sse`` does over ``response.iter_lines()``);
- ``openai``: openai-python's ``SSEDecoder.iter_bytes`` over the chunk iterator.

Prints MB/s and events/s (best of N runs, after a warm-up) and the ratio of webclient to the
fastest peer. Peers are benchmark-only dependencies (``pip install -e '.[bench]'``).

Usage: python build_scripts/bench_sse.py [--mb 5] [--chunk 1024] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterable

WORDS = ["The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", ".", "\n"]


def make_stream(target_bytes: int) -> tuple[bytes, int]:
    """An OpenAI-Chat-shaped SSE body of about ``target_bytes``; returns (body, event count)."""
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1730000000,
            "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_bench"}
    parts = []
    size = 0
    i = 0
    while size < target_bytes:
        chunk = dict(head, choices=[{"index": 0, "delta": {"content": WORDS[i % len(WORDS)]},
                                     "logprobs": None, "finish_reason": None}])
        line = "data: " + json.dumps(chunk, ensure_ascii=False) + "\n\n"
        parts.append(line)
        size += len(line.encode())
        i += 1
    done = dict(head, choices=[{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}])
    parts.append("data: " + json.dumps(done) + "\n\n")
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode(), i + 2


def chunked(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def run_webclient(chunks: Iterable[bytes]) -> int:
    from webclient import EventStreamParser

    stream = EventStreamParser()
    n = 0
    for chunk in chunks:
        n += len(stream.feed(chunk))
    stream.close()
    assert stream.failure is None
    return n


def run_httpx_sse(chunks: Iterable[bytes]) -> int:
    from httpx._decoders import LineDecoder, TextDecoder
    from httpx_sse._decoders import SSEDecoder

    text = TextDecoder()
    lines = LineDecoder()
    sse = SSEDecoder()
    n = 0
    for chunk in chunks:
        for line in lines.decode(text.decode(chunk)):
            if sse.decode(line) is not None:
                n += 1
    for line in lines.decode(text.flush()) + lines.flush():
        if sse.decode(line) is not None:
            n += 1
    return n


def run_openai(chunks: Iterable[bytes]) -> int:
    from openai._streaming import SSEDecoder

    return sum(1 for _ in SSEDecoder().iter_bytes(iter(chunks)))


CONTENDERS: dict[str, Callable[[Iterable[bytes]], int]] = {
    "webclient": run_webclient,
    "httpx-sse": run_httpx_sse,
    "openai": run_openai,
}


def best_of(fn: Callable[[Iterable[bytes]], int], chunks: list[bytes], runs: int) -> tuple[float, int]:
    fn(chunks)  # warm-up (imports, caches)
    best = float("inf")
    count = 0
    for _ in range(runs):
        t0 = time.perf_counter()
        count = fn(chunks)
        best = min(best, time.perf_counter() - t0)
    return best, count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=5.0)
    ap.add_argument("--chunk", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    body, events = make_stream(int(args.mb * 1_000_000))
    chunks = chunked(body, args.chunk)
    mb = len(body) / 1e6
    print(f"stream: {mb:.2f} MB, {events} events, {len(chunks)} chunks of {args.chunk} B; best of {args.runs}")
    results = {}
    for name, fn in CONTENDERS.items():
        seconds, count = best_of(fn, chunks, args.runs)
        assert count == events, f"{name} produced {count} events, expected {events}"
        results[name] = seconds
        rate = count / seconds / 1e3
        print(f"  {name:10s} {seconds * 1e3:8.1f} ms  {mb / seconds:8.1f} MB/s  {rate:8.1f} k events/s")
    fastest_peer = min((s, n) for n, s in results.items() if n != "webclient")
    ratio = fastest_peer[0] / results["webclient"]
    print(f"webclient vs fastest peer ({fastest_peer[1]}): {ratio:.2f}x  (target >= 2.00x)")
    for name, seconds in results.items():
        if name != "webclient":
            print(f"webclient vs {name}: {seconds / results['webclient']:.2f}x")


if __name__ == "__main__":
    main()
